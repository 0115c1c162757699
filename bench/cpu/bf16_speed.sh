#!/bin/sh
# bf16 against f32 speed on YOLOv8n and PP-OCRv4 det / rec (issue 15, item 3),
# as CPU time per run: perf stat's task-clock of `strata bench` with N1 and
# with N2 timed runs, the difference over N2 - N1 (loading, planning and the
# warm-up cancel), so a loaded machine inflates the figures less than wall
# time.  Per model and thread count, the three configurations alternate,
# ROUNDS times; the script prints every round and the median per
# configuration:
#   f32         --precision f32
#   bf16-f32k   --precision bf16 on the f32 kernels (STRATA_CPU_NO_BF16=1:
#               other CPUs, and strata before the bf16 kernels)
#   bf16        --precision bf16 on the bf16 kernels (vdpbf16ps)
#
#   bench/cpu/bf16_speed.sh STRATA MODELS_DIR PPOCR_ASSETS [ROUNDS [NAMES]]
# NAMES (e.g. "ppocr_det_640 ppocr_rec_48x320") picks some of the models,
# THREADS="1" (environment) the thread counts (default "1 2").
set -eu
STRATA=$1 MODELS=$2 ASSETS=$3 ROUNDS=${4:-3} NAMES=${5:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cpu_ms() { # MODEL INPUT THREADS RUNS PRECISION NO_BF16 -> task-clock ms
    STRATA_CPU_NO_BF16=$6 perf stat -x, -e task-clock -o "$TMP/p" \
        "$STRATA" bench "$1" -i "$2" --threads "$3" --warmup 1 --runs "$4" --precision "$5" -q >/dev/null
    awk -F, '/task-clock/ {print $1}' "$TMP/p"
}

one() { # NAME MODEL INPUT N1 N2
    case " ${NAMES:-$1} " in *" $1 "*) ;; *) return 0 ;; esac
    for t in ${THREADS:-1 2}; do
        : >"$TMP/rows"
        r=1
        while [ $r -le "$ROUNDS" ]; do
            for cfg in f32:f32:0 bf16-f32k:bf16:1 bf16:bf16:0; do
                label=${cfg%%:*} rest=${cfg#*:}
                prec=${rest%%:*} nob=${rest#*:}
                a=$(cpu_ms "$2" "$3" $t "$4" "$prec" "$nob")
                b=$(cpu_ms "$2" "$3" $t "$5" "$prec" "$nob")
                ms=$(awk -v a="$a" -v b="$b" -v n1="$4" -v n2="$5" 'BEGIN {printf "%.1f", (b - a) / (n2 - n1)}')
                echo "$1 threads=$t round=$r $label $ms ms/run"
                echo "$label $ms" >>"$TMP/rows"
            done
            r=$((r + 1))
        done
        for label in f32 bf16-f32k bf16; do
            awk -v l="$label" '$1 == l {print $2}' "$TMP/rows" | sort -n |
                awk -v l="$label" -v name="$1" -v t=$t '{v[NR] = $1} END {printf "%s threads=%d %s median %.1f ms/run\n", name, t, l, v[int((NR + 1) / 2)]}'
        done
    done
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
one yolov8n_640 "$MODELS/yolo/yolov8n.onnx" "$MODELS/yolo/yolov8n_640x640_b1_input.npy" 2 32
one ppocr_det_640 "$ASSETS/ch_PP-OCRv4_det_infer.onnx" "$MODELS/ppocr/det_640x640_input.npy" 2 32
one ppocr_rec_48x320 "$ASSETS/ch_PP-OCRv4_rec_infer.onnx" "$MODELS/ppocr/rec_48x320_input.npy" 5 105
echo "# done $(date -u '+%H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
