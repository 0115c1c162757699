#!/usr/bin/env bash
# vk_coopmat.sh — Vulkan's tensor-core convs (conv_cm.comp, cooperative
# matrices through VK_NV_cooperative_matrix) on the GPU machine with
# NVIDIA's Vulkan driver, from the repository root with .device/ (pack.sh:
# bin/strata built with Vulkan, models/yolo/yolov8n.onnx) and .gl/ (the
# Vulkan loader and validation layer, as vulkan_tests.sh's header says)
# carried:
#   device run, carry [".device", ".gl"], command "bash scripts/device/vk_coopmat.sh [MODEL]"
# MODEL defaults to .device/models/yolo/yolov8n.onnx.  The shader had
# never run on hardware when this was written, so every step says what
# it saw and none stops the others; each is under `timeout`, about
# 60-150 s in all.  In order:
#   (a) whether cooperative matrices are on (and why not) and the path
#       each of YOLOv8n's convs took (STRATA_VULKAN_TILE_LOG=1);
#   (b) tests/vulkan/coopmat_test.py: a spread of f16 convs against
#       float64, on the tensor cores and in conv_cm.comp's scalar build
#       (STRATA_VULKAN_COOPMAT=emulate; a failure in the first alone
#       points at the fragments), printing shape, largest error, where,
#       and which 16-blocks are off for any output that differs; then
#       the 16x8x16 build (STRATA_VULKAN_COOPMAT=n8);
#   (c) the same on the tensor cores with STRATA_VULKAN_VALIDATION=1
#       (Khronos synchronization validation; any message fails);
#   (d) YOLOv8n 640x640 f16 b1 against strata's CPU f32 output, and timed
#       (strata bench, 50 runs) with STRATA_VULKAN_COOPMAT=0 and 1, and
#       on CUDA f16 (the issue's baseline: Vulkan within 2x of it);
#   (e) the per-op profile of both Vulkan runs (bench/gpu/trace_sum.py).
set -u
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
M=${1:-$D/models/yolo/yolov8n.onnx}
export PYTHONUNBUFFERED=1
# the Vulkan loader and NVIDIA's ICD (vulkan_tests.sh says why each line)
if ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done; ldconfig
fi
ldconfig -p | grep -q libvulkan.so.1 || echo "WARNING: no libvulkan: carry .gl/ (see vulkan_tests.sh's header)"
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && [ -z "${VK_DRIVER_FILES:-}" ] &&
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] &&
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
VALIDATE=0
[ -f /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json ] && VALIDATE=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
# one random image (VKCM_SIZE=N for a quick try elsewhere), the model's only input
IN=/tmp/vkcm_images.npy SIZE=${VKCM_SIZE:-640} RUNS=${VKCM_RUNS:-50}
python3 -c "import numpy as np; np.save('$IN', np.random.default_rng(26).random((1, 3, $SIZE, $SIZE), dtype=np.float32))"

echo "== (a) cooperative matrices, and the path of each conv $(el)"
STRATA_VULKAN_COOPMAT=1 timeout 30 $S probe --backend vulkan --runs 1 2>&1 | head -2
mkdir -p /tmp/vkcm_o
STRATA_VULKAN_COOPMAT=1 STRATA_VULKAN_TILE_LOG=1 timeout 60 $S run "$M" -i $IN --backend vulkan --precision f16 -q -o /tmp/vkcm_o \
  > $OUT/vk_coopmat_tilelog.txt 2>&1
echo "exit $?"
grep -m1 "cooperative matrices" $OUT/vk_coopmat_tilelog.txt
echo "convs by path: $(sed -n 's/.*: path \([a-z]*\( emulated\)\?\).*/\1/p' $OUT/vk_coopmat_tilelog.txt | sort | uniq -c | tr '\n' ' ')"
grep "path coopmat" $OUT/vk_coopmat_tilelog.txt | head -3
grep "path tiled\|path direct" $OUT/vk_coopmat_tilelog.txt | head -4
grep -v "strata: vulkan" $OUT/vk_coopmat_tilelog.txt | head -10

echo "== (b) conv_cm.comp against float64, tensor cores and scalar build $(el)"
timeout 120 python3 tests/vulkan/coopmat_test.py $S --validation 0 --modes real,emulate 2>&1 | tee $OUT/vk_coopmat_test.txt | head -60
echo "exit ${PIPESTATUS[0]}"
echo "-- the 16x8x16 build (STRATA_VULKAN_COOPMAT=n8), where the driver lists that shape $(el)"
STRATA_VULKAN_COOPMAT=n8 timeout 90 python3 tests/vulkan/coopmat_test.py $S --validation 0 --modes real 2>&1 |
  tee $OUT/vk_coopmat_n8.txt | grep -v "^ok " | head -30

echo "== (c) the same on the tensor cores under synchronization validation $(el)"
if [ $VALIDATE = 1 ]; then
  timeout 120 python3 tests/vulkan/coopmat_test.py $S --validation 1 --modes real 2>&1 | tee $OUT/vk_coopmat_valid.txt | head -40
  echo "exit ${PIPESTATUS[0]}"
else
  echo "no validation layer (VkLayer_khronos_validation.json): carry .gl/ with vulkan-validationlayers"
fi

echo "== (d) YOLOv8n ${SIZE}x$SIZE f16 b1: against the CPU's f32 output, then timed $(el)"
mkdir -p /tmp/vkcm_ref
timeout 60 $S run "$M" -i $IN -q -o /tmp/vkcm_ref || echo "CPU reference failed"
for cm in 0 1; do
  echo "STRATA_VULKAN_COOPMAT=$cm: $(STRATA_VULKAN_COOPMAT=$cm timeout 60 $S check "$M" -i $IN --ref-dir /tmp/vkcm_ref \
    --backend vulkan --precision f16 --scale-tol 2e-2 --atol 0 --rtol 0 2>&1 | tail -2 | tr '\n' ' ')"
done
for cm in 0 1; do
  echo "vulkan f16 STRATA_VULKAN_COOPMAT=$cm: $(STRATA_VULKAN_COOPMAT=$cm timeout 60 $S bench "$M" -i $IN --backend vulkan \
    --precision f16 --runs $RUNS --warmup 10 -q 2>&1 | tail -1)"
done
echo "cuda f16: $(timeout 60 $S bench "$M" -i $IN --backend cuda --precision f16 --runs $RUNS --warmup 10 -q 2>&1 | tail -1)"

echo "== (e) per-op profile, Vulkan f16 $(el)"
for cm in 0 1; do
  echo "-- STRATA_VULKAN_COOPMAT=$cm"
  STRATA_VULKAN_COOPMAT=$cm timeout 60 $S bench "$M" -i $IN --backend vulkan --precision f16 --runs 5 --warmup 2 -q \
    --profile /tmp/vkcm_p$cm.json > /dev/null 2>&1 && python3 bench/gpu/trace_sum.py /tmp/vkcm_p$cm.json 2>&1 | head -16
done
el
