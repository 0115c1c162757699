#!/usr/bin/env bash
# bench/cpu/quantize_run.sh — YOLOv8n 640x640 quantized by `strata quantize`
# (bench/RESULTS.md, issue 15): strata on the f32 model, strata on the QDQ
# model, ONNX Runtime 1.30 on the QDQ model and on the f32 model, all on
# the same input and thread count, alternating in every round (one process
# per runtime and round) so the machine's load falls on all of them.
#
#   bench/cpu/quantize_run.sh [--build DIR] [--threads N] [--rounds R] [--runs N] [--warmup N] [--calib DIR]
#
# The QDQ model is written to DIR/bench-quantize/yolov8n_qdq.onnx by
# `strata quantize --calib CALIB` (default: a directory holding the f32
# test input build/models/yolo/yolov8n_640x640_b1_input.npy), minmax, per
# tensor.  Prints each runtime's median over the rounds of its per-round
# medians, its fastest single run (the figure least hurt by other
# processes on a shared machine), and the ratios of both.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
THREADS=2
ROUNDS=5
RUNS=10
WARMUP=3
CALIB=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --calib) CALIB=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "quantize_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

OUT=$BUILD/bench-quantize
F32=$BUILD/models/yolo/yolov8n.onnx
X=$BUILD/models/yolo/yolov8n_640x640_b1_input.npy
QDQ=$OUT/yolov8n_qdq.onnx
mkdir -p "$OUT"
if [ -z "$CALIB" ]; then
  CALIB=$OUT/calib
  mkdir -p "$CALIB"
  cp "$X" "$CALIB/"
fi
"$BUILD/strata" quantize "$F32" -o "$QDQ" --calib "$CALIB" --threads "$THREADS"

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
RESULTS=$OUT/results.jsonl
: > "$RESULTS"
for r in $(seq 1 "$ROUNDS"); do
  for c in strata_f32 strata_qdq ort_qdq ort_f32; do
    m=$F32; [ "${c#*_}" = qdq ] && m=$QDQ
    if [ "${c%%_*}" = strata ]; then
      s=$("$BUILD/strata" bench "$m" -i "$X" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP" -q | tail -1)
      ms=$(echo "$s" | sed 's/.*median \([0-9.]*\) ms.*/\1/'); mn=$(echo "$s" | sed 's/.*min \([0-9.]*\) ms.*/\1/')
    else
      o=$(node "$ROOT/bench/cpu/ort_bench.js" "$m" "$X" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP")
      ms=$(echo "$o" | sed 's/.*"median_ms":\([0-9.]*\).*/\1/'); mn=$(echo "$o" | sed 's/.*"min_ms":\([0-9.]*\).*/\1/')
    fi
    echo "{\"case\": \"$c\", \"round\": $r, \"ms\": $ms, \"min\": $mn}" >> "$RESULTS"
    echo "round $r $c: median $ms ms, min $mn ms" >&2
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$RESULTS" <<'EOF'
import json, statistics, sys
t, lo = {}, {}
for l in open(sys.argv[1]):
    if l.strip():
        r = json.loads(l)
        t.setdefault(r["case"], []).append(r["ms"])
        lo.setdefault(r["case"], []).append(r["min"])
m = {c: statistics.median(v) for c, v in t.items()}
b = {c: min(v) for c, v in lo.items()}
for c in ("strata_f32", "strata_qdq", "ort_qdq", "ort_f32"):
    print("%-11s median %8.2f ms  min %8.2f ms  (round medians: %s)" % (c, m[c], b[c], " ".join("%.1f" % v for v in t[c])))
for a, z in (("strata_qdq", "strata_f32"), ("strata_qdq", "ort_qdq"), ("strata_f32", "ort_f32")):
    print("%-10s / %-10s  median %.3f  min %.3f" % (a, z, m[a] / m[z], b[a] / b[z]))
EOF
