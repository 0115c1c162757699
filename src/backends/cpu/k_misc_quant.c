/*
 * k_misc_quant.c — CPU kernels of the quantization ops (shape rules:
 * ops/misc.c): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.
 *
 * Rounding follows ONNX and ONNX Runtime: x / scale in f32, rounded to
 * nearest even, plus the zero point, saturated to the output type.
 * The integer ops run on the int8 GEMM core (gemm_s8.h; the convs through
 * conv_s8.h): exact int32 sums (wrapping, as the ops' int32 outputs do),
 * zero points folded into the epilogue, and for the QLinear ops the
 * requantization with the f32 multiplier a_scale * b_scale / y_scale in
 * the same epilogue.  Tasks are fixed blocks of outputs, each owning its
 * outputs, so results do not depend on the thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/conv_s8.h"
#include "backends/cpu/gemm_s8.h"
#include "backends/cpu/k_misc.h"
#include "backends/cpu/quantize_vec.h"
#include "runtime/pool.h"
#include "ops/misc.h"

#define ROW_TASK_ELEMS 16384

static const st_operand *opt_in(const st_kctx *k, int i) { return i < k->n_in && k->in[i].data ? &k->in[i] : NULL; }

static int64_t lo_of(st_dtype t) { return t == ST_I8 ? -128 : t == ST_I16 ? -32768 : 0; }
static int64_t hi_of(st_dtype t) { return t == ST_I8 ? 127 : t == ST_I16 ? 32767 : t == ST_U16 ? 65535 : 255; }

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

static bool packed(const st_operand *o);

/* Per tensor, packed f32 <-> 8-bit: the same operations as ql_rows in
 * vector loops over fixed chunks (a QDQ model's input and output
 * conversions are this). */
#define QV_CHUNK 65536

typedef struct qv_job {
    const void *x;
    void *y;
    int64_t n;
    float scale;
    int32_t zp;
    bool dequant, s8;
} qv_job;

ST_CLONES static void dq_u8(const uint8_t *x, int64_t n, float scale, int32_t zp, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = (float)((int32_t)x[i] - zp) * scale;
}

ST_CLONES static void dq_s8(const int8_t *x, int64_t n, float scale, int32_t zp, float *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = (float)((int32_t)x[i] - zp) * scale;
}

typedef struct ql_job {
    const st_operand *x, *sc, *zp, *y;   /* zp may be NULL */
    bool dequant;
    st_iter it;
    int64_t rows, per_task;
    bool rows_vec;     /* per tensor, unit inner strides, f32 <-> u8 / s8->f32: vector rows */
    float scale;       /* rows_vec: the one scale and zero point */
    int32_t zero;
} ql_job;

static void ql_rows(void *arg, int64_t task)
{
    const ql_job *j = arg;
    const st_operand *x = j->x, *sc = j->sc, *zp = j->zp, *y = j->y;
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype), es = st_dtype_size(sc->dtype);
    size_t ez = zp ? st_dtype_size(zp->dtype) : 1;
    st_iter it = j->it;
    int64_t r0 = task * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
    st_iter_seek(&it, r0);
    int64_t lo = lo_of(y->dtype), hi = hi_of(y->dtype);
    if (j->rows_vec) {
        /* a QDQ model's last DequantizeLinears write into a concat's slots:
         * strided as a whole, contiguous along each row */
        for (int64_t r = r0; r < r1; r++, st_iter_next(&it)) {
            const char *xp = (const char *)x->data + it.off[1] * (int64_t)ex;
            char *yp = (char *)y->data + it.off[0] * (int64_t)ey;
            if (!j->dequant) st_quantize_u8_f32((const float *)xp, it.inner, j->scale, j->zero, (uint8_t *)yp);
            else if (x->dtype == ST_I8) dq_s8((const int8_t *)xp, it.inner, j->scale, j->zero, (float *)yp);
            else dq_u8((const uint8_t *)xp, it.inner, j->scale, j->zero, (float *)yp);
        }
        return;
    }
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

