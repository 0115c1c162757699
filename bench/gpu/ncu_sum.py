#!/usr/bin/env python3
"""ncu_sum.py NCU.csv — Nsight Compute's --csv output of gpu__time_duration
summed by kernel name, largest first (bench/gpu/suite.sh)."""
import collections
import csv
import sys

rows = [r for r in csv.DictReader(line for line in open(sys.argv[1]) if line.startswith('"'))]
tot = collections.defaultdict(float)
cnt = collections.Counter()
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "")
    v = v / 1e3 if unit in ("nsecond", "ns") else v if unit in ("usecond", "us") else v * 1e3
    k = r["Kernel Name"][:110]
    tot[k] += v
    cnt[k] += 1
s = sum(tot.values())
print("%d kernels, %.3f ms of kernel time" % (sum(cnt.values()), s / 1e3))
for k, v in sorted(tot.items(), key=lambda x: -x[1])[:40]:
    print("%8.3f ms %5.1f%% %5d  %s" % (v / 1e3, 100 * v / max(s, 1e-9), cnt[k], k))
