#!/usr/bin/python3
"""The integer quantization ops on a GPU backend (DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv), bit-exact against
an independent NumPy reference and against the CPU backend.

  qint_device_test.py STRATA BACKEND WORKDIR

Each case is a one-node model run with `--backend BACKEND --no-fallback
--sanitize`, so the device's own kernel runs (a fallback would be a
refusal here).  Inputs are random, with odd shapes (no multiple of 4 or
8), zero points per tensor and per row / column / output channel, u8 and
i8, batched and broadcast matmuls (named *_fast_*, ones that CUDA runs
as its implicit GEMM), grouped, dilated, strided and
asymmetrically padded convs in 1, 2 and 3 spatial dims (small ones for
the direct kernels; named *_fast_*, ones with 16+ output channels per
group and K 16+ for CUDA's implicit GEMM, each with partial tiles; named
*_split_k_*, ones with few output tiles and a long K, which it splits
over K), a QLinearMatMul whose multiplier is exactly 0.5 (ties: half to
even decides) with saturation at 255, and for
DynamicQuantizeLinear a strided (transposed) input, an all-positive one
(the range's min is 0) and one with a NaN (ignored by the range,
quantized to the zero point).

Reference: NumPy, int64 sums of (x - x_zp) * (w - w_zp) (int32 never
wraps at these sizes), requantized in float32 as the spec and ORT do:
multiplier (a_scale * b_scale) / y_scale, rint (half to even) of
float32(sum) * multiplier, saturated, plus the zero point;
DynamicQuantizeLinear's scale (max(x, 0) - min(x, 0)) / 255 and zero
point rint(-min / scale) in float32.  Tolerance: none; every output
byte-identical with NumPy and with the CPU backend.  Outputs are poisoned
first (stale .npy files are deleted before each run).  Exits 77 (skipped)
when the backend has no device here.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SKIP = 77
TP = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int32): TensorProto.INT32,
      np.dtype(np.float32): TensorProto.FLOAT}


def save_model(path, nodes, inputs, outputs, inits):
    """inputs: {name: array} fed at run time; inits: {name: array} constant;
    outputs: [(name, dtype, shape)]."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TP[a.dtype], a.shape) for n, a in inputs.items()],
                          [helper.make_tensor_value_info(n, TP[np.dtype(t)], shp) for n, t, shp in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def run(strata, path, feeds, outdir, names, extra):
    os.makedirs(outdir, exist_ok=True)
    for n in names:
        f = os.path.join(outdir, n + ".npy")
        if os.path.exists(f):
            os.remove(f)  # poison: a stale output must not pass
    args = [strata, "run", path, "-o", outdir, "-q"] + extra
    for n, f in feeds.items():
        args += ["-i", n + "=" + f]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    outs = {}
    for n in names:
        f = os.path.join(outdir, n + ".npy")
        outs[n] = np.load(f) if r.returncode == 0 and os.path.exists(f) else None
    return r, outs


def requant(acc, mult, zp, dtype):
    info = np.iinfo(dtype)
    f = (acc.astype(np.int32).astype(np.float32) * mult.astype(np.float32)).astype(np.float32)
    r = np.rint(f)
    r = np.clip(r, np.float32(info.min - int(zp)), np.float32(info.max - int(zp)))
    return (r.astype(np.int64) + int(zp)).astype(dtype)


# ---- references ----

def ref_dynq(x):
    x = x.astype(np.float32)
    mn = np.float32(min(0.0, np.nanmin(x)))
    mx = np.float32(max(0.0, np.nanmax(x)))
    scale = np.float32((mx - mn) / np.float32(255))
    if scale == 0:
        return np.zeros(x.shape, np.uint8), np.float32(0), np.uint8(0)
    zp = int(np.clip(np.rint(np.float32(np.float32(0) - mn) / scale), 0, 255))
    with np.errstate(invalid="ignore"):
        q = np.rint((x / scale).astype(np.float32))
    q = np.where(np.isnan(q), 0, q)
    y = np.clip(q.astype(np.int64) + zp, 0, 255).astype(np.uint8)
    return y, scale, np.uint8(zp)


def ref_matmul_acc(a, b, az, bz):
    """int64 (a - az) @ (b - bz); az per row ([M] or scalar), bz per column."""
    a64 = a.astype(np.int64)
    b64 = b.astype(np.int64)
    if az is not None:
        a64 = a64 - (az.astype(np.int64).reshape(-1, 1) if az.size > 1 else int(az.reshape(-1)[0]))
    if bz is not None:
        b64 = b64 - (bz.astype(np.int64).reshape(1, -1) if bz.size > 1 else int(bz.reshape(-1)[0]))
    return np.matmul(a64, b64)


def ref_conv_acc(x, w, xz, wz, pads, strides, dils, group):
    """int64 direct conv of (x - xz) and (w - wz), 1 to 3 spatial dims;
    padding with the zero point, which contributes nothing."""
    nsp = x.ndim - 2
    x64 = x.astype(np.int64) - (int(xz) if xz is not None else 0)
    w64 = w.astype(np.int64)
    if wz is not None:
        w64 = w64 - (wz.astype(np.int64).reshape([-1] + [1] * (w.ndim - 1)) if wz.size > 1 else int(wz.reshape(-1)[0]))
    xp = np.pad(x64, [(0, 0), (0, 0)] + [(pads[i], pads[nsp + i]) for i in range(nsp)])
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    k = w.shape[2:]
    out = [(xp.shape[2 + i] - ((k[i] - 1) * dils[i] + 1)) // strides[i] + 1 for i in range(nsp)]
    y = np.zeros([n, m] + out, np.int64)
    mg = m // group
    for oc in range(m):
        g = oc // mg
        xs = xp[:, g * cg:(g + 1) * cg]
        for kidx in np.ndindex(*k):
            sl = tuple(slice(kidx[i] * dils[i], kidx[i] * dils[i] + (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(nsp))
            patch = xs[(slice(None), slice(None)) + sl]
            y[:, oc] += np.tensordot(patch, w64[oc][(slice(None),) + kidx], axes=([1], [0]))
    return y


# ---- cases: (name, nodes, inputs, inits, outputs [(name, dtype)], reference {name: array}) ----

def cases(rng):
    out = []

    def u8(*s):
        return rng.integers(0, 256, size=s).astype(np.uint8)

    def i8(*s):
        return rng.integers(-128, 128, size=s).astype(np.int8)

    # DynamicQuantizeLinear: plain, transposed (strided) input, all positive, a NaN
    for name, x, perm in (("dynq_plain", rng.normal(0, 3, size=(3, 7, 11)).astype(np.float32), None),
                          ("dynq_transposed", rng.normal(1, 5, size=(5, 9, 6)).astype(np.float32), [2, 0, 1]),
                          ("dynq_positive", rng.uniform(0.5, 9, size=(13, 17)).astype(np.float32), None),
                          ("dynq_nan", rng.normal(0, 2, size=(4, 33)).astype(np.float32), None)):
        if name == "dynq_nan":
            x[1, 5] = np.nan
        nodes = []
        src = "x"
        if perm:
            nodes.append(helper.make_node("Transpose", ["x"], ["xt"], perm=perm))
            src = "xt"
        nodes.append(helper.make_node("DynamicQuantizeLinear", [src], ["y", "y_scale", "y_zp"]))
        y, s, z = ref_dynq(x.transpose(perm) if perm else x)
        out.append((name, nodes, {"x": x}, {}, [("y", np.uint8), ("y_scale", np.float32), ("y_zp", np.uint8)],
                    {"y": y, "y_scale": np.array(s), "y_zp": np.array(z)}))

    # MatMulInteger
    a, b = u8(2, 5, 17), u8(17, 9)
    az, bz = np.array(rng.integers(0, 256), np.uint8), np.array(rng.integers(0, 256), np.uint8)
    out.append(("mmi_u8_scalar_zp", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                {"a": a, "b": b}, {"az": az, "bz": bz}, [("y", np.int32)],
                {"y": ref_matmul_acc(a, b, az, bz).astype(np.int32)}))
    a, b = i8(6, 23), i8(23, 11)
    az, bz = i8(6), i8(11)
    out.append(("mmi_i8_row_col_zp", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                {"a": a}, {"b": b, "az": az, "bz": bz}, [("y", np.int32)],
                {"y": ref_matmul_acc(a, b, az, bz).astype(np.int32)}))
    a, b = u8(5, 19), i8(3, 19, 7)
    out.append(("mmi_u8_i8_bcast_nozp", [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
                {"a": a, "b": b}, {}, [("y", np.int32)], {"y": ref_matmul_acc(a, b, None, None).astype(np.int32)}))
    a, b = u8(2, 3, 4, 300), u8(300, 5)
    az = np.array(7, np.uint8)
    out.append(("mmi_long_k", [helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])],
                {"a": a, "b": b}, {"az": az}, [("y", np.int32)], {"y": ref_matmul_acc(a, b, az, None).astype(np.int32)}))

    # the forms CUDA runs as its implicit GEMM (A's zero point one value, B
    # not batched, 16+ columns): a batch dim and B's zero point per column;
    # a vector A and a long K; few tiles and a long K (split over K)
    a, b = u8(2, 37, 70), i8(70, 50)
    az, bz = np.array(rng.integers(0, 256), np.uint8), i8(50)
    out.append(("mmi_fast_batched_col_zp", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                {"a": a}, {"b": b, "az": az, "bz": bz}, [("y", np.int32)],
                {"y": ref_matmul_acc(a, b, az, bz).astype(np.int32)}))
    a, b = u8(300), u8(300, 20)
    az = np.array(rng.integers(0, 256), np.uint8)
    out.append(("mmi_fast_vector_a", [helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])],
                {"a": a, "b": b}, {"az": az}, [("y", np.int32)], {"y": ref_matmul_acc(a, b, az, None).astype(np.int32)}))
    a, b = i8(3, 2000), i8(2000, 20)
    az, bz = np.array(i8(1)[0], np.int8), np.array(i8(1)[0], np.int8)
    out.append(("mmi_fast_split_k", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                {"a": a, "b": b}, {"az": az, "bz": bz}, [("y", np.int32)],
                {"y": ref_matmul_acc(a, b, az, bz).astype(np.int32)}))

    # zero points in the matrices' own shape with a unit column / row, per batch
    a, b = u8(2, 5, 17), u8(2, 17, 9)
    az, bz = u8(2, 5, 1), u8(2, 1, 9)
    acc = np.matmul(a.astype(np.int64) - az.astype(np.int64), b.astype(np.int64) - bz.astype(np.int64))
    out.append(("mmi_batched_zp", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                {"a": a, "b": b, "az": az, "bz": bz}, {}, [("y", np.int32)], {"y": acc.astype(np.int32)}))

    # QLinearMatMul: per tensor u8; per row / column i8
    for name, sa, sb, dt, per in (("qlmm_u8_tensor", (2, 4, 19), (19, 7), np.uint8, False),
                                  ("qlmm_i8_row_col", (9, 21), (21, 5), np.int8, True)):
        gen = u8 if dt == np.uint8 else i8
        a, b = gen(*sa), gen(*sb)
        m, n = sa[-2], sb[-1]
        a_s = rng.uniform(0.01, 0.05, size=(m,) if per else ()).astype(np.float32)
        b_s = rng.uniform(0.01, 0.05, size=(n,) if per else ()).astype(np.float32)
        a_z = gen(m) if per else np.array(gen(1)[0], dt)
        b_z = gen(n) if per else np.array(gen(1)[0], dt)
        y_s = np.array(rng.uniform(0.02, 0.2), np.float32)
        y_z = np.array(gen(1)[0], dt)
        acc = ref_matmul_acc(a, b, a_z, b_z)
        mult = ((a_s.reshape(-1, 1) if per else a_s) * (b_s.reshape(1, -1) if per else b_s)).astype(np.float32)
        mult = (mult / y_s).astype(np.float32)
        out.append((name, [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
                    {"a": a}, {"as": a_s, "az": a_z, "b": b, "bs": b_s, "bz": b_z, "ys": y_s, "yz": y_z}, [("y", dt)],
                    {"y": requant(acc, np.broadcast_to(mult, acc.shape), y_z, dt)}))

    # QLinearMatMul as CUDA's implicit GEMM: A per tensor, B per column
    a, b = u8(45, 80), i8(80, 33)
    a_s, a_z = np.array(rng.uniform(0.01, 0.05), np.float32), np.array(u8(1)[0], np.uint8)
    b_s, b_z = rng.uniform(0.01, 0.05, size=(33,)).astype(np.float32), i8(33)
    y_s, y_z = np.array(rng.uniform(0.02, 0.2), np.float32), np.array(u8(1)[0], np.uint8)
    acc = ref_matmul_acc(a, b, a_z, b_z)
    mult = ((a_s * b_s.reshape(1, -1)).astype(np.float32) / y_s).astype(np.float32)
    out.append(("qlmm_fast_u8_col", [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
                {"a": a}, {"as": a_s, "az": a_z, "b": b, "bs": b_s, "bz": b_z, "ys": y_s, "yz": y_z}, [("y", np.uint8)],
                {"y": requant(acc, np.broadcast_to(mult, acc.shape), y_z, np.uint8)}))

    # exact ties: multiplier 0.25 * 2 / 1 = 0.5 and small sums, so half of
    # the products land on k + 0.5 (half to even decides), and y_zp 250
    # saturates the large ones at 255
    a = (100 + rng.integers(-3, 4, size=(7, 2))).astype(np.uint8)
    b = (60 + rng.integers(-3, 4, size=(2, 13))).astype(np.uint8)
    a_s, b_s, y_s = np.array(0.25, np.float32), np.array(2.0, np.float32), np.array(1.0, np.float32)
    a_z, b_z, y_z = np.array(100, np.uint8), np.array(60, np.uint8), np.array(250, np.uint8)
    acc = ref_matmul_acc(a, b, a_z, b_z)
    out.append(("qlmm_ties_saturation", [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
                {"a": a, "b": b}, {"as": a_s, "az": a_z, "bs": b_s, "bz": b_z, "ys": y_s, "yz": y_z}, [("y", np.uint8)],
                {"y": requant(acc, np.broadcast_to(np.float32(0.5), acc.shape), y_z, np.uint8)}))

    # ConvInteger: 2-D grouped, dilated, strided, asymmetric pads, per-channel w_zp;
    # 1-D depthwise i8 without zero points; 19 channels (blocks of 8 and a
    # remainder); 3-D u8 x / i8 w
    conv_cases = (("convint_2d_group", u8(2, 6, 9, 11), u8(8, 3, 3, 3), 2, [1, 0, 2, 1], [2, 1], [1, 2], True, "chan"),
                  ("convint_1d_depthwise", i8(1, 4, 13), i8(4, 1, 5), 4, [2, 1], [1], [1], False, None),
                  ("convint_19_channels", u8(2, 5, 7, 9), u8(19, 5, 3, 2), 1, [1, 0, 1, 1], [1, 1], [1, 1], True, "chan"),
                  ("convint_3d", u8(1, 2, 4, 5, 6), i8(3, 2, 2, 2, 3), 1, [0, 1, 1, 1, 0, 0], [1, 2, 1], [1, 1, 2], True, "scalar"),
                  # the CUDA implicit GEMM's shapes (16+ output channels per
                  # group, K 16+): tiles of 64 channels x 128 positions x 64
                  # of K, each case with a partial tile in every dimension
                  ("convint_fast_group", u8(2, 24, 13, 17), u8(70, 12, 3, 3), 2, [1, 2, 0, 1], [2, 1], [1, 2], True, "chan"),
                  ("convint_fast_1x1_i8", i8(1, 37, 20, 19), i8(130, 37, 1, 1), 1, [0, 0, 0, 0], [1, 1], [1, 1], True, "chan"),
                  ("convint_fast_3d", u8(1, 5, 6, 7, 8), i8(17, 5, 2, 3, 3), 1, [1, 0, 1, 0, 1, 2], [1, 2, 1], [2, 1, 1], True, "scalar"),
                  ("convint_fast_1d_long_k", u8(3, 40, 50), u8(33, 40, 7), 1, [3, 2], [1], [2], True, "chan"),
                  ("convint_fast_i8_nozp", i8(2, 16, 11, 10), i8(32, 8, 3, 2), 2, [1, 1, 1, 1], [1, 2], [1, 1], False, None),
                  # few output tiles and a long K: split over K on CUDA
                  ("convint_split_k_head", u8(1, 300, 6, 5), u8(1, 300, 3, 3), 1, [1, 1, 1, 1], [1, 1], [1, 1], True, "scalar"),
                  ("convint_split_k_i8_group", i8(1, 320, 4, 4), i8(40, 160, 3, 3), 2, [1, 0, 1, 2], [1, 1], [1, 1], True, "chan"))
    for name, x, w, group, pads, strides, dils, has_xz, wz_kind in conv_cases:
        xz = np.array((u8 if x.dtype == np.uint8 else i8)(1)[0], x.dtype) if has_xz else None
        wz = None
        if wz_kind == "chan":
            wz = (u8 if w.dtype == np.uint8 else i8)(w.shape[0])
        elif wz_kind == "scalar":
            wz = np.array((u8 if w.dtype == np.uint8 else i8)(1)[0], w.dtype)
        ins = ["x", "w", "xz" if xz is not None else "", "wz" if wz is not None else ""]
        while ins[-1] == "":
            ins.pop()
        inits = {"w": w}
        if xz is not None:
            inits["xz"] = xz
        if wz is not None:
            inits["wz"] = wz
        node = helper.make_node("ConvInteger", ins, ["y"], pads=pads, strides=strides, dilations=dils, group=group)
        out.append((name, [node], {"x": x}, inits, [("y", np.int32)],
                    {"y": ref_conv_acc(x, w, xz, wz, pads, strides, dils, group).astype(np.int32)}))

    # QLinearConv: u8 x, i8 w per channel, bias, u8 y; i8 throughout, per tensor, no bias
    for name, x, w, group, pads, strides, dils, per, bias in (
            ("qlconv_u8_chan_bias", u8(2, 5, 10, 7), i8(6, 5, 3, 3), 1, [1, 1, 0, 2], [1, 2], [1, 1], True, True),
            ("qlconv_i8_group", i8(1, 6, 8, 9), i8(9, 2, 2, 3), 3, [0, 1, 1, 0], [2, 1], [2, 1], False, False),
            ("qlconv_fast_u8_chan_bias", u8(1, 20, 15, 14), i8(48, 20, 3, 3), 1, [1, 1, 1, 1], [1, 1], [1, 1], True, True),
            ("qlconv_fast_i8_group", i8(2, 32, 9, 9), i8(64, 16, 3, 3), 2, [2, 0, 1, 1], [2, 2], [1, 2], False, False),
            ("qlconv_split_k_u8", u8(1, 256, 5, 4), i8(40, 256, 3, 3), 1, [1, 1, 1, 1], [1, 1], [1, 1], True, True)):
        m = w.shape[0]
        xdt, ydt = x.dtype.type, x.dtype.type
        gx = u8 if x.dtype == np.uint8 else i8
        x_s = np.array(rng.uniform(0.01, 0.05), np.float32)
        x_z = np.array(gx(1)[0], x.dtype)
        w_s = rng.uniform(0.005, 0.03, size=(m,) if per else ()).astype(np.float32)
        w_z = i8(m) if per else np.array(i8(1)[0], np.int8)
        y_s = np.array(rng.uniform(0.05, 0.3), np.float32)
        y_z = np.array(gx(1)[0], ydt)
        b = rng.integers(-3000, 3000, size=m).astype(np.int32) if bias else None
        acc = ref_conv_acc(x, w, x_z, w_z, pads, strides, dils, group)
        if b is not None:
            acc = acc + b.astype(np.int64).reshape(1, -1, *([1] * (x.ndim - 2)))
        mult = ((x_s * w_s).astype(np.float32) / y_s).astype(np.float32)
        mult = np.broadcast_to(mult.reshape(1, -1, *([1] * (x.ndim - 2))) if per else mult, acc.shape)
        ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias else [])
        inits = {"xs": x_s, "xz": x_z, "w": w, "ws": w_s, "wz": w_z, "ys": y_s, "yz": y_z}
        if bias:
            inits["b"] = b
        node = helper.make_node("QLinearConv", ins, ["y"], pads=pads, strides=strides, dilations=dils, group=group)
        out.append((name, [node], {"x": x}, inits, [("y", ydt)], {"y": requant(acc, mult, y_z, ydt)}))
    return out


def main():
    strata, backend, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261202)
    failed = total = 0
    for name, nodes, inputs, inits, outputs, ref in cases(rng):
        path = os.path.join(work, name + ".onnx")
        save_model(path, nodes, inputs, [(n, t, np.shape(ref[n])) for n, t in outputs], inits)
        feeds = {}
        for n, a in inputs.items():
            feeds[n] = os.path.join(work, "%s_%s.npy" % (name, n))
            np.save(feeds[n], a)
        names = [n for n, _ in outputs]
        r, dev = run(strata, path, feeds, os.path.join(work, name, backend), names,
                     ["--backend", backend, "--no-fallback", "--sanitize"])
        t = r.stdout + r.stderr
        if "no OpenCL" in t or "no CUDA device" in t or "is not available" in t or "not built into" in t:
            print("SKIP: " + t.strip())
            return SKIP
        _, cpu = run(strata, path, feeds, os.path.join(work, name, "cpu"), names, ["--backend", "cpu"])
        total += 1
        ok = True
        parts = []
        for n in names:
            d, c, e = dev[n], cpu[n], np.asarray(ref[n])
            if d is None or c is None:
                ok = False
                parts.append("%s: no output" % n)
                continue
            same = d.dtype == e.dtype and d.shape == e.shape and np.array_equal(d.reshape(-1).view(np.uint8), np.ascontiguousarray(e).reshape(-1).view(np.uint8))
            same_cpu = d.dtype == c.dtype and d.shape == c.shape and np.array_equal(d.reshape(-1).view(np.uint8), c.reshape(-1).view(np.uint8))
            ok &= same and same_cpu
            diff = ""
            if not same and d.shape == e.shape:
                diff = " (%d of %d differ)" % (int((d.astype(np.float64) != e.astype(np.float64)).sum()), e.size)
            parts.append("%s %s %d elements: vs NumPy %s%s, vs CPU %s" % (n, d.dtype, d.size, "identical" if same else "DIFFERENT",
                                                                           diff, "identical" if same_cpu else "DIFFERENT"))
        if dev[names[0]] is None:
            parts.append(t.strip())
        print("%-22s %s: %s" % (name, backend, "; ".join(parts)))
        failed += not ok
    print("%d of %d cases failed" % (failed, total))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
