#!/usr/bin/env bash
# run_fuzzer.sh FUZZER SEED_DIR SECONDS ARTIFACT_PREFIX [libFuzzer args...]
# One smoke run of a libFuzzer target: a fresh working corpus (new inputs
# go there and are dropped afterwards), the seeds read alongside it.  Fails
# on any crash, leak, UB report, out-of-memory (-rss_limit_mb) or input
# slower than -timeout; the input is kept under ARTIFACT_PREFIX.
set -euo pipefail
fuzzer=${1:?usage: run_fuzzer.sh FUZZER SEED_DIR SECONDS ARTIFACT_PREFIX [args]}
seeds=${2:?}; seconds=${3:?}; artifacts=${4:?}
shift 4
mkdir -p "$(dirname "$artifacts/x")"
work=$(mktemp -d "${TMPDIR:-/tmp}/strata_fuzz_XXXXXX")
trap 'rm -rf "$work"' EXIT
dict=$(dirname "$0")/$(basename "$fuzzer").dict
extra=()
[ -f "$dict" ] && extra+=("-dict=$dict")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
          -artifact_prefix="$artifacts" "${extra[@]}" "$@" "$work" "$seeds"
