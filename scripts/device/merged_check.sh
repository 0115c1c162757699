#!/usr/bin/env bash
# merged_check.sh — one GPU call over a merged tree, from the repository
# root with .device/ carried (scripts/device/pack_merged.sh): the new CUDA
# kernels on every node test with and without fallback (parity_tests.sh
# node, CUDA), the kernel sweep on CUDA and the GPU's OpenCL, the seed
# cases in three precisions plain and under --sanitize on the shared DAG
# driver, the conditional-graph loops, and the GPU suite on the models
# the last changes touched.  Each part has a time cap; logs under $OUT.
set -u
# cuda_tests.sh does not source env.sh itself: without it every check
# failed on a missing libstrata.so.0 (the 09:20 run on 2026-12-03)
D=.device
. scripts/device/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export OUT
echo "== parity: node tests on CUDA"; PARITY_BACKENDS=cuda timeout 300 bash scripts/device/parity_tests.sh node 2>&1 | tail -14
echo "== kernel sweep"; CASES=2 timeout 50 bash scripts/device/kernel_test.sh 2>&1 | grep -vE "^ " | tail -8
echo "== seed cases on the shared driver"; SKIP_YOLO=1 SKIP_PPOCR=1 timeout 80 bash scripts/device/cuda_tests.sh .device/bin .device/models > $OUT/cuda_tests.log 2>&1; grep -E "^FAIL|cuda_tests:" $OUT/cuda_tests.log | head
echo "== conditional loops"; timeout 50 bash scripts/device/cond_tests.sh 2>&1 | tail -12
echo "== suite"; timeout 120 bash bench/gpu/suite.sh --compile none ${MERGED_SUITE:---cases convnext_tiny} 2>&1 | grep -vE "^(exported|floor)" | tail -12
