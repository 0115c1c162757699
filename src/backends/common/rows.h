/*
 * rows.h — an n-d shape split into "outer" positions and "rows", for the
 * kernels that work along a set of axes: reductions (k_reduce.c) and the
 * softmax and normalisation family (k_norm.c).
 *
 * A row is every element that shares one position on the outer axes (the
 * axes not in the row mask).  Up to ST_ITER_MAX operands are described
 * over ONE shape (the input's), each with its own strides; an operand that
 * has no extent along the row axes (a reduction's output, LayerNorm's Mean)
 * simply has stride 0 there.  Both halves are coalesced separately (unit
 * dims dropped, neighbours that step evenly in every operand merged), so a
 * packed last-axis row is a single run of stride 1, which is what the fast
 * paths test for.  Rows are numbered row-major over the outer axes and
 * elements are visited row-major within a row, whatever the strides, so
 * results never depend on memory layout or on how work is split.
 */
#ifndef ST_CPU_ROWS_H
#define ST_CPU_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/view.h"

typedef struct st_rows {
    int nops;
    int outer_rank, row_rank;                         /* after coalescing */
    int64_t outer_sizes[ST_MAX_RANK], row_sizes[ST_MAX_RANK];
    int64_t outer_strides[ST_ITER_MAX][ST_MAX_RANK];
    int64_t row_strides[ST_ITER_MAX][ST_MAX_RANK];
    int64_t n_outer, row_len;
} st_rows;

/* Splits shape (rank, sizes) by row_mask (bit d set: axis d is a row axis).
 * strides[k] are operand k's element strides over that shape. */
void st_rows_init(st_rows *r, int rank, const int64_t *sizes, uint32_t row_mask, int nops,
                  const int64_t *const *strides);

/* Element offsets (one per operand) of the first element of outer row o. */
void st_rows_offsets(const st_rows *r, int64_t o, int64_t *offs);

/* Outer rows one after another: st_rows_seek puts the walk at row o
 * (its offsets in offs), st_rows_step moves it to the next row.  A task
 * walking its rows this way does one division per dim per task instead
 * of per row (they were 1.6% of a transformer encoder's time). */
typedef struct st_rows_walk {
    int64_t idx[ST_MAX_RANK];
    int64_t offs[ST_ITER_MAX];
} st_rows_walk;
void st_rows_seek(const st_rows *r, int64_t o, st_rows_walk *w);
void st_rows_step(const st_rows *r, st_rows_walk *w);

/* True when operand k's row is one run; *step receives its stride. */
bool st_rows_flat(const st_rows *r, int k, int64_t *step);

/* The runs (innermost row dim) of operand k's row, in row-major order:
 *     st_row_runs it; st_row_runs_init(&it, r, k);
 *     while (st_row_runs_next(&it, &off, &n, &step)) ...   */
typedef struct st_row_runs {
    const st_rows *r;
    int k;
    int64_t idx[ST_MAX_RANK];
    int64_t cur, left;
} st_row_runs;

void st_row_runs_init(st_row_runs *it, const st_rows *r, int k);
bool st_row_runs_next(st_row_runs *it, int64_t *off, int64_t *n, int64_t *step);

/* Operand o's row at element offset off (row layout of operand k), as
 * packed f32 / f64.  direct returns the row itself when it is packed f32
 * (no copy needed), else NULL. */
float *st_rows_direct_f32(const st_rows *r, int k, const st_operand *o, int64_t off);
void st_rows_load_f32(const st_rows *r, int k, const st_operand *o, int64_t off, float *buf);
void st_rows_store_f32(const st_rows *r, int k, const st_operand *o, int64_t off, const float *buf);
void st_rows_load_f64(const st_rows *r, int k, const st_operand *o, int64_t off, double *buf);
void st_rows_store_f64(const st_rows *r, int k, const st_operand *o, int64_t off, const double *buf);

/* n elements of dtype t from p, step elements apart, into packed f32. */
void st_load_strided_f32(st_dtype t, const void *p, int64_t step, int64_t n, float *buf);

/* Work split: how many rows one task takes so a task holds about
 * `elems` elements.  Depends only on the shape, never on the thread count,
 * so every split is the same and results are bit-identical. */
int64_t st_rows_per_task(int64_t row_len, int64_t elems);

/* The tasks of an elementwise loop over `rows` rows of `inner` elements
 * (an st_iter's): st_rows_per_task rows a task, or, when a row is longer
 * than two budgets, pieces of `elems` elements of one row, a task each: a
 * packed tensor coalesces into a single row, which would otherwise run as
 * one task on one thread (YOLO11n's residual Adds, 400K elements; a QDQ
 * YOLOv8n's QLinearAdds).  For elementwise loops only, where any split
 * gives the same bits. */
typedef struct st_row_tasks {
    int64_t rows, per_task, pieces, piece;
} st_row_tasks;
st_row_tasks st_row_tasks_of(int64_t rows, int64_t inner, int64_t elems);
int64_t st_row_tasks_count(const st_row_tasks *t);
/* Task `task`'s rows [*r0, *r1) and, of each, the elements [*i0, *i1). */
void st_row_tasks_span(const st_row_tasks *t, int64_t inner, int64_t task, int64_t *r0, int64_t *r1, int64_t *i0,
                       int64_t *i1);

#endif
