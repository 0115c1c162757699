#!/usr/bin/env bash
# precision_tests.sh — issue 28's mixed-precision policy on the GPU machine
# (docs/precision.md), from the repository root with .device/ carried:
# `scripts/device/pack.sh BUILD` (the binaries and the zoo's small models),
# then `/usr/bin/python3 tests/models/precision_test.py pack .device/models/precision`
# (the fixtures with their float64 references; that machine may lack onnx
# and torch).  Every check prints one line; details go to $OUT; the exit
# status is 0 only when every check passed.
#   1. tests/models/precision_test.py on cuda and opencl (the H200's own
#      OpenCL): the E[x^2]-E[x]^2 LayerNorm classifier (mixed f16 within 1%
#      and no class flipped, strict reproducing the failure), the decomposed
#      LayerNorm fused into one LayerNormalization (CUDA has the kernel),
#      the three GELU forms fused into Gelu, silero_vad_v4's smoothed-mean
#      normalisation kept f32 on its whole path, the MobileNetV3-style net;
#   2. the zoo's small models in f16 on cuda (scripts/device/zoo_device.py
#      --precision f16: every output within 1% of max|ref|, ORT's CPU as
#      the reference), reported per model.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
S=$D/bin/strata
F=$D/models/precision
fail=0
ok() { if [ "$2" = 0 ]; then echo "$1: PASS${3:+ ($3)}"; else echo "$1: FAIL${3:+ ($3)}"; fail=1; fi; }
if [ ! -x "$S" ] || [ ! -f "$F/ln_variance.onnx" ]; then
  echo "precision preflight: FAIL (no $S or $F: run scripts/device/pack.sh and precision_test.py pack here first)"
  exit 1
fi
for b in cuda opencl; do
  for c in ln_variance ln_decomposed gelu_forms mean_smoothed mobilenet_v3; do
    python3 tests/models/precision_test.py "$S" "$c" f16 --backend "$b" --fixtures "$F" > "$OUT/precision_${b}_$c.log" 2>&1
    rc=$?
    ok "precision $c f16 on $b" "$rc" "$(grep -E 'max\|d\|' "$OUT/precision_${b}_$c.log" | sed 's/  */ /g' | tr '\n' ';' | cut -c1-200)"
  done
done
ids=$(ls "$D/models/zoo" 2>/dev/null | sed 's/\.onnx$//')
if [ -n "$ids" ]; then
  python3 scripts/device/zoo_device.py "$S" "$D/models/zoo" "$OUT/zoo-f16" cuda --precision=f16 $ids > "$OUT/zoo_f16_cuda.log" 2>&1
  ok "zoo f16 on cuda ($(echo $ids | wc -w) models)" $? "$(grep -cE '^PASS' "$OUT/zoo_f16_cuda.log") passed"
  grep -E '^(PASS|FAIL)' "$OUT/zoo_f16_cuda.log"
fi
exit $fail
