/*
 * k_pool.cu — CUDA MaxPool, AveragePool (1 to 3 spatial dims),
 * GlobalAveragePool and GlobalMaxPool.
 *
 * A direct kernel per output element (the CPU's window rules:
 * count_include_pad counts pads, not a ceil_mode window's overhang);
 * GlobalAveragePool and GlobalMaxPool are a block reduction per (n, c).
 * 2-D pools of one float dtype take a plane kernel with 32-bit index math,
 * channels-last ones a kernel that reads 16-byte runs of channels.  The
 * window geometry is the conv's (k_conv.cuh).
 */
#include "backends/cuda/k_conv.cuh"
#include "backends/cuda/row_reduce.cuh"

#define THREADS 256

struct pool_args {
    geo g;
    const void *x;
    void *y;
    int64_t *ix;                   /* MaxPool's Indices, or NULL */
    int64_t ixs[5];
    st_dtype xt, yt;
    int64_t n, c;
    bool is_max, count_include_pad, col_major;
};

__global__ void pool_kernel(pool_args a)
{
    const geo &g = a.g;
    const float inf = __int_as_float(0x7f800000);
    int64_t total = a.n * a.c * g.osz[0] * g.osz[1] * g.osz[2];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, o[3];
        o[2] = r % g.osz[2];
        r /= g.osz[2];
        o[1] = r % g.osz[1];
        r /= g.osz[1];
        o[0] = r % g.osz[0];
        r /= g.osz[0];
        int64_t c = r % a.c, n = r / a.c;
        int64_t start[3], total_w = 1;
        for (int d = 0; d < 3; d++) {
            start[d] = o[d] * g.st[d] - g.pb[d];
            /* count_include_pad's divisor counts pads, not a ceil_mode window's overhang */
            int64_t lim = start[d] + (g.k[d] - 1) * g.dl[d] + 1, hi = g.isz[d] + g.pe[d];
            total_w *= ((lim < hi ? lim : hi) - start[d] + g.dl[d] - 1) / g.dl[d];
        }
        int64_t xb = n * g.xs[0] + c * g.xs[1], best = -1, count = 0;
        float acc = a.is_max ? -inf : 0.0f;
        for (int64_t kd = 0; kd < g.k[0]; kd++) {
            int64_t pd = start[0] + kd * g.dl[0];
            if (pd < 0 || pd >= g.isz[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; kh++) {
                int64_t ph = start[1] + kh * g.dl[1];
                if (ph < 0 || ph >= g.isz[1]) continue;
                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t pw = start[2] + kw * g.dl[2];
                    if (pw < 0 || pw >= g.isz[2]) continue;
                    float v = st_ldf(a.xt, a.x, xb + pd * g.xs[2] + ph * g.xs[3] + pw * g.xs[4]);
                    if (a.is_max) {
                        if (v > acc || best < 0) {
                            acc = v;
                            /* storage_order 1 (2-D only): column-major flat index */
                            best = a.col_major ? pw * g.isz[1] + ph : (pd * g.isz[1] + ph) * g.isz[2] + pw;
                        }
                    } else {
                        acc += v;
                    }
                    count++;
                }
            }
        }
        float res = a.is_max ? acc : acc / (float)(a.count_include_pad ? total_w : (count ? count : 1));
        int64_t yo = n * g.ys[0] + c * g.ys[1] + o[0] * g.ys[2] + o[1] * g.ys[3] + o[2] * g.ys[4];
        if (st_is_f32_class(a.yt)) st_stf(a.yt, a.y, yo, res);
        else st_sti(a.yt, a.y, yo, (int64_t)res);
        if (a.ix) {
            int64_t plane = g.isz[0] * g.isz[1] * g.isz[2];
            int64_t io = n * a.ixs[0] + c * a.ixs[1] + o[0] * a.ixs[2] + o[1] * a.ixs[3] + o[2] * a.ixs[4];
            a.ix[io] = (n * a.c + c) * plane + best;
        }
    }
}

