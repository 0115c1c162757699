/*
 * lower_qint.c — MatMulInteger / QLinearMatMul and ConvInteger /
 * QLinearConv lowered to plain numbers for the device backends, and the
 * checks their accepts() share (ops/lower_qint.h says why).
 */
#include <string.h>

#include "ops/lower_qint.h"
#include "ops/misc.h"

static bool is8(st_dtype t) { return t == ST_U8 || t == ST_I8; }
static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* input i when the node has it (an omitted optional input has no data) */
static int opt_in(const st_kctx *k, int i) { return i < k->n_in && k->in[i].data ? i : -1; }

static const st_operand *operand(const st_kctx *k, int i)
{
    return i < 0 ? NULL : i < k->n_in ? &k->in[i] : &k->out[i - k->n_in];
}

int st_lq_matmul_batch_dims(int a_rank, int b_rank, int y_rank)
{
    return y_rank - (a_rank == 1 ? 0 : 1) - (b_rank == 1 ? 0 : 1);
}

/* A matrix's batch strides over the output's nb batch dims (right-aligned,
 * 0 where broadcast). */
static void batch_strides(const st_operand *mat, int nb, int64_t *bs)
{
    int br = mat->rank > 1 ? mat->rank - 2 : 0;
    for (int d = 0; d < nb; d++) {
        int q = d - (nb - br);
        bs[d] = q < 0 || mat->sizes[q] == 1 ? 0 : mat->strides[q];
    }
}

/* A per-row (is_a) or per-column parameter (operand oi) of matrix mat, as
 * the CPU's qparam_init reads it: one value, a 1-D one per row / column,
 * or mat's shape with a unit column / row. */
static void qmm_param(const st_kctx *k, st_lq_mm_op *p, int oi, const st_operand *mat, bool is_a, int nb)
{
    memset(p, 0, sizeof *p);
    p->operand = oi;
    const st_operand *o = operand(k, oi);
    if (!o) return;
    p->dt = o->dtype;
    if (st_operand_numel(o) == 1) return;
    int64_t step;
    if (o->rank == 1) {
        step = mat->rank == 1 ? 0 : o->strides[0];
    } else {
        step = o->strides[o->rank - (is_a ? 2 : 1)];
        int br = mat->rank - 2;
        for (int d = 0; d < nb; d++) {
            int q = d - (nb - br);
            p->bs[d] = q < 0 || mat->sizes[q] == 1 ? 0 : o->strides[q];
        }
    }
    if (is_a) p->rs = step;
    else p->cs = step;
}

void st_lower_qmatmul(const st_kctx *k, st_lq_matmul *p)
{
    const st_qmatmul_state *s = k->state;
    int ai = 0, bi = s->qlinear ? 3 : 1;
    const st_operand *a = &k->in[ai], *b = &k->in[bi], *y = &k->out[0];
    bool a_vec = a->rank == 1, b_vec = b->rank == 1;
    memset(p, 0, sizeof *p);
    p->nb = st_lq_matmul_batch_dims(a->rank, b->rank, y->rank);
    p->m = a_vec ? 1 : a->sizes[a->rank - 2];
    p->k = a->sizes[a->rank - 1];
    p->n = b_vec ? 1 : b->sizes[b->rank - 1];
    p->batches = 1;
    for (int d = 0; d < p->nb; d++) p->batches *= p->bn[d] = y->sizes[d];
    st_lq_mm_op *oy = &p->o[ST_LQ_Y], *oa = &p->o[ST_LQ_A], *ob = &p->o[ST_LQ_B];
    oy->operand = k->n_in;
    oy->dt = y->dtype;
    oy->rs = a_vec ? 0 : y->strides[y->rank - (b_vec ? 1 : 2)];
    oy->cs = b_vec ? 0 : y->strides[y->rank - 1];
    for (int d = 0; d < p->nb; d++) oy->bs[d] = y->strides[d];
    oa->operand = ai;
    oa->dt = a->dtype;
    oa->rs = a_vec ? 0 : a->strides[a->rank - 2];
    oa->cs = a->strides[a->rank - 1];
    batch_strides(a, p->nb, oa->bs);
    ob->operand = bi;
    ob->dt = b->dtype;
    ob->rs = b_vec ? b->strides[0] : b->strides[b->rank - 2];
    ob->cs = b_vec ? 0 : b->strides[b->rank - 1];
    batch_strides(b, p->nb, ob->bs);
    int az = opt_in(k, 2), bz = opt_in(k, s->qlinear ? 5 : 3), as = -1, bs = -1, ys = -1, yz = -1, bias = -1;
    if (s->qlinear) {
        as = 1;
        bs = 4;
        ys = 6;
        yz = opt_in(k, 7);
        bias = opt_in(k, 8);
    }
    qmm_param(k, &p->o[ST_LQ_AZ], az, a, true, p->nb);
    qmm_param(k, &p->o[ST_LQ_BZ], bz, b, false, p->nb);
    qmm_param(k, &p->o[ST_LQ_AS], as, a, true, p->nb);
    qmm_param(k, &p->o[ST_LQ_BS], bs, b, false, p->nb);
    /* y's scale and zero point are one value each */
    qmm_param(k, &p->o[ST_LQ_YS], ys, a, true, 0);
    qmm_param(k, &p->o[ST_LQ_YZ], yz, a, true, 0);
    /* the bias: one int32 per column, [n] or [1, n] */
    st_lq_mm_op *ob9 = &p->o[ST_LQ_BIAS];
    ob9->operand = bias;
    if (bias >= 0) {
        const st_operand *v = &k->in[bias];
        ob9->dt = v->dtype;
        ob9->cs = v->strides[v->rank - 1];
    }
}

