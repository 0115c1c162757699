/*
 * k_conv.c — the windowed ops on Vulkan: Conv with 1 or 2 spatial dims as
 * an implicit GEMM (the im2col columns are never stored): in f16 on
 * tensor cores where the device has cooperative matrices (conv_cm.comp,
 * vk_coopmat.c says when), else register-blocked and tiled through
 * shared memory (conv.comp), with a tile and a
 * split of K chosen per problem (vk_tiles.c; a split's partial sums go
 * to the command's scratch, st_vk_scratch, and conv_splitk.comp adds
 * them in a fixed order), or one output per
 * work-item for depthwise-like convs (conv_direct.comp), bias and the
 * fused activation (st_conv_state's epilogue) applied before the one
 * store; MaxPool, AveragePool and their global forms over 1 or 2 spatial
 * dims (pool.comp).  Every operand is strided, so a Conv writes straight
 * into its slot of a Concat.  3-D windows, ConvTranspose and MaxPool's
 * Indices run on the CPU.
 */
#include <stdio.h>
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/shaders/codes.h"
#include "backends/vulkan/vk_coopmat.h"
#include "backends/vulkan/vk_internal.h"
#include "backends/vulkan/vk_tiles.h"
#include "core/status.h"
#include "ops/conv.h"

int st_vk_unary_code(int code);

