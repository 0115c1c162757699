"""harness.py — what the conv tests share: run one saved model through
`strata inspect --plan` and `strata run` on a backend, in a precision, with
environment knobs, then judge the plan's node kinds and every output
element against float64 references.

    fails = check(strata, backend, path, inputs, refs, runs, want_kinds)

runs: (precision, tolerance, {env var: value}) triples; want_kinds(tag,
env) gives {node name: "fused" | "exec"} the plan must show (or None).
Prints one PASS/FAIL line per run and returns the number failed; exits
77 (CTest's skip) when the backend is not available.
"""
import json
import os
import subprocess
import sys

import numpy as np

# the knobs a run may set: every run starts with none of them set
KNOBS = ("STRATA_CHANNELS_LAST", "STRATA_CONV_RESIDUAL", "STRATA_CUDA_CONV_FUSED", "STRATA_CONV_AFFINE")
UNAVAILABLE = ("not available", "no CUDA device", "no OpenCL", "no Vulkan")


def check(strata, backend, path, inputs, refs, runs, want_kinds):
    fails = 0
    tmp = os.path.dirname(path)
    ins = []
    for name, arr in inputs.items():
        f = os.path.join(tmp, name + ".npy")
        np.save(f, arr)
        ins += ["-i", "%s=%s" % (name, f)]
    for n_run, (prec, tol, knobs) in enumerate(runs):
        env = {k: v for k, v in os.environ.items() if k not in KNOBS}
        env.update(knobs)
        tag = " ".join([prec] + ["%s=%s" % kv for kv in knobs.items()])
        plan = subprocess.run([strata, "inspect", path, "--plan", "--json", "-q", "--backend", backend, "--precision", prec] + ins,
                              capture_output=True, text=True, env=env)
        text = plan.stdout + plan.stderr
        if plan.returncode != 0 and any(u in text for u in UNAVAILABLE):
            print("skipped: backend %s not available" % backend)
            sys.exit(77)
        if plan.returncode != 0:
            print("FAIL %s %s: strata inspect: %s" % (backend, tag, text.strip()[-300:]))
            fails += 1
            continue
        js = json.loads(plan.stdout)
        kinds = {n["name"]: n["kind"] for n in js.get("plan", js)["nodes"]}
        want = want_kinds(tag, knobs)
        if want:
            got = {n: kinds.get(n) for n in want}
            if got != want:
                print("FAIL %s %s: plan kinds %s, expected %s" % (backend, tag, got, want))
                fails += 1
        out = os.path.join(tmp, "out_%d" % n_run)
        os.makedirs(out, exist_ok=True)
        r = subprocess.run([strata, "run", path, "--backend", backend, "--precision", prec, "-q", "-o", out] + ins,
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print("FAIL %s %s: strata run: %s" % (backend, tag, (r.stderr or r.stdout).strip()[-300:]))
            fails += 1
            continue
        errs = {}
        for name, ref in refs.items():
            got = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
            errs[name] = np.abs(got - ref).max() / np.abs(ref).max() if got.shape == ref.shape else float("inf")
        ok = all(e <= tol for e in errs.values())
        fails += not ok
        print("%s %s %s: max |d| / max |ref| %s against float64 (tolerance %.0e)" % (
            "PASS" if ok else "FAIL", backend, tag, ", ".join("%s %.2e" % kv for kv in errs.items()), tol))
    return fails
