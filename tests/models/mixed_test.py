#!/usr/bin/python3
"""Mixed-device plans: a model whose GPU plan runs some nodes on the CPU
(scripts/models/mixed.py), checked on a GPU backend against PyTorch.

  mixed_test.py STRATA MODELS_DIR CASE BACKEND check
      --sanitize, every output within 1e-5 (absolute and relative) of
      PyTorch's; the plan must be mixed (`inspect --plan` shows CPU nodes
      and transfers both ways).
  mixed_test.py STRATA MODELS_DIR CASE BACKEND schedules N
      N runs under --schedule random (a random topological order, late
      completions), sanitizer on: every run passes and all are
      bit-identical.
  mixed_test.py STRATA MODELS_DIR CASE BACKEND strict
      --no-fallback: a clear one-line error naming the node the backend
      refuses, exit status 1, no output file.

Exits 77 (skipped) when the backend has no device here.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77


def run(cmd, timeout=1200):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def no_device(r):
    t = r.stdout + r.stderr
    return "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t


def main():
    strata, d, case, backend, mode = sys.argv[1:6]
    model = os.path.join(d, case + ".onnx")
    inp = os.path.join(d, case + "_input_0.npy")
    ref = os.path.join(d, case + "_ref")
    base = [strata, "check", model, "-i", inp, "--ref-dir", ref, "--backend", backend]
    if mode == "check":
        r = run(base + ["--sanitize"])
        if no_device(r):
            print("SKIP: " + (r.stdout + r.stderr).strip())
            return SKIP
        print(r.stdout + r.stderr)
        if r.returncode != 0 or "FAIL" in r.stdout:
            print("FAIL: check on %s" % backend)
            return 1
        p = run([strata, "inspect", model, "--plan", "-i", inp, "--backend", backend])
        print(p.stdout.split("\n  ")[0])
        if p.returncode != 0 or "(fallback)" not in p.stdout:
            print("FAIL: the plan is not mixed:\n" + p.stdout + p.stderr)
            return 1
        to_host = "-> cpu" in p.stdout
        to_dev = ("cpu -> %s" % backend) in p.stdout
        # a host-unified OpenCL device (PoCL) maps the device's memory for
        # the host nodes instead (zero copy): no transfers at all then
        shared = "zero-copy" in p.stdout and " 0 transfers" in p.stdout
        if not (to_host and to_dev) and not shared:
            print("FAIL: expected transfers both ways")
            return 1
        return 0
    if mode == "schedules":
        n = int(sys.argv[6])
        r = run(base + ["--sanitize", "--schedule", "random", "--seed", "11", "--runs", str(n)])
        if no_device(r):
            print("SKIP: " + (r.stdout + r.stderr).strip())
            return SKIP
        print(r.stdout + r.stderr)
        if r.returncode != 0 or "bit-identical  PASS" not in r.stdout:
            print("FAIL: %d random schedules on %s" % (n, backend))
            return 1
        return 0
    if mode == "strict":
        with tempfile.TemporaryDirectory() as out:
            r = run([strata, "run", model, "-i", inp, "--backend", backend, "--no-fallback", "-o", out])
            if no_device(r):
                print("SKIP: " + (r.stdout + r.stderr).strip())
                return SKIP
            err = r.stderr.strip()
            print(err)
            if r.returncode != 1 or len(err.splitlines()) != 1 or "fallback to the CPU is off" not in err:
                print("FAIL: --no-fallback should fail with one line naming the node")
                return 1
            if "node '" not in err or os.listdir(out):
                print("FAIL: the error names no node, or outputs were written")
                return 1
        return 0
    print("unknown mode " + mode)
    return 2


if __name__ == "__main__":
    sys.exit(main())
