#!/usr/bin/env python3
"""trace_sum.py TRACE.json — strata's Chrome trace (`strata bench --profile`)
summed per op type and per node, largest first, time per run: which ops a
model's time goes to (bench/gpu/suite.sh)."""
import collections
import json
import sys

t = json.load(open(sys.argv[1]))
ev = [e for e in (t["traceEvents"] if isinstance(t, dict) else t) if e.get("ph") == "X" and "command" in e.get("args", {})]
# the first run picks algorithms and builds caches: leave it out
if len({e["args"].get("run", 0) for e in ev}) > 1:
    ev = [e for e in ev if e["args"].get("run", 0) != 0]
runs = max(1, len({e["args"].get("run", 0) for e in ev}))
by_op, n_op, by_node = collections.defaultdict(float), collections.Counter(), collections.defaultdict(float)
node_op, node_bytes = {}, {}
for e in ev:
    a = e["args"]
    op = a.get("op", e.get("cat", "?"))
    by_op[op] += e["dur"] / runs
    n_op[op] += 1
    by_node[e["name"]] += e["dur"] / runs
    node_op[e["name"]] = op
    node_bytes[e["name"]] = a.get("bytes_read", 0) + a.get("bytes_written", 0)
tot = sum(by_op.values())
print("%d runs, %.3f ms of command time a run" % (runs, tot / 1e3))
for op, v in sorted(by_op.items(), key=lambda x: -x[1]):
    print("%9.1f us %5.1f%% %5d  %s" % (v, 100 * v / max(tot, 1e-9), n_op[op] // runs, op))
print("-- nodes")
for nd, v in sorted(by_node.items(), key=lambda x: -x[1])[:30]:
    b = node_bytes[nd]
    print("%9.1f us %5.1f%%  %-22s %7.1f MB %6.0f GB/s  %s" % (v, 100 * v / max(tot, 1e-9), node_op[nd], b / 1e6,
                                                              b / 1e3 / max(v, 1e-9), nd[:70]))
