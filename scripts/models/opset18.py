#!/usr/bin/python3
"""Small models of every ai.onnx op that opsets 18 to 21 changed or added,
each at the opset that defines the behaviour it tests, with ONNX Runtime
1.30's outputs as the reference (ONNX 1.12's node tests stop at opset 17).

Two kinds of case:
  - computed: random inputs (seeded; normal floats, integers spread over
    their type's range, never all ones or zeros), ONNX Runtime's outputs;
  - refused: what strata does not implement (float8, antialias, N-D
    GridSample, ...), with the words the one-line error must contain.

Writes into the output directory:
  cases.json                 per case: opset, inputs, tolerances or the
                             refusal's words, backends to check on
  <case>.onnx                the model
  <case>_in/<name>.npy       its inputs
  <case>_ref/<name>.npy      ONNX Runtime's outputs (computed cases)

ONNX 1.12's checker does not know opset 18+ schemas, so the models are
built with onnx.helper and not checked; ONNX Runtime loading them is the
check.

Usage: /usr/bin/python3 scripts/models/opset18.py --out DIR [--seed N]
"""
import argparse
import json
import os
import subprocess
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.float64: TensorProto.DOUBLE,
           np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int16: TensorProto.INT16,
           np.uint16: TensorProto.UINT16, np.int32: TensorProto.INT32, np.uint32: TensorProto.UINT32,
           np.int64: TensorProto.INT64, np.uint64: TensorProto.UINT64, np.bool_: TensorProto.BOOL}
F32 = TensorProto.FLOAT

CASES = {}


class Case:
    def __init__(self, nodes, inputs, outputs, inits=None, tol=(1e-5, 1e-5), refuse=None, backends=("cpu",),
                 out_types=None):
        self.nodes = nodes
        self.inputs = inputs            # [(name, array)]
        self.outputs = outputs          # [(name, onnx elem type)]
        self.inits = inits or {}        # name -> array
        self.tol = tol                  # (atol, rtol)
        self.refuse = refuse            # words the refusal must contain
        self.backends = backends


def case(opset):
    def reg(fn):
        CASES[fn.__name__] = (opset, fn)
        return fn
    return reg


def normal(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def ints(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=op.lower() + "_" + outs[0], **attrs)


def one(op, x, **attrs):
    """op applied to one input x (an array): y."""
    return [node(op, ["x"], ["y"], **attrs)], [("x", x)]


def out(name, t=F32):
    return [(name, t)]


# ---- opset 18: Reduce* take axes as an input ----------------------------

REDUCE_KINDS = ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                "ReduceLogSumExp", "ReduceSumSquare"]


def reduce_case(op):
    def make(rng):
        x = normal(rng, [2, 3, 4, 5])
        if op in ("ReduceLogSum", "ReduceProd"):
            x = (np.abs(x) + 0.5).astype(np.float32)
        n, i = one(op, x)
        n[0].input.append("axes")
        return Case(n, i, out("y"), {"axes": np.array([1, -1], np.int64)})
    make.__name__ = "reduce18_" + op[6:].lower()
    return make


for _op in REDUCE_KINDS:
    case(18)(reduce_case(_op))


@case(18)
def reduce18_mean_keepdims0(rng):
    n, i = one("ReduceMean", normal(rng, [3, 4, 5]), keepdims=0)
    n[0].input.append("axes")
    return Case(n, i, out("y"), {"axes": np.array([0, 2], np.int64)})


@case(18)
def reduce18_max_all(rng):
    """no axes input: every axis"""
    n, i = one("ReduceMax", normal(rng, [3, 4, 5]), keepdims=0)
    return Case(n, i, out("y"))


@case(18)
def reduce18_min_noop(rng):
    """noop_with_empty_axes and no axes: the input as it is"""
    n, i = one("ReduceMin", normal(rng, [3, 4]), noop_with_empty_axes=1)
    return Case(n, i, out("y"))


@case(18)
def reduce18_sumsquare_axes_input(rng):
    """axes as a graph input (the plan is specialised on its value)"""
    n, i = one("ReduceSumSquare", normal(rng, [2, 5, 3]))
    n[0].input.append("axes")
    return Case(n, i + [("axes", np.array([-2], np.int64))], out("y"))


@case(18)
def reduce18_axes_attribute_refused(rng):
    """the attribute opset 18 removed: refused, not read as no axes"""
    n, i = one("ReduceMean", normal(rng, [3, 4]), axes=[1])
    return Case(n, i, out("y"), refuse=["reducemean_y", "axes attribute", "opset 18"])


# ---- opset 20: ReduceMax / ReduceMin of bool ----------------------------

