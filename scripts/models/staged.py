#!/usr/bin/python3
"""Models that cannot be planned whole before a run: what they compute
decides what they do next (plan/stage.c).  ONNX Runtime's outputs are the
reference.

  if_score    an If on a score the model computes: each branch a different
              network reading outer-scope values; one input takes each
              branch (if_score_input_0.npy then, _input_1.npy else)
  nms         a detection head whose boxes and scores feed
              NonMaxSuppression, then a Gather of the boxes it keeps (the
              output's length is the data's)
  loop_count  a Loop whose trip count is how many entries of the input are
              positive; the stacked scan output has that many rows (input
              1 has none: zero iterations, an empty scan output)
  while_loop  a Loop with no trip count that runs until its body says
              stop: a fixed-point iteration y = tanh(y W + x) until no
              entry moves by more than 1e-4, the step sizes stacked; the
              first condition comes from the data too (input 2 is small
              enough that the loop never starts)

Writes into the output directory, per case and input k:
  <case>.onnx               the model (opset 17)
  <case>_input_<k>.npy      a random input (normal, seeded)
  <case>_ref_<k>/<name>.npy ONNX Runtime's outputs

Usage: /usr/bin/python3 scripts/models/staged.py --out DIR [--seed N]
"""
import argparse
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def const(name, arr):
    return helper.make_node("Constant", [], [name], name=name + "_c", value=numpy_helper.from_array(arr, name))


def init(rng, name, shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def if_score(rng):
    """h = relu(x W1 + b1); cond = mean(h W3) >= 0; then: relu(h W2) + h[:, :16],
    else: sigmoid(h[:, 16:] * 2) - 0.5.  The branches read h and the
    weights from the outer scope."""
    inits = [init(rng, "W1", [64, 32]), init(rng, "b1", [32], 0.1), init(rng, "W2", [32, 16]),
             init(rng, "W3", [32, 1])]
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["h", "W2"], ["t0"], name="then_mm"),
         helper.make_node("Relu", ["t0"], ["t1"], name="then_relu"),
         const("s0", np.array([0], np.int64)), const("s16", np.array([16], np.int64)),
         const("ax1", np.array([1], np.int64)),
         helper.make_node("Slice", ["h", "s0", "s16", "ax1"], ["hl"], name="then_slice"),
         helper.make_node("Add", ["t1", "hl"], ["y_then"], name="then_add")],
        "then", [], [helper.make_tensor_value_info("y_then", F, [1, 16])])
    else_g = helper.make_graph(
        [const("e16", np.array([16], np.int64)), const("e32", np.array([32], np.int64)),
         const("eax", np.array([1], np.int64)), const("two", np.array(2.0, np.float32)),
         const("half", np.array(0.5, np.float32)),
         helper.make_node("Slice", ["h", "e16", "e32", "eax"], ["hr"], name="else_slice"),
         helper.make_node("Mul", ["hr", "two"], ["e0"], name="else_mul"),
         helper.make_node("Sigmoid", ["e0"], ["e1"], name="else_sigmoid"),
         helper.make_node("Sub", ["e1", "half"], ["y_else"], name="else_sub")],
        "else", [], [helper.make_tensor_value_info("y_else", F, [1, 16])])
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
        helper.make_node("Relu", ["h1"], ["h"], name="relu1"),
        helper.make_node("MatMul", ["h", "W3"], ["s"], name="score"),
        helper.make_node("Sub", ["s", "mu"], ["sc"], name="centre"),
        helper.make_node("ReduceMean", ["sc"], ["m"], name="mean", keepdims=0),
        const("zero", np.array(0.0, np.float32)),
        helper.make_node("GreaterOrEqual", ["m", "zero"], ["cond"], name="decide"),
        helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
    ]
    x = rng.standard_normal([1, 64]).astype(np.float32)
    # centre the score on this input, so that x and a perturbed copy fall
    # on either side with a clear margin
    W1 = numpy_helper.to_array(inits[0]); b1 = numpy_helper.to_array(inits[1]); W3 = numpy_helper.to_array(inits[3])
    s_of = lambda v: (np.maximum(v @ W1 + b1, 0) @ W3).mean()
    x2 = (x + rng.standard_normal([1, 64]).astype(np.float32) * 0.8).astype(np.float32)
    mu = np.float32((s_of(x) + s_of(x2)) / 2)
    inits.append(numpy_helper.from_array(np.array(mu, np.float32), "mu"))
    first, second = (x, x2) if s_of(x) >= mu else (x2, x)
    g = helper.make_graph(nodes, "if_score", [helper.make_tensor_value_info("x", F, [1, 64])],
                          [helper.make_tensor_value_info("y", F, [1, 16]), helper.make_tensor_value_info("h", F, [1, 32])],
                          inits)
    return g, [first, second]


