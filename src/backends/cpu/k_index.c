/*
 * k_index.c — CPU kernels of the index family (shape rules: ops/index.c).
 *
 * Data movement (Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu,
 * the gathers and scatters, Compress) copies element bytes, so every dtype
 * works and nothing is rounded.  Most of it is one strided copy over a
 * re-described iteration space: Expand is a copy from a view with stride 0
 * on broadcast dims, Tile one over [repeat, dim] pairs with stride 0 on the
 * repeat, DepthToSpace one over a 6-d permutation.  Copies are split into
 * tasks of about TASK_ELEMS elements, a split that does not depend on the
 * thread count, and each task owns its output bytes.
 *
 * Scatters apply their updates in index order on one thread, so duplicate
 * indices resolve the same way on every run and with every thread count.
 * Indices are checked before anything is written.
 *
 * Einsum: each operand becomes a view with one dim per distinct subscript
 * (a repeated subscript is a diagonal: its strides add), subscripts that
 * neither the output nor a later operand needs are summed away, and the
 * operands are contracted left to right as batched GEMMs ([batch, m, k] x
 * [batch, k, n]) on packed copies: st_sgemm for f32, f16 and bf16
 * (accumulating in f32), plain loops in f64 or int64 otherwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_index.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "backends/cpu/pool.h"

#define TASK_ELEMS 32768
#define GEMM_ROWS 64

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
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
/* Rows of `inner` elements per task: about TASK_ELEMS elements each. */
static int64_t rows_per_task(int64_t inner) { return inner >= TASK_ELEMS ? 1 : TASK_ELEMS / (inner > 0 ? inner : 1); }

static void unflatten(int rank, const int64_t *sizes, int64_t i, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = i % sizes[d];
        i /= sizes[d];
    }
}

static int64_t dot(int rank, const int64_t *idx, const int64_t *strides)
{
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += idx[d] * strides[d];
    return off;
}

static bool present(const st_operand *o) { return o->data && st_operand_numel(o) > 0; }

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

/* dst[i] = src[i] over sizes[0..rank), rank up to 2 * ST_MAX_RANK (Tile's
 * pairs), strides in elements (0 broadcasts), converting dtype if needed. */
