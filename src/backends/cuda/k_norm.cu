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
