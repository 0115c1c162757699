#!/usr/bin/python3
"""coopmat_test.py — Vulkan's tensor-core convs (conv_cm.comp) against a
float64 reference (tests/conv/conv_ref.py, tap by tap in numpy).

    coopmat_test.py STRATA [--validation 0|1] [--modes real,emulate]

One graph of f16 convs that conv_cm.comp takes (16 or more output
channels a group, K of 16 or more), at batch 1 and batch 4: 1x1; 3x3 at
stride 1 and 2 with padding; 5x5 (K steps that wrap the kernel's rows
and channels differently); channel counts that are not multiples of 16
(35 in, 40 and 33 out); two groups; a conv reading a channel slice of a
Split (a view at an offset); two convs writing the slots of a Concat;
a deep K (256 x 3x3 over a 5x6 image, as YOLOv8's head) that vk_tiles.c
splits for an H200's 132 SMs; with and without bias, plain, ReLU and
SiLU (Sigmoid + Mul, fused).  Each runs with --precision f16 under the
default choice, an H200's 132 SMs (STRATA_VULKAN_CUS), and K forced into
3 splits, and every output must be within 1e-2 of its largest reference
magnitude (f16's tolerance in DESIGN.md).

Modes (each a STRATA_VULKAN_COOPMAT setting):
  real     the device's own choice: where the tile log says cooperative
           matrices are on, every such conv must take "path coopmat";
           where they are off, conv.comp runs them (still checked).
  emulate  conv_cm.comp's scalar build (conv_cm_emu_f16) on any device
           with f16: every index of the shader but the fragments'.  A
           failure in real alone points at the fragments.
On a mismatch it prints the output, its shape, the scale, the largest
error and where (n, c, h, w, with the reference and the value), how many
elements are off, and which 16-channel and 16-position blocks hold them
(a fragment's layout shows as a pattern there).  With --validation 1 (the
default) every run has STRATA_VULKAN_VALIDATION=1 and any message fails.
Exits 77 when the machine has no Vulkan device or no f16 on it.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conv"))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from conv_ref import conv  # noqa: E402
from model_set import ModelSet  # noqa: E402

SKIP = 77
TOL = 1e-2


def silu(v):
    return v / (1 + np.exp(-v))


def graph(ms, n):
    """The model at batch n and its float64 reference outputs."""
    from onnx import helper
    rng = ms.rng
    w = lambda *s: (rng.standard_normal(s) * (np.prod(s[1:]) ** -0.5)).astype(np.float32)
    b = lambda c: (rng.standard_normal(c) * 0.1).astype(np.float32)
    ws = {"w1": w(64, 48, 1, 1), "b1": b(64), "w2": w(40, 35, 3, 3), "b2": b(40), "w3": w(96, 48, 3, 3),
          "w4": w(48, 32, 3, 3), "b4": b(48), "w5": w(32, 20, 5, 5), "b5": b(32), "w6": w(24, 35, 3, 3), "b6": b(24),
          "w7": w(33, 35, 1, 1), "w8": w(80, 256, 3, 3), "b8": b(80), "w9": w(16, 16, 3, 3),
          "sp": np.array([13, 35], np.int64), "st": np.array([0], np.int64), "en": np.array([16], np.int64),
          "ax": np.array([1], np.int64)}
    Conv = lambda ins, out, **a: helper.make_node("Conv", ins, [out], **a)
    nodes = [
        Conv(["x", "w1", "b1"], "c1"),
        helper.make_node("Sigmoid", ["c1"], ["s1"]), helper.make_node("Mul", ["c1", "s1"], ["y1"]),
        helper.make_node("Split", ["x", "sp"], ["xa", "xb"], axis=1),
        Conv(["xb", "w2", "b2"], "c2", pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c2"], ["y2"]),
        Conv(["x", "w3"], "y3", pads=[1, 1, 1, 1], strides=[2, 2]),
        Conv(["y1", "w4", "b4"], "y4", pads=[1, 1, 1, 1], group=2),
        Conv(["xs", "w5", "b5"], "y5", pads=[2, 2, 2, 2]),
        Conv(["xb", "w6", "b6"], "c6", pads=[1, 1, 1, 1]),
        Conv(["xb", "w7"], "c7"),
        helper.make_node("Concat", ["c6", "c7"], ["y67"], axis=1),
        Conv(["d", "w8", "b8"], "c8", pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c8"], ["s8"]), helper.make_node("Mul", ["c8", "s8"], ["y8"]),
        # the first 16 of y4's 48 channels, a view: M = K / 9 = 16, the least the path takes
        helper.make_node("Slice", ["y4", "st", "en", "ax"], ["y4s"]),
        Conv(["y4s", "w9"], "y9", pads=[1, 1, 1, 1], strides=[2, 2])]
    ms.save("coopmat_b%d" % n, nodes, [("x", [n, 48, 19, 23]), ("xs", [n, 20, 11, 13]), ("d", [n, 256, 5, 6])],
            ["y1", "y2", "y3", "y4", "y5", "y67", "y8", "y9"], ws)
    name, path, feeds = ms.models[-1]
    i = {feeds[k].split("=")[0]: np.load(feeds[k].split("=", 1)[1]).astype(np.float64) for k in range(1, len(feeds), 2)}
    f = {k: v.astype(np.float64) for k, v in ws.items()}
    x, xb = i["x"], i["x"][:, 13:]
    y1 = silu(conv(x, f["w1"], f["b1"]))
    y4 = conv(y1, f["w4"], f["b4"], pad=1, group=2)
    ref = {"y1": y1, "y2": np.maximum(conv(xb, f["w2"], f["b2"], pad=1), 0), "y3": conv(x, f["w3"], pad=1, stride=2),
           "y4": y4, "y5": conv(i["xs"], f["w5"], f["b5"], pad=2),
           "y67": np.concatenate([conv(xb, f["w6"], f["b6"], pad=1), conv(xb, f["w7"])], axis=1),
           "y8": silu(conv(i["d"], f["w8"], f["b8"], pad=1)), "y9": conv(y4[:, :16], f["w9"], pad=1, stride=2)}
    return path, feeds, ref


def blocks(bad, axis_len, axis):
    """Which 16-wide blocks along axis hold bad elements (a short list)."""
    idx = np.unique(np.nonzero(bad)[axis] // 16)
    s = ", ".join("%d-%d" % (16 * k, min(16 * k + 15, axis_len - 1)) for k in idx[:8])
    return s + (" ..." if len(idx) > 8 else "")


def compare(name, got, ref):
    """None when got is within TOL of ref's scale, else what differs."""
    if got.shape != ref.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, ref.shape)
    scale = max(np.abs(ref).max(), 1e-30)
    d = np.abs(got.astype(np.float64) - ref)
    d[np.isnan(got)] = np.inf
    if d.max() <= TOL * scale:
        return None
    at = np.unravel_index(int(np.argmax(d)), d.shape)
    bad = d > TOL * scale
    pos = bad.reshape(bad.shape[0], bad.shape[1], -1)  # [n][c][h w]
    return ("%s: shape %s, scale %.4g: max |d| %.4g (%.3g of the scale) at %s: ref %.6g, got %.6g; %d of %d elements off "
            "(%d NaN); off in channels %s, positions (h W + w) %s, images %s" % (
                name, list(ref.shape), scale, d.max(), d.max() / scale, tuple(int(a) for a in at), ref[at], got[at],
                int(bad.sum()), bad.size, int(np.isnan(got).sum()), blocks(pos, ref.shape[1], 1),
                blocks(pos, pos.shape[2], 2), sorted(set(np.nonzero(bad)[0].tolist()))[:8]))


