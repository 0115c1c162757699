"""String tensors through the C API (st_session_set_input_strings,
st_tensor_read_strings) and the package: Cast to and from strings by the
spec's rules, StringNormalizer on Unicode text, plans specialized on the
strings' values, and the one-line errors where strings meet what does not
take them.  Every model is built here with onnx's helper."""
import ctypes

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

import strata
from strata._lib import lib


def model(nodes, inputs, outputs, opset=15, inits=()):
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "strings", [vi(n, t, s) for n, t, s in inputs], [vi(n, t, None) for n, t in outputs],
                          list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def cast_to_string(dtype, tp):
    return strata.Session(model([helper.make_node("Cast", ["x"], ["y"], to=TP.STRING)], [("x", tp, None)],
                                [("y", TP.STRING)]))


_libc = ctypes.CDLL(None)
_libc.strtof.restype = ctypes.c_float
_libc.strtof.argtypes = [ctypes.c_char_p, ctypes.c_void_p]


def read_back(s, np_type):
    """Text as a number of np_type, rounded once (numpy's float32("...")
    goes through a double, which can round twice)."""
    return np.float32(_libc.strtof(s.encode(), None)) if np_type == np.float32 else np_type(s)


def shortest(v, np_type, max_digits):
    """The fewest %g digits that read back to v."""
    for p in range(1, max_digits + 1):
        s = "%.*g" % (p, v)
        if read_back(s, np_type) == v:
            return s
    raise AssertionError(v)


def test_float_to_string_is_shortest_round_trip(rng):
    x = np.concatenate([(rng.standard_normal(200) * 10.0 ** rng.integers(-12, 12, 200)).astype(np.float32),
                        np.array([0.6048455, 0.039187793, 1e20, 1e-7, 1234567, 16777216, 0.1, 3.4028235e38, -0.0],
                                 np.float32)])
    assert x.dtype == np.float32
    y, = cast_to_string(np.float32, TP.FLOAT).run(None, {"x": x})
    want = [shortest(v, np.float32, 9) for v in x]
    assert list(y) == want
    assert y[-9:].tolist() == ["0.6048455", "0.039187793", "1e+20", "1e-07", "1234567", "16777216", "0.1",
                               "3.4028235e+38", "-0"]
    assert all(read_back(s, np.float32) == v for s, v in zip(y, x))


def test_special_values_and_other_types():
    y, = cast_to_string(np.float32, TP.FLOAT).run(None, {"x": np.array([np.nan, np.inf, -np.inf], np.float32)})
    assert y.tolist() == ["NaN", "INF", "-INF"]   # the spec's literals, which a Cast back reads
    d = np.array([0.1, 1 / 3, 1e300, 2.5e-320], np.float64)
    y, = cast_to_string(np.float64, TP.DOUBLE).run(None, {"x": d})
    assert y.tolist() == [shortest(v, np.float64, 17) for v in d] and y[1] == "0.3333333333333333"
    h = np.array([1 / 3, 65504, 6e-8], np.float16)
    y, = cast_to_string(np.float16, TP.FLOAT16).run(None, {"x": h})
    assert y.tolist() == ["0.3333", "6.55e+04", "6e-08"] and all(np.float16(s) == v for s, v in zip(y, h))
    i = np.array([-(2 ** 63), 2 ** 63 - 1, 0], np.int64)
    assert cast_to_string(np.int64, TP.INT64).run(None, {"x": i})[0].tolist() == [str(v) for v in i]
    u = np.array([2 ** 64 - 1], np.uint64)
    assert cast_to_string(np.uint64, TP.UINT64).run(None, {"x": u})[0].tolist() == ["18446744073709551615"]
    assert cast_to_string(np.bool_, TP.BOOL).run(None, {"x": np.array([True, False])})[0].tolist() == ["1", "0"]


def cast_from_string(tp):
    return strata.Session(model([helper.make_node("Cast", ["x"], ["y"], to=tp)], [("x", TP.STRING, None)], [("y", tp)]))


def test_string_to_numbers():
    f, = cast_from_string(TP.FLOAT).run(None, {"x": np.array(["0.47892547", "NaN", "INF", "+INF", "-inf", " 12 ",
                                                               "1E3", "1e-50", "0.1"])})
    assert f.dtype == np.float32 and np.isnan(f[1])
    assert f[[0, 2, 3, 4, 5, 6, 7, 8]].tolist() == [np.float32(0.47892547), np.inf, np.inf, -np.inf, 12, 1000, 0,
                                                    np.float32(0.1)]
    i, = cast_from_string(TP.INT64).run(None, {"x": np.array(["12", "-7", "100.5", "-100.5", "1e3",
                                                              "9223372036854775807"])})
    assert i.tolist() == [12, -7, 100, -100, 1000, 2 ** 63 - 1]     # "100.5" yields 100, as the spec says it may
    u, = cast_from_string(TP.UINT64).run(None, {"x": np.array(["18446744073709551615", "3"])})
    assert u.tolist() == [2 ** 64 - 1, 3]
    b, = cast_from_string(TP.BOOL).run(None, {"x": np.array(["0", "1", "2.5", "-0"])})
    assert b.tolist() == [False, True, True, False]
    with pytest.raises(strata.Error, match=r"string 1, \"12abc\", is not a number"):
        cast_from_string(TP.FLOAT).run(None, {"x": np.array(["1", "12abc"])})


