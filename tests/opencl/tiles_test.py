#!/usr/bin/python3
"""tiles_test.py STRATA — OpenCL's tiled GEMMs, the GPU Conv (conv_gemm.cl)
and MatMul/Gemm (gemm.cl), with every tile and with K split, forced
through the env knobs of cl_tiles.c, on PoCL (which is a CPU device, so
strata would otherwise run st_conv_rows there for Conv).

One model holds convs chosen to reach the kernels' edges: a deep conv over
a small image (YOLOv8n's head: 256 -> 80 channels, 3x3, 20x20, fused SiLU),
a batch of 2 with stride, dilation and asymmetric pads whose output is a
strided view (a Concat along W), a grouped 1-D conv, a 1x1 conv over a
strided input view (a Slice with steps), a stem conv (3 -> 16
channels, K = 27, not a multiple of the 16-wide K step), and two convs
over the chunks of a channel Split that fill a channel Concat (inputs
and outputs at channel offsets: the seed report's views); a MatMul over a
transposed view with batches, a deep one (K = 1000) with broadcast batch
dims, and a Gemm with transB, alpha, beta and a broadcast C.  Inputs and
weights are fresh random draws; each run has --sanitize (fresh memory is
poisoned, so an unwritten output element cannot pass) and --no-fallback.

Each run forces STRATA_OPENCL_CONV=tiled with one tile
(STRATA_OPENCL_{CONV,GEMM}_TILE) and one split (..._SPLITK), or the
model's own choice for a 132-compute-unit GPU (STRATA_OPENCL_CUS), and
STRATA_OPENCL_TILE_LOG=1 proves from stderr that every node ran the tile
and split asked for, and that each Conv ran the kernel compiled for its
dtype (st_conv_t*_f32, _f16, _bf16; or the generic one, forced by
STRATA_OPENCL_CONV_GENERIC=1).  Every output element is compared with a
float64 reference computed here: f32 within 1e-5 of the output's max
|ref|, f16 storage within 1e-2 of it, bf16 (8 bits of mantissa, each
input, weight and output rounded) within 3e-2.  Exits 77 without an
OpenCL device.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

SKIP = 77
TILES = ["64x64", "64x32", "32x64", "32x32", "16x64"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def conv_ref(x, w, b, stride, pads, dil, group):
    """Conv in float64 (N, C, spatial...), pads as ONNX lists them."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)])
    M, cg = w.shape[0], w.shape[1]
    ks = w.shape[2:]
    out_sp = [(x.shape[2 + i] - (ks[i] - 1) * dil[i] - 1) // stride[i] + 1 for i in range(nsp)]
    y = np.zeros([x.shape[0], M] + out_sp)
    mg = M // group
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * mg:(g + 1) * mg]
        for tap in np.ndindex(*ks):
            sl = tuple(slice(tap[i] * dil[i], tap[i] * dil[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i]) for i in range(nsp))
            patch = xg[(slice(None), slice(None)) + sl]  # N, cg, out...
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wg[(slice(None), slice(None)) + tap])
    if b is not None:
        y += b.astype(np.float64).reshape([1, M] + [1] * nsp)
    return y


