#!/usr/bin/env python3
"""yolo_stem_test.py — the layers of a YOLO-style network whose CUDA kernels
depend on the channels-last layout (passes/channels_last.c), against a
float64 reference.

    yolo_stem_test.py STRATA [BACKEND]

The graph, at batch 2 (where CUDA stores f16 conv outputs channels-last):
  a = SiLU(Conv 3x3 stride 2 of the 3-channel image)   CUDA: the 3-input-channel kernel
  b = SiLU(Conv 3x3 of a)                              CUDA: cuDNN with a KRSC copy of W
  p = MaxPool 5x5, stride 1, pads 2 (b)                CUDA: the channels-last pool
  u = Resize nearest x2 (p)                            CUDA: the channels-last upsample
  c = Concat(u, Resize nearest x2 (b))                 (the upsamples write concat slots)
  y = Conv 1x1 (c)
Two widths: channel counts that are multiples of 8 (16-byte vector paths)
and counts that are not (the element-wise paths).  Runs f32 and
--precision f16, each with the layout rule as the backend has it and with
STRATA_CHANNELS_LAST=all (every conv output channels-last, on any
backend).  On CUDA f16 runs fused by default (conv, bias and activation
as one cuDNN graph: conv b must run so at the multiple-of-8 width), and
again with STRATA_CUDA_CONV_FUSED=0 (no conv may report fused).  Checks every output element against numpy float64 on the same
random inputs: max |d| / max |ref| <= 1e-5 in f32 and 1e-2 in f16.  On
CUDA in f16 the plan must mark a, b and p channels-last.  Outputs are
written to fresh directories, so nothing stale can pass.  Exit 77 when the
backend is not available (CTest reports it skipped).
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from conv_ref import conv
from harness import check

STRATA = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "cpu"
rng = np.random.default_rng(41)


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def build(c1, c2, co, h, w):
    x = rnd(2, 3, h, w)
    consts = dict(w0=rnd(c1, 3, 3, 3, scale=0.3), b0=rnd(c1, scale=0.1), w1=rnd(c2, c1, 3, 3, scale=(9 * c1) ** -0.5),
                  b1=rnd(c2, scale=0.1), w2=rnd(co, 2 * c2, 1, 1, scale=(2 * c2) ** -0.5), b2=rnd(co, scale=0.1),
                  scales=np.array([1, 1, 2, 2], np.float32))
    rs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["a0"], pads=[1, 1, 1, 1], strides=[2, 2], name="stem"),
        helper.make_node("Sigmoid", ["a0"], ["a1"], name="stem_sig"),
        helper.make_node("Mul", ["a0", "a1"], ["a"], name="stem_silu"),
        helper.make_node("Conv", ["a", "w1", "b1"], ["b0_"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Sigmoid", ["b0_"], ["b1_"], name="conv_sig"),
        helper.make_node("Mul", ["b0_", "b1_"], ["b"], name="conv_silu"),
        helper.make_node("MaxPool", ["b"], ["p"], kernel_shape=[5, 5], pads=[2, 2, 2, 2], name="pool"),
        helper.make_node("Resize", ["p", "", "scales"], ["u"], name="up_p", **rs),
        helper.make_node("Resize", ["b", "", "scales"], ["v"], name="up_b", **rs),
        helper.make_node("Concat", ["u", "v"], ["c"], axis=1, name="cat"),
        helper.make_node("Conv", ["c", "w2", "b2"], ["y"], name="head"),
    ]
    g = helper.make_graph(nodes, "yolo_stem", [helper.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                          [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), x, consts


def silu(v):
    return v / (1 + np.exp(-v))


def maxpool5(a):
    n, c, h, w = a.shape
    p = np.pad(a, ((0, 0), (0, 0), (2, 2), (2, 2)), constant_values=-np.inf)
    return np.max([p[:, :, i:i + h, j:j + w] for i in range(5) for j in range(5)], axis=0)


def reference(x, k):
    f = {n: v.astype(np.float64) for n, v in k.items()}
    a = silu(conv(x.astype(np.float64), f["w0"], f["b0"], pad=1, stride=2))
    b = silu(conv(a, f["w1"], f["b1"], pad=1))
    p = maxpool5(b)
    up = lambda t: t.repeat(2, axis=2).repeat(2, axis=3)
    return conv(np.concatenate([up(p), up(b)], axis=1), f["w2"], f["b2"])


def stored_cl(plan, tag, knobs):
    """a, b and p stored channels-last where the rule is forced, and on
    CUDA in f16 (its layout rule at batch 2)."""
    cl = {v["name"] for v in plan.get("values", []) if v.get("channels_last")}
    want = {"a", "b", "p"} if "STRATA_CHANNELS_LAST" in knobs or (BACKEND == "cuda" and tag.split()[1] == "f16") else set()
    return [] if want <= cl else ["values stored channels-last: %s, expected at least %s" % (sorted(cl), sorted(want))]


def fused_convs(width):
    """On CUDA f16, conv b (3x3, bias, SiLU, channels-last in and out) runs
    as one cuDNN graph (conv_fused.cu) where its channels are 16-byte runs;
    the 3-channel stem has its own kernel and the head writes the NCHW
    graph output.  With STRATA_CUDA_CONV_FUSED=0 no conv may say fused."""
    def judge(stderr, tag, knobs):
        n = stderr.count("fused with its bias and activation")
        if knobs.get("STRATA_CUDA_CONV_FUSED") == "0":
            return ["%d convs fused although STRATA_CUDA_CONV_FUSED=0" % n] if n else []
        if BACKEND == "cuda" and tag.split()[1] == "f16" and width == "x8" and n < 1:
            return ["conv b not fused with its bias and SiLU: %s" % stderr.strip()[-300:]]
        return []
    return judge


runs = [(p, t, dict(f, STRATA_CUDA_VERBOSE="1")) for p, t in (("f32", 1e-5), ("f16", 1e-2))
        for f in ({}, {"STRATA_CHANNELS_LAST": "all"})]
if BACKEND == "cuda":  # unfused: conv, then bias and SiLU as a separate pass
    runs += [("f16", 1e-2, dict(f, STRATA_CUDA_VERBOSE="1", STRATA_CUDA_CONV_FUSED="0"))
             for f in ({}, {"STRATA_CHANNELS_LAST": "all"})]
fails = 0
with tempfile.TemporaryDirectory() as tmp:
    for width, dims in (("x8", (16, 32, 24, 22, 26)), ("odd", (12, 20, 7, 17, 23))):
        model, x, k = build(*dims)
        d = os.path.join(tmp, width)
        os.makedirs(d)
        path = os.path.join(d, "stem.onnx")
        onnx.save(model, path)
        fails += check(STRATA, BACKEND, path, {"x": x}, {"y": reference(x, k)}, runs, stored_cl, fused_convs(width),
                       tag_prefix=width + " ")
sys.exit(1 if fails else 0)
