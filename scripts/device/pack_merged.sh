#!/usr/bin/env bash
# pack_merged.sh [BUILD] — .device/ for scripts/device/merged_check.sh:
# pack.sh with every node test, without the large model files.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NODE_TESTS=all YOLO_MODELS=yolov8n "$ROOT/scripts/device/pack.sh" "${1:-$ROOT/build}" > /dev/null
rm -rf "$ROOT"/.device/models/{yolo,ppocr,zoo,staged,mixed,transformer}
git -C "$ROOT" rev-parse --short HEAD > "$ROOT/.device/commit"
du -sh "$ROOT/.device"
