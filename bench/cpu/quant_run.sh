#!/usr/bin/env bash
# bench/cpu/quant_run.sh — the int8 figures of bench/RESULTS.md (issue 15):
# the VNNI peak and the int8 GEMM / conv rates (bench/cpu/vnni_peak.c), then
# strata against ONNX Runtime 1.30 on the int8 models of
# bench/cpu/quant_models.py, alternating the two in every round like
# run.sh (same inputs, same thread count, one process per runtime and
# round), and optionally an older strata build on the same models.
#
#   bench/cpu/quant_run.sh [--build DIR] [--threads N] [--rounds R] [--runs N] [--warmup N]
#                          [--cases "a b ..."] [--old STRATA_BINARY]
#
# Cases: convinteger_64c_256, convinteger_u8u8_64c_256, qseg_256, qseg_512,
# qseg_1024, fseg_1024 (the f32 net; models in DIR/models/quant, generated
# when missing).  --old times that binary's `strata bench` once per case
# (the scalar kernels take seconds to minutes; one run each).  strata runs
# through `strata bench` (its inputs may be u8), ONNX Runtime through
# ort_bench.js.  Prints one line per case: each runtime's median over the
# rounds of its per-round medians, and the ratio.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
THREADS=2
ROUNDS=5
RUNS=10
WARMUP=2
CASES="convinteger_64c_256 convinteger_u8u8_64c_256 qseg_256 qseg_512 qseg_1024 fseg_1024"
OLD=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --old) OLD=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "quant_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

OUT=$BUILD/bench-quant
MODELS=$BUILD/models/quant
mkdir -p "$OUT" "$MODELS"
LIBS=$(sed -e 's/.* -o strata //' -e 's/libstrata_vision\.a//' "$BUILD/CMakeFiles/strata.dir/link.txt")
CFLAGS="-O2 -std=c11 -D_GNU_SOURCE -I$ROOT/include -I$ROOT/src -I$BUILD/gen"
( cd "$BUILD" && cc $CFLAGS "$ROOT/bench/cpu/vnni_peak.c" -rdynamic $LIBS -o "$OUT/vnni_peak" )
for s in 256 512 1024; do
  [ -f "$MODELS/fseg_$s.onnx" ] || /usr/bin/python3 "$ROOT/bench/cpu/quant_models.py" "$MODELS" --size "$s"
done

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$OUT/vnni_peak" "$THREADS" | tee "$OUT/vnni_peak.json"

RESULTS=$OUT/results.jsonl
: > "$RESULTS"
for r in $(seq 1 "$ROUNDS"); do
  for c in $CASES; do
    m=$MODELS/$c.onnx; x=$MODELS/${c}_input.npy
    s=$("$BUILD/strata" bench "$m" -i "$x" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP" | tail -1)
    echo "{\"case\": \"$c\", \"round\": $r, \"data\": {\"runtime\": \"strata\", \"line\": \"$s\"}}" >> "$RESULTS"
    o=$(node "$ROOT/bench/cpu/ort_bench.js" "$m" "$x" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP")
    echo "{\"case\": \"$c\", \"round\": $r, \"data\": $o}" >> "$RESULTS"
    echo "round $r $c: strata $(echo "$s" | sed 's/.*median \([0-9.]*\) ms.*/\1/') ms, onnxruntime $(echo "$o" | sed 's/.*"median_ms":\([0-9.]*\).*/\1/') ms" >&2
  done
done
if [ -n "$OLD" ]; then
  for c in $CASES; do
    o=$("$OLD" bench "$MODELS/$c.onnx" -i "$MODELS/${c}_input.npy" --threads "$THREADS" --runs 1 --warmup 0 | tail -1)
    echo "{\"case\": \"$c\", \"round\": 0, \"data\": {\"runtime\": \"old\", \"line\": \"$o\"}}" >> "$RESULTS"
  done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$RESULTS" <<'EOF'
import json, re, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])
for c in cases:
    t = {}
    old = None
    for r in rows:
        if r["case"] != c:
            continue
        d = r["data"]
        ms = float(re.search(r"median ([0-9.]+) ms", d["line"]).group(1)) if "line" in d else d["median_ms"]
        if d["runtime"] == "old":
            old = ms
        else:
            t.setdefault(d["runtime"], []).append(ms)
    st, ort = statistics.median(t["strata"]), statistics.median(t["onnxruntime"])
    line = "%-26s strata %9.2f ms  onnxruntime %9.2f ms  strata/ort %.3f" % (c, st, ort, st / ort)
    if old is not None:
        line += "  old strata %.1f ms (%.0fx)" % (old, old / st)
    print(line)
EOF
