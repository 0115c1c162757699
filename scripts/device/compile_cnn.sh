#!/usr/bin/env bash
# compile_cnn.sh — torch.compile's b32 columns for the suite's CNNs
# (issue 24: at least three of the five architectures at or below
# torch.compile), across two GPU calls, since max-autotune compiles of
# YOLOv8n, ResNet-50 and ConvNeXt-T have not finished within one call's
# 190-230 s:
#   call 1: bash scripts/device/compile_cnn.sh            (caches to $OUT)
#   here:   mkdir -p .device/compile && cp FILES_AT/inductor_*.tar.xz .device/compile/
#   call 2: bash scripts/device/compile_cnn.sh            (carries them on; with
#           .device/compile present it loads them first, so the autotuner's
#           finished choices and kernels are cache hits)
# CNN_CASES (default yolov8n,resnet50,convnext_tiny), CNN_BUDGET seconds
# for the compile phase (default 420).  The suite exports the models and
# times strata and eager first (one call, same inputs), so each call's
# log has strata, eager and, once compiled, torch.compile side by side.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
CASES=${CNN_CASES:-yolov8n,resnet50,convnext_tiny}
export PYTHONUNBUFFERED=1
OUT=$OUT/r timeout 200 bash bench/gpu/suite.sh --cases $CASES --compile none > $OUT/suite_console.log 2>&1
grep -vE "^(exported|floor)" $OUT/r/suite.log | tail -12
LOAD=(); [ -d $D/compile ] && LOAD=(--load $D/compile)
python3 bench/gpu/compile_peer.py /tmp/suite $CASES --budget ${CNN_BUDGET:-420} --save $OUT "${LOAD[@]}" 2>&1 | tee $OUT/compile.log
ls -la $OUT/inductor_*.tar.xz 2>/dev/null
