#!/usr/bin/env python3
"""conv_kx1_test.py — k x 1, 1 x k and 1-D convolutions on the CPU against
ONNX Runtime, with random inputs and weights.

    conv_kx1_test.py STRATA ROOT

k x 1 convs on inputs one pixel wide run as 1-D convs along H
(backends/cpu/k_conv_fast.c); this checks them and their neighbours
(strides, dilations, groups, depthwise, asymmetric pads, a bias or none,
inputs wider than one pixel, true 1-D convs, 1 x k) with `strata check`
against ORT's outputs (scripts/ort/run.js), |d| <= 1e-4 + 1e-4 |ref| (f32
sums of up to 1,280 terms in another order; values of order 1).  Outputs
are written to a fresh directory, so nothing stale can pass.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

STRATA, ROOT = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)

# name, input shape, weight shape, Conv attributes, with bias
CASES = [
    ("k5x1_w1", [2, 64, 96, 1], [48, 64, 5, 1], dict(pads=[2, 0, 2, 0]), True),
    ("k5x1_w1_nopad", [1, 32, 50, 1], [16, 32, 5, 1], {}, False),
    ("k3x1_w1_stride2", [2, 24, 61, 1], [40, 24, 3, 1], dict(strides=[2, 1], pads=[1, 0, 1, 0]), True),
    ("k3x1_w1_dil3", [1, 40, 70, 1], [24, 40, 3, 1], dict(dilations=[3, 1], pads=[3, 0, 3, 0]), True),
    ("k5x1_w1_groups4", [2, 64, 80, 1], [64, 16, 5, 1], dict(group=4, pads=[2, 0, 2, 0]), True),
    ("k5x1_w1_depthwise", [2, 32, 77, 1], [32, 1, 5, 1], dict(group=32, pads=[2, 0, 2, 0]), True),
    ("k4x1_w1_asym", [1, 16, 45, 1], [20, 16, 4, 1], dict(pads=[3, 0, 0, 0], dilations=[2, 1]), True),
    ("k7x1_w1_stride3_dil2", [1, 8, 100, 1], [12, 8, 7, 1], dict(strides=[3, 1], dilations=[2, 1], pads=[5, 0, 4, 0]), True),
    ("k5x1_w3", [1, 16, 40, 3], [24, 16, 5, 1], dict(pads=[2, 0, 2, 0]), True),
    ("k1x5_h1", [2, 32, 1, 90], [24, 32, 1, 5], dict(pads=[0, 2, 0, 2]), True),
    ("k1x5_h1_groups2_dil2", [1, 32, 1, 64], [32, 16, 1, 5], dict(group=2, dilations=[1, 2], pads=[0, 4, 0, 4]), True),
    ("conv1d_k5", [2, 48, 120], [32, 48, 5], dict(pads=[2, 2]), True),
    ("conv1d_k3_stride2_dil2_groups3", [1, 48, 99], [30, 16, 3], dict(strides=[2], dilations=[2], group=3, pads=[2, 1]), True),
    ("k5x1_w1_wide", [2, 256, 64, 1], [256, 256, 5, 1], dict(pads=[2, 0, 2, 0]), True),
]


def main():
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        for name, xs, ws, attrs, bias in CASES:
            inits = [numpy_helper.from_array((rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32), "w")]
            ins = ["x", "w"]
            if bias:
                inits.append(numpy_helper.from_array(rng.standard_normal(ws[0]).astype(np.float32), "b"))
                ins.append("b")
            g = helper.make_graph([helper.make_node("Conv", ins, ["y"], **attrs)], name,
                                  [helper.make_tensor_value_info("x", TP.FLOAT, xs)],
                                  [helper.make_tensor_value_info("y", TP.FLOAT, None)], inits)
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
            m.ir_version = 8
            mp, xp, ref = os.path.join(d, name + ".onnx"), os.path.join(d, name + "_x.npy"), os.path.join(d, name + "_ref")
            onnx.save(m, mp)
            np.save(xp, rng.uniform(-1, 1, xs).astype(np.float32))
            os.makedirs(ref)
            r = subprocess.run(["node", os.path.join(ROOT, "scripts/ort/run.js"), mp, ref, xp], capture_output=True, text=True)
            if r.returncode:
                print(f"{name}: ORT failed: {r.stderr.strip()}")
                fails += 1
                continue
            for threads in ("1", "2"):
                r = subprocess.run([STRATA, "check", mp, "-i", xp, "--ref-dir", ref, "--atol", "1e-4", "--rtol", "1e-4",
                                    "--threads", threads], capture_output=True, text=True)
                line = r.stdout.strip().splitlines()[0] if r.stdout.strip() else r.stderr.strip()
                ok = r.returncode == 0
                fails += not ok
                print(f"{name} ({threads} threads): {line}{'' if ok else '  FAIL ' + r.stderr.strip()}")
    print("PASS" if not fails else f"FAIL: {fails}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
