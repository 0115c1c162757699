/* nms.c — IoU and greedy non-maximum suppression. */
#include "vision/nms.h"

#include <stdlib.h>

float st_box_iou(const st_box *a, const st_box *b)
{
    float iw = (a->x2 < b->x2 ? a->x2 : b->x2) - (a->x1 > b->x1 ? a->x1 : b->x1);
    float ih = (a->y2 < b->y2 ? a->y2 : b->y2) - (a->y1 > b->y1 ? a->y1 : b->y1);
    /* boxes that only touch, or do not meet, share nothing */
    float inter = iw > 0 && ih > 0 ? iw * ih : 0.0f;
    float area_a = (a->x2 - a->x1) * (a->y2 - a->y1), area_b = (b->x2 - b->x1) * (b->y2 - b->y1);
    float uni = area_a + area_b - inter;
    return uni > 0 ? inter / uni : 0.0f;
}

/* NaN sorts as the lowest value, so the order stays total (qsort needs one) */
static int cmp_f(float a, float b)
{
    if (a != a) return b != b ? 0 : -1;
    if (b != b) return 1;
    return (a > b) - (a < b);
}

static int cmp_box(const void *pa, const void *pb)
{
    const st_box *a = pa, *b = pb;
    int c = cmp_f(b->score, a->score); /* descending */
    if (!c) c = cmp_f(a->y1, b->y1);
    if (!c) c = cmp_f(a->x1, b->x1);
    if (!c) c = cmp_f(a->y2, b->y2);
    if (!c) c = cmp_f(a->x2, b->x2);
    if (!c) c = (a->cls > b->cls) - (a->cls < b->cls);
    return c;
}

void st_boxes_sort(st_box *boxes, int n)
{
    if (n > 1) qsort(boxes, (size_t)n, sizeof *boxes, cmp_box);
}

int st_nms(st_box *boxes, int n, float iou_thresh, bool class_aware, int max_keep)
{
    st_boxes_sort(boxes, n);
    /* A box survives iff no kept box suppresses it, so comparing each box
     * with the kept ones only (at most max_keep) is the whole algorithm:
     * O(n * max_keep), with no scratch memory. */
    int kept = 0;
    for (int i = 0; i < n && kept < max_keep; i++) {
        bool keep = true;
        for (int k = 0; k < kept && keep; k++) {
            if (class_aware && boxes[k].cls != boxes[i].cls) continue;
            if (st_box_iou(&boxes[k], &boxes[i]) > iou_thresh) keep = false;
        }
        if (keep) boxes[kept++] = boxes[i];
    }
    return kept;
}
