/*
 * k_norm.cu — the CUDA kernel of the norm family: Softmax, LogSoftmax,
 * Hardmax, LayerNormalization, InstanceNormalization, LpNormalization,
 * MeanVarianceNormalization, LRN (one block per row, rows as in
 * backends/cpu/k_norm.c: the axes of st_norm_state.mask) and
 * BatchNormalization (inference: the four parameters folded per channel
 * into y = x * a + b by a small kernel, then one elementwise pass).
 *
 * f32, f16 and bf16 compute in f32 with the CPU's formulas (two-pass
 * mean and variance, softmax as exp(x - max) times 1 / sum).  Parameters
 * (Scale, B, LayerNorm's per-row outputs) are operands of the row walk
 * with their own strides over x's shape, 0 where they broadcast.
 */
#include "backends/cuda/ew_rows.cuh"
#include "backends/cuda/rows.cuh"
extern "C" {
#include "ops/norm.h"
}

struct norm_args {
    st_rowlay r;                /* operands: 0 x, 1 y, 2 scale, 3 bias, 4 mean, 5 inv */
    int kind;
    const void *x, *scale, *bias;
    void *y, *mean, *inv;
    st_dtype xt, yt, st, bt, mt, it;
    float eps, alpha, beta, lrn_bias;
    int p;
    int64_t size;
};

__device__ __forceinline__ float ld_x(const norm_args &a, int64_t base, int64_t j)
{
    return st_ldf(a.xt, a.x, base + st_rl_elem(a.r, 0, j));
}

__global__ void norm_kernel(norm_args a)
{
    __shared__ float sh[33];
    __shared__ long long shi[33];
    const int64_t n = a.r.row_len;
    const float inf = __int_as_float(0x7f800000);
    for (int64_t o = blockIdx.x; o < a.r.n_outer; o += gridDim.x) {
        int64_t off[ST_RL_MAXOPS];
        st_rl_outer(a.r, o, ST_RL_MAXOPS, off);
        switch (a.kind) {
        case ST_N_SOFTMAX:
        case ST_N_LOG_SOFTMAX: {
            float mx = -inf;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = st_op_max()(mx, ld_x(a, off[0], j));
            mx = st_block_reduce(mx, st_op_max(), -inf, sh);
            float s = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += expf(ld_x(a, off[0], j) - mx);
            s = st_block_reduce(s, st_op_sum(), 0.0f, sh);
            if (a.kind == ST_N_LOG_SOFTMAX) {
                float lse = mx + logf(s);
                for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                    st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), ld_x(a, off[0], j) - lse);
            } else {
                float inv = 1.0f / s;
                for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                    st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), expf(ld_x(a, off[0], j) - mx) * inv);
            }
            break;
        }
        case ST_N_HARDMAX: {
            float bv = 0.0f;
            long long bi = -1;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float v = ld_x(a, off[0], j);
                if (bi < 0 || st_arg_beats(v, (long long)j, bv, bi, true, false)) {
                    bv = v;
                    bi = j;
                }
            }
            st_block_argbest(bv, bi, true, false, sh, shi);
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), j == bi ? 1.0f : 0.0f);
            break;
        }
        case ST_N_LAYER_NORM:
        case ST_N_INSTANCE_NORM:
        case ST_N_MVN: {
            float s = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += ld_x(a, off[0], j);
            float mean = st_block_reduce(s, st_op_sum(), 0.0f, sh) / (float)n;
            float q = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float d = ld_x(a, off[0], j) - mean;
                q += d * d;
            }
            float var = st_block_reduce(q, st_op_sum(), 0.0f, sh) / (float)n;
            if (a.kind == ST_N_MVN) {
                float d = sqrtf(var) + a.eps;
                for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                    st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), (ld_x(a, off[0], j) - mean) / d);
                break;
            }
            float inv = 1.0f / sqrtf(var + a.eps);
            if (a.kind == ST_N_INSTANCE_NORM) {
                float sc = inv * st_ldf(a.st, a.scale, off[2]), b = st_ldf(a.bt, a.bias, off[3]);
                for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                    st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), (ld_x(a, off[0], j) - mean) * sc + b);
                break;
            }
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float v = (ld_x(a, off[0], j) - mean) * inv * st_ldf(a.st, a.scale, off[2] + st_rl_elem(a.r, 2, j));
                if (a.bias) v += st_ldf(a.bt, a.bias, off[3] + st_rl_elem(a.r, 3, j));
                st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), v);
            }
            if (threadIdx.x == 0) {
                if (a.mean) st_stf(a.mt, a.mean, off[4], mean);
                if (a.inv) st_stf(a.it, a.inv, off[5], inv);
            }
            break;
        }
        case ST_N_LP_NORM: {
            float s = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float v = ld_x(a, off[0], j);
                s += a.p == 1 ? fabsf(v) : v * v;
            }
            s = st_block_reduce(s, st_op_sum(), 0.0f, sh);
            float norm = a.p == 1 ? s : sqrtf(s);
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, j), ld_x(a, off[0], j) / norm);
            break;
        }
        case ST_N_LRN: {
            /* window [c - floor((size-1)/2), c + ceil((size-1)/2)], clipped */
            int64_t lo = (a.size - 1) / 2, hi = a.size - 1 - lo;
            float k = a.alpha / (float)a.size;
            for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
                int64_t q0 = c - lo > 0 ? c - lo : 0, q1 = c + hi < n - 1 ? c + hi : n - 1;
                float sq = 0.0f;
                for (int64_t q = q0; q <= q1; q++) {
                    float v = ld_x(a, off[0], q);
                    sq += v * v;
                }
                st_stf(a.yt, a.y, off[1] + st_rl_elem(a.r, 1, c), ld_x(a, off[0], c) / powf(a.lrn_bias + k * sq, a.beta));
            }
            break;
        }
        default: break;
        }
    }
}

