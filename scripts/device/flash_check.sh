#!/usr/bin/env bash
# flash_check.sh — the f16 tensor-core attention on the GPU machine, from
# the repository root with .device/ carried (scripts/device/pack_merged.sh):
#   1. test_attention cuda and cuda f16: both CUDA kernels against the
#      float64 reference, every element (1e-5 in f32, 2e-3 in f16);
#   2. the GPU suite on the transformers (ViT-S, BERT-4) and ConvNeXt-T,
#      with ViT-S b32 under Nsight Compute, and the exported graphs
#      (weights stripped) brought back for study off the GPU machine;
#   3. the kernel sweep on CUDA and the GPU's OpenCL;
#   4. bench/gpu/bandwidth.py: the memory-bound kernels in GB/s against a
#      device copy in the same call, f16 (issue 24, item 1).
# Logs under $OUT; each part has a time cap.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT; export OUT
echo "== attention kernels against float64"
for m in f32 f16; do
  timeout 60 $D/bin/test_attention cuda $([ $m = f16 ] && echo f16) > $OUT/attn_unit_$m.log 2>&1
  echo "test_attention cuda $m: exit $?, $(grep -c 'max |d|' $OUT/attn_unit_$m.log) cases"
  grep -E "max \|d\||wrong|FAIL" $OUT/attn_unit_$m.log | head -14
done
echo "== suite"
SUITE_GRAPHS=1 SUITE_PROFILE="${FLASH_PROFILE:-vit_small:32}" timeout ${FLASH_SUITE_S:-420} bash bench/gpu/suite.sh --compile none \
  --cases ${FLASH_CASES:-vit_small,bert4,convnext_tiny} 2>&1 | grep -vE "^(exported|floor)" | tail -40
for c in vit_small bert4; do
  [ -f /tmp/suite/$c.onnx ] || continue
  $D/bin/strata inspect /tmp/suite/$c.onnx --plan --backend cuda --precision f16 > $OUT/plan_$c.txt 2>&1
  echo "$c f16 plan on cuda: $(grep -c FusedAttention $OUT/plan_$c.txt) FusedAttention lines"
done
echo "== attention fused in f16 (opt-in) against unfused, ViT-S and BERT-4"
for c in vit_small bert4; do
  [ -f /tmp/suite/$c.onnx ] || continue
  ins=$(python3 -c "import json; print(' '.join('-i %s=/tmp/suite/${c}_b32_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$c.json'))['inputs']))")
  for f in 0 1; do
    echo "$c b32 f16 STRATA_ATTENTION_FUSION=$f: $(STRATA_ATTENTION_FUSION=$f $D/bin/strata bench /tmp/suite/$c.onnx $ins --backend cuda --precision f16 --runs 50 2>&1 | tail -1)"
  done
  STRATA_ATTENTION_FUSION=1 $D/bin/strata run /tmp/suite/$c.onnx ${ins//_b32_/_b1_} --backend cuda --precision f16 -q -o /tmp/fa_$c
  python3 -c "import numpy as np; r=np.load('/tmp/suite/${c}_b1_ref.npy').astype('f8'); g=np.load('/tmp/fa_$c/y.npy').astype('f8'); print('$c fused f16 b1 max|d|/max|ref| %.2e' % (abs(g-r).max()/abs(r).max()))"
done
echo "== bandwidth"; STRATA=$PWD/$D/bin/strata timeout ${FLASH_BW_S:-240} python3 bench/gpu/bandwidth.py --out $OUT 2>&1 | tail -12
echo "== kernel sweep"; CASES=2 timeout 60 bash scripts/device/kernel_test.sh 2>&1 | grep -vE "^ " | tail -8
