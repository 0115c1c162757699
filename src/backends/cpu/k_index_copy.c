/*
 * k_index_copy.c — the index-family ops that are one strided copy or fill
 * over a re-described iteration space: Expand (a copy from a view with
 * stride 0 on broadcast dims), Tile (over [repeat, dim] pairs with stride 0
 * on the repeat), Pad, Range, ConstantOfShape, EyeLike, Trilu, OneHot,
 * and DepthToSpace/SpaceToDepth (one copy over a 6-d permutation); and the
 * parallel strided copy they are built on (k_index.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_index.h"
#include "backends/cpu/kernels.h"
#include "ops/index_math.h"
#include "ops/lower_index.h"

/* ---- the parallel strided copy everything else is built on ---- */

static void copy_row(char *d, int64_t ds, st_dtype dt, const char *s, int64_t ss, st_dtype sdt, int64_t n)
{
    int64_t de = (int64_t)st_dtype_size(dt), se = (int64_t)st_dtype_size(sdt);
    if (dt != sdt) {
        for (int64_t i = 0; i < n; i++) st_convert(dt, d + i * ds * de, sdt, s + i * ss * se, 1);
        return;
    }
    if (ds == 1 && ss == 1) {
        memcpy(d, s, (size_t)(n * de));
        return;
    }
    switch (de) {
    case 1: for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss]; break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(d + i * ds * 2, s + i * ss * 2, 2); break;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(d + i * ds * 4, s + i * ss * 4, 4); break;
    case 8: for (int64_t i = 0; i < n; i++) memcpy(d + i * ds * 8, s + i * ss * 8, 8); break;
    default: for (int64_t i = 0; i < n; i++) memcpy(d + i * ds * de, s + i * ss * se, (size_t)de); break;
    }
}

typedef struct copy_job {
    st_iter it;
    int64_t rows, per;
    char *dst;
    const char *src;
    st_dtype dt, sdt;
} copy_job;

static void copy_task(void *arg, int64_t t)
{
    const copy_job *j = arg;
    st_iter it = j->it;
    int64_t r0 = t * j->per, r1 = min64(r0 + j->per, j->rows);
    int64_t de = (int64_t)st_dtype_size(j->dt), se = (int64_t)st_dtype_size(j->sdt);
    st_iter_seek(&it, r0);
    for (int64_t r = r0; r < r1; r++) {
        if (r > r0) st_iter_next(&it);
        copy_row(j->dst + it.off[0] * de, it.step[0], j->dt, j->src + it.off[1] * se, it.step[1], j->sdt, it.inner);
    }
}

void st_index_copy(st_pool *pool, int rank, const int64_t *sizes, void *dst, const int64_t *dstr, st_dtype dt,
                     const void *src, const int64_t *sstr, st_dtype sdt)
{
    int64_t sz[2 * ST_MAX_RANK], a[2 * ST_MAX_RANK], b[2 * ST_MAX_RANK];
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (sizes[d] == 0) return;
        if (sizes[d] == 1) continue;
        sz[r] = sizes[d];
        a[r] = dstr[d];
        b[r] = sstr[d];
        r++;
    }
    if (r > ST_MAX_RANK) {
        /* the iterator takes ST_MAX_RANK dims: peel leading ones */
        int64_t de = (int64_t)st_dtype_size(dt), se = (int64_t)st_dtype_size(sdt);
        for (int64_t i = 0; i < sz[0]; i++)
            st_index_copy(pool, r - 1, sz + 1, (char *)dst + i * a[0] * de, a + 1, dt, (const char *)src + i * b[0] * se, b + 1, sdt);
        return;
    }
    copy_job j;
    j.dst = dst;
    j.src = src;
    j.dt = dt;
    j.sdt = sdt;
    if (!st_iter_init(&j.it, r, sz, 2, (const int64_t *[]){a, b})) return;
    j.rows = st_iter_rows(&j.it);
    j.per = rows_per_task(j.it.inner);
    st_parallel_for(pool, ceil_div(j.rows, j.per), copy_task, &j);
}

