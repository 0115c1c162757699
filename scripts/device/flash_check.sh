#!/usr/bin/env bash
# flash_check.sh — the f16 tensor-core attention on the GPU machine, from
# the repository root with .device/ carried (scripts/device/pack_merged.sh):
#   1. test_attention cuda and cuda f16: both CUDA kernels against the
#      float64 reference, every element (1e-5 in f32, 2e-3 in f16);
#   2. the GPU suite on the transformers (ViT-S, BERT-4) and ConvNeXt-T,
#      with ViT-S b32 under Nsight Compute, and the exported graphs
#      (weights stripped) brought back for study off the GPU machine;
#   3. the kernel sweep on CUDA and the GPU's OpenCL.
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
SUITE_GRAPHS=1 SUITE_PROFILE="${FLASH_PROFILE:-vit_small:32}" timeout 420 bash bench/gpu/suite.sh --compile none \
  --cases ${FLASH_CASES:-vit_small,bert4,convnext_tiny} 2>&1 | grep -vE "^(exported|floor)" | tail -40
for c in vit_small bert4; do
  [ -f /tmp/suite/$c.onnx ] || continue
  $D/bin/strata inspect /tmp/suite/$c.onnx --plan --backend cuda --precision f16 > $OUT/plan_$c.txt 2>&1
  echo "$c f16 plan on cuda: $(grep -c FusedAttention $OUT/plan_$c.txt) FusedAttention lines"
done
echo "== kernel sweep"; CASES=2 timeout 60 bash scripts/device/kernel_test.sh 2>&1 | grep -vE "^ " | tail -8
