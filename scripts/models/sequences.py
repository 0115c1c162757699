#!/usr/bin/python3
"""Models with sequence and optional inputs and outputs, for the C API test
(tests/api/test_sequence.c), which draws fresh random inputs every run and
computes its references in float64 itself: no reference data here.

  seq_ops     S: a sequence of float [?, 4] tensors, T: float [?, 4], pos: an
              int64 scalar.  S2 = SequenceInsert(S, Relu(T), pos);
              outputs len = SequenceLength(S2), last = SequenceAt(S2, -1) * 2,
              cat = ConcatFromSequence(S2, axis 0), rest = SequenceErase(S2,
              0) (a sequence), pieces = SplitToSequence(cat + 1, split 2,
              axis 0) (a sequence: chunks of two rows, the last smaller)
  optional    O: an optional float [3].  has = OptionalHasElement(O);
              y = If(has, OptionalGetElement(O) + 1, zeros); echo = Identity(O)
              (an optional output)
  loop_seq    X: float [?, 3], n: int64 trip count.  A Loop carrying a
              sequence, inserting X * (i + 1) at each iteration i; outputs
              seq (the sequence) and stack = ConcatFromSequence(seq, axis 0,
              new_axis 1), [n, ?, 3]
  seq_at_input  S: a sequence of float [2] tensors, i: an int64 scalar;
              y = SequenceAt(S, i) (an out-of-range i is the test's error case)

Usage: /usr/bin/python3 scripts/models/sequences.py --out DIR
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def const(name, arr):
    return helper.make_node("Constant", [], [name], name=name + "_c", value=numpy_helper.from_array(np.asarray(arr), name))


def seq_type(dtype, shape):
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(dtype, shape))


def save(graph, path, opset=17):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="strata sequences.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def seq_ops(out):
    nodes = [
        const("neg1", np.array(-1, np.int64)), const("zero", np.array(0, np.int64)),
        const("two", np.array(2.0, np.float32)), const("one", np.array(1.0, np.float32)),
        const("split", np.array(2, np.int64)),
        helper.make_node("Relu", ["T"], ["r"], name="relu"),
        helper.make_node("SequenceInsert", ["S", "r", "pos"], ["S2"], name="insert"),
        helper.make_node("SequenceLength", ["S2"], ["len"], name="length"),
        helper.make_node("SequenceAt", ["S2", "neg1"], ["a"], name="at"),
        helper.make_node("Mul", ["a", "two"], ["last"], name="mul"),
        helper.make_node("ConcatFromSequence", ["S2"], ["cat"], name="cat", axis=0),
        helper.make_node("SequenceErase", ["S2", "zero"], ["rest"], name="erase"),
        helper.make_node("Add", ["cat", "one"], ["c1"], name="add"),
        helper.make_node("SplitToSequence", ["c1", "split"], ["pieces"], name="split", axis=0),
    ]
    g = helper.make_graph(
        nodes, "seq_ops",
        [helper.make_value_info("S", seq_type(F, ["n", 4])), helper.make_tensor_value_info("T", F, ["m", 4]),
         helper.make_tensor_value_info("pos", I64, [])],
        [helper.make_tensor_value_info("len", I64, []), helper.make_tensor_value_info("last", F, ["l", 4]),
         helper.make_tensor_value_info("cat", F, ["c", 4]), helper.make_value_info("rest", seq_type(F, ["e", 4])),
         helper.make_value_info("pieces", seq_type(F, ["p", 4]))])
    save(g, os.path.join(out, "seq_ops.onnx"))


def optional(out):
    then_g = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["O"], ["o"], name="get"),
         const("ones", np.ones(3, np.float32)),
         helper.make_node("Add", ["o", "ones"], ["t"], name="add")],
        "then", [], [helper.make_tensor_value_info("t", F, [3])])
    else_g = helper.make_graph([const("zeros", np.zeros(3, np.float32)),
                                helper.make_node("Identity", ["zeros"], ["e"], name="id")],
                               "else", [], [helper.make_tensor_value_info("e", F, [3])])
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [3]))
    g = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["O"], ["has"], name="has"),
         helper.make_node("If", ["has"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["O"], ["echo"], name="echo")],
        "optional", [helper.make_value_info("O", opt)],
        [helper.make_tensor_value_info("has", BOOL, []), helper.make_tensor_value_info("y", F, [3]),
         helper.make_value_info("echo", opt)])
    save(g, os.path.join(out, "optional.onnx"))


def loop_seq(out):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
         helper.make_node("Cast", ["i"], ["fi"], name="cast", to=F),
         const("b_one", np.array(1.0, np.float32)),
         helper.make_node("Add", ["fi", "b_one"], ["k"], name="k"),
         helper.make_node("Mul", ["X", "k"], ["xk"], name="scale"),
         helper.make_node("SequenceInsert", ["seq_in", "xk"], ["seq_out"], name="insert")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", BOOL, []),
         helper.make_value_info("seq_in", seq_type(F, ["r", 3]))],
        [helper.make_tensor_value_info("cond_out", BOOL, []), helper.make_value_info("seq_out", seq_type(F, ["r", 3]))])
    g = helper.make_graph(
        [helper.make_node("SequenceEmpty", [], ["empty"], name="empty", dtype=F),
         helper.make_node("Loop", ["n", "", "empty"], ["seq"], name="loop", body=body),
         helper.make_node("ConcatFromSequence", ["seq"], ["stack"], name="stack", axis=0, new_axis=1)],
        "loop_seq", [helper.make_tensor_value_info("X", F, ["r", 3]), helper.make_tensor_value_info("n", I64, [])],
        [helper.make_value_info("seq", seq_type(F, ["r", 3])), helper.make_tensor_value_info("stack", F, ["n", "r", 3])])
    save(g, os.path.join(out, "loop_seq.onnx"))


def seq_at_input(out):
    g = helper.make_graph(
        [helper.make_node("SequenceAt", ["S", "i"], ["y"], name="at")], "seq_at_input",
        [helper.make_value_info("S", seq_type(F, [2])), helper.make_tensor_value_info("i", I64, [])],
        [helper.make_tensor_value_info("y", F, [2])])
    save(g, os.path.join(out, "seq_at_input.onnx"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for f in (seq_ops, optional, loop_seq, seq_at_input):
        f(a.out)
        print(f.__name__)


if __name__ == "__main__":
    main()
