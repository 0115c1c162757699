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
 * broadcasts), so nothing is copied first.  f32, and f16 (a session's
 * lowered precision): f16 operands of the common head sizes run on the
 * tensor cores (flash_kernel below), the others here, computed in f32.
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
    const void *q, *kt, *v;
    const void *mask;
    void *o;
    int64_t tq, tk, dh, dv;
    int lead;
    int64_t ln[ATT_LEAD];
    int64_t qs[ATT_LEAD], ks[ATT_LEAD], vs[ATT_LEAD], os[ATT_LEAD], ms[ATT_LEAD];
    int64_t q_rs, q_cs, k_rs, k_cs, v_rs, v_cs, o_rs, o_cs, m_rs, m_cs;
    int scale_kind, mask_kind;
    bool mask_f16; /* an additive mask of f16 (the session's lowered precision), else f32 */
    bool fill_when;
    float scale, fill;
};

__device__ __forceinline__ float att_ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float att_ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void att_st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void att_st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }

/* The element offsets of head h (the leading index, row-major over ln)
 * in each operand. */
__device__ __forceinline__ void att_head(const att_args &a, int64_t h, int64_t *qo, int64_t *ko, int64_t *vo, int64_t *oo,
                                         int64_t *mo)
{
    *qo = *ko = *vo = *oo = *mo = 0;
    for (int d = a.lead - 1; d >= 0; d--) {
        int64_t r = h % a.ln[d];
        h /= a.ln[d];
        *qo += r * a.qs[d];
        *ko += r * a.ks[d];
        *vo += r * a.vs[d];
        *oo += r * a.os[d];
        *mo += r * a.ms[d];
    }
}

/* A score after its scale and mask, as the unfused Mul/Div and Add/Where
 * make it (the mask element at offset `at`). */
__device__ __forceinline__ float att_scale_mask(const att_args &a, float x, int64_t at, bool masked)
{
    if (a.scale_kind == ST_ATT_SCALE_MUL) x = x * a.scale;
    else if (a.scale_kind == ST_ATT_SCALE_DIV) x = x / a.scale;
    if (masked) {
        if (a.mask_kind == ST_ATT_MASK_ADD)
            x = x + (a.mask_f16 ? __half2float(((const __half *)a.mask)[at]) : ((const float *)a.mask)[at]);
        else if ((((const uint8_t *)a.mask)[at] != 0) == a.fill_when)
            x = a.fill;
    }
    return x;
}

/* The general kernel: any strides, any dh and dv, f32 or f16 operands
 * computed in f32.  Grid: x the heads, y the query blocks, z the output
 * column chunks. */
template <typename T>
__global__ void __launch_bounds__(ATT_BQ) attention_kernel(att_args a)
{
    __shared__ float kl[ATT_BK][ATT_DC + 1];
    __shared__ float vl[ATT_BK][ATT_DV];
    const T *Q = (const T *)a.q, *KT = (const T *)a.kt, *V = (const T *)a.v;
    const int t = threadIdx.x;
    const int64_t i = (int64_t)blockIdx.y * ATT_BQ + t;
    const bool live = i < a.tq;
    const int64_t c0 = (int64_t)blockIdx.z * ATT_DV;
    const int nc = (int)(a.dv - c0 < ATT_DV ? a.dv - c0 : ATT_DV);
    int64_t qo, ko, vo, oo, mo;
    att_head(a, blockIdx.x, &qo, &ko, &vo, &oo, &mo);
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
                kl[j][c] = j < nk && c < np ? att_ld(KT, ko + (p0 + c) * a.k_rs + (j0 + j) * a.k_cs) : 0.0f;
            }
            __syncthreads();
            if (live)
                for (int c = 0; c < np; c++) {
                    float qv = att_ld(Q, qo + (p0 + c) * a.q_cs);
#pragma unroll
                    for (int j = 0; j < ATT_BK; j++) s[j] = fmaf(qv, kl[j][c], s[j]);
                }
        }
        /* scale, mask, and the tile's max; keys past Tk weigh 0 */
        float mt = m;
