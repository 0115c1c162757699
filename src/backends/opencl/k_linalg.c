/*
 * k_linalg.c — host side of MatMul and Gemm on OpenCL: both become a
 * launch of a tiled st_gemm_t* kernel (gemm.cl) with the operands' own
 * strides (a transposed view or transA/transB only swaps strides) and,
 * for MatMul, the broadcast batch dims; the tile and split of K are
 * cl_tiles.c's choice (STRATA_OPENCL_GEMM_TILE and _SPLITK force them),
 * a split adding st_gemm_splitk.  f32, f16 and bf16 data; the products
 * accumulate in f32.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/linalg.h"

#define GW 16

/* Same layout as st_gemm_p in gemm.cl. */
typedef struct st_cl_gemm_p {
    cl_long m, n, k;
    cl_long a_off, a_rs, a_cs;
    cl_long b_off, b_rs, b_cs;
    cl_long y_off, y_rs, y_cs;
    cl_long c_off, c_rs, c_cs;
    cl_long nb;
    cl_long bn[6], ba[6], bb[6], by[6];
    cl_long a_dt, b_dt, y_dt, c_dt;
    cl_long has_c, act;
    cl_long a_kfast, b_kfast;
    cl_long batches, splits, kchunk;
    cl_float alpha, beta, act_a, act_b;
} st_cl_gemm_p;
_Static_assert(sizeof(st_cl_gemm_p) == 51 * 8 + 16, "st_cl_gemm_p has no padding");

/* The tile kernels, by st_tile_shapes' index. */
static const st_clk TILE_KERNELS[ST_CL_N_TILES] = {ST_CLK_gemm_t64x64, ST_CLK_gemm_t64x32, ST_CLK_gemm_t32x64,
                                                   ST_CLK_gemm_t32x32, ST_CLK_gemm_t16x64};


static int64_t elem_off(const st_view *v) { return v->offset / (int64_t)st_dtype_size(v->dtype); }

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static st_status launch(const st_kctx *k, st_cl_gemm_p *p, cl_mem y, cl_mem a, cl_mem b, cl_mem cm, int64_t batches)
{
    if (p->m == 0 || p->n == 0 || batches == 0) return ST_OK;
    st_cl_ctx *c = k->dev;
    int tile, splits;
    cl_mem part;
    ST_TRY(st_cl_tile_slot(c, &c->dev->gemm_force, k->node, p->m, p->n, p->k, batches, &tile, &splits, &part));
    p->batches = batches;
    p->splits = splits;
    p->kchunk = cdiv(cdiv(p->k, ST_CL_TILE_K), splits) * ST_CL_TILE_K;
    const st_tile_shape *t = &st_tile_shapes[tile];
    st_clk id = TILE_KERNELS[tile];
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, id, &kern));
    st_cl_arg args[] = {ST_CLA(y), ST_CLA(a), ST_CLA(b), ST_CLA(cm), ST_CLA(part), {sizeof *p, p}};
    ST_TRY(st_cl_set_args(kern, id, 6, args));
    size_t global[3] = {(size_t)(cdiv(p->n, GW * t->rn) * GW), (size_t)(cdiv(p->m, GW * t->rm) * GW),
                        (size_t)(batches * splits)};
    size_t local[3] = {GW, GW, 1};
    ST_TRY(st_cl_run(c, kern, id, 3, global, local, true));
    if (splits > 1) {
        ST_TRY(st_cl_kernel(c, ST_CLK_gemm_splitk, &kern));
        st_cl_arg sargs[] = {ST_CLA(y), ST_CLA(cm), ST_CLA(part), {sizeof *p, p}};
        ST_TRY(st_cl_set_args(kern, ST_CLK_gemm_splitk, 4, sargs));
        size_t g2[3] = {(size_t)p->n, (size_t)p->m, (size_t)batches};
        ST_TRY(st_cl_run(c, kern, ST_CLK_gemm_splitk, 3, g2, NULL, true));
    }
    return ST_OK;
}

