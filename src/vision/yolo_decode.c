/* yolo_decode.c — YOLOv5 and YOLOv8/11 detection heads -> boxes. */
#include "vision/yolo_decode.h"

#include <math.h>

#include "core/status.h"

int64_t st_yolo_cells(int in_h, int in_w, int p6)
{
    int64_t n = 0;
    for (int s = 8; s <= (p6 ? 64 : 32); s *= 2) n += (int64_t)((in_h + s - 1) / s) * ((in_w + s - 1) / s);
    return n;
}

st_status st_yolo_format_of(int rank, const int64_t *dims, int in_h, int in_w, st_yolo_format *f)
{
    if (rank != 3)
        return st_error(ST_ERR_SHAPE, "the model's first output has rank %d; a YOLO detection head gives (N, 4+C, A) or (N, A, 5+C)",
                        rank);
    int64_t a = dims[1], b = dims[2];
    for (int p6 = 0; p6 <= 1; p6++) {
        int64_t cells = st_yolo_cells(in_h, in_w, p6);
        if (b == cells && a > 4 && a - 4 <= 100000) {
            *f = (st_yolo_format){ST_YOLO_V8, (int)(a - 4), b};
            return ST_OK;
        }
        if (a == 3 * cells && b > 5 && b - 5 <= 100000) {
            *f = (st_yolo_format){ST_YOLO_V5, (int)(b - 5), a};
            return ST_OK;
        }
    }
    return st_error(ST_ERR_SHAPE,
                    "the model's first output is (%lld, %lld, %lld); for a %dx%d input a YOLOv8/11 head gives (N, 4+C, %lld) "
                    "and a YOLOv5 head (N, %lld, 5+C)",
                    (long long)dims[0], (long long)a, (long long)b, in_w, in_h, (long long)st_yolo_cells(in_h, in_w, 0),
                    (long long)(3 * st_yolo_cells(in_h, in_w, 0)));
}

/* cx, cy, w, h -> corners; false when any value is not finite */
static int make_box(float cx, float cy, float w, float h, float score, int cls, st_box *b)
{
    if (!isfinite(cx) || !isfinite(cy) || !isfinite(w) || !isfinite(h)) return 0;
    *b = (st_box){cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, score, cls};
    if (b->x2 < b->x1 || b->y2 < b->y1) return 0; /* negative size: not a box */
    return 1;
}

int st_yolo_decode(const float *out, const st_yolo_format *f, float conf, st_box *boxes)
{
    int64_t A = f->n_anchors;
    int C = f->n_classes, n = 0;
    if (f->layout == ST_YOLO_V8) {
        /* column-major per anchor: value k of anchor i is out[k * A + i] */
        for (int64_t i = 0; i < A; i++) {
            float best = -INFINITY;
            int cls = 0;
            for (int c = 0; c < C; c++) {
                float s = out[(4 + c) * A + i];
                if (s > best) best = s, cls = c;
            }
            if (!(best > conf)) continue;
            n += make_box(out[i], out[A + i], out[2 * A + i], out[3 * A + i], best, cls, &boxes[n]);
        }
    } else {
        for (int64_t i = 0; i < A; i++) {
            const float *r = out + i * (5 + C);
            float obj = r[4];
            /* score = obj * cls <= obj (both in [0, 1]): most anchors stop here */
            if (!(obj > conf)) continue;
            float best = -INFINITY;
            int cls = 0;
            for (int c = 0; c < C; c++)
                if (r[5 + c] > best) best = r[5 + c], cls = c;
            float score = obj * best;
            if (!(score > conf)) continue;
            n += make_box(r[0], r[1], r[2], r[3], score, cls, &boxes[n]);
        }
    }
    return n;
}
