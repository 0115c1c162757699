#!/usr/bin/env bash
# install_test.sh BUILD SEED_DIR HAVE_CUDA — installs strata from BUILD
# into a temporary prefix, moves the tree elsewhere (an installed strata
# must not depend on where it was installed), and checks what a user gets:
#   - the files: strata.h, libstrata.so.MAJOR with its SONAME and links,
#     libstrata.a, the CLI, pkg-config files, the CMake package and, when
#     built, the CUDA module beside the library;
#   - the installed CLI prints its version;
#   - consumer.c built three ways and run on a seed model (its output
#     against PyTorch's): pkg-config strata (linked with the installed
#     libstrata.so, which it must report running with), CMake's
#     find_package(strata) -> strata::strata (the same), and pkg-config
#     strata-static (libstrata.a: no libstrata.so among its libraries);
#   - with CUDA built: the module is found beside the installed library by
#     the shared consumers and by the installed CLI (bin/../lib), with no
#     environment variable: asking for a CUDA session gets a session, or
#     "no CUDA device" on a machine without a GPU, never "cannot load"; the
#     static consumer, named the module by STRATA_CUDA_MODULE, loads it too
#     (the module binds to the program's own strata, --export-dynamic).
set -euo pipefail
BUILD=$(cd "${1:?usage: install_test.sh BUILD SEED_DIR HAVE_CUDA}" && pwd)
SEED=${2:?}
HAVE_CUDA=${3:?}
HERE=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$BUILD" --prefix "$T/stage" > "$T/install.log" || { cat "$T/install.log"; fail "cmake --install"; }
mv "$T/stage" "$T/moved"
P=$T/moved
# the library directory, wherever GNUInstallDirs put it (lib, lib64, lib/<triplet>)
PC=$(dirname "$(find "$P" -name strata.pc)")
LIB=$(dirname "$PC")
VERSION=$("$P/bin/strata" --version | sed -n 's/^strata \([0-9.]*\)$/\1/p')
[ -n "$VERSION" ] || fail "'strata --version' printed '$("$P/bin/strata" --version)'"
MAJOR=${VERSION%%.*}
echo "installed strata $VERSION; library directory ${LIB#$P/}"

for f in include/strata.h bin/strata; do [ -f "$P/$f" ] || fail "$f is not installed"; done
for f in "libstrata.so.$VERSION" libstrata.a pkgconfig/strata.pc pkgconfig/strata-static.pc \
         cmake/strata/strataConfig.cmake cmake/strata/strataConfigVersion.cmake cmake/strata/strataTargets.cmake; do
  [ -f "$LIB/$f" ] || fail "${LIB#$P/}/$f is not installed"
done
[ "$(readlink "$LIB/libstrata.so.$MAJOR")" = "libstrata.so.$VERSION" ] || fail "libstrata.so.$MAJOR does not link to libstrata.so.$VERSION"
[ "$(readlink "$LIB/libstrata.so")" = "libstrata.so.$MAJOR" ] || fail "libstrata.so does not link to libstrata.so.$MAJOR"
SONAME=$(readelf -d "$LIB/libstrata.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$SONAME" = "libstrata.so.$MAJOR" ] || fail "SONAME is '$SONAME', expected libstrata.so.$MAJOR"
# the API is exported; the protobuf code generated from onnx.proto is not
nm -D --defined-only "$LIB/libstrata.so.$VERSION" | grep ' T st_session_set_input_checked$' >/dev/null || fail "st_session_set_input_checked is not exported"
if nm -D --defined-only "$LIB/libstrata.so.$VERSION" | awk '{print $3}' | grep -v '^st_' | grep . >/dev/null; then
  fail "libstrata.so exports symbols outside st_: $(nm -D --defined-only "$LIB/libstrata.so.$VERSION" | awk '{print $3}' | grep -v '^st_' | head -3 | tr '\n' ' ')"
fi
echo "files, links, SONAME $SONAME and exports: ok"

