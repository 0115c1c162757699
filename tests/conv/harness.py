"""harness.py — what the conv tests share: run one saved model through
`strata inspect --plan` and `strata run` on a backend, in a precision, with
environment knobs, then judge the plan's node kinds and every output
element against float64 references.

    fails = check(strata, backend, path, inputs, refs, runs, judge)

runs: (precision, tolerance, {env var: value}) triples; judge(plan, tag,
env) returns what is wrong with the plan (`strata inspect --plan --json`),
a list of lines, empty when nothing is; kinds(want_kinds) makes one from
want_kinds(tag, env), the {node name: "fused" | "exec"} the plan must
show; judge_run(stderr, tag, env) the same for what `strata run` printed.  Prints one PASS/FAIL line per run and returns the number failed;
exits 77 (CTest's skip) when the backend is not available.
"""
import json
import os
import subprocess
import sys

import numpy as np

# the knobs a run may set: every run starts with none of them set
KNOBS = ("STRATA_CHANNELS_LAST", "STRATA_CONV_RESIDUAL", "STRATA_CUDA_CONV_FUSED", "STRATA_CONV_AFFINE", "STRATA_CUDA_CL_DW_POOL",
         "STRATA_CUDA_VERBOSE")
UNAVAILABLE = ("not available", "no CUDA device", "no OpenCL", "no Vulkan")


def kinds(want_kinds):
    """A judge: the plan's node kinds against want_kinds(tag, env)."""
    def judge(plan, tag, knobs):
        want = want_kinds(tag, knobs) or {}
        got = {n["name"]: n["kind"] for n in plan["nodes"]}
        got = {n: got.get(n) for n in want}
        return [] if got == want else ["plan kinds %s, expected %s" % (got, want)]
    return judge


def check(strata, backend, path, inputs, refs, runs, judge=None, judge_run=None, tag_prefix=""):
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
        tag = tag_prefix + " ".join([prec] + ["%s=%s" % kv for kv in knobs.items()])
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
        for problem in judge(js.get("plan", js), tag, knobs) if judge else []:
            print("FAIL %s %s: %s" % (backend, tag, problem))
            fails += 1
        out = os.path.join(tmp, "out_%d" % n_run)
        os.makedirs(out, exist_ok=True)
        r = subprocess.run([strata, "run", path, "--backend", backend, "--precision", prec, "-q", "-o", out] + ins,
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print("FAIL %s %s: strata run: %s" % (backend, tag, (r.stderr or r.stdout).strip()[-300:]))
            fails += 1
            continue
        for problem in judge_run(r.stderr, tag, knobs) if judge_run else []:
            print("FAIL %s %s: %s" % (backend, tag, problem))
            fails += 1
        errs = {}
        for name, ref in refs.items():
            got = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
            # a wrong shape fails as an infinite error
            errs[name] = np.abs(got - ref).max() / np.abs(ref).max() if got.shape == ref.shape else float("inf")
        ok = all(e <= tol for e in errs.values())
        fails += not ok
        print("%s %s %s: max |d| / max |ref| %s against float64 (tolerance %.0e)" % (
            "PASS" if ok else "FAIL", backend, tag, ", ".join("%s %.2e" % kv for kv in errs.items()), tol))
    return fails
