#!/usr/bin/python3
"""CPU fallback on a host-unified OpenCL device (PoCL): zero copy against
the copy path, both against the CPU backend.

  zero_copy_test.py STRATA MODELS_DIR CASE

CASE names a model and the ops STRATA_FORCE_CPU sends to the CPU, so that
the OpenCL plan is mixed.  Inputs are drawn at random (--seed); the CPU
backend's outputs are the reference.  The model then runs on OpenCL under
--sanitize (every conflicting pair of commands proven ordered, fresh memory
and outputs poisoned) twice:

  - zero copy (the default on a host-unified device): the host nodes must
    have worked on mapped device memory, with no transfer commands;
  - STRATA_OPENCL_NO_ZERO_COPY=1: transfers, no maps;

and each time every output must be within 1e-5 (absolute and relative, the
fp32 tolerance of docs) of the CPU's.  What moved is read from the line
STRATA_OPENCL_PROFILE=1 prints (cl_exec.c):
  opencl host data: N host commands mapped R ranges, B bytes (zero-copy); T transfers copied C bytes
Then 10 random schedules of the zero-copy plan, sanitizer on, must all pass
and agree bit for bit.

Exits 77 (skipped) without an OpenCL device, or when the device is not
host-unified (a discrete GPU keeps the copy path: nothing to compare).
"""
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77
CASES = {
    # Sigmoid and Concat on the CPU: host nodes read Slice views (strided
    # byte ranges of one Conv's output) and write a Concat the device reads
    "c2f": ("seed/c2f.onnx", "Sigmoid,Concat", []),
    # CumSum, TopK, GatherElements: the mixed model's own fallbacks
    "topk_cumsum": ("mixed/topk_cumsum.onnx", "CumSum,TopK,GatherElements", []),
    # a transformer decoder with its normalisation and attention softmax on
    # the CPU: many small host nodes between device MatMuls
    "decoder": ("transformer/decoder.onnx", "LayerNormalization,Softmax", []),
}
LINE = re.compile(r"opencl host data: (\d+) host commands mapped (\d+) ranges, (\d+) bytes \(zero-copy\); "
                  r"(\d+) transfers copied (\d+) bytes")


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=e)


def no_device(r):
    t = r.stdout + r.stderr
    return "no OpenCL" in t or "is not available" in t or "not built into" in t


def main():
    strata, models, case = sys.argv[1:4]
    rel, force, extra = CASES[case]
    model = os.path.join(models, rel)
    seed = "7"
    ref = tempfile.mkdtemp()
    r = run([strata, "run", model, "--backend", "cpu", "--seed", seed, "-o", ref, "-q"] + extra)
    if r.returncode != 0:
        print("FAIL: the CPU reference run: " + r.stderr)
        return 1
    outputs = sorted(f for f in os.listdir(ref) if f.endswith(".npy"))
    env = {"STRATA_FORCE_CPU": force, "STRATA_OPENCL_PROFILE": "1"}
    p = run([strata, "inspect", model, "--plan", "--backend", "opencl"] + extra, env)
    if no_device(p):
        print("SKIP: " + (p.stdout + p.stderr).strip())
        return SKIP
    if "(fallback)" not in p.stdout:
        print("FAIL: the plan is not mixed:\n" + p.stdout + p.stderr)
        return 1
    if "zero-copy" not in p.stdout:
        print("SKIP: the OpenCL device is not host-unified (no zero copy to test)")
        return SKIP
    base = [strata, "check", model, "--backend", "opencl", "--seed", seed, "--ref-dir", ref, "--sanitize",
            "--atol", "1e-5", "--rtol", "1e-5"] + extra
    for zero_copy in (True, False):
        mode = "zero copy" if zero_copy else "copy path"
        e = dict(env, STRATA_OPENCL_NO_ZERO_COPY="0" if zero_copy else "1")
        r = run(base, e)
        print("== %s (%s)\n%s" % (mode, force, r.stdout.strip()))
        passed = sum(1 for line in r.stdout.splitlines() if line.endswith("PASS") and "max_atol" in line)
        if r.returncode != 0 or "FAIL" in r.stdout or passed != len(outputs) or not outputs:
            print("FAIL: %s: %d of %d outputs passed\n%s" % (mode, passed, len(outputs), r.stderr))
            return 1
        moved = [tuple(int(x) for x in m.groups()) for m in LINE.finditer(r.stderr)]
        if not moved:
            print("FAIL: %s: no 'opencl host data' line on stderr:\n%s" % (mode, r.stderr))
            return 1
        cmds, maps, mapped, copies, copied = moved[-1]
        print("   host commands mapped %d ranges, %d bytes; %d transfers copied %d bytes" % (maps, mapped, copies, copied))
        if zero_copy and not (cmds > 0 and maps > 0 and mapped > 0 and copies == 0):
            print("FAIL: zero copy: the host commands did not run on mapped memory")
            return 1
        if not zero_copy and not (cmds == 0 and maps == 0 and copies > 0 and copied > 0):
            print("FAIL: copy path: expected transfers and no maps")
            return 1
    r = run([strata, "check", model, "--backend", "opencl", "--seed", seed, "--ref-dir", ref, "--sanitize",
             "--schedule", "random", "--runs", "10"] + extra, dict(env, STRATA_OPENCL_NO_ZERO_COPY="0"))
    print("== zero copy, 10 random schedules\n" + r.stdout.strip())
    if r.returncode != 0 or "bit-identical  PASS" not in r.stdout:
        print("FAIL: random schedules\n" + r.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
