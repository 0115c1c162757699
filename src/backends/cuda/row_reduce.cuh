/*
 * row_reduce.cuh — rows and block reductions for the CUDA kernels of the
 * reduce, norm, pooling and conv families:
 *   - st_rowlay: an n-d shape split into outer positions and rows (the
 *     axes of a mask), for up to ST_RL_MAXOPS operands with their own
 *     strides over that one shape (0 where an operand does not extend),
 *     the device twin of backends/common/rows.h.  A kernel runs one block per
 *     outer position and walks the row with the block's threads.
 *   - block reductions (warp shuffles, then one warp over the warps'
 *     results): a fixed tree for a given block size, so a result does not
 *     depend on timing.
 * Device helpers and launch sizes only, no kernels (rows.cuh adds st_pack,
 * whose kernels every file including it carries).
 */
#ifndef ST_CUDA_ROW_REDUCE_CUH
#define ST_CUDA_ROW_REDUCE_CUH

#include "backends/cuda/common.cuh"

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

#endif
