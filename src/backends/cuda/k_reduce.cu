/*
 * k_reduce.cu — CUDA kernels of the reduce family: the ten ReduceX ops
 * and ArgMax/ArgMin.  (TopK and CumSum have no CUDA kernel yet.)
 *
 * One block per output: the input's shape splits into outer positions
 * (one output each) and rows (the reduced axes, rows.cuh), and the block's
 * threads walk the row with the input's strides and fold their values
 * with a fixed reduction tree.  Semantics are the CPU's (k_reduce.c):
 * f32, f16 and bf16 accumulate in f32, a NaN wins max and min,
 * ReduceLogSumExp subtracts the row's max first; integers accumulate in
 * int64 with wrap-around (L2, LogSum and LogSumExp of integers in double),
 * and an integer mean divides in double at the end.
 */
#include "backends/cuda/rows.cuh"
extern "C" {
#include "ops/reduce.h"
}

struct reduce_args {
    st_rowlay r;              /* 0: x, 1: y (0 strides on the reduced axes) */
    const void *x;
    void *y;
    st_dtype xt, yt;
    int kind;
    bool integer, uns;
};

__device__ __forceinline__ float pre_f(int kind, float v)
{
    switch (kind) {
    case ST_R_L1: return fabsf(v);
    case ST_R_L2:
    case ST_R_SUM_SQUARE: return v * v;
    default: return v;
    }
}

struct op_mul_f {
    __device__ float operator()(float p, float q) const { return p * q; }
};
struct op_max_d {
    __device__ double operator()(double p, double q) const { return q > p ? q : p; }
};

__global__ void reduce_float_kernel(reduce_args a)
{
    __shared__ float sh[33];
    const float inf = __int_as_float(0x7f800000);
    const int64_t n = a.r.row_len;
    for (int64_t o = blockIdx.x; o < a.r.n_outer; o += gridDim.x) {
        int64_t off[2];
        st_rl_outer(a.r, o, 2, off);
        float res;
        switch (a.kind) {
        case ST_R_MAX:
        case ST_R_MIN: {
            bool mx = a.kind == ST_R_MAX;
            float acc = mx ? -inf : inf;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float v = st_ldf(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
                acc = mx ? st_op_max()(acc, v) : st_op_min()(acc, v);
            }
            res = mx ? st_block_reduce(acc, st_op_max(), -inf, sh) : st_block_reduce(acc, st_op_min(), inf, sh);
            break;
        }
        case ST_R_PROD: {
            float acc = 1.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) acc *= st_ldf(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
            res = st_block_reduce(acc, op_mul_f(), 1.0f, sh);
            break;
        }
        case ST_R_LOG_SUM_EXP: {
            float mx = -inf;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                mx = st_op_max()(mx, st_ldf(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j)));
            mx = st_block_reduce(mx, st_op_max(), -inf, sh);
            float shift = isfinite(mx) ? mx : 0.0f, acc = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                acc += expf(st_ldf(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j)) - shift);
            acc = st_block_reduce(acc, st_op_sum(), 0.0f, sh);
            res = isfinite(mx) ? logf(acc) + shift : mx;
            break;
        }
        default: {
            float acc = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                acc += pre_f(a.kind, st_ldf(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j)));
            acc = st_block_reduce(acc, st_op_sum(), 0.0f, sh);
            res = a.kind == ST_R_MEAN ? acc / (float)n : a.kind == ST_R_L2 ? sqrtf(acc) : a.kind == ST_R_LOG_SUM ? logf(acc) : acc;
            break;
        }
        }
        if (threadIdx.x == 0) st_stf(a.yt, a.y, off[1], res);
    }
}

struct op_add_u {
    __device__ unsigned long long operator()(unsigned long long p, unsigned long long q) const { return p + q; }
};
struct op_mul_u {
    __device__ unsigned long long operator()(unsigned long long p, unsigned long long q) const { return p * q; }
};
struct op_max_i {
    bool uns, is_max;
    __device__ unsigned long long operator()(unsigned long long p, unsigned long long q) const
    {
        bool gt = uns ? q > p : (long long)q > (long long)p;
        bool lt = uns ? q < p : (long long)q < (long long)p;
        return (is_max ? gt : lt) ? q : p;
    }
};