static int32_t fbits(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

/* Sizes and strides of an N, C, spatial... operand as N, C, H, W (a 1-D
 * window gets H = 1, stride 0). */
static void nchw(const st_view *v, int nsp, int32_t *sz, int32_t *st)
{
    sz[0] = (int32_t)v->sizes[0];
    sz[1] = (int32_t)v->sizes[1];
    st[0] = (int32_t)v->strides[0];
    st[1] = (int32_t)v->strides[1];
    sz[2] = nsp == 2 ? (int32_t)v->sizes[2] : 1;
    st[2] = nsp == 2 ? (int32_t)v->strides[2] : 0;
    sz[3] = (int32_t)v->sizes[v->rank - 1];
    st[3] = (int32_t)v->strides[v->rank - 1];
}

/* Whether a group of mg output channels runs one output per work-item
 * (conv_direct.comp) rather than as a tiled GEMM (conv.comp): a depthwise
 * conv (one output channel a group) would fill one row of conv_s's 16, so
 * the tile would do 16 times the multiply-adds, and stage a K slice of
 * kh*kw taps (9 of 16 for 3x3) behind two barriers.  On lavapipe a 3x3
 * conv over 80x80 (bench/RESULTS.md, the Vulkan tiling section) ran
 * 2.3 to 16 times as fast direct for 1 to 4 channels a group, about even
 * at 8, and twice as fast tiled at 16: the tile's full rows outrun the
 * direct loop per multiply-add from about half a 16-row tile up. */
static bool direct(int32_t mg) { return mg < 8; }

/* The conv as a GEMM of M = p[17] rows (channels a group), N = P
 * columns and depth K: on tensor cores (conv_cm.comp's 64x64 block) when
 * vk_coopmat.c lets it, else conv.comp with vk_tiles.c's tile; either
 * with vk_tiles.c's split of K (its partial sums added by
 * conv_splitk.comp).  Fills p[39..41]. */
static st_status launch_gemm(const st_kctx *k, st_vk_ctx *c, int32_t *p, st_vk_bind *bind, bool f16, int64_t P, int64_t K)
{
    int64_t OC = p[4], Z = p[15];
    const char *no_cm = st_vk_coopmat_refusal(c->dev, f16, p[17], K);
    int step = no_cm ? ST_VK_TILE_K : ST_VK_CM_TK, tile, splits;
    /* conv_cm.comp's block is tile 0's 64x64 */
    st_vk_tile_choose(c->dev, "CONV", no_cm ? ST_VK_TILES_ALL : 1u, step, p[17], P, K, Z,
                      st_vk_most_splits(c->dev, OC * P, Z), &tile, &splits);
    const st_tile_shape *sh = &st_tile_shapes[tile];
    int64_t ksteps = (K + step - 1) / step;
    p[39] = splits;
    p[40] = (int32_t)((ksteps + splits - 1) / splits * step);
    p[41] = (int32_t)P;
    if (st_vk_tile_log())
        fprintf(stderr,
                "strata: vulkan Conv '%s': M %d, N %lld, K %lld, groups %d: path %s%s%s, tile %s, split %d (%u compute units, %s)\n",
                k->node->name, p[17], (long long)P, (long long)K, p[15],
                no_cm ? "tiled (no coopmat: " : c->dev->coopmat ? "coopmat" : "coopmat emulated", no_cm ? no_cm : "",
                no_cm ? ")" : "", sh->name, splits, c->dev->cus, c->dev->cus_from);
    uint32_t tm = 16 * (uint32_t)sh->rm, tn = 16 * (uint32_t)sh->rn;
    uint32_t groups[3] = {(uint32_t)((P + tn - 1) / tn), (uint32_t)((p[17] + tm - 1) / tm), (uint32_t)(Z * splits)};
    st_vks id = no_cm ? (f16 ? st_vk_tiles[tile].f16 : st_vk_tiles[tile].f32)
                      : !c->dev->coopmat   ? ST_VKS_conv_cm_emu_f16
                      : c->dev->coopmat_n == 8 ? ST_VKS_conv_cm_n8_f16
                                               : ST_VKS_conv_cm_f16;
    if (splits == 1) {
        bind[4] = (st_vk_bind){0};
        return st_vk_dispatch(c, id, p, 42, 5, bind, groups);
    }
    /* pass 1 writes every partial sum of every split (each work-group
     * all of its in-range outputs), so pass 2 never reads stale bytes */
    int64_t part_bytes = (int64_t)splits * OC * P * 4;
    ST_TRY(st_vk_scratch(c, part_bytes, true, &bind[4]));
    ST_TRY(st_vk_dispatch(c, id, p, 42, 5, bind, groups));
    st_vk_bind b2[3] = {bind[0], {0}, bind[3]};
    ST_TRY(st_vk_scratch(c, part_bytes, false, &b2[1]));
    uint32_t g2[3];
    st_vk_grid1(c, OC * P, 256, g2);
    return st_vk_dispatch(c, f16 ? ST_VKS_conv_splitk_f16 : ST_VKS_conv_splitk_f32, p, 42, 3, b2, g2);
}

static st_status vk_conv(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *w = &k->views[1], *y = &k->views[k->n_in];
    const st_view *b = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    if (st_view_numel(y) == 0) return ST_OK;
    st_vk_bind bind[5];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, x, false, &bind[1]));
    ST_TRY(st_vk_bind_view(c, w, false, &bind[2]));
    bind[3] = (st_vk_bind){0};
    if (b) ST_TRY(st_vk_bind_view(c, b, false, &bind[3]));
    int nsp = s->nsp, h = nsp == 2 ? 0 : -1; /* index of the H dim in s->k etc, -1: none */
    int32_t p[42];
    memset(p, 0, sizeof p);
    int32_t xs[4], xst[4], ys[4], yst[4], ws[4], wst[4];
    nchw(x, nsp, xs, xst);
    nchw(y, nsp, ys, yst);
    nchw(w, nsp, ws, wst);
    p[0] = xs[0];
    p[1] = xs[1];
    p[2] = xs[2];
    p[3] = xs[3];
    p[4] = ys[1];
    p[5] = ys[2];
    p[6] = ys[3];
    p[7] = ws[2];
    p[8] = ws[3];
    int wi = nsp - 1;
    p[9] = h >= 0 ? (int32_t)s->s[0] : 1;
    p[10] = (int32_t)s->s[wi];
    p[11] = h >= 0 ? (int32_t)s->pb[0] : 0;
    p[12] = (int32_t)s->pb[wi];
    p[13] = h >= 0 ? (int32_t)s->d[0] : 1;
    p[14] = (int32_t)s->d[wi];
    p[15] = (int32_t)s->group;
    p[16] = (int32_t)(xs[1] / s->group);
    p[17] = (int32_t)(ys[1] / s->group);
    p[18] = bind[1].elem;
    memcpy(p + 19, xst, sizeof xst);
    p[23] = bind[2].elem;
    memcpy(p + 24, wst, sizeof wst);
    p[28] = bind[0].elem;
    memcpy(p + 29, yst, sizeof yst);
    if (b) {
        p[33] = 1;
        p[34] = bind[3].elem;
        p[35] = (int32_t)b->strides[0];
    }
    p[36] = s->epi.act ? st_vk_unary_code(s->epi.act - 1) : 0;
    p[37] = fbits(s->epi.alpha);
    p[38] = fbits(s->epi.beta);
    bool f16 = st_vk_is_f16(y);
    if (direct(p[17])) {
        if (st_vk_tile_log())
            fprintf(stderr, "strata: vulkan Conv '%s': M %d, groups %d: path direct (fewer than 8 channels a group)\n",
                    k->node->name, p[17], p[15]);
        p[39] = (int32_t)st_view_numel(y);
        uint32_t groups[3];
        st_vk_grid1(c, p[39], 256, groups);
        return st_vk_dispatch(c, f16 ? ST_VKS_conv_direct_f16 : ST_VKS_conv_direct_f32, p, 40, 4, bind, groups);
    }
    int64_t P = (int64_t)ys[0] * ys[2] * ys[3], K = (int64_t)p[16] * ws[2] * ws[3];
    return launch_gemm(k, c, p, bind, f16, P, K);
}

