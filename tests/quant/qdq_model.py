#!/usr/bin/python3
"""Writes a small QDQ model the way ONNX Runtime's quantizer lays one out.

  qdq_model.py OUT.onnx SEED

Float ops bracketed by DequantizeLinear / QuantizeLinear: Conv (weights
int8 per channel, int32 bias) -> SiLU (Sigmoid, Mul, each with its own Q/DQ),
MaxPool and Resize (nearest) on one scale, Split, Concat of inputs with
different scales, a residual Add, Conv per tensor with a float bias, MatMul
with per-column int8 weights, a float tail (Softmax) after a last DQ, and
a classifier head: Reshape, then Gemm (transB, int8 weights per output
channel, int32 bias) with its own Q/DQ, and a second Gemm after it (W not
transposed, per tensor).  A Sigmoid gate after the residual Add (a table
of its own) multiplies the other half (QLinearMul) before the Concat.
Scales come from a float run of the same layers on a random input, so
values spread over the 8-bit range as in a calibrated model.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, seed = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(seed)
nodes, inits = [], []
cnt = [0]


def name(p):
    cnt[0] += 1
    return "%s_%d" % (p, cnt[0])


def const(arr, p="c"):
    n = name(p)
    inits.append(numpy_helper.from_array(np.asarray(arr), n))
    return n


def qdq(x, scale, zp):
    """x -> Q -> DQ; returns (q, dq)."""
    s, z = const(np.float32(scale), "s"), const(np.uint8(zp), "z")
    q, d = name("q"), name("dq")
    nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [q]))
    nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [d]))
    return d


def params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    return s, int(np.clip(np.rint(-lo / s), 0, 255))


def wq(w, per_channel):
    """int8 symmetric weights -> DQ output name, and the scales."""
    if per_channel:
        m = np.abs(w.reshape(w.shape[0], -1)).max(1)
        s = (np.maximum(m, 1e-8) / 127).astype(np.float32)
        q = np.clip(np.rint(w / s.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127).astype(np.int8)
        d = name("wdq")
        nodes.append(helper.make_node("DequantizeLinear", [const(q, "w"), const(s, "ws"), const(np.zeros(len(s), np.int8), "wz")], [d], axis=0))
    else:
        s = np.float32(max(np.abs(w).max(), 1e-8) / 127)
        q = np.clip(np.rint(w / s), -127, 127).astype(np.int8)
        d = name("wdq")
        nodes.append(helper.make_node("DequantizeLinear", [const(q, "w"), const(s, "ws"), const(np.int8(0), "wz")], [d]))
    return d, s


# float reference run, to pick scales
def conv_f(x, w, b, pad):
    n, c, h, ww = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, m, h, ww), np.float32)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + h, j:j + ww], w[:, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


x_f = rng.uniform(-1, 1, (1, 8, 12, 12)).astype(np.float32)
g_in = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])
s, z = params(-1, 1)
cur = qdq("x", s, z)
cur_f = x_f


scale_of = {cur: s}


def conv(cur, cur_f, m, per_channel, int_bias, silu=True):
    c = cur_f.shape[1]
    w = (rng.standard_normal((m, c, 3, 3)) * (0.6 / np.sqrt(c))).astype(np.float32)
    b = (rng.standard_normal(m) * 0.2).astype(np.float32)
    y_f = conv_f(cur_f, w, b, 1)
    wd, ws = wq(w, per_channel)
    if int_bias:
        bs = (scale_of[cur] * ws).astype(np.float32)
        bq = np.rint(b / bs).astype(np.int32)
        bd = name("bdq")
        nodes.append(helper.make_node("DequantizeLinear", [const(bq, "b"), const(bs.reshape(-1) if per_channel else np.float32(bs), "bs"),
                                                          const(np.zeros(m, np.int32) if per_channel else np.int32(0), "bz")], [bd],
                                      **({"axis": 0} if per_channel else {})))
    else:
        bd = const(b, "bf")
    y = name("conv")
    nodes.append(helper.make_node("Conv", [cur, wd, bd], [y], pads=[1, 1, 1, 1], kernel_shape=[3, 3]))
    s, z = params(y_f.min(), y_f.max())
    yd = qdq(y, s, z)
    scale_of[yd] = s
    if not silu:
        return yd, y_f
    sg_f = 1 / (1 + np.exp(-y_f))
    sg = name("sig")
    nodes.append(helper.make_node("Sigmoid", [yd], [sg]))
    sd = qdq(sg, *params(0, 1))
    o_f = y_f * sg_f
    o = name("mul")
    nodes.append(helper.make_node("Mul", [yd, sd], [o]))
    s2, z2 = params(o_f.min(), o_f.max())
    od = qdq(o, s2, z2)
    scale_of[od] = s2
    return od, o_f


a, a_f = conv(cur, cur_f, 16, True, True)
# Split -> one half through a conv, residual Add, Concat with different scales
h1, h2 = name("split"), name("split")
nodes.append(helper.make_node("Split", [a, const(np.array([8, 8], np.int64), "sp")], [h1, h2], axis=1))
h1d = qdq(h1, scale_of[a], params(a_f.min(), a_f.max())[1])
h2d = qdq(h2, scale_of[a], params(a_f.min(), a_f.max())[1])
scale_of[h1d] = scale_of[h2d] = scale_of[a]
b, b_f = conv(h2d, a_f[:, 8:], 8, False, False)
r_f = b_f + a_f[:, 8:]
r = name("add")
nodes.append(helper.make_node("Add", [b, h2d], [r]))
rd = qdq(r, *params(r_f.min(), r_f.max()))
scale_of[rd] = params(r_f.min(), r_f.max())[0]
# a gate not after a conv (its own table, QLinearLookup) times the other
# half (two sources: QLinearMul)
gt = name("sig")
nodes.append(helper.make_node("Sigmoid", [rd], [gt]))
gtd = qdq(gt, *params(0, 1))
g_f = a_f[:, :8] / (1 + np.exp(-r_f))
gm2 = name("mul")
nodes.append(helper.make_node("Mul", [gtd, h1d], [gm2]))
gmd2 = qdq(gm2, *params(g_f.min(), g_f.max()))
c_f = np.concatenate([a_f[:, :8], a_f[:, 8:], g_f], 1)
cc = name("concat")
nodes.append(helper.make_node("Concat", [h1d, h2d, gmd2], [cc], axis=1))
ccd = qdq(cc, *params(c_f.min(), c_f.max()))
scale_of[ccd] = params(c_f.min(), c_f.max())[0]
# MaxPool and Resize on one scale
mp = name("maxpool")
nodes.append(helper.make_node("MaxPool", [ccd], [mp], kernel_shape=[2, 2], strides=[2, 2]))
ps, pz = params(c_f.min(), c_f.max())
mpd = qdq(mp, ps, pz)
scale_of[mpd] = ps
mp_f = c_f.reshape(1, 24, 6, 2, 6, 2).max((3, 5))
rs = name("resize")
nodes.append(helper.make_node("Resize", [mpd, "", const(np.array([1, 1, 2, 2], np.float32), "sc")], [rs], mode="nearest"))
rsd = qdq(rs, ps, pz)
scale_of[rsd] = ps
rs_f = mp_f.repeat(2, 2).repeat(2, 3)
e, e_f = conv(rsd, rs_f, 8, True, True)
# MatMul over the last axis with per-column weights: [1, 8, 12, 12] x [12, 10]
wm = (rng.standard_normal((12, 10)) * 0.3).astype(np.float32)
wms = (np.abs(wm).max(0) / 127).astype(np.float32)
wmq = np.clip(np.rint(wm / wms), -127, 127).astype(np.int8)
wmd = name("wdq")
nodes.append(helper.make_node("DequantizeLinear", [const(wmq, "w"), const(wms, "ws"), const(np.zeros(10, np.int8), "wz")], [wmd], axis=1))
mm_f = e_f @ wm
mm = name("matmul")
nodes.append(helper.make_node("MatMul", [e, wmd], [mm]))
mmd = qdq(mm, *params(mm_f.min(), mm_f.max()))
nodes.append(helper.make_node("Softmax", [mmd], ["y"], axis=-1))
nodes.append(helper.make_node("Identity", [mmd], ["logits"]))
# a classifier head: Reshape on the bytes, then Gemm (transB, weights int8
# per output channel, an int32 bias at a_scale * w_scale) as ORT's quantizer
# writes a Linear layer
mm_s, mm_z = params(mm_f.min(), mm_f.max())
rsh = name("reshape")
nodes.append(helper.make_node("Reshape", [mmd, const(np.array([8, 120], np.int64), "shape")], [rsh]))
rshd = qdq(rsh, mm_s, mm_z)
hf = mm_f.reshape(8, 120)
wg = (rng.standard_normal((16, 120)) * 0.15).astype(np.float32)
bg = (rng.standard_normal(16) * 0.3).astype(np.float32)
wgd, wgs = wq(wg, True)
bgs = (mm_s * wgs).astype(np.float32)
bgd = name("bdq")
nodes.append(helper.make_node("DequantizeLinear", [const(np.rint(bg / bgs).astype(np.int32), "b"), const(bgs, "bs"),
                                                  const(np.zeros(16, np.int32), "bz")], [bgd], axis=0))
gm_f = hf @ wg.T + bg
gm = name("gemm")
nodes.append(helper.make_node("Gemm", [rshd, wgd, bgd], [gm], transB=1))
gmd = qdq(gm, *params(gm_f.min(), gm_f.max()))
nodes.append(helper.make_node("Identity", [gmd], ["head"]))
# a second head: W not transposed ([k, n]), one weight scale, int32 bias
hf2 = np.rint(gm_f / params(gm_f.min(), gm_f.max())[0]) * params(gm_f.min(), gm_f.max())[0]
wg2 = (rng.standard_normal((16, 4)) * 0.3).astype(np.float32)
bg2 = (rng.standard_normal(4) * 0.3).astype(np.float32)
wgd2, wgs2 = wq(wg2, False)
bgs2 = np.float32(params(gm_f.min(), gm_f.max())[0] * wgs2)
bgd2 = name("bdq")
nodes.append(helper.make_node("DequantizeLinear", [const(np.rint(bg2 / bgs2).astype(np.int32), "b"), const(bgs2, "bs"),
                                                  const(np.int32(0), "bz")], [bgd2]))
g2_f = hf2 @ wg2 + bg2
gm2h = name("gemm")
nodes.append(helper.make_node("Gemm", [gmd, wgd2, bgd2], [gm2h]))
gmd2h = qdq(gm2h, *params(g2_f.min(), g2_f.max()))
nodes.append(helper.make_node("Identity", [gmd2h], ["head2"]))
g_out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 10]), helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 8, 12, 10]),
         helper.make_tensor_value_info("head", TensorProto.FLOAT, [8, 16]), helper.make_tensor_value_info("head2", TensorProto.FLOAT, [8, 4])]
graph = helper.make_graph(nodes, "qdq", [g_in], g_out, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, out)
np.save(out.replace(".onnx", "_x.npy"), x_f)
