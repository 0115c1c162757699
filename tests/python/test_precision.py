"""precision_policy from Python (docs/precision.md), on the E[x^2] - E[x]^2
LayerNorm fixture of tests/models/precision_test.py, against float64: the
default "mixed" policy is within 1% of max|ref| under f16 and keeps the
class of every row; "strict" is the all-16-bit plan that ruins it; a bad
name is a ValueError."""
import os
import sys

import numpy as np
import pytest

import strata


def test_precision_policy(root, tmp_path, rng):
    sys.path.insert(0, os.path.join(root, "tests", "models"))
    import precision_test
    path, feeds, refs = precision_test.ln_variance(str(tmp_path), rng)
    ref = refs["probs"]
    got = {}
    for policy in ("mixed", "strict"):
        with strata.Session(path, precision="f16", precision_policy=policy) as s:
            got[policy] = s.run(None, feeds)[0]
    rel = {k: float(np.max(np.abs(v - ref)) / np.max(np.abs(ref))) for k, v in got.items()}
    assert rel["mixed"] <= 1e-2, rel
    assert np.array_equal(got["mixed"].argmax(-1), ref.argmax(-1))
    assert rel["strict"] > 0.1, rel   # the fixture still shows what the policy fixes
    with pytest.raises(ValueError):
        strata.Session(path, precision="f16", precision_policy="loose")
