#!/usr/bin/env python3
"""while_model.py OUTDIR [ITERATIONS] — a while loop long enough to cancel.

Writes OUTDIR/while_count.onnx (opset 17), its input while_count_input_0.npy
and the reference outputs while_count_ref/{y,ds}.npy, computed here in
float64 from the recurrence (independent of any ONNX runtime).

The Loop has no trip count: its body computes the condition (i + 1 < N,
N = ITERATIONS, 3000 by default, an initializer of the outer graph), so
strata cannot unroll it and runs it one iteration at a time
(src/session/loop.c).  Each iteration carries y' = 0.99 y + 0.01 x (x read
from the outer scope) and emits d = max(y'), stacked into ds.  A contraction,
so float32 rounding does not grow with the iteration count.  The tests
cancel runs of it, and fail every allocation of it in turn
(tests/faults/CMakeLists.txt).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: while_model.py OUTDIR [ITERATIONS]")
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 3000
    if n < 1:
        sys.exit("while_model.py: ITERATIONS must be at least 1")
    F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    shape = [4, 8]

    def const(name, arr):
        return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(arr, name))

    body = helper.make_graph(
        [const("a", np.array(0.99, np.float32)),
         const("b", np.array(0.01, np.float32)),
         const("one", np.array(1, np.int64)),
         helper.make_node("Mul", ["y_in", "a"], ["ya"], name="body_decay"),
         helper.make_node("Mul", ["x", "b"], ["xb"], name="body_pull"),
         helper.make_node("Add", ["ya", "xb"], ["y_out"], name="body_step"),
         helper.make_node("ReduceMax", ["y_out"], ["d"], name="body_max", keepdims=0),
         helper.make_node("Add", ["i", "one"], ["i1"], name="body_next"),
         helper.make_node("Less", ["i1", "N"], ["cond_out"], name="body_more")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
         helper.make_tensor_value_info("y_in", F, shape)],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("y_out", F, shape),
         helper.make_tensor_value_info("d", F, [])])
    nodes = [
        const("go", np.array(True)),
        helper.make_node("Neg", ["x"], ["y0"], name="start"),
        helper.make_node("Loop", ["", "go", "y0"], ["y", "ds"], name="while_count", body=body),
    ]
    g = helper.make_graph(nodes, "while_count", [helper.make_tensor_value_info("x", F, shape)],
                          [helper.make_tensor_value_info("y", F, shape), helper.make_tensor_value_info("ds", F, ["n"])],
                          [numpy_helper.from_array(np.array(n, np.int64), "N")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="strata while_model.py")
    m.ir_version = 8
    onnx.checker.check_model(m)

    x = np.random.default_rng(18).standard_normal(shape).astype(np.float32)
    y = -x.astype(np.float64)
    ds = np.empty(n)
    for i in range(n):
        y = 0.99 * y + 0.01 * x.astype(np.float64)
        ds[i] = y.max()

    os.makedirs(os.path.join(out, "while_count_ref"), exist_ok=True)
    onnx.save(m, os.path.join(out, "while_count.onnx"))
    np.save(os.path.join(out, "while_count_input_0.npy"), x)
    np.save(os.path.join(out, "while_count_ref", "y.npy"), y.astype(np.float32))
    np.save(os.path.join(out, "while_count_ref", "ds.npy"), ds.astype(np.float32))


if __name__ == "__main__":
    main()
