/*
 * k_rows.c — the row ops on Vulkan: Softmax and LogSoftmax
 * (softmax.comp), LayerNormalization (norm.comp), BatchNormalization as
 * a per-channel affine map (affine.comp: its parameters folded at plan
 * time when constant, else read by the _rt variant) and the ReduceX ops
 * that sum, average, bound or take a norm (reduce.comp).  Shapes are split
 * into outer positions and rows with the CPU's st_rows
 * (backends/common/rows.h), so a row is the same set of elements, in the
 * same order, on both backends; a work-group of 64 reduces each row in
 * shared memory, in f32.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/rows.h"
#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "ops/norm.h"
#include "ops/reduce.h"

#define NP 58

/* rows.glsl's parameters: x's shape split by mask, y over x's shape by ys. */
static bool rows_params(const st_view *x, const int64_t *ys, uint32_t mask, int32_t xe, int32_t ye, int32_t *p)
{
    memset(p, 0, NP * sizeof *p);
    st_rows r;
    st_rows_init(&r, x->rank, x->sizes, mask, 2, (const int64_t *[]){x->strides, ys});
    p[0] = (int32_t)r.n_outer;
    p[1] = (int32_t)r.row_len;
    p[2] = r.outer_rank;
    p[3] = r.row_rank;
    for (int d = 0; d < 8; d++) {
        p[4 + d] = d < r.outer_rank ? (int32_t)r.outer_sizes[d] : 1;
        p[12 + d] = d < r.row_rank ? (int32_t)r.row_sizes[d] : 1;
        p[21 + d] = d < r.outer_rank ? (int32_t)r.outer_strides[0][d] : 0;
        p[29 + d] = d < r.row_rank ? (int32_t)r.row_strides[0][d] : 0;
        p[38 + d] = d < r.outer_rank ? (int32_t)r.outer_strides[1][d] : 0;
        p[46 + d] = d < r.row_rank ? (int32_t)r.row_strides[1][d] : 0;
    }
    p[20] = xe;
    p[37] = ye;
    return r.n_outer > 0 && r.row_len > 0;
}

static void row_groups(const st_vk_ctx *c, int32_t n_outer, uint32_t groups[3])
{
    uint32_t gx = (uint32_t)n_outer < c->dev->max_groups[0] ? (uint32_t)n_outer : 65535;
    groups[0] = gx;
    groups[1] = ((uint32_t)n_outer + gx - 1) / gx;
    groups[2] = 1;
}

static int32_t fbits(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

static st_status vk_norm(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_norm_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    if (st_view_numel(x) == 0) return ST_OK;
    st_vk_bind bind[4];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, x, false, &bind[1]));
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    int32_t p[NP];
    if (!rows_params(x, y->strides, mask, bind[1].elem, bind[0].elem, p)) return ST_OK;
    uint32_t groups[3];
    row_groups(c, p[0], groups);
    bool h = st_vk_is_f16(y);
    if (s->kind == ST_N_LAYER_NORM) {
        const st_view *sc = &k->views[1], *bi = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
        ST_TRY(st_vk_bind_view(c, sc, false, &bind[2]));
        bind[3] = (st_vk_bind){0};
        if (bi) ST_TRY(st_vk_bind_view(c, bi, false, &bind[3]));
        p[54] = fbits(s->epsilon);
        p[55] = bind[2].elem;
        p[56] = bi != NULL;
        p[57] = bi ? bind[3].elem : 0;
        return st_vk_dispatch(c, h ? ST_VKS_norm_f16 : ST_VKS_norm_f32, p, NP, 4, bind, groups);
    }
    p[54] = s->kind == ST_N_LOG_SOFTMAX;
    return st_vk_dispatch(c, h ? ST_VKS_softmax_f16 : ST_VKS_softmax_f32, p, NP, 2, bind, groups);
}

/* BatchNormalization at inference: a[c] = scale / sqrt(var + eps),
 * b[c] = bias - mean * a[c], from its constant parameters at plan time
 * (in double, rounded once), applied by affine.comp. */
static bool rows_fit(const st_knode *n, char *why, size_t len);

typedef struct bn_priv {
    int64_t c;
    float ab[];
} bn_priv;

static double param(const st_knode *n, int i, int64_t c)
{
    const void *d = n->data[i];
    return n->views[i].dtype == ST_F32 ? ((const float *)d)[c] : st_f16_to_f32(((const uint16_t *)d)[c]);
}

