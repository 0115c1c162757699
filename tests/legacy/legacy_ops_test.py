#!/usr/bin/python3
"""The semantics ops had before opset 7 (8 for the variadic ones), against numpy.

  legacy_ops_test.py STRATA

The test sets exercise only a few of them (PyTorch's opset-6 exports add
with suffix-aligned broadcasting and use a per-channel PReLU), so each rule
of the changelog gets its own case here, one model each, run through
`strata run --sanitize` and compared with numpy:
  - Add, Sub, Mul, Div, Pow and the comparisons and logic ops with
    broadcast=1 and `axis`: B's dims lined up with A's from `axis`, which
    numpy's right alignment does not do (size-1 dims of B expand);
  - PRelu 6: a slope of one element, X's shape, or one per channel (dim 1);
  - an opset-6 Add by a constant after a Conv, whose alignment with N (not
    the channels) the per-channel fusion of passes/fuse_affine.c must not
    take for a channel affine when N equals C;
  - Cast before opset 6 (`to` is a type's name);
  - BatchNormalization 6 without is_test (inference, running statistics);
and the models these rules make invalid are refused with a message that
says why: shapes that differ without broadcast=1, an axis or dims that do
not line up, a slope of another size, is_test=0, Gemm's C without
broadcast=1, variadic inputs of different shapes before opset 8.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(14)
TP = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
      np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64, np.dtype(np.bool_): TensorProto.BOOL}


def save(path, nodes, feeds, outs, opset, inits=()):
    ins = [helper.make_tensor_value_info(k, TP[v.dtype], v.shape) for k, v in feeds.items()]
    outs = [helper.make_tensor_value_info(k, TensorProto.UNDEFINED, None) for k in outs]
    g = helper.make_graph(nodes, "legacy", ins, outs, [numpy_helper.from_array(v, k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3
    onnx.save(m, path)


def run(strata, tmp, name, nodes, feeds, refs, opset, inits=(), error=None):
    """Runs the model; compares its outputs with refs, or expects error in
    strata's message.  Returns the number of failures (0 or 1)."""
    path = os.path.join(tmp, name + ".onnx")
    save(path, nodes, feeds, refs if error is None else ["y"], opset, inits)
    out = os.path.join(tmp, name)
    os.makedirs(out, exist_ok=True)
    args = [strata, "run", "-q", path, "-o", out, "--sanitize"]
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_%s.npy" % (name, k))
        np.save(f, v)
        args += ["-i", "%s=%s" % (k, f)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if error is not None:
        if r.returncode == 0 or error not in r.stderr:
            print("FAIL %s: expected an error with '%s', got rc %d: %s" % (name, error, r.returncode, r.stderr.strip()))
            return 1
        return 0
    if r.returncode:
        print("FAIL %s: %s" % (name, r.stderr.strip()))
        return 1
    for k, ref in refs.items():
        got = np.load(os.path.join(out, k + ".npy"))
        if got.shape != ref.shape or got.dtype != ref.dtype or not np.allclose(got, ref, rtol=1e-6, atol=1e-7, equal_nan=True):
            print("FAIL %s: output %s got %s %s, want %s %s" % (name, k, got.dtype, got.shape, ref.dtype, ref.shape))
            return 1
    return 0


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def legacy_b(a, b, axis):
    """B as the legacy rule places it: its dims at [axis, axis + rank)."""
    return b.reshape(b.shape + (1,) * (a.ndim - axis - b.ndim))


def binary_cases():
    ops = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
           "Greater": np.greater, "Less": np.less, "Equal": np.equal}
    a = f32(2, 3, 4, 5)
    shapes = [((3, 4), 1), ((3,), 1), ((2,), 0), ((4, 5), None), ((2, 1, 4), 0), ((3, 1), 1), ((1, 1), None), ((), None)]
    for op, fn in ops.items():
        for bs, axis in shapes:
            b = f32(*bs)
            if op == "Equal":  # equal elements somewhere: compare integers
                a_, b = np.rint(a * 2).astype(np.int32), np.rint(b * 2).astype(np.int32)
            else:
                a_ = a
            attrs = {"broadcast": 1} if axis is None else {"broadcast": 1, "axis": axis}
            name = "%s_%s_axis%s" % (op, "x".join(map(str, bs)) or "scalar", axis)
            ref = fn(a_, legacy_b(a_, b, a.ndim - b.ndim if axis is None else axis))
            yield name, [helper.make_node(op, ["a", "b"], ["y"], **attrs)], {"a": a_, "b": b}, {"y": ref}, 6
    x = np.abs(f32(2, 3, 4)) + 0.5
    e = f32(3)
    yield "Pow_axis1", [helper.make_node("Pow", ["a", "b"], ["y"], broadcast=1, axis=1)], {"a": x, "b": e}, \
        {"y": np.power(x, e.reshape(3, 1))}, 6
    p, q = RNG.random((2, 3, 4)) < 0.5, RNG.random(3) < 0.5
    for op, fn in (("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor)):
        yield op + "_axis1", [helper.make_node(op, ["a", "b"], ["y"], broadcast=1, axis=1)], {"a": p, "b": q}, \
            {"y": fn(p, q.reshape(3, 1))}, 1


def prelu_cases():
    for shape in ((2, 3), (2, 3, 4), (2, 3, 4, 5), (2, 3, 2, 3, 2)):
        x = f32(*shape)
        for kind, slope in (("scalar", f32(1)), ("channel", f32(shape[1])), ("full", f32(*shape))):
            ref = np.where(x >= 0, x, x * legacy_b(x, slope, 1 if kind == "channel" else x.ndim - slope.ndim))
            yield "PRelu_%s_rank%d" % (kind, len(shape)), [helper.make_node("PRelu", ["x", "s"], ["y"])], \
                {"x": x}, {"y": ref}, 6, [("s", slope)]


def other_cases():
    # a Conv whose output has N == C, then an opset-6 Add of a constant lined
    # up with N: a channel-wise reading of the constant gives other numbers
    x, w, b = f32(3, 2, 5, 5), f32(3, 2, 1, 1), f32(3, 1, 1)
    conv = np.einsum("nchw,mc->nmhw", x, w[:, :, 0, 0])
    yield "Conv_then_Add_axis0", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
                                  helper.make_node("Add", ["c", "b"], ["y"], broadcast=1, axis=0)], \
        {"x": x}, {"y": conv + b.reshape(3, 1, 1, 1)}, 6, [("w", w), ("b", b)]
    v = f32(7) * 100
    yield "Cast1_string_to", [helper.make_node("Cast", ["x"], ["y"], to="INT32")], {"x": v}, {"y": v.astype(np.int32)}, 5
    x = f32(2, 3, 4)
    sc, bi, mu, var = f32(3), f32(3), f32(3), np.abs(f32(3)) + 0.1
    ref = (x - mu.reshape(3, 1)) / np.sqrt(var.reshape(3, 1) + np.float32(1e-5)) * sc.reshape(3, 1) + bi.reshape(3, 1)
    yield "BatchNorm6_no_is_test", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])], \
        {"x": x}, {"y": ref.astype(np.float32)}, 6, [("s", sc), ("b", bi), ("m", mu), ("v", var)]
    a, c = f32(2, 3), f32(4)
    m = f32(3, 4)
    yield "Gemm6_broadcast", [helper.make_node("Gemm", ["a", "m", "c"], ["y"], broadcast=1)], {"a": a, "c": c}, \
        {"y": a @ m + c}, 6, [("m", m)]


