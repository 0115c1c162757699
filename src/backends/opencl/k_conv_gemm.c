/*
 * k_conv_gemm.c — host side of Conv as an implicit GEMM on a GPU
 * (conv_gemm.cl): picks a tile and a split of K per problem, so that a
 * small image with deep K still gives every compute unit work, then
 * launches the tile kernel and, when K is split, st_conv_splitk.
 *
 * The tile and split come from cl_tiles.c's model (rows = output
 * channels, columns = pixels); STRATA_OPENCL_CONV_TILE and
 * STRATA_OPENCL_CONV_SPLITK force them, STRATA_OPENCL_TILE_LOG=1 prints
 * each Conv's choice and kernel to stderr, once per command.  Each tile
 * has kernels specialized for one dtype of x, w and y (f32, f16, bf16):
 * with the dtype a run-time value, f16 ran 1.3-1.7x slower than f32 on
 * an H200 (a dtype switch on every gathered element); the generic kernel
 * serves mixed dtypes, and STRATA_OPENCL_CONV_GENERIC=1 forces it (tests).
 *
 * Every offset must fit 32 bits for the kernel's int math; where
 * one does not, st_cl_conv_tiled says so and k_conv.c runs the 64-bit
 * st_conv_gemm instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/conv.h"

#define CG_K ST_CL_TILE_K
#define CG_W 16

/* Same layout as st_cg_p in conv_gemm.cl. */
typedef struct st_cl_cg_p {
    cl_int M, K, P, Z;
    cl_int groups, cg, kh, kw, kvol, ow, ih, iw, s1, s2, d1, d2, pb1, pb2;
    cl_int xo, xs0, xs1, xs3, xs4;
    cl_int wo, ws0, ws1, ws3, ws4;
    cl_int yo, ys0, ys1, ys3, ys4;
    cl_int bo, bs, has_b;
    cl_int x_dt, w_dt, y_dt, b_dt, act;
    cl_int kchunk, splits;
    cl_int cstep, astep, bstep;
    cl_float act_a, act_b;
} st_cl_cg_p;
_Static_assert(sizeof(st_cl_cg_p) == 48 * 4, "st_cl_cg_p has no padding");

/* The tile kernels, by variant (the operands' one dtype, compiled in, or
 * generic) and st_tile_shapes' index. */
enum { V_GENERIC, V_F32, V_F16, V_BF16, N_VARIANTS };
static const st_clk TILE_KERNELS[N_VARIANTS][ST_CL_N_TILES] = {
    {ST_CLK_conv_t64x64, ST_CLK_conv_t64x32, ST_CLK_conv_t32x64, ST_CLK_conv_t32x32, ST_CLK_conv_t16x64},
    {ST_CLK_conv_t64x64_f32, ST_CLK_conv_t64x32_f32, ST_CLK_conv_t32x64_f32, ST_CLK_conv_t32x32_f32,
     ST_CLK_conv_t16x64_f32},
    {ST_CLK_conv_t64x64_f16, ST_CLK_conv_t64x32_f16, ST_CLK_conv_t32x64_f16, ST_CLK_conv_t32x32_f16,
     ST_CLK_conv_t16x64_f16},
    {ST_CLK_conv_t64x64_bf16, ST_CLK_conv_t64x32_bf16, ST_CLK_conv_t32x64_bf16, ST_CLK_conv_t32x32_bf16,
     ST_CLK_conv_t16x64_bf16},
};

/* The variant for x, w and y: a dtype-specialized kernel when all three
 * share one (the common case: a model run in one precision), whose loads
 * and stores have no run-time dtype switch; else the generic one. */
