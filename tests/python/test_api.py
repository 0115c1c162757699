"""The Python package's API on dynamic_mlp.onnx (a symbolic batch dim, two
outputs, one an offset view): metadata, errors carrying strata's message,
options, inputs read without a copy, threads, profiles, the CUDA module
from Python.
The numbers themselves are checked against PyTorch in test_seed.py and
test_yolo.py; here runs are compared with each other, bit for bit."""
import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import strata


@pytest.fixture(scope="module")
def mlp(models_dir):
    return os.path.join(models_dir, "seed", "dynamic_mlp.onnx")


def test_versions(root):
    text = open(os.path.join(root, "include", "strata.h")).read()
    header = ".".join(re.search(r"#define ST_VERSION_%s (\d+)" % k, text).group(1) for k in ("MAJOR", "MINOR", "PATCH"))
    assert strata.__version__ == header == strata.library_version
    assert os.path.basename(strata.library_path) == "libstrata.so." + header


def test_library_lookup(tmp_path):
    def load(where):
        env = dict(os.environ, STRATA_LIBRARY=where)
        return subprocess.run([sys.executable, "-c", "import strata; print(strata.library_path)"], env=env,
                              capture_output=True, text=True, cwd=str(tmp_path))
    r = load(os.path.dirname(strata.library_path))        # the directory holding libstrata.so.0
    assert r.returncode == 0 and r.stdout.strip() == strata.library_path, r.stderr
    missing = str(tmp_path / "libstrata.so.0")
    r = load(missing)                                      # named, but not there: no looking elsewhere
    assert r.returncode != 0 and "ImportError: strata: STRATA_LIBRARY=%s: no such file" % missing in r.stderr
    (tmp_path / "libstrata.so.0").write_text("not a library")
    r = load(missing)
    assert r.returncode != 0 and "STRATA_LIBRARY=%s does not load" % missing in r.stderr


def test_metadata(mlp):
    s = strata.Session(mlp)
    assert s.inputs == [strata.ValueInfo("x", "float32", ("batch", 64))]
    assert [o.name for o in s.outputs] == ["y0", "y1"]
    assert s.outputs[1].shape == ("batch", 16) and s.outputs[1].numpy_dtype == np.float32
    assert strata.Model(mlp).inputs == s.inputs


def test_run_shapes_and_names(mlp, rng):
    s = strata.Session(mlp)
    x = rng.standard_normal((7, 64), dtype=np.float32)
    y0, y1 = s.run(None, {"x": x})
    assert y0.shape == y1.shape == (7, 16) and y0.dtype == np.float32 and y0.flags.owndata
    only, = s.run(["y1"], {"x": x})
    assert np.array_equal(only, y1)
    back = s.run(["y1", "y0"], {"x": x})
    assert np.array_equal(back[0], y1) and np.array_equal(back[1], y0)
    # the model from bytes, another batch size: the same numbers as row-wise runs
    m = strata.Model(open(mlp, "rb").read())
    rows = strata.Session(m).run(None, {"x": x[:3]})
    assert np.array_equal(rows[0], y0[:3]) and np.array_equal(rows[1], y1[:3])


def test_outputs_reuse_only_dropped_arrays(mlp, rng):
    """A run reads its outputs into arrays of earlier runs that the caller
    dropped, never into one it (or a view of it) still holds."""
    s = strata.Session(mlp)
    xa, xb = (rng.standard_normal((2048, 64), dtype=np.float32) for _ in range(2))
    want_b = strata.Session(mlp).run(None, {"x": xb})
    held = s.run(None, {"x": xa})
    want_a = [h.copy() for h in held]
    view = held[1][3:]
    del held[1]                                  # only a view of output 1 is left
    for _ in range(4):
        got = s.run(None, {"x": xb})
        assert all(np.array_equal(g, w) for g, w in zip(got, want_b))
    assert np.array_equal(held[0], want_a[0]) and np.array_equal(view, want_a[1][3:])
    assert not np.array_equal(want_a[0], want_b[0])   # a clobbered array would show
    for _ in range(6):
        kept = {id(a) for a in s._returned}      # alive, so no new array can share an id
        got = s.run(None, {"x": xb})
        assert id(got[0]) in kept and id(got[1]) in kept   # dropped ones, reused
        assert all(np.array_equal(g, w) for g, w in zip(got, want_b))
        del got
    assert np.array_equal(held[0], want_a[0]) and np.array_equal(view, want_a[1][3:])


