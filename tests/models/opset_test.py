#!/usr/bin/python3
"""The ops that ai.onnx opsets 18 to 21 changed or added
(scripts/models/opset18.py), one case at a time.

  opset_test.py STRATA MODELS_DIR CASE BACKEND [--native]
      a computed case: `strata check --sanitize` against ONNX Runtime's
      outputs at the case's tolerances (0 and 0 for exact ones);
      a refused case: `strata run` must fail with one line that contains
      the case's words (the node's name and what is not supported), and
      write no output.
      --native: the case runs on BACKEND's own kernels, no CPU fallback
      (--no-fallback), whether or not the generator lists BACKEND for it.

Exits 77 (skipped) when the backend has no device here or the case is
not checked on it.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77


def run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def no_device(r):
    t = r.stdout + r.stderr
    return "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t


def main():
    strata, d, case, backend = sys.argv[1:5]
    native = sys.argv[5:] == ["--native"]
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    if case not in cases:
        print("FAIL: %s is not a case of scripts/models/opset18.py (tests/CMakeLists.txt lists it)" % case)
        return 1
    c = cases[case]
    if backend not in c["backends"] and not native:
        print("SKIP: %s is not checked on %s" % (case, backend))
        return SKIP
    model = os.path.join(d, case + ".onnx")
    inputs = []
    for name in c["inputs"]:
        inputs += ["-i", "%s=%s" % (name, os.path.join(d, case + "_in", name + ".npy"))]
    if "refuse" in c:
        with tempfile.TemporaryDirectory() as out:
            r = run([strata, "run", model, "--backend", backend, "-o", out] + inputs)
            text = r.stderr.strip()
            print(r.stdout + r.stderr)
            if no_device(r):
                return SKIP
            if r.returncode == 0:
                print("FAIL: strata ran a model it should refuse")
                return 1
            if "\n" in text or not all(w in text for w in c["refuse"]):
                print("FAIL: the error is not one line naming %s" % ", ".join(c["refuse"]))
                return 1
            if os.listdir(out):
                print("FAIL: a refused run wrote %s" % os.listdir(out))
                return 1
        return 0
    ref = os.path.join(d, case + "_ref")
    if not glob.glob(os.path.join(ref, "*.npy")):
        print("FAIL: no reference outputs in " + ref)
        return 1
    r = run([strata, "check", model, "--ref-dir", ref, "--backend", backend, "--sanitize",
             "--atol", str(c["atol"]), "--rtol", str(c["rtol"])] + inputs + (["--no-fallback"] if native else []))
    print(r.stdout + r.stderr)
    if no_device(r):
        return SKIP
    if r.returncode != 0 or "FAIL" in r.stdout:
        print("FAIL: %s on %s (opset %d)" % (case, backend, c["opset"]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