void st_index_copy_into(st_pool *pool, const st_operand *y, const void *src, const int64_t *sstr, st_dtype sdt)
{
    st_index_copy(pool, y->rank, y->sizes, y->data, y->strides, y->dtype, src, sstr, sdt);
}

void st_index_fill(st_pool *pool, const st_operand *y, const void *v, st_dtype vt)
{
    static const int64_t zero[ST_MAX_RANK] = {0};
    st_index_copy_into(pool, y, v, zero, vt);
}

st_status st_index_check(const st_operand *ix, int64_t dim)
{
    st_iter it;
    for (bool more = st_iter_init(&it, ix->rank, ix->sizes, 1, (const int64_t *[]){ix->strides}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t v = load_index(ix->dtype, elem(ix, it.off[0] + i * it.step[0]));
            if (st_im_index(v, dim) < 0)
                return st_error(ST_ERR_SHAPE, "index %lld is out of range for an axis of size %lld", (long long)v, (long long)dim);
        }
    return ST_OK;
}

/* ---- Expand, Tile ---- */

/* A lowered copy (ops/lower_index.h) from input 0 to output 0. */
static st_status copy_lowered(const st_kctx *k, const st_lower_copy *p)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (p->total == 0) return ST_OK;
    st_index_copy(k->pool, p->rank, p->n, y->data, p->ys, y->dtype, x->data, p->xs, x->dtype);
    return ST_OK;
}

st_status st_cpu_expand(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_expand(k, &p);
    return copy_lowered(k, &p);
}

st_status st_cpu_tile(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_tile(k, &p);
    return copy_lowered(k, &p);
}

/* ---- Pad ---- */

typedef struct pad_job {
    const st_operand *x, *y;
    int64_t *map[ST_MAX_RANK];      /* per output dim: the input index, or -1 for the constant */
    int64_t mid_lo, mid_hi, begin;  /* last dim: [lo, hi) maps to w - begin */
    unsigned char val[8];
    int64_t rows, per;
} pad_job;

static void pad_task(void *arg, int64_t t)
{
    const pad_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int last = y->rank - 1;
    int64_t de = (int64_t)st_dtype_size(y->dtype), se = (int64_t)st_dtype_size(x->dtype);
    int64_t w_n = y->sizes[last], ys = y->strides[last], xs = x->strides[last];
    const int64_t *m = j->map[last];
    bool fast = x->dtype == y->dtype && ys == 1 && xs == 1;
    for (int64_t row = t * j->per, end = min64(row + j->per, j->rows); row < end; row++) {
        int64_t idx[ST_MAX_RANK];
        unflatten(last, y->sizes, row, idx);
        int64_t yo = 0, xo = 0;
        bool inside = true;
        for (int d = 0; d < last; d++) {
            yo += idx[d] * y->strides[d];
            int64_t s = j->map[d][idx[d]];
            if (s < 0) inside = false;
            else xo += s * x->strides[d];
        }
        char *yr = elem(y, yo);
        if (!inside) {
            for (int64_t w = 0; w < w_n; w++) memcpy(yr + w * ys * de, j->val, (size_t)de);
            continue;
        }
        const char *xr = elem(x, xo);
        for (int64_t w = 0; w < w_n; w++) {
            if (fast && w == j->mid_lo && j->mid_hi > j->mid_lo) {
                memcpy(yr + w * de, xr + (w - j->begin) * se, (size_t)((j->mid_hi - j->mid_lo) * de));
                w = j->mid_hi - 1;
                continue;
            }
            char *d = yr + w * ys * de;
            if (m[w] < 0) copy_elem(d, (const char *)j->val, (size_t)de);
            else if (x->dtype == y->dtype) copy_elem(d, xr + m[w] * xs * se, (size_t)de);
            else st_convert(y->dtype, d, x->dtype, xr + m[w] * xs * se, 1);
        }
    }
}

