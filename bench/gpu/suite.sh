#!/usr/bin/env bash
# suite.sh — the GPU benchmark suite on the GPU machine, from the repository
# root with .device/ carried (scripts/device/pack.sh): exports the five
# models with random weights, checks strata's f32 output against PyTorch's,
# times strata and PyTorch (eager, torch.compile) and writes
# $OUT/latest.json and $OUT/suite.log (bench/gpu/suite.py says what is in them).
#   bench/gpu/suite.sh [suite.py options: --cases, --compile none|b1|b32|both, --backends]
# SUITE_PROFILE="vit_small:32 convnext_tiny:32" also writes, per entry,
# Nsight Compute's per-kernel times ($OUT/ncu_CASE_B.txt) and the plan
# and strata's own per-op profile.
set -u
D=.device
. scripts/device/env.sh
export STRATA=$PWD/$D/bin/strata STRATA_COMMIT=$(cat $D/commit 2>/dev/null)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1
python3 bench/gpu/suite.py --out $OUT "$@" 2>&1 | tee $OUT/suite.log
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for e in ${SUITE_PROFILE:-}; do
  c=${e%%:*} b=${e##*:}
  ins=$(python3 -c "import json,sys; print(' '.join('-i %s=/tmp/suite/${c}_b${b}_%s.npy' % (n, n) for n in json.load(open('/tmp/suite/$c.json'))['inputs']))")
  mkdir -p /tmp/o; STRATA_CUDA_GRAPHS=0 timeout 300 $NCU --clock-control none --metrics gpu__time_duration.sum --csv \
    $STRATA run /tmp/suite/$c.onnx $ins --backend cuda --precision f16 -q -o /tmp/o > /tmp/ncu.csv 2>/dev/null
  python3 bench/gpu/ncu_sum.py /tmp/ncu.csv > $OUT/ncu_${c}_$b.txt
  head -25 $OUT/ncu_${c}_$b.txt
  # strata's own per-op view of the same case (graphs off under --profile)
  timeout 120 $STRATA bench /tmp/suite/$c.onnx $ins --backend cuda --precision f16 --runs 5 --warmup 2 -q \
    --profile /tmp/trace_${c}_$b.json > /dev/null 2>&1 &&
    python3 bench/gpu/trace_sum.py /tmp/trace_${c}_$b.json > $OUT/ops_${c}_$b.txt
  $STRATA inspect /tmp/suite/$c.onnx --plan --backend cuda --precision f16 > $OUT/plan_${c}.txt 2>&1
done
# the exported graphs without their weights (dims kept), for study off the
# GPU machine: bench/gpu/suite_restore.py gives them random weights again
if [ -n "${SUITE_GRAPHS:-}" ]; then
  python3 - <<'PY'
import glob, onnx, os
os.makedirs("/tmp/graphs", exist_ok=True)
for f in glob.glob("/tmp/suite/*.onnx"):
    m = onnx.load(f)
    for t in m.graph.initializer:
        if len(t.raw_data) > 4096:
            t.raw_data = b""
            t.doc_string = "stripped"
    onnx.save(m, "/tmp/graphs/" + os.path.basename(f))
PY
  tar -C /tmp -cJf $OUT/graphs.tar.xz graphs
fi