def test_errors_carry_strata_message(mlp, models_dir):
    s = strata.Session(mlp)
    with pytest.raises(strata.Error) as e:
        s.run(None, {})
    assert e.value.status == "ST_ERR_INVALID_ARG" and "'x'" in str(e.value)
    with pytest.raises(strata.Error) as e:
        s.run(None, {"x": np.zeros((2, 63), np.float32)})
    assert e.value.status == "ST_ERR_SHAPE" and str(e.value) == "input 'x': dim 1 must be 64, got 63"
    with pytest.raises(strata.Error) as e:
        s.run(None, {"x": np.zeros((2, 64), np.int64)})
    assert e.value.status == "ST_ERR_DTYPE" and str(e.value) == "input 'x': expected float32, got int64"
    with pytest.raises(strata.Error) as e:
        s.run(None, {"nope": np.zeros((2, 64), np.float32)})
    assert "the model has no input named 'nope'" in str(e.value)
    with pytest.raises(strata.Error) as e:
        s.run(["y9"], {"x": np.zeros((2, 64), np.float32)})
    assert e.value.status == "ST_ERR_INVALID_ARG" and "'y9'" in str(e.value)
    missing = os.path.join(models_dir, "no_such_model.onnx")
    with pytest.raises(strata.Error) as e:
        strata.Session(missing)
    assert e.value.status == "ST_ERR_IO" and missing in str(e.value)
    with pytest.raises(strata.Error) as e:
        strata.Session(mlp, memory_limit=1000).run(None, {"x": np.zeros((2, 64), np.float32)})
    assert e.value.status == "ST_ERR_NOMEM" and "memory limit" in str(e.value)
    # what Python itself refuses, before strata sees it
    with pytest.raises(ValueError, match="backend must be one of cpu, cuda, opencl, vulkan, got 'gpu'"):
        strata.Session(mlp, backend="gpu")
    with pytest.raises(ValueError, match="threads must be a non-negative integer"):
        strata.Session(mlp, threads=-1)
    with pytest.raises(TypeError, match="not complex64"):
        s.run(None, {"x": np.zeros((2, 64), np.complex64)})


def test_inputs_read_in_place(mlp, rng):
    x = rng.standard_normal((64, 6), dtype=np.float32).T      # (6, 64), not C-contiguous
    packed = np.ascontiguousarray(x)
    assert strata._session.as_input(packed) is packed          # no copy
    assert strata._session.as_input(x) is not x                # a packed copy
    swapped = packed.astype(packed.dtype.newbyteorder(">"))    # big-endian
    s = strata.Session(mlp)
    want = s.run(None, {"x": packed})
    # the same values however they are laid out (float64 is converted by
    # strata, exactly, since these values came from float32)
    for other in (x, swapped, packed.astype(np.float64)):
        got = s.run(None, {"x": other})
        assert all(np.array_equal(g, w) for g, w in zip(got, want)), (other.dtype, other.strides)


def test_options_same_numbers(mlp, rng):
    x = rng.standard_normal((9, 64), dtype=np.float32)
    base = strata.Session(mlp, threads=1).run(None, {"x": x})
    for opts in ({"threads": 2}, {"sanitize": True}, {"schedule": "random", "seed": 7, "threads": 2},
                 {"hazard_mode": "storage"}, {"inter_op": False}, {"memory_limit": 1 << 30}):
        got = strata.Session(mlp, **opts).run(None, {"x": x})
        assert all(np.array_equal(g, b) for g, b in zip(got, base)), opts
    for precision in ("f16", "bf16"):
        got = strata.Session(mlp, precision=precision, sanitize=True).run(None, {"x": x})
        for g, b in zip(got, base):
            err = np.abs(g.astype(np.float64) - b).max()
            assert err <= 1e-2 * np.abs(b).max(), (precision, err)