st_status st_cpu_pad(const st_kctx *k)
{
    const st_pad_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    pad_job j;
    memset(&j, 0, sizeof j);
    j.x = x;
    j.y = y;
    if (s->value_input && k->n_in > 2 && present(&k->in[2])) {
        st_convert(y->dtype, j.val, k->in[2].dtype, k->in[2].data, 1);
    } else {
        double v = s->value;
        st_convert(y->dtype, j.val, ST_F64, &v, 1);
    }
    if (y->rank == 0) {
        put(y->data, y->dtype, x->data, x->dtype);
        return ST_OK;
    }
    if (st_operand_numel(y) == 0) return ST_OK;
    st_status st = ST_OK;
    for (int d = 0; d < y->rank && st == ST_OK; d++) {
        j.map[d] = malloc((size_t)y->sizes[d] * sizeof(int64_t));
        if (!j.map[d]) {
            st = st_error(ST_ERR_NOMEM, "out of memory");
            break;
        }
        for (int64_t o = 0; o < y->sizes[d]; o++) j.map[d][o] = st_im_pad_source(s->mode, o, s->begin[d], s->end[d], x->sizes[d]); /* ops/index_math.h */
    }
    if (st == ST_OK) {
        int last = y->rank - 1;
        j.begin = s->begin[last];
        j.mid_lo = max64(0, s->begin[last]);
        j.mid_hi = min64(y->sizes[last], s->begin[last] + x->sizes[last]);
        j.rows = st_operand_numel(y) / y->sizes[last];
        j.per = rows_per_task(y->sizes[last]);
        st_parallel_for(k->pool, ceil_div(j.rows, j.per), pad_task, &j);
    }
    for (int d = 0; d < y->rank; d++) free(j.map[d]);
    return st;
}

/* ---- Range, ConstantOfShape, EyeLike ---- */

st_status st_cpu_range(const st_kctx *k)
{
    const st_operand *y = &k->out[0], *a = &k->in[0], *dl = &k->in[2];
    int64_t n = y->sizes[0];
    if (st_dtype_is_float(y->dtype)) {
        double start = st_load_f64(a->dtype, a->data), delta = st_load_f64(dl->dtype, dl->data);
        for (int64_t i = 0; i < n; i++) st_store_f64(y->dtype, elem(y, i * y->strides[0]), start + (double)i * delta);
    } else {
        int64_t start = st_load_i64(a->dtype, a->data), delta = st_load_i64(dl->dtype, dl->data);
        for (int64_t i = 0; i < n; i++) st_store_i64(y->dtype, elem(y, i * y->strides[0]), start + i * delta);
    }
    return ST_OK;
}

st_status st_cpu_constant_of_shape(const st_kctx *k)
{
    const st_const_state *s = k->state;
    st_index_fill(k->pool, &k->out[0], s->value, s->dtype);
    return ST_OK;
}

st_status st_cpu_eye_like(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *y = &k->out[0];
    unsigned char zero[8] = {0}, one[8];
    st_index_fill(k->pool, y, zero, y->dtype); /* all-zero bytes are 0 in every dtype */
    st_store_f64(y->dtype, one, 1.0);
    if (s->k <= -y->sizes[0] || s->k >= y->sizes[1]) return ST_OK; /* the diagonal misses the matrix */
    for (int64_t i = 0; i < y->sizes[0]; i++) {
        int64_t c = i + s->k;
        if (c >= 0 && c < y->sizes[1]) memcpy(elem(y, i * y->strides[0] + c * y->strides[1]), one, st_dtype_size(y->dtype));
    }
    return ST_OK;
}

/* ---- Trilu ---- */

typedef struct trilu_job {
    const st_operand *x, *y;
    int64_t k;
    bool upper;
    int64_t rows, per;
} trilu_job;

static void trilu_task(void *arg, int64_t t)
{
    const trilu_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int r = y->rank;
    int64_t w_n = y->sizes[r - 1];
    static const unsigned char zero[8] = {0};
    for (int64_t row = t * j->per, end = min64(row + j->per, j->rows); row < end; row++) {
        int64_t idx[ST_MAX_RANK];
        unflatten(r - 1, y->sizes, row, idx);
        /* the kept columns (ops/index_math.h): c - i >= k (upper) or <= k */
        int64_t i = idx[r - 2], lo = st_im_trilu_first(i, j->k, w_n, j->upper), hi = st_im_trilu_end(i, j->k, w_n, j->upper);
        char *yr = elem(y, dot(r - 1, idx, y->strides));
        const char *xr = elem(x, dot(r - 1, idx, x->strides));
        int64_t ys = y->strides[r - 1], xs = x->strides[r - 1], de = (int64_t)st_dtype_size(y->dtype);
        int64_t se = (int64_t)st_dtype_size(x->dtype);
        copy_row(yr, ys, y->dtype, (const char *)zero, 0, y->dtype, lo);
        copy_row(yr + lo * ys * de, ys, y->dtype, xr + lo * xs * se, xs, x->dtype, hi - lo);
        copy_row(yr + hi * ys * de, ys, y->dtype, (const char *)zero, 0, y->dtype, w_n - hi);
    }
}

