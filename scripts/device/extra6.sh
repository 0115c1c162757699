#!/usr/bin/env bash
# extra6.sh — one GPU call measuring STRATA_CHANNELS_LAST=all (every Conv
# and Concat output NHWC) on the NCHW networks: the suite (YOLOv8n,
# ResNet-50: correctness against PyTorch and times against eager, with
# Nsight Compute over YOLOv8n b32) under it, the default layout's times
# in the same call, and YOLOv8n b1 on OpenCL beside CUDA.  From the
# repository root with .device/ carried; logs in $OUT/r.tar.xz.
set -u
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}; R=$OUT/r; mkdir -p $R
S=$PWD/.device/bin/strata
echo "== suite with STRATA_CHANNELS_LAST=all"
STRATA_CHANNELS_LAST=all OUT=$R SUITE_PROFILE="yolov8n:32" timeout 300 bash bench/gpu/suite.sh --compile none --cases yolov8n,resnet50 > $R/suite_console.log 2>&1
grep -vE "^(exported|floor)" $R/suite.log | tail -12; head -24 $R/ncu_yolov8n_32.txt 2>/dev/null
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
echo "== A/B f16 medians (ms): default layout / all"
for c in yolov8n resnet50; do for b in 1 32; do
  n=$([ $b = 1 ] && echo 200 || echo 50)
  d=$($S bench /tmp/suite/$c.onnx $(ins $c $b) --backend cuda --precision f16 --runs $n --json -q | med)
  a=$(STRATA_CHANNELS_LAST=all $S bench /tmp/suite/$c.onnx $(ins $c $b) --backend cuda --precision f16 --runs $n --json -q | med)
  echo "$c b$b: default $d, all $a"
done; done
echo "== YOLOv8n b1 on OpenCL and CUDA (median ms)"
for p in f32 f16; do for be in cuda opencl; do
  echo "$be $p: $($S bench /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend $be --precision $p --runs 100 --json -q | med)"
done; done
tar -C $OUT -cJf $OUT/r.tar.xz r && rm -rf $R
