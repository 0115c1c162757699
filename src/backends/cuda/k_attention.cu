/*
 * k_attention.cu — strata's FusedAttention (ops/linalg.h) on CUDA:
 * softmax(mask(scale(Q K^T))) V, streamed, so the [Tq, Tk] scores never
 * reach global memory.
 *
 * A block of ATT_BQ threads takes ATT_BQ query rows of one head (leading
 * index) and one chunk of at most ATT_DV output columns; each thread owns
 * one query row.  Keys go ATT_BK at a time: the block stages K^T's tile
 * (ATT_DC of dh at a time) and then V's tile in shared memory, each thread
 * makes its ATT_BK scores in registers and folds them into a running max
 * m, a running sum l and its output row (online softmax: when m grows, l
 * and the row are scaled by e^(m_old - m_new)); the row is divided by l at
 * the end.  The same scheme as the OpenCL kernel (opencl/attention.cl).
 *
 * Semantics are the unfused graph's (backends/cpu/k_attention.c): each
 * score is rounded, then scaled (x * c or x / c), then masked (+ M, or
 * `fill` where the bool mask equals fill_when), as the separate ops round
 * it; NaN propagates through the max; a row whose scores are all -inf
 * gives NaN (l = 0, 0 / 0), as Softmax's e^(-inf - -inf) does; Tk = 0
 * gives zeros.  While m is -inf the exponent's base is 0, so masked keys
 * before the first finite one weigh 0 instead of e^(-inf + inf) = NaN.
 * expf is the full-precision one (no --use_fast_math in this build).
 *
 * Every operand is read and written through its own element strides (K^T
 * as a transposed view of K, a padded output; the mask's are 0 where it
 * broadcasts), so nothing is copied first.  f32 only: the op takes f32.
 */
#include "backends/cuda/common.cuh"
extern "C" {
#include "ops/linalg.h"
}

#define ATT_BQ 64
#define ATT_BK 32
#define ATT_DC 32
#define ATT_DV 64
#define ATT_LEAD (ST_MAX_RANK - 2)

struct att_args {
    const float *q, *kt, *v;
    const void *mask;
    float *o;
    int64_t tq, tk, dh, dv;
    int lead;
    int64_t ln[ATT_LEAD];
    int64_t qs[ATT_LEAD], ks[ATT_LEAD], vs[ATT_LEAD], os[ATT_LEAD], ms[ATT_LEAD];
    int64_t q_rs, q_cs, k_rs, k_cs, v_rs, v_cs, o_rs, o_cs, m_rs, m_cs;
    int scale_kind, mask_kind;
    bool fill_when;
    float scale, fill;
};