static void par_copy(st_pool *pool, int rank, const int64_t *sizes, void *dst, const int64_t *dstr, st_dtype dt,
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
            par_copy(pool, r - 1, sz + 1, (char *)dst + i * a[0] * de, a + 1, dt, (const char *)src + i * b[0] * se, b + 1, sdt);
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

/* y = src viewed with y's shape and strides sstr. */
static void copy_into(st_pool *pool, const st_operand *y, const void *src, const int64_t *sstr, st_dtype sdt)
{
    par_copy(pool, y->rank, y->sizes, y->data, y->strides, y->dtype, src, sstr, sdt);
}

/* Every element of y = the one element at v (dtype vt). */
static void fill(st_pool *pool, const st_operand *y, const void *v, st_dtype vt)
{
    static const int64_t zero[ST_MAX_RANK] = {0};
    copy_into(pool, y, v, zero, vt);
}

/* Every index in ix within [-dim, dim). */
static st_status check_indices(const st_operand *ix, int64_t dim)
{
    st_iter it;
    for (bool more = st_iter_init(&it, ix->rank, ix->sizes, 1, (const int64_t *[]){ix->strides}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t v = load_index(ix->dtype, elem(ix, it.off[0] + i * it.step[0]));
            if (v < -dim || v >= dim)
                return st_error(ST_ERR_SHAPE, "index %lld is out of range for an axis of size %lld", (long long)v, (long long)dim);
        }
    return ST_OK;
}

/* ---- Expand, Tile ---- */

st_status st_cpu_expand(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t s[ST_MAX_RANK];
    st_broadcast_strides(x, y, s);
    copy_into(k->pool, y, x->data, s, x->dtype);
    return ST_OK;
}

st_status st_cpu_tile(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t sz[2 * ST_MAX_RANK], a[2 * ST_MAX_RANK], b[2 * ST_MAX_RANK];
    int n = 0;
    for (int d = 0; d < x->rank; d++) {
        if (x->sizes[d] == 0 || y->sizes[d] == 0) return ST_OK;
        /* output dim d as [repeat, x dim]: the repeat reads x again */
        sz[n] = y->sizes[d] / x->sizes[d];
        a[n] = x->sizes[d] * y->strides[d];
        b[n++] = 0;
        sz[n] = x->sizes[d];
        a[n] = y->strides[d];
        b[n++] = x->strides[d];
    }
    par_copy(k->pool, n, sz, y->data, a, y->dtype, x->data, b, x->dtype);
    return ST_OK;
}

/* ---- Pad ---- */

typedef struct pad_job {
    const st_operand *x, *y;
    int64_t *map[ST_MAX_RANK];      /* per output dim: the input index, or -1 for the constant */
    int64_t mid_lo, mid_hi, begin;  /* last dim: [lo, hi) maps to w - begin */
    unsigned char val[8];
    int64_t rows, per;
} pad_job;

static int64_t pad_source(int mode, int64_t o, int64_t begin, int64_t n)
{
    int64_t i = o - begin;
    if (i >= 0 && i < n) return i;
    if (mode == ST_PAD_CONSTANT || n == 0) return -1;
    if (mode == ST_PAD_EDGE) return i < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    /* reflect without repeating the edge; far pads reflect again */
    int64_t p = 2 * (n - 1);
    i %= p;
    if (i < 0) i += p;
    return i < n ? i : p - i;
}

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
        for (int64_t o = 0; o < y->sizes[d]; o++) j.map[d][o] = pad_source(s->mode, o, s->begin[d], x->sizes[d]);
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
    fill(k->pool, &k->out[0], s->value, s->dtype);
    return ST_OK;
}

st_status st_cpu_eye_like(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *y = &k->out[0];
    unsigned char zero[8] = {0}, one[8];
    fill(k->pool, y, zero, y->dtype); /* all-zero bytes are 0 in every dtype */
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
        int64_t i = idx[r - 2], lo, hi;
        /* keep column c where c - i >= k (upper) or c - i <= k (lower) */
        if (j->upper) {
            lo = min64(max64(i + j->k, 0), w_n);
            hi = w_n;
        } else {
            lo = 0;
            hi = min64(max64(i + j->k + 1, 0), w_n);
        }
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
    int64_t h = j.y->sizes[j.y->rank - 2], w = j.y->sizes[j.y->rank - 1];
    /* a k beyond the matrix acts like one just past its edge (and cannot overflow) */
    j.k = max64(min64(j.k, w + 1), -h - 1);
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
    fill(k->pool, y, v->data, v->dtype);
    const char *on = elem(v, v->strides[0]);
    int64_t ystr[ST_MAX_RANK];
    for (int d = 0; d < ix->rank; d++) ystr[d] = y->strides[d < ax ? d : d + 1];
    st_iter it;
    int64_t de = (int64_t)st_dtype_size(y->dtype);
    for (bool more = st_iter_init(&it, ix->rank, ix->sizes, 2, (const int64_t *[]){ix->strides, ystr}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            const char *p = elem(ix, it.off[0] + i * it.step[0]);
            int64_t idx = st_dtype_is_float(ix->dtype) ? (int64_t)st_load_f64(ix->dtype, p) : st_load_i64(ix->dtype, p);
            if (idx < 0 && s->flag) idx += depth;
            if (idx < 0 || idx >= depth) continue; /* out of range: all off */
            put((char *)y->data + (it.off[1] + i * it.step[1] + idx * y->strides[ax]) * de, y->dtype, on, v->dtype);
        }
    return ST_OK;
}

/* ---- GatherElements ---- */

typedef struct gather_el_job {
    const st_operand *x, *ix, *y;
    int axis;
    st_iter it;
    int64_t rows, per;
} gather_el_job;

static void gather_el_task(void *arg, int64_t t)
{
    const gather_el_job *j = arg;
    const st_operand *x = j->x, *ix = j->ix, *y = j->y;
    int64_t dim = x->sizes[j->axis], xa = x->strides[j->axis];
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
            int64_t v = load_index(ix->dtype, elem(ix, it.off[1] + i * it.step[1]));
            if (v < 0) v += dim;
            char *d = yd + (it.off[0] + i * it.step[0]) * ye;
            const char *src = xd + (it.off[2] + i * it.step[2] + v * xa) * xe;
            if (same) copy_elem(d, src, (size_t)xe);
            else st_convert(y->dtype, d, x->dtype, src, 1);
        }
    }
}

st_status st_cpu_gather_elements(const st_kctx *k)
{
    const st_index_state *s = k->state;
    gather_el_job j;
    j.x = &k->in[0];
    j.ix = &k->in[1];
    j.y = &k->out[0];
    j.axis = s->axis;
    ST_TRY(check_indices(j.ix, j.x->sizes[s->axis]));
    /* the data's offset over every dim but the axis; the index adds the axis */
    int64_t xs[ST_MAX_RANK];
    memcpy(xs, j.x->strides, sizeof xs);
    xs[s->axis] = 0;
    if (!st_iter_init(&j.it, j.ix->rank, j.ix->sizes, 3, (const int64_t *[]){j.y->strides, j.ix->strides, xs})) return ST_OK;
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
        int64_t v = load_index(ix->dtype, elem(ix, io + c * ix->strides[q - 1])), dim = x->sizes[b + c];
        if (v < -dim || v >= dim) return false;
        if (v < 0) v += dim;
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
    const st_index_state *s = k->state;
    gather_nd_job j;
    j.x = &k->in[0];
    j.ix = &k->in[1];
    j.y = &k->out[0];
    j.b = (int)s->n;
    j.q = j.ix->rank;
    j.m = (int)j.ix->sizes[j.q - 1];
    j.tuples = st_numel(j.q - 1, j.ix->sizes);
    if (st_operand_numel(j.y) == 0) return ST_OK;
    for (int64_t i = 0; i < j.tuples; i++) {
        int64_t idx[ST_MAX_RANK], xo;
        unflatten(j.q - 1, j.ix->sizes, i, idx);
        if (!gather_nd_offset(j.x, j.ix, j.b, j.m, idx, &xo)) return st_error(ST_ERR_SHAPE, "index tuple %lld holds an index out of range of the data", (long long)i);
    }
    int sr = j.x->rank - j.b - j.m;
    j.src = *j.x;
    j.dst = *j.y;
    j.src.rank = j.dst.rank = sr;
    for (int d = 0; d < sr; d++) {
        j.src.sizes[d] = j.x->sizes[j.b + j.m + d];
        j.src.strides[d] = j.x->strides[j.b + j.m + d];
        j.dst.sizes[d] = j.y->sizes[j.q - 1 + d];
        j.dst.strides[d] = j.y->strides[j.q - 1 + d];
    }
    j.per = rows_per_task(st_numel(sr, j.src.sizes));
    st_parallel_for(k->pool, ceil_div(j.tuples, j.per), gather_nd_task, &j);
    return ST_OK;
}

