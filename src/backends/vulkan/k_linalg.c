/*
 * k_linalg.c — MatMul and Gemm on Vulkan: one dispatch each of gemm.comp,
 * a register-blocked GEMM tiled through shared memory (64 x 64 blocks of
 * C, or 16 x 64 when M <= 16), with the operands' own strides (a
 * transposed view or transA/transB only swaps strides) and MatMul's
 * broadcast batch dims (a work-group layer per batch).  f32 or f16 data,
 * accumulating in f32.
 * MatMul with a 1-D operand and more than 4 batch dims run on the CPU.
 */
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "ops/linalg.h"

static int32_t fbits(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

/* A work-group computes 64 columns of C and 64 rows (gemm_*) or, when M
 * is 16 or less (a few tokens, a batch of vectors), 16 rows (gemm_s_*):
 * the 64-row tile would compute 48 rows past M for nothing. */
static st_status launch(st_vk_ctx *c, const st_view *y, int32_t *p, const st_vk_bind *bind, int64_t batches)
{
    if (p[0] == 0 || p[1] == 0 || batches == 0) return ST_OK;
    bool f16 = st_vk_is_f16(y), small = p[0] <= 16;
    uint32_t tm = small ? 16 : 64;
    uint32_t groups[3] = {(uint32_t)((p[1] + 63) / 64), (uint32_t)((p[0] + tm - 1) / tm), (uint32_t)batches};
    st_vks id = small ? (f16 ? ST_VKS_gemm_s_f16 : ST_VKS_gemm_s_f32) : (f16 ? ST_VKS_gemm_f16 : ST_VKS_gemm_f32);
    return st_vk_dispatch(c, id, p, 38, 4, bind, groups);
}

static st_status vk_matmul(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_view *a = &k->views[0], *b = &k->views[1], *y = &k->views[2];
    st_vk_bind bind[4];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, a, false, &bind[1]));
    ST_TRY(st_vk_bind_view(c, b, false, &bind[2]));
    bind[3] = (st_vk_bind){0};
    int32_t p[38];
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
    return launch(c, y, p, bind, batches);
}

static st_status vk_gemm(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_matmul_state *s = k->state;
    const st_view *a = &k->views[0], *b = &k->views[1], *y = &k->views[k->n_in];
    const st_view *cv = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    st_vk_bind bind[4];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, a, false, &bind[1]));
    ST_TRY(st_vk_bind_view(c, b, false, &bind[2]));
    bind[3] = (st_vk_bind){0};
    int32_t p[38];
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
    return launch(c, y, p, bind, 1);
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
