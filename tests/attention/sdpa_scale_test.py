#!/usr/bin/env python3
"""sdpa_scale_test.py — PyTorch's scaled_dot_product_attention export, with
sqrt(scale) multiplied into Q and into K^T before the scores' MatMul, fused
into one FusedAttention whose scale is the product (passes/fuse_attention.c,
split_scale), against a float64 reference.

    sdpa_scale_test.py STRATA [BACKEND]

Checks, per dtype (f32 on BACKEND, then --precision f16):
  - where the backend fuses attention in that dtype (the CPU and OpenCL in
    f32, CUDA in f16), the plan fuses both Muls, the Softmax and the
    scores' MatMul into the attention (`strata inspect --plan` lists them
    as fused), so removing the fold fails this test;
  - every output element against numpy float64 on the same random inputs:
    |d| <= 2e-5 in f32 (a 32-term dot product and a softmax over 29 keys,
    values of order 1) and 4e-3 in f16 (inputs and output rounded to f16).
Outputs go to a fresh directory, so nothing stale can pass.  Exit 77 when
the backend is not available (CTest reports it skipped).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

STRATA = sys.argv[1]
BACKEND = sys.argv[2] if len(sys.argv) > 2 else "cpu"
B, H, TQ, TK, D = 2, 3, 23, 29, 32
rng = np.random.default_rng(11)
q = rng.standard_normal((B, H, TQ, D)).astype(np.float32)
k = rng.standard_normal((B, H, TK, D)).astype(np.float32)
v = rng.standard_normal((B, H, TK, D)).astype(np.float32)
half = np.float32(D ** -0.25)

nodes = [
    helper.make_node("Mul", ["q", "s"], ["qs"], name="q_scale"),
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="k_t"),
    helper.make_node("Mul", ["kt", "s"], ["kts"], name="k_scale"),
    helper.make_node("MatMul", ["qs", "kts"], ["scores"], name="scores"),
    helper.make_node("Softmax", ["scores"], ["p"], axis=-1, name="softmax"),
    helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
]
inputs = [helper.make_tensor_value_info(n, TP.FLOAT, list(a.shape)) for n, a in (("q", q), ("k", k), ("v", v))]
g = helper.make_graph(nodes, "sdpa", inputs, [helper.make_tensor_value_info("y", TP.FLOAT, None)],
                      [numpy_helper.from_array(np.array(half, np.float32), "s")])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), 2, 3) * (float(half) ** 2)
s = np.exp(s - s.max(-1, keepdims=True))
ref = (s / s.sum(-1, keepdims=True)) @ v.astype(np.float64)

FUSES = {("cpu", "f32"), ("opencl", "f32"), ("cuda", "f16")}
fails = 0
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "sdpa.onnx")
    onnx.save(model, path)
    ins = []
    for n, a in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(d, n + ".npy"), a)
        ins += ["-i", "%s=%s" % (n, os.path.join(d, n + ".npy"))]
    for prec, tol in (("f32", 2e-5), ("f16", 4e-3)):
        plan = subprocess.run([STRATA, "inspect", path, "--plan", "--backend", BACKEND, "--precision", prec, *ins],
                              capture_output=True, text=True)
        text = plan.stdout + plan.stderr
        if plan.returncode != 0 and ("not available" in text or "no CUDA device" in text or "no OpenCL" in text):
            print("skipped: backend %s not available" % BACKEND)
            sys.exit(77)
        fused = [l.split()[1:3] for l in text.splitlines() if l.strip().startswith("fused")]
        names = {f[1] for f in fused if len(f) > 1}
        want = {"q_scale", "k_scale", "scores", "softmax"}
        if (BACKEND, prec) in FUSES and not want <= names:
            print("FAIL %s %s: the plan fuses %s, not all of %s" % (BACKEND, prec, sorted(names), sorted(want)))
            fails += 1
        out = os.path.join(d, "out_" + prec)
        os.makedirs(out)
        r = subprocess.run([STRATA, "run", path, *ins, "--backend", BACKEND, "--precision", prec, "-q", "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s %s: strata run: %s" % (BACKEND, prec, (r.stderr or r.stdout).strip()[-300:]))
            fails += 1
            continue
        got = np.load(os.path.join(out, "y.npy")).astype(np.float64)
        if got.shape != ref.shape:
            print("FAIL %s %s: shape %s, expected %s" % (BACKEND, prec, got.shape, ref.shape))
            fails += 1
            continue
        err = np.abs(got - ref).max()
        ok = err <= tol
        fails += not ok
        print("%s %s %s: max |d| %.2e against float64 (tolerance %.0e), %d elements" % (
            "PASS" if ok else "FAIL", BACKEND, prec, err, tol, got.size))
sys.exit(1 if fails else 0)