/* ---- ScatterND, ScatterElements ---- */

static void reduce_into(char *d, st_dtype dt, const char *s, st_dtype sdt, int red)
{
    if (red == ST_RED_NONE) {
        put(d, dt, s, sdt);
        return;
    }
    if (st_dtype_is_float(dt)) {
        /* f32 and narrower: the double result rounds once to the dtype,
         * the same as the dtype's own arithmetic */
        double a = st_load_f64(dt, d), b = st_load_f64(sdt, s);
        double r = red == ST_RED_ADD ? a + b : red == ST_RED_MUL ? a * b : red == ST_RED_MAX ? (b > a ? b : a) : (b < a ? b : a);
        st_store_f64(dt, d, r);
    } else if (dt == ST_U64 || dt == ST_U32) {
        uint64_t a = (uint64_t)st_load_i64(dt, d), b = (uint64_t)st_load_i64(sdt, s);
        uint64_t r = red == ST_RED_ADD ? a + b : red == ST_RED_MUL ? a * b : red == ST_RED_MAX ? (b > a ? b : a) : (b < a ? b : a);
        st_store_i64(dt, d, (int64_t)r);
    } else {
        int64_t a = st_load_i64(dt, d), b = st_load_i64(sdt, s);
        int64_t r = red == ST_RED_ADD ? (int64_t)((uint64_t)a + (uint64_t)b)
                  : red == ST_RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                  : red == ST_RED_MAX ? (b > a ? b : a) : (b < a ? b : a);
        st_store_i64(dt, d, r);
    }
}

