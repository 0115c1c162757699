/*
 * k_rownorm.c — host side of LayerNormalization, InstanceNormalization
 * and GroupNormalization on OpenCL (rownorm.cl).  Each is described as
 * one shape whose first `outer` dims enumerate the normalised rows:
 * LayerNorm's x as it is with outer = axis, InstanceNorm's with outer = 2
 * (scale per channel), GroupNorm's as [N, G, C / G, spatial...] with
 * outer = 2 (the split of the channel axis that strides always express,
 * as backends/cpu/k_norm.c sees it; ops/lower_rownorm.c makes that
 * split for CUDA's kernel too).
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/lower_rownorm.h"
#include "ops/norm.h"

#define RN_LOCAL 64

/* Same layout as st_rownorm_p in rownorm.cl. */
typedef struct st_cl_rownorm_p {
    cl_long rank, outer;
    cl_long n[ST_MAX_RANK];
    cl_long s[6][ST_MAX_RANK];
    cl_long off[6], dt[6];
    cl_long has_bias, has_mean, has_inv;
    cl_float eps, pad_;
} st_cl_rownorm_p;
_Static_assert(sizeof(st_cl_rownorm_p) == (2 + 8 + 48 + 12 + 3 + 1) * 8, "st_cl_rownorm_p has no padding");

static const st_view *opt(const st_kctx *k, int i)
{
    if (i >= k->n_in + k->n_out) return NULL;
    const st_view *v = &k->views[i];
    return v->rank >= 0 && v->storage ? v : NULL;
}

static void set_base(st_cl_rownorm_p *p, int k, const st_view *v)
{
    if (!v) return;
    p->off[k] = v->offset / (int64_t)st_dtype_size(v->dtype);
    p->dt[k] = v->dtype;
}

static st_status cl_rownorm(const st_kctx *k)
{
    const st_norm_state *s = k->state;
    st_cl_ctx *c = k->dev;
    /* input 2 only when the node has it: views[n_in] is already the output */
    const st_view *x = &k->views[0], *sc = &k->views[1], *bi = k->n_in > 2 ? opt(k, 2) : NULL, *y = &k->views[k->n_in];
    const st_view *mean = NULL, *inv = NULL;
    st_cl_rownorm_p p;
    memset(&p, 0, sizeof p);
    p.eps = s->epsilon;
    set_base(&p, 0, x);
    set_base(&p, 1, y);
    set_base(&p, 2, sc);
    set_base(&p, 3, bi);
    p.has_bias = bi != NULL;
    if (s->kind == ST_N_GROUP_NORM) {
        /* the split of the channel axis, as CUDA's (ops/lower_rownorm.c) */
        st_lower_rows r;
        st_lower_group_norm(k, bi != NULL, &r);
        p.rank = r.rank;
        p.outer = r.outer;
        for (int d = 0; d < r.rank; d++) {
            p.n[d] = r.n[d];
            for (int o = 0; o < ST_LRN_OPS; o++) p.s[o][d] = r.s[o][d];
        }
    } else {
        p.rank = x->rank;
        for (int d = 0; d < x->rank; d++) {
            p.n[d] = x->sizes[d];
            p.s[0][d] = x->strides[d];
            p.s[1][d] = y->strides[d];
        }
        if (s->kind == ST_N_INSTANCE_NORM) {
            p.outer = 2;
            p.s[2][1] = sc->strides[0];
            if (bi) p.s[3][1] = bi->strides[0];
        } else {
            int axis = s->axis < 0 ? s->axis + x->rank : s->axis;
            p.outer = axis;
            /* Scale and B broadcast (right-aligned) over the normalised dims */
            st_cl_td t;
            ST_TRY(st_cl_td_broadcast(sc, x, &t));
            for (int d = axis; d < x->rank; d++) p.s[2][d] = t.s[d];
            if (bi) {
                ST_TRY(st_cl_td_broadcast(bi, x, &t));
                for (int d = axis; d < x->rank; d++) p.s[3][d] = t.s[d];
            }
            mean = k->n_out > 1 ? opt(k, k->n_in + 1) : NULL;
            inv = k->n_out > 2 ? opt(k, k->n_in + 2) : NULL;
            set_base(&p, 4, mean);
            set_base(&p, 5, inv);
            p.has_mean = mean != NULL;
            p.has_inv = inv != NULL;
            for (int d = 0; d < axis; d++) {
                if (mean) p.s[4][d] = mean->strides[d];
                if (inv) p.s[5][d] = inv->strides[d];
            }
        }
    }
    int64_t rows = 1, len = 1;
    for (int d = 0; d < p.rank; d++) *(d < p.outer ? &rows : &len) *= p.n[d];
    if (rows == 0) return ST_OK;
    if (len == 0) return st_error(ST_ERR_INTERNAL, "node '%s': normalising an empty row", k->node->name);
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), sm = st_cl_mem(sc), bm = bi ? st_cl_mem(bi) : xm;
    cl_mem mm = mean ? st_cl_mem(mean) : ym, im = inv ? st_cl_mem(inv) : ym;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_rownorm, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(xm), ST_CLA(sm), ST_CLA(bm), ST_CLA(mm), ST_CLA(im), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_rownorm, 7, args));
    size_t global = (size_t)rows * RN_LOCAL, local = RN_LOCAL;
    return st_cl_run(c, kern, ST_CLK_rownorm, 1, &global, &local, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

static bool rownorm_accepts(const st_knode *n, char *why, size_t len)
{
    const st_norm_state *s = n->state;
    if (s->residual) return st_kernel_refuse(why, len, "AddLayerNormalization is not implemented on OpenCL");
    if (!st_lrn_accepts_rank(n, why, len)) return false;
    return st_cl_accepts_f32_family(n, why, len);
}

const st_kernel st_cl_k_rownorm[] = {
    {"LayerNormalization", "", ST_DT_FLOATS, cl_rownorm, rownorm_accepts, NULL, NULL},
    {"InstanceNormalization", "", ST_DT_FLOATS, cl_rownorm, rownorm_accepts, NULL, NULL},
    {"GroupNormalization", "", ST_DT_FLOATS, cl_rownorm, rownorm_accepts, NULL, NULL},
    {NULL}
};
