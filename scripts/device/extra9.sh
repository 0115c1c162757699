#!/usr/bin/env bash
# extra9.sh — beside a GPU round (ROUND_EXTRA='bash scripts/device/extra9.sh',
# after the suite exported YOLOv8n and ResNet-50 to /tmp/suite): the
# channels-last stem/pool/upsample test against float64, the CUDA kernel
# sweep, A/B medians of the new channels-last paths (KRSC filters, NHWC
# pool and upsample, the 3-channel stem kernel) at b32 f16, and YOLOv8n b1
# under the default layout rule against every conv output channels-last,
# with Nsight Compute over the latter.
S=.device/bin/strata
R=${OUT:-/tmp/out}/r; mkdir -p $R
echo "-- yolo stem test"; python3 tests/conv/yolo_stem_test.py $S cuda
echo "-- kernel sweep"; .device/bin/kernel_sweep --backend cuda --cases 8 --seed 29 --known tests/kernels/known_failures.txt > $R/sweep.log 2>&1
grep -E "^FAIL|^backend" $R/sweep.log | head -12
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
b() { env "$@" $S bench /tmp/suite/$C.onnx $(ins $C $B) --backend cuda --precision f16 --runs $N --json -q | med; }
echo "-- A/B b32 f16 medians (ms)"
B=32 N=50
for C in yolov8n resnet50; do
  echo "$C: default $(b X=1), KRSC off $(b STRATA_CUDA_KRSC=0), NHWC pool/upsample off $(b STRATA_CUDA_CL_COPY=0), stem kernel off $(b STRATA_CUDA_SMALL_C=0), all off $(b STRATA_CUDA_KRSC=0 STRATA_CUDA_CL_COPY=0 STRATA_CUDA_SMALL_C=0)"
done
echo "-- b1 f16 medians (ms): default rule / every conv output channels-last"
B=1 N=300
for C in yolov8n resnet50; do
  echo "$C: default $(b X=1), all $(b STRATA_CHANNELS_LAST=all), all KRSC off $(b STRATA_CHANNELS_LAST=all STRATA_CUDA_KRSC=0), default again $(b X=1)"
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
mkdir -p /tmp/o
STRATA_CHANNELS_LAST=all STRATA_CUDA_GRAPHS=0 timeout 200 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
  $S run /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend cuda --precision f16 -q -o /tmp/o > /tmp/ncu_all1.csv 2>/dev/null
python3 bench/gpu/ncu_sum.py /tmp/ncu_all1.csv > $R/ncu_yolov8n_1_all.txt; head -24 $R/ncu_yolov8n_1_all.txt
