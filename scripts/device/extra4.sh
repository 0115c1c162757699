#!/usr/bin/env bash
# extra4.sh — the checks beside a GPU round (scripts/device/round.sh, as
# ROUND_EXTRA='bash scripts/device/extra4.sh'), after the suite has
# exported its models to /tmp/suite: the CUDA kernel sweep, the
# channels-last stage and the SDPA fold against float64, the transformer
# fixtures against ONNX Runtime (MatMul's fused bias and GELU in f32), an
# A/B of the channels-last layout and of the MatMul epilogue on the suite
# models, and compute-sanitizer over the new paths when it is installed.
S=.device/bin/strata
echo "-- kernel sweep"; .device/bin/kernel_sweep --backend cuda --cases 10 --seed 26 --known tests/kernels/known_failures.txt 2>&1 | grep -E "^FAIL|^backend" | head -12
echo "-- channels-last stage"; python3 tests/conv/channels_last_test.py $S cuda
echo "-- sdpa"; python3 tests/attention/sdpa_scale_test.py $S cuda | tail -2
echo "-- transformer fixtures (f32, 1e-5 + 1e-5 |ref|, --sanitize)"
T=.device/models/transformer
for k in 0 1 2; do
  $S check $T/encoder.onnx -i ids=$T/encoder_${k}_input_0.npy -i pad=$T/encoder_${k}_input_1.npy --ref-dir $T/encoder_${k}_ref --atol 1e-5 --rtol 1e-5 --sanitize --backend cuda 2>&1 | tail -1
  $S check $T/decoder.onnx -i x=$T/decoder_${k}_input_0.npy --ref-dir $T/decoder_${k}_ref --atol 1e-5 --rtol 1e-5 --sanitize --backend cuda 2>&1 | tail -1
done
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
echo "-- A/B at b32 f16 (median ms): default / STRATA_CHANNELS_LAST=0 / STRATA_CUDA_CONV=direct off"
for c in convnext_tiny vit_small; do
  a=$($S bench /tmp/suite/$c.onnx $(ins $c 32) --backend cuda --precision f16 --runs 50 --json -q 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])")
  b=$(STRATA_CHANNELS_LAST=0 $S bench /tmp/suite/$c.onnx $(ins $c 32) --backend cuda --precision f16 --runs 50 --json -q 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])")
  echo "$c b32: default $a, channels-last off $b"
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$CS" ]; then
  echo "-- compute-sanitizer memcheck / racecheck (channels-last stage f16, ViT-S b1 f16)"
  mkdir -p /tmp/cs
  for tool in memcheck racecheck; do
    STRATA_CUDA_GRAPHS=0 timeout 120 $CS --tool $tool --error-exitcode 9 $S run /tmp/suite/vit_small.onnx $(ins vit_small 1) --backend cuda --precision f16 -q -o /tmp/cs > /tmp/cs_$tool.log 2>&1
    echo "vit_small b1 $tool: exit $? $(grep -m1 'ERROR SUMMARY' /tmp/cs_$tool.log)"
    STRATA_CUDA_GRAPHS=0 timeout 120 $CS --tool $tool --error-exitcode 9 $S run /tmp/suite/convnext_tiny.onnx $(ins convnext_tiny 1) --backend cuda --precision f16 -q -o /tmp/cs > /tmp/cs2_$tool.log 2>&1
    echo "convnext_tiny b1 $tool: exit $? $(grep -m1 'ERROR SUMMARY' /tmp/cs2_$tool.log)"
  done
fi