/* ---- short contiguous rows: G lanes per row ----
 *
 * A transformer's LayerNorm and Softmax rows are a few hundred elements
 * (ViT-S: 6,304 LayerNorm rows of 384 and 37,824 Softmax rows of 197 at
 * batch 32), too short for a block: norm_kernel's block reductions and
 * three strided passes over x took about 100 us a launch for 4.8 MB.  Here
 * G lanes hold a row in registers (K values a lane, loaded once), reduce
 * with shuffles and write once; the same formulas in f32 as norm_kernel
 * (two-pass mean and variance, exp(x - max) times 1 / sum).  Rows of 128
 * or fewer share a warp (ConvNeXt-T's channels-last LayerNorms, 100,352
 * rows of 96 at batch 32, ran at 600 GB/s with a warp per row), the warps
 * stay resident and walk rows, LayerNorm's scale and bias are read once
 * per thread when every row shares them, and a row's offset is one
 * multiply when the outer dims merged into one. */

template <int G>
__device__ __forceinline__ float st_group_sum(float v)
{
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int G>
__device__ __forceinline__ float st_group_max(float v)
{
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

template <typename T, int G, int K>
__global__ void norm_warp_kernel(norm_args a, bool shared_params)
{
    const int lane = threadIdx.x % G;
    const int64_t n = a.r.row_len, groups = (int64_t)gridDim.x * (blockDim.x / G);
    const float inf = __int_as_float(0x7f800000);
    const bool ln = a.kind == ST_N_LAYER_NORM;
    float sc[K], bi[K];
    if (ln && shared_params) {
#pragma unroll
        for (int i = 0; i < K; i++) {
            int64_t j = lane + G * i;
            sc[i] = j < n ? st_ldf(a.st, a.scale, j * a.r.rstride[2][0]) : 0.0f;
            bi[i] = j < n && a.bias ? st_ldf(a.bt, a.bias, j * a.r.rstride[3][0]) : 0.0f;
        }
    }
    /* every lane of a warp runs the same number of iterations (the
     * shuffles need all 32): a group past the last row computes nothing */
    const int64_t rows = (a.r.n_outer + (32 / G) - 1) / (32 / G) * (32 / G);
    for (int64_t o = blockIdx.x * (int64_t)(blockDim.x / G) + threadIdx.x / G; o < rows; o += groups) {
        bool live = o < a.r.n_outer;
        int64_t off[ST_RL_MAXOPS];
        if (a.r.orank == 1) {
            for (int q = 0; q < ST_RL_MAXOPS; q++) off[q] = o * a.r.ostride[q][0];
        } else {
            st_rl_outer(a.r, live ? o : 0, ST_RL_MAXOPS, off);
        }
        const T *x = (const T *)a.x + off[0];
        T *y = (T *)a.y + off[1];
        float v[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            int64_t j = lane + G * i;
            v[i] = live && j < n ? st_to_f<T>(x[j]) : 0.0f;
        }
        if (ln) {
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < K; i++) s += v[i];
            float mean = st_group_sum<G>(s) / (float)n, q = 0.0f;
#pragma unroll
            for (int i = 0; i < K; i++) {
                float d = lane + G * i < n ? v[i] - mean : 0.0f;
                q += d * d;
            }
            float inv = 1.0f / sqrtf(st_group_sum<G>(q) / (float)n + a.eps);
            if (!live) continue;
#pragma unroll
            for (int i = 0; i < K; i++) {
                int64_t j = lane + G * i;
                if (j >= n) break;
                float g = shared_params ? sc[i] : st_ldf(a.st, a.scale, off[2] + j * a.r.rstride[2][0]);
                float r = (v[i] - mean) * inv * g;
                if (a.bias) r += shared_params ? bi[i] : st_ldf(a.bt, a.bias, off[3] + j * a.r.rstride[3][0]);
                y[j] = st_from_f<T>(r);
            }
            if (lane == 0) {
                if (a.mean) st_stf(a.mt, a.mean, off[4], mean);
                if (a.inv) st_stf(a.it, a.inv, off[5], inv);
            }
        } else {
            float mx = -inf;
#pragma unroll
            for (int i = 0; i < K; i++)
                if (lane + G * i < n) mx = st_op_max()(mx, v[i]);
            mx = st_group_max<G>(mx);
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < K; i++)
                if (lane + G * i < n) s += expf(v[i] - mx);
            s = st_group_sum<G>(s);
            float lse = mx + logf(s), inv = 1.0f / s;
            if (!live) continue;
#pragma unroll
            for (int i = 0; i < K; i++) {
                int64_t j = lane + G * i;
                if (j >= n) break;
                y[j] = st_from_f<T>(a.kind == ST_N_LOG_SOFTMAX ? v[i] - lse : expf(v[i] - mx) * inv);
            }
        }
    }
}