#pragma unroll
        for (int j = 0; j < ATT_BK; j++) {
            float x = att_scale_mask(a, s[j], mo + (j0 + j) * a.m_cs, a.mask && live && j < nk);
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
            vl[j][c] = j < nk && c < nc ? att_ld(V, vo + (j0 + j) * a.v_rs + (c0 + c) * a.v_cs) : 0.0f;
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
        if (c < nc) att_st((T *)a.o, oo + (c0 + c) * a.o_cs, a.tk == 0 ? 0.0f : acc[c] / l);
}

/* ---- f16 on the tensor cores ----
 *
 * The flash-attention scheme with mma.sync m16n8k16 (f16 x f16 -> f32,
 * sm_80+): a block of 4 warps takes 64 query rows of one head, each warp
 * 16 of them, and walks the keys 64 at a time.  Q's fragments stay in
 * registers; each key tile of K (or K^T) and V is staged in shared memory
 * and read into fragments with ldmatrix (.trans where the operand's rows
 * run the other way).  A warp's scores S = Q K^T (16 x 64, f32) stay in
 * its accumulators, whose layout (row g = lane / 4 and g + 8, columns
 * 2 (lane % 4) and + 1 of each 8-wide tile) is exactly the A fragment of
 * the next product once packed to f16 pairs: P V needs no shuffle.  The
 * online softmax keeps each row's running max (shared by the 4 lanes of a
 * row through two shuffles) and a per-lane partial sum, summed at the end.
 *
 * Against the general kernel: the scores are computed from f16 operands
 * in f32 as before, and P is rounded to f16 for the tensor cores (the
 * unfused graph stores P in f16 too).  Taken when dh = dv is 32, 64 or
 * 128 and Q, V and the output's rows are unit-stride (K^T either way). */

#define FA_BQ 64
#define FA_BK 64

__device__ __forceinline__ void fa_mma(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void fa_ldm(uint32_t *r, const __half *p)
{
    uint32_t at = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at));
}

__device__ __forceinline__ void fa_ldm_t(uint32_t *r, const __half *p)
{
    uint32_t at = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(at));
}

__device__ __forceinline__ uint32_t fa_pack(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *(uint32_t *)&h;
}

/* NaN wins, as the unfused Softmax's max lets it through */
__device__ __forceinline__ float fa_max(float a, float b) { return a > b || a != a ? a : b; }

/* rows x cols halves from src (row r at r * pitch, unit-stride columns)
 * into dst (pitch ld); rows at or past `rows_ok` and columns at or past
 * `cols_ok` are zero.  16-byte loads where `vec` says src allows them. */
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void fa_stage(__half *dst, const __half *src, int64_t pitch, int rows_ok, int cols_ok, bool vec)
{
    const int t = threadIdx.x;
    if (vec) {
        for (int e = t; e < ROWS * COLS / 8; e += 128) {
            int r = e / (COLS / 8), c = e % (COLS / 8) * 8;
            uint4 x = make_uint4(0, 0, 0, 0);
            if (r < rows_ok && c + 8 <= cols_ok) {
                x = *(const uint4 *)(src + r * pitch + c);
            } else if (r < rows_ok) {
                __half *h = (__half *)&x;
                for (int k = 0; k < 8; k++) h[k] = c + k < cols_ok ? src[r * pitch + c + k] : __float2half(0.0f);
            }
            *(uint4 *)(dst + r * LD + c) = x;
        }
    } else {
        for (int e = t; e < ROWS * COLS; e += 128) {
            int r = e / COLS, c = e % COLS;
            dst[r * LD + c] = r < rows_ok && c < cols_ok ? src[r * pitch + c] : __float2half(0.0f);
        }
    }
}