def test_castlike_and_identity_and_constants():
    like = model([helper.make_node("CastLike", ["x", "l"], ["y"]), helper.make_node("Identity", ["y"], ["z"])],
                 [("x", TP.FLOAT, [2]), ("l", TP.STRING, [1])], [("z", TP.STRING), ("l", TP.STRING)])
    z, l = strata.Session(like).run(None, {"x": np.array([0.5, 2], np.float32), "l": np.array(["é"])})
    assert z.tolist() == ["0.5", "2"] and l.tolist() == ["é"]
    init = numpy_helper.from_array(np.array(["a", "", "日本"], dtype=object), "c")
    const = model([helper.make_node("Identity", ["c"], ["y"])], [], [("y", TP.STRING)], inits=[init])
    assert strata.Session(const).run(None, {})[0].tolist() == ["a", "", "日本"]


def test_shape_and_size_of_strings():
    m = model([helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Size", ["x"], ["n"])],
              [("x", TP.STRING, None)], [("s", TP.INT64), ("n", TP.INT64)])
    s, n = strata.Session(m).run(None, {"x": np.array([["a", "b", "c"], ["d", "e", "f"]])})
    assert s.tolist() == [2, 3] and n.tolist() == 6


def normalizer(**attrs):
    return strata.Session(model([helper.make_node("StringNormalizer", ["x"], ["y"], **attrs)],
                                [("x", TP.STRING, None)], [("y", TP.STRING)], opset=10))


def test_string_normalizer():
    s = normalizer(case_change_action="UPPER", stopwords=["STRASSE", "été"])
    y, = s.run(None, {"x": np.array(["strasse", "Été", "ÀéÎ", "σ", "straße"])})
    # case-insensitive stopwords; Unicode's simple, one-to-one case mapping
    # (as ONNX Runtime's towupper): ß has no upper case of its own
    assert y.tolist() == ["ÀÉÎ", "Σ", "STRAßE"]
    y, = s.run(None, {"x": np.array([["Strasse", "ÉTÉ"]])})
    assert y.shape == (1, 1) and y.tolist() == [[""]]      # nothing left: one empty string
    y, = normalizer(is_case_sensitive=1, stopwords=["a"], case_change_action="LOWER").run(
        None, {"x": np.array(["a", "A", "ÀB"])})
    assert y.tolist() == ["a", "àb"]
    with pytest.raises(strata.Error, match="locale 'tr_TR.UTF-8' changes case its own way"):
        normalizer(locale="tr_TR.UTF-8").run(None, {"x": np.array(["i"])})
    with pytest.raises(strata.Error, match=r"X must be \[C\] or \[1, C\], not of rank 3"):
        normalizer().run(None, {"x": np.array([[["a"]]])})


def test_plans_follow_the_strings():
    s = normalizer(stopwords=["x"])
    for words in (["a", "x", "b"], ["x"], ["c", "d", "e", "f"], ["a", "x", "b"]):
        want = [w for w in words if w != "x"] or [""]
        assert s.run(None, {"x": np.array(words)})[0].tolist() == want


def test_refusals(tmp_path):
    # a numeric array for a string input, and the reverse
    s = normalizer()
    with pytest.raises(strata.Error, match="input 'x' holds strings: set it with st_session_set_input_strings"):
        s.run(None, {"x": np.zeros(3, np.float32)})
    with pytest.raises(strata.Error, match="input 'x' is float32, not strings"):
        cast_to_string(np.float32, TP.FLOAT).run(None, {"x": np.array(["1"])})
    # an op without a kernel on strings
    r = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [("x", TP.STRING, [2])], [("y", TP.STRING)],
              inits=[numpy_helper.from_array(np.array([1, 2], np.int64), "s")])
    with pytest.raises(strata.Error, match=r"node 'Reshape_0' \(Reshape\): backend 'cpu' runs Reshape on .*, not string"):
        strata.Session(r).run(None, {"x": np.array(["a", "b"])})
    # strings of what only a run knows (an input too large to plan on)
    big = model([helper.make_node("Cast", ["x"], ["y"], to=TP.STRING)], [("x", TP.FLOAT, [5000])], [("y", TP.STRING)])
    with pytest.raises(strata.Error, match=r"strings are handled while planning, but input 0 \('x'\) is known only when"):
        strata.Session(big).run(None, {"x": np.ones(5000, np.float32)})