def test_threads_share_a_model(mlp, rng):
    model = strata.Model(mlp)
    xs = [rng.standard_normal((1 + k, 64), dtype=np.float32) for k in range(4)]
    single = strata.Session(model, threads=1)
    want = [single.run(["y0"], {"x": x})[0] for x in xs]
    bad, errors = [], []

    def work():
        try:
            s = strata.Session(model, threads=1)
            for i in range(100):
                k = i % len(xs)
                if not np.array_equal(s.run(["y0"], {"x": xs[k]})[0], want[k]):
                    bad.append(k)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and not bad


def test_cuda_module_found_from_python(mlp):
    module = os.path.join(os.path.dirname(strata.library_path), "libstrata_cuda.so")
    if not os.path.exists(module):
        pytest.skip("no CUDA module beside %s (built only where nvcc is)" % strata.library_path)
    try:
        strata.Session(mlp, backend="cuda").run(None, {"x": np.ones((2, 64), np.float32)})
    except strata.Error as e:
        # loaded beside the library and bound to it, then found no GPU
        assert "no CUDA device" in str(e), str(e)
    # ctypes loads libstrata RTLD_LOCAL: the module must bind to that copy
    # rather than load a second one
    maps = {line.split()[-1] for line in open("/proc/self/maps") if "libstrata" in line}
    assert maps == {strata.library_path, module}, maps


def test_profile(mlp, rng, tmp_path):
    """profile=PATH: write_profile() writes a Chrome trace of the runs so
    far (a slice per command, the DAG's edges as flows), close() the rest;
    a path that cannot be written is an Error at once."""
    path = tmp_path / "trace.json"
    x = rng.standard_normal((3, 64), dtype=np.float32)
    with strata.Session(mlp, threads=2, profile=path) as s:
        want = strata.Session(mlp, threads=2).run(None, {"x": x})
        got = s.run(None, {"x": x})
        assert all(np.array_equal(g, w) for g, w in zip(got, want))   # profiling changes no number
        s.run(None, {"x": x})
        assert s.write_profile() == str(path)
        trace = json.loads(path.read_text())
        assert trace["otherData"]["runs_count"] == 2
        slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and "command" in e.get("args", {})]
        assert slices and all(e["args"]["device"] == "cpu" and e["dur"] > 0 for e in slices)
        starts = {e["id"] for e in trace["traceEvents"] if e["ph"] == "s"}
        assert starts == {e["id"] for e in trace["traceEvents"] if e["ph"] == "f"}
        s.run(None, {"x": x})
    # close() wrote the third run, in a trace of its own
    assert json.loads(path.read_text())["otherData"]["runs_count"] == 1
    with pytest.raises(strata.Error) as e:
        strata.Session(mlp, profile=tmp_path / "missing" / "t.json")
    assert e.value.status == "ST_ERR_IO" and "does not exist" in str(e.value)
    with pytest.raises(ValueError):
        strata.Session(mlp).write_profile()


def test_memory_usage(mlp, rng):
    # the figures rise with a session's storages and fall back when it goes
    live0, _ = strata.memory_usage("cpu")
    s = strata.Session(mlp)
    s.run(None, {"x": rng.standard_normal((5, 64)).astype(np.float32)})
    live1, peak1 = strata.memory_usage("cpu")
    assert live1 > live0 and peak1 >= live1
    del s
    import gc
    gc.collect()
    live2, peak2 = strata.memory_usage("cpu")
    assert live2 == live0 and peak2 >= peak1
    with pytest.raises(ValueError):
        strata.memory_usage("nope")