@case(20)
def reduce20_max_bool(rng):
    x = rng.random([3, 4, 5]) < 0.2
    n, i = one("ReduceMax", x, keepdims=0)
    n[0].input.append("axes")
    return Case(n, i, out("y", TensorProto.BOOL), {"axes": np.array([1], np.int64)}, tol=(0, 0))


@case(20)
def reduce20_min_bool(rng):
    x = rng.random([3, 4, 5]) < 0.8
    n, i = one("ReduceMin", x)
    n[0].input.append("axes")
    return Case(n, i, out("y", TensorProto.BOOL), {"axes": np.array([-1], np.int64)}, tol=(0, 0))


# ---- opset 18: Split's num_outputs --------------------------------------

@case(18)
def split18_num_outputs_uneven(rng):
    """7 into 3: 3, 3 and 1"""
    x = normal(rng, [2, 7, 3])
    return Case([node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)], [("x", x)],
                out("a") + out("b") + out("c"), tol=(0, 0))


@case(18)
def split18_num_outputs_even(rng):
    x = normal(rng, [8, 3])
    return Case([node("Split", ["x"], ["a", "b"], num_outputs=2),
                 node("Relu", ["a"], ["ra"]), node("Neg", ["b"], ["nb"])], [("x", x)], out("ra") + out("nb"), tol=(0, 0))


@case(18)
def split18_split_input(rng):
    x = normal(rng, [3, 9])
    return Case([node("Split", ["x", "split"], ["a", "b", "c"], axis=-1)], [("x", x)], out("a") + out("b") + out("c"),
                {"split": np.array([2, 0, 7], np.int64)}, tol=(0, 0))


@case(18)
def split18_uneven_refused(rng):
    """without num_outputs, opset 18 still splits into equal parts only"""
    x = normal(rng, [7, 2])
    return Case([node("Split", ["x"], ["a", "b"])], [("x", x)], out("a") + out("b"), refuse=["split_a", "equal parts"])


@case(18)
def split18_both_refused(rng):
    x = normal(rng, [3, 9])
    return Case([node("Split", ["x", "split"], ["a", "b"], axis=1, num_outputs=2)], [("x", x)], out("a") + out("b"),
                {"split": np.array([4, 5], np.int64)}, refuse=["split_a", "num_outputs"])


# ---- opset 18: Pad's axes; opset 19: wrap --------------------------------

@case(18)
def pad18_axes_constant(rng):
    x = normal(rng, [2, 3, 4, 5])
    n = [node("Pad", ["x", "pads", "value", "axes"], ["y"], mode="constant")]
    return Case(n, [("x", x)], out("y"), {"pads": np.array([1, 0, 2, 1], np.int64), "value": np.array(0.5, np.float32),
                                          "axes": np.array([1, 3], np.int64)}, tol=(0, 0))


