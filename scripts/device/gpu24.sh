#!/usr/bin/env bash
# gpu24.sh — issue 24's GPU run, on the GPU machine from the repository
# root with .device/ carried (scripts/device/pack_gpu24.sh): the node
# tests of the op families the CUDA fast paths cover, the seed cases in
# f32/f16/bf16 plain and under --sanitize and PP-OCR against ONNX Runtime
# (cuda_tests.sh), the GPU suite (bench/gpu/suite.sh), 20 graph replays
# bit-identical, and compute-sanitizer memcheck and racecheck over the
# fast paths.  Logs under $OUT.  GPU24_SUITE="..." passes suite options.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=$D/bin/strata
echo "== node tests on cuda (the fast paths' families)"
mkdir -p /tmp/node && tar -xJf $D/node_subset.tar.xz -C /tmp/node
ls /tmp/node > /tmp/cases.txt && split -n l/8 -d /tmp/cases.txt /tmp/chunk_
for f in /tmp/chunk_*; do $D/bin/conformance --data /tmp/node --backend cuda --list $f -v > /tmp/conf_$(basename $f).log 2>&1 & done
wait
cat /tmp/conf_chunk_*.log | grep -E "^(PASS|FAIL|UNSUPPORTED) " > $OUT/conf_cuda.txt
echo "$(grep -c '^PASS ' $OUT/conf_cuda.txt) passed ($(grep '^PASS ' $OUT/conf_cuda.txt | grep -vc 'ran on the CPU') natively), $(grep -c '^FAIL ' $OUT/conf_cuda.txt) failed"
grep '^FAIL ' $OUT/conf_cuda.txt | head
echo "== seed cases and PP-OCR"
SKIP_YOLO=1 ASSETS=$D/models/ppocr_assets scripts/device/cuda_tests.sh $D/bin $D/models > $OUT/cuda_tests.log 2>&1
grep -E "^FAIL|cuda_tests:|INFO" $OUT/cuda_tests.log | head -30
echo "== suite"
bash bench/gpu/suite.sh ${GPU24_SUITE:---compile none} 2>&1 | grep -vE "^(exported|floor)" | tail -16
echo "== graph replays (20 runs bit-identical) and compute-sanitizer"
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
for c in vit_small convnext_tiny; do
  $S check /tmp/suite/$c.onnx $(ins $c 1) -r y=/tmp/suite/${c}_b1_ref.npy --backend cuda --runs 20 --scale-tol 1e-3 --atol 0 --rtol 0 2>&1 | tail -2
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for t in memcheck racecheck; do
  for c in convnext_tiny vit_small; do
    STRATA_CUDA_GRAPHS=0 timeout 100 $CS --tool $t --error-exitcode 9 $S run /tmp/suite/$c.onnx $(ins $c 1) --backend cuda \
      --precision f16 -q -o /tmp/o > $OUT/cs_${t}_$c.log 2>&1
    echo "$t $c f16: exit $? $(grep 'ERROR SUMMARY' $OUT/cs_${t}_$c.log | head -1)"
  done
done
