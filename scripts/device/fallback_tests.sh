#!/usr/bin/env bash
# fallback_tests.sh — kernel tables and mixed-device plans on the GPU
# machine, from the repository root with .device/ carried
# (NODE_TESTS=all scripts/device/pack.sh):
#   - every ONNX node test on CUDA and on the machine's OpenCL, CPU fallback
#     allowed, in 8 parallel runners: counts passed natively and with
#     fallback; every case the CPU must pass (tests/conformance/must_pass)
#     must pass, and the ones in must_pass_cuda/ (OpenCL: must_pass_opencl/)
#     natively; writes the native passes to $OUT/native_<backend>.txt;
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
ls $D/node | grep '^test_' > /tmp/all_cases.txt
split -n l/8 -d /tmp/all_cases.txt /tmp/chunk_
for b in cuda opencl; do
  for f in /tmp/chunk_*; do
    $C --data $D/node --backend $b --list "$f" -v > "$OUT/conf_${b}_$(basename "$f").log" 2>&1 &
  done
  wait
  cat "$OUT"/conf_${b}_chunk_*.log | grep -E "^(PASS|FAIL|UNSUPPORTED) " > "$OUT/conf_$b.txt"
  pass=$(grep -c "^PASS " "$OUT/conf_$b.txt")
  grep "^PASS " "$OUT/conf_$b.txt" | grep -v "ran on the CPU" | awk '{print $2}' | sort > "$OUT/native_$b.txt"
  grep "^PASS " "$OUT/conf_$b.txt" | awk '{print $2}' | sort > /tmp/pass_$b.txt
  echo "== node tests on $b: $pass passed ($(wc -l < "$OUT/native_$b.txt") natively, $(grep -c 'ran on the CPU' "$OUT/conf_$b.txt") with CPU fallback), $(grep -c '^FAIL ' "$OUT/conf_$b.txt") failed, $(grep -c '^UNSUPPORTED ' "$OUT/conf_$b.txt") unsupported"
  cat tests/conformance/must_pass/*.txt | sed 's/#.*//' | awk 'NF {print $1}' | sort > /tmp/must.txt
  echo "   CPU must-pass cases not passing on $b: $(comm -23 /tmp/must.txt /tmp/pass_$b.txt | wc -l)"
  comm -23 /tmp/must.txt /tmp/pass_$b.txt | head -20 | while read -r c; do grep " $c " "$OUT/conf_$b.txt"; done
  if [ -d tests/conformance/must_pass_$b ]; then
    cat tests/conformance/must_pass_$b/*.txt | sed 's/#.*//' | awk 'NF {print $1}' | sort > /tmp/native_must.txt
    echo "   native must-pass cases not native on $b: $(comm -23 /tmp/native_must.txt "$OUT/native_$b.txt" | wc -l)"
  fi
  grep "^FAIL " "$OUT/conf_$b.txt" | head -12
done
M=$D/models/mixed
# the mixed model's CPU ops have GPU kernels since issue 28: keep them on the CPU (tests/CMakeLists.txt MIXED_CPU_OPS)
export STRATA_FORCE_CPU=CumSum,TopK,GatherElements
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
