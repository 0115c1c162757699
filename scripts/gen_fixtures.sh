#!/usr/bin/env bash
# gen_fixtures.sh DIR — generates the test models and their references into
# DIR (seed cases; YOLO models; transformer encoder and decoder with ONNX
# Runtime's outputs; PP-OCR references from ONNX Runtime; the opset 18-21
# op cases with ONNX Runtime's outputs; the sample pictures of the vision
# tests).  Each generator's output is stamped
# with a hash of the generator, so a second run is quick and a changed
# generator regenerates.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: gen_fixtures.sh DIR}
PY=/usr/bin/python3   # Debian's python3, which has python3-torch and python3-onnx
mkdir -p "$OUT"

# run_gen NAME SCRIPT ARGS... : runs SCRIPT into $OUT/NAME unless its stamp matches
run_gen() {
  local name=$1 script=$2; shift 2
  local dir=$OUT/$name stamp
  stamp=$(cat "$script" "$@" 2>/dev/null | sha256sum | cut -c1-16)
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
    echo "fixtures: $name up to date"
    return
  fi
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  echo "fixtures: generating $name"
  "$PY" "$script" --out "$dir.tmp" > "$dir.tmp.log" 2>&1 || { cat "$dir.tmp.log"; exit 1; }
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  mv "$dir.tmp.log" "$dir/generate.log"
  echo "$stamp" > "$dir/.stamp"
}

run_gen seed "$ROOT/scripts/models/seed.py" "$ROOT/scripts/ort/run.js"
run_gen yolo "$ROOT/scripts/models/yolo.py"
run_gen mixed "$ROOT/scripts/models/mixed.py"
run_gen staged "$ROOT/scripts/models/staged.py" "$ROOT/scripts/ort/run.js"
run_gen sequences "$ROOT/scripts/models/sequences.py"
run_gen transformer "$ROOT/scripts/models/transformer.py" "$ROOT/scripts/ort/run.js"
run_gen opset18 "$ROOT/scripts/models/opset18.py" "$ROOT/scripts/ort/run.js"
run_gen ppocr "$ROOT/scripts/models/ppocr.py" "$ROOT/scripts/ort/run.js" "$ROOT/package.json"
run_gen samples "$ROOT/scripts/samples/render_sample.py"
