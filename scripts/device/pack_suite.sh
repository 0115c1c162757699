#!/usr/bin/env bash
# pack_suite.sh [BUILD] — the GPU suite's (bench/gpu/suite.sh) part of
# pack.sh: the binaries and the libraries they need, no models (the suite
# exports its own on the GPU machine), so the call carries about 25 MB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
YOLO_MODELS=yolov8n "$ROOT/scripts/device/pack.sh" "$B" > /dev/null
rm -rf "$ROOT/.device/models" "$ROOT/.device/node.tar.xz"
git -C "$ROOT" rev-parse --short HEAD > "$ROOT/.device/commit"
du -sh "$ROOT/.device"
