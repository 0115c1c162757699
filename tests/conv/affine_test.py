#!/usr/bin/env python3
"""affine_test.py — the affine ops around a Conv's activation
(passes/fuse_affine.c folds them into the Conv's epilogue on the backends
that declare ST_CAP_CONV_AFFINE: the CPU, CUDA and OpenCL), against a
float64 reference.

    affine_test.py STRATA [BACKEND]

The graph, at batch 2, as PP-OCR's LCNet and tf2onnx exports write it:
  e = HardSwish(Mul(s1) Add(t1) BN(Conv 3x3 s2 (x))) * sc + tc
        BatchNormalization, per-channel Mul and Add before the activation,
        HardSwish spelled Add(3) Clip(0, 6) Mul Div(6), scalar Mul and Add
        after it
  d = Relu((DWConv 3x3 (e) - k1) / k2) * s2    Sub and Div by per-channel
                                               constants; d is an output
  q = Conv 1x1 (d) * s3 + t3                   no activation: all before
  cat = Concat(q, d)                           q written into a concat slot
  z = Conv 1x1 (d) * spatial                   a [1, 1, H, W] constant: not
                                               per-channel, never folded
Outputs d, cat and z: every element against numpy float64 on the same
random inputs, max |d| / max |ref| <= 1e-5 in f32 and 1e-2 in f16.  Runs
f32 and --precision f16, each also with STRATA_CHANNELS_LAST=all and with
the fold off (STRATA_CONV_AFFINE=0); on CUDA also with cuDNN's fused
graph off.  The plan must show the chain's ops fused on the backends that
fold it, unless STRATA_CONV_AFFINE=0, and the spatial Mul never.  Exit 77
when the backend is not available (CTest reports it skipped).
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
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "cpu"
FOLDS = BACKEND in ("cpu", "cuda", "opencl")
rng = np.random.default_rng(31)
N, CI, C, H, W = 2, 6, 24, 17, 19
OH, OW = (H + 1) // 2, (W + 1) // 2


def rnd(*shape, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(np.float32)


x = rnd(N, CI, H, W)
k = dict(w0=rnd(C, CI, 3, 3, scale=(9 * CI) ** -0.5),
         g=rnd(C, scale=0.2, shift=1.0), beta=rnd(C, scale=0.1), mean=rnd(C, scale=0.1),
         var=(rng.random(C) + 0.5).astype(np.float32),
         s1=rnd(1, C, 1, 1, scale=0.2, shift=1.0), t1=rnd(C, 1, 1, scale=0.2),
         three=np.array(3.0, np.float32), zero=np.array(0.0, np.float32), six=np.array(6.0, np.float32),
         sc=np.array([1.3], np.float32), tc=np.array(-0.2, np.float32),
         wd=rnd(C, 1, 3, 3, scale=0.3), bd=rnd(C, scale=0.1),
         k1=rnd(C, 1, 1, scale=0.1), k2=(rng.random((C, 1, 1)) + 0.5).astype(np.float32),
         s2=rnd(1, C, 1, 1, scale=0.2, shift=1.0),
         wq=rnd(C, C, 1, 1, scale=C ** -0.5), bq=rnd(C, scale=0.1),
         s3=rnd(C, 1, 1, scale=0.2, shift=1.0), t3=rnd(C, 1, 1, scale=0.2),
         wz=rnd(C, C, 1, 1, scale=C ** -0.5), spatial=rnd(1, 1, OH, OW))

nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], name="conv0"),
         helper.make_node("BatchNormalization", ["c0", "g", "beta", "mean", "var"], ["bn"], epsilon=1e-5, name="bn0"),
         helper.make_node("Mul", ["s1", "bn"], ["m1"], name="mul_pre"),
         helper.make_node("Add", ["m1", "t1"], ["a1"], name="add_pre"),
         helper.make_node("Add", ["a1", "three"], ["ha"], name="hs_add"),
         helper.make_node("Clip", ["ha", "zero", "six"], ["hc"], name="hs_clip"),
         helper.make_node("Mul", ["a1", "hc"], ["hm"], name="hs_mul"),
         helper.make_node("Div", ["hm", "six"], ["h"], name="hs_div"),
         helper.make_node("Mul", ["h", "sc"], ["p1"], name="mul_post"),
         helper.make_node("Add", ["p1", "tc"], ["e"], name="add_post"),
         helper.make_node("Conv", ["e", "wd", "bd"], ["d0"], group=C, pads=[1, 1, 1, 1], name="dw"),
         helper.make_node("Sub", ["d0", "k1"], ["d1"], name="sub_pre"),
         helper.make_node("Div", ["d1", "k2"], ["d2"], name="div_pre"),
         helper.make_node("Relu", ["d2"], ["d3"], name="relu"),
         helper.make_node("Mul", ["d3", "s2"], ["d"], name="mul_post2"),
         helper.make_node("Conv", ["d", "wq", "bq"], ["q0"], name="pw"),
         helper.make_node("Mul", ["q0", "s3"], ["q1"], name="mul_q"),
         helper.make_node("Add", ["t3", "q1"], ["q"], name="add_q"),
         helper.make_node("Concat", ["q", "d"], ["cat"], axis=1, name="cat"),
         helper.make_node("Conv", ["d", "wz"], ["z0"], name="zconv"),
         helper.make_node("Mul", ["z0", "spatial"], ["z"], name="mul_spatial")]
FOLDED = {"bn0", "mul_pre", "add_pre", "hs_add", "hs_clip", "hs_mul", "hs_div", "mul_post", "add_post",
          "sub_pre", "div_pre", "relu", "mul_post2", "mul_q", "add_q"}
# kept as written when the fold is off (the HardSwish and Relu still fold
# into their Conv as its activation: passes/fuse.c)
UNFOLDED = {"bn0", "mul_pre", "add_pre", "mul_post", "add_post", "sub_pre", "div_pre", "mul_post2", "mul_q", "add_q"}
outs = ["d", "cat", "z"]
graph = helper.make_graph(nodes, "affine", [helper.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outs],
                          [numpy_helper.from_array(v, n) for n, v in k.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

f = {n: v.astype(np.float64) for n, v in k.items()}
c0 = conv(x.astype(np.float64), f["w0"], stride=2, pad=1)
bn = (c0 - f["mean"].reshape(1, C, 1, 1)) / np.sqrt(f["var"].reshape(1, C, 1, 1) + 1e-5) * f["g"].reshape(1, C, 1, 1) + \
    f["beta"].reshape(1, C, 1, 1)
a1 = bn * f["s1"] + f["t1"]
e = a1 * np.clip(a1 + 3, 0, 6) / 6 * f["sc"] + f["tc"]
d = np.maximum((conv(e, f["wd"], f["bd"], pad=1, group=C) - f["k1"]) / f["k2"], 0) * f["s2"]
q = conv(d, f["wq"], f["bq"]) * f["s3"] + f["t3"]
refs = dict(d=d, cat=np.concatenate([q, d], axis=1), z=conv(d, f["wz"]) * f["spatial"])


def want_kinds(tag, knobs):
    off = knobs.get("STRATA_CONV_AFFINE") == "0"
    if FOLDS and not off:
        want = {n: "fused" for n in FOLDED}
    else:
        want = {n: "exec" for n in UNFOLDED}
    want["mul_spatial"] = "exec"
    return want


runs = [(p, tol, kn) for p, tol in (("f32", 1e-5), ("f16", 1e-2))
        for kn in ({}, {"STRATA_CHANNELS_LAST": "all"}, {"STRATA_CONV_AFFINE": "0"})]
if BACKEND == "cuda":
    runs += [(p, tol, {"STRATA_CUDA_CONV_FUSED": "0"}) for p, tol in (("f32", 1e-5), ("f16", 1e-2))]
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "affine.onnx")
    onnx.save(model, path)
    fails = check(STRATA, BACKEND, path, {"x": x}, refs, runs, kinds(want_kinds))
sys.exit(1 if fails else 0)