@case(18)
def pad18_axes_reflect(rng):
    x = normal(rng, [3, 4, 6])
    n = [node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect")]
    return Case(n, [("x", x)], out("y"), {"pads": np.array([2, 1, 3, 2], np.int64), "axes": np.array([-1, 1], np.int64)},
                tol=(0, 0))


@case(19)
def pad19_wrap(rng):
    x = normal(rng, [3, 4, 5])
    n = [node("Pad", ["x", "pads"], ["y"], mode="wrap")]
    return Case(n, [("x", x)], out("y"), {"pads": np.array([0, 2, 3, 1, 4, 2], np.int64)}, tol=(0, 0))


@case(19)
def pad19_wrap_crop(rng):
    """a crop and a pad on one axis: the wrap reads the kept elements"""
    x = normal(rng, [4, 6])
    n = [node("Pad", ["x", "pads"], ["y"], mode="wrap")]
    return Case(n, [("x", x)], out("y"), {"pads": np.array([-1, 2, 2, -2], np.int64)}, tol=(0, 0))


@case(18)
def pad18_reflect_crop(rng):
    """reflect where the same axis is cropped at one end and padded at the
    other: the reflection reads the kept elements"""
    x = normal(rng, [5, 6])
    n = [node("Pad", ["x", "pads"], ["y"], mode="reflect")]
    return Case(n, [("x", x)], out("y"), {"pads": np.array([-2, 3, 2, -1], np.int64)}, tol=(0, 0))


@case(19)
def pad19_edge_axes(rng):
    x = normal(rng, [2, 3, 4])
    n = [node("Pad", ["x", "pads", "", "axes"], ["y"], mode="edge")]
    return Case(n, [("x", x)], out("y"), {"pads": np.array([3, 0, 1, 2], np.int64), "axes": np.array([0, 2], np.int64)},
                tol=(0, 0))


@case(18)
def pad18_wrap_refused(rng):
    """wrap is opset 19's"""
    x = normal(rng, [3, 4])
    return Case([node("Pad", ["x", "pads"], ["y"], mode="wrap")], [("x", x)], out("y"),
                {"pads": np.array([1, 1, 1, 1], np.int64)}, refuse=["pad_y", "wrap", "opset 19"])


# ---- opset 18: CenterCropPad ----------------------------------------------

@case(18)
def center_crop_pad18(rng):
    x = normal(rng, [3, 7, 6])
    return Case([node("CenterCropPad", ["x", "shape"], ["y"])], [("x", x)], out("y"),
                {"shape": np.array([5, 4, 9], np.int64)}, tol=(0, 0))


@case(18)
def center_crop_pad18_axes(rng):
    x = ints(rng, [2, 5, 6, 3], np.int32)
    return Case([node("CenterCropPad", ["x", "shape"], ["y"], axes=[1, -2])], [("x", x)], out("y", TensorProto.INT32),
                {"shape": np.array([8, 3], np.int64)}, tol=(0, 0))


# ---- opset 18: Resize's axes and keep_aspect_ratio_policy; 19: half_pixel_symmetric

def resize(x, scales=None, sizes=None, roi=None, **attrs):
    ins = ["x", "roi" if roi is not None else "", "scales" if scales is not None else "",
           "sizes" if sizes is not None else ""]
    while ins[-1] == "":
        ins.pop()
    inits = {}
    if roi is not None:
        inits["roi"] = np.array(roi, np.float32)
    if scales is not None:
        inits["scales"] = np.array(scales, np.float32)
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
    return [node("Resize", ins, ["y"], **attrs)], [("x", x)], inits


@case(18)
def resize18_axes_scales_linear(rng):
    n, i, init = resize(normal(rng, [1, 2, 4, 6]), scales=[1.5, 0.5], axes=[2, 3], mode="linear")
    return Case(n, i, out("y"), init)


@case(18)
def resize18_axes_sizes_nearest(rng):
    n, i, init = resize(normal(rng, [2, 3, 5]), sizes=[9], axes=[-1], mode="nearest", nearest_mode="round_prefer_ceil")
    return Case(n, i, out("y"), init, tol=(0, 0))


@case(18)
def resize18_not_larger(rng):
    n, i, init = resize(normal(rng, [1, 3, 6, 8]), sizes=[4, 4], axes=[2, 3], mode="linear",
                        keep_aspect_ratio_policy="not_larger")
    return Case(n, i, out("y"), init)


@case(18)
def resize18_not_smaller_cubic(rng):
    n, i, init = resize(normal(rng, [1, 2, 6, 8]), sizes=[1, 2, 4, 4], mode="cubic",
                        keep_aspect_ratio_policy="not_smaller")
    return Case(n, i, out("y"), init)


@case(18)
def resize18_tf_crop_axes(rng):
    """scales that give whole output sizes: with a fractional one ONNX
    Runtime maps coordinates through the rounded size, where ONNX's
    reference (and strata, at every opset) takes the fractional one"""
    n, i, init = resize(normal(rng, [1, 2, 6, 8]), roi=[0.1, 0.2, 0.9, 0.7], scales=[1.5, 0.5], axes=[2, 3],
                        mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.25)
    return Case(n, i, out("y"), init)


@case(19)
def resize19_half_pixel_symmetric(rng):
    n, i, init = resize(normal(rng, [1, 2, 6, 7]), scales=[1, 1, 0.7, 1.3], mode="linear",
                        coordinate_transformation_mode="half_pixel_symmetric")
    return Case(n, i, out("y"), init)


@case(19)
def resize19_half_pixel_symmetric_keep(rng):
    n, i, init = resize(normal(rng, [1, 2, 5, 9]), sizes=[4, 4], axes=[2, 3], mode="cubic",
                        coordinate_transformation_mode="half_pixel_symmetric", keep_aspect_ratio_policy="not_smaller")
    return Case(n, i, out("y"), init)


@case(18)
def resize18_antialias_linear(rng):
    n, i, init = resize(normal(rng, [1, 2, 9, 8]), scales=[1, 1, 0.6, 0.25], mode="linear", antialias=1)
    return Case(n, i, out("y"), init, backends=("cpu", "opencl", "cuda"))


@case(18)
def resize18_antialias_cubic_up_down(rng):
    """one axis down (the filter stretched), one up (the plain filter)"""
    n, i, init = resize(normal(rng, [2, 1, 11, 5]), sizes=[4, 8], axes=[2, 3], mode="cubic", antialias=1)
    return Case(n, i, out("y"), init, tol=(1e-5, 1e-4), backends=("cpu", "opencl", "cuda"))


@case(18)
def resize18_antialias_exclude_outside(rng):
    n, i, init = resize(normal(rng, [1, 1, 7, 12]), scales=[1, 1, 0.5, 0.4], mode="cubic", antialias=1,
                        exclude_outside=1, cubic_coeff_a=-0.5, coordinate_transformation_mode="asymmetric")
    return Case(n, i, out("y"), init, tol=(1e-5, 1e-4))


@case(18)
def resize18_antialias_nearest_refused(rng):
    """antialias is a filter of linear and cubic (ONNX Runtime refuses this model too)"""
    n, i, init = resize(normal(rng, [1, 1, 7, 12]), scales=[1, 1, 0.5, 0.4], mode="nearest", antialias=1)
    return Case(n, i, out("y"), init, refuse=["resize_y", "antialias", "nearest"])


# ---- opset 18: ScatterElements / ScatterND reductions max and min ------

def scatter_elements(rng, red):
    data = normal(rng, [4, 5])
    idx = rng.integers(0, 4, size=[6, 5]).astype(np.int64)   # repeated indices: the reduction decides
    upd = normal(rng, [6, 5])
    return Case([node("ScatterElements", ["x", "idx", "upd"], ["y"], axis=0, reduction=red)],
                [("x", data), ("idx", idx), ("upd", upd)], out("y"), tol=(0, 0))


def scatter_nd(rng, red):
    data = normal(rng, [5, 4])
    idx = rng.integers(-5, 5, size=[7, 1]).astype(np.int64)
    upd = normal(rng, [7, 4])
    return Case([node("ScatterND", ["x", "idx", "upd"], ["y"], reduction=red)],
                [("x", data), ("idx", idx), ("upd", upd)], out("y"), tol=(0, 0))


for _red in ("max", "min"):
    CASES["scatter_elements18_" + _red] = (18, lambda rng, red=_red: scatter_elements(rng, red))
    CASES["scatter_nd18_" + _red] = (18, lambda rng, red=_red: scatter_nd(rng, red))


# ---- opset 18: Bitwise ops ------------------------------------------------

def bitwise(op, dtype, shape_b):
    def make(rng):
        a = ints(rng, [3, 4], dtype)
        b = ints(rng, shape_b, dtype)
        return Case([node(op, ["a", "b"], ["y"])], [("a", a), ("b", b)], out("y", NP2ONNX[dtype]), tol=(0, 0),
                    backends=("cpu", "opencl", "cuda"))
    return make


CASES["bitwise18_and_i32"] = (18, bitwise("BitwiseAnd", np.int32, [4]))
CASES["bitwise18_or_u8"] = (18, bitwise("BitwiseOr", np.uint8, [3, 1]))
CASES["bitwise18_xor_i64"] = (18, bitwise("BitwiseXor", np.int64, [3, 4]))
CASES["bitwise18_and_u64"] = (18, bitwise("BitwiseAnd", np.uint64, [1, 4]))


@case(18)
def bitwise18_not_i8(rng):
    n, i = one("BitwiseNot", ints(rng, [5, 6], np.int8))
    return Case(n, i, out("y", TensorProto.INT8), tol=(0, 0), backends=("cpu", "opencl", "cuda"))


@case(18)
def bitwise18_not_u16(rng):
    n, i = one("BitwiseNot", ints(rng, [7], np.uint16))
    return Case(n, i, out("y", TensorProto.UINT16), tol=(0, 0), backends=("cpu", "opencl", "cuda"))


# ---- opset 18: Mish; opset 20: Gelu ----------------------------------------

@case(18)
def mish18(rng):
    n, i = one("Mish", normal(rng, [4, 33], 3.0))
    return Case(n, i, out("y"), backends=("cpu", "opencl", "cuda"))


@case(20)
def gelu20(rng):
    n, i = one("Gelu", normal(rng, [4, 33], 2.0))
    return Case(n, i, out("y"), backends=("cpu", "opencl", "cuda"))


@case(20)
def gelu20_tanh(rng):
    n, i = one("Gelu", normal(rng, [4, 33], 2.0), approximate="tanh")
    return Case(n, i, out("y"), backends=("cpu", "opencl", "cuda"))


# ---- opset 18: Col2Im ---------------------------------------------------

@case(18)
def col2im18(rng):
    """2 channels of 2x3 blocks over a 5x6 image, stride 1"""
    x = normal(rng, [1, 2 * 6, 4 * 4])
    n = [node("Col2Im", ["x", "img", "blk"], ["y"])]
    return Case(n, [("x", x)], out("y"), {"img": np.array([5, 6], np.int64), "blk": np.array([2, 3], np.int64)})


@case(18)
def col2im18_strided(rng):
    """strides, dilations and pads; blocks that overlap and gaps no block covers"""
    x = normal(rng, [2, 3 * 4, 3 * 4])
    n = [node("Col2Im", ["x", "img", "blk"], ["y"], strides=[3, 2], dilations=[2, 1], pads=[1, 0, 2, 1])]
    return Case(n, [("x", x)], out("y"), {"img": np.array([8, 7], np.int64), "blk": np.array([2, 2], np.int64)})


@case(18)
def col2im18_1d(rng):
    x = normal(rng, [1, 3, 5])
    n = [node("Col2Im", ["x", "img", "blk"], ["y"], strides=[2])]
    return Case(n, [("x", x)], out("y"), {"img": np.array([11], np.int64), "blk": np.array([3], np.int64)})


# ---- opset 18: LpPool's ceil_mode and dilations; 19: AveragePool's dilations

@case(18)
def lppool18_ceil_dilations(rng):
    x = normal(rng, [1, 2, 7, 8])
    n = [node("LpPool", ["x"], ["y"], kernel_shape=[3, 2], p=3, strides=[2, 2], pads=[1, 0, 1, 1], ceil_mode=1,
              dilations=[1, 2])]
    return Case(n, [("x", x)], out("y"), tol=(1e-5, 1e-4))


@case(18)
def lppool18_p1_same(rng):
    x = normal(rng, [2, 3, 9])
    n = [node("LpPool", ["x"], ["y"], kernel_shape=[4], p=1, strides=[2], auto_pad="SAME_UPPER")]
    return Case(n, [("x", x)], out("y"))


@case(18)
def global_lppool18(rng):
    x = normal(rng, [2, 3, 4, 5])
    return Case([node("GlobalLpPool", ["x"], ["y"])], [("x", x)], out("y"))


@case(19)
def averagepool19_dilations(rng):
    x = normal(rng, [1, 2, 9, 8])
    n = [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], dilations=[2, 1], pads=[1, 1, 2, 1])]
    return Case(n, [("x", x)], out("y"), backends=("cpu", "opencl", "cuda"))