static void qv_task(void *arg, int64_t t)
{
    const qv_job *j = arg;
    int64_t i0 = t * QV_CHUNK, n = j->n - i0 < QV_CHUNK ? j->n - i0 : QV_CHUNK;
    if (!j->dequant) st_quantize_u8_f32((const float *)j->x + i0, n, j->scale, j->zp, (uint8_t *)j->y + i0);
    else if (j->s8) dq_s8((const int8_t *)j->x + i0, n, j->scale, j->zp, (float *)j->y + i0);
    else dq_u8((const uint8_t *)j->x + i0, n, j->scale, j->zp, (float *)j->y + i0);
}

static bool run_ql_packed(const st_kctx *k, bool dequant)
{
    const st_quant_state *s = k->state;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *zp = opt_in(k, 2), *y = &k->out[0];
    if (s->axis >= 0 || s->block > 0 || !packed(x) || !packed(y)) return false;
    if (dequant ? (x->dtype != ST_U8 && x->dtype != ST_I8) || y->dtype != ST_F32 : x->dtype != ST_F32 || y->dtype != ST_U8)
        return false;
    qv_job j = {x->data, y->data, st_operand_numel(y), st_load_f32(sc->dtype, sc->data),
                zp ? (int32_t)st_load_i64(zp->dtype, zp->data) : 0, dequant, x->dtype == ST_I8};
    st_parallel_for(k->pool, (j.n + QV_CHUNK - 1) / QV_CHUNK, qv_task, &j);
    return true;
}

/* x, y, and the scale and zero point given as strides over y's shape. */
static void run_ql_part(const st_kctx *k, bool dequant, const st_operand *x, const st_operand *sc, const st_operand *zp,
                        const st_operand *y, const int64_t *ss, const int64_t *sz)
{
    ql_job j = {x, sc, zp, y, dequant, {0}, 0, 0, false, 0.0f, 0};
    if (!st_iter_init(&j.it, y->rank, y->sizes, 4, (const int64_t *[]){y->strides, x->strides, ss, sz})) return;
    bool uniform = true;   /* one scale and zero point for the whole part */
    for (int d = 0; d < y->rank; d++) uniform &= ss[d] == 0 && sz[d] == 0;
    if (uniform && j.it.step[0] == 1 && j.it.step[1] == 1 &&
        (dequant ? (x->dtype == ST_U8 || x->dtype == ST_I8) && y->dtype == ST_F32 : x->dtype == ST_F32 && y->dtype == ST_U8)) {
        j.rows_vec = true;
        j.scale = st_load_f32(sc->dtype, sc->data);
        j.zero = zp ? (int32_t)st_load_i64(zp->dtype, zp->data) : 0;
    }
    j.rows = st_iter_rows(&j.it);
    j.per_task = ROW_TASK_ELEMS / (j.it.inner > 0 ? j.it.inner : 1);
    if (j.per_task < 1) j.per_task = 1;
    st_parallel_for(k->pool, (j.rows + j.per_task - 1) / j.per_task, ql_rows, &j);
}

/* A view's elements [lo, lo + n) along axis a. */
static st_operand narrow(const st_operand *o, int a, int64_t lo, int64_t n)
{
    st_operand v = *o;
    v.data = (char *)o->data + lo * o->strides[a] * (int64_t)st_dtype_size(o->dtype);
    v.sizes[a] = n;
    return v;
}

