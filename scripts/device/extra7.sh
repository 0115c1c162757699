#!/usr/bin/env bash
# extra7.sh — beside a GPU round (ROUND_EXTRA='bash scripts/device/extra7.sh'):
# the channels-last stage against float64, and the f16 b32 times of the
# CNNs with the default layout rule against the transpose rule alone
# (STRATA_CHANNELS_LAST=1) in the same call.
S=.device/bin/strata
python3 tests/conv/channels_last_test.py $S cuda | grep -E "FAIL|f16"
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
med() { python3 -c "import json,sys; print(json.load(sys.stdin)['median_ms'])" 2>/dev/null; }
for c in yolov8n resnet50 convnext_tiny; do
  d=$($S bench /tmp/suite/$c.onnx $(ins $c 32) --backend cuda --precision f16 --runs 50 --json -q | med)
  t=$(STRATA_CHANNELS_LAST=1 $S bench /tmp/suite/$c.onnx $(ins $c 32) --backend cuda --precision f16 --runs 50 --json -q | med)
  echo "$c b32 f16: default $d, STRATA_CHANNELS_LAST=1 $t"
done
