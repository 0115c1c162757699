#!/usr/bin/env python3
"""residual_test.py — residual Adds after convolutions (passes/fuse_conv_add.c
folds them into the Conv on CUDA), against a float64 reference.

    residual_test.py STRATA [BACKEND] [--save DIR]

--save DIR also writes the model and its input there (for
compute-sanitizer runs on the GPU machine).

The graph, at batch 2 (where CUDA stores f16 conv outputs channels-last):
  h = SiLU(Conv 1x1 (x));  a, b = Split(h)           YOLOv8's C2f block:
  c = SiLU(Conv 3x3 (SiLU(Conv 3x3 (b))))            the residual b is a
  s = b + c                                          channel slice (a view),
  y = SiLU(Conv 1x1 (Concat(a, b, s)))               s a concat slot
  r1 = Relu(Conv 3x3 (y) + y)                        ResNet's identity block
  r2 = Relu(Conv 1x1 s2 (r1) + Conv 1x1 s2 (r1))     ResNet's downsample: the
                                                     later conv takes the earlier
  t = Conv 1x1 (r2) + r2                             no activation; also an output
  u = Conv 1x1 (t) + bias_like                       an Add that broadcasts
                                                     [1, C, 1, 1]: not folded
Outputs y, r1, r2, t and u: every element against numpy float64 on the
same random inputs, max |d| / max |ref| <= 1e-5 in f32 and 1e-2 in f16.
Runs f32 and --precision f16, with the layout rule as the backend has it
and with STRATA_CHANNELS_LAST=all; on CUDA also with the residual left
unfolded (STRATA_CONV_RESIDUAL=0) and with cuDNN's fused graph off
(STRATA_CUDA_CONV_FUSED=0: the residual added after the conv by its own
kernel).  The plan must show the four residual Adds fused on CUDA (unless
STRATA_CONV_RESIDUAL=0), the broadcasting one never into a residual (the
CPU, CUDA and OpenCL fold it as a per-channel affine map instead,
passes/fuse_affine.c), and the residual Adds
running on their own on the other backends.  Exit 77 when the backend is not available
(CTest reports it skipped).
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from conv_ref import conv
from harness import check, kinds

STRATA = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else "cpu"
rng = np.random.default_rng(29)
N, CI, C, H, W = 2, 8, 32, 18, 21  # C: the split's two halves of 16 channels


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


h2 = C // 2
x = rnd(N, CI, H, W)
k = dict(w0=rnd(C, CI, 1, 1, scale=CI ** -0.5), b0=rnd(C, scale=0.1),
         w1=rnd(h2, h2, 3, 3, scale=(9 * h2) ** -0.5), b1=rnd(h2, scale=0.1),
         w2=rnd(h2, h2, 3, 3, scale=(9 * h2) ** -0.5), b2=rnd(h2, scale=0.1),
         w3=rnd(C, 3 * h2, 1, 1, scale=(3 * h2) ** -0.5), b3=rnd(C, scale=0.1),
         w4=rnd(C, C, 3, 3, scale=(9 * C) ** -0.5), b4=rnd(C, scale=0.1),
         w5=rnd(C, C, 1, 1, scale=C ** -0.5), b5=rnd(C, scale=0.1),
         w6=rnd(C, C, 1, 1, scale=C ** -0.5),
         w7=rnd(C, C, 1, 1, scale=C ** -0.5), b7=rnd(C, scale=0.1),
         w8=rnd(C, C, 1, 1, scale=C ** -0.5), bl=rnd(1, C, 1, 1),
         split=np.array([h2, h2], np.int64))


def silu(name, src, out):
    return [helper.make_node("Sigmoid", [src], [out + "_sig"], name=name + "_sig"),
            helper.make_node("Mul", [src, out + "_sig"], [out], name=name + "_silu")]


nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["h0"], name="cv1"), *silu("cv1", "h0", "h"),
         helper.make_node("Split", ["h", "split"], ["a", "b"], axis=1, name="split"),
         helper.make_node("Conv", ["b", "w1", "b1"], ["c0"], pads=[1, 1, 1, 1], name="m_cv1"), *silu("m_cv1", "c0", "c1"),
         helper.make_node("Conv", ["c1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="m_cv2"), *silu("m_cv2", "c2", "c"),
         helper.make_node("Add", ["b", "c"], ["s"], name="add_bottleneck"),
         helper.make_node("Concat", ["a", "b", "s"], ["cat"], axis=1, name="concat"),
         helper.make_node("Conv", ["cat", "w3", "b3"], ["y0"], name="cv2"), *silu("cv2", "y0", "y"),
         helper.make_node("Conv", ["y", "w4", "b4"], ["q0"], pads=[1, 1, 1, 1], name="res_conv"),
         helper.make_node("Add", ["q0", "y"], ["q1"], name="add_identity"),
         helper.make_node("Relu", ["q1"], ["r1"], name="relu_identity"),
         helper.make_node("Conv", ["r1", "w5", "b5"], ["d0"], strides=[2, 2], name="down_main"),
         helper.make_node("Conv", ["r1", "w6"], ["d1"], strides=[2, 2], name="down_skip"),
         helper.make_node("Add", ["d0", "d1"], ["d2"], name="add_down"),
         helper.make_node("Relu", ["d2"], ["r2"], name="relu_down"),
         helper.make_node("Conv", ["r2", "w7", "b7"], ["t0"], name="plain"),
         helper.make_node("Add", ["r2", "t0"], ["t"], name="add_plain"),
         helper.make_node("Conv", ["t", "w8"], ["u0"], name="last"),
         helper.make_node("Add", ["u0", "bl"], ["u"], name="add_broadcast")]
FOLDED = {"add_bottleneck", "add_identity", "add_down", "add_plain"}
outs = ["y", "r1", "r2", "t", "u"]
graph = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outs],
                          [numpy_helper.from_array(v, n) for n, v in k.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def silu_f(v):
    return v / (1 + np.exp(-v))


f = {n: v.astype(np.float64) for n, v in k.items() if n != "split"}
hh = silu_f(conv(x.astype(np.float64), f["w0"], f["b0"]))
a, b = hh[:, :h2], hh[:, h2:]
c = silu_f(conv(silu_f(conv(b, f["w1"], f["b1"], pad=1)), f["w2"], f["b2"], pad=1))
s = b + c
y = silu_f(conv(np.concatenate([a, b, s], axis=1), f["w3"], f["b3"]))
r1 = np.maximum(conv(y, f["w4"], f["b4"], pad=1) + y, 0)
r2 = np.maximum(conv(r1, f["w5"], f["b5"], stride=2) + conv(r1, f["w6"], stride=2), 0)
t = r2 + conv(r2, f["w7"], f["b7"])
u = conv(t, f["w8"]) + f["bl"]
refs = dict(y=y, r1=r1, r2=r2, t=t, u=u)


def want_kinds(tag, knobs):
    folds = BACKEND == "cuda" and knobs.get("STRATA_CONV_RESIDUAL") != "0"
    # the CPU, CUDA and OpenCL fold the broadcasting Add as a per-channel
    # affine map (passes/fuse_affine.c, judged by affine_test.py); Vulkan
    # keeps it
    return {n: ("fused" if folds and n in FOLDED else "exec") for n in FOLDED | ({"add_broadcast"} if BACKEND == "vulkan" else set())}


runs = [(p, tol, cl) for p, tol in (("f32", 1e-5), ("f16", 1e-2)) for cl in ({}, {"STRATA_CHANNELS_LAST": "all"})]
if BACKEND == "cuda":
    runs += [(p, tol, knob) for p, tol in (("f32", 1e-5), ("f16", 1e-2))
             for knob in ({"STRATA_CONV_RESIDUAL": "0"}, {"STRATA_CUDA_CONV_FUSED": "0"})]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "residual.onnx")
    onnx.save(model, path)
    if "--save" in sys.argv:
        keep = sys.argv[sys.argv.index("--save") + 1]
        os.makedirs(keep, exist_ok=True)
        onnx.save(model, os.path.join(keep, "residual.onnx"))
        np.save(os.path.join(keep, "x.npy"), x)
    fails = check(STRATA, BACKEND, path, {"x": x}, refs, runs, kinds(want_kinds))
sys.exit(1 if fails else 0)
