/*
 * k_qlinear.cu — the quantized elementwise ops on CUDA: QLinearLookup,
 * QLinearConcat, QLinearAdd and QLinearMul, the ops a QDQ model's
 * elementwise groups fuse into (passes/fuse_qdq.c), bit-identical with
 * the CPU's backends/cpu/k_qlinear.c and OpenCL's k_qlinear.c:
 *   - Lookup: y = table[x], the table the fusion computed with the CPU's
 *     kernels;
 *   - Concat: each input through a table of its requantization,
 *     q_round((float)(x - x_zp) * x_scale / y_scale) + y_zp, built on the
 *     host with the CPU's arithmetic;
 *   - Add / Mul: (float)(a - a_zp) * a_scale, the same for b, the float op,
 *     then / c_scale quantized; every step rounded on its own (__fmul_rn,
 *     __fadd_rn, __fdiv_rn: no contraction into an fma, IEEE division).
 * Why on the device: without them a fused QDQ model bounced its int8
 * tensors to the CPU for each of these ops, so CUDA did not declare
 * ST_CAP_QDQ and ran QDQ models unfused, f32 between Q/DQ pairs, whose
 * float convs round boundary values differently from ONNX Runtime's
 * integer ones (the H200 QDQ YOLOv8n: up to 6.97, about 3 output steps).
 *
 * Scales and zero points are read on the host once, when the command is
 * prepared: the fusion makes these ops from constant ones only, and an
 * exported model's are initializers; accepts refuses others (they run on
 * the CPU).  Those checks, the parameters, the tables and each launch's
 * walk (broadcast strides, a Concat input's slot) are the OpenCL
 * backend's too: ops/lower_qlinear.c computes them once.
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cuda/common.cuh"
extern "C" {
#include "ops/lower_qlinear.h"
}
#include "ops/qlinear.h"

#define THREADS 256

struct qtab {
    uint8_t t[256];
};

/* What prepare read: the binary ops' parameters (the kernel takes the
 * lowered struct as it is), or the tables (the lookup's one, one per
 * Concat input). */
struct ql_priv {
    st_lql_binary bin;
    int n_tab;
    qtab tab[1];
};

static st_status prepare(const st_knode *n, void **priv)
{
    const char *op = n->op->name;
    bool concat = strcmp(op, "QLinearConcat") == 0, lookup = strcmp(op, "QLinearLookup") == 0;
    int n_tab = concat ? st_lql_concat_count(n->n_in) : 1;
    ql_priv *q = (ql_priv *)calloc(1, sizeof *q + (size_t)n_tab * sizeof(qtab));
    if (!q) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for %s's parameters", n->node->name, op);
    q->n_tab = n_tab;
    if (lookup) {
        st_lower_qlookup_table(n, q->tab[0].t);
    } else if (concat) {
        for (int t = 0; t < n_tab; t++) st_lower_qconcat_table(n, t, q->tab[t].t);
    } else {
        st_lower_qbinary_params(n, &q->bin);
    }
    *priv = q;
    return ST_OK;
}

static void release(void *priv) { free(priv); }

/* ---- y = table[x] ---- */

__global__ void qlut_kernel(st_walk w, uint8_t *y, const uint8_t *x, qtab t)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        y[off[0]] = t.t[x[off[1]]];
    }
}

/* y = tab[x] over lowered walk w (ops/lower_qlinear.h); y and x are
 * 8-bit, so w's element offsets are byte offsets. */
static void lut(const st_kctx *k, const st_lql_walk *w, const qtab *tab)
{
    uint8_t *y = (uint8_t *)k->out[0].data + w->y_off;
    const uint8_t *x = (const uint8_t *)k->in[w->operand[ST_LQL_A]].data;
    st_walk wk = st_walk2(w->rank, w->n, w->s[ST_LQL_Y], w->s[ST_LQL_A]);
    if (wk.n) qlut_kernel<<<st_blocks(wk.n, THREADS), THREADS, 0, st_stream(k)>>>(wk, y, x, *tab);
}

static st_status st_cuda_qlookup(const st_kctx *k)
{
    const ql_priv *q = (const ql_priv *)k->priv;
    st_lql_walk w;
    st_lower_qunary_walk(k, &w);
    lut(k, &w, &q->tab[0]);
    return ST_OK;
}

static st_status st_cuda_qconcat(const st_kctx *k)
{
    const ql_priv *q = (const ql_priv *)k->priv;
    for (int t = 0; t < q->n_tab; t++) {
        st_lql_walk w;
        st_lower_qconcat_walk(k, t, &w);
        lut(k, &w, &q->tab[t]);
    }
    return ST_OK;
}

/* ---- QLinearAdd, QLinearMul ---- */

/* round half to even, NaN to 0, saturate to [lo, hi] less zp, add zp */
__device__ __forceinline__ int requant(float f, int zp, int lo, int hi)
{
    float r = isnan(f) ? 0.0f : rintf(f);
    float flo = (float)(lo - zp), fhi = (float)(hi - zp);
    r = r < flo ? flo : r > fhi ? fhi : r;
    return (int)r + zp;
}

__global__ void qbinary_kernel(st_walk w, uint8_t *y, const uint8_t *a, const uint8_t *b, st_lql_binary p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        int va = p.a_signed ? (int)(int8_t)a[off[1]] : (int)a[off[1]];
        int vb = p.a_signed ? (int)(int8_t)b[off[2]] : (int)b[off[2]];
        float fa = __fmul_rn((float)(va - p.za), p.sa), fb = __fmul_rn((float)(vb - p.zb), p.sb);
        float f = p.mul ? __fmul_rn(fa, fb) : __fadd_rn(fa, fb);
        y[off[0]] = (uint8_t)requant(__fdiv_rn(f, p.sc), p.zc, p.c_signed ? -128 : 0, p.c_signed ? 127 : 255);
    }
}

static st_status st_cuda_qbinary(const st_kctx *k)
{
    const ql_priv *q = (const ql_priv *)k->priv;
    st_lql_walk w;
    st_lower_qbinary_walk(k, &w);
    st_walk wk = st_walk3(w.rank, w.n, w.s[ST_LQL_Y], w.s[ST_LQL_A], w.s[ST_LQL_B]);
    if (wk.n)
        qbinary_kernel<<<st_blocks(wk.n, THREADS), THREADS, 0, st_stream(k)>>>(wk, (uint8_t *)k->out[0].data, (const uint8_t *)k->in[0].data,
                                                                               (const uint8_t *)k->in[3].data, q->bin);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

extern "C" const st_kernel st_cuda_k_qlinear[] = {
    {"QLinearAdd", "com.microsoft", ST_CUDA_DT, st_cuda_qbinary, st_lql_accepts_binary, prepare, release},
    {"QLinearMul", "com.microsoft", ST_CUDA_DT, st_cuda_qbinary, st_lql_accepts_binary, prepare, release},
    {"QLinearLookup", "ai.strata", ST_CUDA_DT, st_cuda_qlookup, st_lql_accepts_lookup, prepare, release},
    {"QLinearConcat", "com.microsoft", ST_CUDA_DT, st_cuda_qconcat, st_lql_accepts_concat, prepare, release},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
