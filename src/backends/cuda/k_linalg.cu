/*
 * k_linalg.cu — CUDA MatMul (numpy batch broadcasting, 1-D operands) and
 * Gemm (transA/transB, alpha, beta, C broadcast), through cuBLASLt.
 *
 * Operands are described to cuBLASLt with their real strides: a row-major
 * matrix is a column-major one transposed, a transposed view is the other
 * way round, so neither needs a copy, and an output whose rows are wider
 * than N (a slice of a last-dim concat) is a leading dimension.  cuBLASLt
 * is column-major, so when Y's rows are contiguous it computes Y^T = B^T
 * A^T (its "A" is our B); when Y's columns are, Y = A B directly.  An
 * operand with no unit stride in either matrix dim (or a negative batch
 * stride) is first packed into the workspace.  Batch dims are merged where
 * every operand steps evenly; the innermost becomes cuBLASLt's strided
 * batch (stride 0 for a broadcast operand), or is folded into the output's
 * columns when the weight is shared (a Linear layer over [B, T, C] is one
 * GEMM); further batch dims are a host loop of calls.
 *
 * The first, uncaptured run builds the descriptors, asks the heuristic for
 * candidates (with the operands' real pointer alignments) and keeps the
 * first that runs; captured runs reuse them.  f32 computes in
 * CUBLAS_COMPUTE_32F (TF32 only when allowed), f16 and bf16 with 16-bit
 * A/B/C and f32 accumulation.  Gemm's beta * C is first written into Y by
 * a small kernel, then accumulated with beta = 1 (C = D in place).
 *
 * Integer MatMul, K = 0, and anything cuBLASLt refuses run a direct kernel
 * (one thread per output element, f32 or int64 accumulation).
 *
 * A fused bias and activation (passes/fuse_matmul.c, which this table asks
 * for in f32, f16 and bf16: ST_CAP_MATMUL_EPI, _LP) ride in cuBLASLt's
 * epilogue where it takes them: the bias when Y's rows are contiguous
 * (cuBLASLt's bias runs along its D's rows, our columns) and ReLU.  What
 * it does not take (exact GELU, whose tanh form cuBLASLt has differs by
 * up to 5e-4; the direct kernel's output) is one in-place pass over Y
 * afterwards, rounding as the separate Add and activation did.  A
 * transformer's Linear layers thereby lose their bias pass: at batch 32
 * on an H200, ViT-S/16's 48 bias Adds took 0.6 of its 3.3 ms.
 */
#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/rows.cuh"
extern "C" {
#include "backends/cuda/cuda_internal.h"
#include "ops/linalg.h"
}

#define THREADS 256
#define MAX_ALGOS 8

static st_status lt(cublasStatus_t e, const char *what)
{
    if (e == CUBLAS_STATUS_SUCCESS) return ST_OK;
    return st_error(ST_ERR_BACKEND, "cublasLt: %s: %s", what, cublasLtGetStatusString(e));
}

