"""strata.dask on a LocalCluster of 2 worker processes, checked element
by element against the same model run in this one process: PP-OCR's
recogniser over a bag of .npy paths of random text-line crops of several
widths, and the tiny model of tests/serve over arrays.  Both sides use one
thread per session, so the kernels' work is split the same way and the
answers must be bit-identical (tolerance 0).  Each worker must have made
its sessions once, not once per element."""
import glob
import os
import sys

import numpy as np
import pytest

import strata
import strata.dask

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "serve"))
from serve_util import OCR_MODELS, make_tiny_model, tiny_reference  # noqa: E402

distributed = pytest.importorskip("distributed")
import dask.bag as db  # noqa: E402

REC = os.path.join(OCR_MODELS, "ch_PP-OCRv4_rec_infer.onnx")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_rec_paths(client, tmp_path):
    rng = np.random.default_rng(27)
    for i, w in enumerate([48, 96, 64, 160, 48, 96, 128, 80]):
        np.save(tmp_path / ("crop%02d.npy" % i), rng.uniform(-1, 1, (1, 3, 48, w)).astype(np.float32))
    paths = sorted(glob.glob(str(tmp_path / "*.npy")))
    got = strata.dask.map_model(db.from_sequence(paths, npartitions=4), REC, threads=1).compute()
    sess = strata.Session(REC, threads=1)
    assert len(got) == len(paths)
    for p, g in zip(paths, got):
        ref, = sess.run(None, {"x": np.load(p)})
        assert len(g) == 1 and g[0].shape == ref.shape, (p, g[0].shape, ref.shape)
        assert (g[0] == ref).all(), (p, np.abs(g[0] - ref).max())
    made = client.run(lambda: __import__("strata.dask").dask.created)
    assert len(made) == 2 and all(n <= 1 for n in made.values()), made   # one session per worker, reused
    assert sum(made.values()) >= 1


def test_tiny_arrays_with_finish(client, tmp_path):
    model = str(tmp_path / "tiny.onnx")
    make_tiny_model(model)
    rng = np.random.default_rng(5)
    items = [(rng.uniform(-2, 2, (n, 4)).astype(np.float32), rng.integers(-99, 99, (n, 2)).astype(np.int64))
             for n in (1, 3, 2, 5, 4, 1)]

    def prepare(e, session):
        return {"x": e[0], "k": e[1]}

    def finish(e, outputs):
        return outputs[0].sum(axis=1).astype(np.float64), outputs[1].copy()

    got = strata.dask.map_model(db.from_sequence(items, npartitions=3), model, prepare, finish, threads=1).compute()
    for (x, k), (ysum, z) in zip(items, got):
        y, zr = tiny_reference(x, k)
        assert np.abs(ysum - y.sum(axis=1)).max() <= 1e-5 and (z == zr).all()