/* Launches norm_warp_kernel when the rows fit it: LayerNorm, Softmax or
 * LogSoftmax over rows of at most 1024 that are contiguous in x and y (and
 * in LayerNorm's parameters, or broadcast), x and y of one float dtype. */
static bool norm_warp(const st_kctx *k, const norm_args &a)
{
    if (a.kind != ST_N_LAYER_NORM && a.kind != ST_N_SOFTMAX && a.kind != ST_N_LOG_SOFTMAX) return false;
    if (a.xt != a.yt || (a.xt != ST_F32 && a.xt != ST_F16 && a.xt != ST_BF16)) return false;
    if (a.r.row_len > 1024 || a.r.rrank != 1 || a.r.rstride[0][0] != 1 || a.r.rstride[1][0] != 1) return false;
    int64_t n = a.r.row_len;
    /* (G lanes a row, K values a lane) */
    int g = n <= 64 ? 8 : n <= 128 ? 16 : 32, kk = n <= 128 ? 8 : n <= 256 ? 8 : n <= 512 ? 16 : 32;
    /* scale and bias the same for every row: read once per thread */
    bool shared = true;
    for (int d = 0; d < a.r.orank; d++)
        if (a.r.ostride[2][d] != 0 || (a.bias && a.r.ostride[3][d] != 0)) shared = false;
    const int threads = 256;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    int64_t per_block = threads / g, blocks = (a.r.n_outer + per_block - 1) / per_block;
    int64_t resident = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132) * 8;
    unsigned grid = (unsigned)(blocks < resident ? blocks : resident);
    if (grid < 1) grid = 1;
    cudaStream_t st = st_stream(k);
#define NW_GO(T, G, K) norm_warp_kernel<T, G, K><<<grid, threads, 0, st>>>(a, shared)
#define NW_T(T)                                                                                                        \
    do {                                                                                                               \
        if (g == 8) NW_GO(T, 8, 8);                                                                                    \
        else if (g == 16) NW_GO(T, 16, 8);                                                                             \
        else if (kk == 8) NW_GO(T, 32, 8);                                                                             \
        else if (kk == 16) NW_GO(T, 32, 16);                                                                           \
        else NW_GO(T, 32, 32);                                                                                         \
    } while (0)
    switch (a.xt) {
    case ST_F32: NW_T(float); break;
    case ST_F16: NW_T(__half); break;
    default: NW_T(__nv_bfloat16); break;
    }
