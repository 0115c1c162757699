#!/usr/bin/env bash
# extra21.sh — the first GPU call of the sixth session (2026-12-04), from
# the repository root with .device/ and .gl/ carried.  Pack:
#   ZOO_ALL=1 ZOO_IDS="ppocr_v4_det ppocr_v4_rec ppocr_cls mlsd_large_512" \
#     bash scripts/device/pack.sh build
#   (.device/bin keeps strata, libstrata_cuda.so and kernel_sweep only;
#   the zoo's other default models are removed: 64 MB in all)
# In order of need, since the call may be cut short:
#  - the residual fold's test on CUDA again: 17d0868 changed the post-step
#    that the unfused paths (f32, STRATA_CUDA_CONV_FUSED=0) take;
#  - the zoo's second half (PP-OCR det, rec, cls, M-LSD large) with
#    --no-fallback on CUDA and OpenCL: f32, --sanitize, f16 (issue 28);
#  - the GPU suite's ViT-S, BERT-4 and YOLOv8n, strata against PyTorch
#    eager, after the lowering merge (issue 25's last figure);
#  - Vulkan on NVIDIA: the seed's hazard modes (issue 26), then PP-OCR and
#    YOLOv8n against their references under synchronization validation;
#  - the kernel sweeps on CUDA and OpenCL (issue 25);
#  - compute-sanitizer racecheck over YOLOv8n f16 b1.
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/r; R=$OUT/r
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
ins() { python3 -c "import json; print(' '.join('-i %s=/tmp/suite/$1_b$2_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$1.json'))['inputs']))"; }
# the PP-OCR files travel once, as the zoo's copies
mkdir -p $D/models/ppocr
cp $D/models/zoo/ppocr_v4_det.onnx $D/models/ppocr/ch_PP-OCRv4_det_infer.onnx
cp $D/models/zoo/ppocr_v4_rec.onnx $D/models/ppocr/ch_PP-OCRv4_rec_infer.onnx
cp $D/models/zoo/ppocr_cls.onnx $D/models/ppocr/ch_ppocr_mobile_v2.0_cls_infer.onnx
echo "== residual folds on CUDA $(el)"
timeout 60 python3 tests/conv/residual_test.py $S cuda 2>&1 | tail -3
STRATA_CUDA_CONV_FUSED=0 timeout 60 python3 tests/conv/residual_test.py $S cuda 2>&1 | tail -1 | sed 's/^/unfused: /'
echo "== zoo half B, --no-fallback $(el)"
ZOO_IDS="ppocr_v4_det ppocr_v4_rec ppocr_cls mlsd_large_512" OUT=$R timeout 170 bash scripts/device/parity_tests.sh zoo 2>&1 |
  grep -E "^(op rows|parity|PASS|FAIL)" | cut -c1-220
echo "== suite $(el)"
OUT=$R timeout ${SUITE_S:-190} bash bench/gpu/suite.sh --compile none --cases vit_small,bert4,yolov8n > $R/suite_console.log 2>&1
grep -E "^row|max\|d\||error" $R/suite.log | cut -c1-200 | tail -20
cp $R/latest.json $OUT/latest.json 2>/dev/null
echo "== Vulkan: hazard modes, then PP-OCR and YOLOv8n under synchronization validation $(el)"
python3 scripts/device/prepare.py $D/models /tmp/m > $R/prepare.log 2>&1 || tail -3 $R/prepare.log
timeout 60 python3 tests/vulkan/vulkan_test.py $S hazard $D/models/seed 2>&1 | tail -12
export STRATA_VULKAN_VALIDATION=1
vp=0; vf=0
vk() { if "$@" > /tmp/vk.log 2>&1 && ! grep -q "vulkan validation:" /tmp/vk.log; then vp=$((vp+1)); else vf=$((vf+1)); echo "FAIL: ${*: -10}"; grep -m2 "vulkan validation:" /tmp/vk.log | cut -c1-200; tail -2 /tmp/vk.log; fi; }
for spec in det_640x640:ch_PP-OCRv4_det_infer rec_48x320:ch_PP-OCRv4_rec_infer cls_48x192:ch_ppocr_mobile_v2.0_cls_infer; do
  c=${spec%%:*}
  vk timeout 30 $S check $D/models/ppocr/${spec#*:}.onnx -i /tmp/m/ppocr/${c}_input.npy --ref-dir /tmp/m/ppocr/${c}_ref --backend vulkan \
     --sanitize --scale-tol 1e-4 --atol 0 --rtol 0
  vk timeout 30 $S check $D/models/ppocr/${spec#*:}.onnx -i /tmp/m/ppocr/${c}_input.npy --ref-dir /tmp/m/ppocr/${c}_ref --backend vulkan \
     --sanitize --precision f16 --scale-tol 2e-2 --atol 0 --rtol 0
done
for p in f32 f16; do
  tol=1e-3; [ $p = f16 ] && tol=2e-2
  vk timeout 40 $S check /tmp/suite/yolov8n.onnx $(ins yolov8n 1) -r y=/tmp/suite/yolov8n_b1_ref.npy --backend vulkan --precision $p \
    --sanitize --scale-tol $tol --atol 0 --rtol 0
done
echo "vulkan with synchronization validation: $vp passed, $vf failed"
export STRATA_VULKAN_VALIDATION=0
echo "== kernel sweeps $(el)"
for b in cuda opencl; do
  timeout 30 $D/bin/kernel_sweep --backend $b --cases 2 --seed 44 --known tests/kernels/known_failures.txt > $R/sweep_$b.log 2>&1
  echo "$b exit $?: $(grep -E '^backend' $R/sweep_$b.log)"; grep -E "^FAIL" $R/sweep_$b.log | head -4
done
echo "== racecheck, YOLOv8n f16 b1, graphs off $(el)"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
mkdir -p /tmp/o
STRATA_CUDA_GRAPHS=0 timeout 100 $CS --tool racecheck --error-exitcode 9 $S run /tmp/suite/yolov8n.onnx $(ins yolov8n 1) --backend cuda \
  --precision f16 -q -o /tmp/o > $R/cs_racecheck_yolov8n.log 2>&1
echo "racecheck yolov8n f16: exit $? $(grep 'RACECHECK SUMMARY\|ERROR SUMMARY' $R/cs_racecheck_yolov8n.log | head -1)"
tar -C $OUT -cJf $OUT/r.tar.xz r && rm -rf $R
el