/* 2-D pools without Indices, x and y of one float dtype: a plane per
 * blockIdx.y, 32-bit pixel arithmetic and typed loads (the general kernel
 * above took 0.94 ms for ResNet-50's 3x3 MaxPool at batch 32, f16, on an
 * H200: 64 MB moved at a sixteenth of the bandwidth).  Same window rules. */
struct pool2_args {
    const void *x;
    void *y;
    int ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, peh, pew;
    int64_t xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w, planes, channels;
    bool is_max, count_include_pad;
};

template <typename T>
__global__ void pool2_kernel(pool2_args a)
{
    const float inf = __int_as_float(0x7f800000);
    const int total = a.oh * a.ow;
    for (int64_t pc = blockIdx.y; pc < a.planes; pc += gridDim.y) {
        int64_t n = pc / a.channels, c = pc - n * a.channels;
        const T *x = (const T *)a.x + n * a.xs_n + c * a.xs_c;
        T *y = (T *)a.y + n * a.ys_n + c * a.ys_c;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
            int oy = i / a.ow, ox = i - oy * a.ow;
            int y0 = oy * a.sh - a.ph, x0 = ox * a.sw - a.pw;
            float acc = a.is_max ? -inf : 0.0f;
            int count = 0;
            for (int ky = 0; ky < a.kh; ky++) {
                int py = y0 + ky * a.dh;
                if (py < 0 || py >= a.ih) continue;
                for (int kx = 0; kx < a.kw; kx++) {
                    int px = x0 + kx * a.dw;
                    if (px < 0 || px >= a.iw) continue;
                    float v = st_to_f<T>(x[py * a.xs_h + px * a.xs_w]);
                    if (a.is_max) acc = v > acc || count == 0 ? v : acc;
                    else acc += v;
                    count++;
                }
            }
            if (!a.is_max) {
                int div = count ? count : 1;
                if (a.count_include_pad) {
                    int ly = y0 + (a.kh - 1) * a.dh + 1, hy = a.ih + a.peh, lx = x0 + (a.kw - 1) * a.dw + 1, hx = a.iw + a.pew;
                    div = (((ly < hy ? ly : hy) - y0 + a.dh - 1) / a.dh) * (((lx < hx ? lx : hx) - x0 + a.dw - 1) / a.dw);
                }
                acc /= (float)div;
            }
            y[oy * a.ys_h + ox * a.ys_w] = st_from_f<T>(acc);
        }
    }
}

/* The same pools on channels-last operands (x and y step by one element
 * along C): a thread takes V neighbouring channels of one output pixel,
 * so a warp reads whole 16-byte runs.  pool2_kernel's pixel-per-thread
 * order touched elements C apart there: YOLOv8n's three 5x5 MaxPools at
 * batch 32 in f16 took 0.49 ms on an H200. */
template <typename T, int V>
__global__ void pool2_cl_kernel(pool2_args a, int64_t total)
{
    typedef st_vec<T, V> vec;
    const float inf = __int_as_float(0x7f800000);
    const int cv = (int)(a.channels / V);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int c, ox, oy;
        int64_t n;
        cl_item(i, cv, V, a.ow, a.oh, &c, &ox, &oy, &n);
        const T *x = (const T *)a.x + n * a.xs_n + c;
        int y0 = oy * a.sh - a.ph, x0 = ox * a.sw - a.pw;
        float acc[V];
        for (int j = 0; j < V; j++) acc[j] = a.is_max ? -inf : 0.0f;
        int count = 0;
        for (int ky = 0; ky < a.kh; ky++) {
            int py = y0 + ky * a.dh;
            if (py < 0 || py >= a.ih) continue;
            for (int kx = 0; kx < a.kw; kx++) {
                int px = x0 + kx * a.dw;
                if (px < 0 || px >= a.iw) continue;
                vec u = *(const vec *)(x + py * a.xs_h + px * a.xs_w);
                for (int j = 0; j < V; j++) {
                    float v = st_to_f<T>(u.v[j]);
                    if (a.is_max) acc[j] = v > acc[j] || count == 0 ? v : acc[j];
                    else acc[j] += v;
                }
                count++;
            }
        }
        float div = 1.0f;
        if (!a.is_max) {
            int d = count ? count : 1;
            if (a.count_include_pad) {
                int ly = y0 + (a.kh - 1) * a.dh + 1, hy = a.ih + a.peh, lx = x0 + (a.kw - 1) * a.dw + 1, hx = a.iw + a.pew;
                d = (((ly < hy ? ly : hy) - y0 + a.dh - 1) / a.dh) * (((lx < hx ? lx : hx) - x0 + a.dw - 1) / a.dw);
            }
            div = (float)d;
        }
        vec o;
        for (int j = 0; j < V; j++) o.v[j] = st_from_f<T>(a.is_max ? acc[j] : acc[j] / div);
        *(vec *)((T *)a.y + n * a.ys_n + oy * a.ys_h + ox * a.ys_w + c) = o;
    }
}