static bool verbose(void)
{
    const char *v = getenv("STRATA_CUDA_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

static bool float_class(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* One matrix operand: element (i, j) of batch b at p + b's offset + i * rs + j * cs. */
struct mm_mat {
    char *p;
    int64_t rs, cs;
    int64_t bs[ST_MAX_RANK];       /* over the problem's batch dims; 0 where it broadcasts */
};

/* Y[b] = alpha * A[b] B[b] (+ beta * C), A: M x K, B: K x N, Y: M x N. */
struct mm_problem {
    st_dtype t, yt, ct;
    int64_t m, n, k;
    int nb;
    int64_t bsize[ST_MAX_RANK];
    mm_mat a, b, y;
    const void *c;                 /* Gemm's C or NULL; broadcast strides over (M, N) */
    int64_t c_rs, c_cs;
    float alpha, beta;
    const float *bias;             /* st_matmul_state's fused bias (n values, host) or NULL */
    st_epilogue act;               /* and its fused activation */
    size_t ws_skip;                /* workspace bytes the caller holds (st_cuda_gemm_strided) */
};

/* ---- the direct kernel ---- */

__global__ void mm_direct_kernel(mm_problem p, bool integer)
{
    int64_t total = p.m * p.n;
    for (int d = 0; d < p.nb; d++) total *= p.bsize[d];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t col = i % p.n, row = (i / p.n) % p.m, r = i / (p.n * p.m);
        int64_t ao = row * p.a.rs, bo = col * p.b.cs, yo = row * p.y.rs + col * p.y.cs;
        for (int d = p.nb - 1; d >= 0; d--) {
            int64_t c = r % p.bsize[d];
            r /= p.bsize[d];
            ao += c * p.a.bs[d];
            bo += c * p.b.bs[d];
            yo += c * p.y.bs[d];
        }
        if (integer) {
            uint64_t acc = 0;
            for (int64_t q = 0; q < p.k; q++)
                acc += (uint64_t)st_ldi(p.t, p.a.p, ao + q * p.a.cs) * (uint64_t)st_ldi(p.t, p.b.p, bo + q * p.b.rs);
            double v = (double)(int64_t)acc * p.alpha;
            if (p.c && p.beta != 0.0f) v += p.beta * (double)st_ldi(p.ct, p.c, row * p.c_rs + col * p.c_cs);
            st_sti(p.yt, p.y.p, yo, p.alpha == 1.0f && !(p.c && p.beta != 0.0f) ? (int64_t)acc : (int64_t)v);
        } else {
            float acc = 0.0f;
            for (int64_t q = 0; q < p.k; q++) acc += st_ldf(p.t, p.a.p, ao + q * p.a.cs) * st_ldf(p.t, p.b.p, bo + q * p.b.rs);
            float v = p.alpha * acc;
            if (p.c && p.beta != 0.0f) v += p.beta * st_ldf(p.ct, p.c, row * p.c_rs + col * p.c_cs);
            st_stf(p.yt, p.y.p, yo, v);
        }
    }
}

static void run_direct(const st_kctx *k, const mm_problem *p)
{
    int64_t total = p->m * p->n;
    for (int d = 0; d < p->nb; d++) total *= p->bsize[d];
    if (total == 0) return;
    mm_direct_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(*p, !float_class(p->t));
}

/* Y = beta * C, broadcast (before the GEMM accumulates into Y). */
__global__ void prefill_kernel(mm_problem p)
{
    int64_t total = p.m * p.n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t col = i % p.n, row = i / p.n;
        st_stf(p.yt, p.y.p, row * p.y.rs + col * p.y.cs, p.beta * st_ldf(p.ct, p.c, row * p.c_rs + col * p.c_cs));
    }
}

/* ---- the epilogue cuBLASLt did not take: y = act(y + bias[col]) ---- */

template <typename T>
__device__ __forceinline__ float epi_one(float v, const T *bias, int64_t col, bool add_bias, const st_epilogue &act, bool do_act)
{
    /* rounded after the add, as the separate Add stored it */
    if (add_bias) v = st_to_f<T>(st_from_f<T>(v + st_to_f<T>(bias[col])));
    return do_act ? st_epilogue_f(act, v) : v;
}

/* Y of any strides. */
template <typename T>
__global__ void mm_epi_kernel(mm_problem p, const T *bias, bool add_bias, bool do_act)
{
    int64_t total = p.m * p.n;
    for (int d = 0; d < p.nb; d++) total *= p.bsize[d];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t col = i % p.n, row = (i / p.n) % p.m, r = i / (p.n * p.m);
        int64_t yo = row * p.y.rs + col * p.y.cs;
        for (int d = p.nb - 1; d >= 0; d--) {
            yo += (r % p.bsize[d]) * p.y.bs[d];
            r /= p.bsize[d];
        }
        T *y = (T *)p.y.p + yo;
        *y = st_from_f<T>(epi_one<T>(st_to_f<T>(*y), bias, col, add_bias, p.act, do_act));
    }
}

/* Y packed row-major: VEC elements a thread, 16 bytes at a time when VEC > 1.
 * CODE: the activation's unary code known at compile time (exact GELU after
 * ConvNeXt's and ViT's first Linear layers: the switch over every unary op
 * in st_epilogue_f held the pass at 2.5x its bytes' time), or -1. */
template <typename T, int VEC, int CODE>
__global__ void mm_epi_dense_kernel(T *y, int64_t total, int64_t n, const T *bias, bool add_bias, st_epilogue act, bool do_act)
{
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * VEC; i < total; i += (int64_t)gridDim.x * blockDim.x * VEC) {
        T v[VEC];
        if (VEC > 1) *(uint4 *)v = *(const uint4 *)(y + i);
        else v[0] = y[i];
        int64_t col = i % n;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            if (CODE < 0) {
                v[j] = st_from_f<T>(epi_one<T>(st_to_f<T>(v[j]), bias, col + j, add_bias, act, do_act));
                continue;
            }
            float f = epi_one<T>(st_to_f<T>(v[j]), bias, col + j, add_bias, act, false);
            v[j] = st_from_f<T>(st_unary_f(CODE, f, act.alpha, act.beta, 0.0f, act.alpha, act.beta));
        }
        if (VEC > 1) *(uint4 *)(y + i) = *(const uint4 *)v;
        else y[i] = v[0];
    }
}

/* Whether Y is packed row-major over its batch dims, rows and columns. */
static bool y_dense(const mm_problem *p)
{
    int64_t want = 1;
    if (p->n > 1 && p->y.cs != 1) return false;
    want = p->n;
    if (p->m > 1 && p->y.rs != want) return false;
    want *= p->m;
    for (int d = p->nb - 1; d >= 0; d--) {
        if (p->bsize[d] > 1 && p->y.bs[d] != want) return false;
        want *= p->bsize[d];
    }
    return true;
}

template <typename T>
static void launch_epi(cudaStream_t s, const mm_problem *p, const void *bias, bool add_bias, bool do_act)
{
    int64_t total = p->m * p->n;
    for (int d = 0; d < p->nb; d++) total *= p->bsize[d];
    if (total == 0) return;
    const T *b = (const T *)bias;
    if (y_dense(p)) {
        const int vec = 16 / (int)sizeof(T);
        int code = do_act ? p->act.act - 1 : -1;
        if (p->n % vec == 0 && ((uintptr_t)p->y.p % 16) == 0) {
            unsigned blocks = st_blocks(total / vec, THREADS);
#define EPI_GO(C) mm_epi_dense_kernel<T, 16 / sizeof(T), C><<<blocks, THREADS, 0, s>>>((T *)p->y.p, total, p->n, b, add_bias, p->act, do_act)
            if (code == ST_U_GELU) EPI_GO(ST_U_GELU);
            else if (code == ST_U_GELU_TANH) EPI_GO(ST_U_GELU_TANH);
            else if (code == ST_U_RELU) EPI_GO(ST_U_RELU);
            else EPI_GO(-1);
#undef EPI_GO
        } else {
            mm_epi_dense_kernel<T, 1, -1><<<st_blocks(total, THREADS), THREADS, 0, s>>>((T *)p->y.p, total, p->n, b, add_bias, p->act,
                                                                                         do_act);
        }
        return;
    }
    mm_epi_kernel<T><<<st_blocks(total, THREADS), THREADS, 0, s>>>(*p, b, add_bias, do_act);
}