/* KT_ROWS: K^T arrives as a transposed view of K (a key's dh values
 * adjacent: k_rs 1), else as K^T itself (k_cs 1). */
template <int D, bool KT_ROWS>
__global__ void __launch_bounds__(128) flash_kernel(att_args a, bool vq, bool vk, bool vv)
{
    constexpr int LQ = D + 8;            /* pitches in halves: rows stay 16-byte aligned, banks spread */
    constexpr int LKT = FA_BK + 8;
    constexpr int K_HALVES = KT_ROWS ? FA_BK * LQ : D * LKT;
    constexpr int Q_HALVES = FA_BQ * LQ;
    __shared__ __align__(16) __half ksm[K_HALVES > Q_HALVES ? K_HALVES : Q_HALVES];
    __shared__ __align__(16) __half vsm[FA_BK * LQ];
    const __half *Q = (const __half *)a.q, *KT = (const __half *)a.kt, *V = (const __half *)a.v;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int64_t i0 = (int64_t)blockIdx.y * FA_BQ;
    int64_t qo, ko, vo, oo, mo;
    att_head(a, blockIdx.x, &qo, &ko, &vo, &oo, &mo);
    const float inf = __int_as_float(0x7f800000);

    /* Q's 64 rows through shared memory into each warp's A fragments */
    const int q_ok = (int)(a.tq - i0 < FA_BQ ? a.tq - i0 : FA_BQ);
    fa_stage<FA_BQ, D, LQ>(ksm, Q + qo + i0 * a.q_rs, a.q_rs, q_ok, D, vq);
    __syncthreads();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        fa_ldm(qf[kk], &ksm[(warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LQ + kk * 16 + (lane >> 4) * 8]);

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m0 = -inf, m1 = -inf, l0 = 0.0f, l1 = 0.0f; /* rows g and g + 8 */
    const int64_t r0 = i0 + warp * 16 + g, r1 = r0 + 8;
    const bool live0 = r0 < a.tq, live1 = r1 < a.tq;

    for (int64_t j0 = 0; j0 < a.tk; j0 += FA_BK) {
        const int k_ok = (int)(a.tk - j0 < FA_BK ? a.tk - j0 : FA_BK);
        __syncthreads(); /* the last tile's readers are done (and Q's) */
        if (KT_ROWS)
            fa_stage<FA_BK, D, LQ>(ksm, KT + ko + j0 * a.k_cs, a.k_cs, k_ok, D, vk);
        else
            fa_stage<D, FA_BK, LKT>(ksm, KT + ko + j0, a.k_rs, D, k_ok, vk);
        fa_stage<FA_BK, D, LQ>(vsm, V + vo + j0 * a.v_rs, a.v_rs, k_ok, D, vv);
        __syncthreads();

        float s[FA_BK / 8][4];
#pragma unroll
        for (int n = 0; n < FA_BK / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
            for (int n2 = 0; n2 < FA_BK / 16; n2++) {
                uint32_t b[4];
                if (KT_ROWS) /* rows are keys: matrices (keys +0/+8) x (dh +0/+8) */
                    fa_ldm(b, &ksm[(n2 * 16 + (lane & 7) + (lane >> 4) * 8) * LQ + kk * 16 + ((lane >> 3) & 1) * 8]);
                else /* rows are dh: the transposed load gives the same fragments */
                    fa_ldm_t(b, &ksm[(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LKT + n2 * 16 + (lane >> 4) * 8]);
                fa_mma(s[2 * n2], qf[kk], b[0], b[1]);
                fa_mma(s[2 * n2 + 1], qf[kk], b[2], b[3]);
            }
        }

        /* scale, mask, keys past Tk to -inf; the rows' maxima */
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int n = 0; n < FA_BK / 8; n++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int j = n * 8 + 2 * t4 + (e & 1);
                const bool row_live = e < 2 ? live0 : live1;
                const int64_t at = mo + (e < 2 ? r0 : r1) * a.m_rs + (j0 + j) * a.m_cs;
                float x = j < k_ok ? att_scale_mask(a, s[n][e], at, a.mask && row_live) : -inf;
                s[n][e] = x;
                if (e < 2) mx0 = fa_max(mx0, x);
                else mx1 = fa_max(mx1, x);
            }
        }
#pragma unroll
        for (int sh = 1; sh < 4; sh <<= 1) {
            mx0 = fa_max(mx0, __shfl_xor_sync(0xffffffffu, mx0, sh));
            mx1 = fa_max(mx1, __shfl_xor_sync(0xffffffffu, mx1, sh));
        }
        const float base0 = mx0 == -inf ? 0.0f : mx0, base1 = mx1 == -inf ? 0.0f : mx1;
        const float c0 = expf(m0 - base0), c1 = expf(m1 - base1);
        m0 = mx0;
        m1 = mx1;
        l0 *= c0;
        l1 *= c1;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[n][0] *= c0;
            o[n][1] *= c0;
            o[n][2] *= c1;
            o[n][3] *= c1;
        }
#pragma unroll
        for (int n = 0; n < FA_BK / 8; n++) {
            s[n][0] = expf(s[n][0] - base0);
            s[n][1] = expf(s[n][1] - base0);
            s[n][2] = expf(s[n][2] - base1);
            s[n][3] = expf(s[n][3] - base1);
            l0 += s[n][0] + s[n][1];
            l1 += s[n][2] + s[n][3];
        }

        /* O += P V: P's accumulators are the A fragments; V's rows are keys */
#pragma unroll
        for (int kk = 0; kk < FA_BK / 16; kk++) {
            const uint32_t pa[4] = {fa_pack(s[2 * kk][0], s[2 * kk][1]), fa_pack(s[2 * kk][2], s[2 * kk][3]),
                                    fa_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                    fa_pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int n2 = 0; n2 < D / 16; n2++) {
                uint32_t b[4];
                fa_ldm_t(b, &vsm[(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LQ + n2 * 16 + (lane >> 4) * 8]);
                fa_mma(o[2 * n2], pa, b[0], b[1]);
                fa_mma(o[2 * n2 + 1], pa, b[2], b[3]);
            }
        }
    }
#pragma unroll
    for (int sh = 1; sh < 4; sh <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, sh);
        l1 += __shfl_xor_sync(0xffffffffu, l1, sh);
    }
    __half *O = (__half *)a.o;
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        const int64_t c = n * 8 + 2 * t4;
        if (live0) {
            O[oo + r0 * a.o_rs + c * a.o_cs] = __float2half_rn(a.tk == 0 ? 0.0f : o[n][0] / l0);
            O[oo + r0 * a.o_rs + (c + 1) * a.o_cs] = __float2half_rn(a.tk == 0 ? 0.0f : o[n][1] / l0);
        }
        if (live1) {
            O[oo + r1 * a.o_rs + c * a.o_cs] = __float2half_rn(a.tk == 0 ? 0.0f : o[n][2] / l1);
            O[oo + r1 * a.o_rs + (c + 1) * a.o_cs] = __float2half_rn(a.tk == 0 ? 0.0f : o[n][3] / l1);
        }
    }
}

