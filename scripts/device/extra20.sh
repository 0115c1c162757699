#!/usr/bin/env bash
# extra20.sh — the last GPU call of the fifth session (2026-12-04), from
# the repository root with .device/ (bin, lib, seed and PP-OCR models) and
# .gl/ carried:
#  - the GPU suite (YOLOv8n, ResNet-50, EfficientNet-B0, ViT-S, BERT-4;
#    no compile: extra19.sh timed torch.compile)
#    with the residual fold and the one-pixel convs fused: strata against
#    PyTorch eager, and every model against PyTorch f32;
#  - YOLOv8n b32 with the fused conv's engine configs timed on the first
#    run (STRATA_CUDA_CONV_FUSED_TUNE=1) and then read from the disk cache;
#  - the done-when checks of issue 24 on the new fused paths:
#    compute-sanitizer memcheck over YOLOv8n and ResNet-50, racecheck over
#    the residual test's graph (every fold: Split chunk, concat slot,
#    ReLU after), 20 graph replays bit-identical;
#  - OpenCL's f16 conv rework and Vulkan's split-K conv: YOLOv8n b1 timed
#    on the three GPU backends, OpenCL against PyTorch, the Vulkan
#    correctness set with and without synchronization validation
#    (vulkan_tests.sh, node tests off), the Vulkan and OpenCL kernel
#    sweeps.
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/r; R=$OUT/r
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
echo "== suite $(el)"
OUT=$R timeout ${SUITE_S:-260} bash bench/gpu/suite.sh --compile none \
  --cases ${SUITE_CASES:-yolov8n,resnet50,efficientnet_b0,vit_small,bert4} > $R/suite_console.log 2>&1
grep -vE "^(exported|floor)" $R/suite.log | tail -24
cp $R/latest.json $OUT/latest.json 2>/dev/null
echo "== the fused conv's engines timed (STRATA_CUDA_CONV_FUSED_TUNE=1), YOLOv8n b32: tuning, then from the disk cache $(el)"
for k in 1 2; do
  echo "tune run $k: $(XDG_CACHE_HOME=/tmp/tc STRATA_CUDA_CONV_FUSED_TUNE=1 timeout 90 $S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 32) \
    --backend cuda --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
done
echo "default: $($S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 32) --backend cuda --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
wc -l /tmp/tc/strata/cuda/conv_algos.txt 2>/dev/null
echo "== 20 replays f16 b1 against PyTorch f32 $(el)"
for c in yolov8n resnet50; do
  [ -f /tmp/suite/$c.onnx ] || continue
  echo "$c: $($S check /tmp/suite/$c.onnx $(ins $c 1) -r y=/tmp/suite/${c}_b1_ref.npy --backend cuda --precision f16 --runs 20 \
    --scale-tol 1e-2 --atol 0 --rtol 0 2>&1 | tail -2 | tr '\n' ' ')"
done
echo "== compute-sanitizer $(el)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
python3 tests/conv/residual_test.py $S cuda --save /tmp/rs | tail -2
mkdir -p /tmp/o
for c in yolov8n; do
  STRATA_CUDA_GRAPHS=0 timeout 50 $CS --tool memcheck --error-exitcode 9 $S run /tmp/suite/$c.onnx $(ins $c 1) --backend cuda \
    --precision f16 -q -o /tmp/o > $R/cs_memcheck_$c.log 2>&1
  echo "memcheck $c f16 b1: exit $? $(grep 'ERROR SUMMARY' $R/cs_memcheck_$c.log | head -1)"
done
for p in f16; do
  STRATA_CUDA_GRAPHS=0 timeout 40 $CS --tool racecheck --error-exitcode 9 $S run /tmp/rs/residual.onnx -i x=/tmp/rs/x.npy --backend cuda \
    --precision $p -q -o /tmp/o > $R/cs_racecheck_residual_$p.log 2>&1
  echo "racecheck residual graph $p: exit $? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' $R/cs_racecheck_residual_$p.log | head -1)"
done
echo "== OpenCL YOLOv8n against PyTorch f32 $(el)"
for p in f32 f16; do
  tol=1e-3; [ $p = f16 ] && tol=2e-2
  echo "opencl $p: $($S check /tmp/suite/yolov8n.onnx $(ins yolov8n 1) -r y=/tmp/suite/yolov8n_b1_ref.npy --backend opencl --precision $p \
    --scale-tol $tol --atol 0 --rtol 0 2>&1 | tail -1)"
done
echo "== Vulkan and OpenCL kernel sweeps $(el)"
for b in vulkan opencl; do
  timeout 25 $D/bin/kernel_sweep --backend $b --cases 2 --seed 43 --known tests/kernels/known_failures.txt > $R/sweep_$b.log 2>&1
  echo "exit $?: $(grep -E '^backend' $R/sweep_$b.log)"; grep -E "^FAIL" $R/sweep_$b.log | head -4
done
echo "== YOLOv8n 640x640 b1 on the three GPU backends (median ms of 50) $(el)"
M=/tmp/suite/yolov8n.onnx
for p in f32 f16; do
  for b in cuda opencl vulkan; do
    echo "yolov8n $p $b: $($S bench $M $(ins yolov8n 1) --backend $b --precision $p --runs 50 --warmup 10 -q 2>&1 | tail -1)"
  done
done
echo "== Vulkan correctness under synchronization validation, --sanitize $(el)"
export STRATA_VULKAN_VALIDATION=1
python3 scripts/device/prepare.py $D/models /tmp/m > /tmp/prepare.log 2>&1
vp=0; vf=0
vk() { if "$@" > /tmp/vk.log 2>&1 && ! grep -q "vulkan validation:" /tmp/vk.log; then vp=$((vp+1)); else vf=$((vf+1)); echo "FAIL: ${*: -6}"; grep -m2 "vulkan validation:" /tmp/vk.log | cut -c1-200; tail -2 /tmp/vk.log; fi; }
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
tar -C $OUT -cJf $OUT/r.tar.xz r && rm -rf $R
el
