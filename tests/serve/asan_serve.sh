#!/usr/bin/env bash
# asan_serve.sh BUILD — builds BUILD/strata-serve-asan, a strata binary whose command line (tools/*.c:
# the server's parser, HTTP handling, batching) is built with
# AddressSanitizer and UndefinedBehaviorSanitizer and linked with BUILD's
# plain libstrata.a: minutes instead of the whole ASan build's hour on 2
# cores, and it instruments what the bad-request suite attacks.  The full
# ASan build (scripts/sanitized_tests.sh asan -R serve) runs the same
# suites with the library instrumented too.  Then runs the bad-request
# suite (serve_fuzz.py) on it: any ASan or UBSan report, or a leak at
# exit, fails it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:?usage: asan_serve.sh BUILD}" && pwd)
OUT=$B/strata-serve-asan
O=$(mktemp -d)
trap 'rm -rf "$O"' EXIT
F="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -std=c11
   -D_GNU_SOURCE -DST_HAVE_MHD -DST_HAVE_OPENCL -DCL_TARGET_OPENCL_VERSION=120
   -I$ROOT/src -I$ROOT/tools -I$B/gen -I$ROOT/include -I/usr/include/stb -Wall -Wextra -Wno-format-truncation
   -Wno-missing-field-initializers"
objs=()
for c in "$ROOT"/tools/*.c; do
  o=$O/$(basename "$c" .c).o
  cc $F -c "$c" -o "$o" &
  objs+=("$o")
  [ "$(jobs -r | wc -l)" -lt "$(nproc)" ] || wait -n
done
wait
# the Vulkan backend is in the archive when it was built: its loader too
VK=""
ar t "$B/libstrata.a" | grep -q '^vk_' && VK=-lvulkan
cc -fsanitize=address,undefined -rdynamic "${objs[@]}" -o "$OUT" -Wl,--whole-archive "$B/libstrata.a" \
   -Wl,--no-whole-archive "$B/libstrata_vision.a" -lprotobuf-c -ldl -lOpenCL $VK -lstb -lm -lmicrohttpd -lpthread
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0
exec /usr/bin/python3 "$ROOT/tests/serve/serve_fuzz.py" "$OUT"
