#!/usr/bin/env bash
# profile.sh — where strata's GPU time goes: Nsight Compute's per-kernel
# durations for one run of YOLOv8n 640x640 (graphs off so ncu sees each
# launch), summed by kernel name.  Clocks are left alone (METHOD.md).
set -u
D=.device
. scripts/device/env.sh
S=$D/bin/strata
M=$D/models/yolo/yolov8n.onnx
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for cfg in "1 f16" "32 f16"; do
  set -- $cfg
  python3 -c "import numpy as np; np.save('/tmp/p$1.npy', np.random.default_rng(0).random(($1, 3, 640, 640), dtype=np.float32))"
  STRATA_CUDA_GRAPHS=0 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
    $S run $M -i /tmp/p$1.npy --backend cuda --precision $2 -q -o /tmp > /tmp/ncu_$1.csv 2>/dev/null
  cp /tmp/ncu_$1.csv $OUT/ 2>/dev/null
  python3 - "$1" "$2" <<'PY'
import csv, sys, collections
rows = [r for r in csv.DictReader(l for l in open("/tmp/ncu_%s.csv" % sys.argv[1]) if l.startswith('"'))]
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum": continue
    v = float(r["Metric Value"].replace(",", "")); unit = r.get("Metric Unit", "")
    v = v / 1e3 if unit == "nsecond" else v if unit == "usecond" else v * 1e3
    k = r["Kernel Name"][:70]; tot[k] += v; cnt[k] += 1
s = sum(tot.values())
print("batch %s %s: %d kernels, %.3f ms of kernel time" % (sys.argv[1], sys.argv[2], sum(cnt.values()), s / 1e3))
for k, v in sorted(tot.items(), key=lambda x: -x[1])[:14]:
    print("  %7.3f ms %4d  %s" % (v / 1e3, cnt[k], k))
PY
done
