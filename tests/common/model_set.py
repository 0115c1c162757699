"""model_set.py — small one-graph ONNX models, built in a test with the
onnx package, saved with fresh random inputs for the strata command line.

The device tests (tests/opencl/opencl_test.py, tests/vulkan/vulkan_test.py)
both build such models to reach kernel variants the node tests are too
small for; this is the one copy of how they are written out.

    ms = ModelSet(tmp)
    ms.save("name", nodes, [("x", [2, 3])], ["y"], {"w": array})
    for name, path, feeds in ms.models: strata run path *feeds ...
"""
import os
import time

import numpy as np


class ModelSet:
    def __init__(self, tmp, opset=13):
        self.tmp = tmp
        self.opset = opset
        # fresh inputs each run (the tests' rule); the tests draw weights from it too
        self.rng = np.random.default_rng(int(time.time() * 1e6) % (1 << 32))
        self.models = []

    def save(self, name, nodes, inputs, outputs, inits):
        """Writes graph `name` to TMP/name.onnx: f32 inputs [(name, shape)],
        f32 outputs by name (shapes left to inference), initializers
        {name: array}; draws each input from a standard normal into
        TMP/name_input.npy and adds (name, path, ["-i", "input=file", ...])
        to self.models."""
        from onnx import TensorProto as T, helper, numpy_helper, save
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, T.FLOAT, None) for n in outputs],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
        path = os.path.join(self.tmp, name + ".onnx")
        save(helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)]), path)
        feeds = []
        for n, s in inputs:
            f = os.path.join(self.tmp, "%s_%s.npy" % (name, n))
            np.save(f, self.rng.standard_normal(s).astype(np.float32))
            feeds += ["-i", "%s=%s" % (n, f)]
        self.models.append((name, path, feeds))