@case(19)
def averagepool19_dilations_ceil_pad(rng):
    x = normal(rng, [2, 1, 10, 9])
    n = [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 3], dilations=[3, 2], strides=[2, 2], pads=[1, 2, 1, 2],
              ceil_mode=1, count_include_pad=1)]
    return Case(n, [("x", x)], out("y"), backends=("cpu", "opencl", "cuda"))


# ---- opset 19: DeformConv ---------------------------------------------------

def deform(rng, x_shape, w_shape, out_hw, og=1, bias=True, mask=True, scale=1.5, **attrs):
    k = w_shape[2] * w_shape[3]
    x = normal(rng, x_shape)
    off = normal(rng, [x_shape[0], og * k * 2] + out_hw, scale)
    ins, inits = [("x", x), ("off", off)], {"w": normal(rng, w_shape, 0.3)}
    names = ["x", "w", "off", "b" if bias else "", "mask" if mask else ""]
    while names[-1] == "":
        names.pop()
    if bias:
        inits["b"] = normal(rng, [w_shape[0]])
    if mask:
        ins.append(("mask", rng.random([x_shape[0], og * k] + out_hw).astype(np.float32)))
    return Case([node("DeformConv", names, ["y"], offset_group=og, **attrs)], ins, out("y"), inits, tol=(1e-5, 1e-4))