def test_strings_of_computed_data(rng):
    # the graph computes what the Cast reads: the plan stops before the
    # Cast, and the rest is planned on the Relu's results (plan/stage.c)
    m = model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Cast", ["r"], ["s"], to=TP.STRING),
               helper.make_node("StringNormalizer", ["s"], ["y"], stopwords=["0"])],
              [("x", TP.FLOAT, [5000])], [("y", TP.STRING)])
    s = strata.Session(m)
    for _ in range(2):
        x = rng.standard_normal(5000).astype(np.float32)
        y, = s.run(None, {"x": x})
        assert y.tolist() == [shortest(v, np.float32, 9) for v in x[x > 0]]


def test_c_api_checks():
    s = normalizer()
    dims = (ctypes.c_int64 * 1)(2)
    strs = (ctypes.c_char_p * 2)(b"a", b"b")
    assert lib.st_session_set_input_strings(s._s, b"x", 1, dims, strs, 3) == 5       # ST_ERR_SHAPE
    assert "dims hold 2 strings, but 3 were given" in lib.st_last_error().decode()
    assert lib.st_session_set_input_strings(s._s, b"x", 1, dims, strs, 2) == 0
    assert lib.st_session_run(s._s) == 0
    t = ctypes.c_void_p()
    assert lib.st_session_output(s._s, b"y", ctypes.byref(t)) == 0
    buf = (ctypes.c_char * 64)()
    assert lib.st_tensor_read(t, 8, buf, 16) == 6                                     # ST_ERR_DTYPE
    assert "the tensor holds strings (st_tensor_read_strings reads them)" in lib.st_last_error().decode()
    out = (ctypes.c_char_p * 2)()
    assert lib.st_tensor_read_strings(t, out, 1) == 1                                 # ST_ERR_INVALID_ARG
    assert lib.st_tensor_read_strings(t, out, 2) == 0
    s.close()                                     # the strings belong to the tensor, not the session
    assert [out[0], out[1]] == [b"a", b"b"]
    lib.st_tensor_free(t)


def while_loop_with_strings(scan_strings):
    """x halves until its maximum is at most 1 (a Loop whose body computes
    its condition, run an iteration at a time: session/loop.c), carrying the
    strings w, upper-cased each iteration; with scan_strings the body also
    gives each iteration's halved x as text, a scan output of strings."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Mul", ["a_in", "half"], ["a_out"]),
             helper.make_node("ReduceMax", ["a_out"], ["mx"], keepdims=0),
             helper.make_node("Greater", ["mx", "one"], ["c_out"]),
             helper.make_node("StringNormalizer", ["w_in"], ["w_out"], case_change_action="UPPER")]
    body_out = [vi("c_out", TP.BOOL, []), vi("a_out", TP.FLOAT, [64]), vi("w_out", TP.STRING, [3])]
    if scan_strings:
        nodes.append(helper.make_node("Cast", ["a_out"], ["t_out"], to=TP.STRING))
        body_out.append(vi("t_out", TP.STRING, [64]))
    consts = [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
              numpy_helper.from_array(np.array(1, np.float32), "one")]
    body = helper.make_graph(nodes, "body", [vi("i", TP.INT64, []), vi("c_in", TP.BOOL, []), vi("a_in", TP.FLOAT, [64]),
                                            vi("w_in", TP.STRING, [3])], body_out, consts)
    outs = ["a", "w"] + (["t"] if scan_strings else [])
    return model([helper.make_node("Loop", ["", "go", "x", "words"], outs, body=body)],
                 [("x", TP.FLOAT, [64]), ("words", TP.STRING, [3])],
                 [("a", TP.FLOAT), ("w", TP.STRING)] + ([("t", TP.STRING)] if scan_strings else []),
                 inits=[numpy_helper.from_array(np.array(True), "go")])


def test_strings_through_a_while_loop(rng):
    # carried strings go from iteration to iteration with their characters
    # (session/bound.c): each iteration's plan may be evicted before the next
    s = strata.Session(while_loop_with_strings(False))
    words = np.array(["ab", "Straße", ""], dtype=object)
    for _ in range(3):
        x = (rng.standard_normal(64) * 10.0 ** rng.uniform(0, 4)).astype(np.float32)
        want, trips = x.copy(), 0
        while True:                       # float32 halving is exact: the reference is bit for bit
            want, trips = want * np.float32(0.5), trips + 1
            if not want.max() > 1:
                break
        a, w = s.run(None, {"x": x, "words": words})
        assert trips >= 1
        np.testing.assert_array_equal(a, want)
        # case maps one character to one (as ONNX Runtime's towupper): ß stays
        assert w.tolist() == ["AB", "STRAßE", ""]


def test_while_loop_refuses_to_stack_strings(rng):
    s = strata.Session(while_loop_with_strings(True))
    x = (rng.standard_normal(64) * 100).astype(np.float32)
    with pytest.raises(strata.Error, match="scan output 0 holds strings, which a while loop does not stack"):
        s.run(None, {"x": x, "words": np.array(["a", "b", "c"], dtype=object)})