static void run_epi(const st_kctx *k, const mm_problem *p, const void *bias, bool add_bias, bool do_act)
{
    if (!add_bias && !do_act) return;
    cudaStream_t s = st_stream(k);
    if (p->yt == ST_F16) launch_epi<__half>(s, p, bias, add_bias, do_act);
    else if (p->yt == ST_BF16) launch_epi<__nv_bfloat16>(s, p, bias, add_bias, do_act);
    else launch_epi<float>(s, p, bias, add_bias, do_act);
}

/* ---- cuBLASLt ---- */

/* One cuBLASLt operand: a column-major layout (rows x cols, ld), used as
 * is (op N) or transposed (op T), with batch strides. */
struct lt_mat {
    char *p;
    cublasOperation_t op;
    uint64_t rows, cols;
    int64_t ld;
    int64_t bs[ST_MAX_RANK];
};

/* The matrix X (r x c, X(i, j) at i * rs + j * cs) as cuBLASLt wants it.
 * False when neither dim has unit stride (or the other dim overlaps). */
static bool describe(int64_t r, int64_t c, int64_t rs, int64_t cs, lt_mat *o)
{
    int64_t r1 = r > 1 ? r : 1, c1 = c > 1 ? c : 1;
    if ((rs == 1 || r == 1) && (c == 1 || cs >= r1)) {
        o->op = CUBLAS_OP_N;
        o->rows = (uint64_t)r;
        o->cols = (uint64_t)c;
        o->ld = c == 1 ? r1 : cs;
        return true;
    }
    if ((cs == 1 || c == 1) && (r == 1 || rs >= c1)) {
        o->op = CUBLAS_OP_T;
        o->rows = (uint64_t)c;
        o->cols = (uint64_t)r;
        o->ld = r == 1 ? c1 : rs;
        return true;
    }
    return false;
}

struct mm_cache {
    bool direct;                         /* cuBLASLt refused: the direct kernel runs */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    unsigned align[3];                   /* the pointer alignments the algorithm was chosen for */
    void *bias;                          /* the fused bias on the device, in Y's dtype, or NULL */
    void *bias_host;                     /* its host copy, the asynchronous copy's source */
    bool lt_bias, lt_relu;               /* cuBLASLt's epilogue adds the bias (and applies ReLU) */
};

static void mm_cache_free(void *p)
{
    mm_cache *c = (mm_cache *)p;
    if (!c) return;
    if (c->la) cublasLtMatrixLayoutDestroy(c->la);
    if (c->lb) cublasLtMatrixLayoutDestroy(c->lb);
    if (c->ld) cublasLtMatrixLayoutDestroy(c->ld);
    if (c->op) cublasLtMatmulDescDestroy(c->op);
    if (c->bias) cudaFree(c->bias);
    free(c->bias_host);
    free(c);
}

/* A cuBLASLt call plan for one problem: operands, the batch split, the
 * workspace left for cuBLASLt. */
struct lt_plan {
    lt_mat a, b, d;
    uint64_t m, n, k;
    int outer;                           /* host-loop batch dims (the innermost batch dim is cuBLASLt's) */
    int64_t osize[ST_MAX_RANK];
    int64_t batch;                       /* cuBLASLt batch count */
    char *ws;
    size_t ws_bytes;
    unsigned align[3];
    bool trans;                          /* cuBLASLt's D is Y^T: its rows are our columns */
};

/* Packs a problem operand (rows x cols, non-broadcast batch dims) into
 * packed row-major memory at dst; updates its strides. */
static st_status pack_mat(cudaStream_t s, const mm_problem *p, mm_mat *m, int64_t rows, int64_t cols, st_dtype t, char *dst)
{
    st_operand src, out;
    memset(&src, 0, sizeof src);
    src.data = m->p;
    src.dtype = t;
    int map[ST_MAX_RANK], nd = 0;
    for (int d = 0; d < p->nb; d++)
        if (m->bs[d] != 0 && p->bsize[d] > 1) {
            map[nd] = d;
            src.sizes[nd] = p->bsize[d];
            src.strides[nd++] = m->bs[d];
        }
    src.sizes[nd] = rows;
    src.strides[nd++] = m->rs;
    src.sizes[nd] = cols;
    src.strides[nd++] = m->cs;
    src.rank = nd;
    out = st_packed_like(&src, dst);
    ST_TRY(st_pack(s, &out, &src));
    m->p = dst;
    for (int d = 0; d < p->nb; d++) m->bs[d] = 0;
    for (int i = 0; i < nd - 2; i++) m->bs[map[i]] = out.strides[i];
    m->rs = out.strides[nd - 2];
    m->cs = out.strides[nd - 1];
    return ST_OK;
}

