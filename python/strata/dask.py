"""strata over Dask: batch inference spread over a cluster's workers.

    from dask.distributed import Client, LocalCluster
    import dask.bag as db
    import strata.dask

    client = Client(LocalCluster(n_workers=2, threads_per_worker=1))   # or Client("tcp://scheduler:8786")
    paths = db.from_sequence(sorted(glob.glob("crops/*.npy")), npartitions=8)
    results = strata.dask.map_model(paths, "rec.onnx", threads=1).compute()

Each worker process loads a model once and keeps the session (one per
worker thread: a strata session runs on one thread at a time) for every
element it is given afterwards; `cached_session` is that cache.  The same
code runs on a laptop's LocalCluster and on a multi-node cluster: point the
Client at the scheduler's address.  Every worker needs what the client
needs: this package (pip install ./python, which bundles libstrata.so),
numpy and dask's `distributed`, and the model file at the same path (a
shared file system, or the same directory copied to every node).
"""
import os
import threading

import numpy as np

from ._session import Model, Session

_lock = threading.Lock()
_sessions = {}
created = 0  # sessions this process made: a test reads it to see they are reused


def cached_session(model, **options):
    """The session of this process and thread for model (a path) and
    options (Session's keyword arguments), made on first use."""
    global created
    key = (os.path.abspath(model), tuple(sorted(options.items())), threading.get_ident())
    with _lock:
        s = _sessions.get(key)
        if s is None:
            s = Session(Model(model), **options)
            _sessions[key] = s
            created += 1
        return s


def default_prepare(element, session):
    """An array, or the path of a .npy file, fed to the model's first input."""
    x = np.load(element) if isinstance(element, (str, os.PathLike)) else np.asarray(element)
    return {session.inputs[0].name: x}


def default_finish(element, outputs):
    return outputs


def run_one(element, model, prepare=None, finish=None, **options):
    """One element on this worker's cached session: prepare(element, session)
    gives the feeds ({input name: array}), the session runs every output, and
    finish(element, outputs) gives the result (the outputs, by default)."""
    s = cached_session(model, **options)
    feeds = (prepare or default_prepare)(element, s)
    outputs = s.run(None, feeds)
    return (finish or default_finish)(element, outputs)


def map_model(bag, model, prepare=None, finish=None, **options):
    """A dask.bag of results: run_one over every element of bag (a
    dask.bag.Bag of paths or arrays), each partition on a worker's cached
    session.  Outputs are copied out of the session's buffers, so results
    that travel back to the client stay valid."""
    def partition(elements):
        out = []
        for e in elements:
            r = run_one(e, model, prepare, finish, **options)
            out.append([np.array(o, copy=True) for o in r] if finish is None else r)
        return out
    return bag.map_partitions(partition)


def map_dataframe(df, column, model, prepare=None, finish=None, meta=None, **options):
    """The same over a dask.dataframe column of paths (or arrays): a
    dask.Series of results, one per row."""
    return df[column].map_partitions(
        lambda part: part.map(lambda e: run_one(e, model, prepare, finish, **options)),
        meta=meta if meta is not None else (column, "object"))
