#!/usr/bin/python3
"""bad_inputs.py — the bad-input catalogue: one malformed file or argument
per case, fed to `strata run`, which must refuse it cleanly.

usage: bad_inputs.py STRATA CASE     run one case (CTest runs each as a test)
       bad_inputs.py STRATA --all    run every case, print a table
       bad_inputs.py --list          the case names

Every file is generated here, at test time, from a small valid model built
with the onnx package (nothing binary is committed).  Each case asserts
that `strata run ... -o EMPTY_DIR`:
  - exits with status 1 (not a signal, not a hang: a 60 s timeout),
  - prints exactly one line on stderr, starting "strata: " and containing
    the case's keywords (what a reader needs to find the problem),
  - prints nothing on stdout,
  - leaves the output directory empty.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

TIMEOUT_S = 60

# ---- the valid model the cases start from -------------------------------


def onnx_mods():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    return onnx, TensorProto, helper, numpy_helper


def base_graph(w_init=None, nodes=None, inputs=None, outputs=None, inits=None):
    """x[2,3] -> MatMul(W[3,4]) -> h -> Relu -> y[2,4]."""
    onnx, TP, helper, nh = onnx_mods()
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    if nodes is None:
        nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
                 helper.make_node("Relu", ["h"], ["y"], name="relu")]
    if inputs is None:
        inputs = [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])]
    if outputs is None:
        outputs = [helper.make_tensor_value_info("y", TP.FLOAT, [2, 4])]
    if inits is None:
        inits = [w_init if w_init is not None else nh.from_array(w, "W")]
    return helper.make_graph(nodes, "g", inputs, outputs, inits)


def make_model(graph, opset=13):
    onnx, TP, helper, nh = onnx_mods()
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="bad_inputs")
    m.ir_version = 8
    return m


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def valid_model(d):
    return save(make_model(base_graph()), os.path.join(d, "model.onnx"))


def npy(d, name, arr):
    p = os.path.join(d, name)
    np.save(p, arr)
    return p


def external_w(location, length=None):
    """W as external data at `location` (48 bytes of f32 needed)."""
    onnx, TP, helper, nh = onnx_mods()
    t = TP()
    t.name = "W"
    t.data_type = TP.FLOAT
    t.dims.extend([3, 4])
    t.data_location = TP.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", location
    if length is not None:
        e = t.external_data.add()
        e.key, e.value = "length", str(length)
    return t


# ---- the cases: each returns (strata arguments after "run", keywords) -----
# d is the case's scratch directory; the output directory is separate.

def c_empty_file(d):
    return [write(os.path.join(d, "m.onnx"), b"")], ["empty"]


def c_truncated_model(d):
    data = open(valid_model(d), "rb").read()
    return [write(os.path.join(d, "t.onnx"), data[:len(data) // 2])], ["does not parse", "truncated"]


def c_random_bytes(d):
    rng = np.random.default_rng(7)
    return [write(os.path.join(d, "r.onnx"), rng.bytes(4096))], ["does not parse"]


def c_tensor_proto(d):
    onnx, TP, helper, nh = onnx_mods()
    t = nh.from_array(np.ones((2, 3), np.float32), "t")
    return [write(os.path.join(d, "t.onnx"), t.SerializeToString())], ["not an ONNX model", "TensorProto"]


def c_graph_proto(d):
    return [write(os.path.join(d, "g.onnx"), base_graph().SerializeToString())], ["not an ONNX model", "GraphProto"]


def c_model_without_graph(d):
    # a ModelProto with ir_version and opset_import, but no graph
    onnx, TP, helper, nh = onnx_mods()
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.append(helper.make_opsetid("", 13))
    return [write(os.path.join(d, "m.onnx"), m.SerializeToString())], ["not an ONNX model", "no graph"]


def c_opset_too_new(d):
    return [save(make_model(base_graph(), opset=99), os.path.join(d, "m.onnx"))], ["opset 99", "up to"]


def c_unknown_op(d):
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("FrobnicateX", ["h"], ["y"], name="frob")]
    return [save(make_model(base_graph(nodes=nodes)), os.path.join(d, "m.onnx"))], \
        ["FrobnicateX", "frob", "ai.onnx", "opset 13"]


def c_unknown_domain_op(d):
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Gelu", ["h"], ["y"], name="g", domain="com.example")]
    m = make_model(base_graph(nodes=nodes))
    m.opset_import.append(helper.make_opsetid("com.example", 3))
    return [save(m, os.path.join(d, "m.onnx"))], ["Gelu", "com.example", "opset 3"]


def c_node_missing_input(d):
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("Squeeze", [], ["h"], name="sq"),
             helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    g = base_graph(nodes=nodes, outputs=[helper.make_tensor_value_info("y", TP.FLOAT, [2, 4]),
                                         helper.make_tensor_value_info("h", TP.FLOAT, None)])
    return [save(make_model(g), os.path.join(d, "m.onnx"))], ["'sq'", "Squeeze", "input 0 is missing"]


def c_cycle(d):
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
             helper.make_node("Relu", ["a"], ["b"], name="n2"),
             helper.make_node("MatMul", ["a", "W"], ["y"], name="mm")]
    return [save(make_model(base_graph(nodes=nodes)), os.path.join(d, "m.onnx"))], ["cycle"]


def c_duplicate_value(d):
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["h"], name="relu"),
             helper.make_node("Relu", ["h"], ["y"], name="relu2")]
    return [save(make_model(base_graph(nodes=nodes)), os.path.join(d, "m.onnx"))], ["'h'", "duplicate"]


def c_undefined_input(d):
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "nowhere"], ["y"], name="add")]
    return [save(make_model(base_graph(nodes=nodes)), os.path.join(d, "m.onnx"))], ["'nowhere'", "not produced"]


def c_initializer_size(d):
    onnx, TP, helper, nh = onnx_mods()
    t = nh.from_array(np.ones((3, 4), np.float32), "W")
    t.raw_data = t.raw_data[:40]
    return [save(make_model(base_graph(w_init=t)), os.path.join(d, "m.onnx"))], ["'W'", "40 bytes", "48"]


def c_initializer_count(d):
    onnx, TP, helper, nh = onnx_mods()
    t = TP()
    t.name, t.data_type = "W", TP.FLOAT
    t.dims.extend([3, 4])
    t.float_data.extend([1.0] * 11)
    return [save(make_model(base_graph(w_init=t)), os.path.join(d, "m.onnx"))], ["'W'", "11", "12"]


def c_initializer_no_values(d):
    # 2^38 floats declared, none given: refused as malformed, not allocated
    onnx, TP, helper, nh = onnx_mods()
    t = TP()
    t.name, t.data_type = "W", TP.FLOAT
    t.dims.extend([1 << 38])
    return [save(make_model(base_graph(w_init=t)), os.path.join(d, "m.onnx"))], ["'W'", "has 0", "274877906944"]


def c_negative_dim(d):
    onnx, TP, helper, nh = onnx_mods()
    t = TP()
    t.name, t.data_type = "W", TP.FLOAT
    t.dims.extend([3, -4])
    return [save(make_model(base_graph(w_init=t)), os.path.join(d, "m.onnx"))], ["'W'", "negative"]


def c_negative_input_dim(d):
    onnx, TP, helper, nh = onnx_mods()
    g = base_graph()
    g.input[0].type.tensor_type.shape.dim[1].dim_value = -3
    return [save(make_model(g), os.path.join(d, "m.onnx"))], ["'x'", "negative"]


def c_dims_overflow(d):
    onnx, TP, helper, nh = onnx_mods()
    t = TP()
    t.name, t.data_type = "W", TP.FLOAT
    t.dims.extend([1 << 40, 1 << 40])
    return [save(make_model(base_graph(w_init=t)), os.path.join(d, "m.onnx"))], ["'W'", "overflow"]


def c_input_dims_overflow(d):
    # a declared input shape of 2^62 x 2^62: drawing it at random must not wrap
    onnx, TP, helper, nh = onnx_mods()
    g = base_graph(inputs=[helper.make_tensor_value_info("x", TP.FLOAT, [1 << 62, 1 << 62])],
                   nodes=[helper.make_node("Relu", ["x"], ["y"], name="relu")], inits=[])
    return [save(make_model(g), os.path.join(d, "m.onnx"))], ["'x'", "too large"]


def c_external_dotdot(d):
    os.makedirs(os.path.join(d, "m"))
    write(os.path.join(d, "w.bin"), bytes(48))
    m = make_model(base_graph(w_init=external_w("../w.bin")))
    return [save(m, os.path.join(d, "m", "m.onnx"))], ["'W'", "../w.bin", "leaves the model's directory"]


def c_external_absolute(d):
    p = write(os.path.join(d, "w.bin"), bytes(48))
    os.makedirs(os.path.join(d, "m"))
    m = make_model(base_graph(w_init=external_w(os.path.abspath(p))))
    return [save(m, os.path.join(d, "m", "m.onnx"))], ["'W'", "absolute"]


def c_external_symlink(d):
    os.makedirs(os.path.join(d, "m"))
    p = write(os.path.join(d, "w.bin"), bytes(48))
    os.symlink(os.path.abspath(p), os.path.join(d, "m", "w.bin"))
    m = make_model(base_graph(w_init=external_w("w.bin")))
    return [save(m, os.path.join(d, "m", "m.onnx"))], ["'W'", "outside the model's directory"]


def c_external_fifo(d):
    # a named pipe in the model's directory: opening it would block forever
    os.mkfifo(os.path.join(d, "w.bin"))
    m = make_model(base_graph(w_init=external_w("w.bin")))
    return [save(m, os.path.join(d, "m.onnx"))], ["'W'", "not a regular file"]


def c_external_short(d):
    write(os.path.join(d, "w.bin"), bytes(20))
    m = make_model(base_graph(w_init=external_w("w.bin")))
    return [save(m, os.path.join(d, "m.onnx"))], ["'W'", "too short", "48"]


def c_external_missing(d):
    m = make_model(base_graph(w_init=external_w("nothere.bin")))
    return [save(m, os.path.join(d, "m.onnx"))], ["'W'", "nothere.bin", "No such file"]


def c_external_length(d):
    write(os.path.join(d, "w.bin"), bytes(48))
    m = make_model(base_graph(w_init=external_w("w.bin", length=44)))
    return [save(m, os.path.join(d, "m.onnx"))], ["'W'", "length 44", "48"]


def c_input_wrong_rank(d):
    return [valid_model(d), "-i", "x=" + npy(d, "x.npy", np.ones(6, np.float32))], ["'x'", "rank 2", "got 1"]


def c_input_wrong_shape(d):
    return [valid_model(d), "-i", "x=" + npy(d, "x.npy", np.ones((2, 5), np.float32))], ["'x'", "dim 1 must be 3"]


def c_input_wrong_dtype(d):
    return [valid_model(d), "-i", "x=" + npy(d, "x.npy", np.ones((2, 3), np.int64))], ["'x'", "int64", "float32"]


def c_input_unknown_name(d):
    return [valid_model(d), "-i", "nope=" + npy(d, "x.npy", np.ones((2, 3), np.float32))], ["'nope'"]


def good_npy_bytes():
    import io
    b = io.BytesIO()
    np.save(b, np.ones((2, 3), np.float32))
    return b.getvalue()


def c_npy_bad_magic(d):
    data = bytearray(good_npy_bytes())
    data[1:6] = b"NUMPZ"
    return [valid_model(d), "-i", write(os.path.join(d, "x.npy"), bytes(data))], ["x.npy", "magic"]


def c_npy_truncated_header(d):
    data = good_npy_bytes()
    return [valid_model(d), "-i", write(os.path.join(d, "x.npy"), data[:40])], ["x.npy", "truncated", "header"]


def c_npy_truncated_data(d):
    data = good_npy_bytes()
    return [valid_model(d), "-i", write(os.path.join(d, "x.npy"), data[:-5])], ["x.npy", "truncated", "19 bytes"]


def c_npy_unsupported_dtype(d):
    return [valid_model(d), "-i", "x=" + npy(d, "x.npy", np.ones((2, 3), np.complex64))], ["x.npy", "dtype", "<c8"]


def c_npy_big_endian(d):
    return [valid_model(d), "-i", "x=" + npy(d, "x.npy", np.ones((2, 3), ">f4"))], ["x.npy", "dtype", ">f4"]


def c_npy_missing(d):
    return [valid_model(d), "-i", "x=" + os.path.join(d, "none.npy")], ["none.npy"]


def c_memory_limit(d):
    # 256x256 f32 activations (256 KiB each, three live at once) against a
    # 300 kB limit that the input alone fits
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"),
             helper.make_node("Sigmoid", ["a"], ["b"], name="s"),
             helper.make_node("Add", ["a", "b"], ["y"], name="add")]
    g = base_graph(nodes=nodes, inputs=[helper.make_tensor_value_info("x", TP.FLOAT, [256, 256])],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, [256, 256])], inits=[])
    x = npy(d, "x.npy", np.ones((256, 256), np.float32))
    return [save(make_model(g), os.path.join(d, "m.onnx")), "-i", x, "--memory-limit", "300000"], \
        ["activations", "memory limit", "300000"]


def huge_const_model(d, op, shape):
    onnx, TP, helper, nh = onnx_mods()
    shp = nh.from_array(np.array(shape, np.int64), "shape")
    if op == "ConstantOfShape":
        nodes = [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="cos",
                                  value=nh.from_array(np.array([1], np.float32))),
                 helper.make_node("Mul", ["c", "x"], ["y"], name="mul")]
        inits = [shp]
    else:
        one = nh.from_array(np.ones((1, 1), np.float32), "one")
        nodes = [helper.make_node("Expand", ["one", "shape"], ["c"], name="expand"),
                 helper.make_node("Mul", ["c", "x"], ["y"], name="mul")]
        inits = [shp, one]
    g = base_graph(nodes=nodes, inputs=[helper.make_tensor_value_info("x", TP.FLOAT, [1, 1])],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, None)], inits=inits)
    return save(make_model(g), os.path.join(d, "m.onnx"))


def c_constantofshape_huge(d):
    # 2^20 x 2^20 f32 = 4 TiB, built at plan time: refused, never attempted
    return [huge_const_model(d, "ConstantOfShape", [1 << 20, 1 << 20])], ["'cos'", "memory limit"]


def c_constantofshape_limit(d):
    # 4096 x 4096 f32 = 64 MiB, under the machine's memory, over the given limit
    return [huge_const_model(d, "ConstantOfShape", [4096, 4096]), "--memory-limit", "1000000"], \
        ["'cos'", "memory limit"]


def c_expand_huge(d):
    return [huge_const_model(d, "Expand", [1 << 20, 1 << 20])], ["'expand'", "memory limit"]


def c_expand_input_huge(d):
    # Expand of a graph input to 2^16 x 2^16 runs as a command: the arena
    # it needs (16 GiB) is refused against the limit
    onnx, TP, helper, nh = onnx_mods()
    shp = nh.from_array(np.array([1 << 16, 1 << 16], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")]
    g = base_graph(nodes=nodes, inputs=[helper.make_tensor_value_info("x", TP.FLOAT, [1, 1])],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, None)], inits=[shp])
    return [save(make_model(g), os.path.join(d, "m.onnx")), "--memory-limit", "1000000"], ["memory limit"]


def c_random_input_huge(d):
    # an input declared 65536 x 65536 f32 (16 GiB), drawn at random: refused
    # against the limit before it is allocated
    onnx, TP, helper, nh = onnx_mods()
    g = base_graph(inputs=[helper.make_tensor_value_info("x", TP.FLOAT, [65536, 65536])],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, None)],
                   nodes=[helper.make_node("Relu", ["x"], ["y"], name="relu")], inits=[])
    return [save(make_model(g), os.path.join(d, "m.onnx")), "--memory-limit", "1000000"], ["'x'", "memory limit"]


# ---- control flow (If, Loop, Scan) ----


def body_graph(nodes, inputs, outputs, name="body"):
    onnx, TP, helper, nh = onnx_mods()
    return helper.make_graph(nodes, name, inputs, outputs)


def loop_model(d, trips, with_cond):
    """y = x + 1, M times, through a Loop whose condition stays true."""
    onnx, TP, helper, nh = onnx_mods()
    body = body_graph([helper.make_node("Add", ["v_in", "one"], ["v_out"], name="add"),
                       helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
                      [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("c_in", TP.BOOL, []),
                       helper.make_tensor_value_info("v_in", TP.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("c_out", TP.BOOL, []), helper.make_tensor_value_info("v_out", TP.FLOAT, [2, 3])])
    inits = [nh.from_array(np.array(trips, np.int64), "M"), nh.from_array(np.ones((2, 3), np.float32), "one")]
    ins = ["M", "cond" if with_cond else "", "x"]
    if with_cond:
        inits.append(nh.from_array(np.array(True), "cond"))
    g = base_graph(nodes=[helper.make_node("Loop", ins, ["y"], name="loop", body=body)],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])], inits=inits)
    return save(make_model(g, 16), os.path.join(d, "m.onnx"))


def c_loop_huge_trip_count(d):
    # 2^62 iterations and no condition that could stop them: refused at once
    return [loop_model(d, 1 << 62, False)], ["'loop'", "4611686018427387904 iterations", "nodes"]


def c_loop_negative_trip_count(d):
    return [loop_model(d, -5, True)], ["'loop'", "negative"]


def if_model(d, then_outputs, then_dtype=None):
    onnx, TP, helper, nh = onnx_mods()
    dt = then_dtype if then_dtype is not None else TP.FLOAT
    then_nodes = [helper.make_node("Relu", ["x"], ["t%d" % k], name="t%d" % k) for k in range(then_outputs)]
    then_b = body_graph(then_nodes, [], [helper.make_tensor_value_info("t%d" % k, dt, [2, 3]) for k in range(then_outputs)], "then")
    else_b = body_graph([helper.make_node("Neg", ["x"], ["e"], name="e")], [],
                        [helper.make_tensor_value_info("e", TP.FLOAT, [2, 3])], "else")
    g = base_graph(nodes=[helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_b, else_branch=else_b)],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
                   inits=[nh.from_array(np.array(True), "c")])
    return save(make_model(g, 16), os.path.join(d, "m.onnx"))


def c_if_branch_output_count(d):
    return [if_model(d, 2)], ["'branch'", "then branch has 2 outputs", "1"]


def c_if_branch_output_type(d):
    onnx, TP, helper, nh = onnx_mods()
    return [if_model(d, 1, TP.INT64)], ["'branch'", "int64", "float32"]


def c_subgraph_unknown_value(d):
    # the branch reads 'nowhere', which no scope defines
    onnx, TP, helper, nh = onnx_mods()
    then_b = body_graph([helper.make_node("Relu", ["nowhere"], ["t"], name="t")], [],
                        [helper.make_tensor_value_info("t", TP.FLOAT, [2, 3])], "then")
    g = base_graph(nodes=[helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_b, else_branch=then_b)],
                   outputs=[helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
                   inits=[nh.from_array(np.array(True), "c")])
    return [save(make_model(g, 16), os.path.join(d, "m.onnx"))], ["'branch'", "'nowhere'", "enclosing"]


def sequence_model(d, nodes, outputs, inputs=None, opset=17):
    """x[2,3] and w[2,4] (a constant) into the given sequence nodes."""
    onnx, TP, helper, nh = onnx_mods()
    if inputs is None:
        inputs = [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])]
    inits = [nh.from_array(np.ones((2, 4), np.float32), "w"), nh.from_array(np.array(5, np.int64), "five")]
    g = base_graph(nodes=nodes, inputs=inputs, outputs=outputs, inits=inits)
    return save(make_model(g, opset), os.path.join(d, "m.onnx"))


def c_sequence_at_out_of_range(d):
    # position 5 of a sequence of two tensors: refused at plan time
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("SequenceConstruct", ["x", "r"], ["s"], name="seq"),
             helper.make_node("SequenceAt", ["s", "five"], ["y"], name="at")]
    return [sequence_model(d, nodes, [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])])], \
        ["'at'", "position 5", "out of range", "2 tensors"]


def c_concat_from_sequence_shapes(d):
    # [2, 3] and [2, 4] concatenated along axis 0: the dims off the axis differ
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("SequenceConstruct", ["x", "w"], ["s"], name="seq"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], name="cat", axis=0)]
    return [sequence_model(d, nodes, [helper.make_tensor_value_info("y", TP.FLOAT, None)])], ["'cat'", "dim"]


def c_sequence_input(d):
    # the command line binds tensors; a sequence input is named and refused
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("ConcatFromSequence", ["s"], ["y"], name="cat", axis=0)]
    ins = [helper.make_value_info("s", helper.make_sequence_type_proto(helper.make_tensor_type_proto(TP.FLOAT, [2, 3])))]
    return [sequence_model(d, nodes, [helper.make_tensor_value_info("y", TP.FLOAT, None)], inputs=ins)], \
        ["input 's'", "sequence", "command line"]


def c_sequence_output(d):
    # a sequence output cannot be written as one .npy: named and refused
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("SequenceConstruct", ["x", "w"], ["s"], name="seq")]
    outs = [helper.make_value_info("s", helper.make_sequence_type_proto(helper.make_tensor_type_proto(TP.FLOAT, None)))]
    return [sequence_model(d, nodes, outs)], ["output 's'", "sequence of 2 tensors", "command line"]


def c_optional_input_empty(d):
    # an optional input with no -i file runs empty; taking its value fails
    onnx, TP, helper, nh = onnx_mods()
    nodes = [helper.make_node("OptionalGetElement", ["o"], ["y"], name="get")]
    ins = [helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TP.FLOAT, [2, 3])))]
    return [sequence_model(d, nodes, [helper.make_tensor_value_info("y", TP.FLOAT, [2, 3])], inputs=ins), "-q"], \
        ["'get'", "optional 'o' is empty"]


def c_while_loop_sequence(d):
    # a Loop whose body computes its condition runs one iteration at a time,
    # carrying tensors between iterations; a sequence it carries is refused
    onnx, TP, helper, nh = onnx_mods()
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TP.FLOAT, [2, 3]))
    body = body_graph([helper.make_node("Less", ["i", "five"], ["c_out"], name="more"),
                       helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"], name="push")],
                      [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("c_in", TP.BOOL, []),
                       helper.make_value_info("s_in", seq_t)],
                      [helper.make_tensor_value_info("c_out", TP.BOOL, []), helper.make_value_info("s_out", seq_t)])
    nodes = [helper.make_node("SequenceConstruct", ["x"], ["s0"], name="seq"),
             helper.make_node("Loop", ["", "yes", "s0"], ["s"], name="loop", body=body),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], name="cat", axis=0)]
    m = sequence_model(d, nodes, [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    onnx_m = onnx.load(m)
    onnx_m.graph.initializer.append(nh.from_array(np.array(True), "yes"))
    onnx.save(onnx_m, m)
    return [m, "-q"], ["'loop'", "'s_in'", "sequence or optional", "one iteration at a time"]


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    return varint((num << 3) | 2) + varint(len(payload)) + payload


def nest_ifs(leaf, out_vi, depth):
    """Graph bytes of an If whose then_branch is an If ... depth deep, leaf
    innermost.  Each level is a prefix and a suffix around the level
    inside; only the lengths are carried up, so the bytes are joined once
    (wrapping the whole inner graph at every level copied gigabytes)."""
    a2 = varint(20 << 3) + varint(5)                      # AttributeProto.type = GRAPH
    else_a = field(1, b"else_branch") + field(6, leaf) + a2
    pre, suf, glen = [], [], len(leaf)
    for level in range(depth):
        then_pre = field(1, b"then_branch") + varint((6 << 3) | 2) + varint(glen)
        then_len = len(then_pre) + glen + len(a2)
        node_pre = (field(1, b"c") + field(2, b"y") + field(3, b"if%d" % level) + field(4, b"If") +
                    varint((5 << 3) | 2) + varint(then_len) + then_pre)
        node_suf = a2 + field(5, else_a)
        node_len = len(node_pre) + glen + len(node_suf)
        g_pre = varint((1 << 3) | 2) + varint(node_len) + node_pre
        g_suf = node_suf + field(2, b"g%d" % level) + field(12, out_vi)
        pre.append(g_pre)
        suf.append(g_suf)
        glen += len(g_pre) + len(g_suf)
    return b"".join(reversed(pre)) + leaf + b"".join(suf)


def c_subgraphs_nested_10000_deep(d):
    # If inside If ... 10,000 deep, written as bytes level by level (the onnx
    # package itself recurses too deep to build it): refused before the
    # protobuf unpacker, which recurses per level, could overflow its stack
    onnx, TP, helper, nh = onnx_mods()
    leaf = body_graph([helper.make_node("Identity", ["x"], ["e"])], [],
                      [helper.make_tensor_value_info("e", TP.FLOAT, [2, 3])], "leaf").SerializeToString()
    out_vi = helper.make_tensor_value_info("y", TP.FLOAT, [2, 3]).SerializeToString()
    g = nest_ifs(leaf, out_vi, 10000)
    top = g + field(11, helper.make_tensor_value_info("x", TP.FLOAT, [2, 3]).SerializeToString()) + \
        field(5, nh.from_array(np.array(True), "c").SerializeToString())
    model = varint(1 << 3) + varint(8) + field(8, helper.make_opsetid("", 16).SerializeToString()) + field(7, top)
    return [write(os.path.join(d, "m.onnx"), model)], ["nests subgraphs", "64"]


def c_types_nested_10000_deep(d):
    # a graph input of type sequence(sequence(... 10,000 deep)): the other
    # path through which ONNX's messages recurse (TypeProto), refused
    # before the unpacker for the same reason (SECURITY.md)
    onnx, TP, helper, nh = onnx_mods()
    t = field(1, varint(1 << 3) + varint(TP.FLOAT))           # TypeProto.tensor_type.elem_type
    for _ in range(10000):
        t = field(4, field(1, t))                             # TypeProto.sequence_type.elem_type
    g = base_graph()
    g.ClearField("input")
    top = g.SerializeToString() + field(11, field(1, b"x") + field(2, t))
    model = varint(1 << 3) + varint(8) + field(8, helper.make_opsetid("", 13).SerializeToString()) + field(7, top)
    return [write(os.path.join(d, "m.onnx"), model)], ["nests types", "64"]


CASES = {name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("c_")}


def run_case(strata, name, verbose=True):
    """Returns (ok, message line or failure description)."""
    with tempfile.TemporaryDirectory(prefix="strata_bad_") as tmp:
        d = os.path.join(tmp, "in")
        out = os.path.join(tmp, "out")
        os.makedirs(d)
        os.makedirs(out)
        args, keywords = CASES[name](d)
        cmd = [strata, "run"] + args + ["-o", out]
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return False, f"hung: no exit after {TIMEOUT_S} s"
        err = p.stderr.decode("utf-8", "replace")
        lines = err.splitlines()
        problems = []
        if p.returncode < 0:
            problems.append(f"killed by signal {-p.returncode}")
        elif p.returncode != 1:
            problems.append(f"exit status {p.returncode}, expected 1")
        if len(lines) != 1:
            problems.append(f"{len(lines)} lines on stderr, expected 1")
        elif not lines[0].startswith("strata: "):
            problems.append("the stderr line does not start with 'strata: '")
        for k in keywords:
            if k.lower() not in err.lower():
                problems.append(f"message lacks '{k}'")
        if p.stdout:
            problems.append(f"stdout is not empty: {p.stdout[:200]!r}")
        left = os.listdir(out)
        if left:
            problems.append(f"files left in the output directory: {left}")
        if verbose:
            print("$ " + " ".join(cmd))
            print(f"exit {p.returncode}; stderr:\n{err}", end="" if err.endswith("\n") else "\n")
        line = lines[0] if lines else ""
        return (not problems), ("; ".join(problems) if problems else line)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    strata, which = sys.argv[1], sys.argv[2]
    if which == "--all":
        bad = 0
        for name in CASES:
            ok, msg = run_case(strata, name, verbose=False)
            bad += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {msg}")
        return 1 if bad else 0
    if which not in CASES:
        print(f"unknown case '{which}' (try --list)", file=sys.stderr)
        return 2
    ok, msg = run_case(strata, which)
    print(("PASS: " if ok else "FAIL: ") + msg)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
