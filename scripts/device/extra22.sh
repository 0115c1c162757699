#!/usr/bin/env bash
# extra22.sh — the sixth session's second GPU call (2026-12-04), from the
# repository root with .device/ carried.  Pack:
#   ZOO_ALL=1 ZOO_IDS="silero_vad_v5 silero_vad_v4 silero_vad_16k_op15 silero_vad_half
#     silero_vad_op18_ifless silero_vad_v6 oww_melspectrogram oww_embedding oww_hey_jarvis
#     oww_alexa oww_timer blazeface_front blazeface_back mlsd_tiny_320 ppocr_v4_rec" \
#     bash scripts/device/pack.sh build
#   (.device/bin cut to strata and libstrata_cuda.so: 64 MB in all)
# In order of need:
#  - the affine fold on CUDA and OpenCL (tests/conv/affine_test.py), and
#    the residual test, which now expects the broadcasting Add folded;
#  - the zoo's first half plus ppocr_v4_rec with --no-fallback on CUDA and
#    OpenCL: f32, --sanitize, f16 (issue 28);
#  - PP-OCRv4 rec timed on CUDA and OpenCL in f16 with the fold on and
#    off (STRATA_CONV_AFFINE=0).
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/r; R=$OUT/r
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== affine and residual folds $(el)"
for b in cuda opencl; do
  timeout 90 python3 tests/conv/affine_test.py $S $b 2>&1 | tail -8
done
timeout 60 python3 tests/conv/residual_test.py $S cuda 2>&1 | grep -v "^PASS" | head -5
echo "== PP-OCRv4 rec, f16, fold on and off (median ms of 50) $(el)"
M=$D/models/zoo/ppocr_v4_rec.onnx
python3 -c "import numpy as np; np.save('/tmp/rec_x.npy', np.random.default_rng(5).uniform(-1, 1, (1, 3, 48, 320)).astype(np.float32))"
for b in cuda opencl; do
  for a in 1 0; do
    echo "rec $b STRATA_CONV_AFFINE=$a: $(STRATA_CONV_AFFINE=$a timeout 60 $S bench $M -i x=/tmp/rec_x.npy \
      --backend $b --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
  done
done
echo "== zoo half A and ppocr_v4_rec, --no-fallback $(el)"
ZOO_IDS="silero_vad_v5 silero_vad_v4 silero_vad_16k_op15 silero_vad_half silero_vad_op18_ifless silero_vad_v6 oww_melspectrogram
  oww_embedding oww_hey_jarvis oww_alexa oww_timer blazeface_front blazeface_back mlsd_tiny_320 ppocr_v4_rec" \
  OUT=$R timeout 420 bash scripts/device/parity_tests.sh zoo 2>&1 | grep -E "^(op rows|parity|PASS|FAIL)" | cut -c1-230
rm -rf $R/zoo_parity
tar -C $OUT -cJf $OUT/r.tar.xz r && rm -rf $R
el