/* 16-byte loads need the rows and the first element 16-byte aligned. */
static bool fa_vec(const void *base, int64_t off, int64_t pitch)
{
    return pitch % 8 == 0 && ((uintptr_t)((const __half *)base + off) & 15) == 0;
}

template <int D>
static void flash_launch(const att_args &a, dim3 grid, cudaStream_t st)
{
    bool vq = fa_vec(a.q, 0, a.q_rs), vv = fa_vec(a.v, 0, a.v_rs);
    for (int d = 0; d < a.lead; d++) {
        vq = vq && a.qs[d] % 8 == 0;
        vv = vv && a.vs[d] % 8 == 0;
    }
    bool rows = a.k_rs == 1;
    bool vk = fa_vec(a.kt, 0, rows ? a.k_cs : a.k_rs);
    for (int d = 0; d < a.lead; d++) vk = vk && a.ks[d] % 8 == 0;
    if (rows) flash_kernel<D, true><<<grid, 128, 0, st>>>(a, vq, vk, vv);
    else flash_kernel<D, false><<<grid, 128, 0, st>>>(a, vq, vk, vv);
}

/* Whether the tensor-core kernel takes these f16 operands. */
static bool flash_fits(const att_args &a)
{
    return a.dh == a.dv && (a.dh == 32 || a.dh == 64 || a.dh == 128) && a.q_cs == 1 && a.v_cs == 1 &&
           (a.k_rs == 1 || a.k_cs == 1) && (a.tq + FA_BQ - 1) / FA_BQ <= 65535;
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
    a.q = q->data;
    a.kt = kt->data;
    a.v = v->data;
    a.o = o->data;
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
        a.mask_f16 = m->dtype == ST_F16;
    }
    a.scale_kind = s->scale_kind;
    a.scale = s->scale;
    a.fill = s->fill;
    a.fill_when = s->fill_when;
    if (heads == 0 || a.tq == 0 || a.dv == 0) return ST_OK;
    if (heads > INT32_MAX)
        return st_error(ST_ERR_INTERNAL, "node '%s': FusedAttention over %lld heads reached the CUDA kernel", k->node->name,
                        (long long)heads);
    cudaStream_t st = st_stream(k);
    if (q->dtype == ST_F16 && flash_fits(a) && !getenv("STRATA_CUDA_NO_FLASH")) {
        dim3 grid((unsigned)heads, (unsigned)((a.tq + FA_BQ - 1) / FA_BQ));
        if (a.dh == 32) flash_launch<32>(a, grid, st);
        else if (a.dh == 64) flash_launch<64>(a, grid, st);
        else flash_launch<128>(a, grid, st);
        return ST_OK;
    }
    dim3 grid((unsigned)heads, (unsigned)((a.tq + ATT_BQ - 1) / ATT_BQ), (unsigned)((a.dv + ATT_DV - 1) / ATT_DV));
    if (q->dtype == ST_F16) attention_kernel<__half><<<grid, ATT_BQ, 0, st>>>(a);
    else attention_kernel<float><<<grid, ATT_BQ, 0, st>>>(a);
    return ST_OK; /* a failed launch: the executor's cudaGetLastError() reports it */
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