CASES["deform_conv19"] = (19, lambda rng: deform(rng, [1, 2, 5, 5], [3, 2, 3, 3], [3, 3], mask=False))
CASES["deform_conv19_mask_bias"] = (19, lambda rng: deform(rng, [2, 4, 6, 7], [6, 4, 3, 2], [6, 7], pads=[1, 0, 1, 1]))
CASES["deform_conv19_groups"] = (19, lambda rng: deform(rng, [1, 4, 7, 6], [4, 2, 2, 3], [3, 2], og=2, bias=False,
                                                        group=2, strides=[2, 2], dilations=[2, 1], scale=3.0))


# ---- opset 18: GroupNormalization (scale per group); 21: per channel ----

@case(18)
def group_norm18(rng):
    x = normal(rng, [2, 6, 3, 4], 2.0) + 0.5
    n = [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)]
    return Case(n, [("x", x)], out("y"), {"s": normal(rng, [3]), "b": normal(rng, [3])}, tol=(1e-5, 1e-4))


@case(21)
def group_norm21(rng):
    x = normal(rng, [2, 6, 3, 4], 2.0) - 0.3
    n = [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-3)]
    return Case(n, [("x", x)], out("y"), {"s": normal(rng, [6]), "b": normal(rng, [6])}, tol=(1e-5, 1e-4))