/* The channels-last pool (st_cuda_pool takes it unless STRATA_CUDA_CL_COPY=0,
 * for A/B runs). */
template <typename T>
static void pool2_cl(const pool2_args &a, cudaStream_t st)
{
    const int full = 16 / (int)sizeof(T);
    uint64_t m = (uint64_t)a.channels | (uint64_t)a.xs_n | (uint64_t)a.xs_h | (uint64_t)a.xs_w | (uint64_t)a.ys_n |
                 (uint64_t)a.ys_h | (uint64_t)a.ys_w;
    bool vec = m % full == 0 && (uintptr_t)a.x % 16 == 0 && (uintptr_t)a.y % 16 == 0;
    int64_t total = a.planes / a.channels * a.oh * a.ow * (vec ? a.channels / full : a.channels);
    unsigned blocks = (unsigned)st_blocks(total, THREADS);
    if (vec) pool2_cl_kernel<T, 16 / sizeof(T)><<<blocks, THREADS, 0, st>>>(a, total);
    else pool2_cl_kernel<T, 1><<<blocks, THREADS, 0, st>>>(a, total);
}

/* Launches pool2_kernel when the pool fits it; false otherwise. */
static bool pool2(const st_kctx *k, const st_conv_state *s, const geo &g, bool has_ix)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (s->nsp != 2 || has_ix || x->dtype != y->dtype ||
        (x->dtype != ST_F32 && x->dtype != ST_F16 && x->dtype != ST_BF16))
        return false;
    if (g.isz[1] * g.isz[2] > INT32_MAX / 2 || g.osz[1] * g.osz[2] > INT32_MAX / 2) return false;
    pool2_args a;
    a.x = x->data;
    a.y = y->data;
    a.ih = (int)g.isz[1], a.iw = (int)g.isz[2], a.oh = (int)g.osz[1], a.ow = (int)g.osz[2];
    a.kh = (int)g.k[1], a.kw = (int)g.k[2], a.sh = (int)g.st[1], a.sw = (int)g.st[2];
    a.dh = (int)g.dl[1], a.dw = (int)g.dl[2], a.ph = (int)g.pb[1], a.pw = (int)g.pb[2];
    a.peh = (int)g.pe[1], a.pew = (int)g.pe[2];
    a.xs_n = g.xs[0], a.xs_c = g.xs[1], a.xs_h = g.xs[3], a.xs_w = g.xs[4];
    a.ys_n = g.ys[0], a.ys_c = g.ys[1], a.ys_h = g.ys[3], a.ys_w = g.ys[4];
    a.channels = y->sizes[1];
    a.planes = y->sizes[0] * y->sizes[1];
    a.is_max = s->is_max;
    a.count_include_pad = s->count_include_pad;
    cudaStream_t st = st_stream(k);
    if (a.xs_c == 1 && a.ys_c == 1 && a.channels > 1 && !st_knob_off("STRATA_CUDA_CL_COPY")) {
        if (x->dtype == ST_F32) pool2_cl<float>(a, st);
        else if (x->dtype == ST_F16) pool2_cl<__half>(a, st);
        else pool2_cl<__nv_bfloat16>(a, st);
        return true;
    }
    int total = a.oh * a.ow, threads = total >= 256 ? 256 : 128;
    int bx = (total + threads - 1) / threads;
    dim3 grid((unsigned)(bx > 64 ? 64 : bx), (unsigned)(a.planes > 65535 ? 65535 : a.planes));
    if (x->dtype == ST_F32) pool2_kernel<float><<<grid, threads, 0, st>>>(a);
    else if (x->dtype == ST_F16) pool2_kernel<__half><<<grid, threads, 0, st>>>(a);
    else pool2_kernel<__nv_bfloat16><<<grid, threads, 0, st>>>(a);
    return true;
}