static bool needs_pack(const mm_problem *p, const mm_mat *m, int64_t rows, int64_t cols)
{
    lt_mat tmp;
    if (!describe(rows, cols, m->rs, m->cs, &tmp)) return true;
    for (int d = 0; d < p->nb; d++)
        if (m->bs[d] < 0) return true;
    return false;
}

static int64_t mat_bytes(const mm_problem *p, const mm_mat *m, int64_t rows, int64_t cols)
{
    int64_t n = rows * cols;
    for (int d = 0; d < p->nb; d++)
        if (m->bs[d] != 0) n *= p->bsize[d];
    return n * (int64_t)st_dtype_size(p->t);
}

/* Alignment of every address the operand's batches start at. */
static unsigned mat_align(const lt_mat *m, int nb, const int64_t *bsize, size_t es)
{
    uint64_t g = (uint64_t)(uintptr_t)m->p;
    unsigned a = st_alignment(g);
    for (int d = 0; d < nb; d++)
        if (bsize[d] > 1 && m->bs[d] != 0) {
            unsigned s = st_alignment((uint64_t)(m->bs[d] < 0 ? -m->bs[d] : m->bs[d]) * es);
            if (s < a) a = s;
        }
    return a;
}

/* Batch strides m would have once packed (pack_mat's order: row-major
 * over its non-broadcast batch dims, then the matrix). */
static void packed_bs(const mm_problem *p, const mm_mat *m, int64_t rows, int64_t cols, int64_t *bs)
{
    int64_t s = rows * cols;
    for (int d = p->nb - 1; d >= 0; d--) {
        bs[d] = m->bs[d] != 0 && p->bsize[d] > 1 ? s : 0;
        if (bs[d]) s *= p->bsize[d];
    }
}

/* Batch dims left after merging those where A, B and Y step evenly. */
static int merged_rank(const mm_problem *p, const int64_t *abs, const int64_t *bbs)
{
    int rank = 0;
    int64_t bsize[ST_MAX_RANK], bst[3][ST_MAX_RANK];
    for (int d = 0; d < p->nb; d++) {
        if (p->bsize[d] == 1) continue;
        int64_t st[3] = {abs[d], bbs[d], p->y.bs[d]};
        st_rl_push(3, &rank, bsize, bst, p->bsize[d], st);
    }
    return rank;
}

/* Which inputs to pack (bit 0 A, bit 1 B) so that the batch dims merge
 * into cuBLASLt's one strided batch: attention's P V reads V as a view of
 * the QKV projection whose [batch, head] strides do not merge, and as a
 * host loop it was 32 launches a layer at batch 32 (2.4 of ViT-S's 7.2 ms
 * on an H200); packed, one call.  0 when they merge already or packing
 * does not make them. */
static int pack_for_batch(const mm_problem *p)
{
    int64_t pa[ST_MAX_RANK], pb[ST_MAX_RANK];
    if (merged_rank(p, p->a.bs, p->b.bs) <= 1) return 0;
    packed_bs(p, &p->a, p->m, p->k, pa);
    packed_bs(p, &p->b, p->k, p->n, pb);
    if (merged_rank(p, pa, p->b.bs) <= 1) return 1;
    if (merged_rank(p, p->a.bs, pb) <= 1) return 2;
    if (merged_rank(p, pa, pb) <= 1) return 3;
    return 0;
}

