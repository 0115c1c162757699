/*
 * k_conv.c — host side of the windowed ops on OpenCL (conv.cl): Conv,
 * ConvTranspose and the pools, 1 to 3 spatial dims.
 *
 * A Conv with 1 or 2 spatial dims and at least 16 output channels per
 * group is a GEMM of output channels x pixels.  On a GPU it runs as an
 * implicit GEMM tiled through local memory, its tile and split of K
 * chosen per problem (k_conv_gemm.c, conv_gemm.cl; conv.cl's 64x64
 * st_conv_gemm with 64-bit offsets where 32 bits do not reach); on a CPU
 * device (PoCL), where local memory is ordinary memory and barriers split
 * the work-group loop, st_conv_rows is about twice as fast: each
 * work-item computes 8 channels of one pixel straight from global memory,
 * and the compiler vectorises across neighbouring pixels.
 * STRATA_OPENCL_CONV=tiled or =rows overrides the choice, =gemm64 forces
 * the old fixed 64x64 kernel (for A/B runs).  Other convs
 * (depthwise, few channels, 3-D) run st_conv_direct, one output element
 * per work-item.  Bias and the fused activation (st_conv_state's
 * epilogue) are applied before the single store; a per-channel affine
 * epilogue (ST_CAP_CONV_AFFINE) in one pass after it (st_conv_affine).
 */
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/conv.h"

#define CT 64
#define CW 16

/* Same layout as st_win_p in conv.cl. */
typedef struct st_cl_win_p {
    cl_long groups, cg, mg, nimg;
    cl_long is[3], os[3], k[3], s[3], d[3], pb[3], pe[3];
    cl_long xo, xs[5], wo, ws[5], yo, ys[5], bo, bs, io, iss[5];
    cl_long x_dt, w_dt, y_dt, b_dt, has_b, act, w_packed, is_max, include_pad, storage_order, has_ix;
    cl_float act_a, act_b;
} st_cl_win_p;
_Static_assert(sizeof(st_cl_win_p) == 62 * 8 + 8, "st_cl_win_p has no padding");

static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* The windowed ops' accepts: f32, f16 and bf16 (MaxPool also int8 and
 * uint8, and int64 Indices); the per-channel affine epilogue (set only
 * for backends that declare ST_CAP_CONV_AFFINE) on Conv alone. */
static bool win_accepts(const st_knode *n, char *why, size_t len)
{
    const st_conv_state *s = n->state;
    bool maxpool = strcmp(n->op->name, "MaxPool") == 0;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        bool ok = f32_family(v->dtype) || (i == n->n_in + 1 && v->dtype == ST_I64) /* MaxPool's Indices */ ||
                  (maxpool && (v->dtype == ST_I8 || v->dtype == ST_U8));
        if (!ok)
            return st_kernel_refuse(why, len, "%s of %s data is not implemented on OpenCL (f32, f16, bf16 are)",
                                    n->op->name, st_dtype_name(v->dtype));
    }
    if (s && st_conv_has_affine(s) && strcmp(n->op->name, "Conv") != 0)
        return st_kernel_refuse(why, len, "a per-channel affine epilogue");
    if (s && s->residual) return st_kernel_refuse(why, len, "a residual operand (CUDA's fused Conv + Add)");
    return true;
}

/* An N, C, spatial... operand's element offset and strides, the spatial
 * ones right-aligned to 3 (0 on the padding dims). */
static void win_strides(const st_view *v, int nsp, cl_long *off, cl_long *st)
{
    *off = v->offset / (int64_t)st_dtype_size(v->dtype);
    st[0] = v->strides[0];
    st[1] = v->strides[1];
    for (int i = 0; i < 3; i++) st[2 + i] = i < 3 - nsp ? 0 : v->strides[2 + i - (3 - nsp)];
}

static void win_common(st_cl_win_p *p, const st_conv_state *s, const st_view *x, const st_view *y)
{
    int nsp = s->nsp, pad = 3 - nsp;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 3; i++) {
        int j = i - pad;
        p->is[i] = j < 0 ? 1 : x->sizes[2 + j];
        p->os[i] = j < 0 ? 1 : y->sizes[2 + j];
        p->k[i] = j < 0 ? 1 : s->k[j];
        p->s[i] = j < 0 ? 1 : s->s[j];
        p->d[i] = j < 0 ? 1 : s->d[j];
        p->pb[i] = j < 0 ? 0 : s->pb[j];
        p->pe[i] = j < 0 ? 0 : s->pe[j];
    }
    p->nimg = x->sizes[0];
    win_strides(x, nsp, &p->xo, p->xs);
    win_strides(y, nsp, &p->yo, p->ys);
    p->x_dt = x->dtype;
    p->y_dt = y->dtype;
}

