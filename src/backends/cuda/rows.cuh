/*
 * rows.cuh — what the CUDA kernels of the reduce, norm, pooling, linalg
 * and conv families share beyond common.cuh:
 *   - st_rowlay: an n-d shape split into outer positions and rows (the
 *     axes of a mask), for up to ST_RL_MAXOPS operands with their own
 *     strides over that one shape (0 where an operand does not extend),
 *     the device twin of backends/common/rows.h.  A kernel runs one block per
 *     outer position and walks the row with the block's threads.
 *   - block reductions (warp shuffles, then one warp over the warps'
 *     results): a fixed tree for a given block size, so a result does not
 *     depend on timing.
 *   - st_pack: a strided copy of any element size into packed memory (a
 *     region of the workspace), for library calls that cannot take an
 *     operand's strides.
 */
#ifndef ST_CUDA_ROWS_CUH
#define ST_CUDA_ROWS_CUH

#include "backends/cuda/ew_rows.cuh"

#define ST_RL_MAXOPS 6

struct st_rowlay {
    int nops;
    int orank, rrank;                               /* after dropping unit dims and merging */
    int64_t osize[ST_MAX_RANK], rsize[ST_MAX_RANK];
    int64_t ostride[ST_RL_MAXOPS][ST_MAX_RANK];
    int64_t rstride[ST_RL_MAXOPS][ST_MAX_RANK];
    int64_t n_outer, row_len;
};

/* Appends dim (size, per-operand strides) to one half, merging it into the
 * previous dim when every operand steps evenly across both. */
static inline void st_rl_push(int nops, int *rank, int64_t *size, int64_t (*stride)[ST_MAX_RANK], int64_t sz,
                              const int64_t *st)
{
    int r = *rank;
    if (r > 0) {
        bool merge = true;
        for (int k = 0; k < nops; k++)
            if (stride[k][r - 1] != st[k] * sz) merge = false;
        if (merge) {
            size[r - 1] *= sz;
            for (int k = 0; k < nops; k++) stride[k][r - 1] = st[k];
            return;
        }
    }
    size[r] = sz;
    for (int k = 0; k < nops; k++) stride[k][r] = st[k];
    *rank = r + 1;
}

/* Splits (rank, sizes) by mask (bit d: axis d belongs to the row); strides[k]
 * are operand k's element strides over that shape.  Both halves keep the
 * axes' order, so rows and elements are numbered row-major. */
static inline st_rowlay st_rl_make(int rank, const int64_t *sizes, uint32_t mask, int nops, const int64_t *const *strides)
{
    st_rowlay r;
    memset(&r, 0, sizeof r);
    r.nops = nops;
    r.n_outer = 1;
    r.row_len = 1;
    for (int d = 0; d < rank; d++) {
        int64_t st[ST_RL_MAXOPS];
        for (int k = 0; k < nops; k++) st[k] = strides[k] ? strides[k][d] : 0;
        if (mask >> d & 1) r.row_len *= sizes[d];
        else r.n_outer *= sizes[d];
        if (sizes[d] == 1) continue;
        if (mask >> d & 1) st_rl_push(nops, &r.rrank, r.rsize, r.rstride, sizes[d], st);
        else st_rl_push(nops, &r.orank, r.osize, r.ostride, sizes[d], st);
    }
    return r;
}

/* Offsets of outer position o's first element in operands [0, n). */
__device__ __forceinline__ void st_rl_outer(const st_rowlay &r, int64_t o, int n, int64_t *off)
{
    for (int k = 0; k < n; k++) off[k] = 0;
    for (int d = r.orank - 1; d >= 0; d--) {
        int64_t c = o % r.osize[d];
        o /= r.osize[d];
        for (int k = 0; k < n; k++) off[k] += c * r.ostride[k][d];
    }
}

/* Offset of row element j within the row, in operand k. */
__device__ __forceinline__ int64_t st_rl_elem(const st_rowlay &r, int k, int64_t j)
{
    if (r.rrank == 1) return j * r.rstride[k][0];
    int64_t off = 0;
    for (int d = r.rrank - 1; d >= 0; d--) {
        off += (j % r.rsize[d]) * r.rstride[k][d];
        j /= r.rsize[d];
    }
    return off;
}

/* ---- block reductions (blockDim.x a multiple of 32, at most 1024) ---- */

struct st_op_sum {
    __device__ float operator()(float a, float b) const { return a + b; }
    __device__ double operator()(double a, double b) const { return a + b; }
};
/* max and min that let a NaN win, as numpy's reductions do */
struct st_op_max {
    __device__ float operator()(float a, float b) const { return (b > a) || isnan(b) ? b : a; }
};
struct st_op_min {
    __device__ float operator()(float a, float b) const { return (b < a) || isnan(b) ? b : a; }
};

/* Reduces v over the block; every thread gets the result.  sh: 33 Ts of
 * shared memory. */
template <typename T, typename F>
__device__ __forceinline__ T st_block_reduce(T v, F f, T ident, T *sh)
{
    for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads(); /* sh may still be read from a previous reduction */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < nw ? sh[lane] : ident;
        for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) sh[32] = v;
    }
    __syncthreads();
    return sh[32];
}

/* ---- arg max / arg min: (value, index) pairs under one total order ---- */