static st_status vk_pool(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[2];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    int nsp = x->rank - 2, wi = nsp - 1;
    bool hd = nsp == 2;
    int32_t p[28];
    memset(p, 0, sizeof p);
    int32_t xs[4], xst[4], ys[4], yst[4];
    nchw(x, nsp, xs, xst);
    nchw(y, nsp, ys, yst);
    bool global = strncmp(k->node->op->name, "Global", 6) == 0;
    p[0] = (int32_t)n;
    p[1] = xs[1];
    p[2] = xs[2];
    p[3] = xs[3];
    p[4] = ys[2];
    p[5] = ys[3];
    p[6] = global ? xs[2] : hd ? (int32_t)s->k[0] : 1;
    p[7] = global ? xs[3] : (int32_t)s->k[wi];
    p[8] = global || !hd ? 1 : (int32_t)s->s[0];
    p[9] = global ? 1 : (int32_t)s->s[wi];
    p[10] = global || !hd ? 0 : (int32_t)s->pb[0];
    p[11] = global ? 0 : (int32_t)s->pb[wi];
    p[12] = global || !hd ? 1 : (int32_t)s->d[0];
    p[13] = global ? 1 : (int32_t)s->d[wi];
    p[14] = global ? strcmp(k->node->op->name, "GlobalMaxPool") == 0 : s->is_max;
    p[15] = global ? 0 : s->count_include_pad;
    p[16] = global || !hd ? 0 : (int32_t)s->pe[0];
    p[17] = global ? 0 : (int32_t)s->pe[wi];
    p[18] = bind[1].elem;
    memcpy(p + 19, xst, sizeof xst);
    p[23] = bind[0].elem;
    memcpy(p + 24, yst, sizeof yst);
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    return st_vk_dispatch(c, st_vk_is_f16(y) ? ST_VKS_pool_f16 : ST_VKS_pool_f32, p, 28, 2, bind, groups);
}

static bool win_accepts(const st_knode *n, char *why, size_t len)
{
    const st_conv_state *s = n->state;
    const st_view *x = &n->views[0];
    if (x->rank != 3 && x->rank != 4) return st_kernel_refuse(why, len, "%d-D windows run on the CPU", x->rank - 2);
    if (n->n_out > 1 && n->views[n->n_in + 1].rank >= 0) return st_kernel_refuse(why, len, "MaxPool's Indices");
    if (s && (s->ch_scale || s->ch_shift || s->post_scale || s->post_shift))
        return st_kernel_refuse(why, len, "a per-channel affine epilogue");
    if (s && s->residual) return st_kernel_refuse(why, len, "a residual operand (CUDA's fused Conv + Add)");
    if (s && s->epi.act && !st_vk_unary_code(s->epi.act - 1)) return st_kernel_refuse(why, len, "a fused activation without a shader");
    if (s && s->p) return st_kernel_refuse(why, len, "LpPool");
    if (s && s->storage_order) return st_kernel_refuse(why, len, "storage_order");
    if (s && strcmp(n->op->name, "Conv") == 0 && s->group > 65535) return st_kernel_refuse(why, len, "%lld groups", (long long)s->group);
    return st_vk_accepts_float(n, why, len);
}

#define FL (ST_DT(ST_F32) | ST_DT(ST_F16))
const st_kernel st_vk_k_conv[] = {
    {"Conv", "", FL, vk_conv, win_accepts, NULL, NULL},
    {"MaxPool", "", FL, vk_pool, win_accepts, NULL, NULL},
    {"AveragePool", "", FL, vk_pool, win_accepts, NULL, NULL},
    {"GlobalAveragePool", "", FL, vk_pool, win_accepts, NULL, NULL},
    {"GlobalMaxPool", "", FL, vk_pool, win_accepts, NULL, NULL},
    {NULL}
};
