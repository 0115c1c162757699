#!/usr/bin/python3
"""Tests of the OpenCL backend driven through the strata command line (CI
runs them on PoCL).  Each exits 77 ("skipped", CTest SKIP_RETURN_CODE)
when the machine has no OpenCL device.

  opencl_test.py STRATA schedules MODELS_DIR CASE N
      a seed case under N random schedules (random topological enqueue
      order behind a start gate, sanitizer on) gives outputs bit-identical
      to the default schedule.
  opencl_test.py STRATA hazard MODELS_DIR N
      the seed's bug on OpenCL: with --hazard-mode base-pointer (conflicts
      seen only between views that start at the same byte) the DAG lacks
      edges, and random schedules give wrong outputs; with byte ranges
      (the schedules mode) they never do.
  opencl_test.py STRATA model MODEL SIZE [CHECK_ARGS...]
      fresh random input of 1x3xSIZExSIZE, the CPU backend's output as the
      reference, then `strata check --backend opencl --sanitize` against it
      (every element within 1e-4 of the output's largest magnitude).
  opencl_test.py STRATA cache MODEL INPUT REF_DIR
      the program cache: a first run builds the kernels and saves the
      binary, a corrupt cache file is ignored and rebuilt, the next run
      loads it (in a private XDG_CACHE_HOME).
  opencl_test.py STRATA kernels
      small models (built here with the onnx package) that reach the
      kernel variants the node tests are too small for: long softmax rows
      (a work-group per row), global pools over large planes, Conv as a
      GEMM, direct (depthwise, grouped, dilated, strided) and into a
      channel slice of a concat, ConvTranspose, linear Resize, a reduction
      over a strided view; each against the CPU backend, with fresh random
      inputs, in f32 and f16, with the CPU-device Conv kernel and with the
      tiled (GPU) one (STRATA_OPENCL_CONV=tiled).
  opencl_test.py STRATA probe RUNS
      `strata probe --backend opencl` completes and prints its table (it
      measures; stale counts are not asserted).
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from model_set import ModelSet  # noqa: E402

SKIP = 77


def run(cmd, env=None, timeout=1200):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def no_device(r):
    return "opencl: no OpenCL" in r.stdout + r.stderr


def checked(r, what):
    if no_device(r):
        print(r.stdout + r.stderr)
        print("SKIP: no OpenCL device")
        sys.exit(SKIP)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        fail("%s returned %d" % (what, r.returncode))
    return r


def outputs(strata, args, extra):
    with tempfile.TemporaryDirectory() as out:
        checked(run([strata, "run", "-q"] + args + ["-o", out] + extra), "strata run " + " ".join(extra))
        res = {}
        for f in sorted(os.listdir(out)):
            with open(os.path.join(out, f), "rb") as fh:
                res[f] = fh.read()
        return res


def schedules(strata, d, case, n):
    args = [os.path.join(d, case + ".onnx"), "-i", os.path.join(d, case + "_input_0.npy")]
    base = outputs(strata, args, ["--backend", "opencl"])
    for seed in range(1, n + 1):
        got = outputs(strata, args, ["--backend", "opencl", "--schedule", "random", "--seed", str(seed), "--sanitize"])
        if got != base:
            fail("random schedule with seed %d changed the outputs" % seed)
    print("%s: %d random schedules on OpenCL, outputs bit-identical to the default schedule" % (case, n))


def hazard(strata, d, n):
    wrong = {}
    for case in ["linear_chunk_last_dim", "linear_chunk_first_dim", "c2f", "nested_concat"]:
        args = [os.path.join(d, case + ".onnx"), "-i", os.path.join(d, case + "_input_0.npy"),
                "--ref-dir", os.path.join(d, case + "_ref"), "--backend", "opencl"]
        checked(run([strata, "check"] + args), "strata check %s (byte ranges)" % case)
        wrong[case] = 0
        for seed in range(1, n + 1):
            r = run([strata, "check"] + args + ["--hazard-mode", "base-pointer", "--schedule", "random", "--seed", str(seed)])
            if no_device(r):
                sys.exit(SKIP)
            wrong[case] += r.returncode != 0
    print("base-pointer mode on OpenCL, wrong outputs under %d random schedules: %s" % (
        n, ", ".join("%s %d" % kv for kv in wrong.items())))
    if not any(wrong.values()):
        fail("no random schedule produced a wrong output in base-pointer mode")


def model(strata, path, size, extra):
    rng = np.random.default_rng(int(time.time() * 1e6) % (1 << 32))
    x = rng.random((1, 3, size, size), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        xin = os.path.join(tmp, "input.npy")
        np.save(xin, x)
        ref = os.path.join(tmp, "ref")
        os.mkdir(ref)
        t0 = time.time()
        checked(run([strata, "run", "-q", path, "-i", xin, "-o", ref]), "strata run (CPU reference)")
        t1 = time.time()
        r = checked(run([strata, "check", path, "-i", xin, "--ref-dir", ref, "--backend", "opencl", "--sanitize",
                         "--scale-tol", "1e-4", "--atol", "0", "--rtol", "0"] + extra), "strata check --backend opencl")
        t2 = time.time()
        print(r.stdout + r.stderr)
        if "PASS" not in r.stdout:
            fail("no output was compared")
        print("%s at %dx%d: CPU reference %.1f s, OpenCL check (sanitize) %.1f s" % (os.path.basename(path), size, size,
                                                                                  t1 - t0, t2 - t1))


def cache(strata, path, xin, ref_dir):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=tmp)
        env.pop("STRATA_OPENCL_CACHE", None)
        cmd = [strata, "check", path, "-i", xin, "--ref-dir", ref_dir, "--backend", "opencl"]
        d = os.path.join(tmp, "strata", "opencl")
        t0 = time.time()
        checked(run(cmd, env), "first run (builds the program)")
        t1 = time.time()
        files = [f for f in os.listdir(d) if f.endswith(".bin")] if os.path.isdir(d) else []
        if len(files) != 1:
            fail("expected one cached program in %s, found %s" % (d, files))
        f = os.path.join(d, files[0])
        good = open(f, "rb").read()
        # corrupt the payload: the checksum must catch it
        bad = bytearray(good)
        for i in range(len(bad) // 2, min(len(bad), len(bad) // 2 + 64)):
            bad[i] ^= 0x5a
        open(f, "wb").write(bytes(bad))
        t2 = time.time()
        checked(run(cmd, env), "run with a corrupt cache file")
        t3 = time.time()
        if open(f, "rb").read() == bytes(bad):
            fail("the corrupt cache file was not rebuilt")
        # a truncated file too
        open(f, "wb").write(good[:100])
        checked(run(cmd, env), "run with a truncated cache file")
        t4 = time.time()
        checked(run(cmd, env), "run from the cache")
        t5 = time.time()
        print("program cache: build %.1f s, after corruption %.1f s (rebuilt), after truncation %.1f s (rebuilt), "
              "cached %.1f s" % (t1 - t0, t3 - t2, t4 - t3, t5 - t4))


def kernel_models(tmp):
    from onnx import helper

    ms = ModelSet(tmp)
    rng, save = ms.rng, ms.save

    w = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)
    save("softmax_long", [helper.make_node("Softmax", ["x"], ["y"], axis=1),
                          helper.make_node("LogSoftmax", ["x"], ["z"], axis=0)],
         [("x", [3, 5000])], ["y", "z"], {})
    save("global_pools", [helper.make_node("GlobalAveragePool", ["x"], ["a"]),
                          helper.make_node("GlobalMaxPool", ["x"], ["m"])],
         [("x", [2, 8, 40, 40])], ["a", "m"], {})
    save("convs", [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        helper.make_node("Mul", ["c1", "s1"], ["a1"]),
        helper.make_node("Conv", ["a1", "w2"], ["c2"], pads=[2, 2, 2, 2], dilations=[2, 2], group=24),
        helper.make_node("Conv", ["a1", "w3", "b3"], ["c3"], group=2),
        helper.make_node("Concat", ["c2", "c3"], ["cat"], axis=1),
        helper.make_node("ConvTranspose", ["cat", "w4", "b4"], ["ct"], strides=[2, 2], pads=[1, 1, 1, 1],
                         output_padding=[1, 1]),
        helper.make_node("Resize", ["ct", "", "scales"], ["r"], mode="linear"),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("ReduceMean", ["t"], ["y"], axes=[1, 2], keepdims=0)],
        [("x", [2, 5, 30, 34])], ["cat", "y"],
        {"w1": w(48, 5, 3, 3), "b1": w(48), "w2": w(24, 2, 3, 3), "w3": w(40, 24, 1, 1), "b3": w(40),
         "w4": w(64, 6, 4, 4), "b4": w(6), "scales": np.array([1, 1, 1.5, 0.75], np.float32)})
    save("matmuls", [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
                     helper.make_node("MatMul", ["xt", "wm"], ["m"]),
                     helper.make_node("Gemm", ["g", "wg", "bg"], ["y"], transB=1, alpha=0.5, beta=2.0)],
         [("x", [3, 70, 45]), ("g", [33, 130])], ["m", "y"],
         {"wm": w(70, 90), "wg": w(77, 130), "bg": w(77)})
    return ms.models


def kernels(strata):
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, feeds in kernel_models(tmp):
            ref = os.path.join(tmp, name + "_ref")
            os.mkdir(ref)
            checked(run([strata, "run", "-q", path] + feeds + ["-o", ref]), "strata run %s (CPU reference)" % name)
            for conv in ["", "tiled"]:
                env = dict(os.environ, STRATA_OPENCL_CONV=conv) if conv else None
                for prec in ["f32", "f16"]:
                    tol = "1e-4" if prec == "f32" else "1e-2"
                    r = checked(run([strata, "check", path] + feeds + ["--ref-dir", ref, "--backend", "opencl",
                                                                       "--sanitize", "--precision", prec,
                                                                       "--scale-tol", tol, "--atol", "0", "--rtol", "0"],
                                    env), "strata check %s %s %s" % (name, prec, conv or "default"))
                    print("%s (%s, %s conv): %s" % (name, prec, conv or "default", " ".join(
                        ln.split(":")[0] + " " + ln.split()[-1] for ln in r.stdout.splitlines() if ln.endswith("PASS") and ":" in ln)))


def probe(strata, runs):
    r = checked(run([strata, "probe", "--backend", "opencl", "--runs", str(runs)]), "strata probe")
    print(r.stdout)
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("(a)") or ln.startswith("(b)")]
    if len(rows) < 2 or not all(("/ %d" % runs) in ln or "no out-of-order" in ln for ln in rows):
        fail("the probe did not print its table")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    strata, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "schedules":
        schedules(strata, args[0], args[1], int(args[2]))
    elif mode == "hazard":
        hazard(strata, args[0], int(args[1]))
    elif mode == "model":
        model(strata, args[0], int(args[1]), args[2:])
    elif mode == "cache":
        cache(strata, args[0], args[1], args[2])
    elif mode == "kernels":
        kernels(strata)
    elif mode == "probe":
        probe(strata, int(args[0]))
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
