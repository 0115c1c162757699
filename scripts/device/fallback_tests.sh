#!/usr/bin/env bash
# fallback_tests.sh — kernel tables and mixed-device plans on the GPU
# machine, from the repository root with .device/ carried
# (NODE_TESTS=all scripts/device/pack.sh):
#   - every ONNX node test on CUDA and on the machine's OpenCL, CPU fallback
#     allowed: the cases the CPU must pass (tests/conformance/must_pass)
#     must pass, and the ones listed in must_pass_cuda/ (OpenCL:
#     must_pass_opencl/) must pass natively; prints natively/with-fallback
#     counts per backend;
#   - the mixed model (scripts/models/mixed.py) on both: against PyTorch
#     under --sanitize, 50 random schedules bit-identical, --no-fallback's
#     error, the mutation test, compute-sanitizer memcheck and racecheck.
# Logs go to $OUT.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
S=$D/bin/strata
C=$D/bin/conformance
MP=tests/conformance/must_pass
for b in cuda opencl; do
  native=tests/conformance/must_pass_$b
  echo "== node tests on $b (one runner per family file, in parallel)"
  for f in $MP/*.txt; do
    fam=$(basename "$f" .txt)
    nat=()
    [ -d "$native" ] && nat=(--native "$native")
    $C --data $D/node --backend $b --list "$f" --must-pass "$f" "${nat[@]}" > "$OUT/conf_${b}_$fam.log" 2>&1 &
  done
  wait
  for f in $MP/*.txt; do
    fam=$(basename "$f" .txt)
    echo "$fam: $(tail -n 1 "$OUT/conf_${b}_$fam.log")"
  done
  # the whole set, for the counts (cases no list names included)
  $C --data $D/node --backend $b -v > "$OUT/conf_${b}_all.log" 2>&1
  echo "all: $(tail -n 1 "$OUT/conf_${b}_all.log")"
  grep "^PASS" "$OUT/conf_${b}_all.log" | grep -v "ran on the CPU" | awk '{print $2}' > "$OUT/native_$b.txt"
done
M=$D/models/mixed
for b in cuda opencl; do
  echo "== mixed model on $b"
  python3 tests/models/mixed_test.py $S $M topk_cumsum $b check | tail -n 4
  python3 tests/models/mixed_test.py $S $M topk_cumsum $b schedules 50 | tail -n 2
  python3 tests/models/mixed_test.py $S $M topk_cumsum $b strict | tail -n 2
  $D/bin/test_hazard --backend $b $M/topk_cumsum.onnx | tail -n 2
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in memcheck racecheck; do
  STRATA_CUDA_GRAPHS=0 $CS --tool $tool --error-exitcode 9 $S check $M/topk_cumsum.onnx -i $M/topk_cumsum_input_0.npy \
    --ref-dir $M/topk_cumsum_ref --backend cuda --sanitize > $OUT/cs_${tool}_mixed.log 2>&1
  echo "$tool mixed: exit $? $(grep 'ERROR SUMMARY' $OUT/cs_${tool}_mixed.log | head -n 1)"
done
