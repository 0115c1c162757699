#!/usr/bin/env bash
# opencl_conv_ab.sh — the OpenCL tiled Conv's dtype-specialized kernels
# against the generic one (STRATA_OPENCL_CONV_GENERIC=1) on the GPU
# machine's NVIDIA OpenCL, YOLOv8n 640x640 batch 1 in f32 and f16, from
# the repository root with .device/ carried (scripts/device/pack.sh):
# bench medians, then one profile per case into $OUT (sum them here with
# bench/gpu/trace_sum.py), and f16 profiled again on an in-order queue
# (STRATA_OPENCL_IN_ORDER=1), to tell a real slow node from a time stamp
# of NVIDIA's out-of-order queue that counts a command's waits.
set -u
D=.device
. scripts/device/env.sh
S=$D/bin/strata
M=$D/models/yolo/yolov8n.onnx
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import numpy as np; np.save('/tmp/x1.npy', np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32))"
$S bench $M -i /tmp/x1.npy --backend opencl --runs 2 --warmup 1 > /dev/null 2>&1 # the program, built once
for p in f32 f16; do
  for g in 0 1; do
    echo -n "opencl $p generic=$g: "
    STRATA_OPENCL_CONV_GENERIC=$g $S bench $M -i /tmp/x1.npy --backend opencl --precision $p --runs 200 --warmup 20 | sed 's/^.*: //'
  done
  echo -n "cuda $p: "
  $S bench $M -i /tmp/x1.npy --backend cuda --precision $p --runs 200 --warmup 20 | sed 's/^.*: //'
  $S bench $M -i /tmp/x1.npy --backend opencl --precision $p --runs 6 --warmup 2 --profile $OUT/opencl_$p.json > /dev/null
done
STRATA_OPENCL_IN_ORDER=1 $S bench $M -i /tmp/x1.npy --backend opencl --precision f16 --runs 6 --warmup 2 \
  --profile $OUT/opencl_f16_in_order.json > /dev/null
STRATA_OPENCL_CONV_GENERIC=1 $S bench $M -i /tmp/x1.npy --backend opencl --precision f16 --runs 6 --warmup 2 \
  --profile $OUT/opencl_f16_generic.json > /dev/null
for f in $OUT/*.json; do echo "== $(basename $f)"; python3 bench/gpu/trace_sum.py $f | head -14; done
