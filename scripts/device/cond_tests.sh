#!/usr/bin/env bash
# cond_tests.sh — while loops as one CUDA graph with a conditional WHILE node
# (src/session/loop.c, src/backends/cuda/cuda_exec.c's exec_loop, k_loop.cu),
# on the GPU machine, from the repository root with .device/ carried
# (scripts/device/pack.sh generates .device/models/cond with
# tests/models/cond_loop.py: the models, their inputs and float64
# references).  Every check prints one line; details go to $OUT; the exit
# status is 0 only when every check passed.
#   1. every input set checked (--sanitize --runs 3: the runs bit-identical)
#      with the conditional path on: a Loop of n >= 2 iterations says it ran
#      1 on the host and n - 1 on the device, the host waiting twice in all;
#   2. the same with STRATA_CUDA_COND=0: one host wait per iteration;
#   3. both paths' outputs bit-identical;
#   4. 20 repeated runs of the 1,000-iteration loop bit-identical;
#   5. inspect --plan says which path ran; STRATA_CUDA_GRAPHS=0 and a
#      profiled run keep the host path and say why;
#   6. a cancel from another thread stops a 20,000-iteration device loop
#      (test_cancel --expect-cancels);
#   7. the 1,000-iteration loop timed on both paths (strata bench; reported,
#      and the device path must be the faster);
#   8. compute-sanitizer memcheck of the device path (and that it ran it).
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" "$OUT/run_out"
S=$D/bin/strata
M=$D/models/cond
fail=0
ok() { # ok NAME STATUS DETAIL: one line, and the status counted
  if [ "$2" = 0 ]; then echo "$1: PASS${3:+ ($3)}"; else echo "$1: FAIL${3:+ ($3)}"; fail=1; fi
}
if [ ! -x "$S" ] || [ ! -f "$M/cond_count.onnx" ]; then
  echo "cond preflight: FAIL (no $S or $M/cond_count.onnx: run scripts/device/pack.sh here first)"
  exit 1
fi
echo "cond device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
N1000_IN="-i x=$M/cond_count_input_4_x.npy -i n=$M/cond_count_input_4_n.npy"

# 1-3: the checks of tests/models/cond_test.py (one line per input set)
python3 tests/models/cond_test.py $S $M cuda check device > $OUT/cond_check_device.log 2>&1
r=$?; grep '^cond \|^SKIP' $OUT/cond_check_device.log; ok "cond check, conditional path on (7 input sets)" $r
STRATA_CUDA_COND=0 python3 tests/models/cond_test.py $S $M cuda check host > $OUT/cond_check_host.log 2>&1
r=$?; grep '^cond \|^SKIP' $OUT/cond_check_host.log; ok "cond check, STRATA_CUDA_COND=0 (7 input sets)" $r
python3 tests/models/cond_test.py $S $M cuda same > $OUT/cond_same.log 2>&1
r=$?; grep '^cond \|^SKIP' $OUT/cond_same.log; ok "cond same, device path vs host path (7 input sets)" $r

# 4: repeated runs (a replayed graph each time)
STRATA_LOOP_VERBOSE=1 $S check $M/cond_count.onnx $N1000_IN --ref-dir $M/cond_count_ref_4 --atol 1e-4 --backend cuda \
  --runs 20 > $OUT/cond_repeat.log 2>&1
r=$?
n_dev=$(grep -c "1000 iterations: 1 on the host, then 999 on the device in one CUDA graph" $OUT/cond_repeat.log)
grep -q "repeat: 20 runs, outputs bit-identical  PASS" $OUT/cond_repeat.log || r=1
[ "$n_dev" = 20 ] || r=1
ok "cond repeat, 20 runs of 1000 iterations bit-identical and all on the device" $r "$n_dev of 20 on the device"

