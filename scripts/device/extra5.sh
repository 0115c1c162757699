#!/usr/bin/env bash
# extra5.sh — beside a GPU round (ROUND_EXTRA='bash scripts/device/extra5.sh'),
# after the suite exported its models to /tmp/suite: the CUDA kernel sweep,
# the channels-last stage and the transformer fixtures against their
# references, the depthwise-conv variants on ConvNeXt-T at batch 32
# (strata's NHWC kernel with 4 or 8 output rows a thread, cuDNN's), and
# compute-sanitizer memcheck and racecheck with their logs kept.  The
# sweep, the stage and the fixtures run only with EXTRA_SWEEP=1.
S=.device/bin/strata
R=${OUT:-/tmp/out}/r
[ -n "${EXTRA_SWEEP:-}" ] && echo "-- kernel sweep" && timeout 150 .device/bin/kernel_sweep --backend cuda --cases 10 --seed 27 --known tests/kernels/known_failures.txt 2>&1 | grep -E "^FAIL|^backend" | head -12
[ -n "${EXTRA_SWEEP:-}" ] && python3 tests/conv/channels_last_test.py $S cuda
T=.device/models/transformer
for k in ${EXTRA_SWEEP:+0 1 2}; do
  $S check $T/encoder.onnx -i ids=$T/encoder_${k}_input_0.npy -i pad=$T/encoder_${k}_input_1.npy --ref-dir $T/encoder_${k}_ref --atol 1e-5 --rtol 1e-5 --sanitize --backend cuda 2>&1 | tail -1
  $S check $T/decoder.onnx -i x=$T/decoder_${k}_input_0.npy --ref-dir $T/decoder_${k}_ref --atol 1e-5 --rtol 1e-5 --sanitize --backend cuda 2>&1 | tail -1
done
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
echo "-- depthwise variants, ConvNeXt-T b32 f16 (median ms of 50)"
for v in "" "STRATA_CUDA_DW_ROWS=8" "STRATA_CUDA_DW=cudnn" "STRATA_CHANNELS_LAST=0"; do
  echo "${v:-default}: $(env $v $S bench /tmp/suite/convnext_tiny.onnx $(ins convnext_tiny 32) --backend cuda --precision f16 --runs 50 --json -q | med)"
done
echo "-- same, f16 b32 outputs of the variants against the default (max |d|)"
mkdir -p /tmp/v0 /tmp/v1; $S run /tmp/suite/convnext_tiny.onnx $(ins convnext_tiny 32) --backend cuda --precision f16 -q -o /tmp/v0
STRATA_CUDA_DW=cudnn $S run /tmp/suite/convnext_tiny.onnx $(ins convnext_tiny 32) --backend cuda --precision f16 -q -o /tmp/v1
python3 -c "
import numpy as np,glob,os
for f in glob.glob('/tmp/v0/*.npy'):
    a=np.load(f).astype(np.float64); b=np.load('/tmp/v1/'+os.path.basename(f)).astype(np.float64)
    print(os.path.basename(f), 'max|d|/max|ref| %.2e' % (abs(a-b).max()/abs(a).max()))"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$CS" ]; then
  echo "-- compute-sanitizer (ViT-S and ConvNeXt-T b1 f16, graphs off)"
  mkdir -p /tmp/cs
  for tool in memcheck racecheck; do
    for c in vit_small convnext_tiny; do
      STRATA_CUDA_GRAPHS=0 timeout 100 $CS --tool $tool --error-exitcode 9 $S run /tmp/suite/$c.onnx $(ins $c 1) --backend cuda --precision f16 -q -o /tmp/cs > $R/cs_${c}_$tool.log 2>&1
      echo "$c b1 $tool: exit $? $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $R/cs_${c}_$tool.log)"; tail -3 $R/cs_${c}_$tool.log
    done
  done
fi
