#!/usr/bin/env bash
# extra3.sh — the checks beside a GPU round (scripts/device/round.sh, as
# ROUND_EXTRA='bash scripts/device/extra3.sh'), after the suite has
# exported its models to /tmp/suite: the CUDA kernel sweep, the SDPA
# scale fold against float64, how many YOLOv8n convs run on packed copies,
# torch.compile at batch 32 on two models, the time to first result with
# an empty and a full conv-choice cache, and the Vulkan tests when .gl/
# carries Debian's loader and validation layer (vulkan_tests.sh says how).
echo "-- kernel sweep"; .device/bin/kernel_sweep --backend cuda --cases 12 --seed 25 --known tests/kernels/known_failures.txt 2>&1 | grep -E "^FAIL|^backend" | head -12
echo "-- sdpa"; python3 tests/attention/sdpa_scale_test.py .device/bin/strata cuda
echo "-- conv choice"; STRATA_CUDA_VERBOSE=1 .device/bin/strata run /tmp/suite/yolov8n.onnx -i images=/tmp/suite/yolov8n_b32_images.npy --backend cuda --precision f16 -q -o /tmp 2>&1 | grep -c "packed copies"
echo "-- torch.compile b32"
for c in bert4 resnet50; do timeout 100 python3 bench/gpu/suite_peer.py /tmp/suite $c --compile b32 2>/dev/null | grep compile; done
echo "-- time to first result, conv choices timed then read back (a fresh cache)"
export XDG_CACHE_HOME=/tmp/xdg_fresh STRATA_CUDA_CONV_TUNE=1; rm -rf $XDG_CACHE_HOME
for i in 1 2; do .device/bin/strata bench /tmp/suite/yolov8n.onnx -i images=/tmp/suite/yolov8n_b32_images.npy --backend cuda --precision f16 --runs 20 2>&1 | tail -1; done
wc -l $XDG_CACHE_HOME/strata/cuda/conv_algos.txt; unset XDG_CACHE_HOME STRATA_CUDA_CONV_TUNE
echo "-- vulkan"; for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
timeout 130 bash scripts/device/vulkan_tests.sh > $OUT/r/vulkan.log 2>&1; echo "vulkan_tests exit $?"; grep -vE "^ " $OUT/r/vulkan.log | tail -30
