/*
 * k_qlinear.c — CPU kernels of the quantized elementwise ops (shape
 * rules: ops/qlinear.c): QLinearAdd, QLinearMul, QLinearSigmoid,
 * QLinearLeakyRelu, QLinearLookup, QLinearGlobalAveragePool and
 * QLinearConcat.
 *
 * Each computes what the QDQ form it stands for computes, operation for
 * operation: DequantizeLinear's (float)(x - zero_point) * scale, the float
 * op, then QuantizeLinear's round_half_even(v / scale) + zero_point,
 * saturated.  So a fused QDQ chain (passes/fuse_qdq.c) gives the same
 * bytes as running its Q and DQ nodes one by one.  The one-byte-in ops
 * (Sigmoid, LeakyRelu, Lookup, and Concat's requantization) go through a
 * 256-entry table built per run.  Rows of outputs are split into fixed
 * tasks, so results do not depend on the thread count.  The walks
 * (broadcast strides, a Concat input's slot) come from
 * ops/lower_qlinear.c, as on the CUDA and OpenCL backends; the
 * parameters are read here per run, since the CPU takes computed ones.
 */
#include <math.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/k_misc.h"
#include "backends/cpu/lut_u8.h"
#include "runtime/pool.h"
#include "backends/common/rows.h"
#include "ops/lower_qlinear.h"
#include "ops/qlinear.h"

#define ROW_TASK_ELEMS 32768

typedef struct qp {
    float scale;
    int32_t zp;
} qp;

static qp qp_of(const st_kctx *k, int s, int z)
{
    qp q = {st_load_f32(k->in[s].dtype, k->in[s].data), 0};
    if (z < k->n_in && k->in[z].data) q.zp = (int32_t)st_load_i64(k->in[z].dtype, k->in[z].data);
    return q;
}

/* QuantizeLinear's rounding of v (already divided by the scale). */
static inline int32_t q_round(float v, int32_t zp, bool u8)
{
    int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    float r = isnan(v) ? 0.0f : rintf(v);
    if (r < (float)(lo - zp)) return lo;
    if (r > (float)(hi - zp)) return hi;
    return (int32_t)r + zp;
}

static inline int32_t ld8(const uint8_t *p, bool u8) { return u8 ? (int32_t)*p : (int32_t)(int8_t)*p; }

/* ---- QLinearAdd, QLinearMul ---- */

typedef struct qb_job {
    const st_kctx *k;
    st_iter it;
    st_row_tasks tasks;       /* long rows in pieces (rows.h) */
    qp a, b, c;
    bool au, cu, mul;
} qb_job;

/* A contiguous row of u8 A, B and C: the same operations, in a loop the
 * compiler vectorizes. */
ST_CLONES static void qb_row_u8(const uint8_t *a, const uint8_t *b, uint8_t *y, int64_t n, qp qa, qp qb, qp qc, bool mul)
{
    float lo = (float)(0 - qc.zp), hi = (float)(255 - qc.zp);
    for (int64_t i = 0; i < n; i++) {
        float fa = (float)((int32_t)a[i] - qa.zp) * qa.scale, fb = (float)((int32_t)b[i] - qb.zp) * qb.scale;
        float r = rintf((mul ? fa * fb : fa + fb) / qc.scale);
        r = r != r ? 0.0f : r < lo ? lo : r > hi ? hi : r;
        y[i] = (uint8_t)((int32_t)r + qc.zp);
    }
}

static void qb_rows(void *arg, int64_t task)
{
    const qb_job *j = arg;
    const st_operand *a = &j->k->in[0], *b = &j->k->in[3], *y = &j->k->out[0];
    st_iter it = j->it;
    int64_t r0, r1, i0, i1;
    st_row_tasks_span(&j->tasks, it.inner, task, &r0, &r1, &i0, &i1);
    int64_t n = i1 - i0;
    st_iter_seek(&it, r0);
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it)) {
        const uint8_t *ap = (const uint8_t *)a->data + it.off[1] + i0 * it.step[1];
        const uint8_t *bp = (const uint8_t *)b->data + it.off[2] + i0 * it.step[2];
        uint8_t *yp = (uint8_t *)y->data + it.off[0] + i0 * it.step[0];
        if (j->au && j->cu && it.step[0] == 1 && it.step[1] == 1 && it.step[2] == 1) {
            qb_row_u8(ap, bp, yp, n, j->a, j->b, j->c, j->mul);
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            float fa = (float)(ld8(ap + i * it.step[1], j->au) - j->a.zp) * j->a.scale;
            float fb = (float)(ld8(bp + i * it.step[2], j->au) - j->b.zp) * j->b.scale;
            float f = j->mul ? fa * fb : fa + fb;
            yp[i * it.step[0]] = (uint8_t)q_round(f / j->c.scale, j->c.zp, j->cu);
        }
    }
}

