#!/usr/bin/env bash
# extra14.sh — the first GPU call of the fourth session of 2026-12-04
# (ROUND_EXTRA='bash scripts/device/extra14.sh', ROUND_CASES including
# yolov8n, resnet50, mobilenetv3_large_100, efficientnet_b0): extra13.sh's
# checks of the paths that had only been compiled (the fused conv, the
# channels-last depthwise/pool kernels, the batch-1 layout rule, the
# kernel sweep), then:
#   - YOLOv8n b1 under the whole channels-last rule with the fused conv,
#     the layout that removes cuDNN's 126 transposes, and Nsight Compute's
#     per-kernel times of that run (graphs off);
#   - whether NVIDIA's Vulkan ICD comes up with glvnd's libraries carried
#     (.gl/, see vulkan_tests.sh): the alias probe only.
S=.device/bin/strata
R=${OUT:-/tmp/out}/r; mkdir -p $R
bash scripts/device/extra13.sh
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
js() { env "$@" $S bench /tmp/suite/$C.onnx $(ins $C $B) --backend cuda --precision f16 --runs $N --json -q; }
med() { python3 -c "import json,sys; j=json.load(sys.stdin); print('%.3f' % j['median_ms'])" 2>/dev/null; }
echo "-- whole rule at b1 (ms)"
for C in yolov8n mobilenetv3_large_100 efficientnet_b0; do
  [ -f /tmp/suite/$C.onnx ] || continue
  B=1 N=300
  echo "$C b1: all $(js STRATA_CHANNELS_LAST=all | med), all+fused $(js STRATA_CHANNELS_LAST=all STRATA_CUDA_CONV_FUSED=1 | med), all+fused+dw $(js STRATA_CHANNELS_LAST=all STRATA_CUDA_CONV_FUSED=1 STRATA_CUDA_CL_DW_POOL=1 | med)"
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -f /tmp/suite/yolov8n.onnx ] && [ -n "$NCU" ]; then
  for v in default all_fused; do
    E="X=1"; [ $v = all_fused ] && E="STRATA_CHANNELS_LAST=all STRATA_CUDA_CONV_FUSED=1 STRATA_CUDA_CL_DW_POOL=1"
    mkdir -p /tmp/o; env $E STRATA_CUDA_GRAPHS=0 timeout 200 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
      $S run /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend cuda --precision f16 -q -o /tmp/o > /tmp/ncu_$v.csv 2>/dev/null
    python3 bench/gpu/ncu_sum.py /tmp/ncu_$v.csv > $R/ncu_yolov8n_1_$v.txt
    echo "-- ncu yolov8n b1 $v"; head -16 $R/ncu_yolov8n_1_$v.txt
  done
fi
echo "-- vulkan"
if ls .gl/*.deb > /dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  ls /usr/local/nvidia/share/vulkan/icd.d/ /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/ /usr/local/nvidia/share/glvnd/egl_vendor.d/ 2>&1 | head
  [ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] &&
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  ls /usr/local/nvidia/lib64 | grep -iE "glx|vulkan|egl|glcore" | head
  VK_LOADER_DEBUG=error,warn,driver timeout 60 $S probe --backend vulkan --runs 20 2>&1 | tail -20
fi
