/*
 * k_qlinear.c — host side of the quantized elementwise ops on OpenCL
 * (qint.cl's st_qlut and st_qbinary): QLinearLookup, QLinearConcat,
 * QLinearAdd and QLinearMul, the ops a QDQ model's elementwise groups
 * fuse into (passes/fuse_qdq.c), bit-identical with the CPU's
 * backends/cpu/k_qlinear.c.
 *
 * Why on the device: without them a fused QDQ model bounced its int8
 * tensors to the CPU for each of these ops, so the OpenCL backend did not
 * declare ST_CAP_QDQ and ran QDQ models unfused, as f32 between Q/DQ
 * pairs (whose float convs round boundary values differently from the
 * integer ones).
 *
 * Scales and zero points are read on the host once, when the command is
 * prepared: the fusion only makes these ops from constant ones, and an
 * exported model's are initializers too; accepts refuses others (they run
 * on the CPU).  The tables (the lookup's own, a Concat input's
 * requantization) are built there with the CPU's arithmetic and go to
 * the kernel by value.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/qlinear.h"

/* Same layout as st_qtab in qint.cl. */
typedef struct st_cl_qtab {
    cl_uchar t[256];
} st_cl_qtab;

/* Same layout as st_qbin_p in qint.cl. */
typedef struct st_cl_qbin_p {
    cl_float sa, sb, sc;
    cl_int za, zb, zc;
    cl_int a_signed, c_signed, mul, pad;
} st_cl_qbin_p;
_Static_assert(sizeof(st_cl_qbin_p) == 40, "st_cl_qbin_p has no padding");

/* What prepare read: the binary ops' parameters, or the tables (the
 * lookup's one, one per Concat input). */
typedef struct ql_priv {
    st_cl_qbin_p bin;
    int n_tab;
    st_cl_qtab tab[];
} ql_priv;

static bool is8(st_dtype t) { return t == ST_U8 || t == ST_I8; }

static bool present(const st_knode *n, int i) { return i < n->n_in && n->views[i].rank >= 0; }

/* Input i, when present, is a constant of the type it must have (f32
 * scale, 8-bit zero point). */
static bool const_param(const st_knode *n, int i, bool scale, char *why, size_t len)
{
    if (!present(n, i)) {
        if (scale) return st_kernel_refuse(why, len, "no scale at input %d", i);
        return true;
    }
    if (!n->data[i]) return st_kernel_refuse(why, len, "a scale or zero point (input %d) computed at run time", i);
    st_dtype t = n->views[i].dtype;
    if (scale ? t != ST_F32 : !is8(t)) return st_kernel_refuse(why, len, "a %s scale or zero point (input %d)", st_dtype_name(t), i);
    return true;
}

static float scale_of(const st_knode *n, int i) { return st_load_f32(n->views[i].dtype, n->data[i]); }
static int32_t zp_of(const st_knode *n, int i)
{
    return present(n, i) && n->data[i] ? (int32_t)st_load_i64(n->views[i].dtype, n->data[i]) : 0;
}

/* Every 8-bit operand (all but the parameters) is 8-bit. */
static bool bytes_only(const st_knode *n, const bool *param, char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++)
        if (n->views[i].rank >= 0 && !(i < n->n_in && param[i]) && !is8(n->views[i].dtype))
            return st_kernel_refuse(why, len, "a %s operand %d", st_dtype_name(n->views[i].dtype), i);
    return true;
}

static bool accepts_qbinary(const st_knode *n, char *why, size_t len)
{
    bool param[8] = {false, true, true, false, true, true, true, true};
    if (n->n_in != 8 && n->n_in != 7) return st_kernel_refuse(why, len, "%d inputs", n->n_in);
    for (int i = 1; i < 8; i++)
        if (param[i] && !const_param(n, i, i == 1 || i == 4 || i == 6, why, len)) return false;
    return bytes_only(n, param, why, len);
}

static bool accepts_qlookup(const st_knode *n, char *why, size_t len)
{
    const st_qlut_state *s = n->state;
    if (s->kind != 2) return st_kernel_refuse(why, len, "QLinearSigmoid / QLinearLeakyRelu");
    if (!s->has_table && !(present(n, 1) && n->data[1])) return st_kernel_refuse(why, len, "a table computed at run time");
    bool param[2] = {false, true};
    return bytes_only(n, param, why, len);
}

static bool accepts_qconcat(const st_knode *n, char *why, size_t len)
{
    bool param[n->n_in > 0 ? n->n_in : 1];
    for (int i = 0; i < n->n_in; i++) {
        param[i] = i < 2 || (i - 2) % 3 != 0;
        if (param[i] && !const_param(n, i, i == 0 || (i >= 2 && (i - 2) % 3 == 1), why, len)) return false;
    }
    return bytes_only(n, param, why, len);
}

/* QuantizeLinear's rounding, as the CPU's q_round. */
static uint8_t q_round(float v, int32_t zp, bool u8)
{
    int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    float r = isnan(v) ? 0.0f : rintf(v);
    if (r < (float)(lo - zp)) return (uint8_t)lo;
    if (r > (float)(hi - zp)) return (uint8_t)hi;
    return (uint8_t)((int32_t)r + zp);
}

