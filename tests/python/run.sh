#!/usr/bin/env bash
# run.sh BUILD MODELS_DIR [PYTEST ARGS...] — the Python package's test, as
# a user installs it: `pip install` of python/ into a fresh venv of
# Debian's python3 (with the system's site packages, for numpy and torch),
# offline (--no-index), then pytest on tests/python against the package
# installed there and BUILD's libstrata.so (STRATA_LIBRARY).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: run.sh BUILD MODELS_DIR [pytest args]}" && pwd)
MODELS=${2:?}
shift 2
V=$BUILD/python-venv
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
rm -rf "$V"
/usr/bin/python3 -m venv --system-site-packages "$V"
# pip builds in the directory it is given: a copy keeps the checkout clean
cp -r "$ROOT/python" "$T/python"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$V/bin/pip" install --no-index -q "$T/python"
export STRATA_LIBRARY=$BUILD/libstrata.so.0 STRATA_MODELS_DIR=$MODELS STRATA_ROOT=$ROOT
cd "$T"
"$V/bin/python" -c 'import strata, sys; assert strata.__file__.startswith(sys.prefix), strata.__file__'
exec "$V/bin/python" -m pytest -p no:cacheprovider -rA -q "$ROOT/tests/python" "$@"
