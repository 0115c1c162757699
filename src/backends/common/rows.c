/* rows.c — outer positions and rows of a shape (see rows.h). */
#include "backends/common/rows.h"

#include "backends/common/cvt_half.h"

#include <string.h>

/* Appends dim (size, per-operand strides) to a coalesced list: unit dims
 * vanish, and a dim that continues the previous one evenly in every
 * operand merges into it. */
static void push_dim(int nops, int *rank, int64_t *sizes, int64_t (*strides)[ST_MAX_RANK], int64_t size,
                     const int64_t *const *src, int d)
{
    if (size == 1) return;
    int r = *rank;
    if (r > 0 && size > 0 && sizes[r - 1] > 0) {
        bool merge = true;
        for (int k = 0; k < nops; k++)
            if (strides[k][r - 1] != src[k][d] * size) merge = false;
        if (merge) {
            sizes[r - 1] *= size;
            for (int k = 0; k < nops; k++) strides[k][r - 1] = src[k][d];
            return;
        }
    }
    sizes[r] = size;
    for (int k = 0; k < nops; k++) strides[k][r] = src[k][d];
    *rank = r + 1;
}

void st_rows_init(st_rows *r, int rank, const int64_t *sizes, uint32_t row_mask, int nops,
                  const int64_t *const *strides)
{
    memset(r, 0, sizeof *r);
    r->nops = nops;
    r->n_outer = 1;
    r->row_len = 1;
    for (int d = 0; d < rank; d++) {
        if (row_mask >> d & 1) {
            push_dim(nops, &r->row_rank, r->row_sizes, r->row_strides, sizes[d], strides, d);
            r->row_len *= sizes[d];
        } else {
            push_dim(nops, &r->outer_rank, r->outer_sizes, r->outer_strides, sizes[d], strides, d);
            r->n_outer *= sizes[d];
        }
    }
}

void st_rows_offsets(const st_rows *r, int64_t o, int64_t *offs)
{
    st_rows_walk w;
    st_rows_seek(r, o, &w);
    for (int k = 0; k < r->nops; k++) offs[k] = w.offs[k];
}

void st_rows_seek(const st_rows *r, int64_t o, st_rows_walk *w)
{
    for (int k = 0; k < r->nops; k++) w->offs[k] = 0;
    for (int d = r->outer_rank - 1; d >= 0; d--) {
        w->idx[d] = o % r->outer_sizes[d];
        o /= r->outer_sizes[d];
        for (int k = 0; k < r->nops; k++) w->offs[k] += w->idx[d] * r->outer_strides[k][d];
    }
}

void st_rows_step(const st_rows *r, st_rows_walk *w)
{
    for (int d = r->outer_rank - 1; d >= 0; d--) {
        for (int k = 0; k < r->nops; k++) w->offs[k] += r->outer_strides[k][d];
        if (++w->idx[d] < r->outer_sizes[d]) return;
        for (int k = 0; k < r->nops; k++) w->offs[k] -= w->idx[d] * r->outer_strides[k][d];
        w->idx[d] = 0;
    }
}

bool st_rows_flat(const st_rows *r, int k, int64_t *step)
{
    if (r->row_rank > 1) return false;
    *step = r->row_rank == 1 ? r->row_strides[k][0] : 1;
    return true;
}

void st_row_runs_init(st_row_runs *it, const st_rows *r, int k)
{
    memset(it, 0, sizeof *it);
    it->r = r;
    it->k = k;
    it->left = r->row_len;
}

bool st_row_runs_next(st_row_runs *it, int64_t *off, int64_t *n, int64_t *step)
{
    const st_rows *r = it->r;
    if (it->left <= 0) return false;
    int R = r->row_rank;
    if (R == 0) {
        *off = 0;
        *n = 1;
        *step = 1;
        it->left = 0;
        return true;
    }
    *off = it->cur;
    *n = r->row_sizes[R - 1];
    *step = r->row_strides[it->k][R - 1];
    it->left -= *n;
    /* advance the odometer over the outer row dims to the next run */
    for (int d = R - 2; d >= 0; d--) {
        it->cur += r->row_strides[it->k][d];
        if (++it->idx[d] < r->row_sizes[d]) break;
        it->cur -= r->row_strides[it->k][d] * r->row_sizes[d];
        it->idx[d] = 0;
    }
    return true;
}

