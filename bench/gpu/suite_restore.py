#!/usr/bin/env python3
"""suite_restore.py IN.onnx OUT.onnx — a graph that bench/gpu/suite.sh
returned without its weights (SUITE_GRAPHS=1), with random weights of the
same dims again, to plan and profile it on a machine without the GPU."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

m = onnx.load(sys.argv[1])
g = np.random.default_rng(0)
for i, t in enumerate(m.graph.initializer):
    if t.doc_string == "stripped":
        dt = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
        a = (g.standard_normal(tuple(t.dims)) * 0.05).astype(dt)
        n = numpy_helper.from_array(a, t.name)
        m.graph.initializer[i].CopyFrom(n)
onnx.save(m, sys.argv[2])
