#!/usr/bin/env bash
# test.sh — the whole test suite on a fresh or prepared machine: runs the
# (idempotent) set-up with warnings as errors, then CTest.  Extra arguments
# go to ctest (e.g. -L seed, -R conformance).  Without arguments the
# heavy Vulkan variants (label vulkan_heavy: lavapipe is slow on 2 cores)
# are left out; `scripts/test.sh -L vulkan_heavy` runs them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STRATA_CMAKE_ARGS="-DSTRATA_WERROR=ON ${STRATA_CMAKE_ARGS:-}" "$ROOT/scripts/setup.sh"
cd "${STRATA_BUILD:-$ROOT/build}"
rc=0
[ "$#" -gt 0 ] || set -- -LE vulkan_heavy
ctest --output-on-failure -j"$(nproc)" "$@" || rc=$?
# CI's log keeps its head and tail: say again, last, what failed and how
[ "$rc" -eq 0 ] || /usr/bin/python3 "$ROOT/scripts/failed_tails.py" . 30 || true
exit "$rc"
