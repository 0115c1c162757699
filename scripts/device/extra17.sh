#!/usr/bin/env bash
# extra17.sh — the last short GPU call of the fourth session of 2026-12-04
# (from the repository root with .device/ and .gl/ carried, YOLOv8n and its
# 640x640 input in .device/models/yolo): Vulkan on NVIDIA's driver timed
# against strata's CUDA and OpenCL on YOLOv8n b1 (issue 26's bar: Vulkan
# f16 within 2x of CUDA), Vulkan's counters, then the ONNX node tests on
# Vulkan (native plus fallback) as far as the time allows.  First, for the
# merged issue-l25b branch (elementwise geometry and index rules lowered
# once; CUDA only compiled before): the CUDA kernel sweep and the seed
# cases plus YOLOv8n in f32/f16/bf16 (cuda_tests.sh).
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
M=$D/models/yolo/yolov8n.onnx IN=$D/models/yolo/yolov8n_640x640_b1_input.npy
echo "== CUDA kernel sweep"
$D/bin/kernel_sweep --backend cuda --cases 8 --seed 36 --known tests/kernels/known_failures.txt > $OUT/sweep.log 2>&1
grep -E "^FAIL|^backend" $OUT/sweep.log | head -8
echo "== seed cases and YOLOv8n on CUDA"
python3 scripts/device/prepare.py $D/models /tmp/m > $OUT/prepare.log 2>&1 || tail -5 $OUT/prepare.log
SKIP_PPOCR=1 scripts/device/cuda_tests.sh $D/bin /tmp/m > $OUT/cuda_tests.log 2>&1
grep -E "^FAIL|cuda_tests:" $OUT/cuda_tests.log | head -10
echo "== YOLOv8n 640x640 b1 (strata bench, median ms of 100)"
for p in f32 f16; do
  for b in vulkan cuda opencl; do
    echo "yolov8n $p $b: $($S bench $M -i $IN --backend $b --precision $p --runs 100 --warmup 10 -q 2>&1 | tail -1)"
  done
done
STRATA_VULKAN_STATS=1 $S run -q $M -i $IN --backend vulkan --precision f16 -o /tmp 2>&1 | grep -i "vulkan stats" | head -3
$S bench $M -i $IN --backend vulkan --precision f16 --runs 5 --warmup 2 -q --profile /tmp/vk.json > /dev/null 2>&1 &&
  python3 bench/gpu/trace_sum.py /tmp/vk.json | head -16
echo "== node tests on Vulkan (native + fallback, the CPU's must-pass list)"
timeout ${VK_NODE_S:-120} $D/bin/conformance --data $D/node --backend vulkan --must-pass tests/conformance/must_pass > $OUT/vulkan_conformance.log 2>&1
echo "exit $?"; tail -3 $OUT/vulkan_conformance.log
