#!/usr/bin/env bash
# extra8.sh — beside a GPU round (ROUND_EXTRA='bash scripts/device/extra8.sh',
# after the suite exported YOLOv8n to /tmp/suite): the CUDA kernel sweep
# (Clip's min > max cases, the Upsample generator), the channels-last stage
# against float64, the seed cases in f32/f16/bf16 (cuda_tests.sh), 20 graph
# replays bit-identical, YOLOv8n b1 under both layout rules, and YOLOv8n
# b1 on OpenCL with strata's own per-op profile (where OpenCL's time goes).
S=.device/bin/strata
R=${OUT:-/tmp/out}/r; mkdir -p $R
echo "-- kernel sweep"; .device/bin/kernel_sweep --backend cuda --cases 10 --seed 28 --known tests/kernels/known_failures.txt > $R/sweep.log 2>&1
grep -E "^FAIL|^backend" $R/sweep.log | head -12; grep -E "^(Clip|Upsample)" $R/sweep.log | head -4
echo "-- channels-last stage"; python3 tests/conv/channels_last_test.py $S cuda | tail -4
echo "-- seed cases f32/f16/bf16"
SKIP_YOLO=1 SKIP_PPOCR=1 scripts/device/cuda_tests.sh .device/bin .device/models > $R/cuda_tests.log 2>&1
grep -E "^FAIL|cuda_tests:" $R/cuda_tests.log | head -10
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
echo "-- 20 graph replays bit-identical (f32 b1 against PyTorch, f16 b32 against the first run)"
$S check /tmp/suite/yolov8n.onnx $(ins yolov8n 1) -r y=/tmp/suite/yolov8n_b1_ref.npy --backend cuda --runs 20 --scale-tol 1e-3 --atol 0 --rtol 0 2>&1 | tail -2
echo "-- YOLOv8n b1 f16 (median ms): default / STRATA_CHANNELS_LAST=all"
for i in 1 2; do
  d=$($S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend cuda --precision f16 --runs 300 --json -q | med)
  a=$(STRATA_CHANNELS_LAST=all $S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend cuda --precision f16 --runs 300 --json -q | med)
  echo "default $d, all $a"
done
echo "-- YOLOv8n b1 on OpenCL (median ms) and its per-op profile"
for p in f32 f16; do echo "opencl $p: $($S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend opencl --precision $p --runs 100 --json -q | med)"; done
$S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend opencl --runs 5 --warmup 2 -q --profile /tmp/cl_trace.json > /dev/null 2>&1
python3 bench/gpu/trace_sum.py /tmp/cl_trace.json > $R/ops_opencl_yolov8n_1.txt 2>&1; head -30 $R/ops_opencl_yolov8n_1.txt
cp /tmp/cl_trace.json $R/ 2>/dev/null
$S inspect /tmp/suite/yolov8n.onnx --plan --backend opencl > $R/plan_opencl.txt 2>&1