static st_status run_ql(const st_kctx *k, bool dequant)
{
    const st_quant_state *s = k->state;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *zp = opt_in(k, 2), *y = &k->out[0];
    if (run_ql_packed(k, dequant)) return ST_OK;
    int64_t ss[ST_MAX_RANK] = {0}, sz[ST_MAX_RANK] = {0};
    if (s->block > 0) {
        /* blocked (opset 21): block b of the axis reads the scale's and
         * zero point's entry b there and the same index elsewhere, so each
         * block runs as a part whose scale strides are 0 along the axis */
        int a = s->axis;
        for (int d = 0; d < y->rank; d++) {
            ss[d] = d == a ? 0 : sc->strides[d];
            sz[d] = zp && d != a ? zp->strides[d] : 0;
        }
        for (int64_t lo = 0, b = 0; lo < y->sizes[a]; lo += s->block, b++) {
            int64_t n = y->sizes[a] - lo < s->block ? y->sizes[a] - lo : s->block;
            st_operand xp = narrow(x, a, lo, n), yp = narrow(y, a, lo, n), sp = narrow(sc, a, b, 1), zv;
            if (zp) zv = narrow(zp, a, b, 1);
            run_ql_part(k, dequant, &xp, &sp, zp ? &zv : NULL, &yp, ss, sz);
        }
        return ST_OK;
    }
    /* scale and zero point broadcast along every axis but `axis` */
    if (s->axis >= 0) {
        ss[s->axis] = sc->strides[0];
        if (zp) sz[s->axis] = zp->strides[0];
    }
    run_ql_part(k, dequant, x, sc, zp, y, ss, sz);
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

/* Packed f32 in and u8 out: the range and the quantize run as vector
 * loops (quantize_vec.h) over fixed chunks; min and max are exact, so the
 * chunks' ranges combine to the same result in any order. */
#define DQ_CHUNK 65536

typedef struct dqv_job {
    const float *x;
    uint8_t *y;
    int64_t n;
    float *mn, *mx;                   /* per chunk */
    float scale;
    int32_t zp;
} dqv_job;

static void dqv_range(void *arg, int64_t t)
{
    dqv_job *j = arg;
    int64_t i0 = t * DQ_CHUNK, n = j->n - i0 < DQ_CHUNK ? j->n - i0 : DQ_CHUNK;
    j->mn[t] = j->mx[t] = 0.0f;
    st_minmax_f32(j->x + i0, n, &j->mn[t], &j->mx[t]);
}

static void dqv_quantize(void *arg, int64_t t)
{
    dqv_job *j = arg;
    int64_t i0 = t * DQ_CHUNK, n = j->n - i0 < DQ_CHUNK ? j->n - i0 : DQ_CHUNK;
    if (j->scale != 0) st_quantize_u8_f32(j->x + i0, n, j->scale, j->zp, j->y + i0);
    else memset(j->y + i0, j->zp, (size_t)n);
}

static bool packed(const st_operand *o)
{
    int64_t s = 1;
    for (int d = o->rank - 1; d >= 0; d--) {
        if (o->sizes[d] != 1 && o->strides[d] != s) return false;
        s *= o->sizes[d];
    }
    return true;
}

st_status st_cpu_dynamic_quantize(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    size_t ex = st_dtype_size(x->dtype);
    if (x->dtype == ST_F32 && packed(x) && packed(y)) {
        dqv_job v = {x->data, y->data, st_operand_numel(x), NULL, NULL, 0, 0};
        int64_t chunks = (v.n + DQ_CHUNK - 1) / DQ_CHUNK;
        v.mn = malloc((size_t)(2 * chunks + 1) * sizeof *v.mn);
        if (!v.mn) return st_error(ST_ERR_NOMEM, "out of memory");
        v.mx = v.mn + chunks;
        st_parallel_for(k->pool, chunks, dqv_range, &v);
        float mn = 0, mx = 0;
        for (int64_t t = 0; t < chunks; t++) {
            if (v.mn[t] < mn) mn = v.mn[t];
            if (v.mx[t] > mx) mx = v.mx[t];
        }
        v.scale = (mx - mn) / 255.0f;
        if (v.scale != 0) v.zp = (int32_t)quantize((0.0f - mn) / v.scale, 0, 0, 255);
        if (k->n_out > 1 && k->out[1].data) st_store_f32(k->out[1].dtype, k->out[1].data, v.scale);
        if (k->n_out > 2 && k->out[2].data) *(uint8_t *)k->out[2].data = (uint8_t)v.zp;
        st_parallel_for(k->pool, chunks, dqv_quantize, &v);
        free(v.mn);
        return ST_OK;
    }
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

/* The parameter's n values for batch bidx, as int32 zero points or f32
 * scales; returns false (and fills one value) when it is one value for
 * all. */
static bool qparam_ints(const qparam *p, const int64_t *bidx, int nb, int64_t n, int32_t *dst)
{
    bool per = p->o && (p->step || st_operand_numel(p->o) != 1);
    if (!p->o) dst[0] = 0;
    for (int64_t i = 0; p->o && i < (per ? n : 1); i++)
        dst[i] = (int32_t)st_load_i64(p->o->dtype, st_misc_at(p->o, qparam_off(p, bidx, nb, i)));
    return per;
}

static bool qparam_floats(const qparam *p, const int64_t *bidx, int nb, int64_t n, float *dst)
{
    bool per = p->step || st_operand_numel(p->o) != 1;
    for (int64_t i = 0; i < (per ? n : 1); i++) dst[i] = st_load_f32(p->o->dtype, st_misc_at(p->o, qparam_off(p, bidx, nb, i)));
    return per;
}

st_status st_cpu_qmatmul(const st_kctx *k)
{
    const st_qmatmul_state *s = k->state;
    const st_operand *a = &k->in[0], *b = &k->in[s->qlinear ? 3 : 1], *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    bool a_vec = a->rank == 1, b_vec = b->rank == 1;
    int64_t m = a_vec ? 1 : a->sizes[a->rank - 2], kk = a->sizes[a->rank - 1], n = b_vec ? 1 : b->sizes[b->rank - 1];
    int nb = y->rank - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
    int abr = a->rank - (a_vec ? 1 : 2), bbr = b->rank - (b_vec ? 1 : 2);
    int64_t sa[ST_MAX_RANK], sb[ST_MAX_RANK];
    bool b_batched = false;
    for (int d = 0; d < nb; d++) {
        int ka = d - (nb - abr), kb = d - (nb - bbr);
        sa[d] = ka < 0 || a->sizes[ka] == 1 ? 0 : a->strides[ka];
        sb[d] = kb < 0 || b->sizes[kb] == 1 ? 0 : b->strides[kb];
        if (sb[d]) b_batched = true;
    }
    qparam azp, bzp, as, bs;
    memset(&as, 0, sizeof as);
    memset(&bs, 0, sizeof bs);
    if (s->qlinear) {
        qparam_init(&as, &k->in[1], a, true, nb, a_vec);
        qparam_init(&azp, opt_in(k, 2), a, true, nb, a_vec);
        qparam_init(&bs, &k->in[4], b, false, nb, b_vec);
        qparam_init(&bzp, opt_in(k, 5), b, false, nb, b_vec);
    } else {
        qparam_init(&azp, opt_in(k, 2), a, true, nb, a_vec);
        qparam_init(&bzp, opt_in(k, 3), b, false, nb, b_vec);
    }
    int64_t b_rs = b_vec ? b->strides[0] : b->strides[b->rank - 2], b_cs = b_vec ? 0 : b->strides[b->rank - 1];
    int64_t a_rs = a_vec ? 0 : a->strides[a->rank - 2], a_cs = a->strides[a->rank - 1];
    int64_t y_rs = a_vec ? 0 : y->strides[y->rank - (b_vec ? 1 : 2)], y_cs = b_vec ? 0 : y->strides[y->rank - 1];
    /* QLinearMatMul's input 8, an int32 bias per column: only the QDQ
     * fusion of a Gemm makes one (passes/fuse_qdq.c) */
    const st_operand *bias = s->qlinear ? opt_in(k, 8) : NULL;
    int32_t *ints = malloc((size_t)(m + 2 * n) * sizeof *ints);
    float *fl = malloc((size_t)(2 * (m + n)) * sizeof *fl);
    if (!ints || !fl) {
        free(ints);
        free(fl);
        return st_error(ST_ERR_NOMEM, "out of memory");
    }
    int32_t *za = ints, *zb = ints + m, *bi = ints + m + n;
    for (int64_t j = 0; bias && j < n; j++) bi[j] = (int32_t)st_load_i64(bias->dtype, st_misc_at(bias, j * bias->strides[bias->rank - 1]));
    float *asc = fl, *bsc = fl + m, *rsc = bsc + n, *csc = rsc + m;
    st_s8_packed *bp = NULL;
    st_status st = ST_OK;
    int64_t batches = st_numel(nb, y->sizes);
    for (int64_t batch = 0; batch < batches && st == ST_OK; batch++) {
        int64_t bidx[ST_MAX_RANK], rem = batch, ao = 0, bo = 0, yo = 0;
        for (int d = nb - 1; d >= 0; d--) {
            bidx[d] = rem % y->sizes[d];
            rem /= y->sizes[d];
            ao += bidx[d] * sa[d];
            bo += bidx[d] * sb[d];
            yo += bidx[d] * y->strides[d];
        }
        /* B packed once, or per batch when its batch dims are not broadcast */
        if (!bp || b_batched) {
            st_gemm_s8_packed_free(bp);
            bp = st_gemm_s8_pack_b(st_misc_at(b, bo), b->dtype, kk, n, b_rs, b_cs);
            if (!bp) {
                st = st_error(ST_ERR_NOMEM, "out of memory");
                break;
            }
        }
        st_s8_gemm g = {0};
        g.m = m, g.n = n, g.k = kk;
        g.a = st_misc_at(a, ao), g.a_type = a->dtype, g.a_rs = a_rs, g.a_cs = a_cs;
        g.b = bp;
        g.a_zp = za, g.a_zp_step = qparam_ints(&azp, bidx, nb, m, za);
        g.b_zp = zb, g.b_zp_step = qparam_ints(&bzp, bidx, nb, n, zb);
        g.out = ST_S8_OUT_I32;
        if (s->qlinear) {
            /* the multiplier a_scale * b_scale / y_scale, rounded as one
             * expression per element; precomputed along the one axis that
             * varies */
            float ys = st_load_f32(k->in[6].dtype, k->in[6].data);
            bool ap = qparam_floats(&as, bidx, nb, m, asc), bpr = qparam_floats(&bs, bidx, nb, n, bsc);
            if (ap && bpr) {
                g.row_scale = asc, g.col_scale = bsc, g.div = ys;
            } else if (ap) {
                for (int64_t i = 0; i < m; i++) rsc[i] = asc[i] * bsc[0] / ys;
                g.row_scale = rsc;
            } else {
                for (int64_t j = 0; j < n; j++) csc[j] = asc[0] * bsc[bpr ? j : 0] / ys;
                g.col_scale = csc;
            }
            g.out = y->dtype == ST_U8 ? ST_S8_OUT_U8 : ST_S8_OUT_S8;
            g.zero_point = opt_in(k, 7) ? (int32_t)st_load_i64(k->in[7].dtype, k->in[7].data) : 0;
            g.col_int = bias ? bi : NULL;
        }
        g.c = st_misc_at(y, yo), g.c_rs = y_rs, g.c_cs = y_cs;
        st = st_gemm_s8_run(k->pool, &g);
    }
    st_gemm_s8_packed_free(bp);
    free(ints);
    free(fl);
    return st;
}

/* ---- ConvInteger, QLinearConv ---- */

st_status st_cpu_qconv(const st_kctx *k)
{
    const st_qconv_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    const st_operand *w, *xzp, *wzp, *bias = NULL;
    if (s->qlinear) {
        xzp = opt_in(k, 2);
        w = &k->in[3];
        wzp = opt_in(k, 5);
        bias = opt_in(k, 8);
    } else {
        w = &k->in[1];
        xzp = opt_in(k, 2);
        wzp = opt_in(k, 3);
    }
    st_conv_s8_window win;
    memset(&win, 0, sizeof win);
    win.nsp = s->nsp;
    win.group = s->group;
    for (int i = 0; i < s->nsp; i++) {
        win.k[i] = s->k[i];
        win.s[i] = s->s[i];
        win.d[i] = s->d[i];
        win.pb[i] = s->pb[i];
    }
    int64_t M = y->sizes[1];
    /* a constant W was packed once, by qconv_prepare */
    st_s8_packed *wp = k->priv ? k->priv : st_conv_s8_pack(w, &win);
    int32_t *ints = malloc((size_t)(2 * M) * sizeof *ints);
    float *scale = malloc((size_t)M * sizeof *scale);
    if (!wp || !ints || !scale) {
        if (wp != k->priv) st_gemm_s8_packed_free(wp);
        free(ints);
        free(scale);
        return st_error(ST_ERR_NOMEM, "out of memory");
    }
    st_conv_s8_args a;
    memset(&a, 0, sizeof a);
    a.win = &win;
    a.x = x;
    a.x_zp = xzp ? (int32_t)st_load_i64(xzp->dtype, xzp->data) : 0;
    a.w = wp;
    if (wzp) {
        bool per = st_operand_numel(wzp) != 1;
        for (int64_t m = 0; m < (per ? M : 1); m++) ints[m] = (int32_t)st_load_i64(wzp->dtype, st_misc_at(wzp, m * wzp->strides[0]));
        a.w_zp = ints;
        a.w_zp_step = per;
    }
    a.out = ST_S8_OUT_I32;
    a.y = y;
    if (s->qlinear) {
        const st_operand *xs = &k->in[1], *ws = &k->in[4], *ys = &k->in[6];
        bool per = st_operand_numel(ws) != 1;
        /* x_scale * w_scale / y_scale per output channel, as one expression */
        for (int64_t m = 0; m < M; m++) {
            float wsc = st_load_f32(ws->dtype, st_misc_at(ws, per ? m * ws->strides[0] : 0));
            scale[m] = st_load_f32(xs->dtype, xs->data) * wsc / st_load_f32(ys->dtype, ys->data);
        }
        a.scale = scale;
        st_dtype qt = s->q_type ? (st_dtype)s->q_type : y->dtype;
        a.out = qt == ST_U8 ? ST_S8_OUT_U8 : ST_S8_OUT_S8;
        a.y_zp = opt_in(k, 7) ? (int32_t)st_load_i64(k->in[7].dtype, k->in[7].data) : 0;
        a.lut = s->has_lut ? s->lut : NULL;
        if (bias) {
            for (int64_t m = 0; m < M; m++) ints[M + m] = (int32_t)st_load_i64(bias->dtype, st_misc_at(bias, m * bias->strides[0]));
            a.bias = ints + M;
        }
    }
    st_status st = st_conv_s8(k->pool, &a);
    if (wp != k->priv) st_gemm_s8_packed_free(wp);
    free(ints);
    free(scale);
    return st;
}

/* A constant W is packed once per command, when the plan is bound. */
static st_status qconv_prepare(const st_knode *n, void **priv)
{
    const st_qconv_state *s = n->state;
    int wi = s->qlinear ? 3 : 1;
    *priv = NULL;
    if (!n->data[wi]) return ST_OK;
    st_conv_s8_window win;
    memset(&win, 0, sizeof win);
    win.nsp = s->nsp;
    win.group = s->group;
    for (int i = 0; i < s->nsp; i++) {
        win.k[i] = s->k[i];
        win.s[i] = s->s[i];
        win.d[i] = s->d[i];
        win.pb[i] = s->pb[i];
    }
    st_operand w = st_operand_of(&n->views[wi], (void *)n->data[wi]);
    *priv = st_conv_s8_pack(&w, &win);
    if (!*priv) return st_error(ST_ERR_NOMEM, "node '%s': out of memory packing the int8 weights", n->node->name);
    return ST_OK;
}

static void qconv_release(void *priv) { st_gemm_s8_packed_free(priv); }

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_misc_quant[] = {
    {"QuantizeLinear", "", ST_DT_ALL, st_cpu_quantize, NULL, NULL, NULL},
    {"DequantizeLinear", "", ST_DT_ALL, st_cpu_dequantize, NULL, NULL, NULL},
    {"DynamicQuantizeLinear", "", ST_DT_ALL, st_cpu_dynamic_quantize, NULL, NULL, NULL},
    {"MatMulInteger", "", ST_DT_ALL, st_cpu_qmatmul, NULL, NULL, NULL},
    {"QLinearMatMul", "", ST_DT_ALL, st_cpu_qmatmul, NULL, NULL, NULL},
    {"ConvInteger", "", ST_DT_ALL, st_cpu_qconv, NULL, qconv_prepare, qconv_release},
    {"QLinearConv", "", ST_DT_ALL, st_cpu_qconv, NULL, qconv_prepare, qconv_release},
    {NULL}
};
