#!/usr/bin/env bash
# qconv_ab.sh — CUDA's int8 conv, one build's module against another's, on
# the GPU machine (issue 15, item 6).  Carry a folder D (default .devh)
# holding lib.tar.xz, bin/strata, bin/libstrata_cuda.so (the build under
# test), bin/libstrata_cuda_old.so (the one to compare with),
# qint_device_test.py and isnet_quint8.onnx (pack_isnet.sh 1 shows how to
# join it from node_modules), then `bash $D/qconv_ab.sh` (a copy of this
# file: the device tool sends main's checkout).  It runs:
#   1. qint_device_test.py on CUDA: every case byte-identical with int64
#      NumPy and with the CPU backend;
#   2. isnet_quint8 on CUDA with both modules on one seeded input: every
#      output compared byte for byte;
#   3. zoo_device.py's check of isnet_quint8 (ONNX Runtime CPU as the
#      reference, the zoo's tolerances, --sanitize), module under test;
#   4. strata bench, new / old / new (median ms per run);
#   5. a --profile run of the new module: time per op.
# SKIP_ZOO=1 / SKIP_PROFILE=1 leave out 3 / 5 (device time is short); a
# libstrata.so.0 in $D/lib (the build's own) goes before lib.tar.xz's.
set -u
D=${D:-.devh}
. scripts/device/env.sh
[ -d "$D/lib" ] && export LD_LIBRARY_PATH=$PWD/$D/lib:$LD_LIBRARY_PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/isnet
B=$PWD/$D/bin
NEW=$B/libstrata_cuda.so
OLD=$B/libstrata_cuda_old.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
echo "== 1. qint_device_test (CUDA vs int64 NumPy and the CPU)"
timeout 240 python3 $D/qint_device_test.py $B/strata cuda /tmp/qd > "$OUT/qint.log" 2>&1
echo "qint rc $?"; cut -c1-200 "$OUT/qint.log"
cp $D/isnet_quint8.onnx /tmp/isnet/
python3 -c "
import numpy as np
np.save('/tmp/isnet/in.npy', (np.random.default_rng(7).random((1, 3, 1024, 1024), dtype=np.float32) - 0.5))"
echo "== 2. identity, old vs new module, isnet_quint8 on CUDA"
for v in old new; do
  M=$OLD; [ $v = new ] && M=$NEW
  mkdir -p /tmp/isnet/o_$v
  STRATA_CUDA_MODULE=$M timeout 60 $B/strata run /tmp/isnet/isnet_quint8.onnx -i input=/tmp/isnet/in.npy --backend cuda --no-fallback -o /tmp/isnet/o_$v -q
  echo "run $v rc $?"
done
python3 - <<'PY'
import glob, os, numpy as np
for f in sorted(glob.glob("/tmp/isnet/o_old/*.npy")):
    a = np.load(f); b = np.load(f.replace("o_old", "o_new"))
    same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    print("output %s %s %s: old vs new %s (max abs diff %g)" % (os.path.basename(f), a.dtype, a.shape, "BIT-IDENTICAL" if same else "DIFFERENT", float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))))
PY
if [ -z "${SKIP_ZOO:-}" ]; then
  echo "== 3. zoo check (ORT CPU reference), new module, --sanitize"
  timeout 120 python3 scripts/device/zoo_device.py $B/strata /tmp/isnet /tmp/isnet/work cuda --sanitize isnet_quint8 > "$OUT/zoo.log" 2>&1
  echo "zoo rc $?"; tail -n 6 "$OUT/zoo.log"
fi
echo "== 4. bench, new / old / new"
for v in new old new; do
  M=$OLD; R=5; [ $v = new ] && M=$NEW && R=20
  STRATA_CUDA_MODULE=$M timeout 60 $B/strata bench /tmp/isnet/isnet_quint8.onnx -i input=/tmp/isnet/in.npy --backend cuda --warmup 2 --runs $R > "$OUT/bench_$v.log" 2>&1
  echo "bench $v (runs $R): rc $? $(tail -n 3 "$OUT/bench_$v.log" | tr '\n' ' ')"
done
[ -n "${SKIP_PROFILE:-}" ] && { date -u; exit 0; }
echo "== 5. profile, new"
STRATA_CUDA_MODULE=$NEW timeout 60 $B/strata bench /tmp/isnet/isnet_quint8.onnx -i input=/tmp/isnet/in.npy --backend cuda --warmup 1 --runs 2 --profile "$OUT/prof.json" > "$OUT/prof.log" 2>&1
echo "profile rc $?"
python3 - "$OUT/prof.json" <<'PY'
import json, sys, collections
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
t = collections.Counter()
for e in ev:
    a = e.get("args", {})
    if e.get("ph") == "X" and a.get("run") == 2 and "op" in a:
        t[a["op"]] += e["dur"]
tot = sum(t.values())
for k, v in t.most_common(8):
    print("  %-24s %7.2f ms  %5.1f%% of the ops' time in the last run" % (k, v / 1e3, 100.0 * v / max(tot, 1)))
PY
date -u