__device__ __forceinline__ bool st_isnan_v(float v) { return isnan(v); }
__device__ __forceinline__ bool st_isnan_v(long long) { return false; }
__device__ __forceinline__ bool st_isnan_v(unsigned long long) { return false; }

/* Does (av, ai) beat (bv, bi)?  A NaN beats every number (numpy's argmax);
 * between equal values (or two NaNs) the first index wins, or the last
 * with select_last.  A total order, so any reduction tree gives the answer
 * a left-to-right scan gives. */
template <typename T>
__device__ __forceinline__ bool st_arg_beats(T av, long long ai, T bv, long long bi, bool is_max, bool last)
{
    bool an = st_isnan_v(av), bn = st_isnan_v(bv);
    if (an != bn) return an;
    if (!an && av != bv) return is_max ? av > bv : av < bv;
    return last ? ai > bi : ai < bi;
}

/* The block's best pair; every thread gets it.  shv, shi: 33 entries. */
template <typename T>
__device__ __forceinline__ void st_block_argbest(T &v, long long &i, bool is_max, bool last, T *shv, long long *shi)
{
    for (int o = 16; o > 0; o >>= 1) {
        T ov = __shfl_down_sync(0xffffffffu, v, o);
        long long oi = __shfl_down_sync(0xffffffffu, i, o);
        /* lanes past the warp's end read their own pair back: harmless */
        if (oi >= 0 && (i < 0 || st_arg_beats(ov, oi, v, i, is_max, last))) {
            v = ov;
            i = oi;
        }
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) {
        shv[w] = v;
        shi[w] = i;
    }
    __syncthreads();
    if (w == 0) {
        if (lane < nw) {
            v = shv[lane];
            i = shi[lane];
        } else {
            i = -1;
        }
        for (int o = 16; o > 0; o >>= 1) {
            T ov = __shfl_down_sync(0xffffffffu, v, o);
            long long oi = __shfl_down_sync(0xffffffffu, i, o);
            if (oi >= 0 && (i < 0 || st_arg_beats(ov, oi, v, i, is_max, last))) {
                v = ov;
                i = oi;
            }
        }
        if (lane == 0) {
            shv[32] = v;
            shi[32] = i;
        }
    }
    __syncthreads();
    v = shv[32];
    i = shi[32];
}

/* Threads per block for rows of n elements: a warp for short rows, up to
 * 256 for long ones. */
static inline int st_row_threads(int64_t n)
{
    int t = 32;
    while (t < 256 && t < n) t *= 2;
    return t;
}

/* Blocks for a one-block-per-row kernel that loops when rows exceed the grid. */
static inline unsigned st_row_blocks(int64_t rows)
{
    return (unsigned)(rows < 1 ? 1 : rows > 1048576 ? 1048576 : rows);
}

/* ---- packing ---- */

template <typename T>
__global__ void st_pack_kernel(st_walk w, const T *src, T *dst)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        dst[off[0]] = src[off[1]];
    }
}

/* Copies src (any strides) into dst with the strides dst gives, same
 * dtype; enqueued on s. */
static inline st_status st_pack(cudaStream_t s, const st_operand *dst, const st_operand *src)
{
    if (st_ewr_copy(s, dst->rank, dst->sizes, dst->data, dst->strides, src->data, src->strides, st_dtype_size(src->dtype)))
        return ST_OK;
    st_walk w = st_walk2(dst->rank, dst->sizes, dst->strides, src->strides);
    if (w.n == 0) return ST_OK;
    unsigned blocks = st_blocks(w.n, 256);
    switch (st_dtype_size(src->dtype)) {
    case 1: st_pack_kernel<uint8_t><<<blocks, 256, 0, s>>>(w, (const uint8_t *)src->data, (uint8_t *)dst->data); break;
    case 2: st_pack_kernel<uint16_t><<<blocks, 256, 0, s>>>(w, (const uint16_t *)src->data, (uint16_t *)dst->data); break;
    case 4: st_pack_kernel<uint32_t><<<blocks, 256, 0, s>>>(w, (const uint32_t *)src->data, (uint32_t *)dst->data); break;
    case 8: st_pack_kernel<uint64_t><<<blocks, 256, 0, s>>>(w, (const uint64_t *)src->data, (uint64_t *)dst->data); break;
    default: return st_error(ST_ERR_INTERNAL, "cuda: packing %zu-byte elements", st_dtype_size(src->dtype));
    }
    return ST_OK;
}

/* src's shape packed row-major at dst (device memory). */
static inline st_operand st_packed_like(const st_operand *src, void *dst)
{
    st_operand p = *src;
    p.data = dst;
    st_strides_contiguous(p.rank, p.sizes, p.strides);
    return p;
}

/* ST_OK, or ST_ERR_BACKEND naming the CUDA call that failed. */
static inline st_status st_cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return ST_OK;
    return st_error(ST_ERR_BACKEND, "cuda: %s: %s", what, cudaGetErrorString(e));
}

/* Bytes rounded up to the 256-byte alignment library buffers like. */
static inline size_t st_align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* The largest power of two (up to 256) dividing an address or byte count. */
static inline unsigned st_alignment(uint64_t v)
{
    unsigned a = 256;
    while (a > 1 && v % a) a >>= 1;
    return a;
}

#endif