static st_status bn_prepare(const st_knode *n, void **priv)
{
    const st_norm_state *s = n->state;
    int64_t C = n->views[0].sizes[1];
    bn_priv *bp = malloc(sizeof *bp + 2 * (size_t)C * sizeof(float));
    if (!bp) return st_error(ST_ERR_NOMEM, "out of memory");
    bp->c = C;
    for (int64_t c = 0; c < C; c++) {
        double a = param(n, 1, c) / sqrt(param(n, 4, c) + (double)s->epsilon);
        bp->ab[c] = (float)a;
        bp->ab[C + c] = (float)(param(n, 2, c) - param(n, 3, c) * a);
    }
    *priv = bp;
    return ST_OK;
}

static void bn_release(void *priv) { free(priv); }

static st_status vk_batchnorm(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const bn_priv *bp = k->priv;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[2];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    int np = 39 + 2 * (int)bp->c;
    int32_t *p = malloc((size_t)np * sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory");
    p[0] = (int32_t)n;
    p[1] = (int32_t)bp->c;
    p[2] = (int32_t)st_numel(x->rank - 2, x->sizes + 2);
    st_vk_td(y, bind[0].elem, p + 3);
    st_vk_td(x, bind[1].elem, p + 21);
    memcpy(p + 39, bp->ab, 2 * (size_t)bp->c * sizeof(float));
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    st_status r = st_vk_dispatch(c, st_vk_is_f16(y) ? ST_VKS_affine_f16 : ST_VKS_affine_f32, p, np, 2, bind, groups);
    free(p);
    return r;
}

/* BatchNormalization with parameters computed at run time (or more
 * channels than a parameter block holds): affine.comp's _rt variant binds
 * scale, B, mean and var (bindings 3 to 6) and reads them per element. */
static st_status vk_batchnorm_rt(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_norm_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[6];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    int32_t p[48];
    p[0] = (int32_t)n;
    p[1] = (int32_t)x->sizes[1];
    p[2] = (int32_t)st_numel(x->rank - 2, x->sizes + 2);
    st_vk_td(y, bind[0].elem, p + 3);
    st_vk_td(x, bind[1].elem, p + 21);
    p[39] = fbits(s->epsilon);
    for (int i = 0; i < 4; i++) { /* scale, B, mean, var: inputs 1 to 4 */
        const st_view *v = &k->views[1 + i];
        ST_TRY(st_vk_bind_view(c, v, false, &bind[2 + i]));
        p[40 + i] = bind[2 + i].elem;
        p[44 + i] = (int32_t)v->strides[0];
    }
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    return st_vk_dispatch(c, st_vk_is_f16(y) ? ST_VKS_affine_rt_f16 : ST_VKS_affine_rt_f32, p, 48, 6, bind, groups);
}

/* What both forms take: the inference form over channels of dim 1, no
 * training outputs, x at least 2-D. */
static bool batchnorm_common(const st_knode *n, char *why, size_t len)
{
    const st_norm_state *s = n->state;
    if (n->n_in < 5 || !s->spatial) return st_kernel_refuse(why, len, "this BatchNormalization runs on the CPU");
    if (n->views[0].rank < 2) return st_kernel_refuse(why, len, "an input of rank %d", n->views[0].rank);
    for (int o = 1; o < n->n_out; o++)
        if (n->views[n->n_in + o].rank >= 0) return st_kernel_refuse(why, len, "training outputs");
    return true;
}

/* Parameters of x's dtype (the shader reads them as T), one value a
 * channel, in any layout. */
static bool batchnorm_rt_accepts(const st_knode *n, char *why, size_t len)
{
    if (!batchnorm_common(n, why, len)) return false;
    for (int i = 1; i < 5; i++) {
        const st_view *v = &n->views[i];
        if (v->rank != 1 || v->sizes[0] != n->views[0].sizes[1])
            return st_kernel_refuse(why, len, "parameter %d is not one value a channel", i);
    }
    return st_vk_accepts_float(n, why, len);
}

/* The folded form: all four parameters constant, C within the block. */
static bool batchnorm_accepts(const st_knode *n, char *why, size_t len)
{
    if (!batchnorm_common(n, why, len)) return false;
    if (n->views[0].sizes[1] > 8192) return st_kernel_refuse(why, len, "too many channels for the parameter block");
    for (int i = 1; i < 5; i++) {
        const st_view *v = &n->views[i];
        if (!n->data[i] || (v->dtype != ST_F32 && v->dtype != ST_F16) || st_view_numel(v) != n->views[0].sizes[1] ||
            !st_view_is_contiguous(v))
            return st_kernel_refuse(why, len, "BatchNormalization with parameters computed at run time");
    }
    st_knode m = *n;
    st_view v[2] = {n->views[0], n->views[n->n_in]};
    m.views = v;
    m.n_in = 1;
    m.n_out = 1;
    return rows_fit(&m, why, len);
}

static int reduce_kind(int kind)
{
    switch (kind) {
    case ST_R_SUM: return 0;
    case ST_R_MEAN: return 1;
    case ST_R_MAX: return 2;
    case ST_R_MIN: return 3;
    case ST_R_SUM_SQUARE: return 4;
    case ST_R_L1: return 5;
    case ST_R_L2: return 6;
    }
    return -1;
}

static st_status vk_reduce(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_reduce_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[2];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    /* y's strides over x's shape: 0 on the reduced axes */
    /* mask 0: nothing reduced (noop_with_empty_axes), each row one element */
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    int64_t ys[ST_MAX_RANK];
    int yd = 0;
    for (int d = 0; d < x->rank; d++) {
        if (mask >> d & 1) {
            ys[d] = 0;
            if (s->keepdims) yd++;
        } else {
            ys[d] = y->strides[yd++];
        }
    }
    int32_t p[NP];
    if (!rows_params(x, ys, mask, bind[1].elem, bind[0].elem, p)) return ST_OK;
    p[54] = reduce_kind(s->kind);
    uint32_t groups[3];
    row_groups(c, p[0], groups);
    return st_vk_dispatch(c, st_vk_is_f16(y) ? ST_VKS_reduce_f16 : ST_VKS_reduce_f32, p, NP, 2, bind, groups);
}

static bool rows_fit(const st_knode *n, char *why, size_t len)
{
    const st_view *x = &n->views[0];
    if (x->rank < 1) return st_kernel_refuse(why, len, "a scalar");
    return st_vk_accepts_float(n, why, len);
}

static bool softmax_accepts(const st_knode *n, char *why, size_t len) { return rows_fit(n, why, len); }

static bool layernorm_accepts(const st_knode *n, char *why, size_t len)
{
    const st_norm_state *s = n->state;
    if (s->residual) return st_kernel_refuse(why, len, "a fused residual");
    for (int o = 1; o < n->n_out; o++)
        if (n->views[n->n_in + o].rank >= 0) return st_kernel_refuse(why, len, "LayerNormalization's Mean and InvStdDev outputs");
    const st_view *x = &n->views[0];
    int64_t row = 1;
    for (int d = 0; d < x->rank; d++)
        if (s->mask >> d & 1) row *= x->sizes[d];
    for (int i = 1; i < n->n_in && i < 3; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        if (!st_view_is_contiguous(v) || st_view_numel(v) != row)
            return st_kernel_refuse(why, len, "a broadcast or strided scale or bias");
    }
    return rows_fit(n, why, len);
}

static bool reduce_accepts(const st_knode *n, char *why, size_t len)
{
    const st_reduce_state *s = n->state;
    if (reduce_kind(s->kind) < 0) return st_kernel_refuse(why, len, "%s runs on the CPU", n->op->name);
    for (int i = 1; i < n->n_in; i++)
        if (n->views[i].rank >= 0 && !n->data[i]) return st_kernel_refuse(why, len, "axes computed at run time");
    /* axes come in as a constant input (opset 18) of int64: only input 0 is data */
    const st_view *x = &n->views[0], *y = &n->views[n->n_in];
    st_knode m = *n;
    st_view v[2] = {*x, *y};
    m.views = v;
    m.n_in = 1;
    m.n_out = 1;
    return rows_fit(&m, why, len);
}

#define FL (ST_DT(ST_F32) | ST_DT(ST_F16))
#define REDUCE(name) {name, "", FL, vk_reduce, reduce_accepts, NULL, NULL}
const st_kernel st_vk_k_rows[] = {
    {"Softmax", "", FL, vk_norm, softmax_accepts, NULL, NULL},
    {"LogSoftmax", "", FL, vk_norm, softmax_accepts, NULL, NULL},
    {"LayerNormalization", "", FL, vk_norm, layernorm_accepts, NULL, NULL},
    {"BatchNormalization", "", FL, vk_batchnorm, batchnorm_accepts, bn_prepare, bn_release},
    {"BatchNormalization", "", FL, vk_batchnorm_rt, batchnorm_rt_accepts, NULL, NULL},
    REDUCE("ReduceSum"), REDUCE("ReduceMean"), REDUCE("ReduceMax"), REDUCE("ReduceMin"), REDUCE("ReduceL1"),
    REDUCE("ReduceL2"), REDUCE("ReduceSumSquare"),
    {NULL}
};
