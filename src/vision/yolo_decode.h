/*
 * yolo_decode.h — turning a YOLO detection head's output into boxes.
 *
 * Two output layouts, told apart by shape (A = the anchor count, C = the
 * class count):
 *   YOLOv8 / YOLO11  (N, 4 + C, A): per anchor a column cx, cy, w, h, then C
 *                    class scores (already through a sigmoid)
 *   YOLOv5           (N, A, 5 + C): per anchor a row cx, cy, w, h,
 *                    objectness, C class scores; score = objectness * class
 * Coordinates are model-input pixels.  A is fixed by the input size: one
 * anchor (v8) or three (v5) per cell of the stride 8, 16 and 32 grids (and
 * 64 for the P6 variants), which is how an ambiguous shape is settled.
 */
#ifndef ST_VISION_YOLO_DECODE_H
#define ST_VISION_YOLO_DECODE_H

#include <stdint.h>

#include "strata.h"
#include "vision/nms.h"

typedef enum st_yolo_layout {
    ST_YOLO_V8 = 8,   /* (N, 4 + C, A), anchor-free */
    ST_YOLO_V5 = 5    /* (N, A, 5 + C), with objectness */
} st_yolo_layout;

typedef struct st_yolo_format {
    st_yolo_layout layout;
    int n_classes;
    int64_t n_anchors;
} st_yolo_format;

/* Anchor-grid cells for an in_h x in_w input: the sum over the strides
 * 8, 16, 32 (and 64 when p6) of ceil(h / s) * ceil(w / s). */
int64_t st_yolo_cells(int in_h, int in_w, int p6);

/* Recognises the layout from the output's dims (rank 3) and the input
 * size; fails with a message that shows the shape when it is neither. */
st_status st_yolo_format_of(int rank, const int64_t *dims, int in_h, int in_w, st_yolo_format *f);

/* Decodes one image's output (out points at its first value) into boxes
 * with score > conf: at most one box per anchor, of its best class.
 * Boxes whose values are not finite are skipped.  Returns the count
 * written (boxes must hold f->n_anchors). */
int st_yolo_decode(const float *out, const st_yolo_format *f, float conf, st_box *boxes);

#endif
