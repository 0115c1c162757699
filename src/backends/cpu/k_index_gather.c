/*
 * k_index_gather.c — the index-family ops that read or write elements at
 * computed positions: GatherElements, GatherND, ScatterND,
 * ScatterElements, Compress, NonZero and Unique (the last two fill outputs
 * whose shape ops/select.c computed at plan time).
 *
 * Scatters apply their updates in index order on one thread, so duplicate
 * indices resolve the same way on every run and with every thread count.
 * Indices are checked before anything is written.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_index.h"
#include "backends/cpu/kernels.h"
#include "ops/index_math.h"
#include "ops/lower_index.h"
#include "ops/select.h"

/* ---- GatherElements ---- */

typedef struct gather_el_job {
    const st_operand *x, *ix, *y;
    st_lower_gather w;
    st_iter it;
    int64_t rows, per;
} gather_el_job;

static void gather_el_task(void *arg, int64_t t)
{
    const gather_el_job *j = arg;
    const st_operand *x = j->x, *ix = j->ix, *y = j->y;
    int64_t dim = j->w.dim, xa = j->w.data_axis;
    int64_t ye = (int64_t)st_dtype_size(y->dtype), xe = (int64_t)st_dtype_size(x->dtype);
    bool same = x->dtype == y->dtype;
    char *yd = y->data;
    const char *xd = x->data;
    st_iter it = j->it;
    int64_t r0 = t * j->per, r1 = min64(r0 + j->per, j->rows);
    st_iter_seek(&it, r0);
    for (int64_t r = r0; r < r1; r++) {
        if (r > r0) st_iter_next(&it);
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t v = st_im_index(load_index(ix->dtype, elem(ix, it.off[1] + i * it.step[1])), dim); /* checked before */
            char *d = yd + (it.off[0] + i * it.step[0]) * ye;
            const char *src = xd + (it.off[2] + i * it.step[2] + v * xa) * xe;
            if (same) copy_elem(d, src, (size_t)xe);
            else st_convert(y->dtype, d, x->dtype, src, 1);
        }
    }
}

st_status st_cpu_gather_elements(const st_kctx *k)
{
    gather_el_job j;
    j.x = &k->in[0];
    j.ix = &k->in[1];
    j.y = &k->out[0];
    /* the data's offset over every dim but the axis; the index adds the axis */
    st_lower_gather_elements(k, &j.w);
    ST_TRY(st_index_check(j.ix, j.w.dim));
    if (!st_iter_init(&j.it, j.w.rank, j.w.n, 3, (const int64_t *[]){j.w.s[ST_LG_PEER], j.w.s[ST_LG_INDEX], j.w.s[ST_LG_DATA]}))
        return ST_OK;
    j.rows = st_iter_rows(&j.it);
    j.per = rows_per_task(j.it.inner);
    st_parallel_for(k->pool, ceil_div(j.rows, j.per), gather_el_task, &j);
    return ST_OK;
}

/* ---- GatherND ---- */

typedef struct gather_nd_job {
    const st_operand *x, *ix, *y;
    int b, m, q;
    int64_t tuples, per;
    st_operand src, dst;            /* one slice: data.shape[b + m:] */
} gather_nd_job;

/* Data offset of tuple idx (over indices.shape[:-1]); false if out of range. */
static bool gather_nd_offset(const st_operand *x, const st_operand *ix, int b, int m, const int64_t *idx, int64_t *xo)
{
    int q = ix->rank;
    int64_t io = dot(q - 1, idx, ix->strides), off = 0;
    for (int d = 0; d < b; d++) off += idx[d] * x->strides[d];
    for (int c = 0; c < m; c++) {
        int64_t v = st_im_index(load_index(ix->dtype, elem(ix, io + c * ix->strides[q - 1])), x->sizes[b + c]);
        if (v < 0) return false;
        off += v * x->strides[b + c];
    }
    *xo = off;
    return true;
}