static st_status cpu_qbinary(const st_kctx *k)
{
    const st_qbinary_state *s = k->state;
    const st_operand *y = &k->out[0];
    qb_job j = {k, {0}, {0}, qp_of(k, 1, 2), qp_of(k, 4, 5), qp_of(k, 6, 7), k->in[0].dtype == ST_U8, y->dtype == ST_U8,
                s->op == ST_QL_MUL};
    st_lql_walk w;
    st_lower_qbinary_walk(k, &w);
    if (!st_iter_init(&j.it, w.rank, w.n, 3, (const int64_t *[]){w.s[ST_LQL_Y], w.s[ST_LQL_A], w.s[ST_LQL_B]})) return ST_OK;
    j.tasks = st_row_tasks_of(st_iter_rows(&j.it), j.it.inner, ROW_TASK_ELEMS);
    st_parallel_for(k->pool, st_row_tasks_count(&j.tasks), qb_rows, &j);
    return ST_OK;
}

/* ---- one byte in, one byte out: a table ---- */

/* Stores the requantization of x's type (params xq) to y's (yq) after f
 * into table[byte]. */
static void build_table(uint8_t *table, bool xu, qp xq, bool yu, qp yq, int kind, float alpha)
{
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        float v = (float)(ld8(&byte, xu) - xq.zp) * xq.scale;
        if (kind == 0) v = 1.0f / (1.0f + expf(-v));
        else if (kind == 1) v = v < 0 ? v * alpha : v;
        table[b] = (uint8_t)q_round(v / yq.scale, yq.zp, yu);
    }
}

typedef struct lut_job {
    const uint8_t *x;
    uint8_t *y;
    const uint8_t *table;
    st_iter it;
    st_row_tasks tasks;
} lut_job;

static void lut_rows(void *arg, int64_t task)
{
    const lut_job *j = arg;
    st_iter it = j->it;
    int64_t r0, r1, i0, i1;
    st_row_tasks_span(&j->tasks, it.inner, task, &r0, &r1, &i0, &i1);
    int64_t n = i1 - i0;
    st_iter_seek(&it, r0);
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it)) {
        const uint8_t *xp = j->x + it.off[1] + i0 * it.step[1];
        uint8_t *yp = j->y + it.off[0] + i0 * it.step[0];
        if (it.step[0] == 1 && it.step[1] == 1) st_lut_u8(j->table, xp, yp, n);
        else
            for (int64_t i = 0; i < n; i++) yp[i * it.step[0]] = j->table[xp[i * it.step[1]]];
    }
}

/* y = table[x] over lowered walk w (ops/lower_qlinear.h): y is the
 * walk's first element (a Concat slot's), x its input's. */
static void map_table(st_pool *pool, const st_lql_walk *w, uint8_t *y, const uint8_t *x, const uint8_t *table)
{
    lut_job j = {x, y, table, {0}, {0}};
    if (!st_iter_init(&j.it, w->rank, w->n, 2, (const int64_t *[]){w->s[ST_LQL_Y], w->s[ST_LQL_A]})) return;
    j.tasks = st_row_tasks_of(st_iter_rows(&j.it), j.it.inner, ROW_TASK_ELEMS);
    st_parallel_for(pool, st_row_tasks_count(&j.tasks), lut_rows, &j);
}

static st_status cpu_qlut(const st_kctx *k)
{
    const st_qlut_state *s = k->state;
    uint8_t table[256];
    const uint8_t *t = table;
    if (s->kind == 2) t = s->has_table ? s->table : (const uint8_t *)k->in[1].data;
    else build_table(table, k->in[0].dtype == ST_U8, qp_of(k, 1, 2), k->out[0].dtype == ST_U8, qp_of(k, 3, 4), s->kind, s->alpha);
    if (s->kind == 2 && !s->has_table && k->in[1].strides[0] != 1) {
        for (int b = 0; b < 256; b++) table[b] = *((const uint8_t *)k->in[1].data + b * k->in[1].strides[0]);
        t = table;
    }
    st_lql_walk w;
    st_lower_qunary_walk(k, &w);
    map_table(k->pool, &w, k->out[0].data, k->in[0].data, t);
    return ST_OK;
}

