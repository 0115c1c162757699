#!/usr/bin/env bash
# extra20.sh — the last GPU call of the fifth session (2026-12-04), from
# the repository root with .device/ (bin, lib, seed models) and .gl/
# carried.  In order of need, since the call may be cut short:
#  - the GPU suite (YOLOv8n, ResNet-50, EfficientNet-B0, ViT-S, BERT-4;
#    no compile: extra19.sh timed torch.compile) with the residual fold
#    and the one-pixel convs fused: strata against PyTorch eager, and
#    every model against PyTorch f32;
#  - OpenCL's f16 conv rework and Vulkan's split-K conv: YOLOv8n b1 timed
#    on the three GPU backends (Vulkan also with split K off), then the
#    Vulkan correctness set under synchronization validation and
#    --sanitize, and OpenCL against PyTorch;
#  - the done-when checks of issue 24 on the new fused paths:
#    compute-sanitizer memcheck and racecheck over the residual test's
#    graph (every fold: Split chunk, concat slot, ReLU after), 20 graph
#    replays bit-identical;
#  - YOLOv8n b32 with the fused conv's engine configs timed on the first
#    run (STRATA_CUDA_CONV_FUSED_TUNE=1), then read from the disk cache;
#  - the OpenCL kernel sweep.
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/r; R=$OUT/r
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
echo "== suite $(el)"
OUT=$R timeout ${SUITE_S:-225} bash bench/gpu/suite.sh --compile none \
  --cases ${SUITE_CASES:-yolov8n,resnet50,efficientnet_b0,vit_small,bert4} > $R/suite_console.log 2>&1
grep -vE "^(exported|floor)" $R/suite.log | tail -16
cp $R/latest.json $OUT/latest.json 2>/dev/null
echo "== YOLOv8n 640x640 b1 on the three GPU backends (median ms of 50) $(el)"
M=/tmp/suite/yolov8n.onnx
STRATA_VULKAN_TILE_LOG=1 timeout 30 $S run $M $(ins yolov8n 1) --backend vulkan -q -o /tmp 2>&1 | grep -i "compute unit" | head -2
for p in f32 f16; do
  for b in cuda opencl vulkan; do
    echo "yolov8n $p $b: $(timeout 40 $S bench $M $(ins yolov8n 1) --backend $b --precision $p --runs 50 --warmup 10 -q 2>&1 | tail -1)"
  done
done
echo "vulkan f16 STRATA_VULKAN_CONV_SPLITK=1: $(STRATA_VULKAN_CONV_SPLITK=1 timeout 40 $S bench $M $(ins yolov8n 1) --backend vulkan \
  --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
echo "opencl f16 STRATA_OPENCL_CONV_GENERIC=1: $(STRATA_OPENCL_CONV_GENERIC=1 timeout 40 $S bench $M $(ins yolov8n 1) --backend opencl \
  --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
for b in opencl vulkan; do
  echo "-- $b f16 per-op profile"
  timeout 40 $S bench $M $(ins yolov8n 1) --backend $b --precision f16 --runs 5 --warmup 2 -q --profile /tmp/p_$b.json > /dev/null 2>&1 &&
    python3 bench/gpu/trace_sum.py /tmp/p_$b.json 2>/dev/null | head -12
done
echo "== Vulkan correctness under synchronization validation, --sanitize $(el)"
export STRATA_VULKAN_VALIDATION=1
python3 scripts/device/prepare.py $D/models /tmp/m > /tmp/prepare.log 2>&1
vp=0; vf=0
vk() { if "$@" > /tmp/vk.log 2>&1 && ! grep -q "vulkan validation:" /tmp/vk.log; then vp=$((vp+1)); else vf=$((vf+1)); echo "FAIL: ${*: -8}"; grep -m2 "vulkan validation:" /tmp/vk.log | cut -c1-200; tail -2 /tmp/vk.log; fi; }
for f in /tmp/m/seed/*.onnx; do
  c=$(basename $f .onnx); [ -d /tmp/m/seed/${c}_ref ] || continue
  vk timeout 20 $S check $f -i /tmp/m/seed/${c}_input_0.npy --ref-dir /tmp/m/seed/${c}_ref --backend vulkan --sanitize
  vk timeout 20 $S check $f -i /tmp/m/seed/${c}_input_0.npy --ref-dir /tmp/m/seed/${c}_ref --backend vulkan --sanitize --precision f16 --scale-tol 1e-2
done
for p in f32 f16; do
  tol=1e-3; [ $p = f16 ] && tol=2e-2
  for c in yolov8n resnet50; do
    vk timeout 40 $S check /tmp/suite/$c.onnx $(ins $c 1) -r y=/tmp/suite/${c}_b1_ref.npy --backend vulkan --precision $p --sanitize \
      --scale-tol $tol --atol 0 --rtol 0
  done
done
echo "vulkan with synchronization validation: $vp passed, $vf failed"
export STRATA_VULKAN_VALIDATION=0
echo "== OpenCL YOLOv8n against PyTorch f32 $(el)"
for p in f32 f16; do
  tol=1e-3; [ $p = f16 ] && tol=2e-2
  echo "opencl $p: $(timeout 40 $S check /tmp/suite/yolov8n.onnx $(ins yolov8n 1) -r y=/tmp/suite/yolov8n_b1_ref.npy --backend opencl \
    --precision $p --scale-tol $tol --atol 0 --rtol 0 2>&1 | tail -1)"
done
echo "== compute-sanitizer over the residual folds $(el)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
timeout 60 python3 tests/conv/residual_test.py $S cuda --save /tmp/rs | tail -1
mkdir -p /tmp/o
for t in memcheck racecheck; do
  STRATA_CUDA_GRAPHS=0 timeout 40 $CS --tool $t --error-exitcode 9 $S run /tmp/rs/residual.onnx -i x=/tmp/rs/x.npy --backend cuda \
    --precision f16 -q -o /tmp/o > $R/cs_${t}_residual.log 2>&1
  echo "$t residual graph f16: exit $? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' $R/cs_${t}_residual.log | head -1)"
done
echo "== 20 replays f16 b1 against PyTorch f32 $(el)"
for c in yolov8n resnet50; do
  echo "$c: $(timeout 30 $S check /tmp/suite/$c.onnx $(ins $c 1) -r y=/tmp/suite/${c}_b1_ref.npy --backend cuda --precision f16 --runs 20 \
    --scale-tol 1e-2 --atol 0 --rtol 0 2>&1 | tail -2 | tr '\n' ' ')"
done
echo "== the fused conv's engines timed (STRATA_CUDA_CONV_FUSED_TUNE=1), YOLOv8n b32: tuning, then from the disk cache $(el)"
for k in 1 2; do
  echo "tune run $k: $(XDG_CACHE_HOME=/tmp/tc STRATA_CUDA_CONV_FUSED_TUNE=1 timeout 70 $S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 32) \
    --backend cuda --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
done
wc -l /tmp/tc/strata/cuda/conv_algos.txt 2>/dev/null
echo "== OpenCL kernel sweep $(el)"
timeout 25 $D/bin/kernel_sweep --backend opencl --cases 2 --seed 43 --known tests/kernels/known_failures.txt > $R/sweep_opencl.log 2>&1
echo "exit $?: $(grep -E '^backend' $R/sweep_opencl.log)"; grep -E "^FAIL" $R/sweep_opencl.log | head -4
tar -C $OUT -cJf $OUT/r.tar.xz r && rm -rf $R
el