static void gather_nd_task(void *arg, int64_t t)
{
    const gather_nd_job *j = arg;
    for (int64_t i = t * j->per, end = min64(i + j->per, j->tuples); i < end; i++) {
        int64_t idx[ST_MAX_RANK], xo = 0;
        unflatten(j->q - 1, j->ix->sizes, i, idx);
        gather_nd_offset(j->x, j->ix, j->b, j->m, idx, &xo); /* checked before */
        st_operand src = j->src, dst = j->dst;
        src.data = elem(j->x, xo);
        dst.data = elem(j->y, dot(j->q - 1, idx, j->y->strides));
        st_copy_strided(&dst, &src);
    }
}

st_status st_cpu_gather_nd(const st_kctx *k)
{
    gather_nd_job j;
    st_lower_nd nd;
    st_lower_gather_nd(k, &nd);
    j.x = &k->in[0];
    j.ix = &k->in[1];
    j.y = &k->out[0];
    j.b = nd.b;
    j.q = nd.q;
    j.m = nd.m;
    j.tuples = nd.tuples;
    if (st_operand_numel(j.y) == 0) return ST_OK;
    for (int64_t i = 0; i < j.tuples; i++) {
        int64_t idx[ST_MAX_RANK], xo;
        unflatten(j.q - 1, j.ix->sizes, i, idx);
        if (!gather_nd_offset(j.x, j.ix, j.b, j.m, idx, &xo)) return st_error(ST_ERR_SHAPE, "index tuple %lld holds an index out of range of the data", (long long)i);
    }
    j.src = *j.x;
    j.dst = *j.y;
    j.src.rank = j.dst.rank = nd.slice_rank;
    for (int d = 0; d < nd.slice_rank; d++) {
        j.src.sizes[d] = j.dst.sizes[d] = nd.slice_n[d];
        j.src.strides[d] = nd.slice_s[0][d];
        j.dst.strides[d] = nd.slice_s[1][d];
    }
    j.per = rows_per_task(nd.slice);
    st_parallel_for(k->pool, ceil_div(j.tuples, j.per), gather_nd_task, &j);
    return ST_OK;
}

/* ---- ScatterND, ScatterElements ---- */

/* One element of u into y under reduction red (ops/index_math.h).
 * Floats narrower than f64 compute in double too: the result rounds once
 * to the dtype, as its own arithmetic (and the devices' f32) rounds. */
static void reduce_into(char *d, st_dtype dt, const char *s, st_dtype sdt, int red)
{
    if (red == ST_RED_NONE) {
        put(d, dt, s, sdt);
        return;
    }
    if (st_dtype_is_float(dt))
        st_store_f64(dt, d, st_im_reduce_f64(red, st_load_f64(dt, d), st_load_f64(sdt, s)));
    else
        st_store_i64(dt, d, st_im_reduce_i64(red, st_load_i64(dt, d), st_load_i64(sdt, s), dt == ST_U64));
}

