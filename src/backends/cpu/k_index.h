/*
 * k_index.h — what the CPU kernels of the index family share (shape rules:
 * ops/index.c): element helpers and the parallel strided copy that most of
 * them are (k_index_copy.c).
 *
 * Data movement (Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu,
 * the gathers and scatters, Compress) copies element bytes, so every dtype
 * works and nothing is rounded.  Copies are split into tasks of about
 * ST_INDEX_TASK_ELEMS elements, a split that does not depend on the thread
 * count, and each task owns its output bytes.
 */
#ifndef ST_CPU_K_INDEX_H
#define ST_CPU_K_INDEX_H

#include <string.h>

#include "runtime/pool.h"
#include "ops/index.h"
#include "ops/op.h"

#define ST_INDEX_TASK_ELEMS 32768

static inline char *elem(const st_operand *o, int64_t off)
{
    return (char *)o->data + off * (int64_t)st_dtype_size(o->dtype);
}

/* One element of es bytes; constant sizes let the compiler use one move. */
static inline void copy_elem(char *d, const char *s, size_t es)
{
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es); break;
    }
}

/* One element from s (dtype st) into d (dtype dt). */
static inline void put(char *d, st_dtype dt, const char *s, st_dtype st)
{
    if (dt == st) copy_elem(d, s, st_dtype_size(dt));
    else st_convert(dt, d, st, s, 1);
}

static inline int64_t load_index(st_dtype t, const char *p)
{
    if (t == ST_I64) {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    if (t == ST_I32) {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    return st_load_i64(t, p);
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* Rows of `inner` elements per task: about ST_INDEX_TASK_ELEMS elements each. */
static inline int64_t rows_per_task(int64_t inner) { return inner >= ST_INDEX_TASK_ELEMS ? 1 : ST_INDEX_TASK_ELEMS / (inner > 0 ? inner : 1); }

static inline void unflatten(int rank, const int64_t *sizes, int64_t i, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = i % sizes[d];
        i /= sizes[d];
    }
}

static inline int64_t dot(int rank, const int64_t *idx, const int64_t *strides)
{
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += idx[d] * strides[d];
    return off;
}

static inline bool present(const st_operand *o) { return o->data && st_operand_numel(o) > 0; }

/* dst[i] = src[i] over sizes[0..rank), rank up to 2 * ST_MAX_RANK (Tile's
 * pairs), strides in elements (0 broadcasts), converting dtype if needed. */
void st_index_copy(st_pool *pool, int rank, const int64_t *sizes, void *dst, const int64_t *dstr, st_dtype dt,
                   const void *src, const int64_t *sstr, st_dtype sdt);
/* y = src viewed with y's shape and strides sstr. */
void st_index_copy_into(st_pool *pool, const st_operand *y, const void *src, const int64_t *sstr, st_dtype sdt);
/* Every element of y = the one element at v (dtype vt). */
void st_index_fill(st_pool *pool, const st_operand *y, const void *v, st_dtype vt);
/* Every index in ix within [-dim, dim). */
st_status st_index_check(const st_operand *ix, int64_t dim);

#endif