static st_status launch(st_cl_ctx *c, st_clk id, const st_cl_win_p *p, cl_mem y, cl_mem x, cl_mem w, cl_mem b,
                        cl_uint dims, const size_t *global, const size_t *local)
{
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, id, &kern));
    st_cl_arg args[] = {ST_CLA(y), ST_CLA(x), ST_CLA(w), ST_CLA(b), {sizeof *p, p}};
    ST_TRY(st_cl_set_args(kern, id, 5, args));
    return st_cl_run(c, kern, id, dims, global, local, true);
}

static bool packed(const st_view *v)
{
    int64_t s = 1;
    for (int d = v->rank - 1; d >= 1; d--) {
        if (v->sizes[d] != 1 && v->strides[d] != s) return false;
        s *= v->sizes[d];
    }
    return true;
}

static st_status conv_plain(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *w = &k->views[1], *y = &k->views[k->n_in];
    const st_view *b = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    st_cl_win_p p;
    win_common(&p, s, x, y);
    p.groups = s->group;
    p.cg = x->sizes[1] / s->group;
    p.mg = y->sizes[1] / s->group;
    win_strides(w, s->nsp, &p.wo, p.ws);
    p.w_dt = w->dtype;
    p.w_packed = packed(w);
    if (b) {
        p.has_b = 1;
        p.bo = b->offset / (int64_t)st_dtype_size(b->dtype);
        p.bs = b->strides[0];
        p.b_dt = b->dtype;
    } else {
        p.b_dt = ST_F32;
    }
    p.act = s->epi.act;
    p.act_a = s->epi.alpha;
    p.act_b = s->epi.beta;
    int64_t numel = st_view_numel(y);
    if (numel == 0) return ST_OK;
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), wm = st_cl_mem(w), bm = b ? st_cl_mem(b) : NULL;
    if (s->nsp <= 2 && p.mg >= 16 && !((st_cl_ctx *)k->dev)->dev->conv_tiled) {
        int64_t pixels = p.os[1] * p.os[2];
        size_t global[3] = {(size_t)((pixels + 63) / 64 * 64), (size_t)((p.mg + 7) / 8), (size_t)(p.nimg * p.groups)};
        size_t local[3] = {64, 1, 1};
        return launch(k->dev, ST_CLK_conv_rows, &p, ym, xm, wm, bm, 3, global, local);
    }
    if (s->nsp <= 2 && p.mg >= 16 && !((st_cl_ctx *)k->dev)->dev->conv_gemm64) {
        bool ran;
        ST_TRY(st_cl_conv_tiled(k, &ran));
        if (ran) return ST_OK;
    }
    if (s->nsp <= 2 && p.mg >= 16) {
        /* offsets past 32 bits, or STRATA_OPENCL_CONV=gemm64 */
        int64_t pixels = p.os[1] * p.os[2];
        size_t global[3] = {(size_t)((pixels + CT - 1) / CT * CW), (size_t)((p.mg + CT - 1) / CT * CW),
                            (size_t)(p.nimg * p.groups)};
        size_t local[3] = {CW, CW, 1};
        return launch(k->dev, ST_CLK_conv_gemm, &p, ym, xm, wm, bm, 3, global, local);
    }
    size_t global = (size_t)numel;
    return launch(k->dev, ST_CLK_conv_direct, &p, ym, xm, wm, bm, 1, &global, NULL);
}

/* Conv's prepare: the affine epilogue's S, T, PS, PT (M floats each,
 * the identity where a pair is absent) in a buffer of their own, made
 * once with the plan. */
static st_status conv_prepare(const st_knode *n, void **priv)
{
    const st_conv_state *s = n->state;
    *priv = NULL;
    if (!s || !st_conv_has_affine(s)) return ST_OK;
    int64_t m = n->views[n->n_in].sizes[1];
    size_t bytes = (size_t)(m > 0 ? m : 1) * 4 * sizeof(float);
    float *h = malloc(bytes);
    if (!h) return st_error(ST_ERR_NOMEM, "out of memory");
    st_conv_affine_table(s, m, h);
    cl_int err;
    cl_mem mem = clCreateBuffer(((const st_cl_device *)n->device)->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                h, &err);
    free(h);
    if (err != CL_SUCCESS) return st_cl_check(err, "clCreateBuffer (Conv's affine epilogue)");
    *priv = mem;
    return ST_OK;
}

/* Conv: with an affine epilogue, conv + bias by whichever kernel fits
 * (the state without its activation and affine maps), then
 * st_conv_affine in one pass.  Before, each op of the chain was a pass of
 * its own, each rounding to the session's dtype: PP-OCRv4's recogniser in
 * f16 was 1.1% of max|ref| off on OpenCL and CUDA, 0.66% on the CPU. */
