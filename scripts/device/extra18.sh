#!/usr/bin/env bash
# extra18.sh — the first GPU call of the fifth session (2026-12-04), from
# the repository root with .device/ (YOLOv8n and its input in
# .device/models/yolo) and .gl/ carried.  Diagnostics that the session's
# work needs, while torch.compile's b32 columns compile beside them:
#  - torch.compile (max-autotune-no-cudagraphs) of YOLOv8n, ResNet-50 and
#    ConvNeXt-T at b32 in the background (compile_peer.py; caches saved
#    to $OUT, in pieces over 15 MiB), then strata's b32 times in the same
#    call once the GPU is free;
#  - per-op profiles of YOLOv8n b1 on Vulkan (f16) and OpenCL (f16, f32):
#    where Vulkan's 32x and OpenCL f16's 5.8x of CUDA go;
#  - EfficientNet-B0 with every conv fused (STRATA_CUDA_CONV_FUSED=all)
#    now that size-1 dims get packed-NHWC strides: whether the one-pixel
#    fault was strata's strides;
#  - the ONNX node tests on Vulkan (Div now correctly rounded) and the
#    OpenCL kernel sweep on the H200's OpenCL.
# Everything goes to stdout and $OUT/log.txt (a call returns 8 files).
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
L=$OUT/log.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
export STRATA=$PWD/$S
CASES=${CNN_CASES:-yolov8n,resnet50,convnext_tiny}
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== export $CASES,efficientnet_b0 $(el)"
python3 bench/gpu/suite_models.py /tmp/suite --cases $CASES,efficientnet_b0 >> $L 2>&1 || echo "export failed"
echo "== torch.compile phase 1 in the background (budget ${CNN_BUDGET:-300} s) $(el)"
timeout 480 python3 bench/gpu/compile_peer.py /tmp/suite $CASES --budget ${CNN_BUDGET:-300} --save $OUT > /tmp/compile.log 2>&1 &
CP=$!
M=$D/models/yolo/yolov8n.onnx IN=$D/models/yolo/yolov8n_640x640_b1_input.npy
for spec in vulkan:f16 opencl:f16 opencl:f32; do
  b=${spec%%:*} p=${spec##*:}
  echo "== YOLOv8n b1 $b $p per-op profile (concurrent with the compile: shares, not times) $(el)"
  timeout 120 $S bench $M -i $IN --backend $b --precision $p --runs 5 --warmup 2 -q --profile /tmp/p_$b$p.json > /dev/null 2>>$L &&
    python3 bench/gpu/trace_sum.py /tmp/p_$b$p.json | head -22
done
STRATA_VULKAN_STATS=1 $S run -q $M -i $IN --backend vulkan --precision f16 -o /tmp 2>&1 | grep -i "stats" | head -3
echo "== EfficientNet-B0, every conv fused, canonical size-1 strides $(el)"
STRATA_CUDA_CONV_FUSED=all OUT=/tmp/eff timeout 150 bash bench/gpu/suite.sh --cases efficientnet_b0 --compile none > /tmp/eff.log 2>&1
grep -E "max\|d\||efficientnet" /tmp/eff.log | head -4; cat /tmp/eff.log >> $L
echo "== node tests on Vulkan $(el)"
timeout 120 $D/bin/conformance --data $D/node --backend vulkan --must-pass tests/conformance/must_pass > /tmp/vkc.log 2>&1
echo "exit $?"; grep -E "FAIL|passed|must" /tmp/vkc.log | tail -6; tail -40 /tmp/vkc.log >> $L
echo "== OpenCL kernel sweep on the H200 $(el)"
timeout 100 $D/bin/kernel_sweep --backend opencl --cases 4 --seed 25 --known tests/kernels/known_failures.txt > /tmp/ks.log 2>&1
echo "exit $?"; grep -E "^FAIL|^backend" /tmp/ks.log | head -8; grep -E "^FAIL" /tmp/ks.log >> $L
echo "== waiting for torch.compile $(el)"
wait $CP; echo "compile_peer exit $?"
grep '^{' /tmp/compile.log; tail -5 /tmp/compile.log >> $L
echo "== strata f16 b32, same inputs, GPU alone $(el)"
for c in ${CASES//,/ }; do
  ins=$(python3 -c "import json; print(' '.join('-i %s=/tmp/suite/${c}_b32_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$c.json'))['inputs']))")
  echo "$c b32: $($S bench /tmp/suite/$c.onnx $ins --backend cuda --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
done
ls -la $OUT; el