/* ---- QLinearGlobalAveragePool ---- */

typedef struct gap_job {
    const st_kctx *k;
    bool cl, xu, yu;
    qp x, y;
    int64_t n, c, hw;
} gap_job;

static void gap_task(void *arg, int64_t t)
{
    const gap_job *j = arg;
    const st_operand *x = &j->k->in[0], *y = &j->k->out[0];
    int r = x->rank, cd = j->cl ? r - 1 : 1;
    int64_t n = t / j->c, c = t % j->c;
    int64_t xo = n * x->strides[0] + c * x->strides[cd], yo = n * y->strides[0] + c * y->strides[cd];
    int64_t sum = 0;
    /* the spatial dims in row-major order, through the strides */
    for (int64_t p = 0; p < j->hw; p++) {
        int64_t rem = p, off = 0;
        for (int d = r - 1; d >= 1; d--) {
            if (d == cd) continue;
            off += rem % x->sizes[d] * x->strides[d];
            rem /= x->sizes[d];
        }
        sum += ld8((const uint8_t *)x->data + xo + off, j->xu) - j->x.zp;
    }
    /* the mean of the dequantized values, then QuantizeLinear */
    float mean = (float)sum * j->x.scale / (float)j->hw;
    ((uint8_t *)y->data)[yo] = (uint8_t)q_round(mean / j->y.scale, j->y.zp, j->yu);
}

static st_status cpu_qgap(const st_kctx *k)
{
    const st_qgap_state *s = k->state;
    const st_operand *x = &k->in[0];
    gap_job j = {k, s->channels_last, x->dtype == ST_U8, k->out[0].dtype == ST_U8, qp_of(k, 1, 2), qp_of(k, 3, 4), x->sizes[0], 0, 1};
    j.c = x->sizes[s->channels_last ? x->rank - 1 : 1];
    for (int d = 1; d < x->rank; d++)
        if (d != (s->channels_last ? x->rank - 1 : 1)) j.hw *= x->sizes[d];
    if (j.hw == 0 || j.n * j.c == 0) return ST_OK;
    st_parallel_for(k->pool, j.n * j.c, gap_task, &j);
    return ST_OK;
}

/* ---- QLinearConcat ---- */

static st_status cpu_qconcat(const st_kctx *k)
{
    const st_operand *y = &k->out[0];
    qp yq = qp_of(k, 0, 1);
    bool yu = y->dtype == ST_U8;
    for (int t = 0; t < st_lql_concat_count(k->n_in); t++) {
        int i = 2 + 3 * t;
        const st_operand *x = &k->in[i];
        st_lql_walk w;
        st_lower_qconcat_walk(k, t, &w);
        uint8_t table[256];
        build_table(table, x->dtype == ST_U8, qp_of(k, i + 1, i + 2), yu, yq, 3, 0);
        map_table(k->pool, &w, (uint8_t *)y->data + w.y_off, x->data, table);
    }
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_qlinear[] = {
    {"QLinearAdd", "com.microsoft", ST_DT_ALL, cpu_qbinary, NULL, NULL, NULL},
    {"QLinearMul", "com.microsoft", ST_DT_ALL, cpu_qbinary, NULL, NULL, NULL},
    {"QLinearSigmoid", "com.microsoft", ST_DT_ALL, cpu_qlut, NULL, NULL, NULL},
    {"QLinearLeakyRelu", "com.microsoft", ST_DT_ALL, cpu_qlut, NULL, NULL, NULL},
    {"QLinearLookup", "ai.strata", ST_DT_ALL, cpu_qlut, NULL, NULL, NULL},
    {"QLinearGlobalAveragePool", "com.microsoft", ST_DT_ALL, cpu_qgap, NULL, NULL, NULL},
    {"QLinearConcat", "com.microsoft", ST_DT_ALL, cpu_qconcat, NULL, NULL, NULL},
    {NULL}
};