/* Builds the call plan; false (with a reason) when cuBLASLt cannot take it. */
static bool plan_lt(const st_kctx *k, mm_problem *p, lt_plan *L, const char **why)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    memset(L, 0, sizeof *L);
    if (!float_class(p->t)) return *why = "integer data", false;
    if (p->k == 0) return *why = "K = 0", false;
    if (p->m > INT32_MAX || p->n > INT32_MAX || p->k > INT32_MAX) return *why = "a dim over int range", false;
    for (int d = 0; d < p->nb; d++)
        if (p->y.bs[d] < 0) return *why = "a negative output batch stride", false;
    /* which way round: Y's rows contiguous (Y^T = B^T A^T) or its columns (Y = A B) */
    bool trans;
    if ((p->y.cs == 1 || p->n == 1) && (p->m == 1 || p->y.rs >= p->n)) trans = true;
    else if ((p->y.rs == 1 || p->m == 1) && (p->n == 1 || p->y.cs >= p->m)) trans = false;
    else return *why = "an output with no unit stride", false;
    /* pack what cannot be described, at the start of the workspace */
    char *ws = (char *)ctx->workspace + p->ws_skip;
    size_t used = 0, avail = ctx->workspace_bytes - p->ws_skip;
    cudaStream_t s = st_stream(k);
    int batch_pack = pack_for_batch(p);
    if (needs_pack(p, &p->a, p->m, p->k) || (batch_pack & 1)) {
        size_t need = st_align256((size_t)mat_bytes(p, &p->a, p->m, p->k));
        if (used + need > avail / 2) return *why = "A needs packing and is over the workspace", false;
        if (pack_mat(s, p, &p->a, p->m, p->k, p->t, ws + used) != ST_OK) return *why = "packing A failed", false;
        used += need;
    }
    if (needs_pack(p, &p->b, p->k, p->n) || (batch_pack & 2)) {
        size_t need = st_align256((size_t)mat_bytes(p, &p->b, p->k, p->n));
        if (used + need > avail / 2) return *why = "B needs packing and is over the workspace", false;
        if (pack_mat(s, p, &p->b, p->k, p->n, p->t, ws + used) != ST_OK) return *why = "packing B failed", false;
        used += need;
    }
    L->ws = ws + used;
    L->ws_bytes = avail - used;
    lt_mat A, B;
    if (!describe(p->m, p->k, p->a.rs, p->a.cs, &A) || !describe(p->k, p->n, p->b.rs, p->b.cs, &B))
        return *why = "an operand layout", false;
    A.p = p->a.p;
    B.p = p->b.p;
    lt_mat D;
    D.p = p->y.p;
    D.op = CUBLAS_OP_N;
    if (trans) {
        /* cuBLASLt: D' (N x M) = B' (N x K) A' (K x M), with X' = X^T */
        lt_mat At, Bt;
        if (!describe(p->n, p->k, p->b.cs, p->b.rs, &Bt) || !describe(p->k, p->m, p->a.cs, p->a.rs, &At))
            return *why = "an operand layout", false;
        Bt.p = p->b.p;
        At.p = p->a.p;
        L->a = Bt;
        L->b = At;
        L->m = (uint64_t)p->n;
        L->n = (uint64_t)p->m;
        D.rows = (uint64_t)p->n;
        D.cols = (uint64_t)p->m;
        D.ld = p->m == 1 ? p->n : p->y.rs;
    } else {
        L->a = A;
        L->b = B;
        L->m = (uint64_t)p->m;
        L->n = (uint64_t)p->n;
        D.rows = (uint64_t)p->m;
        D.cols = (uint64_t)p->n;
        D.ld = p->n == 1 ? p->m : p->y.cs;
    }
    L->d = D;
    L->trans = trans;
    L->k = (uint64_t)p->k;
    const mm_mat &ma = trans ? p->b : p->a, &mb = trans ? p->a : p->b;
    /* batch dims merged where all three step evenly */
    int rank = 0;
    int64_t bsize[ST_MAX_RANK], bst[3][ST_MAX_RANK];
    for (int d = 0; d < p->nb; d++) {
        if (p->bsize[d] == 1) continue;
        int64_t st[3] = {ma.bs[d], mb.bs[d], p->y.bs[d]};
        st_rl_push(3, &rank, bsize, bst, p->bsize[d], st);
    }
    /* a shared left operand: the innermost batch dim is more output columns */
    if (rank > 0 && bst[0][rank - 1] == 0 && L->b.op == CUBLAS_OP_N && bst[1][rank - 1] == (int64_t)L->n * L->b.ld &&
        bst[2][rank - 1] == (int64_t)L->n * L->d.ld && L->n * (uint64_t)bsize[rank - 1] <= INT32_MAX) {
        L->n *= (uint64_t)bsize[rank - 1];
        L->b.cols = L->n;
        L->d.cols = L->n;
        rank--;
    }
    L->batch = 1;
    if (rank > 0) {
        L->batch = bsize[rank - 1];
        if (L->batch > INT32_MAX) return *why = "a batch over int range", false;
        L->a.bs[0] = bst[0][rank - 1];
        L->b.bs[0] = bst[1][rank - 1];
        L->d.bs[0] = bst[2][rank - 1];
        rank--;
    }
    L->outer = rank;
    for (int d = 0; d < rank; d++) {
        L->osize[d] = bsize[d];
        L->a.bs[1 + d] = bst[0][d];
        L->b.bs[1 + d] = bst[1][d];
        L->d.bs[1 + d] = bst[2][d];
    }
    /* alignment of every batch's pointers (index 0: cuBLASLt's batch, then the loop dims) */
    int64_t all[ST_MAX_RANK + 1];
    all[0] = L->batch;
    for (int d = 0; d < rank; d++) all[1 + d] = bsize[d];
    size_t es = st_dtype_size(p->t);
    L->align[0] = mat_align(&L->a, rank + 1, all, es);
    L->align[1] = mat_align(&L->b, rank + 1, all, es);
    L->align[2] = mat_align(&L->d, rank + 1, all, es);
    return true;
}

static cudaDataType_t lt_type(st_dtype t) { return t == ST_F16 ? CUDA_R_16F : t == ST_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

static st_status make_layout(cublasLtMatrixLayout_t *out, cudaDataType_t t, const lt_mat *m, int64_t batch)
{
    ST_TRY(lt(cublasLtMatrixLayoutCreate(out, t, m->rows, m->cols, m->ld), "cublasLtMatrixLayoutCreate"));
    if (batch > 1) {
        int32_t cnt = (int32_t)batch;
        int64_t st = m->bs[0];
        ST_TRY(lt(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &cnt, sizeof cnt),
                  "cublasLtMatrixLayoutSetAttribute (batch count)"));
        ST_TRY(lt(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof st),
                  "cublasLtMatrixLayoutSetAttribute (batch stride)"));
    }
    return ST_OK;
}