# 5: what inspect and the verbose line say
$S inspect --plan $M/cond_count.onnx $N1000_IN --backend cuda > $OUT/cond_inspect.log 2>&1
line=$(grep '^ran: ' $OUT/cond_inspect.log | head -n 1)
echo "$line" | grep -q "^ran: Loop 'cond_count': 1000 iterations: 1 on the host, then 999 on the device in one CUDA graph (a conditional WHILE node); the host waited 2 times$"
ok "cond inspect --plan" $? "$line"
STRATA_LOOP_VERBOSE=1 STRATA_CUDA_GRAPHS=0 $S run $M/cond_count.onnx $N1000_IN --backend cuda -o $OUT/run_out -q > $OUT/cond_graphs0.log 2>&1
line=$(grep "^strata: Loop" $OUT/cond_graphs0.log | head -n 1)
echo "$line" | grep -q "1000 iterations on the host, one at a time; the host waited 1000 times (STRATA_CUDA_GRAPHS=0)"
ok "cond STRATA_CUDA_GRAPHS=0 keeps the host path" $? "$line"
STRATA_LOOP_VERBOSE=1 $S run $M/cond_count.onnx $N1000_IN --backend cuda -o $OUT/run_out -q --profile $OUT/cond_profile.json \
  > $OUT/cond_profiled.log 2>&1
line=$(grep "^strata: Loop" $OUT/cond_profiled.log | head -n 1)
echo "$line" | grep -q "1000 iterations on the host, one at a time; the host waited 1000 times (a profiled session"
ok "cond a profiled run keeps the host path" $? "$line"

# 6: cancel from another thread while the device loops
CASE="model=$M/cond_count.onnx,input=$M/cond_count_input_long_x.npy,input=$M/cond_count_input_long_n.npy"
CASE="$CASE,ref=$M/cond_count_ref_long,name=cond_long"
STRATA_LOOP_VERBOSE=1 $D/bin/test_cancel --backend cuda --expect-cancels --runs 20 "$CASE" > $OUT/cond_cancel.log 2>&1
r=$?
grep -q "on the device in one CUDA graph" $OUT/cond_cancel.log || r=1
ok "cond cancel of a 20000-iteration device loop" $r "$(grep 'runs cancelled' $OUT/cond_cancel.log | head -n 1)"

# 7: timing, the two paths alternated twice (median of 20 runs after 3 warm-ups)
: > $OUT/cond_bench.log
declare -A best
for round in 1 2; do
  for on in 1 0; do
    t=$(STRATA_CUDA_COND=$on $S bench $M/cond_count.onnx $N1000_IN --backend cuda --runs 20 --warmup 3 -q 2>&1 |
        tee -a $OUT/cond_bench.log | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    echo "round $round STRATA_CUDA_COND=$on: ${t:-?} ms" >> $OUT/cond_bench.log
    [ -n "$t" ] && { [ -z "${best[$on]:-}" ] || awk "BEGIN{exit !($t < ${best[$on]})}"; } && best[$on]=$t
  done
done
if [ -n "${best[1]:-}" ] && [ -n "${best[0]:-}" ]; then
  awk "BEGIN{exit !(${best[1]} < ${best[0]})}"
  ok "cond bench, 1000 iterations" $? "conditional graph ${best[1]} ms, host path ${best[0]} ms per run, $(awk "BEGIN{printf \"%.1f\", ${best[0]} / ${best[1]}}")x"
else
  ok "cond bench, 1000 iterations" 1 "no timing: see $OUT/cond_bench.log"
fi

# 8: compute-sanitizer memcheck of the device path
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for c in cond_count:3 cond_swap:0; do
  m=${c%%:*}; k=${c##*:}
  ins=""; for f in $M/${m}_input_${k}_*.npy; do n=${f##*_input_${k}_}; ins="$ins -i ${n%.npy}=$f"; done
  STRATA_LOOP_VERBOSE=1 $CS --tool memcheck --error-exitcode 9 $S check $M/$m.onnx $ins --ref-dir $M/${m}_ref_$k \
    --atol 1e-4 --backend cuda --runs 2 > $OUT/cs_cond_memcheck_${m}_$k.log 2>&1
  r=$?
  grep -q "on the device in one CUDA graph" $OUT/cs_cond_memcheck_${m}_$k.log || r=1
  ok "memcheck cond $m[$k] on the device path" $r "exit $r, $(grep 'ERROR SUMMARY' $OUT/cs_cond_memcheck_${m}_$k.log | head -n 1)"
done
echo "cond summary: $([ $fail = 0 ] && echo all passed || echo FAILURES)"
exit $fail