/* An N, C, spatial... operand's strides, the spatial ones right-aligned
 * to 3 (0 on the padding dims). */
static void win_strides(const st_operand *v, int nsp, int64_t *st)
{
    st[0] = v->strides[0];
    st[1] = v->strides[1];
    for (int i = 0; i < 3; i++) st[2 + i] = i < 3 - nsp ? 0 : v->strides[2 + i - (3 - nsp)];
}

/* A scalar or per-channel parameter: its dtype and step (0 when one
 * value). */
static st_lq_param chan_param(const st_kctx *k, int oi)
{
    st_lq_param p = {oi, ST_UNDEFINED, 0};
    const st_operand *v = operand(k, oi);
    if (!v) return p;
    p.dt = v->dtype;
    p.step = st_operand_numel(v) != 1 ? v->strides[0] : 0;
    return p;
}

void st_lower_qconv(const st_kctx *k, st_lq_conv *p)
{
    const st_qconv_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    memset(p, 0, sizeof *p);
    p->x = 0;
    p->y = k->n_in;
    int xz = opt_in(k, 2), wz, bias = -1, xs = -1, ws = -1, ys = -1, yz = -1;
    if (s->qlinear) {
        xs = 1;
        p->w = 3;
        ws = 4;
        wz = opt_in(k, 5);
        ys = 6;
        yz = opt_in(k, 7);
        bias = opt_in(k, 8);
    } else {
        p->w = 1;
        wz = opt_in(k, 3);
    }
    const st_operand *w = &k->in[p->w];
    int nsp = s->nsp, pad = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - pad;
        p->is[i] = j < 0 ? 1 : x->sizes[2 + j];
        p->os[i] = j < 0 ? 1 : y->sizes[2 + j];
        p->k[i] = j < 0 ? 1 : s->k[j];
        p->s[i] = j < 0 ? 1 : s->s[j];
        p->d[i] = j < 0 ? 1 : s->d[j];
        p->pb[i] = j < 0 ? 0 : s->pb[j];
    }
    p->nimg = x->sizes[0];
    p->groups = s->group;
    p->cg = x->sizes[1] / s->group;
    p->mg = y->sizes[1] / s->group;
    win_strides(x, nsp, p->xs);
    win_strides(w, nsp, p->ws);
    win_strides(y, nsp, p->ys);
    p->xz = chan_param(k, xz);
    p->wz = chan_param(k, wz);
    p->bias = chan_param(k, bias);
    p->xsc = chan_param(k, xs);
    p->wsc = chan_param(k, ws);
    p->ysc = chan_param(k, ys);
    p->yz = chan_param(k, yz);
}

/* ---- accepts ---- */

bool st_lq_accepts_dynq(const st_knode *n, char *why, size_t len)
{
    if (!f32_family(n->views[0].dtype)) return st_kernel_refuse(why, len, "a %s input", st_dtype_name(n->views[0].dtype));
    return true;
}

bool st_lq_accepts_operands(const st_knode *n, char *why, size_t len, bool qlinear)
{
    int bias = qlinear ? 8 : -1;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        bool scale = qlinear && (i == 1 || i == 4 || i == 6);
        bool ok = scale ? f32_family(v->dtype)
                  : i == bias && i < n->n_in ? v->dtype == ST_I32
                  : i == n->n_in ? is8(v->dtype) || v->dtype == ST_I32
                  : is8(v->dtype);
        if (!ok) return st_kernel_refuse(why, len, "a %s operand %d", st_dtype_name(v->dtype), i);
    }
    return true;
}

bool st_lq_accepts_qmatmul(const st_knode *n, char *why, size_t len)
{
    const st_qmatmul_state *s = n->state;
    const st_view *a = &n->views[0], *b = &n->views[s->qlinear ? 3 : 1], *y = &n->views[n->n_in];
    int nb = st_lq_matmul_batch_dims(a->rank, b->rank, y->rank);
    if (nb > ST_LQ_BATCH) return st_kernel_refuse(why, len, "%d batch dims (at most %d)", nb, ST_LQ_BATCH);
    return st_lq_accepts_operands(n, why, len, s->qlinear);
}

bool st_lq_accepts_requant(const st_knode *n, char *why, size_t len)
{
    const st_qconv_state *s = n->state;
    if (s->q_type && !is8((st_dtype)s->q_type))
        return st_kernel_refuse(why, len, "requantization to %s", st_dtype_name((st_dtype)s->q_type));
    return true;
}
