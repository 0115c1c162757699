#!/usr/bin/env bash
# extra23.sh — the sixth session's third GPU call (2026-12-04), from the
# repository root with .device/ and .gl/ carried.  Pack:
#   PACK_BINS="strata libstrata_cuda.so" ZOO_ALL=1 ZOO_IDS="$IDS" \
#     bash scripts/device/pack.sh build
#   then copy build/models/yolo/yolov8n.onnx into .device/models/yolo/
#   (the binaries travel in xz since 2026-12-04: about 36 MB in all)
# In order of need:
#  - Vulkan's tensor-core conv (scripts/device/vk_coopmat.sh): whether
#    NVIDIA's driver turns it on, a spread of convs against float64, under
#    synchronization validation, YOLOv8n f16 timed against conv.comp and CUDA;
#  - the CUDA conv tests (affine, residual, mobile block, YOLO stem,
#    channels-last) on this build, and the direct and plane-kernel paths
#    that default runs rarely take (run it again on branch
#    cuda-split-verified-pending, which splits k_conv.cu, before merging it);
#  - OpenCL's zoo runs that call 2 did not reach: --sanitize and f16 with
#    --no-fallback.
IDS="silero_vad_half silero_vad_op18_ifless silero_vad_v6 oww_melspectrogram oww_embedding oww_hey_jarvis oww_alexa oww_timer
  blazeface_front blazeface_back mlsd_tiny_320"
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/r; R=$OUT/r
export PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== Vulkan cooperative matrices $(el)"
OUT=$R timeout 200 bash scripts/device/vk_coopmat.sh 2>&1 | cut -c1-300 | tail -60
echo "== CUDA conv tests $(el)"
for t in affine_test residual_test mobile_block_test yolo_stem_test channels_last_test; do
  timeout 60 python3 tests/conv/$t.py $S cuda > $R/$t.log 2>&1
  echo "$t: exit $? ($(grep -c '^PASS' $R/$t.log) PASS lines)"; grep -m3 "^FAIL" $R/$t.log | cut -c1-250
done
# the conv paths that default runs rarely take (the ones the split moves)
STRATA_CUDA_CONV=direct timeout 60 python3 tests/conv/residual_test.py $S cuda > $R/direct.log 2>&1
echo "STRATA_CUDA_CONV=direct residual_test: exit $? ($(grep -c '^PASS' $R/direct.log) PASS lines)"; grep -m3 "^FAIL" $R/direct.log | cut -c1-250
STRATA_CUDA_CONV=direct timeout 60 python3 tests/conv/yolo_stem_test.py $S cuda > $R/direct2.log 2>&1
echo "STRATA_CUDA_CONV=direct yolo_stem_test: exit $? ($(grep -c '^PASS' $R/direct2.log) PASS lines)"; grep -m3 "^FAIL" $R/direct2.log | cut -c1-250
STRATA_CUDA_CL_DW_POOL=0 STRATA_CUDA_CL_COPY=0 timeout 60 python3 tests/conv/mobile_block_test.py $S cuda > $R/dwpool.log 2>&1
echo "STRATA_CUDA_CL_DW_POOL=0 STRATA_CUDA_CL_COPY=0 mobile_block_test: exit $? ($(grep -c '^PASS' $R/dwpool.log) PASS lines)"
grep -m3 "^FAIL" $R/dwpool.log | cut -c1-250
echo "== OpenCL zoo, --sanitize and f16, the models call 2 did not reach $(el)"
ZOO_IDS="$IDS" PARITY_BACKENDS=opencl PARITY_MODES="--sanitize --precision=f16" OUT=$R timeout 230 bash scripts/device/parity_tests.sh zoo 2>&1 |
  grep -E "^(parity|PASS|FAIL)" | cut -c1-230
rm -rf $R/zoo_parity $R/zoo_parity-f16
tar -C $OUT -cJf $OUT/r.tar.xz r && rm -rf $R
el
