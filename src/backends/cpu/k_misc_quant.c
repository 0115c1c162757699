/*
 * k_misc_quant.c — CPU kernels of the quantization ops (shape rules:
 * ops/misc.c): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
 *
 * Rounding follows ONNX and ONNX Runtime: x / scale in f32, rounded to
 * nearest even, plus the zero point, saturated to the output type.
 * The integer products accumulate exactly in int64 (stored as int32, as
 * the ops define); QLinear ops then requantize with the f32 multiplier
 * a_scale * b_scale / y_scale.  Tasks are fixed blocks of output rows or
 * planes, each owning its outputs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/k_misc.h"
#include "backends/cpu/pool.h"
#include "ops/misc.h"

#define ROW_TASK_ELEMS 16384
#define QMM_ROWS 16

static const st_operand *opt_in(const st_kctx *k, int i) { return i < k->n_in && k->in[i].data ? &k->in[i] : NULL; }

static int64_t lo_of(st_dtype t) { return t == ST_I8 ? -128 : 0; }
static int64_t hi_of(st_dtype t) { return t == ST_I8 ? 127 : 255; }

/* round(v) + zp, saturated; NaN quantizes to the zero point */
static int64_t quantize(float v, int64_t zp, int64_t lo, int64_t hi)
{
    float r = isnan(v) ? 0.0f : rintf(v);
    if (r < (float)(lo - zp)) return lo;
    if (r > (float)(hi - zp)) return hi;
    int64_t q = (int64_t)r + zp;
    return q < lo ? lo : q > hi ? hi : q;
}

/* ---- QuantizeLinear, DequantizeLinear ---- */

typedef struct ql_job {
    const st_kctx *k;
    bool dequant;
    st_iter it;
    int64_t rows, per_task;
} ql_job;

static void ql_rows(void *arg, int64_t task)
{
    const ql_job *j = arg;
    const st_kctx *k = j->k;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *zp = opt_in(k, 2), *y = &k->out[0];
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype), es = st_dtype_size(sc->dtype);
    size_t ez = zp ? st_dtype_size(zp->dtype) : 1;
    st_iter it = j->it;
    int64_t r0 = task * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
    st_iter_seek(&it, r0);
    int64_t lo = lo_of(y->dtype), hi = hi_of(y->dtype);
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            const char *xp = (const char *)x->data + (it.off[1] + i * it.step[1]) * (int64_t)ex;
            float scale = st_load_f32(sc->dtype, (const char *)sc->data + (it.off[2] + i * it.step[2]) * (int64_t)es);
            int64_t z = zp ? st_load_i64(zp->dtype, (const char *)zp->data + (it.off[3] + i * it.step[3]) * (int64_t)ez) : 0;
            char *yp = (char *)y->data + (it.off[0] + i * it.step[0]) * (int64_t)ey;
            if (j->dequant) {
                st_store_f32(y->dtype, yp, (float)(st_load_i64(x->dtype, xp) - z) * scale);
            } else {
                float v = x->dtype == ST_I32 ? (float)*(const int32_t *)xp : st_load_f32(x->dtype, xp);
                st_store_i64(y->dtype, yp, quantize(v / scale, z, lo, hi));
            }
        }
}

static st_status run_ql(const st_kctx *k, bool dequant)
{
    const st_quant_state *s = k->state;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *zp = opt_in(k, 2), *y = &k->out[0];
    /* scale and zero point broadcast along every axis but `axis` */
    int64_t ss[ST_MAX_RANK] = {0}, sz[ST_MAX_RANK] = {0};
    if (s->axis >= 0) {
        ss[s->axis] = sc->strides[0];
        if (zp) sz[s->axis] = zp->strides[0];
    }
    ql_job j = {k, dequant, {0}, 0, 0};
    if (!st_iter_init(&j.it, y->rank, y->sizes, 4, (const int64_t *[]){y->strides, x->strides, ss, sz})) return ST_OK;
    j.rows = st_iter_rows(&j.it);
    j.per_task = ROW_TASK_ELEMS / (j.it.inner > 0 ? j.it.inner : 1);
    if (j.per_task < 1) j.per_task = 1;
    st_parallel_for(k->pool, (j.rows + j.per_task - 1) / j.per_task, ql_rows, &j);
    return ST_OK;
}