# consumer NAME BINARY: runs it, checks PASS and which library it ran with
run_consumer() {
  local name=$1 bin=$2 want=$3 out
  out=$("$bin" "$SEED" $( [ "$HAVE_CUDA" = ON ] && echo --cuda ) 2>&1) || { echo "$out"; fail "$name consumer failed"; }
  echo "$out" | sed "s/^/  $name: /"
  echo "$out" | grep -x PASS >/dev/null || fail "$name consumer did not pass"
  local lib
  lib=$(echo "$out" | sed -n 's/^library: //p')
  [ "$(readlink -f "$lib")" = "$(readlink -f "$want")" ] || fail "$name consumer ran with '$lib', expected $want"
  if [ "$HAVE_CUDA" = ON ]; then
    echo "$out" | grep -E '^cuda: (ok|.*no CUDA device)' >/dev/null || fail "$name consumer: the CUDA module was not loaded: $(echo "$out" | grep '^cuda:')"
  fi
}

export PKG_CONFIG_PATH=$PC
[ "$(pkg-config --modversion strata)" = "$VERSION" ] || fail "pkg-config --modversion strata: $(pkg-config --modversion strata)"
CFLAGS="-std=c11 -Wall -Wextra -Werror"
# shellcheck disable=SC2046
$CC $CFLAGS "$HERE/consumer/consumer.c" -o "$T/consumer_pc" $(pkg-config --cflags --libs strata) \
    -Wl,-rpath,"$(pkg-config --variable=libdir strata)" -ldl -lm
readelf -d "$T/consumer_pc" | grep "NEEDED.*\[libstrata.so.$MAJOR\]" >/dev/null || fail "the pkg-config consumer does not need libstrata.so.$MAJOR"
run_consumer pkg-config "$T/consumer_pc" "$LIB/libstrata.so.$VERSION"

cmake -S "$HERE/consumer" -B "$T/cmake" -DCMAKE_PREFIX_PATH="$P" -DSTRATA_VERSION="$VERSION" \
      -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" > "$T/cmake.log" 2>&1 || { cat "$T/cmake.log"; fail "configuring the CMake consumer"; }
cmake --build "$T/cmake" > "$T/cmake-build.log" 2>&1 || { cat "$T/cmake-build.log"; fail "building the CMake consumer"; }
readelf -d "$T/cmake/consumer" | grep "NEEDED.*\[libstrata.so.$MAJOR\]" >/dev/null || fail "the CMake consumer does not need libstrata.so.$MAJOR"
run_consumer cmake "$T/cmake/consumer" "$LIB/libstrata.so.$VERSION"

# shellcheck disable=SC2046
$CC $CFLAGS "$HERE/consumer/consumer.c" -o "$T/consumer_static" $(pkg-config --cflags --libs strata-static) -lm
if readelf -d "$T/consumer_static" | grep "NEEDED.*libstrata" >/dev/null; then fail "the static consumer needs libstrata.so"; fi
# a static program carries the library itself, so nothing is beside it: it
# names the module (or keeps it beside itself, or in ../lib)
STRATA_CUDA_MODULE=$LIB/libstrata_cuda.so run_consumer static "$T/consumer_static" "$T/consumer_static"

if [ "$HAVE_CUDA" = ON ]; then
  [ -f "$LIB/libstrata_cuda.so" ] || fail "libstrata_cuda.so is not installed beside the library"
  ldd "$LIB/libstrata_cuda.so" | grep "libstrata.so.$MAJOR => $LIB/libstrata.so.$MAJOR" >/dev/null ||
    fail "the installed module does not find the installed library: $(ldd "$LIB/libstrata_cuda.so" | grep libstrata)"
  out=$("$P/bin/strata" run "$SEED/c2f.onnx" -i "$SEED/c2f_input_0.npy" -o "$T" --backend cuda 2>&1) || true
  echo "  installed CLI, --backend cuda: $out"
  echo "$out" | grep "cannot load" >/dev/null && fail "the installed CLI did not find the CUDA module in ${LIB#$P/}"
  echo "$out" | grep -E "no CUDA device|y: \[" >/dev/null || fail "the installed CLI, --backend cuda: $out"
fi
echo "PASS"