__global__ void __launch_bounds__(ATT_BQ) attention_kernel(att_args a)
{
    __shared__ float kl[ATT_BK][ATT_DC + 1];
    __shared__ float vl[ATT_BK][ATT_DV];
    const int t = threadIdx.x;
    const int64_t i = (int64_t)blockIdx.x * ATT_BQ + t;
    const bool live = i < a.tq;
    const int64_t c0 = (int64_t)blockIdx.z * ATT_DV;
    const int nc = (int)(a.dv - c0 < ATT_DV ? a.dv - c0 : ATT_DV);
    int64_t h = blockIdx.y, qo = 0, ko = 0, vo = 0, oo = 0, mo = 0;
    for (int d = a.lead - 1; d >= 0; d--) {
        int64_t r = h % a.ln[d];
        h /= a.ln[d];
        qo += r * a.qs[d];
        ko += r * a.ks[d];
        vo += r * a.vs[d];
        oo += r * a.os[d];
        mo += r * a.ms[d];
    }
    if (live) {
        qo += i * a.q_rs;
        mo += i * a.m_rs;
        oo += i * a.o_rs;
    }
    const float inf = __int_as_float(0x7f800000);
    float acc[ATT_DV];
#pragma unroll
    for (int c = 0; c < ATT_DV; c++) acc[c] = 0.0f;
    float m = -inf, l = 0.0f;
    for (int64_t j0 = 0; j0 < a.tk; j0 += ATT_BK) {
        const int nk = (int)(a.tk - j0 < ATT_BK ? a.tk - j0 : ATT_BK);
        float s[ATT_BK];
#pragma unroll
        for (int j = 0; j < ATT_BK; j++) s[j] = 0.0f;
        /* scores: the Q row . K^T's columns, ATT_DC of dh at a time */
        for (int64_t p0 = 0; p0 < a.dh; p0 += ATT_DC) {
            const int np = (int)(a.dh - p0 < ATT_DC ? a.dh - p0 : ATT_DC);
            __syncthreads();
            for (int e = t; e < ATT_BK * ATT_DC; e += ATT_BQ) {
                int j = e / ATT_DC, c = e % ATT_DC;
                kl[j][c] = j < nk && c < np ? a.kt[ko + (p0 + c) * a.k_rs + (j0 + j) * a.k_cs] : 0.0f;
            }
            __syncthreads();
            if (live)
                for (int c = 0; c < np; c++) {
                    float qv = a.q[qo + (p0 + c) * a.q_cs];
#pragma unroll
                    for (int j = 0; j < ATT_BK; j++) s[j] = fmaf(qv, kl[j][c], s[j]);
                }
        }
        /* scale, mask, and the tile's max; keys past Tk weigh 0 */
        float mt = m;
#pragma unroll
        for (int j = 0; j < ATT_BK; j++) {
            float x = s[j];
            if (a.scale_kind == ST_ATT_SCALE_MUL) x = x * a.scale;
            else if (a.scale_kind == ST_ATT_SCALE_DIV) x = x / a.scale;
            if (a.mask && live && j < nk) {
                int64_t at = mo + (j0 + j) * a.m_cs;
                if (a.mask_kind == ST_ATT_MASK_ADD) x = x + ((const float *)a.mask)[at];
                else if ((((const uint8_t *)a.mask)[at] != 0) == a.fill_when) x = a.fill;
            }
            s[j] = x;
            if (j < nk && (x > mt || x != x)) mt = x;
        }
        /* e^(s - base) with base 0 while every score so far is -inf */
        const float base = mt == -inf ? 0.0f : mt;
        const float corr = expf(m - base);
        l *= corr;
#pragma unroll
        for (int c = 0; c < ATT_DV; c++) acc[c] *= corr;
        m = mt;
#pragma unroll
        for (int j = 0; j < ATT_BK; j++) {
            s[j] = j < nk ? expf(s[j] - base) : 0.0f;
            l += s[j];
        }
        /* V's tile, then the row += P V */
        __syncthreads();
        for (int e = t; e < ATT_BK * ATT_DV; e += ATT_BQ) {
            int j = e / ATT_DV, c = e % ATT_DV;
            vl[j][c] = j < nk && c < nc ? a.v[vo + (j0 + j) * a.v_rs + (c0 + c) * a.v_cs] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < ATT_BK; j++) {
#pragma unroll
            for (int c = 0; c < ATT_DV; c++) acc[c] = fmaf(s[j], vl[j][c], acc[c]);
        }
    }
    if (!live) return;
#pragma unroll
    for (int c = 0; c < ATT_DV; c++)
        if (c < nc) a.o[oo + (c0 + c) * a.o_cs] = a.tk == 0 ? 0.0f : acc[c] / l;
}