/* Global pools: one block per (n, c) row of the spatial dims. */
struct gpool_args {
    st_rowlay r;                   /* 0: x, 1: y */
    const void *x;
    void *y;
    st_dtype xt, yt;
    bool is_max;
};

/* the CPU's max for pools: a NaN is taken only when first */
struct op_pmax {
    __device__ float operator()(float p, float q) const { return q > p ? q : p; }
};

__global__ void gpool_kernel(gpool_args a)
{
    __shared__ float sh[33];
    const float inf = __int_as_float(0x7f800000);
    const int64_t n = a.r.row_len;
    for (int64_t o = blockIdx.x; o < a.r.n_outer; o += gridDim.x) {
        int64_t off[2];
        st_rl_outer(a.r, o, 2, off);
        float acc = a.is_max ? -inf : 0.0f;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            float v = st_ldf(a.xt, a.x, off[0] + st_rl_elem(a.r, 0, j));
            acc = a.is_max ? (v > acc ? v : acc) : acc + v;
        }
        float res = a.is_max ? st_block_reduce(acc, op_pmax(), -inf, sh) : st_block_reduce(acc, st_op_sum(), 0.0f, sh) / (float)n;
        if (threadIdx.x == 0) {
            if (st_is_f32_class(a.yt)) st_stf(a.yt, a.y, off[1], res);
            else st_sti(a.yt, a.y, off[1], (int64_t)res);
        }
    }
}

/* GlobalAveragePool/GlobalMaxPool of a channels-last 4-D X (the squeeze of
 * a squeeze-excite block, a classifier's last pool): a block takes 32
 * channels of one image, its 16 rows of threads split the pixels, so each
 * warp reads 32 neighbouring channels of one pixel; gpool_kernel's row per
 * channel stepped C elements a load.  Same NaN rule as gpool_kernel
 * (cl_dw_pool says when). */
struct gpool_cl_args {
    const void *x;
    void *y;
    int h, w;
    int64_t c, xs_n, xs_h, xs_w, ys_n, ys_c;
    bool is_max;
};

template <typename T>
__global__ void gpool_cl_kernel(gpool_cl_args a)
{
    __shared__ float sh[16][33];
    const float inf = __int_as_float(0x7f800000);
    int64_t c = blockIdx.x * 32 + threadIdx.x, n = blockIdx.y;
    int hw = a.h * a.w;
    float acc = a.is_max ? -inf : 0.0f;
    if (c < a.c) {
        const T *x = (const T *)a.x + n * a.xs_n + c;
        for (int p = threadIdx.y; p < hw; p += 16) {
            int py = p / a.w, px = p - py * a.w;
            float v = st_to_f<T>(x[py * a.xs_h + px * a.xs_w]);
            acc = a.is_max ? (v > acc ? v : acc) : acc + v;
        }
    }
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < a.c) {
        float r = sh[0][threadIdx.x];
        for (int j = 1; j < 16; j++) r = a.is_max ? (sh[j][threadIdx.x] > r ? sh[j][threadIdx.x] : r) : r + sh[j][threadIdx.x];
        ((T *)a.y)[n * a.ys_n + c * a.ys_c] = st_from_f<T>(a.is_max ? r : r / (float)hw);
    }
}

/* Launches gpool_cl_kernel when X is 4-D channels-last and X and Y share a
 * float dtype; false otherwise. */
