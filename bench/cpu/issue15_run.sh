#!/usr/bin/env bash
# bench/cpu/issue15_run.sh — issue 15's benchmark table in one run, with
# ONNX Runtime 1.30 (onnxruntime-node) as the peer, both on the same thread
# count (default 2), wall time, alternating per round:
#   1. the zoo's fp16 and dynamically quantized IS-Net (tests/zoo/zoo.py
#      bench: median over rounds of each round's median run);
#   2. the transformer encoder (scripts/models/transformer.py) at batch
#      2 x 77 and 1 x 512 (strata bench and ort_zoo.js bench, RUNS timed
#      runs a round, median of the round medians);
#   3. YOLOv8n quantized by `strata quantize` against strata's own f32 and
#      ONNX Runtime (bench/cpu/quantize_run.sh).
#   bench/cpu/issue15_run.sh [--threads N] [--rounds R]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/build
T=2
R=3
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) T=$2; shift 2 ;;
    --rounds) R=$2; shift 2 ;;
    *) echo "issue15_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "== $(date -u +%FT%TZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $T"

echo "== 1. zoo: isnet_fp16, isnet_quint8"
/usr/bin/python3 "$ROOT/tests/zoo/zoo.py" bench isnet_fp16 isnet_quint8 --threads "$T" --strata "$B/strata"

echo "== 2. transformer encoder"
M=$B/models/transformer
for k in 0 1; do
  runs=$([ $k = 0 ] && echo 50 || echo 10)
  printf '{"model": "%s", "threads": %d, "steps": [{"ids": "%s", "pad": "%s"}], "runs": %d, "warmup": 2}\n' \
    "$M/encoder.onnx" "$T" "$M/encoder_${k}_input_0.npy" "$M/encoder_${k}_input_1.npy" "$runs" > "$W/job.json"
  : > "$W/enc_$k.txt"
  for r in $(seq 1 "$R"); do
    s=$("$B/strata" bench "$M/encoder.onnx" -i ids="$M/encoder_${k}_input_0.npy" -i pad="$M/encoder_${k}_input_1.npy" \
        --threads "$T" --warmup 2 --runs "$runs" -q | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    o=$(node "$ROOT/tests/zoo/ort_zoo.js" bench "$W/job.json" | tail -n 1)
    echo "$s $o" >> "$W/enc_$k.txt"
  done
  /usr/bin/python3 - "$W/enc_$k.txt" "$k" <<'PY'
import json, statistics, sys
st, ort = [], []
for line in open(sys.argv[1]):
    a, j = line.split(" ", 1)
    st.append(float(a))
    ort.append(statistics.median(json.loads(j)["times_ms"]))
name = "2 x 77" if sys.argv[2] == "0" else "1 x 512"
print("encoder %-7s strata %7.2f ms  ONNX Runtime %7.2f ms  ratio %.2f  (rounds: strata %s; ORT %s)" % (
    name, statistics.median(st), statistics.median(ort), statistics.median(st) / statistics.median(ort),
    " ".join("%.2f" % v for v in st), " ".join("%.2f" % v for v in ort)))
PY
done

echo "== 3. YOLOv8n quantized by strata quantize (640x640)"
"$ROOT/bench/cpu/quantize_run.sh" --threads "$T" --rounds "$R" --runs 10 --warmup 3 2>/dev/null