@case(21)
def group_norm21_strided(rng):
    """x a transposed view: the group split rides on its strides"""
    x = normal(rng, [2, 5, 4, 6])
    n = [node("Transpose", ["x"], ["t"], perm=[0, 3, 2, 1]),
         node("GroupNormalization", ["t", "s", "b"], ["y"], num_groups=3)]
    return Case(n, [("x", x)], out("y"), {"s": normal(rng, [6]), "b": normal(rng, [6])}, tol=(1e-5, 1e-4))


@case(21)
def group_norm21_1d(rng):
    x = normal(rng, [3, 8, 5])
    n = [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=8)]
    return Case(n, [("x", x)], out("y"), {"s": normal(rng, [8]), "b": normal(rng, [8])}, tol=(1e-5, 1e-4))


# ---- opset 19: Cast's saturate (float8 only), float8 refused ------------

@case(19)
def cast19_saturate(rng):
    """saturate only concerns float8: a cast to float16 is unchanged"""
    n, i = one("Cast", normal(rng, [3, 5], 100.0), to=TensorProto.FLOAT16, saturate=1)
    return Case(n, i, out("y", TensorProto.FLOAT16), tol=(0, 0))


@case(19)
def cast19_float8_refused(rng):
    n = [node("Cast", ["x"], ["f8"], to=17), node("Cast", ["f8"], ["y"], to=TensorProto.FLOAT)]
    return Case(n, [("x", normal(rng, [3]))], out("y"), refuse=["cast_f8", "float8e4m3fn"])


@case(21)
def cast21_int4_refused(rng):
    n = [node("Cast", ["x"], ["i4"], to=22), node("Cast", ["i4"], ["y"], to=TensorProto.FLOAT)]
    return Case(n, [("x", normal(rng, [3]))], out("y"), refuse=["cast_i4", "int4"])


# ---- opset 19: DequantizeLinear / QuantizeLinear of float16 ------------

@case(19)
def dequantize19_f16(rng):
    x = ints(rng, [3, 4], np.uint8)
    n = [node("DequantizeLinear", ["x", "s", "z"], ["y"])]
    return Case(n, [("x", x)], out("y", TensorProto.FLOAT16),
                {"s": np.array(0.0625, np.float16), "z": np.array(131, np.uint8)}, tol=(0, 0))


@case(19)
def dequantize19_f16_axis(rng):
    x = ints(rng, [3, 4], np.int8)
    n = [node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1)]
    return Case(n, [("x", x)], out("y", TensorProto.FLOAT16),
                {"s": np.array([0.5, 0.25, 0.125, 0.03125], np.float16), "z": np.array([1, -3, 0, 7], np.int8)},
                tol=(0, 0))


@case(19)
def quantize19_f16(rng):
    x = normal(rng, [4, 6], 4.0).astype(np.float16)
    n = [node("QuantizeLinear", ["x", "s", "z"], ["y"])]
    return Case(n, [("x", x)], out("y", TensorProto.INT8),
                {"s": np.array(0.0625, np.float16), "z": np.array(-5, np.int8)}, tol=(0, 0))


# ---- opset 21: blocked quantization, int16, output_dtype ----------------

@case(21)
def quantize21_blocked(rng):
    x = normal(rng, [4, 7], 3.0)
    s = (np.abs(normal(rng, [4, 3])) * 0.05 + 0.01).astype(np.float32)
    z = ints(rng, [4, 3], np.int8) // 8
    n = [node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=3)]
    return Case(n, [("x", x)], out("y", TensorProto.INT8), {"s": s, "z": z}, tol=(0, 0))


@case(21)
def dequantize21_blocked(rng):
    x = ints(rng, [6, 4], np.uint8)
    s = (np.abs(normal(rng, [2, 4])) * 0.05 + 0.01).astype(np.float32)
    z = ints(rng, [2, 4], np.uint8)
    n = [node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0, block_size=4)]
    return Case(n, [("x", x)], out("y"), {"s": s, "z": z})


@case(21)
def quantize21_output_dtype_i16(rng):
    x = normal(rng, [5, 3], 1000.0)
    n = [node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TensorProto.INT16)]
    return Case(n, [("x", x)], out("y", TensorProto.INT16), {"s": np.array(0.02, np.float32)}, tol=(0, 0))


@case(21)
def dequantize21_u16(rng):
    x = ints(rng, [2, 5], np.uint16)
    n = [node("DequantizeLinear", ["x", "s", "z"], ["y"])]
    return Case(n, [("x", x)], out("y"), {"s": np.array(0.001, np.float32), "z": np.array(30000, np.uint16)})