def error_cases():
    a = f32(2, 3)
    yield "Add6_no_broadcast", [helper.make_node("Add", ["a", "b"], ["y"])], {"a": a, "b": f32(3)}, 6, (), \
        "before opset 7 A and B must have one shape unless broadcast=1"
    yield "Add6_axis_out", [helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=1)], {"a": a, "b": f32(3, 1)}, 6, (), \
        "axis 1 leaves B's 2 dims outside A's 2"
    yield "Add6_dims", [helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=0)], {"a": a, "b": f32(3)}, 6, (), \
        "B's dim 0 is 3, A's dim 0 is 2"
    yield "PRelu6_slope", [helper.make_node("PRelu", ["x", "s"], ["y"])], {"x": f32(2, 3, 4)}, 6, [("s", f32(4))], \
        "before opset 7 the slope has 1 element, X's shape, or one per channel (3), not 4"
    yield "Cast1_bad_name", [helper.make_node("Cast", ["x"], ["y"], to="FLOAT32")], {"x": a}, 5, (), \
        "'to' is 'FLOAT32', not a TensorProto data type"
    p = [("s", f32(3)), ("b", f32(3)), ("m", f32(3)), ("v", np.abs(f32(3)))]
    yield "BatchNorm6_training", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], is_test=0)], \
        {"x": f32(2, 3, 4)}, 6, p, "is_test=0 (training: batch statistics) is not supported"
    yield "Gemm6_no_broadcast", [helper.make_node("Gemm", ["a", "m", "c"], ["y"])], {"a": a, "c": f32(4)}, 6, \
        [("m", f32(3, 4))], "C must be [2, 4] without broadcast=1"
    yield "Sum6_shapes", [helper.make_node("Sum", ["a", "b"], ["y"])], {"a": a, "b": f32(3)}, 6, (), \
        "before opset 8 they must be equal"


def main():
    strata = sys.argv[1]
    bad = n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in list(binary_cases()) + list(prelu_cases()) + list(other_cases()):
            name, nodes, feeds, refs, opset = case[:5]
            bad += run(strata, tmp, name, nodes, feeds, refs, opset, case[5] if len(case) > 5 else ())
            n += 1
        for name, nodes, feeds, opset, inits, error in error_cases():
            bad += run(strata, tmp, name, nodes, feeds, {}, opset, inits, error)
            n += 1
    if bad:
        print("legacy_ops_test: %d of %d cases failed" % (bad, n))
        sys.exit(1)
    print("legacy_ops_test: %d cases, every output equal to numpy's, every invalid model refused" % n)


if __name__ == "__main__":
    main()
