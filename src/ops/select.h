/*
 * select.h — data-dependent selections (ops/select.c) that both a shape
 * rule and a kernel run: the shape of the output is the result.
 */
#ifndef ST_OPS_SELECT_H
#define ST_OPS_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/view.h"

/* NonZero: whether the element at p is not zero, and how many of x are. */
bool st_is_nonzero(st_dtype t, const char *p);
int64_t st_nonzero_count(const st_operand *x);

/* NonMaxSuppression's scalar inputs, read from operands 2..4 of in[]
 * (an operand with data NULL is an omitted input). */
typedef struct st_nms_params {
    int64_t max_per_class;
    float iou_threshold;
    bool has_score_threshold;
    float score_threshold;
    bool center_point_box;
} st_nms_params;

void st_nms_params_read(const st_operand *in, int n_in, bool center_point_box, st_nms_params *p);
/* The selected [batch, class, box] triples, in output order, into a
 * malloc'd *sel (3 * *count values; free it). */
st_status st_nms_select(const st_operand *boxes, const st_operand *scores, const st_nms_params *p, int64_t **sel,
                        int64_t *count);

/* Unique over the slices of x along axis (axis < 0: over its elements in
 * row-major order).  first[u] is the slice that unique entry u is (its
 * first occurrence), inverse[i] the entry of slice i, counts[u] how often
 * entry u occurs.  Entries are in ascending order when sorted, else in
 * order of first occurrence. */
typedef struct st_unique_result {
    int64_t n_slices, n_unique;
    int64_t *first, *inverse, *counts;
} st_unique_result;

st_status st_unique_run(const st_operand *x, int axis, bool sorted, st_unique_result *r);
void st_unique_free(st_unique_result *r);

#endif
