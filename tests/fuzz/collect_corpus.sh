#!/usr/bin/env bash
# collect_corpus.sh MODELS_DIR OUT — the fuzzers' seed corpus, gathered
# from the test models at test time (no corpus file is committed):
#   OUT/loader  every seed model (scripts/models/seed.py) and every ONNX
#               node-test model from Debian's libonnx-testdata
#   OUT/run     the seed models under 64 KB and the node-test models that
#               strata passes (tests/conformance/must_pass), which run
#   OUT/npy     the seed cases' .npy files under 64 KB, and small arrays of
#               every dtype, rank 0 to 3, C and Fortran order, format 1.0
#               and 2.0, written by NumPy
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=${1:?usage: collect_corpus.sh MODELS_DIR OUT}
OUT=${2:?usage: collect_corpus.sh MODELS_DIR OUT}
NODE=${STRATA_NODE_TESTS:-/usr/share/libonnx-testdata/data/node}
rm -rf "$OUT"
mkdir -p "$OUT/loader" "$OUT/run" "$OUT/npy"
for f in "$MODELS"/seed/*.onnx; do
  cp "$f" "$OUT/loader/seed_$(basename "$f")"
  if [ "$(stat -c %s "$f")" -lt 65536 ]; then cp "$f" "$OUT/run/seed_$(basename "$f")"; fi
done
for d in "$NODE"/*/; do
  [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$OUT/loader/$(basename "$d").onnx"
done
cat "$HERE"/../conformance/must_pass/*.txt | sed 's/#.*//' | while read -r name; do
  [ -n "$name" ] && [ -f "$NODE/$name/model.onnx" ] && cp "$NODE/$name/model.onnx" "$OUT/run/$name.onnx"
done
find "$MODELS/seed" -name '*.npy' -size -64k | while read -r f; do
  cp "$f" "$OUT/npy/$(echo "${f#"$MODELS"/seed/}" | tr / _)"
done
/usr/bin/python3 - "$OUT/npy" <<'PY'
import io, os, sys
import numpy as np
from numpy.lib import format as npf
out = sys.argv[1]
dtypes = ["<f4", "<f8", "<f2", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "|b1"]
shapes = [(), (3,), (2, 3), (2, 0, 3)]
for dt in dtypes:
    for k, shape in enumerate(shapes):
        a = (np.arange(int(np.prod(shape))) % 7).astype(dt).reshape(shape)
        for order in ("C", "F"):
            if order == "F" and len(shape) < 2:
                continue
            for ver in ((1, 0), (2, 0)):
                b = io.BytesIO()
                npf.write_array(b, np.asarray(a, order=order), version=ver)
                name = f"{dt.strip('<|')}_r{len(shape)}_{k}_{order}_v{ver[0]}.npy"
                open(os.path.join(out, name), "wb").write(b.getvalue())
PY
echo "seed corpus in $OUT: $(ls "$OUT/loader" | wc -l) loader, $(ls "$OUT/run" | wc -l) run, $(ls "$OUT/npy" | wc -l) npy files"