st_status st_cpu_scatter_nd(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    st_lower_nd nd;
    st_lower_scatter_nd(k, &nd);
    int q = nd.q, m = nd.m, sr = nd.slice_rank;
    int64_t tuples = nd.tuples;
    int64_t *offs = malloc((size_t)(tuples > 0 ? tuples : 1) * sizeof *offs);
    if (!offs) return st_error(ST_ERR_NOMEM, "out of memory");
    for (int64_t t = 0; t < tuples; t++) {
        int64_t idx[ST_MAX_RANK], io, off = 0;
        unflatten(q - 1, ix->sizes, t, idx);
        io = dot(q - 1, idx, ix->strides);
        for (int c = 0; c < m; c++) {
            int64_t v = load_index(ix->dtype, elem(ix, io + c * ix->strides[q - 1])), dim = y->sizes[c], at = st_im_index(v, dim);
            if (at < 0) {
                free(offs);
                return st_error(ST_ERR_SHAPE, "index %lld is out of range for axis %d of size %lld", (long long)v, c, (long long)dim);
            }
            off += at * y->strides[c];
        }
        offs[t] = off;
    }
    st_index_copy_into(k->pool, y, x->data, x->strides, x->dtype);
    st_operand dst = *y, src = *u;
    dst.rank = src.rank = sr;
    for (int d = 0; d < sr; d++) {
        dst.sizes[d] = src.sizes[d] = nd.slice_n[d];
        dst.strides[d] = nd.slice_s[0][d];
        src.strides[d] = nd.slice_s[1][d];
    }
    /* in index order, so duplicates resolve the same way every time */
    for (int64_t t = 0; t < tuples; t++) {
        int64_t idx[ST_MAX_RANK];
        unflatten(q - 1, ix->sizes, t, idx);
        dst.data = elem(y, offs[t]);
        src.data = elem(u, dot(q - 1, idx, u->strides));
        if (s->reduction == ST_RED_NONE) {
            st_copy_strided(&dst, &src);
            continue;
        }
        st_iter it;
        for (bool more = st_iter_init(&it, sr, dst.sizes, 2, (const int64_t *[]){dst.strides, src.strides}); more; more = st_iter_next(&it))
            for (int64_t i = 0; i < it.inner; i++)
                reduce_into(elem(&dst, it.off[0] + i * it.step[0]), y->dtype, elem(&src, it.off[1] + i * it.step[1]), u->dtype,
                            s->reduction);
    }
    free(offs);
    return ST_OK;
}

st_status st_cpu_scatter_elements(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    st_lower_gather w;
    st_lower_scatter_elements(k, &w);
    int64_t dim = w.dim;
    ST_TRY(st_index_check(ix, dim));
    st_index_copy_into(k->pool, y, x->data, x->strides, x->dtype);
    st_iter it;
    for (bool more = st_iter_init(&it, w.rank, w.n, 3, (const int64_t *[]){w.s[ST_LG_INDEX], w.s[ST_LG_PEER], w.s[ST_LG_DATA]}); more;
         more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t v = st_im_index(load_index(ix->dtype, elem(ix, it.off[0] + i * it.step[0])), dim); /* checked before */
            reduce_into(elem(y, it.off[2] + i * it.step[2] + v * w.data_axis), y->dtype, elem(u, it.off[1] + i * it.step[1]),
                        u->dtype, s->reduction);
        }
    return ST_OK;
}

/* ---- Compress ---- */

st_status st_cpu_compress(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *cond = &k->in[1], *y = &k->out[0];
    int64_t len = cond->sizes[0], kept = 0;
    if (s->axis < 0) {
        /* the input flattened in row-major order */
        int64_t i = 0;
        st_iter it;
        for (bool more = st_iter_init(&it, x->rank, x->sizes, 1, (const int64_t *[]){x->strides}); more && i < len;
             more = st_iter_next(&it))
            for (int64_t e = 0; e < it.inner && i < len; e++, i++) {
                if (!*(const uint8_t *)elem(cond, i * cond->strides[0])) continue;
                if (kept >= y->sizes[0]) return st_error(ST_ERR_INTERNAL, "condition changed since planning");
                put(elem(y, kept * y->strides[0]), y->dtype, elem(x, it.off[0] + e * it.step[0]), x->dtype);
                kept++;
            }
    } else {
        int ax = s->axis;
        for (int64_t i = 0; i < len && i < x->sizes[ax]; i++) {
            if (!*(const uint8_t *)elem(cond, i * cond->strides[0])) continue;
            if (kept >= y->sizes[ax]) return st_error(ST_ERR_INTERNAL, "condition changed since planning");
            st_operand src = *x, dst = *y;
            src.sizes[ax] = dst.sizes[ax] = 1;
            src.data = elem(x, i * x->strides[ax]);
            dst.data = elem(y, kept * y->strides[ax]);
            st_copy_strided(&dst, &src);
            kept++;
        }
    }
    if (kept != (s->axis < 0 ? y->sizes[0] : y->sizes[s->axis])) return st_error(ST_ERR_INTERNAL, "condition changed since planning");
    return ST_OK;
}

