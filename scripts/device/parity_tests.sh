#!/usr/bin/env bash
# parity_tests.sh — issue 28's GPU kernel parity on the GPU machine, from
# the repository root with .device/ carried.  Two parts, each with its own
# pack (both together pass the 64 MB the device tool carries):
#
#   NODE_TESTS=all scripts/device/pack.sh && (device) scripts/device/parity_tests.sh node
#     every ONNX node test on CUDA and on the machine's OpenCL (the H200's
#     own driver), with CPU fallback and with --no-fallback, 8 runners in
#     parallel.  With fallback, every case the CPU must pass
#     (tests/conformance/must_pass) must pass; with or without, the cases in
#     must_pass_<backend>/ must pass natively.  The native passes go to
#     $OUT/native_<backend>.txt (to grow the must-pass lists), and the ops
#     of the new kernels (k_index.cu, k_rnn.cu, k_rownorm.cu, k_sample.cu;
#     index.cl, rnn.cl, rownorm.cl, sample.cl) get a per-op line: passed natively / not.
#
#   ZOO_ALL=1 scripts/device/pack.sh && (device) scripts/device/parity_tests.sh zoo
#   (the small models are 44 MB: with the binaries that is over a call's
#   64 MB, so pack and run them in two halves, ZOO_IDS="id ..." on both)
#     every small zoo model (tests/zoo/models.json) with --no-fallback on
#     CUDA and on OpenCL, against ONNX Runtime's CPU provider
#     (scripts/device/zoo_device.py), then the same under --sanitize.
#
# No argument runs both parts (for a pack that holds both).  One line per
# check; logs under $OUT; exit status 0 only when every check passed.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
S=$D/bin/strata
C=$D/bin/conformance
what=${1:-all}
fail=0
ok() { # ok NAME STATUS DETAIL
  if [ "$2" = 0 ]; then echo "$1: PASS${3:+ ($3)}"; else echo "$1: FAIL${3:+ ($3)}"; fail=1; fi
}
echo "parity device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
$S inspect --ops --json > "$OUT/ops.json" 2>&1
python3 - "$OUT/ops.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("op rows: " + ", ".join("%s %d" % (b, sum(1 for o in d["ops"] if o.get(b))) for b in d["backends"]))
EOF

NEW_OPS="GridSample|NonZero|Einsum|Pad|CenterCropPad|Expand|Tile|Range|Gather|GatherElements|ScatterND|OneHot|CumSum|TopK|ArgMax|ArgMin|RNN|GRU|LSTM|LayerNormalization|InstanceNormalization|GroupNormalization|DepthToSpace|SpaceToDepth"

if [ "$what" = node ] || [ "$what" = all ]; then
  if [ ! -d $D/node ]; then
    ok "parity node preflight" 1 "no $D/node: pack with NODE_TESTS=all"
  else
    ls $D/node | grep '^test_' > /tmp/all_cases.txt
    rm -f /tmp/pchunk_*
    split -n l/8 -d /tmp/all_cases.txt /tmp/pchunk_
    cat tests/conformance/must_pass/*.txt | sed 's/#.*//' | awk 'NF {print $1}' | sort > /tmp/must.txt
    for b in ${PARITY_BACKENDS:-cuda opencl}; do
      for mode in fallback strict; do
        flag=""
        [ $mode = strict ] && flag=--no-fallback
        for f in /tmp/pchunk_*; do
          $C --data $D/node --backend $b $flag --list "$f" -v > "$OUT/parity_${b}_${mode}_$(basename "$f").log" 2>&1 &
        done
        wait
        R=$OUT/parity_${b}_${mode}.txt
        cat "$OUT"/parity_${b}_${mode}_pchunk_*.log | grep -E "^(PASS|FAIL|UNSUPPORTED) " > "$R"
        grep "^PASS " "$R" | grep -v "ran on the CPU" | awk '{print $2}' | sort > "$OUT/native_${b}_${mode}.txt"
        grep "^PASS " "$R" | awk '{print $2}' | sort > /tmp/pass.txt
        nfail=$(grep -c '^FAIL ' "$R")
        echo "== node tests on $b ($mode): $(wc -l < /tmp/pass.txt) passed ($(wc -l < "$OUT/native_${b}_${mode}.txt") natively), $nfail failed, $(grep -c '^UNSUPPORTED ' "$R") unsupported"
        grep "^FAIL " "$R" | head -12
        ok "parity node $b $mode: no case fails" $([ "$nfail" = 0 ] && echo 0 || echo 1) "$nfail failed"
        if [ $mode = fallback ]; then
          miss=$(comm -23 /tmp/must.txt /tmp/pass.txt | wc -l)
          ok "parity node $b: every CPU must-pass case passes with fallback" $([ "$miss" = 0 ] && echo 0 || echo 1) "$miss missing"
        fi
        if [ -d tests/conformance/must_pass_$b ]; then
          cat tests/conformance/must_pass_$b/*.txt | sed 's/#.*//' | awk 'NF {print $1}' | sort > /tmp/native_must.txt
          miss=$(comm -23 /tmp/native_must.txt "$OUT/native_${b}_${mode}.txt" | wc -l)
          ok "parity node $b $mode: must_pass_$b all native" $([ "$miss" = 0 ] && echo 0 || echo 1) "$miss not native"
          comm -23 /tmp/native_must.txt "$OUT/native_${b}_${mode}.txt" | head -10
        fi
        # the new kernels' ops, case by case (op name in parentheses)
        if [ $mode = strict ]; then
          grep -E "\((${NEW_OPS})\)" "$R" | awk '{print $1, $3}' | sort | uniq -c | sed "s/^/   $b strict: /"
        fi
      done
    done
  fi
fi

if [ "$what" = zoo ] || [ "$what" = all ]; then
  # ZOO_IDS="a b ...": those models only (pack.sh packs the same list;
  # the 44 MB of small models and the binaries do not fit one call)
  ids=${ZOO_IDS:-$(python3 -c "import json; print(' '.join(m['id'] for m in json.load(open('tests/zoo/models.json'))['models'] if m['size'] == 'small'))")}
  missing=""
  for id in $ids; do [ -f $D/models/zoo/$id.onnx ] || missing="$missing $id"; done
  if [ -n "$missing" ]; then
    ok "parity zoo preflight" 1 "not packed:$missing (pack with ZOO_ALL=1)"
  else
    for b in ${PARITY_BACKENDS:-cuda opencl}; do
      # f32, f32 under --sanitize, and f16 (the mixed-precision policy,
      # judged at 1% of each output's max|ref|, as zoo.py does);
      # PARITY_MODES="--sanitize --precision=f16" leaves out plain f32
      # (no empty word can be given there)
      for san in ${PARITY_MODES:-"" --sanitize --precision=f16}; do
        tag=${san#--}; tag=${tag/=/_}
        python3 scripts/device/zoo_device.py $S $D/models/zoo $OUT/zoo_parity $b --no-fallback $san $ids > "$OUT/zoo_${b}_strict_${tag}.log" 2>&1
        r=$?
        grep -E "^(PASS|FAIL) " "$OUT/zoo_${b}_strict_${tag}.log"
        ok "parity zoo $b --no-fallback${san:+ $san}: every packed small model" $r "$(grep -c '^PASS ' "$OUT/zoo_${b}_strict_${tag}.log") of $(echo $ids | wc -w) passed"
      done
    done
  fi
fi
exit $fail