st_status st_cpu_trilu(const st_kctx *k)
{
    const st_index_state *s = k->state;
    trilu_job j = {&k->in[0], &k->out[0], 0, s->flag, 0, 0};
    if (k->n_in > 1 && present(&k->in[1])) j.k = st_load_i64(k->in[1].dtype, k->in[1].data);
    int64_t w = j.y->sizes[j.y->rank - 1];
    if (st_operand_numel(j.y) == 0) return ST_OK;
    j.rows = st_operand_numel(j.y) / w;
    j.per = rows_per_task(w);
    st_parallel_for(k->pool, ceil_div(j.rows, j.per), trilu_task, &j);
    return ST_OK;
}

/* ---- OneHot ---- */

st_status st_cpu_one_hot(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *ix = &k->in[0], *v = &k->in[2], *y = &k->out[0];
    int ax = s->axis;
    int64_t depth = y->sizes[ax];
    st_index_fill(k->pool, y, v->data, v->dtype);
    const char *on = elem(v, v->strides[0]);
    int64_t ystr[ST_MAX_RANK];
    for (int d = 0; d < ix->rank; d++) ystr[d] = y->strides[d < ax ? d : d + 1];
    st_iter it;
    int64_t de = (int64_t)st_dtype_size(y->dtype);
    for (bool more = st_iter_init(&it, ix->rank, ix->sizes, 2, (const int64_t *[]){ix->strides, ystr}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            const char *p = elem(ix, it.off[0] + i * it.step[0]);
            int64_t idx = st_dtype_is_float(ix->dtype) ? (int64_t)st_load_f64(ix->dtype, p) : st_load_i64(ix->dtype, p);
            idx = st_im_one_hot(idx, depth, s->flag);
            if (idx < 0) continue; /* out of range: all off */
            put((char *)y->data + (it.off[1] + i * it.step[1] + idx * y->strides[ax]) * de, y->dtype, on, v->dtype);
        }
    return ST_OK;
}

/* ---- DepthToSpace, SpaceToDepth: 6-d permuting copies ---- */

st_status st_cpu_depth_to_space(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_depth_to_space(k, &p);
    return copy_lowered(k, &p);
}

st_status st_cpu_space_to_depth(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_space_to_depth(k, &p);
    return copy_lowered(k, &p);
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_index_copy[] = {
    {"Expand", "", ST_DT_ALL, st_cpu_expand, NULL, NULL, NULL},
    {"Tile", "", ST_DT_ALL, st_cpu_tile, NULL, NULL, NULL},
    {"Pad", "", ST_DT_ALL, st_cpu_pad, NULL, NULL, NULL},
    {"CenterCropPad", "", ST_DT_ALL, st_cpu_pad, NULL, NULL, NULL},
    {"Range", "", ST_DT_ALL, st_cpu_range, NULL, NULL, NULL},
    {"ConstantOfShape", "", ST_DT_ALL, st_cpu_constant_of_shape, NULL, NULL, NULL},
    {"EyeLike", "", ST_DT_ALL, st_cpu_eye_like, NULL, NULL, NULL},
    {"Trilu", "", ST_DT_ALL, st_cpu_trilu, NULL, NULL, NULL},
    {"OneHot", "", ST_DT_ALL, st_cpu_one_hot, NULL, NULL, NULL},
    {"DepthToSpace", "", ST_DT_ALL, st_cpu_depth_to_space, NULL, NULL, NULL},
    {"SpaceToDepth", "", ST_DT_ALL, st_cpu_space_to_depth, NULL, NULL, NULL},
    {NULL}
};