#undef NW_T
#undef NW_GO
    return true;
}

/* ---- rows strided in x, neighbouring rows adjacent: 32 rows a block ----
 *
 * ConvNeXt normalizes channels through a permuted view of an NCHW tensor
 * (LayerNorm over C at stride H*W) and YOLOv8's DFL takes a Softmax over
 * 16 bins at stride 8400: a block per row reads each element from another
 * cache line (152 us per ConvNeXt LayerNorm at batch 32 on an H200).  Here
 * threadIdx.x picks one of 32 adjacent rows, so a warp's loads of one row
 * element are adjacent, and threadIdx.y splits the row's elements (a
 * thread per row alone left late stages, 49 rows of 768 at batch 1, with
 * a few hundred threads walking 768 elements each). */
#define NC_Y 16

/* Row element j's result: LayerNorm's (c0 the mean, inv 1 / sigma) or
 * Softmax's (c0 the max, inv 1 / sum) or LogSoftmax's (lse). */
template <typename T>
__device__ __forceinline__ float norm_col_value(const norm_args &a, const T *x, const int64_t *off, int64_t j, float c0,
                                                float inv, float lse)
{
    float v = st_to_f<T>(x[j * a.r.rstride[0][0]]);
    if (a.kind == ST_N_LAYER_NORM) {
        float r = (v - c0) * inv * st_ldf(a.st, a.scale, off[2] + j * a.r.rstride[2][0]);
        return a.bias ? r + st_ldf(a.bt, a.bias, off[3] + j * a.r.rstride[3][0]) : r;
    }
    return a.kind == ST_N_LOG_SOFTMAX ? v - lse : expf(v - c0) * inv;
}

template <typename T>
__global__ void norm_col_kernel(norm_args a)
{
    __shared__ float red[NC_Y][33];
    __shared__ float stat[2][32];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t n = a.r.row_len, rs = a.r.rstride[0][0], ys = a.r.rstride[1][0];
    const float inf = __int_as_float(0x7f800000);
    const bool ln = a.kind == ST_N_LAYER_NORM;
    for (int64_t o0 = blockIdx.x * 32LL; o0 < a.r.n_outer; o0 += gridDim.x * 32LL) {
        int64_t o = o0 + tx, off[ST_RL_MAXOPS];
        bool live = o < a.r.n_outer;
        if (live) st_rl_outer(a.r, o, ST_RL_MAXOPS, off);
        const T *x = live ? (const T *)a.x + off[0] : (const T *)a.x;
        /* pass 1: the sum (LayerNorm) or the max (Softmax) */
        float v1 = ln ? 0.0f : -inf;
        if (live)
            for (int64_t j = ty; j < n; j += NC_Y) {
                float v = st_to_f<T>(x[j * rs]);
                v1 = ln ? v1 + v : st_op_max()(v1, v);
            }
        red[ty][tx] = v1;
        __syncthreads();
        if (ty == 0) {
            float r = red[0][tx];
            for (int k = 1; k < NC_Y; k++) r = ln ? r + red[k][tx] : st_op_max()(r, red[k][tx]);
            stat[0][tx] = ln ? r / (float)n : r;
        }
        __syncthreads();
        const float c0 = stat[0][tx];
        /* pass 2: the squared deviations, or the exponentials' sum */
        float v2 = 0.0f;
        if (live)
            for (int64_t j = ty; j < n; j += NC_Y) {
                float d = st_to_f<T>(x[j * rs]) - c0;
                v2 += ln ? d * d : expf(d);
            }
        red[ty][tx] = v2;
        __syncthreads();
        if (ty == 0) {
            float r = 0.0f;
            for (int k = 0; k < NC_Y; k++) r += red[k][tx];
            stat[1][tx] = r;
        }
        __syncthreads();
        const float c1 = stat[1][tx];
        const float inv = ln ? 1.0f / sqrtf(c1 / (float)n + a.eps) : 1.0f / c1, lse = c0 + logf(c1);
        if (ys == 1) {
            /* Y's rows are contiguous (LayerNorm's NHWC output of an NCHW
             * input): a warp storing one element of 32 rows would touch
             * 32 sectors, so each 32 x 32 block of results goes through
             * shared memory and leaves along the row, 64 bytes a warp */
            __shared__ float tile[32][33];
            __shared__ long long yoff[32];
            if (ty == 0) yoff[tx] = live ? off[1] : -1;
            for (int64_t j0 = 0; j0 < n; j0 += 32) {
                for (int jj = ty; jj < 32; jj += NC_Y)
                    if (live && j0 + jj < n) tile[jj][tx] = norm_col_value<T>(a, x, off, j0 + jj, c0, inv, lse);
                __syncthreads();
                for (int p = ty; p < 32; p += NC_Y)
                    if (yoff[p] >= 0 && j0 + tx < n) ((T *)a.y)[yoff[p] + j0 + tx] = st_from_f<T>(tile[tx][p]);
                __syncthreads();
            }
        } else if (live) {
            T *y = (T *)a.y + off[1];
            for (int64_t j = ty; j < n; j += NC_Y) y[j * ys] = st_from_f<T>(norm_col_value<T>(a, x, off, j, c0, inv, lse));
        }
        if (live && ln && ty == 0 && a.mean) st_stf(a.mt, a.mean, off[4], c0);
        if (live && ln && ty == 0 && a.inv) st_stf(a.it, a.inv, off[5], inv);
        __syncthreads();
    }
}

