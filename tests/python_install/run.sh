#!/usr/bin/env bash
# run.sh BUILD — the Python package as a new user installs it: a fresh
# venv of Debian's python3 (system site packages: numpy, dask's
# distributed), `pip install` of python/ offline (--no-index), nothing set
# in the environment (no STRATA_LIBRARY), then, from another directory:
# `import strata` must load the libstrata.so.0 the package bundled, run a
# model, and strata.dask must match a single-process run on a LocalCluster
# of 2 worker processes (test_dask.py).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: run.sh BUILD}" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
V=$T/venv
/usr/bin/python3 -m venv --system-site-packages "$V"
# a copy: pip builds in the directory it is given, and the checkout stays clean
cp -r "$ROOT/python" "$T/python"
unset STRATA_LIBRARY
STRATA_BUILD=$BUILD STRATA_REQUIRE_LIBRARY=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$V/bin/pip" install --no-index -q "$T/python"
rm -rf "$T/python"   # nothing of the checkout left to find
cd "$T"
"$V/bin/python" - <<'PY'
import sys, numpy as np, strata
assert strata.library_path.startswith(sys.prefix), "loaded %s, not the bundled library" % strata.library_path
print("import strata: %s (%s)" % (strata.library_path, strata.library_version))
PY
exec "$V/bin/python" -m pytest -p no:cacheprovider -rA -q "$ROOT/tests/python_install/test_dask.py"