__global__ void reduce_int_kernel(reduce_args a)
{
    __shared__ unsigned long long sh[33];
    __shared__ double shd[33];
    const int64_t n = a.r.row_len;
    for (int64_t o = blockIdx.x; o < a.r.n_outer; o += gridDim.x) {
        int64_t off[2];
        st_rl_outer(a.r, o, 2, off);
        if (a.kind == ST_R_L2 || a.kind == ST_R_LOG_SUM || a.kind == ST_R_LOG_SUM_EXP) {
            /* in double, as the CPU's generic path */
            double mx = -HUGE_VAL;
            if (a.kind == ST_R_LOG_SUM_EXP) {
                for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                    int64_t v = st_ldi(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
                    double dv = a.uns ? (double)(uint64_t)v : (double)v;
                    mx = dv > mx ? dv : mx;
                }
                mx = st_block_reduce(mx, op_max_d(), -HUGE_VAL, shd);
            }
            double shift = a.kind == ST_R_LOG_SUM_EXP && isfinite(mx) ? mx : 0.0, acc = 0.0;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                int64_t v = st_ldi(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
                double dv = a.uns ? (double)(uint64_t)v : (double)v;
                acc += a.kind == ST_R_L2 ? dv * dv : a.kind == ST_R_LOG_SUM_EXP ? exp(dv - shift) : dv;
            }
            acc = st_block_reduce(acc, st_op_sum(), 0.0, shd);
            double res = a.kind == ST_R_L2 ? sqrt(acc) : a.kind == ST_R_LOG_SUM ? log(acc) : log(acc) + shift;
            if (threadIdx.x == 0) st_sti(a.yt, a.y, off[1], (int64_t)res);
            continue;
        }
        unsigned long long acc;
        if (a.kind == ST_R_MAX || a.kind == ST_R_MIN) {
            op_max_i f = {a.uns, a.kind == ST_R_MAX};
            unsigned long long ident = a.kind == ST_R_MAX ? (a.uns ? 0ull : (unsigned long long)INT64_MIN)
                                                         : (a.uns ? ~0ull : (unsigned long long)INT64_MAX);
            acc = ident;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
                acc = f(acc, (unsigned long long)st_ldi(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j)));
            acc = st_block_reduce(acc, f, ident, sh);
        } else if (a.kind == ST_R_PROD) {
            acc = 1;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) acc *= (unsigned long long)st_ldi(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
            acc = st_block_reduce(acc, op_mul_u(), 1ull, sh);
        } else {
            acc = 0;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                unsigned long long v = (unsigned long long)st_ldi(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
                if (a.kind == ST_R_L1 && !a.uns && (long long)v < 0) v = 0 - v;
                if (a.kind == ST_R_SUM_SQUARE) v = v * v;
                acc += v;
            }
            acc = st_block_reduce(acc, op_add_u(), 0ull, sh);
        }
        if (threadIdx.x == 0) {
            if (a.kind == ST_R_MEAN) {
                double sum = a.uns ? (double)acc : (double)(long long)acc;
                st_sti(a.yt, a.y, off[1], (int64_t)(sum / (double)n));
            } else {
                st_sti(a.yt, a.y, off[1], (int64_t)acc);
            }
        }
    }
}

/* Strides of y (the reduced output) over x's shape: 0 on reduced axes. */
static void output_strides(const st_operand *x, const st_operand *y, uint32_t mask, bool keepdims, int64_t *ys)
{
    int yd = 0;
    for (int d = 0; d < x->rank; d++) {
        if (mask >> d & 1) {
            ys[d] = 0;
            if (keepdims) yd++;
        } else {
            ys[d] = y->strides[yd++];
        }
    }
}