static st_status make_descs(mm_cache *c, const lt_plan *L, st_dtype t, bool tf32)
{
    for (cublasLtMatrixLayout_t *l : {&c->la, &c->lb, &c->ld})
        if (*l) {
            cublasLtMatrixLayoutDestroy(*l);
            *l = NULL;
        }
    if (c->op) {
        cublasLtMatmulDescDestroy(c->op);
        c->op = NULL;
    }
    cublasComputeType_t ct = t == ST_F32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    ST_TRY(lt(cublasLtMatmulDescCreate(&c->op, ct, CUDA_R_32F), "cublasLtMatmulDescCreate"));
    int32_t ta = L->a.op, tb = L->b.op;
    ST_TRY(lt(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "cublasLtMatmulDescSetAttribute (transa)"));
    ST_TRY(lt(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "cublasLtMatmulDescSetAttribute (transb)"));
    cudaDataType_t dt = lt_type(t);
    ST_TRY(make_layout(&c->la, dt, &L->a, L->batch));
    ST_TRY(make_layout(&c->lb, dt, &L->b, L->batch));
    ST_TRY(make_layout(&c->ld, dt, &L->d, L->batch));
    if (c->lt_bias) {
        /* the bias in D's dtype (the default bias type), one per row of D */
        int32_t epi = c->lt_relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        ST_TRY(lt(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
                  "cublasLtMatmulDescSetAttribute (epilogue)"));
        ST_TRY(lt(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias, sizeof c->bias),
                  "cublasLtMatmulDescSetAttribute (bias pointer)"));
    }
    return ST_OK;
}

/* One cuBLASLt call per host-loop batch position. */
static cublasStatus_t lt_calls(const st_kctx *k, mm_cache *c, const lt_plan *L, const cublasLtMatmulAlgo_t *algo, float alpha,
                               float beta, size_t es)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    int64_t loops = 1;
    for (int d = 0; d < L->outer; d++) loops *= L->osize[d];
    for (int64_t i = 0; i < loops; i++) {
        int64_t r = i, oa = 0, ob = 0, od = 0;
        for (int d = L->outer - 1; d >= 0; d--) {
            int64_t q = r % L->osize[d];
            r /= L->osize[d];
            oa += q * L->a.bs[1 + d];
            ob += q * L->b.bs[1 + d];
            od += q * L->d.bs[1 + d];
        }
        char *dp = L->d.p + od * (int64_t)es;
        cublasStatus_t e = cublasLtMatmul((cublasLtHandle_t)ctx->cublaslt, c->op, &alpha, L->a.p + oa * (int64_t)es, c->la,
                                          L->b.p + ob * (int64_t)es, c->lb, &beta, dp, c->ld, dp, c->ld, algo, L->ws,
                                          L->ws_bytes, st_stream(k));
        if (e != CUBLAS_STATUS_SUCCESS) return e;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static void prefill(const st_kctx *k, const mm_problem *p)
{
    prefill_kernel<<<st_blocks(p->m * p->n, THREADS), THREADS, 0, st_stream(k)>>>(*p);
}

/* First run: descriptors, the heuristic's candidates, the first that runs.
 * With beta = 1 (C prefilled into Y), a candidate that failed part-way
 * through the batch loop may have accumulated into Y: refill first. */
static st_status choose_once(const st_kctx *k, mm_cache *c, const lt_plan *L, const mm_problem *p, float beta)
{
    st_dtype t = p->t;
    float alpha = p->alpha;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    ST_TRY(make_descs(c, L, t, ctx->allow_tf32));
    cublasLtMatmulPreference_t pref = NULL;
    ST_TRY(lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
    uint64_t wsb = L->ws_bytes;
    uint32_t al[4] = {L->align[0], L->align[1], L->align[2], L->align[2]};
    st_status r = lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb),
                     "cublasLtMatmulPreferenceSetAttribute (workspace)");
    static const cublasLtMatmulPreferenceAttributes_t AL[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && r == ST_OK; i++)
        r = lt(cublasLtMatmulPreferenceSetAttribute(pref, AL[i], &al[i], sizeof al[i]), "cublasLtMatmulPreferenceSetAttribute (alignment)");
    cublasLtMatmulHeuristicResult_t res[MAX_ALGOS];
    int got = 0;
    if (r == ST_OK)
        r = lt(cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)ctx->cublaslt, c->op, c->la, c->lb, c->ld, c->ld, pref, MAX_ALGOS, res, &got),
               "cublasLtMatmulAlgoGetHeuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    ST_TRY(r);
    cublasStatus_t last = CUBLAS_STATUS_NOT_SUPPORTED;
    bool tried = false;
    for (int i = 0; i < got; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS || res[i].workspaceSize > L->ws_bytes) continue;
        if (tried && beta != 0.0f) prefill(k, p);
        tried = true;
        last = lt_calls(k, c, L, &res[i].algo, alpha, beta, st_dtype_size(t));
        if (last == CUBLAS_STATUS_SUCCESS) {
            c->algo = res[i].algo;
            for (int q = 0; q < 3; q++) c->align[q] = L->align[q];
            return ST_OK;
        }
        cudaGetLastError(); /* a refused launch must not fail the command later */
    }
    return st_error(ST_ERR_BACKEND, "no cuBLASLt algorithm ran (%s)", cublasLtGetStatusString(last));
}

/* With the bias in cuBLASLt's epilogue first, where it takes it; else
 * without (the bias then goes in run_epi's pass). */
