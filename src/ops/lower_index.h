/*
 * lower_index.h — the index family lowered once for every backend:
 *   - the copies over a re-described iteration space (Expand: stride 0 on
 *     broadcast dims; Tile: each dim as [repeat, dim] with stride 0 on the
 *     repeat; DepthToSpace / SpaceToDepth: a 6-d permutation);
 *   - the element walks of Gather, GatherElements and ScatterElements:
 *     per walked dim, the stride of the indexed operand, of its peer and
 *     of the indices, the index standing for one dim of the indexed one;
 *   - GatherND's and ScatterND's split into index tuples and slices;
 *   - Einsum's per-label strides, Pad's per-axis begin / end and constant.
 * Read by the CUDA launches (backends/cuda/k_index.cu), the OpenCL
 * arguments (backends/opencl/k_index.c, k_pad.c) and, where it walks the
 * same geometry, the CPU kernels (backends/cpu/k_index_copy.c,
 * k_index_gather.c); the device accepts() share st_lidx_accepts.  Why
 * here: each host side wrote these re-descriptions out by hand (Tile's
 * pairs and the DepthToSpace permutation three times, Einsum's label
 * strides twice), and a slip in one would make one device disagree.
 *
 * Only shapes, strides and attributes are read (st_kctx's in / out, or
 * st_knode's views), never the data.
 */
#ifndef ST_OPS_LOWER_INDEX_H
#define ST_OPS_LOWER_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/index.h"
#include "ops/index_math.h"
#include "ops/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- copies: y[c] = x[c] over n[0..rank) ---- */

#define ST_LCOPY_RANK (2 * ST_MAX_RANK)

typedef struct st_lower_copy {
    int rank;                       /* >= 1: a scalar copy is [1] */
    int64_t n[ST_LCOPY_RANK];
    int64_t ys[ST_LCOPY_RANK];      /* y's element strides */
    int64_t xs[ST_LCOPY_RANK];      /* x's, 0 where x is read again */
    int64_t total;                  /* y's elements; 0: nothing to copy */
} st_lower_copy;

/* k's op (input 0 to output 0) as one copy. */
void st_lower_expand(const st_kctx *k, st_lower_copy *p);
void st_lower_tile(const st_kctx *k, st_lower_copy *p);
void st_lower_depth_to_space(const st_kctx *k, st_lower_copy *p); /* st_index_state: n block, flag CRD */
void st_lower_space_to_depth(const st_kctx *k, st_lower_copy *p);
/* The rank that copy has for node n (Tile: twice x's), 0 for other ops. */
int st_lcopy_rank(const st_knode *n);

/* ---- one index per element: Gather, GatherElements, ScatterElements ---- */

/* The operands of a walk: the one an index selects into (x of the
 * gathers, y of ScatterElements), the one walked element for element
 * beside it (y of the gathers, the updates of ScatterElements), and the
 * indices.  As kernel operands: see st_lower_gather.operand. */
enum { ST_LG_DATA, ST_LG_PEER, ST_LG_INDEX, ST_LG_OPS };

typedef struct st_lower_gather {
    int rank;                       /* the walk's dims (y's; the indices' for ScatterElements) */
    int axis;                       /* the indexed dim of DATA */
    int operand[ST_LG_OPS];         /* each role's kernel operand (input i: i, output j: n_in + j) */
    int64_t n[ST_MAX_RANK];
    /* element [c] of the walk: DATA at sum c[d] * s[DATA][d] + v * data_axis,
     * PEER at sum c[d] * s[PEER][d], the index v at sum c[d] * s[INDEX][d] */
    int64_t s[ST_LG_OPS][ST_MAX_RANK];
    int64_t data_axis;              /* DATA's stride along axis */
    int64_t dim;                    /* DATA's extent along axis: v in [-dim, dim) */
    int64_t total;                  /* elements of the walk */
    int64_t line, lines;            /* the walk along axis: its length, and how many (0 when empty) */
} st_lower_gather;

void st_lower_gather_of(const st_kctx *k, st_lower_gather *p); /* Gather (st_gather_state) */
void st_lower_gather_elements(const st_kctx *k, st_lower_gather *p);
void st_lower_scatter_elements(const st_kctx *k, st_lower_gather *p);

/* ---- GatherND, ScatterND: index tuples, each selecting a slice ---- */

typedef struct st_lower_nd {
    int b, m, q;                    /* batch dims, a tuple's length, the indices' rank */
    int64_t tuples;                 /* prod(indices.shape[:-1]) */
    int slice_rank;
    int64_t slice_n[ST_MAX_RANK];
    /* a slice's strides: [0] in the indexed operand (x of GatherND, y of
     * ScatterND), [1] in its peer (y of GatherND, the updates) */
    int64_t slice_s[2][ST_MAX_RANK];
    int64_t slice;                  /* a slice's elements */
    int64_t items;                  /* the device kernels' work-items: GatherND one per y element,
                                       ScatterND one per slice element (0: nothing to do) */
} st_lower_nd;

void st_lower_gather_nd(const st_kctx *k, st_lower_nd *p); /* st_index_state.n: batch_dims */
void st_lower_scatter_nd(const st_kctx *k, st_lower_nd *p);

/* ---- Einsum: one output element sums over the labels it lacks ---- */

/* ops/index_math.h's st_im_einsum, which the device kernels walk (CUDA
 * takes it as it is, OpenCL as the first member of its argument block) */
#define ST_LEIN_IN ST_IM_EIN_IN     /* the device kernels' inputs */
#define ST_LEIN_SUM ST_IM_EIN_SUM   /* and summed labels */
typedef st_im_einsum st_lower_einsum;

/* A repeated label's strides add (a diagonal), a size-1 dim's is 0. */
void st_lower_einsum_of(const st_kctx *k, st_lower_einsum *p);

/* ---- Pad, CenterCropPad ---- */

typedef struct st_lower_pad {
    int rank, mode;                 /* y's rank; st_pad_mode */
    int value_operand;              /* 2 when input 2 holds the constant, else -1 */
    int64_t begin[ST_MAX_RANK], end[ST_MAX_RANK]; /* negative: a crop */
    uint64_t value_bits;            /* the attribute's constant in y's dtype (0 unless set) */
    int64_t total;
} st_lower_pad;

void st_lower_pad_of(const st_kctx *k, st_lower_pad *p);

/* ---- what accepts() checks, the same on every device backend ---- */

/* The shape and operand rules of the index family's device kernels:
 * the ops that move bytes keep the dtype, updates and OneHot values and
 * Pad's constant have the output's, DepthToSpace is 4-d, a copy's rank
 * (st_lcopy_rank) fits max_copy_rank, Einsum fits ST_LEIN_IN /
 * ST_LEIN_SUM, NonZero has a dim, Gather an index operand.  device names
 * the backend in the message ("CUDA", "OpenCL").  Dtype support is each
 * backend's own check. */
bool st_lidx_accepts(const st_knode *n, const char *device, int max_copy_rank, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
