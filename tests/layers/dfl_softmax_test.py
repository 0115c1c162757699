#!/usr/bin/env python3
"""dfl_softmax_test.py — Softmax and LogSoftmax over a short axis whose
rows sit side by side in memory, as YOLOv8's DFL head has it, against a
float64 reference.

    dfl_softmax_test.py STRATA [BACKEND]

The graph: x [N, 4*B, A] -> Reshape [N, 4, B, A] -> Transpose (0, 2, 1, 3)
-> Softmax over axis 1 (B bins, each a stride of A apart, neighbouring
rows one element apart) -> y, and LogSoftmax of the same view -> z.  On
CUDA, shapes with A a multiple of 8 take the vectorized short-row kernel
(k_norm.cu, softmax_vec_kernel), others the thread-per-row kernel.  Runs
f32 and --precision f16 for (B, A) in (16, 96), (16, 100), (7, 64), and
checks every element of y and z against numpy float64 on the same random
inputs: max |d| / max |ref| <= 1e-5 in f32 and 5e-3 in f16.  Outputs go to
fresh directories.  Exit 77 when the backend is not available (CTest
reports it skipped).
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
rng = np.random.default_rng(53)


def build(n, b, a):
    shape = numpy_helper.from_array(np.array([n, 4, b, a], dtype=np.int64), "shape")
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("Softmax", ["t"], ["y"], axis=1),
        helper.make_node("LogSoftmax", ["t"], ["z"], axis=1),
    ]
    g = helper.make_graph(nodes, "dfl", [helper.make_tensor_value_info("x", TP.FLOAT, [n, 4 * b, a])],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None),
                           helper.make_tensor_value_info("z", TP.FLOAT, None)], [shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def reference(x, b):
    n, _, a = x.shape
    t = x.astype(np.float64).reshape(n, 4, b, a).transpose(0, 2, 1, 3)
    m = t.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(t - m).sum(axis=1, keepdims=True))
    return np.exp(t - lse), t - lse


fails = 0
with tempfile.TemporaryDirectory() as tmp:
    for b, a in ((16, 96), (16, 100), (7, 64)):
        n = 2
        x = (rng.standard_normal((n, 4 * b, a)) * 3).astype(np.float32)
        path = os.path.join(tmp, "dfl_%d_%d.onnx" % (b, a))
        onnx.save(build(n, b, a), path)
        xin = os.path.join(tmp, "x_%d_%d.npy" % (b, a))
        np.save(xin, x)
        for prec, tol in (("f32", 1e-5), ("f16", 5e-3)):
            xr = x if prec == "f32" else x.astype(np.float16).astype(np.float32)
            ry, rz = reference(xr, b)
            out = os.path.join(tmp, "out_%d" % len(os.listdir(tmp)))
            os.makedirs(out)
            r = subprocess.run([STRATA, "run", path, "-i", "x=" + xin, "--backend", BACKEND, "--precision", prec, "-q",
                                "-o", out], capture_output=True, text=True)
            text = r.stdout + r.stderr
            if r.returncode != 0 and ("not available" in text or "no CUDA device" in text or "no OpenCL" in text
                                      or "no Vulkan" in text):
                print("skipped: backend %s not available" % BACKEND)
                sys.exit(77)
            if r.returncode != 0:
                print("FAIL %s B=%d A=%d %s: strata run: %s" % (BACKEND, b, a, prec, text.strip()[-300:]))
                fails += 1
                continue
            for name, ref in (("y", ry), ("z", rz)):
                got = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
                if got.shape != ref.shape:
                    print("FAIL %s B=%d A=%d %s %s: shape %s, expected %s" % (BACKEND, b, a, prec, name, got.shape, ref.shape))
                    fails += 1
                    continue
                err = np.abs(got - ref).max() / np.abs(ref).max()
                ok = err <= tol
                fails += not ok
                print("%s %s B=%d A=%d %s %s: max |d| / max |ref| %.2e against float64 (tolerance %.0e), %d elements" % (
                    "PASS" if ok else "FAIL", BACKEND, b, a, prec, name, err, tol, got.size))
sys.exit(1 if fails else 0)
