#!/usr/bin/env bash
# round.sh — one GPU round of issue 24 on the GPU machine, from the
# repository root with .device/ carried (scripts/device/pack_merged.sh):
# the suite (ROUND_CASES, ROUND_COMPILE), Nsight Compute and strata's own
# per-op profile for ROUND_PROFILE ("case:batch ..."), the f16 attention
# kernels against float64, then ROUND_EXTRA (a command line) if set.
# The device tool brings back only a few files, so everything under $OUT
# ends up in $OUT/round.tar.xz beside the console log.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/r; R=$OUT/r
echo "== attention kernels against float64"
for m in f32 f16; do
  timeout 60 $D/bin/test_attention cuda $([ $m = f16 ] && echo f16) > $R/attn_unit_$m.log 2>&1
  echo "test_attention cuda $m: exit $?, $(grep -c 'max |d|' $R/attn_unit_$m.log) cases, worst $(grep -o 'max |d| [0-9.e+-]*' $R/attn_unit_$m.log | sort -k3 -g | tail -1)"
done
echo "== suite"
OUT=$R SUITE_GRAPHS=${ROUND_GRAPHS:-} SUITE_PROFILE="${ROUND_PROFILE:-}" timeout ${ROUND_SUITE_S:-400} \
  bash bench/gpu/suite.sh --compile ${ROUND_COMPILE:-none} --cases ${ROUND_CASES:-yolov8n,resnet50,convnext_tiny,vit_small,bert4} \
  > $R/suite_console.log 2>&1
grep -vE "^(exported|floor)" $R/suite.log | tail -40
for f in $R/ops_*.txt; do [ -f "$f" ] && { echo "-- $f"; head -14 "$f"; }; done
if [ -n "${ROUND_EXTRA:-}" ]; then echo "== extra"; bash -c "$ROUND_EXTRA" 2>&1 | tee $R/extra.log | tail -60; fi
tar -C $OUT -cJf $OUT/round.tar.xz r && rm -rf $R