st_status st_cl_matmul(const st_kctx *k)
{
    const st_view *a = &k->views[0], *b = &k->views[1], *y = &k->views[2];
    bool a_vec = a->rank == 1, b_vec = b->rank == 1;
    st_cl_gemm_p p;
    memset(&p, 0, sizeof p);
    p.m = a_vec ? 1 : a->sizes[a->rank - 2];
    p.k = a->sizes[a->rank - 1];
    p.n = b_vec ? 1 : b->sizes[b->rank - 1];
    p.a_off = elem_off(a);
    p.a_rs = a_vec ? 0 : a->strides[a->rank - 2];
    p.a_cs = a->strides[a->rank - 1];
    p.b_off = elem_off(b);
    p.b_rs = b_vec ? b->strides[0] : b->strides[b->rank - 2];
    p.b_cs = b_vec ? 0 : b->strides[b->rank - 1];
    p.y_off = elem_off(y);
    p.y_rs = a_vec ? 0 : y->strides[b_vec ? y->rank - 1 : y->rank - 2];
    p.y_cs = b_vec ? 0 : y->strides[y->rank - 1];
    int nb = y->rank - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
    if (nb > 6) return st_error(ST_ERR_INTERNAL, "MatMul with %d batch dims reached the kernel (accepts allows 6)", nb);
    int abr = a->rank - (a_vec ? 1 : 2), bbr = b->rank - (b_vec ? 1 : 2);
    int64_t batches = 1;
    for (int d = 0; d < nb; d++) {
        int ka = d - (nb - abr), kb = d - (nb - bbr);
        p.bn[d] = y->sizes[d];
        p.ba[d] = ka < 0 || a->sizes[ka] == 1 ? 0 : a->strides[ka];
        p.bb[d] = kb < 0 || b->sizes[kb] == 1 ? 0 : b->strides[kb];
        p.by[d] = y->strides[d];
        batches *= y->sizes[d];
    }
    p.nb = nb;
    p.a_dt = a->dtype;
    p.b_dt = b->dtype;
    p.y_dt = y->dtype;
    p.c_dt = ST_F32;
    p.a_kfast = p.a_cs == 1 || p.a_rs == 0;
    p.b_kfast = p.b_rs == 1 && p.b_cs != 1;
    p.alpha = 1.0f;
    if (p.k == 0) p.alpha = 0.0f; /* an empty sum: the kernel writes zeros */
    return launch(k, &p, st_cl_mem(y), st_cl_mem(a), st_cl_mem(b), NULL, batches);
}

st_status st_cl_gemm(const st_kctx *k)
{
    const st_matmul_state *s = k->state;
    const st_view *a = &k->views[0], *b = &k->views[1], *y = &k->views[k->n_in];
    const st_view *cv = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    st_cl_gemm_p p;
    memset(&p, 0, sizeof p);
    p.m = y->sizes[0];
    p.n = y->sizes[1];
    p.k = s->trans_a ? a->sizes[0] : a->sizes[1];
    p.a_off = elem_off(a);
    p.a_rs = s->trans_a ? a->strides[1] : a->strides[0];
    p.a_cs = s->trans_a ? a->strides[0] : a->strides[1];
    p.b_off = elem_off(b);
    p.b_rs = s->trans_b ? b->strides[1] : b->strides[0];
    p.b_cs = s->trans_b ? b->strides[0] : b->strides[1];
    p.y_off = elem_off(y);
    p.y_rs = y->strides[0];
    p.y_cs = y->strides[1];
    if (cv && s->beta != 0.0f) {
        st_cl_td ct;
        ST_TRY(st_cl_td_broadcast(cv, y, &ct));
        p.has_c = 1;
        p.c_off = ct.off;
        p.c_rs = ct.s[0];
        p.c_cs = ct.s[1];
        p.c_dt = cv->dtype;
    } else {
        p.c_dt = ST_F32;
    }
    p.a_dt = a->dtype;
    p.b_dt = b->dtype;
    p.y_dt = y->dtype;
    p.a_kfast = p.a_cs == 1;
    p.b_kfast = p.b_rs == 1 && p.b_cs != 1;
    p.alpha = s->alpha;
    p.beta = s->beta;
    return launch(k, &p, st_cl_mem(y), st_cl_mem(a), st_cl_mem(b), p.has_c ? st_cl_mem(cv) : NULL, 1);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

/* The bias and activation epilogue is the CPU's (ST_CAP_MATMUL_EPI). */
static bool no_epilogue(const st_knode *n, char *why, size_t len)
{
    const st_matmul_state *s = (const st_matmul_state *)n->state;
    if (s && (s->bias || s->act.act)) return st_kernel_refuse(why, len, "a fused bias or activation");
    return true;
}

static bool gemm_accepts(const st_knode *n, char *why, size_t len)
{
    return no_epilogue(n, why, len) && st_cl_accepts_f32_family(n, why, len);
}

static bool matmul_accepts(const st_knode *n, char *why, size_t len)
{
    if (!no_epilogue(n, why, len) || !st_cl_accepts_f32_family(n, why, len)) return false;
    const st_view *a = &n->views[0], *b = &n->views[1], *y = &n->views[n->n_in];
    int nb = y->rank - (a->rank == 1 ? 0 : 1) - (b->rank == 1 ? 0 : 1);
    if (nb > 6) return st_kernel_refuse(why, len, "MatMul with %d batch dims (6 at most on OpenCL)", nb);
    return true;
}

const st_kernel st_cl_k_linalg[] = {
    {"MatMul", "", ST_DT_FLOATS, st_cl_matmul, matmul_accepts, NULL, NULL},
    {"Gemm", "", ST_DT_FLOATS, st_cl_gemm, gemm_accepts, NULL, NULL},
    {NULL}
};
