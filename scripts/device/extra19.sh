#!/usr/bin/env bash
# extra19.sh — the second GPU call of the fifth session (2026-12-04), from
# the repository root with .device/ carried (bin, lib, seed models, and
# .device/compile/: the inductor caches extra18.sh brought back):
#  - torch.compile's phase 1 goes on from those caches in the background
#    (compile_peer.py --load), then times each CNN alone at b32;
#  - meanwhile the new CUDA code's correctness: the residual Add folded
#    into the Conv (passes/fuse_conv_add.c) against float64
#    (tests/conv/residual_test.py), the YOLO stem and mobile block tests,
#    the seed cases and YOLOv8n in f32/f16/bf16 with --sanitize
#    (cuda_tests.sh), the CUDA kernel sweep, and the suite's CNNs against
#    PyTorch (their times here overlap the compile: not reported);
#  - once the GPU is free: strata b32 for the compiled CNNs in the same
#    call, and A/B of the residual fold (STRATA_CONV_RESIDUAL=0) on
#    YOLOv8n and ResNet-50 at b1 and b32.
D=.device
. scripts/device/env.sh
S=$D/bin/strata
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
L=$OUT/log.txt
export PYTHONUNBUFFERED=1 STRATA=$PWD/$S
CASES=${CNN_CASES:-yolov8n,resnet50,convnext_tiny}
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
echo "== export $CASES $(el)"
python3 bench/gpu/suite_models.py /tmp/suite --cases $CASES >> $L 2>&1 || echo "export failed"
echo "== torch.compile from the carried caches, in the background (budget ${CNN_BUDGET:-270} s) $(el)"
timeout 440 python3 bench/gpu/compile_peer.py /tmp/suite $CASES --budget ${CNN_BUDGET:-270} --load $D/compile > /tmp/compile.log 2>&1 &
CP=$!
echo "== residual_test cuda $(el)"
timeout 120 python3 tests/conv/residual_test.py $S cuda 2>&1 | tee -a $L | tail -8
echo "== yolo_stem_test, mobile_block_test cuda $(el)"
timeout 100 python3 tests/conv/yolo_stem_test.py $S cuda 2>&1 | grep -E "FAIL|PASS" | tail -4
timeout 60 python3 tests/conv/mobile_block_test.py $S cuda 2>&1 | grep -cE "^PASS" | sed 's/^/mobile_block PASS lines: /'
echo "== seed cases + sanitize (cuda_tests.sh) $(el)"
python3 scripts/device/prepare.py $D/models /tmp/m > /tmp/prepare.log 2>&1 || tail -3 /tmp/prepare.log
SKIP_PPOCR=1 timeout 120 scripts/device/cuda_tests.sh $D/bin /tmp/m > /tmp/cuda_tests.log 2>&1
grep -E "^FAIL|cuda_tests:" /tmp/cuda_tests.log | head -8; grep -E "^FAIL" /tmp/cuda_tests.log >> $L
echo "== CUDA kernel sweep $(el)"
timeout 60 $D/bin/kernel_sweep --backend cuda --cases 6 --seed 41 --known tests/kernels/known_failures.txt > /tmp/sweep.log 2>&1
grep -E "^FAIL|^backend" /tmp/sweep.log | head -6
echo "== suite CNNs against PyTorch (times overlap the compile) $(el)"
OUT=/tmp/sc timeout 150 bash bench/gpu/suite.sh --cases resnet50,mobilenetv3_large_100,efficientnet_b0 --compile none > /tmp/sc.log 2>&1
grep -E "max\|d\|" /tmp/sc.log; cat /tmp/sc.log >> $L
echo "== waiting for torch.compile $(el)"
wait $CP; echo "compile_peer exit $?"
grep '^{' /tmp/compile.log; tail -4 /tmp/compile.log >> $L
echo "== strata f16, GPU alone: default and STRATA_CONV_RESIDUAL=0 $(el)"
for c in ${CASES//,/ }; do
  for b in 32 1; do
    ins=$(python3 -c "import json; print(' '.join('-i %s=/tmp/suite/${c}_b${b}_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$c.json'))['inputs']))")
    for v in X=1 STRATA_CONV_RESIDUAL=0; do
      [ $c = convnext_tiny ] && [ $v != X=1 ] && continue
      echo "$c b$b $v: $(env $v $S bench /tmp/suite/$c.onnx $ins --backend cuda --precision f16 --runs 50 --warmup 10 -q 2>&1 | tail -1)"
    done
  done
done
el
