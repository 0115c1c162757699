/*
 * view.h — tensor views and the arithmetic on them.
 *
 * A view is {storage, byte offset, dtype, rank, sizes, strides}: strides
 * are in elements and may be negative (a reversed slice) or zero (a
 * broadcast).  The byte offset locates element [0, ..., 0].  Views never
 * own memory; st_view functions only change the numbers.
 *
 * st_operand is the same view resolved to an address, which is what a
 * kernel sees: every kernel takes strided operands, inputs and outputs
 * alike (rule 5), so a slice of a concat's output can be written in place.
 */
#ifndef ST_VIEW_H
#define ST_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/storage.h"

typedef struct st_view {
    st_storage *storage;
    int64_t offset;
    st_dtype dtype;
    int rank;
    int64_t sizes[ST_MAX_RANK];
    int64_t strides[ST_MAX_RANK];
} st_view;

typedef struct st_operand {
    void *data;                     /* address of element [0, ..., 0] */
    st_dtype dtype;
    int rank;
    int64_t sizes[ST_MAX_RANK];
    int64_t strides[ST_MAX_RANK];   /* elements */
} st_operand;

void st_strides_contiguous(int rank, const int64_t *sizes, int64_t *strides);
int64_t st_numel(int rank, const int64_t *sizes);

void st_view_init(st_view *v, st_dtype dtype, int rank, const int64_t *sizes);
int64_t st_view_numel(const st_view *v);
bool st_view_is_contiguous(const st_view *v);
/* Bytes [*lo, *hi) relative to the storage base that the view can touch.
 * An empty view has lo == hi. */
void st_view_extent(const st_view *v, int64_t *lo, int64_t *hi);

/* The exact bytes the view touches, as disjoint runs in increasing order
 * (adjacent runs merged): two interleaved halves of a last-dim concat, or
 * one input's channels of a batched channel concat, touch runs that the
 * other's runs fall between.  Returns the number of runs, or 0 when there
 * would be more than max (or the view is empty): the extent then stands
 * for them. */
typedef struct st_range {
    int64_t lo, hi;
} st_range;
int st_view_runs(const st_view *v, int max, st_range *runs);

/* count elements along axis from start, every step (step may be < 0). */
void st_view_slice(st_view *v, int axis, int64_t start, int64_t step, int64_t count);
/* Drops axis, keeping element index on it (Gather with a scalar index). */
void st_view_select(st_view *v, int axis, int64_t index);
void st_view_permute(st_view *v, const int *perm);
/* A 4-D [N, C, H, W] view laid out channels-last over packed bytes:
 * strides [H*W*C, 1, W*C, C] (unit dims' strides aside), with C > 1 and
 * H * W > 1. */
bool st_view_is_channels_last(const st_view *v);
/* Initialises v as a packed channels-last 4-D view of sizes [N, C, H, W]. */
void st_view_init_channels_last(st_view *v, st_dtype dtype, const int64_t *sizes);
void st_view_unsqueeze(st_view *v, int axis);
void st_view_squeeze(st_view *v, int axis);
/* Reinterprets the view with new sizes without moving data.  Returns false
 * when the strides cannot express it (a reshape of a transposed tensor
 * that mixes dims); the caller must then copy. */
bool st_view_reshape(st_view *v, int rank, const int64_t *sizes);

/* The operand a kernel sees for view v on host memory base. */
st_operand st_operand_of(const st_view *v, void *base);
bool st_operand_is_contiguous(const st_operand *o);
int64_t st_operand_numel(const st_operand *o);

/* Strided copy with dtype conversion; shapes must have equal numel and
 * equal sizes (broadcast sources have stride 0). */
void st_copy_strided(const st_operand *dst, const st_operand *src);

/*
 * Walks every element of an n-d shape for up to ST_ITER_MAX operands, one
 * innermost row at a time.  Dims are coalesced first, so a contiguous
 * tensor is a single row.  Usage:
 *
 *     st_iter it;
 *     for (bool more = st_iter_init(&it, rank, sizes, 2, (const int64_t *[]){sa, sb});
 *          more; more = st_iter_next(&it))
 *         ... it.off[0], it.off[1] (elements), it.inner, it.step[k] ...
 */
#define ST_ITER_MAX 4
typedef struct st_iter {
    int rank, nops;
    int64_t sizes[ST_MAX_RANK];
    int64_t strides[ST_ITER_MAX][ST_MAX_RANK];
    int64_t idx[ST_MAX_RANK];
    int64_t off[ST_ITER_MAX];      /* element offset of the row's first element */
    int64_t inner;                 /* row length */
    int64_t step[ST_ITER_MAX];     /* element stride along the row */
    bool empty;
} st_iter;

bool st_iter_init(st_iter *it, int rank, const int64_t *sizes, int nops,
                  const int64_t *const *strides);
bool st_iter_next(st_iter *it);
/* Rows (all dims but the innermost) and a jump to row r, so a loop can be
 * split into chunks: for rows [a, b), seek(a) then next() b - a - 1 times. */
int64_t st_iter_rows(const st_iter *it);
void st_iter_seek(st_iter *it, int64_t row);

#endif
