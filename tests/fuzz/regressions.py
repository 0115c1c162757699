#!/usr/bin/python3
"""regressions.py DIR — writes every input that crashed a fuzzer into
DIR/{loader,npy,run}/, built from its description here (no binary is
committed); tests/fuzz/regressions.sh replays them.  Each entry says what
it broke and where it was fixed (tests/fuzz/README.md has the list)."""
import os
import shutil
import struct
import sys

CASES = {}   # name -> (targets, function returning bytes)


def case(*targets):
    def reg(fn):
        CASES[fn.__name__] = (targets, fn)
        return fn
    return reg


def npy_bytes(header):
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


def model_bytes(nodes, inputs, inits, opset=13):
    """A one-output model (output 'y', shape left to strata) as bytes."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs]
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    inits = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in inits]
    g = helper.make_graph(nodes, "g", ins, out, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


@case("npy")
def npy_shape_key_ends_header():
    # src/io/npy.c: the 'shape' key as the last thing in the header made the
    # reader look one byte past the end for its '(' (heap-buffer-overflow)
    return npy_bytes(b"{'descr': '<f4', 'fortran_order': False, 'shape':  ")



@case("npy")
def npy_zero_width_strings():
    # src/io/npy_str.c: '<S0' with a large shape passed the size check (zero
    # bytes per string) and asked malloc for a 2e9-entry pointer table
    # (libFuzzer: out-of-memory in CI)
    return npy_bytes(b"{'descr': '<S0', 'fortran_order': False, 'shape': (99, 999, 9999, 2), }  \n")


@case("loader", "run")
def reshape_shape_product_overflows():
    # src/ops/shape.c (Reshape's shape rule): the product of a constant
    # shape's dims overflowed int64 (UBSan: signed integer overflow)
    from onnx import helper
    return model_bytes([helper.make_node("Reshape", ["x", "shape"], ["y"])], [("x", [2, 3])],
                       [("shape", [2080641, 8796093022207, -1])])



@case("run")
def squeeze_without_inputs():
    # src/passes/specialize.c: a node with fewer inputs than its rule reads
    # (Squeeze with none) got the previous node's leftover input shapes, or
    # read past the array; now the slots are zeroed and the missing input
    # is named (found with STRATA_FUZZ_STRICT=1: it was an ST_ERR_INTERNAL)
    from onnx import helper
    return model_bytes([helper.make_node("Squeeze", [], ["y"])], [("x", [1, 3])], [])


@case("run")
def mul_with_two_outputs():
    # src/passes/specialize.c: a node listing more outputs than its op has
    # (Mul with two) was reported as ST_ERR_INTERNAL, a bug in strata
    from onnx import helper
    return model_bytes([helper.make_node("Mul", ["x", "x"], ["y", "z"])], [("x", [2, 3])], [])

# Found by reading the shape rules next to Reshape's (the same class of
# bug: untrusted constants in int64 arithmetic); replayed the same way.

I64_MAX = (1 << 63) - 1
I64_MIN = -(1 << 63)


@case("run")
def slice_step_near_int64_limits():
    # src/ops/shape.c slice_axis: (end - start + step - 1) / step overflowed
    # for a step near INT64_MAX, and -step for INT64_MIN
    from onnx import helper
    return model_bytes([helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", [4, 5])],
                       [("st", [0, 4]), ("en", [4, 0]), ("ax", [0, 1]), ("sp", [I64_MAX, I64_MIN])])


@case("run")
def tile_repeats_overflow():
    # src/ops/index.c infer_tile: dim * repeats overflowed
    from onnx import helper
    return model_bytes([helper.make_node("Tile", ["x", "r"], ["y"])], [("x", [4, 5])], [("r", [1 << 62, 1 << 62])])


@case("run")
def pad_pads_overflow():
    # src/ops/index.c infer_pad: dim + begin + end overflowed
    from onnx import helper
    return model_bytes([helper.make_node("Pad", ["x", "p"], ["y"])], [("x", [4, 5])],
                       [("p", [I64_MAX, 0, I64_MAX, 0])])


@case("run")
def range_span_overflow():
    # src/ops/index.c infer_range: limit - start overflowed
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("a", I64_MIN), ("b", I64_MAX), ("d", 1))]
    g = helper.make_graph([helper.make_node("Range", ["a", "b", "d"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@case("run")
def pool_window_overflow():
    # src/ops/conv.c window: (k - 1) * d and in + pads overflowed for
    # attributes near INT64_MAX
    from onnx import helper
    return model_bytes([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[I64_MAX],
                                         dilations=[1 << 62], pads=[I64_MAX, I64_MAX])],
                       [("x", [1, 1, 8])], [])


@case("run")
def resize_huge_scale():
    # src/ops/resize.c: floor(dim * scale) converted to int64 out of range,
    # and the tap table was sized from output dims before they were checked
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    inits = [numpy_helper.from_array(np.array([1, 1, 1e30, 1e30], np.float32), "s")]
    g = helper.make_graph([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@case("run")
def resize_huge_sizes():
    from onnx import helper
    return model_bytes([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest")],
                       [("x", [1, 1, 4, 4])], [("sz", [1, 1, 1 << 40, 1 << 40])])

@case("run")
def gemm_empty_output():
    # src/backends/cpu/k_linalg.c: Gemm with N = 0 divided by a zero column
    # count when splitting the output into tiles (UBSan: division by zero)
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Gemm", ["a", "b"], ["y"])], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 10]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [10, 0])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def main():
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    for t in ("loader", "npy", "run"):
        os.makedirs(os.path.join(out, t))
    for name, (targets, make) in sorted(CASES.items()):
        data = make()
        for t in targets:
            with open(os.path.join(out, t, name), "wb") as f:
                f.write(data)
    print(f"{len(CASES)} regression inputs in {out}")


if __name__ == "__main__":
    main()