def build(tmp, rng):
    from onnx import TensorProto as T, helper, numpy_helper, save

    def w(*s):
        fan = int(np.prod(s[1:]))
        return (rng.standard_normal(s) / np.sqrt(fan)).astype(np.float32)

    nodes, inits, ins, outs, refs, convs = [], {}, {}, [], {}, []

    def conv(name, xname, xval, wv, bv, stride, pads, dil, group):
        inits["w_" + name] = wv
        args = [xname, "w_" + name]
        if bv is not None:
            inits["b_" + name] = bv
            args.append("b_" + name)
        nodes.append(helper.make_node("Conv", args, ["c_" + name], strides=stride, pads=pads, dilations=dil, group=group,
                                      kernel_shape=list(wv.shape[2:]), name="conv_" + name))
        convs.append(("conv_" + name, int(np.prod(wv.shape[1:]))))
        return conv_ref(xval, wv, bv, stride, pads, dil, group)

    # YOLOv8n's /layers.22/cv3.2/cv3.2.0: deep K, small image, fused SiLU
    x1 = rng.standard_normal((1, 256, 20, 20)).astype(np.float32)
    ins["x1"] = x1
    r = conv("deep", "x1", x1, w(80, 256, 3, 3), w(80, 1)[:, 0], [1, 1], [1, 1, 1, 1], [1, 1], 1)
    nodes += [helper.make_node("Sigmoid", ["c_deep"], ["s_deep"]), helper.make_node("Mul", ["c_deep", "s_deep"], ["deep"])]
    outs.append("deep")
    refs["deep"] = r / (1 + np.exp(-r))
    # batch 2, stride, dilation, asymmetric pads; the two convs fill a
    # Concat along W, so each writes a strided view
    x2 = rng.standard_normal((2, 24, 29, 23)).astype(np.float32)
    ins["x2"] = x2
    ra = conv("edge_a", "x2", x2, w(40, 24, 3, 3), w(40, 1)[:, 0], [2, 2], [1, 2, 0, 1], [2, 2], 1)
    rb = conv("edge_b", "x2", x2, w(40, 24, 3, 3), None, [2, 2], [1, 2, 0, 1], [2, 2], 1)
    nodes.append(helper.make_node("Concat", ["c_edge_a", "c_edge_b"], ["edges"], axis=3))
    outs.append("edges")
    refs["edges"] = np.concatenate([ra, rb], axis=3)
    # grouped 1-D
    x3 = rng.standard_normal((1, 64, 50)).astype(np.float32)
    ins["x3"] = x3
    refs["c_grouped"] = conv("grouped", "x3", x3, w(48, 32, 5), w(48, 1)[:, 0], [1], [2, 2], [1], 2)
    outs.append("c_grouped")
    # 1x1 over a strided view: channels 4..36, every other row and column
    x4 = rng.standard_normal((1, 40, 30, 30)).astype(np.float32)
    ins["x4"] = x4
    inits.update({"st": np.array([4, 0, 0], np.int64), "en": np.array([36, 30, 30], np.int64),
                  "ax": np.array([1, 2, 3], np.int64), "sp": np.array([1, 2, 2], np.int64)})
    nodes.append(helper.make_node("Slice", ["x4", "st", "en", "ax", "sp"], ["x4s"]))
    x4s = x4[:, 4:36, ::2, ::2]
    refs["c_view"] = conv("view", "x4s", x4s, w(32, 32, 1, 1), w(32, 1)[:, 0], [1, 1], [0, 0, 0, 0], [1, 1], 1)
    outs.append("c_view")
    # a stem: 3 -> 16 channels, K = 27
    x5 = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    ins["x5"] = x5
    refs["c_stem"] = conv("stem", "x5", x5, w(16, 3, 3, 3), w(16, 1)[:, 0], [2, 2], [1, 1, 1, 1], [1, 1], 1)
    outs.append("c_stem")
    # a channel Split's chunks (views at channel offsets) into two convs
    # whose outputs fill a channel Concat (views at channel offsets)
    x9 = rng.standard_normal((1, 48, 17, 19)).astype(np.float32)
    ins["x9"] = x9
    inits["split9"] = np.array([16, 32], np.int64)
    nodes.append(helper.make_node("Split", ["x9", "split9"], ["x9a", "x9b"], axis=1))
    rsa = conv("chunk_a", "x9a", x9[:, :16], w(24, 16, 3, 3), w(24, 1)[:, 0], [1, 1], [1, 1, 1, 1], [1, 1], 1)
    rsb = conv("chunk_b", "x9b", x9[:, 16:], w(40, 32, 1, 1), None, [1, 1], [0, 0, 0, 0], [1, 1], 1)
    nodes.append(helper.make_node("Concat", ["c_chunk_a", "x9a", "c_chunk_b"], ["chunks"], axis=1))
    outs.append("chunks")
    refs["chunks"] = np.concatenate([rsa, x9[:, :16].astype(np.float64), rsb], axis=1)

    # MatMul over a transposed view, 3 batches
    x6 = rng.standard_normal((3, 70, 45)).astype(np.float32)
    ins["x6"] = x6
    inits["wm"] = w(70, 90)
    nodes += [helper.make_node("Transpose", ["x6"], ["x6t"], perm=[0, 2, 1]),
              helper.make_node("MatMul", ["x6t", "wm"], ["mm_view"], name="mm_view")]
    refs["mm_view"] = np.matmul(x6.transpose(0, 2, 1).astype(np.float64), inits["wm"].astype(np.float64))
    convs.append(("mm_view", 70))
    outs.append("mm_view")
    # deep K, batch dims broadcast from both sides
    x7 = rng.standard_normal((2, 1, 20, 1000)).astype(np.float32)
    ins["x7"] = x7
    inits["wd"] = w(3, 1000, 24)
    nodes.append(helper.make_node("MatMul", ["x7", "wd"], ["mm_deep"], name="mm_deep"))
    refs["mm_deep"] = np.matmul(x7.astype(np.float64), inits["wd"].astype(np.float64))
    convs.append(("mm_deep", 1000))
    outs.append("mm_deep")
    # Gemm: transB, alpha, beta, C broadcast along rows
    x8 = rng.standard_normal((33, 130)).astype(np.float32)
    ins["x8"] = x8
    inits.update({"wg": w(77, 130), "bg": w(77, 1)[:, 0]})
    nodes.append(helper.make_node("Gemm", ["x8", "wg", "bg"], ["gemm"], transB=1, alpha=0.5, beta=2.0, name="gemm"))
    refs["gemm"] = 0.5 * x8.astype(np.float64) @ inits["wg"].astype(np.float64).T + 2.0 * inits["bg"].astype(np.float64)
    convs.append(("gemm", 130))
    outs.append("gemm")

    g = helper.make_graph(nodes, "tiles",
                          [helper.make_tensor_value_info(n, T.FLOAT, list(v.shape)) for n, v in ins.items()],
                          [helper.make_tensor_value_info(n, T.FLOAT, None) for n in outs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    path = os.path.join(tmp, "tiles.onnx")
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    feeds = []
    for n, v in ins.items():
        f = os.path.join(tmp, n + ".npy")
        np.save(f, v)
        feeds += ["-i", "%s=%s" % (n, f)]
    return path, feeds, refs, convs


def expected_split(k, forced):
    """cl_tiles.c's split for a forced N: whole 16-wide steps, none empty."""
    ks = -(-k // 16)
    n = min(forced, ks)
    steps = -(-ks // n)
    return -(-ks // steps)


LOG = re.compile(r"opencl \w+ '(\S+)': M (\d+), N (\d+), K (\d+), Z (\d+): tile (\S+), split (\d+)")
KLOG = re.compile(r"opencl Conv '(\S+)': kernel (\S+)")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    strata = sys.argv[1]
    rng = np.random.default_rng(int(time.time() * 1e6) % (1 << 32))
    runs = [(t, s, None, "f32") for t in TILES for s in (1, 3)]
    runs = [r + (False,) for r in runs]
    runs += [("64x32", 16, None, "f32", False), ("16x64", 5, None, "f32", False), (None, None, 132, "f32", False),
             (None, None, None, "f32", False), (None, None, 132, "f16", False), (None, None, 132, "bf16", False),
             ("32x32", 4, None, "f16", True), ("64x64", 1, None, "bf16", True), (None, None, 132, "f32", True)]
    # every tile in f16 and bf16, split and not
    runs += [(t, s, None, p, False) for i, t in enumerate(TILES) for p in ("f16", "bf16") for s in (1, 3 + i)]
    worst = {}
    with tempfile.TemporaryDirectory() as tmp:
        path, feeds, refs, convs = build(tmp, rng)
        for tile, split, cus, prec, generic in runs:
            env = dict(os.environ, STRATA_OPENCL_CONV="tiled", STRATA_OPENCL_TILE_LOG="1")
            for k in ("CONV_TILE", "CONV_SPLITK", "GEMM_TILE", "GEMM_SPLITK", "CUS", "FILL", "CONV_GENERIC"):
                env.pop("STRATA_OPENCL_" + k, None)
            if generic:
                env["STRATA_OPENCL_CONV_GENERIC"] = "1"
            for op in ("CONV", "GEMM"):
                if tile:
                    env["STRATA_OPENCL_%s_TILE" % op] = tile
                if split:
                    env["STRATA_OPENCL_%s_SPLITK" % op] = str(split)
            if cus:
                env["STRATA_OPENCL_CUS"] = str(cus)
            what = "tile %s split %s cus %s %s%s" % (tile or "auto", split or "auto", cus or "device", prec,
                                                     " generic" if generic else "")
            out = os.path.join(tmp, "out")
            os.makedirs(out, exist_ok=True)
            r = subprocess.run([strata, "run", path] + feeds + ["--backend", "opencl", "--sanitize", "--no-fallback",
                                                                "--precision", prec, "-o", out],
                               capture_output=True, text=True, env=env, timeout=1200)
            if "opencl: no OpenCL" in r.stdout + r.stderr:
                print("SKIP: no OpenCL device")
                sys.exit(SKIP)
            if r.returncode != 0:
                print(r.stdout + r.stderr)
                fail("strata run (%s) returned %d" % (what, r.returncode))
            seen = {m.group(1): m for m in LOG.finditer(r.stderr)}
            kernels = {m.group(1): m.group(2) for m in KLOG.finditer(r.stderr)}
            choices = []
            for name, k in convs:
                node = next((n for n in seen if name in n), None)
                m = seen.get(node)
                if not m:
                    print(r.stderr)
                    fail("%s: no tile choice logged for node %s (did it run st_conv_gemm or st_conv_rows?)" % (what, name))
                if tile and m.group(6) != tile:
                    fail("%s: node %s ran tile %s" % (what, name, m.group(6)))
                if name.startswith("conv_"):
                    want = "st_conv_t%s%s" % (m.group(6), "" if generic else "_" + prec)
                    if kernels.get(node) != want:
                        fail("%s: node %s ran kernel %s, expected %s" % (what, name, kernels.get(node), want))
                if split and int(m.group(7)) != expected_split(k, split):
                    fail("%s: node %s ran split %s, expected %d" % (what, name, m.group(7), expected_split(k, split)))
                choices.append("%s %s/%s" % (name.replace("conv_", ""), m.group(6), m.group(7)))
            tol = {"f32": 1e-5, "f16": 1e-2, "bf16": 3e-2}[prec]
            errs = []
            for name, ref in refs.items():
                got = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
                if got.shape != ref.shape:
                    fail("%s: output %s has shape %s, expected %s" % (what, name, got.shape, ref.shape))
                scale = np.abs(ref).max()
                err = np.abs(got - ref).max() / scale
                worst[(name, prec)] = max(worst.get((name, prec), 0), err)
                errs.append("%s %.1e" % (name, err))
                if not np.isfinite(got).all() or err > tol:
                    fail("%s: output %s max |out - ref| = %.3g of max|ref| %.3g (tolerance %g of it)" %
                         (what, name, err * scale, scale, tol))
            print("%-36s %s | %s" % (what, ", ".join(choices), ", ".join(errs)))
    print("worst max|out - ref| / max|ref|: " + ", ".join("%s %s %.2e" % (n, p, e) for (n, p), e in sorted(worst.items())))
    print("PASS: %d runs" % len(runs))


if __name__ == "__main__":
    main()