st_status st_cpu_scatter_nd(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    int q = ix->rank, m = (int)ix->sizes[q - 1], sr = x->rank - m;
    int64_t tuples = st_numel(q - 1, ix->sizes);
    int64_t *offs = malloc((size_t)(tuples > 0 ? tuples : 1) * sizeof *offs);
    if (!offs) return st_error(ST_ERR_NOMEM, "out of memory");
    for (int64_t t = 0; t < tuples; t++) {
        int64_t idx[ST_MAX_RANK], io, off = 0;
        unflatten(q - 1, ix->sizes, t, idx);
        io = dot(q - 1, idx, ix->strides);
        for (int c = 0; c < m; c++) {
            int64_t v = load_index(ix->dtype, elem(ix, io + c * ix->strides[q - 1])), dim = y->sizes[c];
            if (v < -dim || v >= dim) {
                free(offs);
                return st_error(ST_ERR_SHAPE, "index %lld is out of range for axis %d of size %lld", (long long)v, c, (long long)dim);
            }
            off += (v < 0 ? v + dim : v) * y->strides[c];
        }
        offs[t] = off;
    }
    copy_into(k->pool, y, x->data, x->strides, x->dtype);
    st_operand dst = *y, src = *u;
    dst.rank = src.rank = sr;
    for (int d = 0; d < sr; d++) {
        dst.sizes[d] = src.sizes[d] = y->sizes[m + d];
        dst.strides[d] = y->strides[m + d];
        src.strides[d] = u->strides[q - 1 + d];
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
    int ax = s->axis;
    int64_t dim = y->sizes[ax];
    ST_TRY(check_indices(ix, dim));
    copy_into(k->pool, y, x->data, x->strides, x->dtype);
    int64_t ys[ST_MAX_RANK];
    memcpy(ys, y->strides, sizeof ys);
    ys[ax] = 0;
    st_iter it;
    for (bool more = st_iter_init(&it, ix->rank, ix->sizes, 3, (const int64_t *[]){ix->strides, u->strides, ys}); more;
         more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t v = load_index(ix->dtype, elem(ix, it.off[0] + i * it.step[0]));
            if (v < 0) v += dim;
            reduce_into(elem(y, it.off[2] + i * it.step[2] + v * y->strides[ax]), y->dtype, elem(u, it.off[1] + i * it.step[1]),
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

static bool is_nonzero(st_dtype t, const char *p)
{
    return st_dtype_is_float(t) ? st_load_f64(t, p) != 0.0 : st_load_i64(t, p) != 0;
}

int64_t st_nonzero_count(const st_operand *x)
{
    int64_t n = 0;
    st_iter it;
    for (bool more = st_iter_init(&it, x->rank, x->sizes, 1, (const int64_t *[]){x->strides}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) n += is_nonzero(x->dtype, elem(x, it.off[0] + i * it.step[0]));
    return n;
}

st_status st_cpu_nonzero(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int r = x->rank;
    int64_t total = st_operand_numel(x), found = 0, idx[ST_MAX_RANK] = {0};
    for (int64_t i = 0; i < total; i++) {
        if (is_nonzero(x->dtype, elem(x, dot(r, idx, x->strides)))) {
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

/* Element offsets of a shape's elements in row-major order. */
static void rowmajor_offsets(int rank, const int64_t *sizes, const int64_t *strides, int64_t *out)
{
    int64_t n = st_numel(rank, sizes), idx[ST_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < n; i++) {
        out[i] = off;
        for (int d = rank - 1; d >= 0; d--) {
            off += strides[d];
            if (++idx[d] < sizes[d]) break;
            off -= strides[d] * sizes[d];
            idx[d] = 0;
        }
    }
}

static int cmp_elem(st_dtype t, const char *a, const char *b)
{
    if (st_dtype_is_float(t)) {
        double x = st_load_f64(t, a), y = st_load_f64(t, b);
        return (x > y) - (x < y);
    }
    if (t == ST_U64) {
        uint64_t x = (uint64_t)st_load_i64(t, a), y = (uint64_t)st_load_i64(t, b);
        return (x > y) - (x < y);
    }
    int64_t x = st_load_i64(t, a), y = st_load_i64(t, b);
    return (x > y) - (x < y);
}

typedef struct unique_ctx {
    const st_operand *x;
    const int64_t *soff, *eoff;
    int64_t len;                    /* elements per slice */
    const int64_t *key;             /* or: order by key[] */
} unique_ctx;

static int unique_cmp(const unique_ctx *c, int64_t a, int64_t b)
{
    if (c->key) return (c->key[a] > c->key[b]) - (c->key[a] < c->key[b]);
    for (int64_t e = 0; e < c->len; e++) {
        int r = cmp_elem(c->x->dtype, elem(c->x, c->soff[a] + c->eoff[e]), elem(c->x, c->soff[b] + c->eoff[e]));
        if (r) return r;
    }
    return 0;
}

/* Stable bottom-up merge sort of v[0..n) by unique_cmp. */
static void merge_sort(int64_t *v, int64_t *tmp, int64_t n, const unique_ctx *c)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = min64(lo + w, n), hi = min64(lo + 2 * w, n), i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = unique_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid) tmp[o++] = v[i++];
            while (j < hi) tmp[o++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

void st_unique_free(st_unique_result *r)
{
    free(r->first);
    free(r->inverse);
    free(r->counts);
    memset(r, 0, sizeof *r);
}

st_status st_unique_run(const st_operand *x, int axis, bool sorted, st_unique_result *r)
{
    memset(r, 0, sizeof *r);
    int64_t n, len;
    int64_t osz[ST_MAX_RANK], ost[ST_MAX_RANK];
    int orank = 0;
    if (axis < 0) {
        n = st_operand_numel(x);
        len = 1;
    } else {
        n = x->sizes[axis];
        for (int d = 0; d < x->rank; d++)
            if (d != axis) {
                osz[orank] = x->sizes[d];
                ost[orank++] = x->strides[d];
            }
        len = st_numel(orank, osz);
    }
    size_t cap = (size_t)(n > 0 ? n : 1);
    int64_t *soff = malloc(cap * sizeof *soff), *eoff = malloc((size_t)(len > 0 ? len : 1) * sizeof *eoff);
    int64_t *order = malloc(cap * sizeof *order), *tmp = malloc(cap * sizeof *tmp), *group = malloc(cap * sizeof *group);
    int64_t *gfirst = malloc(cap * sizeof *gfirst), *gcount = malloc(cap * sizeof *gcount), *gpos = malloc(cap * sizeof *gpos);
    r->first = malloc(cap * sizeof *r->first);
    r->inverse = malloc(cap * sizeof *r->inverse);
    r->counts = malloc(cap * sizeof *r->counts);
    st_status st = ST_OK;
    if (!soff || !eoff || !order || !tmp || !group || !gfirst || !gcount || !gpos || !r->first || !r->inverse || !r->counts) {
        st = st_error(ST_ERR_NOMEM, "out of memory in Unique");
        goto done;
    }
    if (axis < 0) {
        rowmajor_offsets(x->rank, x->sizes, x->strides, soff);
        eoff[0] = 0;
    } else {
        for (int64_t i = 0; i < n; i++) soff[i] = i * x->strides[axis];
        rowmajor_offsets(orank, osz, ost, eoff);
    }
    unique_ctx c = {x, soff, eoff, len, NULL};
    for (int64_t i = 0; i < n; i++) order[i] = i;
    merge_sort(order, tmp, n, &c);
    /* equal slices are adjacent now, each run led by its first occurrence */
    int64_t g = -1;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || unique_cmp(&c, order[i - 1], order[i]) != 0) {
            g++;
            gfirst[g] = order[i];
            gcount[g] = 0;
        }
        gcount[g]++;
        group[order[i]] = g;
    }
    int64_t ng = g + 1;
    for (int64_t i = 0; i < ng; i++) gpos[i] = i;
    if (!sorted) {
        /* entries in order of first occurrence: sort the groups by it */
        for (int64_t i = 0; i < ng; i++) order[i] = i;
        unique_ctx kc = {x, NULL, NULL, 0, gfirst};
        merge_sort(order, tmp, ng, &kc);
        for (int64_t i = 0; i < ng; i++) gpos[order[i]] = i;
    }
    for (int64_t i = 0; i < ng; i++) {
        r->first[gpos[i]] = gfirst[i];
        r->counts[gpos[i]] = gcount[i];
    }
    for (int64_t i = 0; i < n; i++) r->inverse[i] = gpos[group[i]];
    r->n_slices = n;
    r->n_unique = ng;
done:
    free(soff);
    free(eoff);
    free(order);
    free(tmp);
    free(group);
    free(gfirst);
    free(gcount);
    free(gpos);
    if (st != ST_OK) st_unique_free(r);
    return st;
}

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

/* ---- DepthToSpace, SpaceToDepth: 6-d permuting copies ---- */

st_status st_cpu_depth_to_space(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t b = s->n, c = y->sizes[1], xc = x->strides[1];
    /* y as [N, C', H, b1, W, b2]; x's channel is b1*b*C' + b2*C' + c' (DCR)
     * or c'*b*b + b1*b + b2 (CRD) */
    int64_t sz[6] = {y->sizes[0], c, x->sizes[2], b, x->sizes[3], b};
    int64_t ys[6] = {y->strides[0], y->strides[1], y->strides[2] * b, y->strides[2], y->strides[3] * b, y->strides[3]};
    int64_t xs[6] = {x->strides[0], xc, x->strides[2], b * c * xc, x->strides[3], c * xc};
    if (s->flag) {
        xs[1] = b * b * xc;
        xs[3] = b * xc;
        xs[5] = xc;
    }
    par_copy(k->pool, 6, sz, y->data, ys, y->dtype, x->data, xs, x->dtype);
    return ST_OK;
}

st_status st_cpu_space_to_depth(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t b = s->n, c = x->sizes[1], yc = y->strides[1];
    /* x as [N, C, H, b1, W, b2]; y's channel is (b1*b + b2)*C + c */
    int64_t sz[6] = {x->sizes[0], c, y->sizes[2], b, y->sizes[3], b};
    int64_t xs[6] = {x->strides[0], x->strides[1], x->strides[2] * b, x->strides[2], x->strides[3] * b, x->strides[3]};
    int64_t ys[6] = {y->strides[0], yc, y->strides[2], b * c * yc, y->strides[3], c * yc};
    par_copy(k->pool, 6, sz, y->data, ys, y->dtype, x->data, xs, x->dtype);
    return ST_OK;
}

/* ---- NonMaxSuppression ---- */

void st_nms_params_read(const st_operand *in, int n_in, bool center_point_box, st_nms_params *p)
{
    memset(p, 0, sizeof *p);
    p->center_point_box = center_point_box;
    if (n_in > 2 && present(&in[2])) p->max_per_class = st_load_i64(in[2].dtype, in[2].data);
    if (n_in > 3 && present(&in[3])) p->iou_threshold = st_load_f32(in[3].dtype, in[3].data);
    if (n_in > 4 && present(&in[4])) {
        p->has_score_threshold = true;
        p->score_threshold = st_load_f32(in[4].dtype, in[4].data);
    }
}

typedef struct nms_cand {
    float score;
    int64_t index;
} nms_cand;

/* Highest score first; equal scores keep box order. */
static int nms_cand_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Boxes as {xmin, ymin, xmax, ymax}. */
static bool nms_suppresses(const float *a, const float *b, float threshold)
{
    float ix0 = fmaxf(a[0], b[0]), ix1 = fminf(a[2], b[2]);
    float iy0 = fmaxf(a[1], b[1]), iy1 = fminf(a[3], b[3]);
    if (ix1 <= ix0 || iy1 <= iy0) return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    float uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
    return inter / uni > threshold;
}

st_status st_nms_select(const st_operand *boxes, const st_operand *scores, const st_nms_params *p, int64_t **sel_out,
                        int64_t *count)
{
    int64_t nb = boxes->sizes[0], n = boxes->sizes[1], nc = scores->sizes[1];
    *sel_out = NULL;
    *count = 0;
    if (p->max_per_class <= 0 || n == 0) return ST_OK;
    size_t cap_n = (size_t)n;
    float *bx = malloc(cap_n * 4 * sizeof *bx);
    nms_cand *cand = malloc(cap_n * sizeof *cand);
    int64_t *picked = malloc(cap_n * sizeof *picked);
    int64_t cap = 64, cnt = 0;
    int64_t *sel = malloc((size_t)cap * 3 * sizeof *sel);
    st_status st = ST_OK;
    if (!bx || !cand || !picked || !sel) {
        st = st_error(ST_ERR_NOMEM, "out of memory in NonMaxSuppression");
        goto done;
    }
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < n; i++) {
            float v[4];
            for (int q = 0; q < 4; q++)
                v[q] = st_load_f32(boxes->dtype, elem(boxes, b * boxes->strides[0] + i * boxes->strides[1] + q * boxes->strides[2]));
            float *o = bx + i * 4;
            if (p->center_point_box) { /* [x_center, y_center, width, height] */
                o[0] = v[0] - v[2] / 2;
                o[2] = v[0] + v[2] / 2;
                o[1] = v[1] - v[3] / 2;
                o[3] = v[1] + v[3] / 2;
            } else { /* [y1, x1, y2, x2], either diagonal */
                o[0] = fminf(v[1], v[3]);
                o[2] = fmaxf(v[1], v[3]);
                o[1] = fminf(v[0], v[2]);
                o[3] = fmaxf(v[0], v[2]);
            }
        }
        for (int64_t c = 0; c < nc; c++) {
            int64_t m = 0;
            for (int64_t i = 0; i < n; i++) {
                float sc = st_load_f32(scores->dtype,
                                       elem(scores, b * scores->strides[0] + c * scores->strides[1] + i * scores->strides[2]));
                if (p->has_score_threshold && !(sc > p->score_threshold)) continue;
                cand[m].score = sc;
                cand[m++].index = i;
            }
            qsort(cand, (size_t)m, sizeof *cand, nms_cand_cmp);
            int64_t np = 0;
            for (int64_t e = 0; e < m && np < p->max_per_class; e++) {
                const float *box = bx + cand[e].index * 4;
                bool keep = true;
                for (int64_t q = 0; q < np && keep; q++)
                    if (nms_suppresses(box, bx + picked[q] * 4, p->iou_threshold)) keep = false;
                if (!keep) continue;
                picked[np++] = cand[e].index;
                if (cnt == cap) {
                    int64_t *grown = realloc(sel, (size_t)cap * 2 * 3 * sizeof *sel);
                    if (!grown) {
                        st = st_error(ST_ERR_NOMEM, "out of memory in NonMaxSuppression");
                        goto done;
                    }
                    sel = grown;
                    cap *= 2;
                }
                sel[cnt * 3] = b;
                sel[cnt * 3 + 1] = c;
                sel[cnt * 3 + 2] = cand[e].index;
                cnt++;
            }
        }
    }
done:
    free(bx);
    free(cand);
    free(picked);
    if (st != ST_OK) {
        free(sel);
        return st;
    }
    *sel_out = sel;
    *count = cnt;
    return ST_OK;
}

st_status st_cpu_nms(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *y = &k->out[0];
    st_nms_params p;
    st_nms_params_read(k->in, k->n_in, s->flag, &p);
    int64_t *sel = NULL, cnt = 0;
    if (st_operand_numel(&k->in[0]) > 0 && st_operand_numel(&k->in[1]) > 0)
        ST_TRY(st_nms_select(&k->in[0], &k->in[1], &p, &sel, &cnt));
    if (cnt != y->sizes[0]) {
        free(sel);
        return st_error(ST_ERR_INTERNAL, "inputs changed since planning");
    }
    for (int64_t i = 0; i < cnt; i++)
        for (int c = 0; c < 3; c++) st_store_i64(y->dtype, elem(y, i * y->strides[0] + c * y->strides[1]), sel[i * 3 + c]);
    free(sel);
    return ST_OK;
}

/* ---- Einsum ---- */

typedef struct ein_op {
    st_operand o;                   /* one dim per distinct label, in lab[] order */
    int8_t lab[ST_MAX_RANK];
    void *owned;                    /* a packed intermediate this operand holds */
} ein_op;

static st_dtype ein_ctype(st_dtype t)
{
    if (t == ST_F64) return ST_F64;
    return st_dtype_is_float(t) ? ST_F32 : ST_I64;
}

/* Input i over its distinct labels: a repeated label is a diagonal (the
 * strides add); a dim of 1 broadcasts over the label's extent. */
static void ein_view(const st_einsum_state *s, int i, const st_operand *x, ein_op *e)
{
    memset(e, 0, sizeof *e);
    e->o.data = x->data;
    e->o.dtype = x->dtype;
    int n = 0;
    for (int d = 0; d < s->rank[i]; d++) {
        int l = s->label[i][d], p = 0;
        while (p < n && e->lab[p] != l) p++;
        int64_t st = x->sizes[d] == 1 ? 0 : x->strides[d];
        if (p < n) {
            e->o.strides[p] += st;
            continue;
        }
        e->lab[n] = (int8_t)l;
        e->o.sizes[n] = s->size[l];
        e->o.strides[n] = st;
        n++;
    }
    e->o.rank = n;
}

/* Sums away the labels of e that keep[] does not hold, into a packed ct buffer. */
static st_status ein_reduce(ein_op *e, const bool *keep, st_dtype ct)
{
    int n = 0;
    for (int d = 0; d < e->o.rank; d++) n += keep[e->lab[d]];
    if (n == e->o.rank) return ST_OK;
    ein_op r;
    memset(&r, 0, sizeof r);
    r.o.dtype = ct;
    r.o.rank = n;
    for (int d = 0, k = 0; d < e->o.rank; d++)
        if (keep[e->lab[d]]) {
            r.lab[k] = e->lab[d];
            r.o.sizes[k++] = e->o.sizes[d];
        }
    st_strides_contiguous(n, r.o.sizes, r.o.strides);
    int64_t dstr[ST_MAX_RANK], cnt = st_numel(n, r.o.sizes);
    for (int d = 0, k = 0; d < e->o.rank; d++) dstr[d] = keep[e->lab[d]] ? r.o.strides[k++] : 0;
    r.owned = calloc((size_t)(cnt > 0 ? cnt : 1), 8);
    if (!r.owned) return st_error(ST_ERR_NOMEM, "out of memory in Einsum");
    r.o.data = r.owned;
    st_iter it;
    for (bool more = st_iter_init(&it, e->o.rank, e->o.sizes, 2, (const int64_t *[]){e->o.strides, dstr}); more;
         more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            const char *src = elem(&e->o, it.off[0] + i * it.step[0]);
            int64_t di = it.off[1] + i * it.step[1];
            if (ct == ST_F32) ((float *)r.owned)[di] += st_load_f32(e->o.dtype, src);
            else if (ct == ST_F64) ((double *)r.owned)[di] += st_load_f64(e->o.dtype, src);
            else ((int64_t *)r.owned)[di] = (int64_t)((uint64_t)((int64_t *)r.owned)[di] + (uint64_t)st_load_i64(e->o.dtype, src));
        }
    free(e->owned);
    *e = r;
    return ST_OK;
}

/* e's dims in the label order `order`, packed into a new ct buffer. */
static void *ein_pack(st_pool *pool, const ein_op *e, const int8_t *order, int n, st_dtype ct)
{
    int64_t sz[ST_MAX_RANK], src[ST_MAX_RANK], dst[ST_MAX_RANK];
    for (int d = 0; d < n; d++) {
        int p = 0;
        while (e->lab[p] != order[d]) p++;
        sz[d] = e->o.sizes[p];
        src[d] = e->o.strides[p];
    }
    st_strides_contiguous(n, sz, dst);
    int64_t cnt = st_numel(n, sz);
    void *buf = malloc((size_t)(cnt > 0 ? cnt : 1) * st_dtype_size(ct));
    if (buf) par_copy(pool, n, sz, buf, dst, ct, e->o.data, src, e->o.dtype);
    return buf;
}

typedef struct ein_gemm {
    st_dtype ct;
    const void *a, *b;              /* [bt, m, k] and [bt, k, n], packed */
    void *c;                        /* [bt, m, n] */
    int64_t m, n, k, mtiles;
} ein_gemm;

static void ein_gemm_task(void *arg, int64_t t)
{
    const ein_gemm *g = arg;
    int64_t bi = t / g->mtiles, m0 = (t % g->mtiles) * GEMM_ROWS, rows = min64(GEMM_ROWS, g->m - m0);
    int64_t ao = (bi * g->m + m0) * g->k, bo = bi * g->k * g->n, co = (bi * g->m + m0) * g->n;
    if (g->ct == ST_F32) {
        st_mat ma = {(const float *)g->a + ao, rows, g->k, g->k, 1};
        st_mat mb = {(const float *)g->b + bo, g->k, g->n, g->n, 1};
        st_sgemm(&ma, false, &mb, false, 1.0f, 0.0f, (float *)g->c + co, g->n, rows, g->n, g->k);
    } else if (g->ct == ST_F64) {
        const double *a = (const double *)g->a + ao, *b = (const double *)g->b + bo;
        double *c = (double *)g->c + co;
        for (int64_t i = 0; i < rows; i++) {
            double *cr = c + i * g->n;
            for (int64_t j = 0; j < g->n; j++) cr[j] = 0;
            for (int64_t p = 0; p < g->k; p++) {
                double av = a[i * g->k + p];
                const double *br = b + p * g->n;
                for (int64_t j = 0; j < g->n; j++) cr[j] += av * br[j];
            }
        }
    } else {
        const int64_t *a = (const int64_t *)g->a + ao, *b = (const int64_t *)g->b + bo;
        int64_t *c = (int64_t *)g->c + co;
        for (int64_t i = 0; i < rows; i++) {
            uint64_t *cr = (uint64_t *)(c + i * g->n);
            for (int64_t j = 0; j < g->n; j++) cr[j] = 0;
            for (int64_t p = 0; p < g->k; p++) {
                uint64_t av = (uint64_t)a[i * g->k + p];
                const int64_t *br = b + p * g->n;
                for (int64_t j = 0; j < g->n; j++) cr[j] += av * (uint64_t)br[j];
            }
        }
    }
}

/* res = a contracted with b over the labels they share that `needed`
 * does not hold; labels res keeps: shared and needed (batch), then a's
 * own, then b's own. */
static st_status ein_contract(st_pool *pool, const st_einsum_state *s, ein_op *a, ein_op *b, const bool *needed, st_dtype ct,
                              ein_op *res)
{
    bool in_a[ST_EIN_LABELS] = {0}, in_b[ST_EIN_LABELS] = {0}, keep_a[ST_EIN_LABELS], keep_b[ST_EIN_LABELS];
    for (int d = 0; d < a->o.rank; d++) in_a[a->lab[d]] = true;
    for (int d = 0; d < b->o.rank; d++) in_b[b->lab[d]] = true;
    for (int l = 0; l < ST_EIN_LABELS; l++) {
        keep_a[l] = needed[l] || in_b[l];
        keep_b[l] = needed[l] || in_a[l];
    }
    ST_TRY(ein_reduce(a, keep_a, ct));
    ST_TRY(ein_reduce(b, keep_b, ct));
    int8_t bat[ST_MAX_RANK], mm[ST_MAX_RANK], kk[ST_MAX_RANK], nn[ST_MAX_RANK];
    int nbat = 0, nm = 0, nk = 0, nn_ = 0;
    int64_t bt = 1, m = 1, k = 1, n = 1;
    for (int d = 0; d < a->o.rank; d++) {
        int l = a->lab[d];
        if (in_b[l] && needed[l]) bat[nbat++] = (int8_t)l, bt *= s->size[l];
        else if (in_b[l]) kk[nk++] = (int8_t)l, k *= s->size[l];
        else mm[nm++] = (int8_t)l, m *= s->size[l];
    }
    for (int d = 0; d < b->o.rank; d++)
        if (!in_a[b->lab[d]]) nn[nn_++] = b->lab[d], n *= s->size[b->lab[d]];
    if (nbat + nm + nn_ > ST_MAX_RANK) return st_error(ST_ERR_UNSUPPORTED, "an intermediate has more than %d dims", ST_MAX_RANK);
    int8_t oa[ST_MAX_RANK], ob[ST_MAX_RANK];
    int na = 0, nb_ = 0;
    for (int i = 0; i < nbat; i++) oa[na++] = bat[i], ob[nb_++] = bat[i];
    for (int i = 0; i < nm; i++) oa[na++] = mm[i];
    for (int i = 0; i < nk; i++) oa[na++] = kk[i], ob[nb_++] = kk[i];
    for (int i = 0; i < nn_; i++) ob[nb_++] = nn[i];
    memset(res, 0, sizeof *res);
    int64_t cnt = bt * m * n;
    void *pa = ein_pack(pool, a, oa, na, ct), *pb = ein_pack(pool, b, ob, nb_, ct);
    res->owned = malloc((size_t)(cnt > 0 ? cnt : 1) * st_dtype_size(ct));
    if (!pa || !pb || !res->owned) {
        free(pa);
        free(pb);
        free(res->owned);
        res->owned = NULL;
        return st_error(ST_ERR_NOMEM, "out of memory in Einsum");
    }
    ein_gemm g = {ct, pa, pb, res->owned, m, n, k, ceil_div(m, GEMM_ROWS)};
    if (cnt > 0) st_parallel_for(pool, bt * g.mtiles, ein_gemm_task, &g);
    free(pa);
    free(pb);
    res->o.data = res->owned;
    res->o.dtype = ct;
    int r = 0;
    for (int i = 0; i < nbat; i++) res->lab[r++] = bat[i];
    for (int i = 0; i < nm; i++) res->lab[r++] = mm[i];
    for (int i = 0; i < nn_; i++) res->lab[r++] = nn[i];
    res->o.rank = r;
    for (int d = 0; d < r; d++) res->o.sizes[d] = s->size[res->lab[d]];
    st_strides_contiguous(r, res->o.sizes, res->o.strides);
    return ST_OK;
}

/* Labels needed after contracting operand i: the output's and those of later operands. */
static void ein_needed(const st_einsum_state *s, int i, bool *needed)
{
    memset(needed, 0, ST_EIN_LABELS * sizeof *needed);
    for (int d = 0; d < s->out_rank; d++) needed[s->out_label[d]] = true;
    for (int j = i + 1; j < s->n_in; j++)
        for (int d = 0; d < s->rank[j]; d++) needed[s->label[j][d]] = true;
}

bool st_einsum_fits(const st_einsum_state *s)
{
    bool cur[ST_EIN_LABELS] = {0}, needed[ST_EIN_LABELS];
    for (int d = 0; d < s->rank[0]; d++) cur[s->label[0][d]] = true;
    for (int i = 1; i < s->n_in; i++) {
        ein_needed(s, i, needed);
        bool next[ST_EIN_LABELS] = {0};
        int n = 0;
        for (int d = 0; d < s->rank[i]; d++) next[s->label[i][d]] = true;
        for (int l = 0; l < ST_EIN_LABELS; l++) {
            cur[l] = (cur[l] || next[l]) && needed[l];
            n += cur[l];
        }
        if (n > ST_MAX_RANK) return false;
    }
    return true;
}

st_status st_cpu_einsum(const st_kctx *k)
{
    const st_einsum_state *s = k->state;
    const st_operand *y = &k->out[0];
    st_dtype ct = ein_ctype(k->in[0].dtype);
    bool needed[ST_EIN_LABELS];
    ein_op cur;
    ein_view(s, 0, &k->in[0], &cur);
    st_status st = ST_OK;
    for (int i = 1; i < s->n_in && st == ST_OK; i++) {
        ein_op next, res;
        ein_view(s, i, &k->in[i], &next);
        ein_needed(s, i, needed);
        st = ein_contract(k->pool, s, &cur, &next, needed, ct, &res);
        free(cur.owned);
        free(next.owned);
        if (st == ST_OK) cur = res;
        else cur.owned = NULL;
    }
    if (st == ST_OK) {
        ein_needed(s, s->n_in - 1, needed);
        st = ein_reduce(&cur, needed, ct);
    }
    if (st == ST_OK) {
        int64_t src[ST_MAX_RANK];
        for (int d = 0; d < s->out_rank; d++) {
            int p = 0;
            while (cur.lab[p] != s->out_label[d]) p++;
            src[d] = cur.o.strides[p];
        }
        copy_into(k->pool, y, cur.o.data, src, cur.o.dtype);
    }
    free(cur.owned);
    return st;
}