void st_load_strided_f32(st_dtype t, const void *p, int64_t step, int64_t n, float *buf)
{
    if (t == ST_F32 || t == ST_F16 || t == ST_BF16) {
        st_cvt_row_to_f32(buf, t, p, step, n);
        return;
    }
    size_t es = st_dtype_size(t);
    for (int64_t i = 0; i < n; i++) buf[i] = st_load_f32(t, (const char *)p + i * step * (int64_t)es);
}

static void store_strided_f32(st_dtype t, void *p, int64_t step, int64_t n, const float *buf)
{
    if (t == ST_F32 || t == ST_F16 || t == ST_BF16) {
        st_cvt_row_from_f32(t, p, step, buf, n);
        return;
    }
    size_t es = st_dtype_size(t);
    for (int64_t i = 0; i < n; i++) st_store_f32(t, (char *)p + i * step * (int64_t)es, buf[i]);
}

float *st_rows_direct_f32(const st_rows *r, int k, const st_operand *o, int64_t off)
{
    int64_t step;
    if (o->dtype != ST_F32 || !st_rows_flat(r, k, &step) || (step != 1 && r->row_len > 1)) return NULL;
    return (float *)o->data + off;
}

void st_rows_load_f32(const st_rows *r, int k, const st_operand *o, int64_t off, float *buf)
{
    size_t es = st_dtype_size(o->dtype);
    st_row_runs it;
    int64_t ro, n, step;
    st_row_runs_init(&it, r, k);
    while (st_row_runs_next(&it, &ro, &n, &step)) {
        st_load_strided_f32(o->dtype, (const char *)o->data + (off + ro) * (int64_t)es, step, n, buf);
        buf += n;
    }
}

void st_rows_store_f32(const st_rows *r, int k, const st_operand *o, int64_t off, const float *buf)
{
    size_t es = st_dtype_size(o->dtype);
    st_row_runs it;
    int64_t ro, n, step;
    st_row_runs_init(&it, r, k);
    while (st_row_runs_next(&it, &ro, &n, &step)) {
        store_strided_f32(o->dtype, (char *)o->data + (off + ro) * (int64_t)es, step, n, buf);
        buf += n;
    }
}

void st_rows_load_f64(const st_rows *r, int k, const st_operand *o, int64_t off, double *buf)
{
    size_t es = st_dtype_size(o->dtype);
    st_row_runs it;
    int64_t ro, n, step;
    st_row_runs_init(&it, r, k);
    while (st_row_runs_next(&it, &ro, &n, &step)) {
        const char *p = (const char *)o->data + (off + ro) * (int64_t)es;
        for (int64_t i = 0; i < n; i++) buf[i] = st_load_f64(o->dtype, p + i * step * (int64_t)es);
        buf += n;
    }
}

void st_rows_store_f64(const st_rows *r, int k, const st_operand *o, int64_t off, const double *buf)
{
    size_t es = st_dtype_size(o->dtype);
    st_row_runs it;
    int64_t ro, n, step;
    st_row_runs_init(&it, r, k);
    while (st_row_runs_next(&it, &ro, &n, &step)) {
        char *p = (char *)o->data + (off + ro) * (int64_t)es;
        for (int64_t i = 0; i < n; i++) st_store_f64(o->dtype, p + i * step * (int64_t)es, buf[i]);
        buf += n;
    }
}

int64_t st_rows_per_task(int64_t row_len, int64_t elems)
{
    int64_t per = elems / (row_len > 1 ? row_len : 1);
    return per > 1 ? per : 1;
}

st_row_tasks st_row_tasks_of(int64_t rows, int64_t inner, int64_t elems)
{
    st_row_tasks t = {rows, st_rows_per_task(inner, elems), 1, elems};
    if (inner > 2 * elems) t.pieces = (inner + elems - 1) / elems;
    return t;
}

int64_t st_row_tasks_count(const st_row_tasks *t)
{
    return t->pieces > 1 ? t->rows * t->pieces : (t->rows + t->per_task - 1) / t->per_task;
}

void st_row_tasks_span(const st_row_tasks *t, int64_t inner, int64_t task, int64_t *r0, int64_t *r1, int64_t *i0,
                       int64_t *i1)
{
    if (t->pieces > 1) {
        *r0 = task / t->pieces;
        *r1 = *r0 + 1;
        *i0 = task % t->pieces * t->piece;
        *i1 = *i0 + t->piece < inner ? *i0 + t->piece : inner;
        return;
    }
    *r0 = task * t->per_task;
    *r1 = *r0 + t->per_task < t->rows ? *r0 + t->per_task : t->rows;
    *i0 = 0;
    *i1 = inner;
}
