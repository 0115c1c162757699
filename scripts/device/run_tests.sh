#!/usr/bin/env bash
# run_tests.sh — the CUDA correctness run, on the GPU machine, from the
# repository root with .device/ carried (scripts/device/pack.sh):
# references made there, every seed case, YOLO and PP-OCR model on CUDA
# (plain and sanitized), repeated runs and graph replays bit-identical,
# compute-sanitizer memcheck and racecheck on the seed cases and YOLOv8n;
# the zoo's control-flow and fp16 models on CUDA and on the GPU's OpenCL
# under --sanitize (zoo_device.py: ONNX Runtime's Python package as the
# reference) and the QDQ YOLOv8n against it.  Logs go to $OUT.
set -u
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}
S=$D/bin/strata
nvidia-smi -L
ldd $D/bin/libstrata_cuda.so | grep -E "not found|cudnn|cublas|cudart"
python3 scripts/device/prepare.py $D/models /tmp/m > $OUT/prepare.log 2>&1 || { tail -20 $OUT/prepare.log; exit 1; }
ASSETS=$D/models/ppocr ALL_YOLO=1 YOLO_CASES="640x640_b1 480x640_b2" scripts/device/cuda_tests.sh $D/bin /tmp/m 2>&1 | tee $OUT/cuda_tests.log | grep -E "FAIL|summary|passed|failed" | head -40
echo "== repeated runs and graph replays"
for c in c2f nested_concat; do
  $S check /tmp/m/seed/$c.onnx -i /tmp/m/seed/${c}_input_0.npy --ref-dir /tmp/m/seed/${c}_ref --backend cuda --runs 20 | tail -2
done
$S check /tmp/m/yolo/yolov8n.onnx -i /tmp/m/yolo/yolov8n_640x640_b1_input.npy -r output0=/tmp/m/yolo/yolov8n_640x640_b1_output0.npy \
   --backend cuda --atol 0.002 --rtol 0 --runs 20 | tail -3
echo "== compute-sanitizer"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in memcheck racecheck; do
  for c in linear_chunk_last_dim linear_chunk_first_dim unbind uneven_split_concat c2f cat_last_dim_read offset_view_output narrow_transposed nested_concat; do
    STRATA_CUDA_GRAPHS=0 $CS --tool $tool --error-exitcode 9 $S check /tmp/m/seed/$c.onnx -i /tmp/m/seed/${c}_input_0.npy \
      --ref-dir /tmp/m/seed/${c}_ref --backend cuda > $OUT/cs_${tool}_$c.log 2>&1
    echo "$tool $c: exit $? $(grep -c 'ERROR SUMMARY: 0 errors' $OUT/cs_${tool}_$c.log) clean summaries"
  done
  STRATA_CUDA_GRAPHS=0 $CS --tool $tool --error-exitcode 9 $S run /tmp/m/yolo/yolov8n.onnx --backend cuda -q -o /tmp \
     --dim batch=1 --dim height=320 --dim width=320 > $OUT/cs_${tool}_yolov8n.log 2>&1
  echo "$tool yolov8n 320: exit $? $(grep 'ERROR SUMMARY' $OUT/cs_${tool}_yolov8n.log | head -1)"
done
echo "== zoo models (control flow, streaming state, fp16) under --sanitize"
for b in cuda opencl; do
  python3 scripts/device/zoo_device.py $S $D/models/zoo /tmp/zw $b --sanitize silero_vad_v5 silero_vad_16k_op15 silero_vad_half \
    oww_hey_jarvis oww_melspectrogram 2>&1 | grep -E "^(PASS|FAIL)"
done
[ -f $D/models/yolo/yolov8n_qdq.onnx ] && python3 scripts/device/qdq_yolo.py $S $D/models/yolo/yolov8n_qdq.onnx cuda opencl
