#!/usr/bin/python3
"""parity_ops.py — cases for the GPU kernels of issue 28 that the ONNX node
tests miss (their Einsum cases are float64 only; this onnx has no
GroupNormalization case; no ScatterND case has duplicate indices with a
reduction, no TopK case has ties), with float64 references computed here
by numpy from the ops' definitions.

  parity_ops.py gen OUTDIR
  parity_ops.py check STRATA OUTDIR BACKEND   (strata check --no-fallback --sanitize per case)

check exits 77 (skipped) when the backend is not available, 1 when a case
fails.  Tolerance: 1e-4 absolute plus 1e-4 relative (f32 sums of up to a
few hundred terms); integer outputs exactly.
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, save

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(2828)


def model(name, nodes, inputs, outputs, opset):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def write(out, name, m, feeds, refs):
    save(m, os.path.join(out, name + ".onnx"))
    for k, v in feeds.items():
        np.save(os.path.join(out, "%s_input_%s.npy" % (name, k)), v)
    d = os.path.join(out, name + "_ref")
    os.makedirs(d, exist_ok=True)
    for k, v in refs.items():
        np.save(os.path.join(d, k + ".npy"), v)


def f32(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def gen(out):
    os.makedirs(out, exist_ok=True)
    # Einsum: batched matmul, a diagonal, an ellipsis that broadcasts, a full contraction
    for name, eq, shapes in [("einsum_bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                             ("einsum_diag", "bii->bi", [(3, 4, 4)]),
                             ("einsum_ellipsis", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
                             ("einsum_dot", "ij,ij->", [(6, 7), (6, 7)])]:
        xs = [f32(*s) for s in shapes]
        names = ["x%d" % i for i in range(len(xs))]
        ref = np.einsum(eq, *[x.astype(np.float64) for x in xs]).astype(np.float32)
        m = model(name, [helper.make_node("Einsum", names, ["y"], equation=eq)],
                  [(n, F, list(x.shape)) for n, x in zip(names, xs)], [("y", F)], 13)
        write(out, name, m, dict(zip(names, xs)), {"y": ref})
    # GroupNormalization: scale per group (opset 18) and per channel (opset 21)
    for name, opset in [("groupnorm_18", 18), ("groupnorm_21", 21)]:
        n, c, g, h, w, eps = 2, 6, 3, 5, 7, 1e-5
        x = f32(n, c, h, w) * 3 + 0.5
        ps = (g,) if opset == 18 else (c,)
        sc, bi = f32(*ps), f32(*ps)
        xg = x.astype(np.float64).reshape(n, g, -1)
        yn = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)).reshape(n, c, h, w)
        if opset == 18:
            scc, bic = np.repeat(sc, c // g), np.repeat(bi, c // g)
        else:
            scc, bic = sc, bi
        ref = yn * scc.reshape(1, c, 1, 1) + bic.reshape(1, c, 1, 1)
        m = model(name, [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=g, epsilon=eps)],
                  [("x", F, [n, c, h, w]), ("s", F, list(ps)), ("b", F, list(ps))], [("y", F)], opset)
        write(out, name, m, {"x": x, "s": sc, "b": bi}, {"y": ref.astype(np.float32)})
    # ScatterND with duplicate indices: add (order-free) and none (last write wins, in index order)
    for name, red in [("scatternd_add", "add"), ("scatternd_mul", "mul")]:
        data = f32(6, 4)
        idx = np.array([[1], [3], [1], [5], [1]], dtype=np.int64)
        upd = f32(5, 4)
        ref = data.astype(np.float64)
        for t in range(idx.shape[0]):
            if red == "add":
                ref[idx[t, 0]] += upd[t]
            else:
                ref[idx[t, 0]] *= upd[t]
        m = model(name, [helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction=red)],
                  [("d", F, [6, 4]), ("i", I64, [5, 1]), ("u", F, [5, 4])], [("y", F)], 16)
        write(out, name, m, {"d": data, "i": idx, "u": upd}, {"y": ref.astype(np.float32)})
    # TopK with ties (integer-valued floats): by value, then the lower index first
    for name, largest in [("topk_ties_largest", 1), ("topk_ties_smallest", 0)]:
        x = RNG.integers(0, 6, (3, 40)).astype(np.float32)
        k = 9
        order = np.array([sorted(range(40), key=lambda i: ((-x[r, i]) if largest else x[r, i], i))[:k] for r in range(3)])
        vals = np.take_along_axis(x, order, 1)
        m = model(name, [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)],
                  [("x", F, [3, 40]), ("k", I64, [1])], [("v", F), ("i", I64)], 11)
        write(out, name, m, {"x": x, "k": np.array([k], dtype=np.int64)}, {"v": vals, "i": order.astype(np.int64)})
    # CumSum, reverse and exclusive along axis 1 of a 3-d tensor
    x = f32(2, 30, 3)
    ref = np.flip(np.cumsum(np.flip(x.astype(np.float64), 1), 1), 1) - x
    m = model("cumsum_rev_excl", [helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)],
              [("x", F, [2, 30, 3]), ("a", I64, [])], [("y", F)], 14)
    write(out, "cumsum_rev_excl", m, {"x": x, "a": np.array(1, dtype=np.int64)}, {"y": ref.astype(np.float32)})


def check(strata, out, backend):
    cases = sorted(f[:-5] for f in os.listdir(out) if f.endswith(".onnx"))
    fails = 0
    for c in cases:
        ins = sorted(f for f in os.listdir(out) if f.startswith(c + "_input_"))
        args = [strata, "check", os.path.join(out, c + ".onnx"), "--ref-dir", os.path.join(out, c + "_ref"),
                "--atol", "1e-4", "--rtol", "1e-4", "--backend", backend, "--no-fallback", "--sanitize"]
        for f in ins:
            args += ["-i", "%s=%s" % (f[len(c) + 7:-4], os.path.join(out, f))]
        r = subprocess.run(args, capture_output=True, text=True)
        text = (r.stdout + r.stderr).strip()
        if "no OpenCL" in text or "not available" in text or "no CUDA device" in text:
            print("SKIP: backend %s is not available: %s" % (backend, text.splitlines()[-1]))
            return 77
        print("%s %s: %s" % ("PASS" if r.returncode == 0 else "FAIL", c, " | ".join(text.splitlines()[-3:])))
        fails += r.returncode != 0
    print("%d of %d cases passed on %s" % (len(cases) - fails, len(cases), backend))
    return 1 if fails or not cases else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
    print(__doc__)
    sys.exit(2)