static st_status choose(const st_kctx *k, mm_cache *c, const lt_plan *L, const mm_problem *p, float beta)
{
    c->lt_bias = p->bias && c->bias && L->trans;
    c->lt_relu = c->lt_bias && p->act.act == ST_U_RELU + 1;
    st_status r = choose_once(k, c, L, p, beta);
    if (r == ST_OK || !c->lt_bias) return r;
    if (verbose()) fprintf(stderr, "strata: cuda: %s '%s': no cuBLASLt bias epilogue (%s)\n", k->node->op_type, k->node->name, st_last_error());
    c->lt_bias = c->lt_relu = false;
    if (beta != 0.0f) prefill(k, p);
    return choose_once(k, c, L, p, beta);
}

/* First run: the fused bias on the device in Y's dtype (a lowered
 * constant's values, so exact).  The copy is asynchronous, in stream
 * order, from a host copy the cache keeps. */
static st_status upload_bias(mm_cache *c, const mm_problem *p, cudaStream_t s)
{
    size_t es = st_dtype_size(p->yt), bytes = (size_t)p->n * es;
    free(c->bias_host);
    c->bias_host = malloc(bytes ? bytes : 1);
    if (!c->bias_host) return st_error(ST_ERR_NOMEM, "out of memory");
    st_convert(p->yt, c->bias_host, ST_F32, p->bias, (size_t)p->n);
    st_cuda_exclusive_lock();
    cudaError_t err = cudaMalloc(&c->bias, bytes ? bytes : 1);
    st_cuda_exclusive_unlock();
    if (err != cudaSuccess) {
        c->bias = NULL;
        return st_cuda_ok(err, "cudaMalloc (a fused MatMul bias)");
    }
    return st_cuda_ok(cudaMemcpyAsync(c->bias, c->bias_host, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (a fused MatMul bias)");
}

static st_status run(const st_kctx *k, mm_problem *p)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    mm_cache *c = (mm_cache *)ctx->slot->data;
    bool first = !c;
    if (first) {
        if (ctx->capturing)
            return st_error(ST_ERR_BACKEND, "cuda: %s: no cached cuBLASLt set-up (the command's first run was captured)", k->node->op_type);
        c = (mm_cache *)calloc(1, sizeof *c);
        if (!c) return st_error(ST_ERR_NOMEM, "out of memory");
        ctx->slot->data = c;
        ctx->slot->release = mm_cache_free;
    }
    if (p->bias && !c->bias) {
        if (ctx->capturing) return st_error(ST_ERR_BACKEND, "cuda: %s: the fused bias is not on the device (the command's first run was captured)", k->node->op_type);
        ST_TRY(upload_bias(c, p, st_stream(k)));
    }
    if (c->direct) {
        run_direct(k, p);
        run_epi(k, p, c->bias, p->bias != NULL, p->act.act != 0);
        return ST_OK;
    }
    lt_plan L;
    const char *why = "";
    bool ok = plan_lt(k, p, &L, &why);
    if (!ok && !first) return st_error(ST_ERR_INTERNAL, "cuda: %s: the cuBLASLt plan changed between runs (%s)", k->node->op_type, why);
    /* beta * C goes into Y first; the GEMM then adds onto Y */
    bool with_c = p->c && p->beta != 0.0f;
    float beta = 0.0f;
    if (ok && with_c) {
        prefill(k, p);
        beta = 1.0f;
    }
    if (ok && first) {
        st_status r = choose(k, c, &L, p, beta);
        if (r == ST_OK) {
            run_epi(k, p, c->bias, p->bias && !c->lt_bias, p->act.act && !c->lt_relu);
            return ST_OK;
        }
        why = st_last_error();
        ok = false;
    }
    if (!ok) {
        if (verbose()) fprintf(stderr, "strata: cuda: %s '%s' runs the direct kernel: %s\n", k->node->op_type, k->node->name, why);
        c->direct = true;
        c->lt_bias = c->lt_relu = false;
        run_direct(k, p);
        run_epi(k, p, c->bias, p->bias != NULL, p->act.act != 0);
        return ST_OK;
    }
    for (int q = 0; q < 3; q++)
        if (L.align[q] < c->align[q]) return st_error(ST_ERR_INTERNAL, "cuda: %s: operand alignment changed between runs", k->node->op_type);
    cublasStatus_t e = lt_calls(k, c, &L, &c->algo, p->alpha, beta, st_dtype_size(p->t));
    if (e == CUBLAS_STATUS_SUCCESS) run_epi(k, p, c->bias, p->bias && !c->lt_bias, p->act.act && !c->lt_relu);
    return lt(e, "cublasLtMatmul");
}

/* ---- the ops ---- */

/* The product with the bias and activation passes/fuse_matmul.c folded
 * into the node, if any. */
static st_status run_fused(const st_kctx *k, mm_problem *p)
{
    const st_matmul_state *s = (const st_matmul_state *)k->state;
    if (s && s->bias) {
        if (s->n_bias != p->n)
            return st_error(ST_ERR_INTERNAL, "node '%s': a fused bias of %lld for %lld columns", k->node->name,
                            (long long)s->n_bias, (long long)p->n);
        p->bias = s->bias;
    }
    if (s) p->act = s->act;
    return run(k, p);
}

extern "C" st_status st_cuda_matmul(const st_kctx *k)
{
    const st_operand *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    mm_problem p;
    memset(&p, 0, sizeof p);
    p.t = a->dtype;
    p.yt = y->dtype;
    p.alpha = 1.0f;
    int ra = a->rank, rb = b->rank;
    p.m = ra == 1 ? 1 : a->sizes[ra - 2];
    p.k = a->sizes[ra - 1];
    p.n = rb == 1 ? 1 : b->sizes[rb - 1];
    p.a.p = (char *)a->data;
    p.a.rs = ra == 1 ? 0 : a->strides[ra - 2];
    p.a.cs = a->strides[ra - 1];
    p.b.p = (char *)b->data;
    p.b.rs = rb == 1 ? b->strides[0] : b->strides[rb - 2];
    p.b.cs = rb == 1 ? 0 : b->strides[rb - 1];
    p.nb = y->rank - (ra > 1) - (rb > 1);
    p.y.p = (char *)y->data;
    p.y.rs = ra > 1 ? y->strides[p.nb] : 0;
    p.y.cs = rb > 1 ? y->strides[y->rank - 1] : 0;
    int abr = ra > 2 ? ra - 2 : 0, bbr = rb > 2 ? rb - 2 : 0;
    for (int d = 0; d < p.nb; d++) {
        p.bsize[d] = y->sizes[d];
        p.y.bs[d] = y->strides[d];
        int ad = d - (p.nb - abr), bd = d - (p.nb - bbr);
        p.a.bs[d] = ad < 0 || a->sizes[ad] == 1 ? 0 : a->strides[ad];
        p.b.bs[d] = bd < 0 || b->sizes[bd] == 1 ? 0 : b->strides[bd];
    }
    return run_fused(k, &p);
}

extern "C" st_status st_cuda_gemm(const st_kctx *k)
{
    const st_matmul_state *s = (const st_matmul_state *)k->state;
    const st_operand *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    mm_problem p;
    memset(&p, 0, sizeof p);
    p.t = a->dtype;
    p.yt = y->dtype;
    p.alpha = s->alpha;
    p.beta = s->beta;
    p.m = s->trans_a ? a->sizes[1] : a->sizes[0];
    p.k = s->trans_a ? a->sizes[0] : a->sizes[1];
    p.n = s->trans_b ? b->sizes[0] : b->sizes[1];
    p.a.p = (char *)a->data;
    p.a.rs = s->trans_a ? a->strides[1] : a->strides[0];
    p.a.cs = s->trans_a ? a->strides[0] : a->strides[1];
    p.b.p = (char *)b->data;
    p.b.rs = s->trans_b ? b->strides[1] : b->strides[0];
    p.b.cs = s->trans_b ? b->strides[0] : b->strides[1];
    p.y.p = (char *)y->data;
    p.y.rs = y->strides[0];
    p.y.cs = y->strides[1];
    if (k->n_in > 2 && k->in[2].data) {
        const st_operand *c = &k->in[2];
        p.c = c->data;
        p.ct = c->dtype;
        /* C broadcasts to [M, N], right-aligned */
        if (c->rank == 2) {
            p.c_rs = c->sizes[0] == 1 ? 0 : c->strides[0];
            p.c_cs = c->sizes[1] == 1 ? 0 : c->strides[1];
        } else if (c->rank == 1) {
            p.c_cs = c->sizes[0] == 1 ? 0 : c->strides[0];
        }
    }
    return run_fused(k, &p);
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

extern "C" st_status st_cuda_gemm_strided(const st_kctx *k, const st_cuda_gemm_args *g)
{
    mm_problem p;
    memset(&p, 0, sizeof p);
    p.t = p.yt = g->t;
    p.alpha = 1.0f;
    p.m = g->m;
    p.n = g->n;
    p.k = g->k;
    p.a.p = (char *)g->a;
    p.a.rs = g->a_rs;
    p.a.cs = g->a_cs;
    p.b.p = (char *)g->b;
    p.b.rs = g->b_rs;
    p.b.cs = g->b_cs;
    p.y.p = (char *)g->y;
    p.y.rs = g->y_rs;
    p.y.cs = g->y_cs;
    if (g->batch > 1) {
        p.nb = 1;
        p.bsize[0] = g->batch;
        p.a.bs[0] = g->a_bs;
        p.y.bs[0] = g->y_bs;
    }
    p.ws_skip = st_align256(g->ws_skip);
    return run(k, &p);
}

/* The fused bias and activation run in every float dtype (above); an
 * integer product has none (the pass fuses float products only). */
static bool linalg_accepts(const st_knode *n, char *why, size_t len)
{
    const st_matmul_state *s = (const st_matmul_state *)n->state;
    if (s && (s->bias || s->act.act) && !(ST_DT(st_knode_type(n)) & (ST_DT(ST_F32) | ST_DT(ST_F16) | ST_DT(ST_BF16))))
        return st_kernel_refuse(why, len, "a fused bias or activation on an integer product");
    return st_cuda_accepts_no_f64(n, why, len);
}

extern "C" const st_kernel st_cuda_k_linalg[] = {
    {"MatMul", "", ST_CUDA_DT, st_cuda_matmul, linalg_accepts, NULL, NULL},
    {"Gemm", "", ST_CUDA_DT, st_cuda_gemm, linalg_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
