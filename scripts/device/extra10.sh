#!/usr/bin/env bash
# extra10.sh — beside a GPU round (ROUND_EXTRA='bash scripts/device/extra10.sh',
# after the suite exported its models to /tmp/suite): the stem/pool/
# upsample test against float64, A/B medians at b32 f16 of packing
# channels-last slices before cuDNN (STRATA_CUDA_CL_PACK), and at b1 f16
# the default layout rule against every conv output channels-last.
S=.device/bin/strata
echo "-- yolo stem test"; python3 tests/conv/yolo_stem_test.py $S cuda | grep -cE "^PASS" ; python3 tests/conv/yolo_stem_test.py $S cuda | grep -E "^FAIL"
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
b() { env "$@" $S bench /tmp/suite/$C.onnx $(ins $C $B) --backend cuda --precision f16 --runs $N --json -q | med; }
echo "-- A/B b32 f16 medians (ms)"
B=32 N=50
for C in yolov8n resnet50; do echo "$C: default $(b X=1), slice pack off $(b STRATA_CUDA_CL_PACK=0), stem kernel off $(b STRATA_CUDA_SMALL_C=0)"; done
echo "-- b1 f16 medians (ms): default rule / every conv output channels-last"
B=1 N=300
for C in yolov8n resnet50 convnext_tiny; do
  echo "$C: default $(b X=1), all $(b STRATA_CHANNELS_LAST=all), all slice pack off $(b STRATA_CHANNELS_LAST=all STRATA_CUDA_CL_PACK=0), default $(b X=1), all $(b STRATA_CHANNELS_LAST=all)"
done
