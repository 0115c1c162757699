#!/usr/bin/python3
"""The integer ops end to end: every output element equal to an int64 numpy reference.

  quant_ops_test.py STRATA [CASES]

Builds one model per op (ConvInteger, QLinearConv, MatMulInteger,
QLinearMatMul, DynamicQuantizeLinear) holding CASES independent random nodes: 1 to 3 spatial
dims, kernels, strides, dilations, pads (explicit and auto_pad), groups
(depthwise included), channel counts off the kernel's quads of 4, outputs
narrow and wide (the conv's two store paths), the four signedness
combinations, zero points absent / per tensor / per channel, row or column
at the types' extremes, QLinear scales per tensor and per channel, int32
bias, matmul batch broadcasting and 1-D operands; DynamicQuantizeLinear
over sizes across its chunks with NaN, -0 and inf in the input.  Weights are initializers
(as in a quantized model); X, A and B are inputs, drawn at random.  The
reference sums (x - x_zero_point) * (w - w_zero_point) in int64, wraps to
int32 as the ops define, and requantizes in float32 exactly as the spec
writes it (round half to even, saturate).  Runs strata on 1 and 2 threads
and requires exact equality.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(15)
NP_OF = {"u8": np.uint8, "s8": np.int8}
TP_OF = {"u8": TensorProto.UINT8, "s8": TensorProto.INT8}
RANGE = {"u8": (0, 255), "s8": (-128, 127)}
TP_OF_NP = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32}


def draw(t, shape):
    lo, hi = RANGE[t]
    v = RNG.integers(lo, hi + 1, size=shape)
    # some extremes
    m = RNG.random(size=shape)
    v = np.where(m < 0.06, lo, np.where(m > 0.94, hi, v))
    return v.astype(NP_OF[t])


def draw_zp(t, n):
    lo, hi = RANGE[t]
    pick = RNG.integers(0, 4, size=n)
    v = np.where(pick == 0, lo, np.where(pick == 1, hi, RNG.integers(lo, hi + 1, size=n)))
    return v.astype(NP_OF[t])


def wrap32(v):
    return ((v.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def requant(acc32, mult, zp, t):
    lo, hi = RANGE[t]
    f = acc32.astype(np.float32) * mult.astype(np.float32)
    r = np.rint(f)
    r = np.clip(r, np.float32(lo - int(zp)), np.float32(hi - int(zp)))
    return (r.astype(np.int64) + int(zp)).astype(NP_OF[t])


def conv_ref(x, w, xz, wz, strides, dil, pads, group):
    """int64 conv of (x - xz) and (w - wz[m]), the pad holding xz."""
    nsp = x.ndim - 2
    xi = x.astype(np.int64) - int(xz)
    pw = [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)]
    xi = np.pad(xi, pw)
    wi = w.astype(np.int64) - wz.astype(np.int64).reshape((-1,) + (1,) * (nsp + 1))
    n, c = x.shape[:2]
    m = w.shape[0]
    ks = w.shape[2:]
    out = [(xi.shape[2 + i] - ((ks[i] - 1) * dil[i] + 1)) // strides[i] + 1 for i in range(nsp)]
    y = np.zeros((n, m) + tuple(out), np.int64)
    cg, mg = c // group, m // group
    for tap in np.ndindex(*ks):
        sl = tuple(slice(tap[i] * dil[i], tap[i] * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(nsp))
        for g in range(group):
            xs = xi[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            ws = wi[(slice(g * mg, (g + 1) * mg), slice(None)) + tap]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", xs, ws)
    return y


def same_pads(insz, k, s, d, upper):
    pads_b, pads_e = [], []
    for i in range(len(insz)):
        out = (insz[i] + s[i] - 1) // s[i]
        total = max((out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - insz[i], 0)
        b = total // 2 if upper else total - total // 2
        pads_b.append(b)
        pads_e.append(total - b)
    return pads_b + pads_e


class Model:
    def __init__(self):
        self.nodes, self.inits, self.inputs, self.outputs, self.feeds, self.refs = [], [], [], [], {}, {}

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def inp(self, name, arr):
        self.inputs.append(helper.make_tensor_value_info(name, TP_OF_NP[arr.dtype], arr.shape))
        self.feeds[name] = arr
        return name

    def out(self, name, ref):
        self.outputs.append(helper.make_tensor_value_info(name, TP_OF_NP[ref.dtype], None))
        self.refs[name] = ref
        return name

    def save(self, path):
        g = helper.make_graph(self.nodes, "quant", self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(m, path)


def conv_case(mdl, i, qlinear):
    nsp = [1, 2, 2, 2, 3][RNG.integers(0, 5)]
    group = [1, 1, 1, 2, 3, 0][RNG.integers(0, 6)]
    cg = int(RNG.choice([1, 2, 3, 4, 5, 7, 8, 9, 16]))
    mg = int(RNG.choice([1, 3, 8, 9, 16, 17]))
    if group == 0:  # depthwise
        group, cg, mg = int(RNG.integers(2, 6)), 1, 1
    c, m = cg * group, mg * group
    k = [int(RNG.integers(1, 4 if nsp > 1 else 6)) for _ in range(nsp)]
    s = [int(RNG.integers(1, 4)) for _ in range(nsp)]
    d = [int(RNG.integers(1, 3)) for _ in range(nsp)]
    wide = nsp < 3 and RNG.random() < 0.3
    insz = [int(RNG.integers(1, 9 if nsp == 3 else 14)) for _ in range(nsp)]
    if wide:
        insz[-1] = int(RNG.integers(60, 140))
    auto = ["NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"][RNG.integers(0, 6)]
    if auto == "NOTSET":
        pads = [int(RNG.integers(0, 3)) for _ in range(2 * nsp)]
    elif auto == "VALID":
        pads = [0] * (2 * nsp)
    else:
        pads = same_pads(insz, k, s, d, auto == "SAME_UPPER")
    # the padded input must hold the dilated kernel
    for j in range(nsp):
        ext = (k[j] - 1) * d[j] + 1
        if insz[j] + pads[j] + pads[j + nsp] < ext:
            insz[j] = ext
            if auto.startswith("SAME"):
                pads = same_pads(insz, k, s, d, auto == "SAME_UPPER")
    n = int(RNG.integers(1, 3))
    xt, wt = ["u8", "s8"][RNG.integers(0, 2)], ["u8", "s8"][RNG.integers(0, 2)]
    x = draw(xt, [n, c] + insz)
    w = draw(wt, [m, cg] + k)
    xz = draw_zp(xt, 1)
    zmode = RNG.integers(0, 3) if not qlinear else RNG.integers(1, 3)
    wz = draw_zp(wt, m) if zmode == 2 else np.repeat(draw_zp(wt, 1), m) if zmode == 1 else np.zeros(m, NP_OF[wt])
    has_xz = qlinear or RNG.random() < 0.8
    if not has_xz:
        xz = np.zeros(1, NP_OF[xt])
    acc = wrap32(conv_ref(x, w, xz[0], wz, s, d, pads, group))
    attrs = {"strides": s, "dilations": d, "group": group}
    if auto == "NOTSET":
        attrs["pads"] = pads
    else:
        attrs["auto_pad"] = auto
    if RNG.random() < 0.5:
        attrs["kernel_shape"] = k
    xn = mdl.inp("x%d" % i, x)
    wn = mdl.init("w%d" % i, w)
    if not qlinear:
        ins = [xn, wn]
        if has_xz or zmode:
            ins.append(mdl.init("xz%d" % i, xz.reshape(())))
        if zmode:
            ins.append(mdl.init("wz%d" % i, wz if zmode == 2 else wz[:1].reshape(())))
        yn = mdl.out("y%d" % i, acc)
        mdl.nodes.append(helper.make_node("ConvInteger", ins, [yn], **attrs))
        return
    yt = ["u8", "s8"][RNG.integers(0, 2)]
    xs = np.float32(RNG.uniform(0.001, 0.05))
    ws = RNG.uniform(0.001, 0.05, size=m).astype(np.float32) if RNG.random() < 0.5 else np.repeat(np.float32(RNG.uniform(0.001, 0.05)), m)
    per_ws = ws.size > 1 and not np.all(ws == ws[0])
    ys = np.float32(RNG.uniform(0.01, 2.0))
    yz = draw_zp(yt, 1)
    bias = RNG.integers(-20000, 20000, size=m).astype(np.int32) if RNG.random() < 0.6 else None
    tot = acc if bias is None else wrap32(acc.astype(np.int64) + bias.reshape((1, m) + (1,) * nsp))
    mult = (xs * ws / ys).astype(np.float32).reshape((1, m) + (1,) * nsp)
    y = requant(tot, mult, yz[0], yt)
    ins = [xn, mdl.init("xs%d" % i, np.array(xs)), mdl.init("xz%d" % i, xz.reshape(())), wn,
           mdl.init("ws%d" % i, ws if per_ws else np.array(ws[0])),
           mdl.init("wz%d" % i, wz if zmode == 2 else wz[:1].reshape(())),
           mdl.init("ys%d" % i, np.array(ys)), mdl.init("yz%d" % i, yz.reshape(()))]
    if bias is not None:
        ins.append(mdl.init("b%d" % i, bias))
    yn = mdl.out("y%d" % i, y)
    mdl.nodes.append(helper.make_node("QLinearConv", ins, [yn], **attrs))


def matmul_case(mdl, i, qlinear):
    at, bt = ["u8", "s8"][RNG.integers(0, 2)], ["u8", "s8"][RNG.integers(0, 2)]
    m, k, n = int(RNG.integers(1, 80)), int(RNG.integers(1, 70)), int(RNG.integers(1, 120))
    shape = RNG.integers(0, 5)
    batch_a = [[], [], [2], [3, 1], [2]][shape]
    batch_b = [[], [2], [], [1, 2], [2]][shape]
    a_vec = RNG.random() < 0.1 and not batch_a
    b_vec = RNG.random() < 0.1 and not batch_b
    ash = [k] if a_vec else batch_a + [m, k]
    bsh = [k] if b_vec else batch_b + [k, n]
    a = draw(at, ash)
    b = draw(bt, bsh)
    zmode = RNG.integers(0, 4)
    mm = 1 if a_vec else m
    nn = 1 if b_vec else n
    za = draw_zp(at, mm) if zmode in (1, 3) else np.repeat(draw_zp(at, 1), mm)
    zb = draw_zp(bt, nn) if zmode in (2, 3) else np.repeat(draw_zp(bt, 1), nn)
    if zmode == 0 and not qlinear and RNG.random() < 0.5:
        za = np.zeros(mm, NP_OF[at])
        zb = np.zeros(nn, NP_OF[bt])
        use_zp = False
    else:
        use_zp = True
    a64 = a.astype(np.int64) - (za.astype(np.int64).reshape(-1, 1) if not a_vec else int(za[0]))
    b64 = b.astype(np.int64) - (zb.astype(np.int64) if not b_vec else int(zb[0]))
    acc = wrap32(np.matmul(a64, b64))
    an = mdl.inp("a%d" % i, a)
    bn = mdl.init("b%d" % i, b)
    per_a = zmode in (1, 3) and not a_vec
    per_b = zmode in (2, 3) and not b_vec
    zan = mdl.init("za%d" % i, za if per_a else za[:1].reshape(()))
    zbn = mdl.init("zb%d" % i, zb if per_b else zb[:1].reshape(()))
    if not qlinear:
        ins = [an, bn] + ([zan, zbn] if use_zp else [])
        yn = mdl.out("y%d" % i, acc)
        mdl.nodes.append(helper.make_node("MatMulInteger", ins, [yn]))
        return
    yt = ["u8", "s8"][RNG.integers(0, 2)]
    asc = np.float32(RNG.uniform(0.001, 0.05))
    bsc = RNG.uniform(0.001, 0.05, size=nn).astype(np.float32) if per_b or RNG.random() < 0.3 else np.repeat(np.float32(RNG.uniform(0.001, 0.05)), nn)
    per_bs = bsc.size > 1
    ys = np.float32(RNG.uniform(0.01, 2.0))
    yz = draw_zp(yt, 1)
    mult = (asc * bsc / ys).astype(np.float32)
    y = requant(acc, mult if not b_vec else mult[0], yz[0], yt)
    ins = [an, mdl.init("as%d" % i, np.array(asc)), zan, bn, mdl.init("bs%d" % i, bsc if per_bs else np.array(bsc[0])), zbn,
           mdl.init("ys%d" % i, np.array(ys)), mdl.init("yz%d" % i, yz.reshape(()))]
    yn = mdl.out("y%d" % i, y)
    mdl.nodes.append(helper.make_node("QLinearMatMul", ins, [yn]))


def dql_case(mdl, i, _):
    """DynamicQuantizeLinear: sizes across the kernel's chunks, NaN, -0 and inf."""
    n = int(RNG.choice([1, 7, 16, 1000, 65536, 65537, 200003]))
    scale = float(RNG.choice([1e-3, 1.0, 300.0]))
    x = (RNG.standard_normal(n) * scale + RNG.uniform(-scale, scale)).astype(np.float32)
    kind = RNG.integers(0, 6)
    if kind == 0:
        x = np.abs(x)                      # the range's low end is 0
    elif kind == 1:
        x = -np.abs(x)
    elif kind == 2 and n > 3:
        x[RNG.integers(0, n, size=3)] = np.nan
        x[RNG.integers(0, n)] = -0.0
    elif kind == 3 and n > 2:
        x[RNG.integers(0, n)] = np.inf
    elif kind == 4:
        x[:] = 0
    f32 = np.float32
    with np.errstate(invalid="ignore", divide="ignore"):
        finite = x[~np.isnan(x)]
        mn = min(f32(0), finite.min()) if finite.size else f32(0)
        mx = max(f32(0), finite.max()) if finite.size else f32(0)
        sc = f32(f32(mx - mn) / f32(255))

        def q(v, zp):
            r = np.rint(np.asarray(v, np.float32))
            r = np.where(np.isnan(r), f32(0), r)
            return (np.clip(r, f32(0 - zp), f32(255 - zp)).astype(np.int64) + zp).astype(np.uint8)

        zp = int(q(f32(f32(0) - mn) / sc, 0)) if sc != 0 else 0
        y = q(x / sc, zp) if sc != 0 else np.full(n, zp, np.uint8)
    xn = mdl.inp("x%d" % i, x)
    outs = [mdl.out("y%d" % i, y), mdl.out("s%d" % i, np.array(sc, np.float32)), mdl.out("z%d" % i, np.array(zp, np.uint8))]
    mdl.nodes.append(helper.make_node("DynamicQuantizeLinear", [xn], outs))