def nms(rng):
    """A 1x1-conv detection head over a feature map: boxes (centre, size)
    and per-class scores for each of 256 positions, NonMaxSuppression,
    then the kept boxes gathered."""
    C = 3
    inits = [init(rng, "Wh", [4 + C, 8, 1, 1], 0.6), init(rng, "bh", [4 + C], 0.2)]
    nodes = [
        helper.make_node("Conv", ["x", "Wh", "bh"], ["head"], name="head"),
        const("shape", np.array([1, 4 + C, 256], np.int64)),
        helper.make_node("Reshape", ["head", "shape"], ["flat"], name="flat"),
        helper.make_node("Split", ["flat", "split"], ["box_raw", "cls_raw"], name="split", axis=1),
        helper.make_node("Sigmoid", ["box_raw"], ["box_s"], name="box_sigmoid"),
        const("scale", np.array([[[64.0], [64.0], [16.0], [16.0]]], np.float32)),
        helper.make_node("Mul", ["box_s", "scale"], ["box_c"], name="box_scale"),
        helper.make_node("Transpose", ["box_c"], ["boxes"], name="boxes", perm=[0, 2, 1]),
        helper.make_node("Sigmoid", ["cls_raw"], ["scores"], name="scores"),
        const("max_out", np.array([6], np.int64)),
        const("iou", np.array([0.3], np.float32)),
        const("thr", np.array([0.55], np.float32)),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "thr"], ["selected"],
                         name="nms", center_point_box=1),
        const("col", np.array(2, np.int64)),
        helper.make_node("Gather", ["selected", "col"], ["box_idx"], name="box_idx", axis=1),
        const("b0", np.array([0], np.int64)),
        helper.make_node("Squeeze", ["boxes", "b0"], ["boxes0"], name="squeeze"),
        helper.make_node("Gather", ["boxes0", "box_idx"], ["kept"], name="kept", axis=0),
    ]
    inits.append(numpy_helper.from_array(np.array([4, C], np.int64), "split"))
    x = rng.standard_normal([1, 8, 16, 16]).astype(np.float32)
    g = helper.make_graph(nodes, "nms", [helper.make_tensor_value_info("x", F, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("selected", I64, ["k", 3]),
                           helper.make_tensor_value_info("kept", F, ["k", 4])], inits)
    return g, [x]


def loop_count(rng):
    """M = count of x > 0; y_{i+1} = 0.5 y_i + x * i (i the iteration);
    outputs the last y and every y stacked (M rows)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         const("half", np.array(0.5, np.float32)),
         helper.make_node("Mul", ["y_in", "half"], ["y_h"], name="halve"),
         helper.make_node("Cast", ["i"], ["i_f"], name="i_float", to=F),
         helper.make_node("Mul", ["x", "i_f"], ["xi"], name="scale_x"),
         helper.make_node("Add", ["y_h", "xi"], ["y_out"], name="step"),
         helper.make_node("Identity", ["y_out"], ["y_scan"], name="scan")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", F, [8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("y_out", F, [8]),
         helper.make_tensor_value_info("y_scan", F, [8])])
    nodes = [
        const("zero", np.array(0.0, np.float32)),
        helper.make_node("Greater", ["x", "zero"], ["pos"], name="positive"),
        helper.make_node("Cast", ["pos"], ["pos_i"], name="count_cast", to=I64),
        helper.make_node("ReduceSum", ["pos_i"], ["M"], name="count", keepdims=0),
        const("true", np.array(True)),
        helper.make_node("Tanh", ["x"], ["y0"], name="start"),
        helper.make_node("Loop", ["M", "true", "y0"], ["y_last", "ys"], name="loop", body=body),
    ]
    x = rng.standard_normal([8]).astype(np.float32)
    none = (-np.abs(rng.standard_normal([8])) - 0.1).astype(np.float32)  # no positive entry: zero iterations
    g = helper.make_graph(nodes, "loop_count", [helper.make_tensor_value_info("x", F, [8])],
                          [helper.make_tensor_value_info("y_last", F, [8]), helper.make_tensor_value_info("ys", F, ["m", 8])])
    return g, [x, none]


def while_loop(rng):
    """cond0 = max|x| > 0.1; while cond: y' = tanh(y W + x), d = max|y' - y|,
    cond = d > 1e-4; outputs the last y, and every d stacked.  The body
    reads x and W from the outer scope; the trip count is absent."""
    inits = [init(rng, "W", [8, 8], 0.15)]
    body = helper.make_graph(
        [helper.make_node("MatMul", ["y_in", "W"], ["yw"], name="body_mm"),
         helper.make_node("Add", ["yw", "x"], ["pre"], name="body_add"),
         helper.make_node("Tanh", ["pre"], ["y_out"], name="body_tanh"),
         helper.make_node("Sub", ["y_out", "y_in"], ["dy"], name="body_sub"),
         helper.make_node("Abs", ["dy"], ["ady"], name="body_abs"),
         helper.make_node("ReduceMax", ["ady"], ["d"], name="body_max", keepdims=0),
         const("tol", np.array(1e-4, np.float32)),
         helper.make_node("Greater", ["d", "tol"], ["cond_out"], name="body_more")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", F, [4, 8])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("y_out", F, [4, 8]),
         helper.make_tensor_value_info("d", F, [])])
    nodes = [
        helper.make_node("Abs", ["x"], ["ax"], name="abs_x"),
        helper.make_node("ReduceMax", ["ax"], ["mx"], name="max_x", keepdims=0),
        const("start_tol", np.array(0.1, np.float32)),
        helper.make_node("Greater", ["mx", "start_tol"], ["go"], name="go"),
        helper.make_node("Neg", ["x"], ["y0"], name="start"),
        helper.make_node("Loop", ["", "go", "y0"], ["y_last", "ds"], name="loop", body=body),
    ]
    x = rng.standard_normal([4, 8]).astype(np.float32)
    big = (rng.standard_normal([4, 8]) * 3).astype(np.float32)
    small = (rng.uniform(-0.09, 0.09, [4, 8])).astype(np.float32)  # max|x| <= 0.1: the loop never starts
    g = helper.make_graph(nodes, "while_loop", [helper.make_tensor_value_info("x", F, [4, 8])],
                          [helper.make_tensor_value_info("y_last", F, [4, 8]), helper.make_tensor_value_info("ds", F, ["n"])],
                          inits)
    return g, [x, big, small]


CASES = {"if_score": if_score, "nms": nms, "loop_count": loop_count, "while_loop": while_loop}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, (name, make) in enumerate(CASES.items()):
        rng = np.random.default_rng(args.seed + i)
        g, inputs = make(rng)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="strata staged.py")
        m.ir_version = 8
        onnx.checker.check_model(m)
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(m, path)
        for k, x in enumerate(inputs):
            inp = os.path.join(args.out, "%s_input_%d.npy" % (name, k))
            np.save(inp, x)
            ref = os.path.join(args.out, "%s_ref_%d" % (name, k))
            os.makedirs(ref, exist_ok=True)
            subprocess.run(["node", os.path.join(ROOT, "scripts", "ort", "run.js"), path, ref, inp], check=True)
            outs = {f: np.load(os.path.join(ref, f)) for f in sorted(os.listdir(ref))}
            print(name, k, {f: (a.dtype.name, a.shape) for f, a in outs.items()})


if __name__ == "__main__":
    main()