/* ---- short strided rows (n <= 32): a thread per row ----
 *
 * YOLOv8's DFL Softmax is a million rows of 16 bins at stride 8400: the
 * 32 x 16 blocks above leave one element per thread between three block
 * barriers (0.77 ms at batch 32 on an H200).  A thread per row keeps its
 * row in registers; a warp's 32 rows are adjacent, so each load is
 * coalesced. */
#define NT_MAX 32

template <typename T>
__global__ void softmax_thread_kernel(norm_args a)
{
    const int n = (int)a.r.row_len;
    const int64_t rs = a.r.rstride[0][0], ys = a.r.rstride[1][0];
    const float inf = __int_as_float(0x7f800000);
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < a.r.n_outer; o += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        st_rl_outer(a.r, o, 2, off);
        const T *x = (const T *)a.x + off[0];
        T *y = (T *)a.y + off[1];
        float v[NT_MAX], mx = -inf;
#pragma unroll
        for (int j = 0; j < NT_MAX; j++)
            if (j < n) {
                v[j] = st_to_f<T>(x[j * rs]);
                mx = st_op_max()(mx, v[j]);
            }
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < NT_MAX; j++)
            if (j < n) sum += expf(v[j] - mx);
        float lse = mx + logf(sum), inv = 1.0f / sum;
#pragma unroll
        for (int j = 0; j < NT_MAX; j++)
            if (j < n) y[j * ys] = st_from_f<T>(a.kind == ST_N_LOG_SOFTMAX ? v[j] - lse : expf(v[j] - mx) * inv);
    }
}

/* The same with V neighbouring rows a thread, one V-element vector load
 * per bin: where the rows' bins sit V-aligned side by side in X and Y
 * (the outer dim of stride 1 a multiple of V), a warp's load is 32 x 16
 * bytes instead of 32 x 2.  YOLOv8n's DFL Softmax (16 bins) ran at 430 GB/s
 * with a thread per row at batch 32 in f16 on an H200: too few bytes in
 * flight to cover HBM latency. */
#define NV_MAX 16

template <typename T, int V>
__global__ void softmax_vec_kernel(norm_args a, int64_t groups)
{
    typedef st_vec<T, V> vec;
    const int n = (int)a.r.row_len;
    const int64_t rs = a.r.rstride[0][0], ys = a.r.rstride[1][0];
    const float inf = __int_as_float(0x7f800000);
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        st_rl_outer(a.r, g * V, 2, off);
        const T *x = (const T *)a.x + off[0];
        T *y = (T *)a.y + off[1];
        vec raw[NV_MAX];
        float mx[V], sum[V];
#pragma unroll
        for (int e = 0; e < V; e++) mx[e] = -inf, sum[e] = 0.0f;
#pragma unroll
        for (int j = 0; j < NV_MAX; j++)
            if (j < n) {
                raw[j] = *(const vec *)(x + j * rs);
#pragma unroll
                for (int e = 0; e < V; e++) mx[e] = st_op_max()(mx[e], st_to_f<T>(raw[j].v[e]));
            }
#pragma unroll
        for (int j = 0; j < NV_MAX; j++)
            if (j < n)
#pragma unroll
                for (int e = 0; e < V; e++) sum[e] += expf(st_to_f<T>(raw[j].v[e]) - mx[e]);
        float lse[V], inv[V];
#pragma unroll
        for (int e = 0; e < V; e++) lse[e] = mx[e] + logf(sum[e]), inv[e] = 1.0f / sum[e];
#pragma unroll
        for (int j = 0; j < NV_MAX; j++)
            if (j < n) {
                vec o;
#pragma unroll
                for (int e = 0; e < V; e++) {
                    float v = st_to_f<T>(raw[j].v[e]);
                    o.v[e] = st_from_f<T>(a.kind == ST_N_LOG_SOFTMAX ? v - lse[e] : expf(v - mx[e]) * inv[e]);
                }
                *(vec *)(y + j * ys) = o;
            }
    }
}