def run(strata, model, feeds, refs, tmp, threads):
    out = os.path.join(tmp, "out%d" % threads)
    os.makedirs(out, exist_ok=True)
    args = [strata, "run", "-q", model, "-o", out, "--threads", str(threads)]
    for name, arr in feeds.items():
        f = os.path.join(tmp, name + ".npy")
        np.save(f, arr)
        args += ["-i", "%s=%s" % (name, f)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode:
        print(r.stderr)
        return 1
    bad = 0
    for name, ref in refs.items():
        got = np.load(os.path.join(out, name + ".npy"))
        if got.dtype != ref.dtype or got.shape != ref.shape or not np.array_equal(got, ref):
            diff = "shape %s vs %s" % (got.shape, ref.shape) if got.shape != ref.shape else \
                "%d of %d elements differ" % (int(np.sum(got != ref)), ref.size)
            print("FAIL %s %s (threads %d): %s" % (os.path.basename(model), name, threads, diff))
            bad += 1
    return bad


def main():
    strata = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for op, fn, q in (("ConvInteger", conv_case, False), ("QLinearConv", conv_case, True),
                          ("MatMulInteger", matmul_case, False), ("QLinearMatMul", matmul_case, True),
                          ("DynamicQuantizeLinear", dql_case, False)):
            mdl = Model()
            for i in range(cases):
                fn(mdl, i, q)
            path = os.path.join(tmp, op + ".onnx")
            mdl.save(path)
            for threads in (1, 2):
                bad += run(strata, path, mdl.feeds, mdl.refs, tmp, threads)
            print("%s: %d random nodes" % (op, cases))
    if bad:
        print("quant_ops_test: %d outputs differ from the reference" % bad)
        sys.exit(1)
    print("quant_ops_test: every output equals the int64 reference")


if __name__ == "__main__":
    main()
