/*
 * k_linalg.c — MatMul and Gemm on Vulkan: gemm.comp, a register-blocked
 * GEMM tiled through shared memory (64 x 64 or 16 x 64 blocks of C, K
 * split or not: vk_tiles.c chooses per problem, so a small C with a long
 * K still fills the GPU; a split's partial sums go to the command's
 * scratch and gemm_splitk.comp adds them in a fixed order), with the
 * operands' own strides (a transposed view or transA/transB only swaps
 * strides) and MatMul's broadcast batch dims (a work-group layer per
 * batch).  f32 or f16 data, accumulating in f32.
 * MatMul with a 1-D operand and more than 4 batch dims run on the CPU.
 */
#include <stdio.h>
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_internal.h"
#include "backends/vulkan/vk_tiles.h"
#include "core/status.h"
#include "ops/linalg.h"

static int32_t fbits(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

/* A work-group computes 64 columns of C and 64 rows (gemm_*) or 16 rows
 * (gemm_s_*: for a small M, a few tokens or a batch of vectors, the
 * 64-row tile would compute rows past M for nothing), over all of K or
 * one of `splits` ranges of it (vk_tiles.c chooses both). */
static st_status launch(const st_kctx *k, st_vk_ctx *c, const st_view *y, int32_t *p, st_vk_bind *bind, int64_t batches)
{
    if (p[0] == 0 || p[1] == 0 || batches == 0) return ST_OK;
    bool f16 = st_vk_is_f16(y);
    int64_t plane = (int64_t)p[0] * p[1] * batches;
    int tile, splits;
    if (p[2] == 0) { /* an empty K: C is alpha * 0 + the bias, one pass */
        tile = p[0] <= 16 ? 4 : 0;
        splits = 1;
    } else {
        st_vk_tile_choose(c->dev, "GEMM", ST_VK_TILES_GEMM, ST_VK_TILE_K, p[0], p[1], p[2], batches,
                          st_vk_most_splits(c->dev, plane, batches), &tile, &splits);
    }
    int64_t ksteps = ((int64_t)p[2] + ST_VK_TILE_K - 1) / ST_VK_TILE_K;
    p[38] = splits;
    p[39] = (int32_t)((ksteps + splits - 1) / splits * ST_VK_TILE_K);
    p[40] = (int32_t)batches;
    if (st_vk_tile_log())
        fprintf(stderr, "strata: vulkan %s '%s': M %d, N %d, K %d, batches %lld: tile %s, split %d (%u compute units, %s)\n",
                k->node->op_type, k->node->name, p[0], p[1], p[2], (long long)batches, st_tile_shapes[tile].name, splits,
                c->dev->cus, c->dev->cus_from);
    uint32_t tm = 16 * (uint32_t)st_tile_shapes[tile].rm;
    uint32_t groups[3] = {(uint32_t)((p[1] + 63) / 64), (uint32_t)((p[0] + tm - 1) / tm), (uint32_t)(batches * splits)};
    st_vks id = tile == 4 ? (f16 ? ST_VKS_gemm_s_f16 : ST_VKS_gemm_s_f32) : (f16 ? ST_VKS_gemm_f16 : ST_VKS_gemm_f32);
    if (splits == 1) {
        bind[4] = (st_vk_bind){0};
        return st_vk_dispatch(c, id, p, 41, 5, bind, groups);
    }
    /* pass 1 writes every partial sum of every split, so pass 2 never
     * reads stale bytes */
    int64_t part_bytes = (int64_t)splits * plane * 4;
    ST_TRY(st_vk_scratch(c, part_bytes, true, &bind[4]));
    ST_TRY(st_vk_dispatch(c, id, p, 41, 5, bind, groups));
    st_vk_bind b2[3] = {bind[0], {0}, bind[3]};
    ST_TRY(st_vk_scratch(c, part_bytes, false, &b2[1]));
    uint32_t g2[3];
    st_vk_grid1(c, plane, 256, g2);
    return st_vk_dispatch(c, f16 ? ST_VKS_gemm_splitk_f16 : ST_VKS_gemm_splitk_f32, p, 41, 3, b2, g2);
}

static st_status vk_matmul(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_view *a = &k->views[0], *b = &k->views[1], *y = &k->views[2];
    st_vk_bind bind[5];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, a, false, &bind[1]));
    ST_TRY(st_vk_bind_view(c, b, false, &bind[2]));
    bind[3] = (st_vk_bind){0};
    int32_t p[41];
    memset(p, 0, sizeof p);
    int ra = a->rank, rb = b->rank, ry = y->rank;
    p[0] = (int32_t)a->sizes[ra - 2];
    p[1] = (int32_t)b->sizes[rb - 1];
    p[2] = (int32_t)a->sizes[ra - 1];
    int nbd = ry - 2;
    p[3] = nbd;
    int64_t batches = 1;
    p[8] = bind[1].elem;
    p[9] = (int32_t)a->strides[ra - 2];
    p[10] = (int32_t)a->strides[ra - 1];
    p[15] = bind[2].elem;
    p[16] = (int32_t)b->strides[rb - 2];
    p[17] = (int32_t)b->strides[rb - 1];
    p[22] = bind[0].elem;
    p[23] = (int32_t)y->strides[ry - 2];
    p[24] = (int32_t)y->strides[ry - 1];
    for (int d = 0; d < nbd; d++) {
        p[4 + d] = (int32_t)y->sizes[d];
        batches *= y->sizes[d];
        int da = d - (ry - ra), db = d - (ry - rb);
        p[11 + d] = da >= 0 && a->sizes[da] != 1 ? (int32_t)a->strides[da] : 0;
        p[18 + d] = db >= 0 && b->sizes[db] != 1 ? (int32_t)b->strides[db] : 0;
        p[25 + d] = (int32_t)y->strides[d];
    }
    p[33] = fbits(1.0f);
    return launch(k, c, y, p, bind, batches);
}

