"""TfIdfVectorizer against a reference written from the spec's words,
beyond what the node tests cover (TF on int32 only): IDF and TFIDF with and
without weights, int64 and string pools, batches, random pools, lengths
and skips, and the attributes that make a model invalid."""
import collections

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper

import strata


def reference(x, pool, counts, indexes, lo, hi, skip, mode, weights):
    """Every skip-gram of each row in a Counter, then the pool looked up."""
    rows = x.reshape(-1, x.shape[-1]) if x.ndim == 2 else x.reshape(1, -1)
    grams = []  # (n, items) in the pool's order
    for n in range(1, len(counts) + 1):
        end = counts[n] if n < len(counts) else len(pool)
        grams += [(n, tuple(pool[i:i + n])) for i in range(counts[n - 1], end, n)]
    width = max(indexes) + 1
    out = np.zeros((rows.shape[0], width), np.float32)
    for r, row in enumerate(rows):
        seen = collections.Counter()
        for n in range(lo, hi + 1):
            for s in range(1 if n == 1 else skip + 1):   # a 1-gram once, whatever the skip
                d = s + 1
                for i in range(len(row) - (n - 1) * d):
                    seen[(n, tuple(row[i + k * d] for k in range(n)))] += 1
        for g, key in enumerate(grams):
            c = seen[key]
            if c:
                w = weights[g] if weights is not None else 1.0
                out[r, indexes[g]] += {"TF": c, "IDF": w, "TFIDF": c * w}[mode]
    return out if x.ndim == 2 else out[0]


def session(x_type, pool, counts, indexes, lo, hi, skip, mode, weights):
    attrs = dict(mode=mode, min_gram_length=lo, max_gram_length=hi, max_skip_count=skip, ngram_counts=counts,
                 ngram_indexes=indexes)
    if isinstance(pool[0], str):
        attrs["pool_strings"] = list(pool)
    else:
        attrs["pool_int64s"] = list(pool)
    if weights is not None:
        attrs["weights"] = list(weights)
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)], "tfidf", [vi("x", x_type, None)],
                          [vi("y", TP.FLOAT, None)])
    return strata.Session(helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)]).SerializeToString())


@pytest.mark.parametrize("x_type", [TP.INT32, TP.INT64, TP.STRING])
def test_random_configurations(rng, x_type):
    for _ in range(40):
        vocab = rng.integers(2, 6)
        levels = int(rng.integers(1, 4))
        pool, counts = [], []
        for n in range(1, levels + 1):
            counts.append(len(pool))
            grams = {tuple(rng.integers(0, vocab, n)) for _ in range(rng.integers(0, 4))}
            for gram in sorted(grams):
                pool += list(gram)
        n_grams = sum(((counts[n] if n < levels else len(pool)) - counts[n - 1]) // n for n in range(1, levels + 1))
        if n_grams == 0:
            continue
        indexes = [int(i) for i in rng.permutation(n_grams + 2)[:n_grams]]   # columns in any order, some unused
        lo = int(rng.integers(1, levels + 1))
        hi = int(rng.integers(lo, levels + 1))
        skip = int(rng.integers(0, 4))
        mode = ["TF", "IDF", "TFIDF"][rng.integers(0, 3)]
        weights = [float(w) for w in rng.random(n_grams).astype(np.float32)] if rng.random() < 0.5 else None
        x = rng.integers(0, vocab, (int(rng.integers(1, 4)), int(rng.integers(1, 12))))
        if rng.random() < 0.5:
            x = x[0]
        if x_type == TP.STRING:
            feed = np.array(["w%d" % v for v in x.ravel()]).reshape(x.shape)
            pool_t = ["w%d" % v for v in pool]
            want = reference(np.array(["w%d" % v for v in x.ravel()], dtype=object).reshape(x.shape), pool_t, counts,
                             indexes, lo, hi, skip, mode, weights)
        else:
            feed = x.astype(np.int32 if x_type == TP.INT32 else np.int64)
            pool_t = pool
            want = reference(x, pool, counts, indexes, lo, hi, skip, mode, weights)
        got, = session(x_type, pool_t, counts, indexes, lo, hi, skip, mode, weights).run(None, {"x": feed})
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6), (pool, counts, indexes, lo, hi, skip, mode, x)


def test_invalid_attributes():
    x = {"x": np.array([1, 2, 3], np.int64)}
    with pytest.raises(strata.Error, match=r"ngram_counts\[1\] = 3 does not start whole 2-grams of the pool \(4 items\)"):
        session(TP.INT64, [1, 2, 3, 4], [0, 3], [0, 1, 2], 1, 2, 0, "TF", None).run(None, x)
    with pytest.raises(strata.Error, match="the pool has 3 n-grams, ngram_indexes 2"):
        session(TP.INT64, [1, 2, 3], [0], [0, 1], 1, 1, 0, "TF", None).run(None, x)
    with pytest.raises(strata.Error, match="mode is 'BM25', not TF, IDF or TFIDF"):
        session(TP.INT64, [1], [0], [0], 1, 1, 0, "BM25", None).run(None, x)
    with pytest.raises(strata.Error, match="X is int64, but the pool is strings"):
        session(TP.INT64, ["a"], [0], [0], 1, 1, 0, "TF", None).run(None, x)
    with pytest.raises(strata.Error, match="weights has 2 values for 1 n-grams"):
        session(TP.INT64, [1], [0], [0], 1, 1, 0, "IDF", [1.0, 2.0]).run(None, x)
