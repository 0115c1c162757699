#!/usr/bin/env bash
# attn_tests.sh — FusedAttention on the GPU (src/backends/cuda/k_attention.cu
# and, on the GPU's own OpenCL, src/backends/opencl/attention.cl), on the
# GPU machine, from the repository root with .device/ carried
# (`ATTN_ONLY=1 scripts/device/pack.sh BUILD` packs the binaries with
# test_attention and the transformer fixtures: encoder.onnx and
# decoder.onnx with ONNX Runtime's references).
# Every check prints one line; details go to $OUT; the exit status is 0
# only when every check passed.
#   1. test_attention cuda: the kernel on the unit test's cases against a
#      float64 reference (every element within 1e-5 + 1e-5 |ref|, NaN rows
#      where every key is masked, the padded output's gaps untouched), and
#      the same on OpenCL (the H200's own OpenCL driver);
#   2. the encoder (3 input sets) and the decoder (3) against ORT on CUDA,
#      within 1e-5 + 1e-5 |ref|, plain (unfused: CUDA's default) and with
#      --sanitize (fused: STRATA_ATTENTION_FUSION=1), and on OpenCL;
#   3. inspect --plan: with STRATA_ATTENTION_FUSION=1 the encoder's 4
#      attentions run as FusedAttention on cuda; by default they do not;
#   4. the encoder at batch 2 x 77 and 1 x 512 timed on CUDA and OpenCL with and
#      without the fusion (strata bench medians, alternated, best of 3
#      rounds; reported only, no pass mark on speed).
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
S=$D/bin/strata
T=$D/bin/test_attention
M=$D/models/transformer
fail=0
ok() { # ok NAME STATUS DETAIL: one line, and the status counted
  if [ "$2" = 0 ]; then echo "$1: PASS${3:+ ($3)}"; else echo "$1: FAIL${3:+ ($3)}"; fail=1; fi
}
if [ ! -x "$S" ] || [ ! -x "$T" ] || [ ! -f "$M/encoder.onnx" ]; then
  echo "attn preflight: FAIL (no $S, $T or $M/encoder.onnx: run scripts/device/pack.sh here first)"
  exit 1
fi
echo "attn device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"

# 1: the kernels against the float64 reference
for b in cuda opencl; do
  $T $b > $OUT/attn_unit_$b.log 2>&1
  r=$?
  ok "attn unit $b (7 cases, every element)" $r "$(grep -c 'max |d|' $OUT/attn_unit_$b.log) cases ran; worst $(sed -n 's/.*max |d| \([^,]*\),.*/\1/p' $OUT/attn_unit_$b.log | sort -g | tail -n 1)"
done

# 2: the transformer fixtures against ONNX Runtime (CUDA's sanitized runs
# with the fusion asked for, its plain runs as CUDA plans by default:
# unfused)
for b in cuda opencl; do
  for san in "" "--sanitize"; do
    [ "$b" = opencl ] && [ -z "$san" ] && continue
    if [ -n "$san" ]; then export STRATA_ATTENTION_FUSION=1; else unset STRATA_ATTENTION_FUSION; fi
    for k in 0 1 2; do
      $S check $M/encoder.onnx -i ids=$M/encoder_${k}_input_0.npy -i pad=$M/encoder_${k}_input_1.npy \
        --ref-dir $M/encoder_${k}_ref --atol 1e-5 --rtol 1e-5 --backend $b $san > $OUT/attn_enc_${b}_${k}.log 2>&1
      ok "attn encoder $k $b${san:+ sanitize}" $? "$(grep -m1 -o 'max_atol=[^ ]*' $OUT/attn_enc_${b}_${k}.log)"
      $S check $M/decoder.onnx -i x=$M/decoder_${k}_input_0.npy --ref-dir $M/decoder_${k}_ref --atol 1e-5 --rtol 1e-5 \
        --backend $b $san > $OUT/attn_dec_${b}_${k}.log 2>&1
      ok "attn decoder $k $b${san:+ sanitize}" $? "$(grep -m1 -o 'max_atol=[^ ]*' $OUT/attn_dec_${b}_${k}.log)"
    done
  done
  unset STRATA_ATTENTION_FUSION
done

# 3: the plan fuses on cuda (the chain's Softmax shows as "fused"; the
# last MatMul runs FusedAttention on cuda), and not with the pass off
ENC0="-i ids=$M/encoder_0_input_0.npy -i pad=$M/encoder_0_input_1.npy"
STRATA_ATTENTION_FUSION=1 $S inspect --plan $M/encoder.onnx $ENC0 --backend cuda > $OUT/attn_plan.log 2>&1
n=$(grep -c '^  fused  Softmax' $OUT/attn_plan.log)
c=$(grep -c '^  exec   MatMul .*self_attn/MatMul_2  @cuda' $OUT/attn_plan.log)
[ "$n" = 4 ] && [ "$c" = 4 ]; ok "attn plan, fused on cuda" $? "$n of 4 attentions fused, $c run on cuda"
$S inspect --plan $M/encoder.onnx $ENC0 --backend cuda > $OUT/attn_plan_off.log 2>&1
n=$(grep -c '^  fused  Softmax' $OUT/attn_plan_off.log)
[ "$n" = 0 ]; ok "attn plan, cuda by default leaves it unfused" $? "$n fused"

# 4: timing, fused (STRATA_ATTENTION_FUSION=1: CUDA fuses only when
# asked) against unfused (STRATA_NO_ATTENTION_FUSION=1), alternated, on
# CUDA and on the H200's OpenCL
: > $OUT/attn_bench.log
for b in cuda opencl; do
for k in 0 1; do
  IN="-i ids=$M/encoder_${k}_input_0.npy -i pad=$M/encoder_${k}_input_1.npy"
  best_on=; best_off=
  for round in 1 2 3; do
    for off in "" 1; do
      if [ -z "$off" ]; then ev=STRATA_ATTENTION_FUSION=1; else ev=STRATA_NO_ATTENTION_FUSION=1; fi
      t=$(env $ev $S bench $M/encoder.onnx $IN --backend $b --runs 200 --warmup 20 -q 2>&1 |
          tee -a $OUT/attn_bench.log | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
      echo "$b encoder_$k round $round fusion ${off:+off}${off:-on}: ${t:-?} ms" >> $OUT/attn_bench.log
      [ -n "$t" ] || continue
      if [ -z "$off" ]; then
        { [ -z "$best_on" ] || awk "BEGIN{exit !($t < $best_on)}"; } && best_on=$t
      else
        { [ -z "$best_off" ] || awk "BEGIN{exit !($t < $best_off)}"; } && best_off=$t
      fi
    done
  done
  shape=$([ $k = 0 ] && echo 2x77 || echo 1x512)   # tests/models' manifest.json
  if [ -n "$best_on" ] && [ -n "$best_off" ]; then
    echo "attn bench encoder ${shape:-$k} $b: fused ${best_on} ms, unfused ${best_off} ms per run (median, best of 3), $(awk "BEGIN{printf \"%.2f\", $best_off / $best_on}")x"
  else
    ok "attn bench encoder ${shape:-$k} $b" 1 "no timing: see $OUT/attn_bench.log"
  fi
done
done
exit $fail