static bool gpool_cl(const st_kctx *k, bool is_max)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (!cl_dw_pool("pool") || x->rank != 4 || x->strides[1] != 1 || x->sizes[1] < 2 || x->dtype != y->dtype ||
        (x->dtype != ST_F32 && x->dtype != ST_F16 && x->dtype != ST_BF16) || x->sizes[0] > 65535)
        return false;
    if (x->sizes[2] * x->sizes[3] == 0 || x->sizes[2] * x->sizes[3] > INT32_MAX / 2 || x->sizes[2] * x->strides[2] > INT32_MAX / 2)
        return false;
    gpool_cl_args a;
    a.x = x->data;
    a.y = y->data;
    a.h = (int)x->sizes[2], a.w = (int)x->sizes[3];
    a.c = x->sizes[1];
    a.xs_n = x->strides[0], a.xs_h = x->strides[2], a.xs_w = x->strides[3];
    a.ys_n = y->strides[0], a.ys_c = y->strides[1];
    a.is_max = is_max;
    dim3 grid((unsigned)((a.c + 31) / 32), (unsigned)x->sizes[0]), threads(32, 16);
    cudaStream_t st = st_stream(k);
    if (x->dtype == ST_F32) gpool_cl_kernel<float><<<grid, threads, 0, st>>>(a);
    else if (x->dtype == ST_F16) gpool_cl_kernel<__half><<<grid, threads, 0, st>>>(a);
    else gpool_cl_kernel<__nv_bfloat16><<<grid, threads, 0, st>>>(a);
    return true;
}

extern "C" st_status st_cuda_pool(const st_kctx *k)
{
    const st_conv_state *s = (const st_conv_state *)k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    const st_operand *ix = k->n_out > 1 && k->out[1].data ? &k->out[1] : NULL;
    if (st_operand_numel(y) == 0) return ST_OK;
    bool global = strncmp(k->node->op_type, "Global", 6) == 0;
    if (global && gpool_cl(k, s->is_max)) return ST_OK;
    if (global) {
        gpool_args a;
        memset(&a, 0, sizeof a);
        int64_t ys[ST_MAX_RANK] = {0};
        ys[0] = y->strides[0];
        ys[1] = y->strides[1];
        const int64_t *strides[2] = {x->strides, ys};
        a.r = st_rl_make(x->rank, x->sizes, (uint32_t)((1u << x->rank) - 1) & ~3u, 2, strides);
        a.x = x->data;
        a.y = y->data;
        a.xt = x->dtype;
        a.yt = y->dtype;
        a.is_max = s->is_max;
        if (a.r.row_len == 0) return st_error(ST_ERR_SHAPE, "cuda: %s of an empty spatial extent", k->node->op_type);
        gpool_kernel<<<st_row_blocks(a.r.n_outer), st_row_threads(a.r.row_len), 0, st_stream(k)>>>(a);
        return ST_OK;
    }
    pool_args a;
    memset(&a, 0, sizeof a);
    a.g = geo_make(s, x, y, NULL);
    a.x = x->data;
    a.y = y->data;
    a.xt = x->dtype;
    a.yt = y->dtype;
    a.n = y->sizes[0];
    a.c = y->sizes[1];
    a.is_max = s->is_max;
    a.count_include_pad = s->count_include_pad;
    a.col_major = s->storage_order == 1 && s->nsp == 2;
    if (pool2(k, s, a.g, ix != NULL)) return ST_OK;
    if (ix) {
        a.ix = (int64_t *)ix->data;
        a.ixs[0] = ix->strides[0];
        a.ixs[1] = ix->strides[1];
        for (int i = 0; i < s->nsp; i++) a.ixs[2 + 3 - s->nsp + i] = ix->strides[2 + i];
    }
    pool_kernel<<<st_blocks(st_operand_numel(y), THREADS), THREADS, 0, st_stream(k)>>>(a);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

extern "C" const st_kernel st_cuda_k_pool[] = {
    {"MaxPool", "", ST_DT_FLOATS | ST_DT(ST_I8) | ST_DT(ST_U8), st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {"AveragePool", "", ST_DT_FLOATS, st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {"GlobalAveragePool", "", ST_DT_FLOATS, st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {"GlobalMaxPool", "", ST_DT_FLOATS, st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