/* The grid's x dim holds the heads, y the query blocks and z the output
 * column chunks (65535 at most each of y and z): larger ones run on the
 * CPU. */
static bool attention_accepts(const st_knode *n, char *why, size_t len)
{
    /* operand layouts and Q's scale are the CPU kernel's (ST_CAP_ATTENTION_VIEWS) */
    const st_attention_state *s = (const st_attention_state *)n->state;
    if (s && (s->q_scale_kind != ST_ATT_SCALE_NONE || s->lay[ST_ATT_OUT].n || s->lay[ST_ATT_Q].n))
        return st_kernel_refuse(why, len, "FusedAttention with operand layouts (the CPU kernel's form)");
    const st_view *o = &n->views[n->n_in];
    int64_t heads = st_numel(o->rank - 2, o->sizes), tq = o->sizes[o->rank - 2], dv = o->sizes[o->rank - 1];
    if (heads > INT32_MAX || (tq + ATT_BQ - 1) / ATT_BQ > 65535 || (dv + ATT_DV - 1) / ATT_DV > 65535)
        return st_kernel_refuse(why, len, "FusedAttention over %lld heads of %lld x %lld (beyond CUDA's grid)",
                                (long long)heads, (long long)tq, (long long)dv);
    return true;
}

extern "C" const st_kernel st_cuda_k_attention[] = {
    {"FusedAttention", "ai.strata", ST_DT(ST_F32) | ST_DT(ST_F16), cuda_attention, attention_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
