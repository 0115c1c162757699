"""Fixtures of the Python package's tests (tests/python/run.sh runs them on
the package pip installed into a venv):
  STRATA_MODELS_DIR   the generated test models (scripts/gen_fixtures.sh)
  STRATA_ROOT         the source checkout (its PyTorch model builders in
                      scripts/models and include/strata.h)
Every numerical test draws fresh random inputs from a seed it prints, so a
failure can be replayed with STRATA_TEST_SEED=<seed>."""
import os
import secrets
import sys

import numpy as np
import pytest


def _env(name):
    v = os.environ.get(name)
    if not v:
        pytest.exit("%s is not set (tests/python/run.sh sets it)" % name, returncode=2)
    return v


@pytest.fixture(scope="session")
def models_dir():
    return _env("STRATA_MODELS_DIR")


@pytest.fixture(scope="session")
def root():
    r = _env("STRATA_ROOT")
    if os.path.join(r, "scripts", "models") not in sys.path:
        sys.path.insert(0, os.path.join(r, "scripts", "models"))
    return r


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("STRATA_TEST_SEED") or secrets.randbits(32))
    print("%s: inputs drawn with seed %d" % (request.node.name, seed))
    return np.random.default_rng(seed)
