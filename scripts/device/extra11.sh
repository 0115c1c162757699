#!/usr/bin/env bash
# extra11.sh — beside a GPU round (ROUND_EXTRA='bash scripts/device/extra11.sh',
# after the suite exported YOLOv8n to /tmp/suite): OpenCL's per-problem
# conv/GEMM tiles and split-K on NVIDIA's OpenCL (the tiles test against
# float64, YOLOv8n b1 against PyTorch, medians against the old fixed 64x64
# kernel, a few forced choices, the per-op profile), then the CUDA conv
# sweep and the stem/pool/upsample test after the merge.
S=.device/bin/strata
R=${OUT:-/tmp/out}/r; mkdir -p $R
echo "-- opencl tiles test (NVIDIA OpenCL)"; timeout 120 python3 tests/opencl/tiles_test.py $S 2>&1 | tail -4
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
echo "-- YOLOv8n b1 f32 on OpenCL against PyTorch f32"
$S check /tmp/suite/yolov8n.onnx $(ins yolov8n 1) -r y=/tmp/suite/yolov8n_b1_ref.npy --backend opencl --scale-tol 1e-3 --atol 0 --rtol 0 2>&1 | tail -2
b() { env "$@" $S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend $BE --precision $P --runs 100 --json -q | med; }
echo "-- YOLOv8n b1 medians (ms)"
for P in f32 f16; do
  BE=cuda; c=$(b X=1); BE=opencl
  echo "$P: cuda $c; opencl default $(b X=1), old 64x64 $(b STRATA_OPENCL_CONV=gemm64), fill 1 $(b STRATA_OPENCL_FILL=1), fill 4 $(b STRATA_OPENCL_FILL=4), no split $(b STRATA_OPENCL_CONV_SPLITK=1), 32x32 $(b STRATA_OPENCL_CONV_TILE=32x32)"
done
STRATA_OPENCL_TILE_LOG=1 $S run /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend opencl -q -o /tmp/o1 2> $R/tile_log.txt >/dev/null; head -5 $R/tile_log.txt
$S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend opencl --runs 5 --warmup 2 -q --profile /tmp/cl_trace.json > /dev/null 2>&1
python3 bench/gpu/trace_sum.py /tmp/cl_trace.json > $R/ops_opencl_yolov8n_1.txt 2>&1; head -24 $R/ops_opencl_yolov8n_1.txt
echo "-- CUDA conv sweep, stem test"
.device/bin/kernel_sweep --backend cuda --op Conv --cases 30 --seed 31 2>&1 | grep -E "^FAIL|^backend" | head -5
python3 tests/conv/yolo_stem_test.py $S cuda | grep -cE "^PASS"