st_status st_cl_conv(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    if (!st_conv_has_affine(s)) return conv_plain(k);
    st_conv_state plain = *s;
    memset(&plain.epi, 0, sizeof plain.epi);
    plain.ch_scale = plain.ch_shift = plain.post_scale = plain.post_shift = NULL;
    st_kctx pk = *k;
    pk.state = &plain;
    ST_TRY(conv_plain(&pk));
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t numel = st_view_numel(y);
    if (numel == 0) return ST_OK;
    st_cl_win_p p;
    win_common(&p, s, x, y);
    p.groups = s->group;
    p.mg = y->sizes[1] / s->group;
    p.act = s->epi.act;
    p.act_a = s->epi.alpha;
    p.act_b = s->epi.beta;
    cl_int pre = s->ch_scale || s->ch_shift, post = s->post_scale || s->post_shift;
    cl_mem ym = st_cl_mem(y), am = (cl_mem)k->priv;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(k->dev, ST_CLK_conv_affine, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(am), {sizeof p, &p}, ST_CLA(pre), ST_CLA(post)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_conv_affine, 5, args));
    size_t global = (size_t)numel;
    return st_cl_run(k->dev, kern, ST_CLK_conv_affine, 1, &global, NULL, true);
}

st_status st_cl_conv_transpose(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *w = &k->views[1], *y = &k->views[k->n_in];
    const st_view *b = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    st_cl_win_p p;
    win_common(&p, s, x, y);
    p.groups = s->group;
    p.cg = x->sizes[1] / s->group;
    p.mg = y->sizes[1] / s->group;
    win_strides(w, s->nsp, &p.wo, p.ws);
    p.w_dt = w->dtype;
    if (b) {
        p.has_b = 1;
        p.bo = b->offset / (int64_t)st_dtype_size(b->dtype);
        p.bs = b->strides[0];
        p.b_dt = b->dtype;
    } else {
        p.b_dt = ST_F32;
    }
    p.act = s->epi.act;
    p.act_a = s->epi.alpha;
    p.act_b = s->epi.beta;
    size_t global = (size_t)st_view_numel(y);
    if (!global) return ST_OK;
    return launch(k->dev, ST_CLK_conv_transpose, &p, st_cl_mem(y), st_cl_mem(x), st_cl_mem(w), b ? st_cl_mem(b) : NULL, 1,
                  &global, NULL);
}

st_status st_cl_pool(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    const st_view *ix = k->n_out > 1 && k->out[1].data ? &k->views[k->n_in + 1] : NULL;
    st_cl_win_p p;
    win_common(&p, s, x, y);
    p.groups = 1;
    p.cg = x->sizes[1];
    p.is_max = s->is_max;
    p.include_pad = s->count_include_pad;
    p.storage_order = s->storage_order == 1 && s->nsp == 2;
    if (ix) {
        p.has_ix = 1;
        win_strides(ix, s->nsp, &p.io, p.iss);
    }
    size_t global = (size_t)st_view_numel(y);
    if (!global) return ST_OK;
    cl_kernel kern;
    st_cl_ctx *c = k->dev;
    bool whole = !ix && p.os[0] * p.os[1] * p.os[2] == 1;
    for (int i = 0; i < 3; i++) whole &= p.k[i] == p.is[i] && p.pb[i] == 0 && p.pe[i] == 0 && p.d[i] == 1;
    if (whole && p.is[0] * p.is[1] * p.is[2] >= 256) {
        /* a global pool over a large plane: a work-group per output */
        size_t g = global * 64, local = 64;
        cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x);
        ST_TRY(st_cl_kernel(c, ST_CLK_pool_global, &kern));
        st_cl_arg args[] = {ST_CLA(ym), ST_CLA(xm), {sizeof p, &p}};
        ST_TRY(st_cl_set_args(kern, ST_CLK_pool_global, 3, args));
        return st_cl_run(c, kern, ST_CLK_pool_global, 1, &g, &local, true);
    }
    ST_TRY(st_cl_kernel(c, ST_CLK_pool, &kern));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), im = ix ? st_cl_mem(ix) : NULL;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(xm), ST_CLA(im), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_pool, 4, args));
    return st_cl_run(c, kern, ST_CLK_pool, 1, &global, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

#define WIN(name, fn, types) {name, "", types, fn, win_accepts, NULL, NULL}
const st_kernel st_cl_k_conv[] = {
    {"Conv", "", ST_DT_FLOATS, st_cl_conv, win_accepts, conv_prepare, st_cl_release_mem},
    WIN("ConvTranspose", st_cl_conv_transpose, ST_DT_FLOATS),
    WIN("MaxPool", st_cl_pool, ST_DT_FLOATS | ST_DT(ST_I8) | ST_DT(ST_U8)),
    WIN("AveragePool", st_cl_pool, ST_DT_FLOATS),
    WIN("GlobalAveragePool", st_cl_pool, ST_DT_FLOATS),
    WIN("GlobalMaxPool", st_cl_pool, ST_DT_FLOATS),
    {NULL}
};
