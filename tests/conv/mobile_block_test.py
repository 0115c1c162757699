#!/usr/bin/env python3
"""mobile_block_test.py — a MobileNetV3/EfficientNet-style block on
channels-last values (passes/channels_last.c), against a float64 reference.

    mobile_block_test.py STRATA [BACKEND]

The graph, at batch 2 (where CUDA stores f16 conv outputs channels-last):
  e = HardSwish(Conv 1x1 expand (x))
  d = SiLU(depthwise Conv 3x3, stride 2 (e))         a depthwise conv that is not stride 1
  s = HardSigmoid(Conv 1x1 (Relu(Conv 1x1 (GlobalAveragePool(d)))))   squeeze-excite
  y = Conv 1x1 project (d * s) + depthwise Conv 5x5 (the same d * s)
  g = GlobalMaxPool(y)
Runs f32 and --precision f16, each with the layout rule as the backend
has it and with STRATA_CHANNELS_LAST=all (every conv output
channels-last, on any backend); on CUDA also with
STRATA_CUDA_CL_DW_POOL=0 (the channels-last depthwise and global-pool
kernels, on by default, turned off: the older plane kernels on the same
strides).  Every element of y and g against numpy float64 on the same
random inputs: max |d| / max |ref| <= 1e-5 in f32 and 1e-2 in f16.
Outputs go to fresh directories.  Exit 77 when the backend is not
available (CTest reports it skipped).
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
rng = np.random.default_rng(43)
N, CI, CE, CS, CO, H, W = 2, 16, 48, 12, 24, 19, 22


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


x = rnd(N, CI, H, W)
k = dict(we=rnd(CE, CI, 1, 1, scale=CI ** -0.5), be=rnd(CE, scale=0.1),
         wd=rnd(CE, 1, 3, 3, scale=0.3), bd=rnd(CE, scale=0.1),
         w1=rnd(CS, CE, 1, 1, scale=CE ** -0.5), b1=rnd(CS, scale=0.1),
         w2=rnd(CE, CS, 1, 1, scale=CS ** -0.5), b2=rnd(CE, scale=0.1),
         wp=rnd(CO, CE, 1, 1, scale=CE ** -0.5), bp=rnd(CO, scale=0.1),
         wq=rnd(CE, 1, 5, 5, scale=0.2), bq=rnd(CE, scale=0.1),
         wr=rnd(CO, CE, 1, 1, scale=CE ** -0.5))
nodes = [
    helper.make_node("Conv", ["x", "we", "be"], ["e0"], name="expand"),
    helper.make_node("HardSwish", ["e0"], ["e"], name="expand_act"),
    helper.make_node("Conv", ["e", "wd", "bd"], ["d0"], group=CE, strides=[2, 2], pads=[1, 1, 1, 1], name="dw"),
    helper.make_node("Sigmoid", ["d0"], ["d1"], name="dw_sig"),
    helper.make_node("Mul", ["d0", "d1"], ["d"], name="dw_silu"),
    helper.make_node("GlobalAveragePool", ["d"], ["p"], name="squeeze"),
    helper.make_node("Conv", ["p", "w1", "b1"], ["q0"], name="se_reduce"),
    helper.make_node("Relu", ["q0"], ["q"], name="se_relu"),
    helper.make_node("Conv", ["q", "w2", "b2"], ["r0"], name="se_expand"),
    helper.make_node("HardSigmoid", ["r0"], ["s"], alpha=1.0 / 6, beta=0.5, name="se_gate"),
    helper.make_node("Mul", ["d", "s"], ["m"], name="excite"),
    helper.make_node("Conv", ["m", "wp", "bp"], ["y0"], name="project"),
    helper.make_node("Conv", ["m", "wq", "bq"], ["z0"], group=CE, pads=[2, 2, 2, 2], name="dw5"),
    helper.make_node("Conv", ["z0", "wr"], ["z"], name="dw5_project"),
    helper.make_node("Add", ["y0", "z"], ["y"], name="sum"),
    helper.make_node("GlobalMaxPool", ["y"], ["g"], name="gmax"),
]
graph = helper.make_graph(nodes, "mobile_block", [helper.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None), helper.make_tensor_value_info("g", TP.FLOAT, None)],
                          [numpy_helper.from_array(v, n) for n, v in k.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


f = {n: v.astype(np.float64) for n, v in k.items()}
e0 = conv(x.astype(np.float64), f["we"], f["be"])
e = e0 * np.clip(e0 + 3, 0, 6) / 6
d0 = conv(e, f["wd"], f["bd"], pad=1, stride=2, group=CE)
d = d0 / (1 + np.exp(-d0))
q = np.maximum(conv(d.mean(axis=(2, 3), keepdims=True), f["w1"], f["b1"]), 0)
s = np.clip(conv(q, f["w2"], f["b2"]) / 6 + 0.5, 0, 1)
m = d * s
y_ref = conv(m, f["wp"], f["bp"]) + conv(conv(m, f["wq"], f["bq"], pad=2, group=CE), f["wr"])
g_ref = y_ref.max(axis=(2, 3), keepdims=True)

runs = [(p, t, c) for p, t in (("f32", 1e-5), ("f16", 1e-2)) for c in ({}, {"STRATA_CHANNELS_LAST": "all"})]
if BACKEND == "cuda":
    runs += [("f32", 1e-5, {"STRATA_CHANNELS_LAST": "all", "STRATA_CUDA_CL_DW_POOL": "0"}),
             ("f16", 1e-2, {"STRATA_CUDA_CL_DW_POOL": "0"})]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "block.onnx")
    onnx.save(model, path)
    fails = check(STRATA, BACKEND, path, {"x": x}, {"y": y_ref, "g": g_ref}, runs)
sys.exit(1 if fails else 0)
