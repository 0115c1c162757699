#!/usr/bin/python3
"""Staged plans (plan/stage.c): models that decide from the data they
compute what they run next (scripts/models/staged.py), checked against
ONNX Runtime's outputs on one backend.

  staged_test.py STRATA MODELS_DIR CASE BACKEND check
      for each of the case's inputs: `strata check --sanitize --runs 3`
      (the runs bit-identical), every output within 1e-5 (absolute and relative) of ONNX Runtime's; the
      plan must run in two stages or more (`inspect --plan` says where it
      stopped), so a model that folds whole would not pass for one that
      stages.
  staged_test.py STRATA MODELS_DIR CASE BACKEND schedules N
      N runs of input 0 under --schedule random, sanitizer on: every run
      passes and all are bit-identical.

Exits 77 (skipped) when the backend has no device here.
"""
import glob
import os
import re
import subprocess
import sys

SKIP = 77


def run(cmd, timeout=1200):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def no_device(r):
    t = r.stdout + r.stderr
    return "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t


def main():
    strata, d, case, backend, mode = sys.argv[1:6]
    model = os.path.join(d, case + ".onnx")
    inputs = sorted(glob.glob(os.path.join(d, case + "_input_*.npy")))
    if not inputs:
        print("FAIL: no inputs for %s in %s" % (case, d))
        return 1
    if mode == "check":
        for inp in inputs:
            k = re.search(r"_input_(\d+)\.npy$", inp).group(1)
            ref = os.path.join(d, "%s_ref_%s" % (case, k))
            # three runs: a stage's inputs left in the shared arena must not be
            # taken as still there once another stage or a loop body ran
            r = run([strata, "check", model, "-i", inp, "--ref-dir", ref, "--backend", backend, "--sanitize",
                     "--runs", "3"])
            if no_device(r):
                print("SKIP: " + (r.stdout + r.stderr).strip())
                return SKIP
            print(r.stdout + r.stderr)
            if r.returncode != 0 or "FAIL" in r.stdout:
                print("FAIL: check of input %s on %s" % (k, backend))
                return 1
            p = run([strata, "inspect", model, "--plan", "-i", inp, "--backend", backend])
            stages = re.findall(r"^stage (\d+): (.*)$", p.stdout, re.M)
            for s in stages:
                print("stage %s: %s" % s)
            if p.returncode != 0 or len(stages) < 2:
                print("FAIL: the plan did not run in stages:\n" + p.stdout[:2000] + p.stderr)
                return 1
        return 0
    if mode == "schedules":
        n = int(sys.argv[6])
        ref = os.path.join(d, case + "_ref_0")
        r = run([strata, "check", model, "-i", inputs[0], "--ref-dir", ref, "--backend", backend, "--sanitize",
                 "--schedule", "random", "--seed", "5", "--runs", str(n)])
        if no_device(r):
            print("SKIP: " + (r.stdout + r.stderr).strip())
            return SKIP
        print(r.stdout + r.stderr)
        if r.returncode != 0 or "bit-identical  PASS" not in r.stdout:
            print("FAIL: %d random schedules on %s" % (n, backend))
            return 1
        return 0
    print("unknown mode " + mode)
    return 2


if __name__ == "__main__":
    sys.exit(main())
