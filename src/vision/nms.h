/*
 * nms.h — detection boxes and greedy non-maximum suppression.
 *
 * Greedy NMS: take boxes by descending score; keep a box unless it
 * overlaps an already kept box (of the same class, when class-aware) by an
 * IoU strictly above the threshold.  The order is total (score, then the
 * coordinates, then the class), so the result does not depend on the
 * order the boxes came in or on the sort algorithm.
 */
#ifndef ST_VISION_NMS_H
#define ST_VISION_NMS_H

#include <stdbool.h>

typedef struct st_box {
    float x1, y1, x2, y2;  /* corners, x1 <= x2 and y1 <= y2 */
    float score;
    int cls;
} st_box;

/* Intersection over union; 0 when the union is empty (two empty boxes). */
float st_box_iou(const st_box *a, const st_box *b);

/* Sorts boxes by descending score (the total order above). */
void st_boxes_sort(st_box *boxes, int n);

/* Sorts, then moves the kept boxes to the front in score order and
 * returns how many were kept (at most max_keep). */
int st_nms(st_box *boxes, int n, float iou_thresh, bool class_aware, int max_keep);

#endif