static bool is_f32_class(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

extern "C" st_status st_cuda_reduce(const st_kctx *k)
{
    const st_reduce_state *s = (const st_reduce_state *)k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    reduce_args a;
    memset(&a, 0, sizeof a);
    int64_t ys[ST_MAX_RANK] = {0};
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    output_strides(x, y, mask, s->keepdims, ys);
    const int64_t *strides[2] = {x->strides, ys};
    a.r = st_rl_make(x->rank, x->sizes, mask, 2, strides);
    if (a.r.n_outer == 0) return ST_OK;
    a.x = x->data;
    a.y = y->data;
    a.xt = x->dtype;
    a.yt = y->dtype;
    a.kind = s->kind;
    a.integer = !is_f32_class(x->dtype);
    a.uns = x->dtype == ST_U8 || x->dtype == ST_U16 || x->dtype == ST_U32 || x->dtype == ST_U64 || x->dtype == ST_BOOL;
    int threads = st_row_threads(a.r.row_len);
    if (a.integer) reduce_int_kernel<<<st_row_blocks(a.r.n_outer), threads, 0, st_stream(k)>>>(a);
    else reduce_float_kernel<<<st_row_blocks(a.r.n_outer), threads, 0, st_stream(k)>>>(a);
    return ST_OK;
}

/* ---- ArgMax, ArgMin ---- */

template <typename T>
__device__ __forceinline__ T arg_load(const reduce_args &a, int64_t off);
template <>
__device__ __forceinline__ float arg_load<float>(const reduce_args &a, int64_t off)
{
    return st_ldf(a.xt, a.x, off);
}
template <>
__device__ __forceinline__ long long arg_load<long long>(const reduce_args &a, int64_t off)
{
    return (long long)st_ldi(a.xt, a.x, off);
}
template <>
__device__ __forceinline__ unsigned long long arg_load<unsigned long long>(const reduce_args &a, int64_t off)
{
    return (unsigned long long)st_ldi(a.xt, a.x, off);
}

template <typename T>
__global__ void arg_kernel(reduce_args a, bool is_max, bool last)
{
    __shared__ T shv[33];
    __shared__ long long shi[33];
    const int64_t n = a.r.row_len;
    for (int64_t o = blockIdx.x; o < a.r.n_outer; o += gridDim.x) {
        int64_t off[2];
        st_rl_outer(a.r, o, 2, off);
        T bv = T();
        long long bi = -1;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            T v = arg_load<T>(a, off[0] + st_rl_elem(a.r, 0, j));
            if (bi < 0 || st_arg_beats(v, (long long)j, bv, bi, is_max, last)) {
                bv = v;
                bi = j;
            }
        }
        st_block_argbest(bv, bi, is_max, last, shv, shi);
        if (threadIdx.x == 0) st_sti(a.yt, a.y, off[1], bi);
    }
}

extern "C" st_status st_cuda_argminmax(const st_kctx *k)
{
    const st_reduce_state *s = (const st_reduce_state *)k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    reduce_args a;
    memset(&a, 0, sizeof a);
    int64_t ys[ST_MAX_RANK] = {0};
    output_strides(x, y, s->mask, s->keepdims, ys);
    const int64_t *strides[2] = {x->strides, ys};
    /* the row is the one axis (a unit axis leaves rows of one element, index 0) */
    a.r = st_rl_make(x->rank, x->sizes, s->mask, 2, strides);
    if (a.r.n_outer == 0 || a.r.row_len == 0) return ST_OK;
    a.x = x->data;
    a.y = y->data;
    a.xt = x->dtype;
    a.yt = y->dtype;
    bool is_max = s->kind == ST_R_MAX;
    int threads = st_row_threads(a.r.row_len);
    unsigned blocks = st_row_blocks(a.r.n_outer);
    cudaStream_t stream = st_stream(k);
    if (is_f32_class(x->dtype)) arg_kernel<float><<<blocks, threads, 0, stream>>>(a, is_max, s->select_last);
    else if (x->dtype == ST_U64) arg_kernel<unsigned long long><<<blocks, threads, 0, stream>>>(a, is_max, s->select_last);
    else arg_kernel<long long><<<blocks, threads, 0, stream>>>(a, is_max, s->select_last);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

#define REDUCE(name) {name, "", ST_DT_NUMERIC & ~ST_DT(ST_F64), st_cuda_reduce, st_cuda_accepts_no_f64, NULL, NULL}
extern "C" const st_kernel st_cuda_k_reduce[] = {
    REDUCE("ReduceSum"), REDUCE("ReduceMean"), REDUCE("ReduceMax"), REDUCE("ReduceMin"), REDUCE("ReduceProd"),
    REDUCE("ReduceL1"), REDUCE("ReduceL2"), REDUCE("ReduceLogSum"), REDUCE("ReduceLogSumExp"), REDUCE("ReduceSumSquare"),
    {"ArgMax", "", ST_DT_NUMERIC & ~ST_DT(ST_F64), st_cuda_argminmax, st_cuda_accepts_no_f64, NULL, NULL},
    {"ArgMin", "", ST_DT_NUMERIC & ~ST_DT(ST_F64), st_cuda_argminmax, st_cuda_accepts_no_f64, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
