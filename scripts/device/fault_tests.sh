#!/usr/bin/env bash
# fault_tests.sh — issue 18's tests on the GPU machine, from the repository
# root with .device/ carried (scripts/device/pack.sh builds it with the
# test binaries): device faults (CUDA out of memory for real, a refused
# kernel launch in a direct and in a captured run, a failed device
# allocation) on CUDA, and OpenCL's (a failed build, CL_OUT_OF_RESOURCES,
# a failed buffer) on the GPU's OpenCL; cancel and deadlines on both; the
# allocation-failure sweep with CUDA device allocations in the sequence
# (every allocation of c2f, every 97th of YOLOv8n at 320); a soak on CUDA.
# Logs go to $OUT; prints one line per test and exits 1 if any failed.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
B=$D/bin
python3 scripts/device/prepare.py $D/models /tmp/m > $OUT/prepare.log 2>&1 || { tail -20 $OUT/prepare.log; exit 1; }
M=/tmp/m
C2F="model=$M/seed/c2f.onnx,input=$M/seed/c2f_input_0.npy,ref=$M/seed/c2f_ref"
YOLO="model=$D/models/yolo/yolov8n.onnx,shape=images:1x3x320x320,name=yolov8n_320"
MIXED="model=$D/models/mixed/topk_cumsum.onnx,input=$D/models/mixed/topk_cumsum_input_0.npy,ref=$D/models/mixed/topk_cumsum_ref"
REC="model=$D/models/ppocr/ch_PP-OCRv4_rec_infer.onnx,shape=x:1x3x48x320,name=ppocr_rec"
fail=0
t() { # NAME COMMAND...
  local name=$1
  shift
  "$@" > "$OUT/faults_$name.log" 2>&1
  local r=$?
  echo "$name: exit $r"
  [ $r = 0 ] || { fail=1; tail -8 "$OUT/faults_$name.log"; }
}
for b in cuda opencl; do
  t device_${b}_yolov8n_320 $B/test_device_faults --backend $b "$YOLO"
  t device_${b}_mixed $B/test_device_faults --backend $b "$MIXED"
  t cancel_${b}_yolov8n_320 $B/test_cancel --backend $b "$YOLO"
  t cancel_${b}_mixed $B/test_cancel --backend $b --runs 50 "$MIXED"
done
t alloc_cuda_c2f $B/test_alloc_faults --backend cuda "$C2F"
t alloc_cuda_yolov8n_320 $B/test_alloc_faults --backend cuda --stride 97 "$YOLO"
t alloc_cuda_mixed $B/test_alloc_faults --backend cuda "$MIXED"
t soak_cuda $B/test_soak --backend cuda --runs 1000 "$C2F" "$YOLO" "$REC"   # 32,000 runs, about 30 s on the H200
exit $fail
