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
 * the kernel by value.  Those checks, parameters and tables, and each
 * launch's walk (broadcast strides, a Concat input's slot), are the CUDA
 * backend's too: ops/lower_qlinear.c computes them once.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/lower_qlinear.h"

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

static st_status prepare(const st_knode *n, void **priv)
{
    const char *op = n->op->name;
    bool concat = strcmp(op, "QLinearConcat") == 0, lookup = strcmp(op, "QLinearLookup") == 0;
    int n_tab = concat ? st_lql_concat_count(n->n_in) : lookup ? 1 : 0;
    ql_priv *q = calloc(1, sizeof *q + (size_t)n_tab * sizeof(st_cl_qtab));
    if (!q) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for %s's parameters", n->node->name, op);
    q->n_tab = n_tab;
    if (lookup) {
        st_lower_qlookup_table(n, q->tab[0].t);
    } else if (concat) {
        for (int t = 0; t < n_tab; t++) st_lower_qconcat_table(n, t, q->tab[t].t);
    } else {
        st_lql_binary b;
        st_lower_qbinary_params(n, &b);
        q->bin.sa = b.sa;
        q->bin.za = b.za;
        q->bin.sb = b.sb;
        q->bin.zb = b.zb;
        q->bin.sc = b.sc;
        q->bin.zc = b.zc;
        q->bin.a_signed = b.a_signed;
        q->bin.c_signed = b.c_signed;
        q->bin.mul = b.mul;
    }
    *priv = q;
    return ST_OK;
}

static void release(void *priv) { free(priv); }

/* Operand k of lowered walk w (ops/lower_qlinear.h) as a descriptor: its
 * view's buffer offset and dtype (and element alignment, checked), the
 * walk's sizes and strides, y shifted to the walk's slot. */
static st_status td_of(const st_kctx *k, const st_lql_walk *w, int op, st_cl_td *td)
{
    ST_TRY(st_cl_td_of(&k->views[w->operand[op]], td));
    if (op == ST_LQL_Y) td->off += w->y_off;
    td->rank = w->rank;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        td->n[d] = d < w->rank ? w->n[d] : 1;
        td->s[d] = d < w->rank ? w->s[op][d] : 0;
    }
    return ST_OK;
}

/* y = tab[x] over walk w; chain: after this command's earlier work. */
static st_status lut(const st_kctx *k, const st_lql_walk *w, const st_cl_qtab *tab)
{
    st_cl_ctx *c = k->dev;
    if (w->count == 0) return ST_OK;
    st_cl_td td[2];
    ST_TRY(td_of(k, w, ST_LQL_Y, &td[0]));
    ST_TRY(td_of(k, w, ST_LQL_A, &td[1]));
    st_cl_td_coalesce(td, 2);
    size_t global[2];
    st_cl_grid(td, 2, global);
    cl_mem ym = st_cl_mem(&k->views[w->operand[ST_LQL_Y]]), xm = st_cl_mem(&k->views[w->operand[ST_LQL_A]]);
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
    st_lql_walk w;
    st_lower_qunary_walk(k, &w);
    return lut(k, &w, &q->tab[0]);
}

static st_status st_cl_qconcat(const st_kctx *k)
{
    const ql_priv *q = k->priv;
    for (int t = 0; t < q->n_tab; t++) {
        st_lql_walk w;
        st_lower_qconcat_walk(k, t, &w);
        ST_TRY(lut(k, &w, &q->tab[t]));
    }
    return ST_OK;
}

static st_status st_cl_qbinary(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const ql_priv *q = k->priv;
    st_lql_walk w;
    st_lower_qbinary_walk(k, &w);
    if (w.count == 0) return ST_OK;
    st_cl_td td[3];
    for (int i = 0; i < 3; i++) ST_TRY(td_of(k, &w, i, &td[i]));
    st_cl_td_coalesce(td, 3);
    size_t global[2];
    st_cl_grid(td, 3, global);
    cl_mem ym = st_cl_mem(&k->views[w.operand[ST_LQL_Y]]), am = st_cl_mem(&k->views[w.operand[ST_LQL_A]]),
           bm = st_cl_mem(&k->views[w.operand[ST_LQL_B]]);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_qbinary, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(am), ST_CLA(td[1]), ST_CLA(bm), ST_CLA(td[2]), ST_CLA(q->bin)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_qbinary, 7, args));
    return st_cl_run(c, kern, ST_CLK_qbinary, 2, global, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

const st_kernel st_cl_k_qlinear[] = {
    {"QLinearAdd", "com.microsoft", ST_DT_ALL, st_cl_qbinary, st_lql_accepts_binary, prepare, release},
    {"QLinearMul", "com.microsoft", ST_DT_ALL, st_cl_qbinary, st_lql_accepts_binary, prepare, release},
    {"QLinearLookup", "ai.strata", ST_DT_ALL, st_cl_qlookup, st_lql_accepts_lookup, prepare, release},
    {"QLinearConcat", "com.microsoft", ST_DT_ALL, st_cl_qconcat, st_lql_accepts_concat, prepare, release},
    {NULL}
};