static st_status vk_gemm(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_matmul_state *s = k->state;
    const st_view *a = &k->views[0], *b = &k->views[1], *y = &k->views[k->n_in];
    const st_view *cv = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    st_vk_bind bind[5];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, a, false, &bind[1]));
    ST_TRY(st_vk_bind_view(c, b, false, &bind[2]));
    bind[3] = (st_vk_bind){0};
    int32_t p[41];
    memset(p, 0, sizeof p);
    p[0] = (int32_t)y->sizes[0];
    p[1] = (int32_t)y->sizes[1];
    p[2] = (int32_t)(s->trans_a ? a->sizes[0] : a->sizes[1]);
    p[8] = bind[1].elem;
    p[9] = (int32_t)(s->trans_a ? a->strides[1] : a->strides[0]);
    p[10] = (int32_t)(s->trans_a ? a->strides[0] : a->strides[1]);
    p[15] = bind[2].elem;
    p[16] = (int32_t)(s->trans_b ? b->strides[1] : b->strides[0]);
    p[17] = (int32_t)(s->trans_b ? b->strides[0] : b->strides[1]);
    p[22] = bind[0].elem;
    p[23] = (int32_t)y->strides[0];
    p[24] = (int32_t)y->strides[1];
    if (cv && s->beta != 0.0f) {
        ST_TRY(st_vk_bind_view(c, cv, false, &bind[3]));
        int32_t td[ST_VK_TD];
        ST_TRY(st_vk_td_broadcast(cv, y, bind[3].elem, td));
        p[29] = 1;
        p[30] = td[0];
        p[31] = td[10];
        p[32] = td[11];
    }
    p[33] = fbits(s->alpha);
    p[34] = fbits(s->beta);
    return launch(k, c, y, p, bind, 1);
}

/* The bias and activation epilogue is the CPU's (ST_CAP_MATMUL_EPI). */
static bool no_epilogue(const st_knode *n, char *why, size_t len)
{
    const st_matmul_state *s = (const st_matmul_state *)n->state;
    if (s && (s->bias || s->act.act)) return st_kernel_refuse(why, len, "a fused bias or activation");
    return true;
}

static bool gemm_accepts(const st_knode *n, char *why, size_t len)
{
    return no_epilogue(n, why, len) && st_vk_accepts_float(n, why, len);
}

static bool matmul_accepts(const st_knode *n, char *why, size_t len)
{
    if (!no_epilogue(n, why, len) || !st_vk_accepts_float(n, why, len)) return false;
    const st_view *a = &n->views[0], *b = &n->views[1], *y = &n->views[n->n_in];
    if (a->rank < 2 || b->rank < 2) return st_kernel_refuse(why, len, "MatMul of a 1-D operand runs on the CPU");
    if (y->rank - 2 > 4) return st_kernel_refuse(why, len, "MatMul with %d batch dims (4 at most on Vulkan)", y->rank - 2);
    int64_t batches = 1;
    for (int d = 0; d < y->rank - 2; d++) batches *= y->sizes[d];
    if (batches > 65535) return st_kernel_refuse(why, len, "MatMul of %lld matrices", (long long)batches);
    return true;
}

#define FL (ST_DT(ST_F32) | ST_DT(ST_F16))
const st_kernel st_vk_k_linalg[] = {
    {"MatMul", "", FL, vk_matmul, matmul_accepts, NULL, NULL},
    {"Gemm", "", FL, vk_gemm, gemm_accepts, NULL, NULL},
    {NULL}
};
