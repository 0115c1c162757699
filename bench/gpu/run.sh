#!/usr/bin/env bash
# run.sh — the GPU benchmark, on the GPU machine from the repository root
# with .device/ carried (scripts/device/pack.sh): strata and PyTorch on
# YOLOv8n 640x640 in one call.  Pass --skip-compile to leave torch.compile
# out (its max-autotune compile takes minutes).
set -u
D=.device
. scripts/device/env.sh
S=$D/bin/strata
M=$D/models/yolo/yolov8n.onnx
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import numpy as np; r=np.random.default_rng(0)
for b in (1, 32): np.save('/tmp/x%d.npy' % b, r.random((b, 3, 640, 640), dtype=np.float32))"
for p in f32 f16; do
  for b in 1 32; do
    echo -n "strata cuda $p batch $b: "
    $S bench $M -i /tmp/x$b.npy --backend cuda --precision $p --runs 200 --warmup 20 | sed 's/^.*: //'
  done
done
timeout ${PEER_TIMEOUT:-450} python3 bench/gpu/torch_peer.py "$@"
