#!/usr/bin/env bash
# fuzz.sh smoke | long SECONDS [loader|npy|run ...]
# Builds the libFuzzer targets with clang in their own directory
# (build-fuzz, or $STRATA_FUZZ_BUILD) and fuzzes, sharing the main build's
# generated models for the seed corpus (tests/fuzz/collect_corpus.sh).
#   smoke  the CTest smoke run: each target about 30 s from the seeds, then
#          the regression inputs (ctest -L fuzz in the fuzz build)
#   long   each named target (default: all three) for SECONDS, one after
#          the other, on a corpus kept in build-fuzz/fuzz/corpus/<target>
#          that grows from run to run; libFuzzer's final stats are printed
# Crashing inputs land in build-fuzz/fuzz/artifacts/<target>/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:?usage: fuzz.sh smoke | long SECONDS [targets]}
shift
MODELS=${STRATA_MODELS_DIR:-$ROOT/build/models}
B=${STRATA_FUZZ_BUILD:-$ROOT/build-fuzz}
FUZZ_CC=${STRATA_FUZZ_CC:-$(command -v clang-14 || command -v clang)}
"$ROOT/scripts/gen_fixtures.sh" "$MODELS" >/dev/null
cmake -S "$ROOT" -B "$B" -DCMAKE_C_COMPILER="$FUZZ_CC" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_FUZZ=ON \
      -DSTRATA_CUDA=OFF -DSTRATA_OPENCL=OFF -DSTRATA_MODELS_DIR="$MODELS" >/dev/null
cmake --build "$B" -j"$(nproc)" --target fuzz_loader fuzz_npy fuzz_run
case "$mode" in
  smoke)
    cd "$B"
    ctest --output-on-failure -L fuzz -FS models ;;
  long)
    seconds=${1:?usage: fuzz.sh long SECONDS [targets]}
    shift
    [ $# -gt 0 ] || set -- loader npy run
    "$ROOT/tests/fuzz/collect_corpus.sh" "$MODELS" "$B/fuzz/seed"
    for t in "$@"; do
      mkdir -p "$B/fuzz/corpus/$t" "$B/fuzz/artifacts/$t"
      echo "== fuzz_$t: $seconds s"
      dict=$ROOT/tests/fuzz/fuzz_$t.dict
      extra=()
      [ -f "$dict" ] && extra+=("-dict=$dict")
      ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$B/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
                     -artifact_prefix="$B/fuzz/artifacts/$t/" "${extra[@]}" \
                     "$B/fuzz/corpus/$t" "$B/fuzz/seed/$t"
    done ;;
  *) echo "fuzz.sh: unknown mode '$mode' (smoke or long)" >&2; exit 2 ;;
esac
