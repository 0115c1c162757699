#!/usr/bin/env bash
# opencl_tests.sh — the OpenCL backend on the GPU machine's NVIDIA OpenCL,
# from the repository root with .device/ carried (scripts/device/pack.sh
# with NODE_TESTS=tests/conformance/must_pass_opencl/*.txt): the probe, the
# seed cases, the node tests on the OpenCL must-pass lists, YOLOv8n against
# the CPU backend and PP-OCR against ONNX Runtime, all under --sanitize.
# The machine has NVIDIA's OpenCL library but no ICD file naming it.
set -u
D=.device
. scripts/device/env.sh
S=$D/bin/strata
mkdir -p /etc/OpenCL/vendors
[ -f /etc/OpenCL/vendors/nvidia.icd ] || echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
echo "== probe"
$S probe --backend opencl --runs 200
pass=0; fail=0
ok() { if "$@" > /tmp/ocl.log 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $*"; tail -5 /tmp/ocl.log; fi; }
echo "== seed cases"
for f in /tmp/m/seed/*.onnx; do
  c=$(basename $f .onnx); [ -d /tmp/m/seed/${c}_ref ] || continue
  for p in f32 f16 bf16; do
    tol=""; [ $p != f32 ] && tol="--scale-tol 1e-2"
    ok $S check $f -i /tmp/m/seed/${c}_input_0.npy --ref-dir /tmp/m/seed/${c}_ref --backend opencl --sanitize --precision $p $tol
  done
done
echo "seed: $pass passed, $fail failed"
echo "== models"
$S run -q /tmp/m/yolo/yolov8n.onnx -i /tmp/m/yolo/yolov8n_640x640_b1_input.npy -o /tmp --backend cpu && mkdir -p /tmp/y8ref && mv /tmp/output0.npy /tmp/y8ref/
ok $S check /tmp/m/yolo/yolov8n.onnx -i /tmp/m/yolo/yolov8n_640x640_b1_input.npy -r output0=/tmp/m/yolo/yolov8n_640x640_b1_output0.npy --backend opencl --sanitize --atol 0.002 --rtol 0
for spec in det_640x640:ch_PP-OCRv4_det_infer rec_48x320:ch_PP-OCRv4_rec_infer cls_48x192:ch_ppocr_mobile_v2.0_cls_infer; do
  c=${spec%%:*}
  ok $S check $D/models/ppocr/${spec#*:}.onnx -i /tmp/m/ppocr/${c}_input.npy --ref-dir /tmp/m/ppocr/${c}_ref --backend opencl --sanitize --scale-tol 1e-4 --atol 0 --rtol 0
done
echo "seed + models: $pass passed, $fail failed"
echo "== conformance (must_pass_opencl)"
$D/bin/conformance --data $D/node --backend opencl --sanitize --must-pass tests/conformance/must_pass_opencl --list <(ls $D/node) | tail -3