static int variant(st_dtype x, st_dtype w, st_dtype y)
{
    if (x != w || x != y) return V_GENERIC;
    switch (x) {
    case ST_F32: return V_F32;
    case ST_F16: return V_F16;
    case ST_BF16: return V_BF16;
    default: return V_GENERIC;
    }
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* |offset| + the span of a view's dims, in elements: every index the
 * kernel forms from it lies within this of 0. */
static int64_t reach(const st_view *v)
{
    int64_t r = v->offset / (int64_t)st_dtype_size(v->dtype);
    if (r < 0) r = -r;
    for (int i = 0; i < v->rank; i++) r += (v->sizes[i] > 0 ? v->sizes[i] - 1 : 0) * (v->strides[i] < 0 ? -v->strides[i] : v->strides[i]);
    return r;
}

#define LIM ((int64_t)1 << 30)

st_status st_cl_conv_tiled(const st_kctx *k, bool *ran)
{
    *ran = false;
    st_cl_ctx *c = k->dev;
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *w = &k->views[1], *y = &k->views[k->n_in];
    const st_view *b = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    int nsp = s->nsp, h = nsp == 2 ? 0 : -1; /* index of H among the spatial dims (-1: a 1-D conv) */
    int64_t Z = x->sizes[0] * s->group, cg = x->sizes[1] / s->group, M = y->sizes[1] / s->group;
    int64_t kh = h < 0 ? 1 : s->k[0], kw = s->k[nsp - 1], K = cg * kh * kw;
    int64_t oh = h < 0 ? 1 : y->sizes[2], ow = y->sizes[1 + nsp], P = oh * ow;
    int64_t ih = h < 0 ? 1 : x->sizes[2], iw = x->sizes[1 + nsp];
    int64_t xs3 = h < 0 ? 0 : x->strides[2], xs4 = x->strides[1 + nsp];
    int64_t ws3 = h < 0 ? 0 : w->strides[2], ws4 = w->strides[1 + nsp];
    int64_t ys3 = h < 0 ? 0 : y->strides[2], ys4 = y->strides[1 + nsp];
    int64_t sh = h < 0 ? 1 : s->s[0], sw = s->s[nsp - 1], dh = h < 0 ? 1 : s->d[0], dw = s->d[nsp - 1];
    int64_t ph = h < 0 ? 0 : s->pb[0], pw = s->pb[nsp - 1];
    if (M * P * Z == 0) {
        *ran = true;
        return ST_OK;
    }
    /* int32 math: every operand's reach, and a window's overhang past
     * the input (pads, dilated taps) in input strides */
    int64_t over = (ph + dh * kh) * (xs3 < 0 ? -xs3 : xs3) + (pw + dw * kw) * (xs4 < 0 ? -xs4 : xs4);
    int64_t most_splits = c->dev->conv_force.splitk > 16 ? c->dev->conv_force.splitk : 16; /* cl_tiles.c's cap */
    if (reach(x) >= LIM || reach(w) >= LIM || reach(y) >= LIM || (b && reach(b) >= LIM) || over >= LIM || K >= LIM ||
        most_splits * M * P * Z >= 2 * LIM /* the partial sums' index */)
        return ST_OK;

    int tile, splits;
    cl_mem pm;
    bool first = c->slot->data == NULL; /* the command's first run: st_cl_tile_slot makes its slot */
    ST_TRY(st_cl_tile_slot(c, &c->dev->conv_force, k->node, M, P, K, Z, &tile, &splits, &pm));

    st_cl_cg_p p;
    memset(&p, 0, sizeof p);
    p.M = (cl_int)M;
    p.K = (cl_int)K;
    p.P = (cl_int)P;
    p.Z = (cl_int)Z;
    p.groups = (cl_int)s->group;
    p.cg = (cl_int)cg;
    p.kh = (cl_int)kh;
    p.kw = (cl_int)kw;
    p.kvol = (cl_int)(kh * kw);
    p.ow = (cl_int)ow;
    p.ih = (cl_int)ih;
    p.iw = (cl_int)iw;
    p.s1 = (cl_int)sh;
    p.s2 = (cl_int)sw;
    p.d1 = (cl_int)dh;
    p.d2 = (cl_int)dw;
    p.pb1 = (cl_int)ph;
    p.pb2 = (cl_int)pw;
    p.xo = (cl_int)(x->offset / (int64_t)st_dtype_size(x->dtype));
    p.xs0 = (cl_int)x->strides[0];
    p.xs1 = (cl_int)x->strides[1];
    p.xs3 = (cl_int)xs3;
    p.xs4 = (cl_int)xs4;
    p.wo = (cl_int)(w->offset / (int64_t)st_dtype_size(w->dtype));
    p.ws0 = (cl_int)w->strides[0];
    p.ws1 = (cl_int)w->strides[1];
    p.ws3 = (cl_int)ws3;
    p.ws4 = (cl_int)ws4;
    p.yo = (cl_int)(y->offset / (int64_t)st_dtype_size(y->dtype));
    p.ys0 = (cl_int)y->strides[0];
    p.ys1 = (cl_int)y->strides[1];
    p.ys3 = (cl_int)ys3;
    p.ys4 = (cl_int)ys4;
    if (b) {
        p.has_b = 1;
        p.bo = (cl_int)(b->offset / (int64_t)st_dtype_size(b->dtype));
        p.bs = (cl_int)b->strides[0];
        p.b_dt = b->dtype;
    } else {
        p.b_dt = ST_F32;
    }
    p.x_dt = x->dtype;
    p.w_dt = w->dtype;
    p.y_dt = y->dtype;
    p.act = s->epi.act;
    p.act_a = s->epi.alpha;
    p.act_b = s->epi.beta;
    /* K per split: whole steps, so the counters advance by CG_K */
    p.splits = splits;
    p.kchunk = (cl_int)(cdiv(cdiv(K, CG_K), splits) * CG_K);
    p.cstep = (cl_int)(CG_K / (kh * kw));
    p.astep = (cl_int)(CG_K % (kh * kw) / kw);
    p.bstep = (cl_int)(CG_K % (kh * kw) % kw);

    const st_tile_shape *t = &st_tile_shapes[tile];
    st_clk id = TILE_KERNELS[c->dev->conv_generic ? V_GENERIC : variant(x->dtype, w->dtype, y->dtype)][tile];
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), wm = st_cl_mem(w), bm = b ? st_cl_mem(b) : NULL;
    cl_kernel kern, skern = NULL;
    /* both kernels before the first is queued: a first use's creation (a
     * driver may compile then) must not fall between the two launches,
     * where a profile would count it as the command's device time */
    ST_TRY(st_cl_kernel(c, id, &kern));
    if (splits > 1) ST_TRY(st_cl_kernel(c, ST_CLK_conv_splitk, &skern));
    if (c->dev->tile_log && first)
        fprintf(stderr, "strata: opencl Conv '%s': kernel %s\n", k->node->name, st_clk_names[id]);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(xm), ST_CLA(wm), ST_CLA(bm), ST_CLA(pm), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, id, 6, args));
    size_t global[3] = {(size_t)(cdiv(P, CG_W * t->rn) * CG_W), (size_t)(cdiv(M, CG_W * t->rm) * CG_W),
                        (size_t)(Z * splits)};
    size_t local[3] = {CG_W, CG_W, 1};
    ST_TRY(st_cl_run(c, kern, id, 3, global, local, true));
    if (splits > 1) {
        st_cl_arg sargs[] = {ST_CLA(ym), ST_CLA(bm), ST_CLA(pm), {sizeof p, &p}};
        ST_TRY(st_cl_set_args(skern, ST_CLK_conv_splitk, 4, sargs));
        size_t g2[3] = {(size_t)P, (size_t)M, (size_t)Z};
        ST_TRY(st_cl_run(c, skern, ST_CLK_conv_splitk, 3, g2, NULL, true));
    }
    *ran = true;
    return ST_OK;
}