/* Launches softmax_vec_kernel when it fits: one reduced dim of at most
 * NV_MAX bins, strided, and an outer dim of stride 1 in X and Y whose size
 * and every other stride are multiples of the vector width. */
static bool softmax_vec(const norm_args &a, cudaStream_t st)
{
    if (a.r.rrank != 1 || a.r.rstride[0][0] == 1 || a.r.row_len > NV_MAX || a.r.orank < 1) return false;
    if (a.xt != a.yt || (a.xt != ST_F32 && a.xt != ST_F16 && a.xt != ST_BF16)) return false;
    const int V = a.xt == ST_F32 ? 4 : 8;
    int last = a.r.orank - 1;
    if (a.r.ostride[0][last] != 1 || a.r.ostride[1][last] != 1 || a.r.osize[last] % V) return false;
    if ((uintptr_t)a.x % 16 || (uintptr_t)a.y % 16 || a.r.rstride[0][0] % V || a.r.rstride[1][0] % V) return false;
    for (int d = 0; d < last; d++)
        if (a.r.ostride[0][d] % V || a.r.ostride[1][d] % V) return false;
    int64_t groups = a.r.n_outer / V;
    unsigned grid = (unsigned)st_blocks(groups, 128);
    if (a.xt == ST_F32) softmax_vec_kernel<float, 4><<<grid, 128, 0, st>>>(a, groups);
    else if (a.xt == ST_F16) softmax_vec_kernel<__half, 8><<<grid, 128, 0, st>>>(a, groups);
    else softmax_vec_kernel<__nv_bfloat16, 8><<<grid, 128, 0, st>>>(a, groups);
    return true;
}

static bool norm_col(const st_kctx *k, const norm_args &a)
{
    if (a.kind != ST_N_LAYER_NORM && a.kind != ST_N_SOFTMAX && a.kind != ST_N_LOG_SOFTMAX) return false;
    if (a.xt != a.yt || (a.xt != ST_F32 && a.xt != ST_F16 && a.xt != ST_BF16)) return false;
    if (a.r.rrank != 1 || a.r.rstride[0][0] == 1 || a.r.orank < 1 || a.r.ostride[0][a.r.orank - 1] != 1) return false;
    cudaStream_t st = st_stream(k);
    if (a.kind != ST_N_LAYER_NORM && softmax_vec(a, st)) return true;
    if (a.kind != ST_N_LAYER_NORM && a.r.row_len <= NT_MAX) {
        unsigned grid = (unsigned)st_blocks(a.r.n_outer, 256);
        if (a.xt == ST_F32) softmax_thread_kernel<float><<<grid, 256, 0, st>>>(a);
        else if (a.xt == ST_F16) softmax_thread_kernel<__half><<<grid, 256, 0, st>>>(a);
        else softmax_thread_kernel<__nv_bfloat16><<<grid, 256, 0, st>>>(a);
        return true;
    }
    int64_t blocks = (a.r.n_outer + 31) / 32;
    unsigned grid = (unsigned)(blocks > 65535 * 16 ? 65535 * 16 : blocks);
    dim3 threads(32, NC_Y);
    if (a.xt == ST_F32) norm_col_kernel<float><<<grid, threads, 0, st>>>(a);
    else if (a.xt == ST_F16) norm_col_kernel<__half><<<grid, threads, 0, st>>>(a);
    else norm_col_kernel<__nv_bfloat16><<<grid, threads, 0, st>>>(a);
    return true;
}

/* ---- BatchNormalization ---- */

struct bn_param {
    const void *p;
    st_dtype t;
    int rank;
    int64_t size[ST_MAX_RANK], stride[ST_MAX_RANK];
};