static st_status cuda_attention(const st_kctx *k)
{
    const st_attention_state *s = (const st_attention_state *)k->state;
    const st_operand *q = &k->in[0], *kt = &k->in[1], *v = &k->in[2], *o = &k->out[0];
    const st_operand *m = k->n_in > 3 && s->mask_kind != ST_ATT_MASK_NONE && k->in[3].data ? &k->in[3] : NULL;
    int r = o->rank;
    if (r < 2)
        return st_error(ST_ERR_INTERNAL, "node '%s': FusedAttention of rank %d reached the CUDA kernel", k->node->name, r);
    att_args a;
    memset(&a, 0, sizeof a);
    a.q = (const float *)q->data;
    a.kt = (const float *)kt->data;
    a.v = (const float *)v->data;
    a.o = (float *)o->data;
    a.tq = q->sizes[r - 2];
    a.dh = q->sizes[r - 1];
    a.tk = kt->sizes[r - 1];
    a.dv = v->sizes[r - 1];
    a.lead = r - 2;
    int64_t heads = 1;
    for (int d = 0; d < r - 2; d++) {
        a.ln[d] = o->sizes[d];
        a.qs[d] = q->strides[d];
        a.ks[d] = kt->strides[d];
        a.vs[d] = v->strides[d];
        a.os[d] = o->strides[d];
        heads *= o->sizes[d];
    }
    a.q_rs = q->strides[r - 2];
    a.q_cs = q->strides[r - 1];
    a.k_rs = kt->strides[r - 2];
    a.k_cs = kt->strides[r - 1];
    a.v_rs = v->strides[r - 2];
    a.v_cs = v->strides[r - 1];
    a.o_rs = o->strides[r - 2];
    a.o_cs = o->strides[r - 1];
    if (m) {
        /* the mask's strides over the scores' shape [..., Tq, Tk]:
         * right-aligned, 0 on its unit dims and on the dims it lacks */
        int64_t ms[ST_MAX_RANK];
        for (int d = 0; d < r; d++) {
            int md = d - (r - m->rank);
            ms[d] = md < 0 || m->sizes[md] == 1 ? 0 : m->strides[md];
        }
        for (int d = 0; d < r - 2; d++) a.ms[d] = ms[d];
        a.m_rs = ms[r - 2];
        a.m_cs = ms[r - 1];
        a.mask = m->data;
        a.mask_kind = s->mask_kind;
    }
    a.scale_kind = s->scale_kind;
    a.scale = s->scale;
    a.fill = s->fill;
    a.fill_when = s->fill_when;
    if (heads == 0 || a.tq == 0 || a.dv == 0) return ST_OK;
    if (heads > 65535)
        return st_error(ST_ERR_INTERNAL, "node '%s': FusedAttention over %lld heads reached the CUDA kernel (65535 at most)",
                        k->node->name, (long long)heads);
    dim3 grid((unsigned)((a.tq + ATT_BQ - 1) / ATT_BQ), (unsigned)heads, (unsigned)((a.dv + ATT_DV - 1) / ATT_DV));
    attention_kernel<<<grid, ATT_BQ, 0, st_stream(k)>>>(a);
    return ST_OK; /* a failed launch: the executor's cudaGetLastError() reports it */
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

/* The grid's y and z dims hold the heads and the output column chunks
 * (65535 at most each): larger ones run on the CPU. */
static bool attention_accepts(const st_knode *n, char *why, size_t len)
{
    /* operand layouts and Q's scale are the CPU kernel's (ST_CAP_ATTENTION_VIEWS) */
    const st_attention_state *s = (const st_attention_state *)n->state;
    if (s && (s->q_scale_kind != ST_ATT_SCALE_NONE || s->lay[ST_ATT_OUT].n || s->lay[ST_ATT_Q].n))
        return st_kernel_refuse(why, len, "FusedAttention with operand layouts (the CPU kernel's form)");
    const st_view *o = &n->views[n->n_in];
    int64_t heads = st_numel(o->rank - 2, o->sizes);
    if (heads > 65535 || (o->sizes[o->rank - 1] + ATT_DV - 1) / ATT_DV > 65535)
        return st_kernel_refuse(why, len, "FusedAttention over %lld heads of %lld columns (CUDA's grid takes 65535 each)",
                                (long long)heads, (long long)o->sizes[o->rank - 1]);
    return true;
}

extern "C" const st_kernel st_cuda_k_attention[] = {
    {"FusedAttention", "ai.strata", ST_DT(ST_F32), cuda_attention, attention_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
