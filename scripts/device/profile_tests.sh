#!/usr/bin/env bash
# profile_tests.sh — profiles on the GPU machine (docs/profiling.md), from
# the repository root with .device/ carried (scripts/device/pack.sh), after
# run_tests.sh (whose prepare.py made /tmp/m):
#   - tests/profile/profile_test.py on CUDA: a seed case (check --runs 3,
#     bit-identical without graph replay), YOLOv8n 640 (90% of the run's
#     wall time covered, then three warmed-up runs), a mixed plan (host
#     commands and transfers on their own threads), a staged plan (every
#     stage's commands);
#   - a YOLOv8n bench with and without --profile (what the profile costs:
#     eager launches instead of a graph), its trace and, where matplotlib
#     is installed, its PNG in $OUT;
#   - compute-sanitizer memcheck of a profiled run.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
S=$D/bin/strata
P=/tmp/pm
mkdir -p $P
for d in seed yolo; do ln -sfn /tmp/m/$d $P/$d; done
for d in mixed staged; do [ -d $D/models/$d ] && ln -sfn "$PWD/$D/models/$d" $P/$d; done
for c in seed yolo mixed staged; do
  echo "== profile_test.py $c cuda"
  python3 tests/profile/profile_test.py $c $S $P cuda 2>&1 | tail -n 8
done
Y="$P/yolo/yolov8n.onnx -i $P/yolo/yolov8n_640x640_b1_input.npy --backend cuda --warmup 5 --runs 50"
echo "== YOLOv8n 640 bench, graphs as usual, then profiled (eager)"
$S bench $Y | tail -n 1
$S bench $Y --profile $OUT/yolov8n_cuda.json | tail -n 1
python3 tests/profile/profile_test.py check $OUT/yolov8n_cuda.json 0 | head -n 3
python3 tools/trace_png.py $OUT/yolov8n_cuda.json $OUT/yolov8n_cuda.png 2>&1 | tail -n 22 ||
  echo "(no matplotlib here: draw $OUT/yolov8n_cuda.json with tools/trace_png.py on the development machine)"
echo "== compute-sanitizer memcheck, profiled"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
$CS --tool memcheck --error-exitcode 9 $S run $P/yolo/yolov8n.onnx --backend cuda -q -o /tmp \
   --dim batch=1 --dim height=320 --dim width=320 --profile /tmp/cs_profile.json > $OUT/cs_memcheck_profile.log 2>&1
echo "memcheck yolov8n 320 --profile: exit $? $(grep 'ERROR SUMMARY' $OUT/cs_memcheck_profile.log | head -n 1)"
