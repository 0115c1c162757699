#!/usr/bin/python3
"""cond_loop.py OUTDIR — while loops that CUDA can run as one graph with a
conditional WHILE node (src/session/loop.c, src/backends/cuda/cuda_exec.c),
with float64 references computed here from the recurrences (independent
of any ONNX runtime), and <case>_iters_<c>.txt, how many iterations input
set c runs (tests/models/cond_test.py checks the count the Loop reports).

Both Loops compute their condition in the body, so strata cannot unroll
them; their carried values keep their shapes and they have no scan
outputs, so every iteration after the first can run on the device.

  cond_count  no trip count; the body stops at i + 1 == n (n an input, so
              the count is data).  Carried: y [16, 64] float,
              y' = 0.9 y + 0.1 tanh(y W + x) (a contraction: float32
              rounding does not grow with the count), and k int64, k' = k + 2.
              Inputs: cond_count_input_<c>_{x,n}.npy for n in 0, 1, 2, 7, 1000
              (c = 0..4); references cond_count_ref_<c>/{y,k}.npy; and
              cond_count_input_long_* for n = 20000, long enough to cancel
              on a GPU (cond_count_ref_long).
  cond_swap   trip count M (an input) and the body's condition i + 1 < n:
              the smaller one stops it.  Carried a, b, d [8, 32] float and
              c int64 with a' = b and b' = a (Identities: views of each
              other's input slots, so the copies into the next iteration's
              inputs must go through scratch), d' = d / 2 + a - b / 4, and
              c' = c + i + cond_in (reads the iteration number and the
              condition input every iteration).  Inputs:
              cond_swap_input_<c>_{a0,b0,m,n}.npy for (M, n) in (201, 300),
              (300, 50) (an odd count, so a swap left out shows);
              references cond_swap_ref_<c>/{a,b,d,c}.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
LONG = 20000  # cond_count's iterations for the cancel test (scripts/device/cond_tests.sh)


def const(name, arr):
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(arr, name))


def model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="strata cond_loop.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def cond_count(rng):
    H, W = 16, 64
    w = (rng.standard_normal((W, W)) * 0.5 / np.sqrt(W)).astype(np.float32)
    body = helper.make_graph(
        [const("a", np.array(0.9, np.float32)),
         const("b", np.array(0.1, np.float32)),
         const("one", np.array(1, np.int64)),
         const("two", np.array(2, np.int64)),
         helper.make_node("MatMul", ["y_in", "W"], ["yw"], name="body_mm"),
         helper.make_node("Add", ["yw", "x"], ["yx"], name="body_add"),
         helper.make_node("Tanh", ["yx"], ["t"], name="body_tanh"),
         helper.make_node("Mul", ["y_in", "a"], ["ya"], name="body_decay"),
         helper.make_node("Mul", ["t", "b"], ["tb"], name="body_pull"),
         helper.make_node("Add", ["ya", "tb"], ["y_out"], name="body_step"),
         helper.make_node("Add", ["k_in", "two"], ["k_out"], name="body_count"),
         helper.make_node("Add", ["i", "one"], ["i1"], name="body_next"),
         helper.make_node("Less", ["i1", "n"], ["cond_out"], name="body_more")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
         helper.make_tensor_value_info("y_in", F, [H, W]), helper.make_tensor_value_info("k_in", I64, [])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("y_out", F, [H, W]),
         helper.make_tensor_value_info("k_out", I64, [])])
    nodes = [const("zero", np.array(0, np.int64)),
             helper.make_node("Less", ["zero", "n"], ["go"], name="start_go"),
             helper.make_node("Neg", ["x"], ["y0"], name="start_y"),
             helper.make_node("Loop", ["", "go", "y0", "zero"], ["y", "k"], name="cond_count", body=body)]
    m = model("cond_count", nodes,
              [helper.make_tensor_value_info("x", F, [H, W]), helper.make_tensor_value_info("n", I64, [])],
              [helper.make_tensor_value_info("y", F, [H, W]), helper.make_tensor_value_info("k", I64, [])],
              [numpy_helper.from_array(w, "W")])
    x = rng.uniform(-1, 1, (H, W)).astype(np.float32)
    cases = []
    for n in (0, 1, 2, 7, 1000, LONG):
        y, k = -x.astype(np.float64), 0
        for i in range(n):  # iteration i runs when i < n (the condition before it)
            y = 0.9 * y + 0.1 * np.tanh(y @ w.astype(np.float64) + x.astype(np.float64))
            k += 2
        cases.append(({"x": x, "n": np.array(n, np.int64)}, {"y": y.astype(np.float32), "k": np.array(k, np.int64)}, n))
    return m, cases


def cond_swap(rng):
    S = [8, 32]
    body = helper.make_graph(
        [const("half", np.array(0.5, np.float32)),
         const("quarter", np.array(0.25, np.float32)),
         const("one", np.array(1, np.int64)),
         helper.make_node("Identity", ["b_in"], ["a_out"], name="body_pass_b"),
         helper.make_node("Identity", ["a_in"], ["b_out"], name="body_pass_a"),
         helper.make_node("Mul", ["d_in", "half"], ["dh"], name="body_decay"),
         helper.make_node("Add", ["dh", "a_in"], ["da"], name="body_pull_a"),
         helper.make_node("Mul", ["b_in", "quarter"], ["bq"], name="body_scale_b"),
         helper.make_node("Sub", ["da", "bq"], ["d_out"], name="body_push_b"),
         helper.make_node("Cast", ["cond_in"], ["ci"], name="body_cond", to=I64),
         helper.make_node("Add", ["c_in", "i"], ["ci2"], name="body_count"),
         helper.make_node("Add", ["ci2", "ci"], ["c_out"], name="body_count2"),
         helper.make_node("Add", ["i", "one"], ["i1"], name="body_next"),
         helper.make_node("Less", ["i1", "n"], ["cond_out"], name="body_more")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
         helper.make_tensor_value_info("a_in", F, S), helper.make_tensor_value_info("b_in", F, S),
         helper.make_tensor_value_info("d_in", F, S), helper.make_tensor_value_info("c_in", I64, [])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("a_out", F, S),
         helper.make_tensor_value_info("b_out", F, S), helper.make_tensor_value_info("d_out", F, S),
         helper.make_tensor_value_info("c_out", I64, [])])
    nodes = [const("zero", np.array(0, np.int64)),
             const("go", np.array(True)),
             helper.make_node("Neg", ["a0"], ["d0"], name="start_d"),
             helper.make_node("Loop", ["m", "go", "a0", "b0", "d0", "zero"], ["a", "b", "d", "c"], name="cond_swap",
                              body=body)]
    m = model("cond_swap", nodes,
              [helper.make_tensor_value_info("a0", F, S), helper.make_tensor_value_info("b0", F, S),
               helper.make_tensor_value_info("m", I64, []), helper.make_tensor_value_info("n", I64, [])],
              [helper.make_tensor_value_info("a", F, S), helper.make_tensor_value_info("b", F, S),
               helper.make_tensor_value_info("d", F, S), helper.make_tensor_value_info("c", I64, [])])
    a0 = rng.uniform(-1, 1, S).astype(np.float32)
    b0 = rng.uniform(-1, 1, S).astype(np.float32)
    cases = []
    for trips, n in ((201, 300), (300, 50)):
        runs = min(trips, n)
        a, b, d, c = a0.astype(np.float64), b0.astype(np.float64), -a0.astype(np.float64), 0
        cond = True
        for i in range(trips):
            if not cond:
                break
            a, b, d, c = b, a, 0.5 * d + a - 0.25 * b, c + i + int(cond)
            cond = i + 1 < n
        cases.append(({"a0": a0, "b0": b0, "m": np.array(trips, np.int64), "n": np.array(n, np.int64)},
                      {"a": a.astype(np.float32), "b": b.astype(np.float32), "d": d.astype(np.float32),
                       "c": np.array(c, np.int64)}, runs))
    return m, cases


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cond_loop.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(14)
    for name, make in (("cond_count", cond_count), ("cond_swap", cond_swap)):
        m, cases = make(rng)
        onnx.save(m, os.path.join(out, name + ".onnx"))
        for c, (ins, refs, iters) in enumerate(cases):
            # the long one is for cancelling (not one of the checked sets)
            tag = "long" if iters == LONG else str(c)
            for k, v in ins.items():
                np.save(os.path.join(out, "%s_input_%s_%s.npy" % (name, tag, k)), v)
            d = os.path.join(out, "%s_ref_%s" % (name, tag))
            os.makedirs(d, exist_ok=True)
            for k, v in refs.items():
                np.save(os.path.join(d, k + ".npy"), v)
            if tag != "long":
                with open(os.path.join(out, "%s_iters_%s.txt" % (name, tag)), "w") as f:
                    f.write("%d\n" % iters)


if __name__ == "__main__":
    main()