@case(21)
def qlinear_matmul21_f16_scales(rng):
    """opset 21 lets the scales be float16"""
    a = ints(rng, [3, 5], np.uint8)
    b = ints(rng, [5, 4], np.uint8)
    n = [node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])]
    inits = {"sa": np.array(0.02, np.float16), "za": np.array(128, np.uint8), "sb": np.array(0.03, np.float16),
             "zb": np.array(120, np.uint8), "sy": np.array(0.5, np.float16), "zy": np.array(100, np.uint8)}
    # atol 1: a requantized value halfway between two integers may round
    # either way after the runtimes' different f32 multipliers
    return Case(n, [("a", a), ("b", b)], out("y", TensorProto.UINT8), inits, tol=(1, 0))


# ---- opset 20: DFT's axis input -------------------------------------------

@case(20)
def dft20_axis_input(rng):
    x = normal(rng, [2, 8, 6, 1])
    n = [node("DFT", ["x", "", "axis"], ["y"])]
    return Case(n, [("x", x)], out("y"), {"axis": np.array(1, np.int64)}, tol=(1e-5, 1e-4))


@case(20)
def dft20_default_axis(rng):
    """no axis input: -2, the last signal axis (opset 17's default was 1)"""
    x = normal(rng, [3, 5, 10, 2])
    return Case([node("DFT", ["x"], ["y"])], [("x", x)], out("y"), tol=(1e-5, 1e-4))


@case(20)
def dft20_inverse_length(rng):
    x = normal(rng, [7, 2])
    n = [node("DFT", ["x", "len"], ["y"], inverse=1)]
    return Case(n, [("x", x)], out("y"), {"len": np.array(9, np.int64)}, tol=(1e-5, 1e-4))


@case(20)
def dft20_onesided(rng):
    x = normal(rng, [2, 12, 1])
    return Case([node("DFT", ["x"], ["y"], onesided=1)], [("x", x)], out("y"), tol=(1e-5, 1e-4))


# ---- opset 20: GridSample's new mode names; N-D refused ------------------

@case(20)
def gridsample20_linear(rng):
    x = normal(rng, [1, 2, 5, 6])
    g = (rng.random([1, 4, 3, 2]) * 2.4 - 1.2).astype(np.float32)
    n = [node("GridSample", ["x", "g"], ["y"], mode="linear", padding_mode="border")]
    return Case(n, [("x", x), ("g", g)], out("y"))


@case(20)
def gridsample20_cubic(rng):
    x = normal(rng, [2, 1, 5, 6])
    g = (rng.random([2, 3, 3, 2]) * 2.0 - 1.0).astype(np.float32)
    n = [node("GridSample", ["x", "g"], ["y"], mode="cubic", align_corners=1)]
    return Case(n, [("x", x), ("g", g)], out("y"), tol=(1e-5, 1e-4))


@case(20)
def gridsample20_3d_refused(rng):
    x = normal(rng, [1, 2, 3, 4, 5])
    g = (rng.random([1, 2, 2, 2, 3]) * 2.0 - 1.0).astype(np.float32)
    return Case([node("GridSample", ["x", "g"], ["y"])], [("x", x), ("g", g)], out("y"),
                refuse=["gridsample_y", "N-D GridSample"])


# ---- opset 20: AffineGrid -------------------------------------------------

@case(20)
def affine_grid20_2d(rng):
    theta = normal(rng, [2, 2, 3], 0.7)
    n = [node("AffineGrid", ["theta", "size"], ["y"])]
    return Case(n, [("theta", theta)], out("y"), {"size": np.array([2, 3, 5, 7], np.int64)})


@case(20)
def affine_grid20_3d_align(rng):
    theta = normal(rng, [1, 3, 4], 0.7)
    n = [node("AffineGrid", ["theta", "size"], ["y"], align_corners=1)]
    return Case(n, [("theta", theta)], out("y"), {"size": np.array([1, 2, 3, 4, 5], np.int64)})


@case(20)
def affine_grid20_sample(rng):
    """AffineGrid into GridSample: a spatial transformer"""
    theta = normal(rng, [1, 2, 3], 0.5)
    x = normal(rng, [1, 3, 6, 6])
    n = [node("AffineGrid", ["theta", "size"], ["g"], align_corners=0),
         node("GridSample", ["x", "g"], ["y"], mode="linear")]
    return Case(n, [("theta", theta), ("x", x)], out("y"), {"size": np.array([1, 3, 4, 5], np.int64)})


# ---- opset 20: ConstantOfShape of bfloat16; ImageDecoder refused --------

