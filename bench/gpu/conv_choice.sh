#!/usr/bin/env bash
# conv_choice.sh — cuDNN against strata's own direct conv kernel on the
# GPU (STRATA_CUDA_CONV=direct), YOLOv8n 640x640, on the GPU machine from
# the repository root with .device/ carried (scripts/device/pack.sh).
# The measurement behind k_conv.cu's choice (bench/RESULTS.md).
set -u
D=.device
. scripts/device/env.sh
S=$D/bin/strata
M=$D/models/yolo/yolov8n.onnx
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -c "import numpy as np; r=np.random.default_rng(0)
for b in (1, 32): np.save('/tmp/x%d.npy' % b, r.random((b, 3, 640, 640), dtype=np.float32))"
for p in f32 f16; do
  for b in 1 32; do
    for k in cudnn direct; do
      n=100; [ $k = direct ] && n=20
      echo -n "$k $p batch $b: "
      STRATA_CUDA_CONV=$k $S bench $M -i /tmp/x$b.npy --backend cuda --precision $p --runs $n --warmup 5 | sed 's/^.*: //'
    done
  done
done
# the direct kernel's answers: the same model, same input, both ways
mkdir -p /tmp/direct /tmp/cudnn
STRATA_CUDA_CONV=direct $S run $M -i /tmp/x1.npy --backend cuda -q -o /tmp/direct
$S run $M -i /tmp/x1.npy --backend cuda -q -o /tmp/cudnn
python3 -c "import numpy as np; a=np.load('/tmp/direct/output0.npy'); b=np.load('/tmp/cudnn/output0.npy'); print('direct vs cudnn f32 max abs diff', float(np.abs(a-b).max()))"
