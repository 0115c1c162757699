#!/usr/bin/env python3
"""channels_last_test.py — a ConvNeXt-style stage as PyTorch exports it
(Transposes to NHWC around LayerNorm and the Linear layers, back to NCHW for
the residual Add and the convolutions), on a backend that stores such values
channels-last (passes/channels_last.c: CUDA), against a float64 reference.

    channels_last_test.py STRATA [BACKEND]

The graph: a 3x3 stem Conv; a block (Transpose, LayerNorm, Linear, GELU
written as Erf, Linear, layer-scale Mul, Transpose back, residual Add); a
7x7 depthwise Conv on the sum; LayerNorm over channels through a Transpose
pair; a 2x2 stride-2 Conv.  Checks, in f32 and then --precision f16:
  - on CUDA, the plan JSON marks the stem's output, the residual sum and
    the depthwise conv's output "channels_last" (so removing the pass, or
    the rule that carries the layout through the Add, fails this test); on
    the other backends, no value, and then the same again with
    STRATA_CHANNELS_LAST=1, which applies the rule there too (the CPU's and
    PoCL's kernels on those strides);
  - every output element against numpy float64 on the same random inputs:
    max |d| / max |ref| <= 1e-5 in f32 (TF32 is off by default) and 1e-2 in
    f16 (every value rounded to f16 between eight ops, two LayerNorms).
Outputs go to a fresh directory, so nothing stale can pass.  Exit 77 when
the backend is not available (CTest reports it skipped).
"""
import math
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
N, CI, C, H, W, HID, CO = 2, 5, 32, 9, 11, 64, 24
rng = np.random.default_rng(29)


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


x = rnd(N, CI, H, W)
w0, b0 = rnd(C, CI, 3, 3, scale=0.3), rnd(C, scale=0.1)
g1, be1 = 1 + rnd(C, scale=0.1), rnd(C, scale=0.1)
w1, b1 = rnd(C, HID, scale=C ** -0.5), rnd(HID, scale=0.1)
w2, b2 = rnd(HID, C, scale=HID ** -0.5), rnd(C, scale=0.1)
gamma = rnd(C, scale=0.5)
wd, bd = rnd(C, 1, 7, 7, scale=0.15), rnd(C, scale=0.1)
g2, be2 = 1 + rnd(C, scale=0.1), rnd(C, scale=0.1)
w3, b3 = rnd(CO, C, 2, 2, scale=0.2), rnd(CO, scale=0.1)
consts = dict(w0=w0, b0=b0, g1=g1, be1=be1, w1=w1, b1=b1, w2=w2, b2=b2, gamma=gamma, wd=wd, bd=bd, g2=g2, be2=be2,
              w3=w3, b3=b3, half=np.array(0.5, np.float32), one=np.array(1.0, np.float32),
              rsqrt2=np.array(1 / math.sqrt(2), np.float32))

nodes = [
    helper.make_node("Conv", ["x", "w0", "b0"], ["s"], pads=[1, 1, 1, 1], name="stem"),
    helper.make_node("Transpose", ["s"], ["s_t"], perm=[0, 2, 3, 1], name="to_nhwc"),
    helper.make_node("LayerNormalization", ["s_t", "g1", "be1"], ["n1"], axis=-1, epsilon=1e-6, name="norm"),
    helper.make_node("MatMul", ["n1", "w1"], ["h0"], name="fc1"),
    helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
    helper.make_node("Mul", ["h1", "rsqrt2"], ["e0"], name="gelu_div"),
    helper.make_node("Erf", ["e0"], ["e1"], name="gelu_erf"),
    helper.make_node("Add", ["e1", "one"], ["e2"], name="gelu_add"),
    helper.make_node("Mul", ["h1", "e2"], ["e3"], name="gelu_mul"),
    helper.make_node("Mul", ["e3", "half"], ["h2"], name="gelu_half"),
    helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
    helper.make_node("Add", ["h3", "b2"], ["h4"], name="fc2_bias"),
    helper.make_node("Mul", ["h4", "gamma"], ["h5"], name="layer_scale"),
    helper.make_node("Transpose", ["h5"], ["h5_t"], perm=[0, 3, 1, 2], name="to_nchw"),
    helper.make_node("Add", ["h5_t", "s"], ["r"], name="residual"),
    helper.make_node("Conv", ["r", "wd", "bd"], ["d"], pads=[3, 3, 3, 3], group=C, name="dw"),
    helper.make_node("Transpose", ["d"], ["d_t"], perm=[0, 2, 3, 1], name="ds_to_nhwc"),
    helper.make_node("LayerNormalization", ["d_t", "g2", "be2"], ["n2"], axis=-1, epsilon=1e-6, name="ds_norm"),
    helper.make_node("Transpose", ["n2"], ["n2_t"], perm=[0, 3, 1, 2], name="ds_to_nchw"),
    helper.make_node("Conv", ["n2_t", "w3", "b3"], ["y"], strides=[2, 2], name="downsample"),
]
g = helper.make_graph(nodes, "convnext_stage", [helper.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                      [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                      [numpy_helper.from_array(v, k) for k, v in consts.items()])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def layernorm(a, g_, b_):
    m = a.mean(-1, keepdims=True)
    v = ((a - m) ** 2).mean(-1, keepdims=True)
    return (a - m) / np.sqrt(v + 1e-6) * g_ + b_


erf = np.vectorize(math.erf)
f = {k: v.astype(np.float64) for k, v in consts.items()}
s = conv(x.astype(np.float64), f["w0"], f["b0"], pad=1)
h1 = layernorm(s.transpose(0, 2, 3, 1), f["g1"], f["be1"]) @ f["w1"] + f["b1"]
h2 = 0.5 * h1 * (1 + erf(h1 / math.sqrt(2)))
r = ((h2 @ f["w2"] + f["b2"]) * f["gamma"]).transpose(0, 3, 1, 2) + s
d = conv(r, f["wd"], f["bd"], pad=3, group=C)
n2 = layernorm(d.transpose(0, 2, 3, 1), f["g2"], f["be2"]).transpose(0, 3, 1, 2)
ref = conv(n2, f["w3"], f["b3"], stride=2)

WANT_CL = {"s", "r", "d"}


def stored_cl(plan, tag, knobs):
    """The values stored channels-last: at least WANT_CL on CUDA or with
    the rule forced on, none otherwise."""
    cl = {v["name"] for v in plan.get("values", []) if v.get("channels_last")}
    want = WANT_CL if BACKEND == "cuda" or knobs else set()
    if not want <= cl or (not want and cl):
        return ["values stored channels-last: %s, expected %s" % (sorted(cl), sorted(want))]
    return []


runs = [("f32", 1e-5, {}), ("f16", 1e-2, {})]
if BACKEND != "cuda":  # the rule forced on: the layout and the kernels' strided paths
    runs += [("f32", 1e-5, {"STRATA_CHANNELS_LAST": "1"}), ("f16", 1e-2, {"STRATA_CHANNELS_LAST": "1"})]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "stage.onnx")
    onnx.save(model, path)
    fails = check(STRATA, BACKEND, path, {"x": x}, {"y": ref}, runs, stored_cl)
sys.exit(1 if fails else 0)