@case(20)
def constant_of_shape20_bf16(rng):
    v = helper.make_tensor("v", TensorProto.BFLOAT16, [1], [1.5])
    n = [node("ConstantOfShape", ["shape"], ["c"], value=v), node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT),
         node("Add", ["cf", "x"], ["y"])]
    return Case(n, [("x", normal(rng, [2, 3]))], out("y"), {"shape": np.array([2, 3], np.int64)})


@case(20)
def image_decoder20_refused(rng):
    x = ints(rng, [64], np.uint8)
    return Case([node("ImageDecoder", ["x"], ["y"])], [("x", x)], out("y", TensorProto.UINT8),
                refuse=["imagedecoder_y", "ImageDecoder"])


# ---- opset 21: ops whose change is new types only -----------------------

@case(21)
def types21_shape_ops(rng):
    """Flatten, Transpose, Squeeze, Unsqueeze, Reshape, Shape, Size,
    Identity, Pad, ConstantOfShape and Cast at opset 21: unchanged but for
    types strata does not hold"""
    x = normal(rng, [2, 1, 3, 4])
    n = [node("Squeeze", ["x", "ax1"], ["a"]), node("Transpose", ["a"], ["b"], perm=[2, 0, 1]),
         node("Unsqueeze", ["b", "ax0"], ["c"]), node("Flatten", ["c"], ["d"], axis=2),
         node("Reshape", ["d", "shp"], ["e"]), node("Identity", ["e"], ["f"]),
         node("Pad", ["f", "pads"], ["g"]), node("Shape", ["g"], ["gs"]), node("Size", ["g"], ["gn"]),
         node("ConstantOfShape", ["gs"], ["z"], value=helper.make_tensor("v", F32, [1], [0.25])),
         node("Add", ["g", "z"], ["h"]), node("Cast", ["gn"], ["y2"], to=F32)]
    inits = {"ax1": np.array([1], np.int64), "ax0": np.array([0], np.int64), "shp": np.array([4, -1], np.int64),
             "pads": np.array([0, 1, 1, 0], np.int64)}
    return Case(n, [("x", x)], out("h") + out("y2"), inits, tol=(0, 0))


@case(21)
def if21(rng):
    """If at opset 21, on a condition the model computes"""
    x = normal(rng, [4])
    then_g = helper.make_graph([node("Neg", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", F32, [4])])
    else_g = helper.make_graph([node("Exp", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F32, [4])])
    n = [node("ReduceSum", ["x"], ["s"], keepdims=0), node("Greater", ["s", "zero"], ["cond"]),
         node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    return Case(n, [("x", x)], out("y"), {"zero": np.array(0.0, np.float32)})


def build(name, opset, c):
    inputs = [helper.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape)) for k, v in c.inputs]
    outputs = [helper.make_tensor_value_info(k, t, None) for k, t in c.outputs]
    inits = [numpy_helper.from_array(v, k) for k, v in c.inits.items()]
    g = helper.make_graph(c.nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="strata opset18.py")
    m.ir_version = 8 if opset <= 18 else 9 if opset <= 20 else 10
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--only", nargs="*", help="generate these cases only")
    ap.add_argument("--keep-going", action="store_true", help="report a case ONNX Runtime fails on and go on")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mpath = os.path.join(args.out, "cases.json")
    manifest = {}
    if args.only and os.path.exists(mpath):
        with open(mpath) as f:
            manifest = json.load(f)
    for name, (opset, make) in sorted(CASES.items()):
        if args.only and name not in args.only:
            continue
        # seeded by the case's name, so adding a case changes no other's data
        rng = np.random.default_rng([args.seed, zlib.crc32(name.encode())])
        c = make(rng)
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(build(name, opset, c), path)
        ind = os.path.join(args.out, name + "_in")
        os.makedirs(ind, exist_ok=True)
        feeds = []
        for iname, arr in c.inputs:
            f = os.path.join(ind, iname + ".npy")
            np.save(f, arr)
            feeds.append("%s=%s" % (iname, f))
        entry = {"opset": opset, "inputs": [iname for iname, _ in c.inputs], "backends": list(c.backends)}
        if c.refuse:
            entry["refuse"] = c.refuse
        else:
            ref = os.path.join(args.out, name + "_ref")
            os.makedirs(ref, exist_ok=True)
            r = subprocess.run(["node", os.path.join(ROOT, "scripts", "ort", "run.js"), path, ref] + feeds,
                               check=not args.keep_going)
            if r.returncode:
                print("ONNX Runtime failed on", name)
                continue
            entry["atol"], entry["rtol"] = c.tol
        manifest[name] = entry
        print(name, entry)
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
