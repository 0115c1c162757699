#!/usr/bin/env bash
# serve_gpu.sh — `strata serve` on the GPU (issue 27), on the GPU machine,
# from the repository root with .device/ carried (scripts/device/pack.sh:
# its lib.tar.xz holds libmicrohttpd and what it links, taken from ldd of
# strata).  serve_gpu.py says what it checks: served YOLOv8n and PP-OCR rec
# on CUDA against `strata run --backend cuda`, element by element; 8
# concurrent batched requests each against its own run; then the load
# table (1, 8, 64 clients; batching off and on; req/s, p50, p99, failed,
# mean batch, strata bench) on stdout and in $OUT/serve_gpu.md.
# SECONDS_PER_RUN (10) and CLIENTS (1,8,64) tune the load part.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 scripts/device/serve_gpu.py "$D/bin/strata" "$D/models" "$OUT" cuda 2>&1 | tee "$OUT/serve_gpu.log"
exit "${PIPESTATUS[0]}"
