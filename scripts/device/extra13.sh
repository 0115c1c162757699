#!/usr/bin/env bash
# extra13.sh — the next GPU call's checks of what the third session of
# 2026-12-04 wrote after its device time was spent (ROUND_EXTRA='bash
# scripts/device/extra13.sh', ROUND_CASES including yolov8n, resnet50,
# mobilenetv3_large_100, efficientnet_b0):
#   - yolo_stem_test and mobile_block_test on CUDA against float64: the
#     fused conv (STRATA_CUDA_CONV_FUSED=1) and the channels-last depthwise
#     and global-pool kernels (STRATA_CUDA_CL_DW_POOL=1);
#   - the CUDA kernel sweep;
#   - A/B medians, f16: fused against unfused at b1 and b32 (with the time
#     to the first result, where cuDNN compiles the fused graphs), the new
#     kernels on the MobileNet/EfficientNet cases, and ResNet-50 b1 under
#     the new batch-1 layout rule against the transpose rule alone.
S=.device/bin/strata
R=${OUT:-/tmp/out}/r; mkdir -p $R
echo "-- stem and mobile block tests"
python3 tests/conv/yolo_stem_test.py $S cuda | grep -E "FAIL|fused|x8 f16:"
python3 tests/conv/mobile_block_test.py $S cuda
echo "-- kernel sweep"; .device/bin/kernel_sweep --backend cuda --cases 8 --seed 33 --known tests/kernels/known_failures.txt > $R/sweep.log 2>&1
grep -E "^FAIL|^backend" $R/sweep.log | head -8
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
js() { env "$@" $S bench /tmp/suite/$C.onnx $(ins $C $B) --backend cuda --precision f16 --runs $N --json -q; }
med() { python3 -c "import json,sys; j=json.load(sys.stdin); print('%.3f (first %.0f ms)' % (j['median_ms'], j.get('first_result_ms', -1)))" 2>/dev/null; }
echo "-- f16 medians (ms)"
for C in yolov8n resnet50 mobilenetv3_large_100 efficientnet_b0; do
  [ -f /tmp/suite/$C.onnx ] || continue
  for B in 1 32; do
    N=$([ $B = 1 ] && echo 300 || echo 50)
    echo "$C b$B: default $(js X=1 | med), fused $(js STRATA_CUDA_CONV_FUSED=1 | med), dw/pool $(js STRATA_CUDA_CL_DW_POOL=1 | med), both $(js STRATA_CUDA_CONV_FUSED=1 STRATA_CUDA_CL_DW_POOL=1 | med), transpose rule $(js STRATA_CHANNELS_LAST=1 | med)"
  done
done
for C in yolov8n resnet50; do
  [ -f /tmp/suite/$C.onnx ] || continue
  mkdir -p /tmp/o_$C; STRATA_CUDA_CONV_FUSED=1 STRATA_CUDA_VERBOSE=1 $S run /tmp/suite/$C.onnx $(ins $C 32) --backend cuda --precision f16 -q -o /tmp/o_$C 2>&1 |
    grep -E "fused|unfused" | sort | uniq -c | sort -rn | head -5
done