st_status st_cpu_quantize(const st_kctx *k) { return run_ql(k, false); }
st_status st_cpu_dequantize(const st_kctx *k) { return run_ql(k, true); }

/* ---- DynamicQuantizeLinear ---- */

typedef struct dq_job {
    const st_kctx *k;
    st_iter it;
    int64_t rows, per_task;
    float scale;
    int64_t zp;
} dq_job;

static void dq_rows(void *arg, int64_t task)
{
    const dq_job *j = arg;
    const st_operand *x = &j->k->in[0], *y = &j->k->out[0];
    size_t ex = st_dtype_size(x->dtype);
    st_iter it = j->it;
    int64_t r0 = task * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
    st_iter_seek(&it, r0);
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            float v = st_load_f32(x->dtype, (const char *)x->data + (it.off[1] + i * it.step[1]) * (int64_t)ex);
            ((uint8_t *)y->data)[it.off[0] + i * it.step[0]] = (uint8_t)(j->scale != 0 ? quantize(v / j->scale, j->zp, 0, 255) : j->zp);
        }
}

st_status st_cpu_dynamic_quantize(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    size_t ex = st_dtype_size(x->dtype);
    /* the range always includes 0, so that 0 is exact */
    float mn = 0, mx = 0;
    st_iter it;
    for (bool more = st_iter_init(&it, x->rank, x->sizes, 1, (const int64_t *[]){x->strides}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            float v = st_load_f32(x->dtype, (const char *)x->data + (it.off[0] + i * it.step[0]) * (int64_t)ex);
            if (v < mn) mn = v;
            if (v > mx) mx = v;
        }
    dq_job j = {k, {0}, 0, 0, (mx - mn) / 255.0f, 0};
    if (j.scale != 0) j.zp = quantize((0.0f - mn) / j.scale, 0, 0, 255);
    if (k->n_out > 1 && k->out[1].data) st_store_f32(k->out[1].dtype, k->out[1].data, j.scale);
    if (k->n_out > 2 && k->out[2].data) *(uint8_t *)k->out[2].data = (uint8_t)j.zp;
    if (!st_iter_init(&j.it, y->rank, y->sizes, 2, (const int64_t *[]){y->strides, x->strides})) return ST_OK;
    j.rows = st_iter_rows(&j.it);
    j.per_task = ROW_TASK_ELEMS / (j.it.inner > 0 ? j.it.inner : 1);
    if (j.per_task < 1) j.per_task = 1;
    st_parallel_for(k->pool, (j.rows + j.per_task - 1) / j.per_task, dq_rows, &j);
    return ST_OK;
}

/* ---- MatMulInteger, QLinearMatMul ---- */

/* A per-row (A) or per-column (B) parameter: its element for batch
 * offset bo (in the parameter's own strides) and row/column i. */
typedef struct qparam {
    const st_operand *o;
    int64_t bs[ST_MAX_RANK];          /* batch strides in the output's batch dims */
    int64_t step;                     /* stride along the row (A) or column (B) */
} qparam;

typedef struct qmm_job {
    const st_kctx *k;
    bool qlinear;
    const st_operand *a, *b, *y;
    qparam azp, bzp, as, bs;
    const st_operand *ys, *yzp;
    bool a_vec, b_vec;
    int nb;                           /* batch rank of the output */
    int64_t m, n, kk, blocks, batches;
    int64_t sa[ST_MAX_RANK], sb[ST_MAX_RANK];
    st_status *err;
} qmm_job;

/* is_a: a parameter of A (per row), else of B (per column). */
static void qparam_init(qparam *p, const st_operand *o, const st_operand *mat, bool is_a, int nb, bool vec)
{
    memset(p, 0, sizeof *p);
    p->o = o;
    if (!o || st_operand_numel(o) == 1) return;
    if (o->rank == 1) {
        p->step = vec ? 0 : o->strides[0];
        return;
    }
    /* the matrix's shape with a unit column (A) or row (B) */
    p->step = o->strides[o->rank - (is_a ? 2 : 1)];
    int br = mat->rank - 2;
    for (int d = 0; d < nb; d++) {
        int q = d - (nb - br);
        p->bs[d] = q < 0 || mat->sizes[q] == 1 ? 0 : o->strides[q];
    }
}

static int64_t qparam_off(const qparam *p, const int64_t *bidx, int nb, int64_t i)
{
    int64_t off = i * p->step;
    for (int d = 0; d < nb; d++) off += bidx[d] * p->bs[d];
    return off;
}

static void qmm_task(void *arg, int64_t t)
{
    const qmm_job *j = arg;
    const st_operand *a = j->a, *b = j->b, *y = j->y;
    int64_t batch = t / j->blocks, i0 = (t % j->blocks) * QMM_ROWS, i1 = i0 + QMM_ROWS < j->m ? i0 + QMM_ROWS : j->m;
    int64_t bidx[ST_MAX_RANK], rem = batch, ao = 0, bo = 0, yo = 0;
    for (int d = j->nb - 1; d >= 0; d--) {
        bidx[d] = rem % y->sizes[d];
        rem /= y->sizes[d];
        ao += bidx[d] * j->sa[d];
        bo += bidx[d] * j->sb[d];
        yo += bidx[d] * y->strides[d];
    }
    int64_t K = j->kk, N = j->n;
    int32_t *bt = malloc((size_t)(K * N + K + 1) * sizeof *bt), *ar = bt + K * N;
    if (!bt) {
        *j->err = ST_ERR_NOMEM;
        return;
    }
    int64_t b_rs = j->b_vec ? b->strides[0] : b->strides[b->rank - 2], b_cs = j->b_vec ? 0 : b->strides[b->rank - 1];
    int64_t a_rs = j->a_vec ? 0 : a->strides[a->rank - 2], a_cs = a->strides[a->rank - 1];
    /* B - b_zero_point, transposed to [N, K] */
    for (int64_t c = 0; c < N; c++) {
        int64_t z = j->bzp.o ? st_load_i64(j->bzp.o->dtype, st_misc_at(j->bzp.o, qparam_off(&j->bzp, bidx, j->nb, c))) : 0;
        for (int64_t q = 0; q < K; q++) bt[c * K + q] = (int32_t)(st_load_i64(b->dtype, st_misc_at(b, bo + q * b_rs + c * b_cs)) - z);
    }
    int64_t y_rs = j->a_vec ? 0 : y->strides[y->rank - (j->b_vec ? 1 : 2)], y_cs = j->b_vec ? 0 : y->strides[y->rank - 1];
    float ysc = j->qlinear ? st_load_f32(j->ys->dtype, j->ys->data) : 0;
    int64_t yz = j->qlinear ? st_load_i64(j->yzp->dtype, j->yzp->data) : 0, lo = lo_of(y->dtype), hi = hi_of(y->dtype);
    for (int64_t i = i0; i < i1; i++) {
        int64_t z = j->azp.o ? st_load_i64(j->azp.o->dtype, st_misc_at(j->azp.o, qparam_off(&j->azp, bidx, j->nb, i))) : 0;
        for (int64_t q = 0; q < K; q++) ar[q] = (int32_t)(st_load_i64(a->dtype, st_misc_at(a, ao + i * a_rs + q * a_cs)) - z);
        float asc = j->qlinear ? st_load_f32(j->as.o->dtype, st_misc_at(j->as.o, qparam_off(&j->as, bidx, j->nb, i))) : 0;
        for (int64_t c = 0; c < N; c++) {
            int64_t acc = 0;
            const int32_t *bc = bt + c * K;
            for (int64_t q = 0; q < K; q++) acc += (int64_t)ar[q] * bc[q];
            char *yp = st_misc_at(y, yo + i * y_rs + c * y_cs);
            if (!j->qlinear) {
                *(int32_t *)yp = (int32_t)acc;
            } else {
                float bsc = st_load_f32(j->bs.o->dtype, st_misc_at(j->bs.o, qparam_off(&j->bs, bidx, j->nb, c)));
                st_store_i64(y->dtype, yp, quantize((float)(int32_t)acc * (asc * bsc / ysc), yz, lo, hi));
            }
        }
    }
    free(bt);
}

st_status st_cpu_qmatmul(const st_kctx *k)
{
    const st_qmatmul_state *s = k->state;
    qmm_job j;
    memset(&j, 0, sizeof j);
    st_status err = ST_OK;
    j.k = k;
    j.err = &err;
    j.qlinear = s->qlinear;
    j.a = &k->in[0];
    j.b = &k->in[s->qlinear ? 3 : 1];
    j.y = &k->out[0];
    const st_operand *a = j.a, *b = j.b, *y = j.y;
    j.a_vec = a->rank == 1;
    j.b_vec = b->rank == 1;
    j.m = j.a_vec ? 1 : a->sizes[a->rank - 2];
    j.kk = a->sizes[a->rank - 1];
    j.n = j.b_vec ? 1 : b->sizes[b->rank - 1];
    j.nb = y->rank - (j.a_vec ? 0 : 1) - (j.b_vec ? 0 : 1);
    int abr = a->rank - (j.a_vec ? 1 : 2), bbr = b->rank - (j.b_vec ? 1 : 2);
    for (int d = 0; d < j.nb; d++) {
        int ka = d - (j.nb - abr), kb = d - (j.nb - bbr);
        j.sa[d] = ka < 0 || a->sizes[ka] == 1 ? 0 : a->strides[ka];
        j.sb[d] = kb < 0 || b->sizes[kb] == 1 ? 0 : b->strides[kb];
    }
    if (s->qlinear) {
        qparam_init(&j.as, &k->in[1], a, true, j.nb, j.a_vec);
        qparam_init(&j.azp, &k->in[2], a, true, j.nb, j.a_vec);
        qparam_init(&j.bs, &k->in[4], b, false, j.nb, j.b_vec);
        qparam_init(&j.bzp, &k->in[5], b, false, j.nb, j.b_vec);
        j.ys = &k->in[6];
        j.yzp = &k->in[7];
    } else {
        qparam_init(&j.azp, opt_in(k, 2), a, true, j.nb, j.a_vec);
        qparam_init(&j.bzp, opt_in(k, 3), b, false, j.nb, j.b_vec);
    }
    j.batches = st_numel(j.nb, y->sizes);
    j.blocks = (j.m + QMM_ROWS - 1) / QMM_ROWS;
    if (st_operand_numel(y) == 0) return ST_OK;
    st_parallel_for(k->pool, j.batches * j.blocks, qmm_task, &j);
    if (err != ST_OK) return st_error(err, "out of memory");
    return ST_OK;
}

/* ---- ConvInteger, QLinearConv ---- */

typedef struct qconv_job {
    const st_qconv_state *s;
    bool qlinear;
    const st_operand *x, *w, *xzp, *wzp, *xs, *ws, *ys, *yzp, *bias, *y;
    int64_t cg, mg, kvol, pixels;
    int64_t in_sp[3], out_sp[3];
    st_status *err;
} qconv_job;

static void qconv_plane(void *arg, int64_t t)
{
    const qconv_job *j = arg;
    const st_qconv_state *s = j->s;
    const st_operand *x = j->x, *w = j->w, *y = j->y;
    int64_t M = y->sizes[1], n = t / M, m = t % M, g = m / j->mg;
    int nsp = s->nsp;
    int32_t *wk = malloc((size_t)(j->cg * j->kvol + 1) * sizeof *wk);
    if (!wk) {
        *j->err = ST_ERR_NOMEM;
        return;
    }
    /* this output channel's weights minus their zero point */
    int64_t wz = 0;
    if (j->wzp) wz = st_load_i64(j->wzp->dtype, st_misc_at(j->wzp, st_operand_numel(j->wzp) == 1 ? 0 : m * j->wzp->strides[0]));
    for (int64_t c = 0; c < j->cg; c++)
        for (int64_t kk = 0; kk < j->kvol; kk++) {
            int64_t off = m * w->strides[0] + c * w->strides[1], rem = kk;
            for (int i = nsp - 1; i >= 0; i--) {
                off += (rem % s->k[i]) * w->strides[2 + i];
                rem /= s->k[i];
            }
            wk[c * j->kvol + kk] = (int32_t)(st_load_i64(w->dtype, st_misc_at(w, off)) - wz);
        }
    int64_t xz = j->xzp ? st_load_i64(j->xzp->dtype, j->xzp->data) : 0;
    float mult = 0;
    int64_t yz = 0, lo = lo_of(y->dtype), hi = hi_of(y->dtype), bias = 0;
    if (j->qlinear) {
        float wsc = st_load_f32(j->ws->dtype, st_misc_at(j->ws, st_operand_numel(j->ws) == 1 ? 0 : m * j->ws->strides[0]));
        mult = st_load_f32(j->xs->dtype, j->xs->data) * wsc / st_load_f32(j->ys->dtype, j->ys->data);
        yz = st_load_i64(j->yzp->dtype, j->yzp->data);
        if (j->bias) bias = st_load_i64(j->bias->dtype, st_misc_at(j->bias, m * j->bias->strides[0]));
    }
    for (int64_t p = 0; p < j->pixels; p++) {
        int64_t o[3] = {0, 0, 0}, pr = p;
        for (int i = nsp - 1; i >= 0; i--) {
            o[i] = pr % j->out_sp[i];
            pr /= j->out_sp[i];
        }
        int64_t acc = 0;
        for (int64_t c = 0; c < j->cg; c++) {
            int64_t xc = n * x->strides[0] + (g * j->cg + c) * x->strides[1];
            for (int64_t kk = 0; kk < j->kvol; kk++) {
                int64_t rem = kk, off = xc;
                bool inside = true;
                for (int i = nsp - 1; i >= 0; i--) {
                    int64_t pos = o[i] * s->s[i] - s->pb[i] + (rem % s->k[i]) * s->d[i];
                    rem /= s->k[i];
                    if (pos < 0 || pos >= j->in_sp[i]) inside = false;
                    off += pos * x->strides[2 + i];
                }
                /* padding holds the zero point, which contributes nothing */
                if (inside) acc += (st_load_i64(x->dtype, st_misc_at(x, off)) - xz) * wk[c * j->kvol + kk];
            }
        }
        int64_t yo = n * y->strides[0] + m * y->strides[1];
        for (int i = 0; i < nsp; i++) yo += o[i] * y->strides[2 + i];
        if (j->qlinear) st_store_i64(y->dtype, st_misc_at(y, yo), quantize((float)(int32_t)(acc + bias) * mult, yz, lo, hi));
        else *(int32_t *)st_misc_at(y, yo) = (int32_t)acc;
    }
    free(wk);
}

st_status st_cpu_qconv(const st_kctx *k)
{
    const st_qconv_state *s = k->state;
    qconv_job j;
    memset(&j, 0, sizeof j);
    st_status err = ST_OK;
    j.err = &err;
    j.s = s;
    j.qlinear = s->qlinear;
    j.x = &k->in[0];
    j.y = &k->out[0];
    if (s->qlinear) {
        j.xs = &k->in[1];
        j.xzp = &k->in[2];
        j.w = &k->in[3];
        j.ws = &k->in[4];
        j.wzp = &k->in[5];
        j.ys = &k->in[6];
        j.yzp = &k->in[7];
        j.bias = opt_in(k, 8);
    } else {
        j.w = &k->in[1];
        j.xzp = opt_in(k, 2);
        j.wzp = opt_in(k, 3);
    }
    j.cg = j.x->sizes[1] / s->group;
    j.mg = j.y->sizes[1] / s->group;
    j.kvol = 1;
    j.pixels = 1;
    for (int i = 0; i < s->nsp; i++) {
        j.kvol *= s->k[i];
        j.in_sp[i] = j.x->sizes[2 + i];
        j.out_sp[i] = j.y->sizes[2 + i];
        j.pixels *= j.out_sp[i];
    }
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_parallel_for(k->pool, j.y->sizes[0] * j.y->sizes[1], qconv_plane, &j);
    if (err != ST_OK) return st_error(err, "out of memory");
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_misc_quant[] = {
    {"QuantizeLinear", "", ST_DT_ALL, st_cpu_quantize, NULL, NULL, NULL},
    {"DequantizeLinear", "", ST_DT_ALL, st_cpu_dequantize, NULL, NULL, NULL},
    {"DynamicQuantizeLinear", "", ST_DT_ALL, st_cpu_dynamic_quantize, NULL, NULL, NULL},
    {"MatMulInteger", "", ST_DT_ALL, st_cpu_qmatmul, NULL, NULL, NULL},
    {"QLinearMatMul", "", ST_DT_ALL, st_cpu_qmatmul, NULL, NULL, NULL},
    {"ConvInteger", "", ST_DT_ALL, st_cpu_qconv, NULL, NULL, NULL},
    {"QLinearConv", "", ST_DT_ALL, st_cpu_qconv, NULL, NULL, NULL},
    {NULL}
};