/* Element i (row-major) of a small parameter operand. */
__device__ __forceinline__ float bn_load(const bn_param &p, int64_t i)
{
    int64_t off = 0;
    for (int d = p.rank - 1; d >= 0; d--) {
        off += (i % p.size[d]) * p.stride[d];
        i /= p.size[d];
    }
    return st_ldf(p.t, p.p, off);
}

/* a = scale / sqrt(var + eps), b = B - mean * a, per group. */
__global__ void bn_fold_kernel(bn_param scale, bn_param bias, bn_param mean, bn_param var, float eps, int64_t groups,
                               float *ab)
{
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += (int64_t)gridDim.x * blockDim.x) {
        float a = bn_load(scale, g) / sqrtf(bn_load(var, g) + eps);
        ab[g] = a;
        ab[groups + g] = bn_load(bias, g) - bn_load(mean, g) * a;
    }
}

struct bn_args {
    const void *x;
    void *y;
    st_dtype xt, yt;
    int rank;
    int64_t size[ST_MAX_RANK], xs[ST_MAX_RANK], ys[ST_MAX_RANK];
    int64_t n, plane, groups;   /* group of element i: (i / plane) % groups */
    const float *ab;
};

__global__ void bn_apply_kernel(bn_args a)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo = 0, yo = 0, r = i;
        for (int d = a.rank - 1; d >= 0; d--) {
            int64_t c = r % a.size[d];
            r /= a.size[d];
            xo += c * a.xs[d];
            yo += c * a.ys[d];
        }
        int64_t g = (i / a.plane) % a.groups;
        st_stf(a.yt, a.y, yo, st_ldf(a.xt, a.x, xo) * a.ab[g] + a.ab[a.groups + g]);
    }
}

static bn_param bn_param_of(const st_operand *o)
{
    bn_param p;
    memset(&p, 0, sizeof p);
    p.p = o->data;
    p.t = o->dtype;
    p.rank = o->rank;
    for (int d = 0; d < o->rank; d++) {
        p.size[d] = o->sizes[d];
        p.stride[d] = o->strides[d];
    }
    return p;
}

static st_status batch_norm(const st_kctx *k, const st_norm_state *s)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    cudaStream_t stream = st_stream(k);
    bn_args a;
    memset(&a, 0, sizeof a);
    a.n = st_operand_numel(x);
    if (a.n == 0) return ST_OK;
    /* per channel, or (spatial = 0, opset < 9) per element of dims[1:] */
    a.groups = s->spatial ? x->sizes[1] : st_numel(x->rank - 1, x->sizes + 1);
    a.plane = s->spatial ? st_numel(x->rank - 2, x->sizes + 2) : 1;
    if ((size_t)a.groups * 2 * sizeof(float) > ctx->workspace_bytes)
        return st_error(ST_ERR_INTERNAL, "cuda: BatchNormalization with %lld parameter sets reached the kernel", (long long)a.groups);
    float *ab = (float *)ctx->workspace;
    bn_fold_kernel<<<st_blocks(a.groups, 256), 256, 0, stream>>>(bn_param_of(&k->in[1]), bn_param_of(&k->in[2]),
                                                                 bn_param_of(&k->in[3]), bn_param_of(&k->in[4]),
                                                                 s->epsilon, a.groups, ab);
    a.x = x->data;
    a.y = y->data;
    a.xt = x->dtype;
    a.yt = y->dtype;
    a.rank = x->rank;
    for (int d = 0; d < x->rank; d++) {
        a.size[d] = x->sizes[d];
        a.xs[d] = x->strides[d];
        a.ys[d] = y->strides[d];
    }
    a.ab = ab;
    bn_apply_kernel<<<st_blocks(a.n, 256), 256, 0, stream>>>(a);
    return ST_OK;
}

/* Strides of a parameter broadcast to x's dims [from, rank) (right-aligned,
 * 0 on its unit dims and on dims before from). */
static void trailing_strides(const st_operand *x, const st_operand *p, int from, int64_t *s)
{
    int rr = x->rank - from;
    for (int d = 0; d < x->rank; d++) {
        int pi = d - from - (rr - p->rank);
        s[d] = d < from || pi < 0 || p->sizes[pi] == 1 ? 0 : p->strides[pi];
    }
}

