#!/usr/bin/env bash
# extra12.sh — beside a GPU round (after the suite exported YOLOv8n): OpenCL
# YOLOv8n b1 medians with the tile model's default fill (4) against 2 and 8,
# beside CUDA, and against PyTorch f32.
S=.device/bin/strata
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
$S check /tmp/suite/yolov8n.onnx $(ins yolov8n 1) -r y=/tmp/suite/yolov8n_b1_ref.npy --backend opencl --scale-tol 1e-3 --atol 0 --rtol 0 2>&1 | tail -1
b() { env "$@" $S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend $BE --precision $P --runs 100 --json -q | med; }
for P in f32 f16; do
  BE=cuda; c=$(b X=1); BE=opencl
  echo "$P: cuda $c; opencl default $(b X=1), fill 2 $(b STRATA_OPENCL_FILL=2), fill 8 $(b STRATA_OPENCL_FILL=8), default $(b X=1); cuda $(BE=cuda b X=1)"
done
