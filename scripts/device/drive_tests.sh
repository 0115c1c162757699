#!/usr/bin/env bash
# drive_tests.sh — the shared DAG driver (src/runtime/drive.c) under the
# CUDA executor (src/backends/cuda/cuda_exec.c: its enqueue and host-node
# callbacks), on the GPU machine, from the repository root with .device/
# carried (`NODE_TESTS=all scripts/device/pack.sh BUILD` first).  It runs
# the existing GPU suites that exercise each part the driver took over:
#   run_tests.sh      direct runs, graph capture and replay (--runs 20
#                     bit-identical), compute-sanitizer, the zoo on CUDA;
#   fault_tests.sh    a refused launch in a direct and a captured run,
#                     cancel and deadlines (the walk's check), the soak;
#   cond_tests.sh     while loops captured into a conditional node
#                     (enqueue with cond_body), host fallback;
#   staged_tests.sh   host commands as host functions, 50 random schedules
#                     (the driver's random order);
#   fallback_tests.sh mixed plans: transfers and host nodes, --no-fallback;
#   profile_tests.sh  profiled runs (timed enqueue, host lane marks).
# Each suite's log goes to $OUT/drive_<suite>.log; prints one line per
# suite and exits 1 if any failed.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
fail=0
for t in run_tests fault_tests cond_tests staged_tests fallback_tests profile_tests; do
  OUT=$OUT bash scripts/device/$t.sh > "$OUT/drive_$t.log" 2>&1
  rc=$?
  # run_tests.sh reports through its lines, not its status: count FAILs too
  n=$(grep -c "FAIL" "$OUT/drive_$t.log")
  if [ $rc = 0 ] && [ "$n" = 0 ]; then echo "$t: PASS"; else echo "$t: FAIL (exit $rc, $n FAIL lines; $OUT/drive_$t.log)"; fail=1; fi
done
exit $fail
