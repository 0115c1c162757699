#!/usr/bin/env python3
"""conv_shapes.py OUTDIR — bench/cpu/run.sh's single-Conv cases (issue 28):

  conv5x1   [2, 256, 512, 1] by a 5x1 kernel, 256 -> 256 channels, pads 2
            (the tf2onnx text classifier's conv)
  conv1x1   [2, 1280, 512, 1] by a 1x1 kernel, 1280 -> 256 channels: the
            same multiply-adds (256 * 5 = 1280 inputs per output), the
            target the 5x1 conv is held to (within 20%)

Each as OUTDIR/NAME.onnx with a random input OUTDIR/NAME_input.npy."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(28)
for name, xs, ws, attrs in [("conv5x1", [2, 256, 512, 1], [256, 256, 5, 1], dict(pads=[2, 0, 2, 0])),
                            ("conv1x1", [2, 1280, 512, 1], [256, 1280, 1, 1], {})]:
    w = numpy_helper.from_array((rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(ws[0]).astype(np.float32), "b")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], name,
                          [helper.make_tensor_value_info("x", TP.FLOAT, xs)],
                          [helper.make_tensor_value_info("y", TP.FLOAT, None)], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))
    np.save(os.path.join(out, name + "_input.npy"), rng.uniform(-1, 1, xs).astype(np.float32))
