/*
 * k_attention.c — host side of strata's FusedAttention on OpenCL
 * (attention.cl): one launch over (query blocks, heads, output column
 * chunks), every operand passed as its cl_mem, its element offset and its
 * strides, the mask's broadcast into the scores' shape (0 strides).
 * passes/fuse_attention.c makes the op for this backend because its table
 * declares ST_CAP_ATTENTION (table.c).
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/linalg.h"

/* attention.cl's ATT_BQ and ATT_DV */
#define ATT_BQ 64
#define ATT_DV 64
#define ATT_LEAD 6

/* Same layout as st_att_p in attention.cl. */
typedef struct st_cl_att_p {
    cl_long tq, tk, dh, dv, lead;
    cl_long ln[ATT_LEAD];
    cl_long qs[ATT_LEAD], ks[ATT_LEAD], vs[ATT_LEAD], os[ATT_LEAD], ms[ATT_LEAD];
    cl_long qo, ko, vo, oo, mo;
    cl_long q_rs, q_cs, k_rs, k_cs, v_rs, v_cs, o_rs, o_cs, m_rs, m_cs;
    cl_long scale_kind, mask_kind, fill_when, has_mask;
    cl_float scale, fill;
} st_cl_att_p;
_Static_assert(sizeof(st_cl_att_p) == (5 + 6 * 6 + 5 + 10 + 4) * 8 + 8, "st_cl_att_p has no padding");

static st_status cl_attention(const st_kctx *k)
{
    const st_attention_state *s = k->state;
    const st_view *q = &k->views[0], *kt = &k->views[1], *v = &k->views[2], *o = &k->views[k->n_in];
    const st_view *m = k->n_in > 3 && s->mask_kind != ST_ATT_MASK_NONE && k->views[3].storage ? &k->views[3] : NULL;
    int r = o->rank;
    if (r < 2 || r - 2 > ATT_LEAD)
        return st_error(ST_ERR_INTERNAL, "node '%s': FusedAttention of rank %d reached the OpenCL kernel", k->node->name, r);
    st_cl_att_p p;
    memset(&p, 0, sizeof p);
    p.tq = q->sizes[r - 2];
    p.dh = q->sizes[r - 1];
    p.tk = kt->sizes[r - 1];
    p.dv = v->sizes[r - 1];
    p.lead = r - 2;
    int64_t heads = 1;
    const st_view *ops[4] = {q, kt, v, o};
    cl_long *offs[4] = {&p.qo, &p.ko, &p.vo, &p.oo}, *lst[4] = {p.qs, p.ks, p.vs, p.os};
    for (int i = 0; i < 4; i++) {
        st_cl_td td;
        ST_TRY(st_cl_td_of(ops[i], &td));
        *offs[i] = td.off;
        for (int d = 0; d < r - 2; d++) lst[i][d] = ops[i]->strides[d];
    }
    for (int d = 0; d < r - 2; d++) {
        p.ln[d] = o->sizes[d];
        heads *= o->sizes[d];
    }
    p.q_rs = q->strides[r - 2];
    p.q_cs = q->strides[r - 1];
    p.k_rs = kt->strides[r - 2];
    p.k_cs = kt->strides[r - 1];
    p.v_rs = v->strides[r - 2];
    p.v_cs = v->strides[r - 1];
    p.o_rs = o->strides[r - 2];
    p.o_cs = o->strides[r - 1];
    if (m) {
        /* the mask over the scores' shape: the output's with Tk last */
        st_view scores = *o;
        scores.sizes[r - 1] = p.tk;
        st_cl_td mt;
        ST_TRY(st_cl_td_broadcast(m, &scores, &mt));
        p.mo = mt.off;
        for (int d = 0; d < r - 2; d++) p.ms[d] = mt.s[d];
        p.m_rs = mt.s[r - 2];
        p.m_cs = mt.s[r - 1];
        p.has_mask = 1;
    }
    p.scale_kind = s->scale_kind;
    p.scale = s->scale;
    p.mask_kind = m ? s->mask_kind : ST_ATT_MASK_NONE;
    p.fill = s->fill;
    p.fill_when = s->fill_when;
    if (heads == 0 || p.tq == 0 || p.dv == 0) return ST_OK;
    st_cl_ctx *c = k->dev;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_attention, &kern));
    cl_mem om = st_cl_mem(o), qm = st_cl_mem(q), km = st_cl_mem(kt), vm = st_cl_mem(v), mm = m ? st_cl_mem(m) : NULL;
    st_cl_arg args[] = {ST_CLA(om), ST_CLA(qm), ST_CLA(km), ST_CLA(vm), ST_CLA(mm), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_attention, 6, args));
    size_t global[3] = {(size_t)((p.tq + ATT_BQ - 1) / ATT_BQ * ATT_BQ), (size_t)heads,
                        (size_t)((p.dv + ATT_DV - 1) / ATT_DV)};
    size_t local[3] = {ATT_BQ, 1, 1};
    return st_cl_run(c, kern, ST_CLK_attention, 3, global, local, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

/* The kernel's fixed work-group of ATT_BQ (reqd_work_group_size): a
 * device that runs fewer leaves the op to the CPU's kernel. */
static bool attention_accepts(const st_knode *n, char *why, size_t len)
{
    /* operand layouts and Q's scale are the CPU kernel's (ST_CAP_ATTENTION_VIEWS) */
    const st_attention_state *s = n->state;
    if (s && (s->q_scale_kind != ST_ATT_SCALE_NONE || s->lay[ST_ATT_OUT].n || s->lay[ST_ATT_Q].n))
        return st_kernel_refuse(why, len, "FusedAttention with operand layouts (the CPU kernel's form)");
    const st_cl_device *d = n->device;
    if (d && d->max_wg < ATT_BQ)
        return st_kernel_refuse(why, len, "FusedAttention needs work-groups of %d; '%s' runs %zu", ATT_BQ, d->name,
                                d->max_wg);
    return true;
}

const st_kernel st_cl_k_attention[] = {
    {"FusedAttention", "ai.strata", ST_DT(ST_F32), cl_attention, attention_accepts, NULL, NULL},
    {NULL},
};
