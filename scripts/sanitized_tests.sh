#!/usr/bin/env bash
# sanitized_tests.sh asan|tsan [CTEST ARGS...] — builds strata with a
# sanitizer in its own directory (build-asan, build-tsan) and runs tests
# under it, sharing the main build's generated models.
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (leaks included)
#         on the whole suite (about 19 minutes on 2 cores), except the
#         fuzz smoke run (its own ASan build) and valgrind (which cannot
#         run an ASan binary); with --ci (what CTest's sanitized_asan
#         runs) a representative subset of about 9 minutes: everything but
#         the OpenCL conformance families, the big models' 50 random
#         schedules and the seed cases' but c2f's (on the CPU and on
#         OpenCL), the soak, the big models' allocation sweeps, the
#         program-cache test, the zoo's real models and the bf16 models on
#         the f32 kernels, which the plain build runs;
#   tsan: ThreadSanitizer on what exercises the concurrent executor: the
#         seed cases' random schedules on two threads (450 runs) and the
#         API's two sessions on two threads.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:?usage: sanitized_tests.sh asan|tsan [ctest args]}
shift
MODELS=${STRATA_MODELS_DIR:-$ROOT/build/models}
B=${STRATA_SANITIZED_BUILD:-$ROOT/build-$kind}
case "$kind" in
  asan) flag=-DSTRATA_ASAN=ON
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
        export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0} ;;
  tsan) flag=-DSTRATA_TSAN=ON
        export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} ;;
  *) echo "sanitized_tests.sh: unknown sanitizer '$kind'" >&2; exit 2 ;;
esac
"$ROOT/scripts/gen_fixtures.sh" "$MODELS" >/dev/null
# no CUDA module: nvcc's four architectures were minutes of each CI run,
# its host code cannot be instrumented, and CI has no GPU to run it on
# (the plain build still compiles it)
cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_WERROR=ON "$flag" \
      -DSTRATA_CUDA=OFF -DSTRATA_MODELS_DIR="$MODELS" >/dev/null
cmake --build "$B" -j"$(nproc)"
cd "$B"
if [ "${1:-}" = --ci ]; then
  shift
  # vulkan_: lavapipe's JIT under ASan took 30 minutes of CI for its label
  # alone, and the loader and driver leak at exit (scripts/lsan.supp); the
  # plain run checks the backend with Khronos validation instead
  set -- -E "fixtures|sanitized|fuzz|valgrind|vulkan_|opencl_conformance_|(yolov8n|yolo11n|yolov5n|ppocr_det|ppocr_rec|ppocr_cls)_schedules|faults_soak|faults_alloc_(yolov8n|ppocr)|opencl_program_cache|zoo_|_f32kernels|seed_(linear_chunk_(first|last)_dim|nested_concat|narrow_transposed|unbind|cat_last_dim_read|uneven_split_concat|offset_view_output)_schedules" "$@"
elif [ $# -eq 0 ]; then
  if [ "$kind" = tsan ]; then set -- -L "seed|api" -E "fixtures"
  else set -- -E "fixtures|sanitized|fuzz|valgrind"; fi
fi
ctest --output-on-failure -j"$(nproc)" "$@"
