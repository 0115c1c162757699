/*
 * k_index.h — the CPU kernels of the index family (k_index.c), and the
 * routines that both a kernel and its shape rule (ops/index.c) run: the
 * ops whose output shape depends on input data compute that shape with
 * the very code that later fills the output.
 */
#ifndef ST_CPU_K_INDEX_H
#define ST_CPU_K_INDEX_H

#include "ops/index.h"
#include "ops/op.h"

st_status st_cpu_expand(const st_kctx *k);
st_status st_cpu_tile(const st_kctx *k);
st_status st_cpu_pad(const st_kctx *k);
st_status st_cpu_range(const st_kctx *k);
st_status st_cpu_constant_of_shape(const st_kctx *k);
st_status st_cpu_eye_like(const st_kctx *k);
st_status st_cpu_trilu(const st_kctx *k);
st_status st_cpu_one_hot(const st_kctx *k);
st_status st_cpu_gather_elements(const st_kctx *k);
st_status st_cpu_gather_nd(const st_kctx *k);
st_status st_cpu_scatter_nd(const st_kctx *k);
st_status st_cpu_scatter_elements(const st_kctx *k);
st_status st_cpu_compress(const st_kctx *k);
st_status st_cpu_nonzero(const st_kctx *k);
st_status st_cpu_unique(const st_kctx *k);
st_status st_cpu_depth_to_space(const st_kctx *k);
st_status st_cpu_space_to_depth(const st_kctx *k);
st_status st_cpu_nms(const st_kctx *k);
st_status st_cpu_einsum(const st_kctx *k);

/* NonZero: how many elements of x are not zero. */
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

/* Einsum: whether every intermediate of the pairwise contraction the
 * kernel does fits in ST_MAX_RANK dims. */
bool st_einsum_fits(const st_einsum_state *s);

#endif