/* The element stride of a parameter holding one value per channel (its
 * only non-unit dim; 0 when it has a single element). */
static int64_t channel_stride(const st_operand *p)
{
    for (int d = 0; d < p->rank; d++)
        if (p->sizes[d] > 1) return p->strides[d];
    return 0;
}

extern "C" st_status st_cuda_norm(const st_kctx *k)
{
    const st_norm_state *s = (const st_norm_state *)k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (s->kind == ST_N_BATCH_NORM) return batch_norm(k, s);
    norm_args a;
    memset(&a, 0, sizeof a);
    a.kind = s->kind;
    a.x = x->data;
    a.y = y->data;
    a.xt = x->dtype;
    a.yt = y->dtype;
    a.eps = s->epsilon;
    a.alpha = s->alpha;
    a.beta = s->beta;
    a.lrn_bias = s->bias;
    a.p = s->p;
    a.size = s->size;
    int64_t ss[ST_MAX_RANK] = {0}, bs[ST_MAX_RANK] = {0}, ms[ST_MAX_RANK] = {0}, is[ST_MAX_RANK] = {0};
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    if (s->kind == ST_N_LAYER_NORM) {
        a.scale = k->in[1].data;
        a.st = k->in[1].dtype;
        trailing_strides(x, &k->in[1], s->axis, ss);
        if (k->n_in > 2 && k->in[2].data) {
            a.bias = k->in[2].data;
            a.bt = k->in[2].dtype;
            trailing_strides(x, &k->in[2], s->axis, bs);
        }
        /* Mean and InvStdDev: one value per row, on the outer axes */
        const st_operand *mo = k->n_out > 1 && k->out[1].data ? &k->out[1] : NULL;
        const st_operand *io = k->n_out > 2 && k->out[2].data ? &k->out[2] : NULL;
        for (int d = 0; d < x->rank; d++) {
            if (mask >> d & 1) continue;
            if (mo) ms[d] = mo->strides[d];
            if (io) is[d] = io->strides[d];
        }
        if (mo) {
            a.mean = mo->data;
            a.mt = mo->dtype;
        }
        if (io) {
            a.inv = io->data;
            a.it = io->dtype;
        }
    } else if (s->kind == ST_N_INSTANCE_NORM) {
        a.scale = k->in[1].data;
        a.st = k->in[1].dtype;
        a.bias = k->in[2].data;
        a.bt = k->in[2].dtype;
        /* one value per channel, on axis 1 */
        ss[1] = channel_stride(&k->in[1]);
        bs[1] = channel_stride(&k->in[2]);
    }
    const int64_t *strides[ST_RL_MAXOPS] = {x->strides, y->strides, ss, bs, ms, is};
    a.r = st_rl_make(x->rank, x->sizes, mask, ST_RL_MAXOPS, strides);
    if (a.r.n_outer == 0 || a.r.row_len == 0) return ST_OK;
    if (norm_warp(k, a) || norm_col(k, a)) return ST_OK;
    int threads = st_row_threads(a.r.row_len);
    norm_kernel<<<st_row_blocks(a.r.n_outer), threads, 0, st_stream(k)>>>(a);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

/* BatchNormalization folds its parameters into the workspace (two floats
 * per parameter set). */
static bool norm_accepts(const st_knode *n, char *why, size_t len)
{
    const st_norm_state *s = (const st_norm_state *)n->state;
    const st_view *x = &n->views[0];
    if (s->kind == ST_N_BATCH_NORM) {
        int64_t groups = s->spatial ? x->sizes[1] : st_numel(x->rank - 1, x->sizes + 1);
        if ((uint64_t)groups * 2 * sizeof(float) > ST_CUDA_WORKSPACE)
            return st_kernel_refuse(why, len, "BatchNormalization with %lld parameter sets exceeds the workspace",
                                    (long long)groups);
    }
    return st_cuda_accepts_no_f64(n, why, len);
}

#define NORM(name) {name, "", ST_DT_FLOATS, st_cuda_norm, norm_accepts, NULL, NULL}
extern "C" const st_kernel st_cuda_k_norm[] = {
    NORM("Softmax"), NORM("LogSoftmax"), NORM("Hardmax"), NORM("LayerNormalization"), NORM("BatchNormalization"),
    NORM("InstanceNormalization"), NORM("LpNormalization"), NORM("MeanVarianceNormalization"), NORM("LRN"),
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