static st_status prepare(const st_knode *n, void **priv)
{
    const char *op = n->op->name;
    bool concat = strcmp(op, "QLinearConcat") == 0, lookup = strcmp(op, "QLinearLookup") == 0;
    int n_tab = concat ? (n->n_in - 2) / 3 : lookup ? 1 : 0;
    ql_priv *q = calloc(1, sizeof *q + (size_t)n_tab * sizeof(st_cl_qtab));
    if (!q) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for %s's parameters", n->node->name, op);
    q->n_tab = n_tab;
    if (lookup) {
        const st_qlut_state *s = n->state;
        for (int b = 0; b < 256; b++)
            q->tab[0].t[b] = s->has_table ? s->table[b] : ((const uint8_t *)n->data[1])[b * n->views[1].strides[0]];
    } else if (concat) {
        bool yu = n->views[n->n_in].dtype == ST_U8;
        float ys = scale_of(n, 0);
        int32_t yz = zp_of(n, 1);
        for (int k = 0; k < n_tab; k++) {
            int x = 2 + 3 * k;
            bool xu = n->views[x].dtype == ST_U8;
            float xs = scale_of(n, x + 1);
            int32_t xz = zp_of(n, x + 2);
            for (int b = 0; b < 256; b++) {
                int32_t v = xu ? b : (int32_t)(int8_t)(uint8_t)b;
                q->tab[k].t[b] = q_round((float)(v - xz) * xs / ys, yz, yu);
            }
        }
    } else {
        const st_qbinary_state *s = n->state;
        q->bin.sa = scale_of(n, 1);
        q->bin.za = zp_of(n, 2);
        q->bin.sb = scale_of(n, 4);
        q->bin.zb = zp_of(n, 5);
        q->bin.sc = scale_of(n, 6);
        q->bin.zc = zp_of(n, 7);
        q->bin.a_signed = n->views[0].dtype == ST_I8;
        q->bin.c_signed = n->views[n->n_in].dtype == ST_I8;
        q->bin.mul = s->op == ST_QL_MUL;
    }
    *priv = q;
    return ST_OK;
}

static void release(void *priv) { free(priv); }

/* y = tab[x] over y's shape; chain: after this command's earlier work. */
static st_status lut(st_cl_ctx *c, const st_view *y, const st_view *x, const st_cl_qtab *tab)
{
    if (st_view_numel(y) == 0) return ST_OK;
    st_cl_td td[2];
    ST_TRY(st_cl_td_of(y, &td[0]));
    ST_TRY(st_cl_td_broadcast(x, y, &td[1]));
    st_cl_td_coalesce(td, 2);
    size_t global[2];
    st_cl_grid(td, 2, global);
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_qlut, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(xm), ST_CLA(td[1]), ST_CLA(*tab)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_qlut, 5, args));
    /* a Concat's inputs fill disjoint slots: not chained */
    return st_cl_run(c, kern, ST_CLK_qlut, 2, global, NULL, false);
}

static st_status st_cl_qlookup(const st_kctx *k)
{
    const ql_priv *q = k->priv;
    return lut(k->dev, &k->views[k->n_in], &k->views[0], &q->tab[0]);
}

static st_status st_cl_qconcat(const st_kctx *k)
{
    const st_qconcat_state *s = k->state;
    const ql_priv *q = k->priv;
    const st_view *y = &k->views[k->n_in];
    int64_t at = 0;
    for (int t = 0; t < q->n_tab; t++) {
        const st_view *x = &k->views[2 + 3 * t];
        st_view slot = *y;
        slot.sizes[s->axis] = x->sizes[s->axis];
        slot.offset = y->offset + at * y->strides[s->axis] * (int64_t)st_dtype_size(y->dtype);
        at += x->sizes[s->axis];
        ST_TRY(lut(k->dev, &slot, x, &q->tab[t]));
    }
    return ST_OK;
}

static st_status st_cl_qbinary(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const ql_priv *q = k->priv;
    const st_view *y = &k->views[k->n_in], *a = &k->views[0], *b = &k->views[3];
    if (st_view_numel(y) == 0) return ST_OK;
    st_cl_td td[3];
    ST_TRY(st_cl_td_of(y, &td[0]));
    ST_TRY(st_cl_td_broadcast(a, y, &td[1]));
    ST_TRY(st_cl_td_broadcast(b, y, &td[2]));
    st_cl_td_coalesce(td, 3);
    size_t global[2];
    st_cl_grid(td, 3, global);
    cl_mem ym = st_cl_mem(y), am = st_cl_mem(a), bm = st_cl_mem(b);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_qbinary, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(am), ST_CLA(td[1]), ST_CLA(bm), ST_CLA(td[2]), ST_CLA(q->bin)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_qbinary, 7, args));
    return st_cl_run(c, kern, ST_CLK_qbinary, 2, global, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

const st_kernel st_cl_k_qlinear[] = {
    {"QLinearAdd", "com.microsoft", ST_DT_ALL, st_cl_qbinary, accepts_qbinary, prepare, release},
    {"QLinearMul", "com.microsoft", ST_DT_ALL, st_cl_qbinary, accepts_qbinary, prepare, release},
    {"QLinearLookup", "ai.strata", ST_DT_ALL, st_cl_qlookup, accepts_qlookup, prepare, release},
    {"QLinearConcat", "com.microsoft", ST_DT_ALL, st_cl_qconcat, accepts_qconcat, prepare, release},
    {NULL}
};
