#!/usr/bin/env bash
# kernel_test.sh — the kernel sweep (tests/kernels/kernel_sweep.c, issue 25)
# on the GPU machine: every entry of the CUDA and OpenCL kernel tables on
# random shapes, strided and offset views, broadcasts and dtypes that its
# accepts() admits, against the CPU's kernels and float64 references.
# OpenCL runs on the H200's own OpenCL driver (env.sh registers it; strata
# takes a GPU device first).  From the repository root with .device/
# carried (`ATTN_ONLY=1 scripts/device/pack.sh BUILD` is enough: it packs
# bin/kernel_sweep; the sweep needs no model files).
#   CASES=N   cases per (op, dtype), default 12 (CI on PoCL runs 2)
#   SEED=S    default 25, the CI's seed
# Prints one summary line per backend (entries, cases, failures) and every
# failing case; full logs in $OUT/kernel_sweep_<backend>.log.  Exit 0 only
# when both backends pass (known failures: tests/kernels/known_failures.txt).
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
K=$D/bin/kernel_sweep
if [ ! -x "$K" ]; then
  echo "kernel preflight: FAIL (no $K: run scripts/device/pack.sh here first)"
  exit 1
fi
echo "kernel device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
fail=0
for be in cuda opencl; do
  log=$OUT/kernel_sweep_$be.log
  start=$(date +%s)
  "$K" --backend "$be" --cases "${CASES:-12}" --seed "${SEED:-25}" --known tests/kernels/known_failures.txt -v > "$log" 2>&1
  rc=$?
  grep -E '^(FAIL|STALE)' "$log" | head -n 40
  summary=$(grep -E '^backend|^kernel_sweep' "$log" | tail -n 1)
  if [ "$rc" = 0 ]; then
    echo "kernel sweep $be: PASS ($summary; $(( $(date +%s) - start )) s)"
  else
    echo "kernel sweep $be: FAIL (exit $rc: $summary; $(grep -c '^FAIL' "$log") failing cases; $log)"
    fail=1
  fi
done
exit $fail
