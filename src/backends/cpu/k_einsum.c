/*
 * k_einsum.c — Einsum on the CPU.
 *
 * Each operand becomes a view with one dim per distinct subscript (a
 * repeated subscript is a diagonal: its strides add), subscripts that
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
#include "ops/index_math.h"

#define GEMM_ROWS 64

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
        /* ops/index_math.h: strides of one label add, a dim of 1 adds none */
        if (p < n) {
            e->o.strides[p] = st_im_label_stride(e->o.strides[p], x->sizes[d], x->strides[d]);
            continue;
        }
        e->lab[n] = (int8_t)l;
        e->o.sizes[n] = s->size[l];
        e->o.strides[n] = st_im_label_stride(0, x->sizes[d], x->strides[d]);
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
    if (buf) st_index_copy(pool, n, sz, buf, dst, ct, e->o.data, src, e->o.dtype);
    return buf;
}

typedef struct ein_gemm {
    st_dtype ct;
    const void *a, *b;              /* [bt, m, k] and [bt, k, n], packed */
    void *c;                        /* [bt, m, n] */
    int64_t m, n, k, mtiles;
    st_status err;
} ein_gemm;

static void ein_gemm_task(void *arg, int64_t t)
{
    ein_gemm *g = arg;
    int64_t bi = t / g->mtiles, m0 = (t % g->mtiles) * GEMM_ROWS, rows = min64(GEMM_ROWS, g->m - m0);
    int64_t ao = (bi * g->m + m0) * g->k, bo = bi * g->k * g->n, co = (bi * g->m + m0) * g->n;
    if (g->ct == ST_F32) {
        st_mat ma = {(const float *)g->a + ao, rows, g->k, g->k, 1};
        st_mat mb = {(const float *)g->b + bo, g->k, g->n, g->n, 1};
        st_status r = st_sgemm(&ma, false, &mb, false, 1.0f, 0.0f, (float *)g->c + co, g->n, rows, g->n, g->k);
        if (r != ST_OK) g->err = r; /* any one failure is reported */
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
    if (nbat + nm + nn_ > ST_MAX_RANK) return st_error(ST_ERR_INTERNAL, "an intermediate has more than %d dims (accepts should have refused)", ST_MAX_RANK);
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
    ein_gemm g = {ct, pa, pb, res->owned, m, n, k, ceil_div(m, GEMM_ROWS), ST_OK};
    if (cnt > 0) st_parallel_for(pool, bt * g.mtiles, ein_gemm_task, &g);
    free(pa);
    free(pb);
    if (g.err != ST_OK) {
        free(res->owned);
        res->owned = NULL;
        return st_error(g.err, "out of memory in Einsum");
    }
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

/* Whether every intermediate of the pairwise contraction this kernel does
 * fits in ST_MAX_RANK dims: its accepts. */
static bool einsum_fits(const st_einsum_state *s)
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
        st_index_copy_into(k->pool, y, cur.o.data, src, cur.o.dtype);
    }
    free(cur.owned);
    return st;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

static bool einsum_accepts(const st_knode *n, char *why, size_t len)
{
    if (einsum_fits(n->state)) return true;
    return st_kernel_refuse(why, len, "an intermediate of this Einsum equation would have more than %d dims", ST_MAX_RANK);
}

const st_kernel st_cpu_k_einsum[] = {
    {"Einsum", "", ST_DT_ALL, st_cpu_einsum, einsum_accepts, NULL, NULL},
    {NULL}
};