/* ---- NonZero ---- */

st_status st_cpu_nonzero(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int r = x->rank;
    int64_t total = st_operand_numel(x), found = 0, idx[ST_MAX_RANK] = {0};
    for (int64_t i = 0; i < total; i++) {
        if (st_is_nonzero(x->dtype, elem(x, dot(r, idx, x->strides)))) {
            if (found >= y->sizes[1]) return st_error(ST_ERR_INTERNAL, "input changed since planning");
            for (int d = 0; d < r; d++) st_store_i64(y->dtype, elem(y, d * y->strides[0] + found * y->strides[1]), idx[d]);
            found++;
        }
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < x->sizes[d]) break;
            idx[d] = 0;
        }
    }
    if (found != y->sizes[1]) return st_error(ST_ERR_INTERNAL, "input changed since planning");
    return ST_OK;
}

/* ---- Unique ---- */

st_status st_cpu_unique(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0];
    st_unique_result r;
    ST_TRY(st_unique_run(x, s->axis, s->flag, &r));
    st_status st = ST_OK;
    const st_operand *y = &k->out[0];
    if (k->n_out > 0 && y->data) {
        int ax = s->axis < 0 ? 0 : s->axis;
        if (y->sizes[ax] != r.n_unique) st = st_error(ST_ERR_INTERNAL, "input changed since planning");
        for (int64_t u = 0; st == ST_OK && u < r.n_unique; u++) {
            if (s->axis < 0) {
                int64_t idx[ST_MAX_RANK];
                unflatten(x->rank, x->sizes, r.first[u], idx);
                put(elem(y, u * y->strides[0]), y->dtype, elem(x, dot(x->rank, idx, x->strides)), x->dtype);
            } else {
                st_operand src = *x, dst = *y;
                src.sizes[ax] = dst.sizes[ax] = 1;
                src.data = elem(x, r.first[u] * x->strides[ax]);
                dst.data = elem(y, u * y->strides[ax]);
                st_copy_strided(&dst, &src);
            }
        }
    }
    const int64_t *lists[4] = {NULL, r.first, r.inverse, r.counts};
    int64_t lens[4] = {0, r.n_unique, r.n_slices, r.n_unique};
    for (int o = 1; o < 4 && o < k->n_out && st == ST_OK; o++) {
        const st_operand *t = &k->out[o];
        if (!t->data) continue;
        if (t->sizes[0] != lens[o]) {
            st = st_error(ST_ERR_INTERNAL, "input changed since planning");
            break;
        }
        for (int64_t i = 0; i < lens[o]; i++) st_store_i64(t->dtype, elem(t, i * t->strides[0]), lists[o][i]);
    }
    st_unique_free(&r);
    return st;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_index_gather[] = {
    {"GatherElements", "", ST_DT_ALL, st_cpu_gather_elements, NULL, NULL, NULL},
    {"GatherND", "", ST_DT_ALL, st_cpu_gather_nd, NULL, NULL, NULL},
    {"ScatterND", "", ST_DT_ALL, st_cpu_scatter_nd, NULL, NULL, NULL},
    {"ScatterElements", "", ST_DT_ALL, st_cpu_scatter_elements, NULL, NULL, NULL},
    {"Scatter", "", ST_DT_ALL, st_cpu_scatter_elements, NULL, NULL, NULL},
    {"Compress", "", ST_DT_ALL, st_cpu_compress, NULL, NULL, NULL},
    {"NonZero", "", ST_DT_ALL, st_cpu_nonzero, NULL, NULL, NULL},
    {"Unique", "", ST_DT_ALL, st_cpu_unique, NULL, NULL, NULL},
    {NULL}
};
