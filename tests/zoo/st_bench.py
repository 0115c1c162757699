#!/usr/bin/python3
"""st_bench.py — the strata side of `zoo.py bench`, through the Python
package over the C API (python/strata): the same job file as ort_zoo.js
bench, timed the same way.

  st_bench.py JOB.json      (PYTHONPATH=python STRATA_LIBRARY=build/libstrata.so.0)

Run i is fed the inputs of step i mod steps; a streaming model's state
inputs get its own state outputs of the run before (from the first run on),
so a model whose plan depends on its input data pays for that as it would
in use.  `warmup` untimed runs, then `runs` timed ones, each a
Session.run that returns every output as a numpy array.  Prints one JSON
line with every time in ms.
"""
import json
import sys
import time

import numpy as np
import strata


def main():
    with open(sys.argv[1]) as f:
        job = json.load(f)
    sess = strata.Session(job["model"], threads=job.get("threads", 0))
    steps = [{name: np.load(p) for name, p in s.items()} for s in job["steps"]]
    names = [o.name for o in sess.outputs]
    state = job.get("state", {})
    prev = None
    times = []
    warmup, runs = job.get("warmup", 1), job.get("runs", 5)
    for i in range(warmup + runs):
        feeds = dict(steps[i % len(steps)])
        if prev is not None:
            for out, inp in state.items():
                feeds[inp] = prev[out]
        t0 = time.perf_counter()
        outs = sess.run(None, feeds)
        dt = (time.perf_counter() - t0) * 1e3
        prev = dict(zip(names, outs))
        if i >= warmup:
            times.append(dt)
    print(json.dumps({"runtime": "strata", "threads": job.get("threads"), "times_ms": times}))


if __name__ == "__main__":
    main()
