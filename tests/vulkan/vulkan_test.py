#!/usr/bin/python3
"""Tests of the Vulkan backend driven through the strata command line (CI
runs them on lavapipe, Mesa's Vulkan on the CPU).  Every strata run has
STRATA_VULKAN_VALIDATION=1: the Khronos validation layer with
synchronization validation on, and any message it prints fails the run
(strata exits non-zero) and the test.  Each exits 77 ("skipped", CTest
SKIP_RETURN_CODE) when the machine has no Vulkan device.

  vulkan_test.py STRATA schedules MODELS_DIR CASE N
      a seed case under N random schedules (a seeded random topological
      recording order each run, so other barriers) gives outputs
      bit-identical to the default schedule, sanitizer on.
  vulkan_test.py STRATA hazard MODELS_DIR
      the seed's failure modes on Vulkan: --hazard-mode storage (barriers
      over whole buffers) still gives correct results; with
      --hazard-mode base-pointer the DAG misses edges, so the executor
      leaves those accesses unordered, and both the sanitizer and
      synchronization validation must report it.
  vulkan_test.py STRATA model MODEL SIZE [CHECK_ARGS...]
      fresh random input of 1x3xSIZExSIZE, the CPU backend's output as the
      reference, then `strata check --backend vulkan --sanitize` (every
      element within 1e-4 of the output's largest magnitude, or what
      CHECK_ARGS say).
  vulkan_test.py STRATA cache MODEL INPUT REF_DIR
      the pipeline cache: a first run writes it, a corrupt file is ignored
      (the driver refuses it) and rewritten, the next run loads it.
  vulkan_test.py STRATA kernels
      opencl_test.py's small models (long softmax rows, global pools,
      strided, dilated, grouped Convs into a concat slice, a ConvTranspose
      that falls back to the CPU between Vulkan nodes, linear Resize,
      MatMul of a transposed view, Gemm), against the CPU backend, in f32
      and f16; and tile_models' edges of the tiled gemm.comp / conv.comp
      and of conv_direct.comp.
  vulkan_test.py STRATA splitk
      conv.comp's split K (partial sums in the command's scratch, added in
      order by conv_splitk.comp) and every tile, on deep convs over small
      images (K up to 6400; 2304 as YOLOv8's 20x20 head) that read split
      chunks (channel views at an offset) and write Concat slots, grouped,
      strided, dilated, 1x1, 3x3, 3x5, 5x5 (K steps that wrap the
      kernel's rows and channels differently), batch 2: each output against torch in
      float64, in f32 (1e-5 of the output's scale) and f16 (1e-2), with
      the choice of vk_tiles.c (the device's, and an H200's 132 SMs,
      which must split K somewhere) and with tiles and splits forced.  The same for gemm.comp's
      split K: MatMul of a vector, a broadcast batch and a transposed
      view, Gemm with transA, alpha, beta and a bias, K up to 4100.  With
      the H200's choice, random schedules give bit-identical outputs.
  vulkan_test.py STRATA probe RUNS
      `strata probe --backend vulkan` completes and prints its table.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "opencl"))  # opencl_test's kernel_models
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from model_set import ModelSet  # noqa: E402


def env_v(extra=None):
    e = dict(os.environ, STRATA_VULKAN_VALIDATION="1")
    if extra:
        e.update(extra)
    return e


def run(cmd, env=None, timeout=1200):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or env_v())


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def no_device(r):
    return "vulkan: no Vulkan" in r.stdout + r.stderr


def checked(r, what):
    if no_device(r):
        print(r.stdout + r.stderr)
        print("SKIP: no Vulkan device")
        sys.exit(SKIP)
    if r.returncode != 0 or "vulkan validation:" in r.stderr:
        print(r.stdout + r.stderr)
        fail("%s returned %d%s" % (what, r.returncode, " with validation messages" if "vulkan validation:" in r.stderr else ""))
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
    base = outputs(strata, args, ["--backend", "vulkan"])
    for seed in range(1, n + 1):
        got = outputs(strata, args, ["--backend", "vulkan", "--schedule", "random", "--seed", str(seed), "--sanitize"])
        if got != base:
            fail("random schedule with seed %d changed the outputs" % seed)
    print("%s: %d random schedules on Vulkan, outputs bit-identical to the default schedule, validation silent" % (case, n))


def hazard(strata, d):
    for case in ["linear_chunk_last_dim", "linear_chunk_first_dim", "c2f", "nested_concat"]:
        args = [os.path.join(d, case + ".onnx"), "-i", os.path.join(d, case + "_input_0.npy"),
                "--ref-dir", os.path.join(d, case + "_ref"), "--backend", "vulkan"]
        stats = env_v({"STRATA_VULKAN_STATS": "1"})
        r = checked(run([strata, "check"] + args, stats), "strata check %s (byte ranges)" % case)
        ranges = [ln for ln in r.stderr.splitlines() if ln.startswith("vulkan stats:")]
        r = checked(run([strata, "check"] + args + ["--hazard-mode", "storage"], stats), "strata check %s (storage)" % case)
        whole = [ln for ln in r.stderr.splitlines() if ln.startswith("vulkan stats:")]
        # base-pointer: the sanitizer's proof fails...
        r = run([strata, "check"] + args + ["--hazard-mode", "base-pointer", "--sanitize"])
        if no_device(r):
            sys.exit(SKIP)
        if r.returncode == 0 or "sanitizer:" not in r.stderr:
            print(r.stdout + r.stderr)
            fail("%s: the sanitizer did not report base-pointer mode's missing edges" % case)
        # ...and synchronization validation sees the unordered accesses on the device
        r = run([strata, "check"] + args + ["--hazard-mode", "base-pointer"], stats)
        hazards = [ln for ln in r.stderr.splitlines() if "SYNC-HAZARD" in ln]
        if r.returncode == 0 or not hazards:
            print(r.stdout + r.stderr)
            fail("%s: synchronization validation did not report base-pointer mode's missing barriers" % case)
        kinds = sorted(set(re.findall(r"SYNC-HAZARD-[A-Z-]+", r.stderr)))
        print("%s:\n  byte ranges: %s\n  storage:     %s\n  base-pointer: sanitizer error; %d synchronization hazards (%s)" % (
            case, ranges[0][14:] if ranges else "?", whole[0][14:] if whole else "?", len(hazards), ", ".join(kinds)))


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
        tol = ["--scale-tol", "1e-4", "--atol", "0", "--rtol", "0"] if not any(a.startswith("--scale-tol") for a in extra) else []
        r = checked(run([strata, "check", path, "-i", xin, "--ref-dir", ref, "--backend", "vulkan", "--sanitize"] + tol + extra),
                    "strata check --backend vulkan")
        t2 = time.time()
        print(r.stdout + r.stderr)
        if "PASS" not in r.stdout:
            fail("no output was compared")
        print("%s at %dx%d %s: CPU reference %.1f s, Vulkan check (sanitize, validation) %.1f s" % (
            os.path.basename(path), size, size, " ".join(extra), t1 - t0, t2 - t1))


def cache(strata, path, xin, ref_dir):
    with tempfile.TemporaryDirectory() as tmp:
        env = env_v({"XDG_CACHE_HOME": tmp})
        env.pop("STRATA_VULKAN_CACHE", None)
        cmd = [strata, "check", path, "-i", xin, "--ref-dir", ref_dir, "--backend", "vulkan"]
        d = os.path.join(tmp, "strata", "vulkan")
        checked(run(cmd, env), "first run (fills the pipeline cache)")
        files = [f for f in os.listdir(d) if f.endswith(".bin")] if os.path.isdir(d) else []
        if len(files) != 1:
            fail("expected one pipeline cache file in %s, found %s" % (d, files))
        f = os.path.join(d, files[0])
        good = open(f, "rb").read()
        bad = bytearray(good)
        for i in range(0, min(len(bad), 32)):  # the header: the driver must refuse it
            bad[i] ^= 0x5a
        open(f, "wb").write(bytes(bad))
        checked(run(cmd, env), "run with a corrupt cache file")
        if open(f, "rb").read() == bytes(bad):
            fail("the corrupt cache file was not rewritten")
        checked(run(cmd, env), "run from the cache")
        print("pipeline cache: %s, %d bytes; a corrupt header was refused and rewritten" % (files[0], len(good)))


def tile_models(tmp):
    """The edges of the register-blocked tiles (64 x 64, or 16 x 64 for a
    small M; K 16 at a time) and of the direct conv: M, N and K that are
    not multiples of them, M <= 16 and just above, K < 16, M = 1,
    broadcast batch dims, a transposed view, Gemm's transA with alpha,
    beta and a broadcast bias; convs of 12, 70, 10 (grouped) and 2
    (depthwise, multiplier 2) channels a group, 1-D ones, pads, strides
    and dilations, written into the slots of a Concat."""
    from onnx import helper

    ms = ModelSet(tmp)
    rng, save = ms.rng, ms.save

    w = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)
    Conv = lambda ins, out, **a: helper.make_node("Conv", ins, [out], **a)
    save("conv_tiles", [
        Conv(["x", "wa", "ba"], "c1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        Conv(["x", "wb", "bb"], "c2", pads=[1, 0, 2, 1], strides=[2, 2], dilations=[2, 1]),
        Conv(["x", "wc"], "c3", pads=[1, 1, 1, 1], group=3),
        Conv(["x", "wd", "bd"], "c4", pads=[1, 1, 1, 1], group=12),
        helper.make_node("Concat", ["r1", "c3", "c4"], ["cat"], axis=1)],
        [("x", [2, 12, 19, 23])], ["cat", "c2"],
        {"wa": w(12, 12, 3, 3), "ba": w(12), "wb": w(70, 12, 3, 3), "bb": w(70), "wc": w(30, 4, 3, 3),
         "wd": w(24, 1, 3, 3), "bd": w(24)})
    save("conv1d_tiles", [
        Conv(["x", "wa", "ba"], "c1", pads=[2, 2], strides=[2]),
        Conv(["x", "wb"], "c2", pads=[2, 2], dilations=[2], group=3),
        Conv(["x", "wc"], "c3"),
        helper.make_node("Sigmoid", ["c3"], ["s3"]),
        helper.make_node("Mul", ["c3", "s3"], ["a3"]),
        helper.make_node("Concat", ["c2", "a3"], ["cat"], axis=1)],
        [("x", [2, 9, 50])], ["c1", "cat"],
        {"wa": w(20, 9, 5), "ba": w(20), "wb": w(18, 3, 3), "wc": w(9, 9, 1)})
    save("matmul_tiles", [
        helper.make_node("MatMul", ["a", "wa"], ["small"]),
        helper.make_node("MatMul", ["b", "wb"], ["bcast"]),
        helper.make_node("Transpose", ["e"], ["et"], perm=[1, 0]),
        helper.make_node("MatMul", ["d", "et"], ["tall"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["gemm"], transA=1, alpha=1.5, beta=0.5),
        helper.make_node("MatMul", ["v", "wv"], ["vec"]),
        helper.make_node("MatMul", ["k1", "wk"], ["outer"])],
        [("a", [5, 37]), ("b", [2, 1, 13, 40]), ("d", [130, 17]), ("e", [65, 17]), ("f", [140, 17]),
         ("v", [1, 200]), ("k1", [20, 1])],
        ["small", "bcast", "tall", "gemm", "vec", "outer"],
        {"wa": w(37, 130), "wb": w(3, 40, 66), "wf": w(140, 70), "bf": w(70), "wv": w(200, 33), "wk": w(1, 30)})
    return ms.models


def kernels(strata):
    from opencl_test import kernel_models
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, feeds in kernel_models(tmp) + tile_models(tmp):
            ref = os.path.join(tmp, name + "_ref")
            os.mkdir(ref)
            checked(run([strata, "run", "-q", path] + feeds + ["-o", ref]), "strata run %s (CPU reference)" % name)
            for prec in ["f32", "f16"]:
                tol = "1e-4" if prec == "f32" else "1e-2"
                r = checked(run([strata, "check", path] + feeds + ["--ref-dir", ref, "--backend", "vulkan", "--sanitize",
                                                                   "--precision", prec, "--scale-tol", tol, "--atol", "0",
                                                                   "--rtol", "0"]),
                            "strata check %s %s" % (name, prec))
                print("%s (%s): %s" % (name, prec, " ".join(
                    ln.split(":")[0] + " " + ln.split()[-1] for ln in r.stdout.splitlines() if ln.endswith("PASS") and ":" in ln)))


def splitk(strata):
    import torch
    from onnx import helper
    with tempfile.TemporaryDirectory() as tmp:
        ms = ModelSet(tmp)
        rng = ms.rng
        w = lambda *s: (rng.standard_normal(s) * 0.1).astype(np.float32)
        Conv = lambda ins, out, **a: helper.make_node("Conv", ins, [out], **a)
        ws = {"w1": w(40, 128, 3, 3), "b1": w(40), "w2": w(24, 128, 3, 3), "w3": w(48, 128, 3, 3), "b3": w(48),
              "w4": w(20, 256, 3, 3), "b4": w(20), "w5": w(70, 256, 1, 1), "w6": w(80, 256, 3, 3), "b6": w(80),
              "w7": w(16, 256, 5, 5), "w8": w(12, 128, 3, 5), "b8": w(12), "sp": np.array([128, 128], np.int64)}
        ms.save("splitk", [
            helper.make_node("Split", ["x", "sp"], ["xa", "xb"], axis=1),
            Conv(["xb", "w1", "b1"], "c1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            Conv(["xa", "w2"], "c2", pads=[1, 1, 1, 1]),
            Conv(["x", "w3", "b3"], "c3", pads=[1, 1, 1, 1], group=2),
            helper.make_node("Concat", ["r1", "c2", "c3"], ["cat"], axis=1),
            Conv(["x", "w4", "b4"], "c4", pads=[2, 1, 2, 1], strides=[2, 2], dilations=[2, 1]),
            Conv(["x", "w5"], "c5"),
            Conv(["x", "w6", "b6"], "c6", pads=[1, 1, 1, 1]),
            helper.make_node("Sigmoid", ["c6"], ["s6"]),
            helper.make_node("Mul", ["c6", "s6"], ["a6"]),
            Conv(["x", "w7"], "c7", pads=[2, 2, 2, 2]),
            Conv(["xb", "w8", "b8"], "c8", pads=[0, 1, 0, 1], strides=[1, 2])],
            [("x", [2, 256, 6, 7])], ["cat", "c4", "c5", "a6", "c7", "c8"], ws)
        name, path, feeds = ms.models[0]
        x = torch.from_numpy(np.load(feeds[1].split("=", 1)[1])).double()
        t = {k: torch.from_numpy(v).double() for k, v in ws.items() if k != "sp"}
        F = torch.nn.functional
        xa, xb = x[:, :128], x[:, 128:]
        c6 = F.conv2d(x, t["w6"], t["b6"], padding=1)
        ref = {"cat": torch.cat([F.relu(F.conv2d(xb, t["w1"], t["b1"], padding=1)), F.conv2d(xa, t["w2"], padding=1),
                                 F.conv2d(x, t["w3"], t["b3"], padding=1, groups=2)], 1),
               "c4": F.conv2d(F.pad(x, (1, 1, 2, 2)), t["w4"], t["b4"], stride=2, dilation=(2, 1)),
               "c5": F.conv2d(x, t["w5"]),
               "a6": c6 * torch.sigmoid(c6),
               "c7": F.conv2d(x, t["w7"], padding=2),
               "c8": F.conv2d(F.pad(xb, (1, 1, 0, 0)), t["w8"], t["b8"], stride=(1, 2))}
        rdir = os.path.join(tmp, "ref")
        os.mkdir(rdir)
        for k, v in ref.items():
            np.save(os.path.join(rdir, k + ".npy"), v.numpy().astype(np.float32))
        forced = [{}, {"STRATA_VULKAN_CUS": "132"}, {"STRATA_VULKAN_CONV_SPLITK": "1"}, {"STRATA_VULKAN_CONV_SPLITK": "3"},
                  {"STRATA_VULKAN_CONV_SPLITK": "16"}]
        # a forced tile is conv.comp's: keep f16 off the tensor cores' one block (coopmat_test.py tests those)
        forced += [{"STRATA_VULKAN_CONV_TILE": t, "STRATA_VULKAN_CONV_SPLITK": "5", "STRATA_VULKAN_COOPMAT": "0"}
                   for t in ["64x64", "64x32", "32x64", "32x32", "16x64"]]
        check_forced(strata, "conv", path, feeds, rdir, forced, len(ref))
        same_bits(strata, "conv", path, feeds)

        # MatMul and Gemm: few outputs, long K (a vector times a matrix, a
        # broadcast batch, a transposed view, Gemm's transA, alpha, beta
        # and a broadcast bias), K not a multiple of 16
        ws = {"wv": w(4100, 33), "wb": w(1, 1000, 20), "wg": w(3001, 40), "bg": w(40)}
        ms.save("splitk_mm", [
            helper.make_node("MatMul", ["v", "wv"], ["vec"]),
            helper.make_node("MatMul", ["bt", "wb"], ["bat"]),
            helper.make_node("Transpose", ["e"], ["et"], perm=[1, 0]),
            helper.make_node("MatMul", ["et", "wv"], ["tr"]),
            helper.make_node("Gemm", ["g", "wg", "bg"], ["gemm"], transA=1, alpha=0.5, beta=1.5)],
            [("v", [1, 4100]), ("bt", [3, 2, 1000]), ("e", [4100, 18]), ("g", [3001, 5])],
            ["vec", "bat", "tr", "gemm"], ws)
        name, path, feeds = ms.models[1]
        i = {feeds[k].split("=")[0]: np.load(feeds[k].split("=", 1)[1]).astype(np.float64) for k in range(1, len(feeds), 2)}
        t = {k: v.astype(np.float64) for k, v in ws.items()}
        ref = {"vec": i["v"] @ t["wv"], "bat": i["bt"] @ t["wb"], "tr": i["e"].T @ t["wv"],
               "gemm": 0.5 * (i["g"].T @ t["wg"]) + 1.5 * t["bg"]}
        rdir = os.path.join(tmp, "ref_mm")
        os.mkdir(rdir)
        for k, v in ref.items():
            np.save(os.path.join(rdir, k + ".npy"), v.astype(np.float32))
        forced = [{}, {"STRATA_VULKAN_CUS": "132"}, {"STRATA_VULKAN_GEMM_SPLITK": "1"}, {"STRATA_VULKAN_GEMM_SPLITK": "7"},
                  {"STRATA_VULKAN_GEMM_TILE": "64x64", "STRATA_VULKAN_GEMM_SPLITK": "3"},
                  {"STRATA_VULKAN_GEMM_TILE": "16x64", "STRATA_VULKAN_GEMM_SPLITK": "16"}]
        check_forced(strata, "matmul", path, feeds, rdir, forced, len(ref))
        same_bits(strata, "matmul", path, feeds)


def same_bits(strata, what, path, feeds):
    """Split K's sum has a fixed order: the H200's choice (132 SMs) gives
    bit-identical outputs over runs recorded in random schedules (other
    barriers, other dispatch overlap)."""
    os.environ["STRATA_VULKAN_CUS"] = "132"
    try:
        base = outputs(strata, [path] + feeds, ["--backend", "vulkan"])
        for seed in range(1, 4):
            got = outputs(strata, [path] + feeds, ["--backend", "vulkan", "--schedule", "random", "--seed", str(seed)])
            if got != base:
                fail("splitk %s: random schedule with seed %d changed the outputs' bits" % (what, seed))
    finally:
        del os.environ["STRATA_VULKAN_CUS"]
    print("splitk %s: 3 random schedules, outputs bit-identical" % what)


def check_forced(strata, what, path, feeds, rdir, forced, n_out):
    """strata check of one model against float64 references under each
    forced tile and split (env), in f32 and f16; the choice for an H200's
    132 SMs (STRATA_VULKAN_CUS alone) must split K somewhere (lavapipe's
    own, for its few cores, may not)."""
    for prec in ["f32", "f16"]:
        tol = "1e-5" if prec == "f32" else "1e-2"
        for f in forced:
            r = checked(run([strata, "check", path] + feeds + ["--ref-dir", rdir, "--backend", "vulkan", "--sanitize",
                                                               "--precision", prec, "--scale-tol", tol, "--atol", "0",
                                                               "--rtol", "0"], env_v(dict(f, STRATA_VULKAN_TILE_LOG="1"))),
                        "strata check splitk %s %s %s" % (what, prec, f))
            passed = [ln for ln in r.stdout.splitlines() if ln.endswith("PASS") and ":" in ln]
            if len(passed) != n_out:
                print(r.stdout + r.stderr)
                fail("splitk %s %s %s: %d outputs passed, expected %d" % (what, prec, f, len(passed), n_out))
            splits = [int(m) for m in re.findall(r"split (\d+)", r.stderr)]
            if list(f) == ["STRATA_VULKAN_CUS"] and not any(s > 1 for s in splits):
                print(r.stderr)
                fail("%s: the default tile choice split K nowhere: nothing tested split K" % what)
            print("splitk %s %s %s: splits %s; %s" % (what, prec, f or "default", splits, " | ".join(passed)))


def probe(strata, runs):
    # the probe makes hazards on purpose: validation messages are expected
    # in rows (a) and (b), and must be absent from (c), strata's barrier
    r = run([strata, "probe", "--backend", "vulkan", "--runs", str(runs)])
    if no_device(r):
        sys.exit(SKIP)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        fail("strata probe returned %d" % r.returncode)
    print(r.stdout)
    print("(%d synchronization validation messages on stderr)" % r.stderr.count("vulkan validation:"))
    rows = [ln for ln in r.stdout.splitlines() if ln[:3] in ("(a)", "(b)", "(c)")]
    if len(rows) != 3 or not all(("/ %d" % runs) in ln for ln in rows):
        fail("the probe did not print its table")
    if "validation: silent" not in rows[2] or "validation: reported" not in rows[1]:
        fail("synchronization validation should report row (b) and stay silent on row (c)")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    strata, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "schedules":
        schedules(strata, args[0], args[1], int(args[2]))
    elif mode == "hazard":
        hazard(strata, args[0])
    elif mode == "model":
        model(strata, args[0], int(args[1]), args[2:])
    elif mode == "cache":
        cache(strata, args[0], args[1], args[2])
    elif mode == "kernels":
        kernels(strata)
    elif mode == "splitk":
        splitk(strata)
    elif mode == "probe":
        probe(strata, int(args[0]))
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