def run(strata, path, feeds, env):
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([strata, "run", "-q", path] + feeds + ["--backend", "vulkan", "--precision", "f16", "-o", out],
                           capture_output=True, text=True, timeout=900, env=env)
        got = {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}
    return r, got


def check(strata, mode, path, feeds, ref, forced, validation):
    """One run of one model: (what it was, the tile log's line on
    cooperative matrices, paths taken {path: convs}, problems found)."""
    env = dict(os.environ, STRATA_VULKAN_VALIDATION=validation, STRATA_VULKAN_TILE_LOG="1", **forced)
    env["STRATA_VULKAN_COOPMAT"] = "emulate" if mode == "emulate" else env.get("STRATA_VULKAN_COOPMAT", "1")
    what = "%s %s %s" % (mode, os.path.basename(path), " ".join("%s=%s" % kv for kv in forced.items()) or "default")
    r, got = run(strata, path, feeds, env)
    if "vulkan: no Vulkan" in r.stderr:
        print("SKIP: no Vulkan device")
        sys.exit(SKIP)
    if "cooperative matrices off: no shaderFloat16" in r.stderr:
        print("SKIP: no f16 on this Vulkan device")
        sys.exit(SKIP)
    m = re.search(r"cooperative matrices (on|off)[^\n]*", r.stderr)
    state = m.group(0) if m else "no tile log line on cooperative matrices"
    paths = re.findall(r"vulkan Conv '[^']*': M (\d+),.*?: path (\w+(?: emulated)?)", r.stderr)
    problems = []
    if r.returncode != 0 or "vulkan validation:" in r.stderr:
        problems.append("strata run returned %d%s:\n%s" % (
            r.returncode, " with validation messages" if "vulkan validation:" in r.stderr else "",
            "\n".join(ln for ln in r.stderr.splitlines() if "vulkan Conv" not in ln)[-3000:]))
    want = {"emulate": "coopmat emulated", "real": "coopmat" if m and m.group(1) == "on" else None}[mode]
    if want and r.returncode == 0 and (not paths or any(p != want for _, p in paths)):
        problems.append("expected every conv on path '%s'; got %s" % (want, paths))
    for k in sorted(ref):
        if k in got:
            problems += [msg for msg in [compare(k, got[k], ref[k])] if msg]
        elif r.returncode == 0:
            problems.append("%s: no output" % k)
    counts = {p: sum(1 for _, q in paths if q == p) for p in sorted(set(q for _, q in paths))}
    return what, state, counts, problems


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    strata, args = sys.argv[1], sys.argv[2:]
    validation = args[args.index("--validation") + 1] if "--validation" in args else "1"
    modes = (args[args.index("--modes") + 1] if "--modes" in args else "real,emulate").split(",")
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        ms = ModelSet(tmp)
        models = [graph(ms, 1), graph(ms, 4)]
        forced = [{}, {"STRATA_VULKAN_CUS": "132"}, {"STRATA_VULKAN_CONV_SPLITK": "3"}]
        for mode in modes:
            for path, feeds, ref in models:
                for f in forced:
                    what, state, counts, problems = check(strata, mode, path, feeds, ref, f, validation)
                    if problems:
                        fails += 1
                        print("FAIL %s (%s; paths %s):\n  %s" % (what, state, counts, "\n  ".join(problems)))
                    else:
                        print("ok   %s: %d outputs within %g of their scale; paths %s" % (what, len(ref), TOL, counts))
            print("     (%s)" % state)
    if fails:
        print("FAIL: %d runs differ" % fails)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
