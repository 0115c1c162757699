#!/usr/bin/env bash
# extra15.sh — the second GPU call of the fourth session of 2026-12-04,
# after the fused conv, the channels-last depthwise/pool kernels and the
# whole channels-last rule at every batch became CUDA's defaults
# (ROUND_EXTRA='bash scripts/device/extra15.sh'): the correctness the
# issue asks of such a change, in the same call as the suite:
#   - yolo_stem_test (conv b must run fused; STRATA_CUDA_CONV_FUSED=0 must
#     not fuse) and mobile_block_test on CUDA against float64;
#   - the CUDA kernel sweep; the seed cases in f32/f16/bf16 (cuda_tests.sh);
#   - 20 graph replays bit-identical (YOLOv8n, ResNet-50, MobileNetV3 at b1
#     in f16);
#   - compute-sanitizer memcheck and racecheck over the fused convs
#     (YOLOv8n) and the depthwise/pool kernels (MobileNetV3), f16, graphs
#     off.
S=.device/bin/strata
R=${OUT:-/tmp/out}/r; mkdir -p $R
echo "-- stem and mobile block tests"
python3 tests/conv/yolo_stem_test.py $S cuda | grep -vE "^PASS cuda odd"
python3 tests/conv/mobile_block_test.py $S cuda
echo "-- kernel sweep"; .device/bin/kernel_sweep --backend cuda --cases 8 --seed 34 --known tests/kernels/known_failures.txt > $R/sweep.log 2>&1
grep -E "^FAIL|^backend" $R/sweep.log | head -8
echo "-- seed cases"
SKIP_YOLO=1 SKIP_PPOCR=1 scripts/device/cuda_tests.sh .device/bin .device/models > $R/cuda_tests.log 2>&1
grep -E "^FAIL|cuda_tests:" $R/cuda_tests.log | head -10; tail -1 $R/cuda_tests.log
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
echo "-- 20 replays, f16 b1, against PyTorch f32"
for c in yolov8n resnet50 mobilenetv3_large_100; do
  [ -f /tmp/suite/$c.onnx ] || continue
  echo "$c: $($S check /tmp/suite/$c.onnx $(ins $c 1) -r y=/tmp/suite/${c}_b1_ref.npy --backend cuda --precision f16 --runs 20 \
    --scale-tol 1e-2 --atol 0 --rtol 0 2>&1 | tail -2 | tr '\n' ' ')"
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
mkdir -p /tmp/o
for t in memcheck racecheck; do
  for c in yolov8n mobilenetv3_large_100; do
    [ -f /tmp/suite/$c.onnx ] || continue
    STRATA_CUDA_GRAPHS=0 timeout 100 $CS --tool $t --error-exitcode 9 $S run /tmp/suite/$c.onnx $(ins $c 1) --backend cuda \
      --precision f16 -q -o /tmp/o > $R/cs_${t}_$c.log 2>&1
    echo "$t $c f16 b1: exit $? $(grep 'ERROR SUMMARY' $R/cs_${t}_$c.log | head -1)"
  done
done
