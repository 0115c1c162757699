#!/usr/bin/env bash
# staged_tests.sh — staged plans (src/plan/stage.c) on the GPU machine,
# from the repository root with .device/ carried (scripts/device/pack.sh):
# the staged fixtures (an If on a computed score, NonMaxSuppression of
# computed boxes, a Loop with a counted trip count; ONNX Runtime's outputs
# made here and carried) on CUDA and on the GPU's OpenCL, checked and
# sanitized, 50 random schedules of the NMS case, and compute-sanitizer memcheck and
# racecheck on CUDA.  Logs go to $OUT.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
S=$D/bin/strata
M=$D/models/staged
fail=0
for b in cuda opencl; do
  for c in if_score nms loop_count; do
    python3 tests/models/staged_test.py $S $M $c $b check > $OUT/staged_${c}_$b.log 2>&1
    r=$?; echo "staged $c $b check: exit $r"; [ $r = 0 ] || { fail=1; tail -5 $OUT/staged_${c}_$b.log; }
  done
  python3 tests/models/staged_test.py $S $M nms $b schedules 50 > $OUT/staged_nms_${b}_sched.log 2>&1
  r=$?; echo "staged nms $b schedules: exit $r"; [ $r = 0 ] || fail=1
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in memcheck racecheck; do
  for c in if_score nms loop_count; do
    STRATA_CUDA_GRAPHS=0 $CS --tool $tool --error-exitcode 9 $S check $M/$c.onnx -i $M/${c}_input_0.npy \
      --ref-dir $M/${c}_ref_0 --backend cuda > $OUT/cs_staged_${tool}_$c.log 2>&1
    r=$?; echo "$tool staged $c: exit $r $(grep 'ERROR SUMMARY' $OUT/cs_staged_${tool}_$c.log | head -1)"
    [ $r = 0 ] || fail=1
  done
done
echo "staged summary: $([ $fail = 0 ] && echo all passed || echo FAILURES)"
exit $fail
