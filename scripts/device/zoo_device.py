#!/usr/bin/env python3
"""The zoo's check (tests/zoo/zoo.py) on the GPU machine, where there is no
node but python3 has onnxruntime: the same deterministic inputs, ONNX
Runtime's CPU provider through Python as the reference (state fed back from
its own outputs, as ort_zoo.js does), strata on the given backend.

  zoo_device.py STRATA MODELS WORK BACKEND [--sanitize] [--precision=f16|bf16] ID...

MODELS holds <id>.onnx for each ID (scripts/device/pack.sh copies them
out of node_modules).  Prints one line per model, PASS or FAIL, and the
comparison summary; exits 1 if any failed.
"""
import os
import sys

import numpy as np
try:
    import onnxruntime as ort
except ImportError:  # the dev machine: zoo.py's own node-based reference
    ort = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "zoo"))
import zoo  # noqa: E402


def run_ort_py(model, m, files, outdir, mode="run", threads=1, bench=None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    prev = None
    for k, step in enumerate(files):
        feeds = {n: np.load(f) for n, f in step.items()}
        if prev:
            for out, inp in m["state"].items():
                feeds[inp] = prev[out]
        res = s.run(names, feeds)
        prev = dict(zip(names, res))
        d = os.path.join(outdir, str(k))
        os.makedirs(d, exist_ok=True)
        for n, v in prev.items():
            np.save(os.path.join(d, zoo.mangle(n) + ".npy"), v)
    return ""


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    sanitize = "--sanitize" in sys.argv
    strata, models_dir, work, backend = args[:4]
    zoo.model_path = lambda m, w: os.path.join(models_dir, m["id"] + ".onnx")
    if ort is not None:
        zoo.run_ort = run_ort_py
    models = zoo.load_manifest()
    extra = ["--threads", "2", "--backend", backend] + (["--sanitize"] if sanitize else [])
    # --precision=f16|bf16: strata in that precision, every output judged at
    # 1% of its max|ref| (docs/precision.md), as `zoo.py check --precision`
    precision = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--precision=")]
    if precision:
        extra += ["--precision", precision[0]]
        work = work.rstrip("/") + "-" + precision[0]
    fails = 0
    for mid in args[4:]:
        m = models[mid]
        if precision:
            m = dict(m, tolerance={"atol": 1e-6, "rtol": 0.0, "scale_tol": 0.01})
        try:
            err, summary = zoo.check(m, strata, os.path.join(work, backend), extra)
        except Exception as e:  # noqa: BLE001 - report and go on
            err, summary = "harness: %s" % e, []
        print("%s %s on %s%s, %d step(s)%s" % ("PASS" if err is None else "FAIL", mid, backend,
                                               " --sanitize" if sanitize else "", m["steps"],
                                               "" if err is None else ": " + err))
        for line in summary[-4:]:
            print("   " + line)
        fails += err is not None
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
