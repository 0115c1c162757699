/*
 * k_conv.cu — CUDA Conv and pooling (1 to 3 spatial dims).
 *
 * Conv runs through cuDNN's convolution (the legacy API): tensor
 * descriptors carry X's and Y's real strides, so a channel slice of a
 * concat's output is written in place.  The first, uncaptured run of a
 * command builds the descriptors, asks cuDNN's heuristic
 * (cudnnGetConvolutionForwardAlgorithm_v7) for candidates and takes the
 * first that runs (that run is the command's output); descriptors and
 * algorithm stay in the command's slot, and captured runs only reuse them.
 * Bias and the fused activation (st_conv_state.epi) follow in one small
 * kernel in place on Y.  Math: f16/bf16 on tensor cores with f32
 * accumulation; f32 in plain FMA and without the FFT and Winograd
 * algorithms unless TF32 is allowed (cuDNN's default math would use TF32
 * on Hopper).
 *
 * Where cuDNN cannot take the operands' strides (or no algorithm runs on
 * them), X is packed into the workspace and cuDNN writes a packed Y there,
 * which the bias/activation kernel then stores with Y's strides.  Where
 * cuDNN cannot take the configuration at all (asymmetric pads that change
 * the output size, a strided W), the command falls back to a direct
 * kernel, one thread per output element, for any strides.
 * STRATA_CUDA_VERBOSE=1 says when either fallback is taken;
 * STRATA_CUDA_CONV=direct forces the direct kernel (for measuring it).
 *
 * Pools: a direct kernel per output element (the CPU's window rules:
 * count_include_pad counts pads, not a ceil_mode window's overhang);
 * GlobalAveragePool and GlobalMaxPool are a block reduction per (n, c).
 */
#include <cudnn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/conv_fused.h"
#include "backends/cuda/conv_tune.h"
#include "backends/cuda/ew_rows.cuh"
#include "backends/cuda/rows.cuh"
extern "C" {
#include "backends/cuda/cuda_internal.h"
#include "ops/conv.h"
}

#define THREADS 256

static st_status dnn(cudnnStatus_t e, const char *what)
{
    if (e == CUDNN_STATUS_SUCCESS) return ST_OK;
    return st_error(ST_ERR_BACKEND, "cudnn: %s: %s", what, cudnnGetErrorString(e));
}

static bool verbose(void)
{
    const char *v = getenv("STRATA_CUDA_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}


/* STRATA_CUDA_CONV=direct runs every Conv on the direct kernel: the
 * measurement of cuDNN against strata's own kernel (bench/RESULTS.md). */
static bool force_direct(void)
{
    const char *v = getenv("STRATA_CUDA_CONV");
    return v && strcmp(v, "direct") == 0;
}

static cudnnDataType_t dnn_type(st_dtype t)
{
    return t == ST_F16 ? CUDNN_DATA_HALF : t == ST_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* ---- geometry shared by the direct kernels: spatial dims padded to 3 ---- */

struct geo {
    int64_t isz[3], osz[3], k[3], st[3], dl[3], pb[3], pe[3];
    int64_t xs[5], ys[5], ws[5];      /* n, c, then 3 spatial (0 on padding dims) */
};

static geo geo_make(const st_conv_state *s, const st_operand *x, const st_operand *y, const st_operand *w)
{
    geo g;
    memset(&g, 0, sizeof g);
    for (int d = 0; d < 3; d++) g.isz[d] = g.osz[d] = g.k[d] = g.st[d] = g.dl[d] = 1;
    g.xs[0] = x->strides[0];
    g.xs[1] = x->strides[1];
    g.ys[0] = y->strides[0];
    g.ys[1] = y->strides[1];
    if (w) {
        g.ws[0] = w->strides[0];
        g.ws[1] = w->strides[1];
    }
    for (int i = 0; i < s->nsp; i++) {
        int d = 3 - s->nsp + i;
        g.isz[d] = x->sizes[2 + i];
        g.osz[d] = y->sizes[2 + i];
        g.k[d] = s->k[i];
        g.st[d] = s->s[i];
        g.dl[d] = s->d[i];
        g.pb[d] = s->pb[i];
        g.pe[d] = s->pe[i];
        g.xs[2 + d] = x->strides[2 + i];
        g.ys[2 + d] = y->strides[2 + i];
        if (w) g.ws[2 + d] = w->strides[2 + i];
    }
    return g;
}

/* ---- direct convolution (the fallback) ---- */

struct dconv_args {
    geo g;
    const void *x, *w, *b;
    void *y;
    st_dtype xt, wt, bt, yt;
    int64_t n, m, cg, mg, bs;
    st_epilogue epi;
};

__global__ void dconv_kernel(dconv_args a)
{
    const geo &g = a.g;
    int64_t total = a.n * a.m * g.osz[0] * g.osz[1] * g.osz[2];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i;
        int64_t ow = r % g.osz[2];
        r /= g.osz[2];
        int64_t oh = r % g.osz[1];
        r /= g.osz[1];
        int64_t od = r % g.osz[0];
        r /= g.osz[0];
        int64_t m = r % a.m, n = r / a.m, grp = m / a.mg;
        float acc = a.b ? st_ldf(a.bt, a.b, m * a.bs) : 0.0f;
        for (int64_t c = 0; c < a.cg; c++) {
            int64_t xc = n * g.xs[0] + (grp * a.cg + c) * g.xs[1], wc = m * g.ws[0] + c * g.ws[1];
            for (int64_t kd = 0; kd < g.k[0]; kd++) {
                int64_t id = od * g.st[0] - g.pb[0] + kd * g.dl[0];
                if (id < 0 || id >= g.isz[0]) continue;
                for (int64_t kh = 0; kh < g.k[1]; kh++) {
                    int64_t ih = oh * g.st[1] - g.pb[1] + kh * g.dl[1];
                    if (ih < 0 || ih >= g.isz[1]) continue;
                    for (int64_t kw = 0; kw < g.k[2]; kw++) {
                        int64_t iw = ow * g.st[2] - g.pb[2] + kw * g.dl[2];
                        if (iw < 0 || iw >= g.isz[2]) continue;
                        float xv = st_ldf(a.xt, a.x, xc + id * g.xs[2] + ih * g.xs[3] + iw * g.xs[4]);
                        float wv = st_ldf(a.wt, a.w, wc + kd * g.ws[2] + kh * g.ws[3] + kw * g.ws[4]);
                        acc += xv * wv;
                    }
                }
            }
        }
        st_stf(a.yt, a.y, n * g.ys[0] + m * g.ys[1] + od * g.ys[2] + oh * g.ys[3] + ow * g.ys[4], st_epilogue_f(a.epi, acc));
    }
}

static void direct_conv(const st_kctx *k, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    dconv_args a;
    memset(&a, 0, sizeof a);
    a.g = geo_make(s, x, y, w);
    a.x = x->data;
    a.w = w->data;
    a.b = b ? b->data : NULL;
    a.y = y->data;
    a.xt = x->dtype;
    a.wt = w->dtype;
    a.bt = b ? b->dtype : ST_F32;
    a.yt = y->dtype;
    a.bs = b ? b->strides[0] : 0;
    a.n = y->sizes[0];
    a.m = y->sizes[1];
    a.cg = x->sizes[1] / s->group;
    a.mg = y->sizes[1] / s->group;
    a.epi = s->epi;
    int64_t total = st_operand_numel(y);
    dconv_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(a);
}

/* ---- bias and activation: y = act(src + b[channel]) ---- */

struct epi_args {
    const void *src, *b;
    void *y;
    st_dtype yt, bt;
    int rank;
    int64_t size[5], ss[5], ys[5], bs, n;
    st_epilogue epi;
};

__global__ void epilogue_kernel(epi_args a)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, so = 0, yo = 0, ch = 0;
        for (int d = a.rank - 1; d >= 0; d--) {
            int64_t c = r % a.size[d];
            r /= a.size[d];
            so += c * a.ss[d];
            yo += c * a.ys[d];
            if (d == 1) ch = c;
        }
        float v = st_ldf(a.yt, a.src, so);
        if (a.b) v += st_ldf(a.bt, a.b, ch * a.bs);
        st_stf(a.yt, a.y, yo, st_epilogue_f(a.epi, v));
    }
}

/* The common case, one (image, channel) plane per blockIdx.y with packed
 * pixels: no index arithmetic per element and the bias read once, where the
 * general kernel above spends most of its time dividing (profiled on an
 * H200: 38% of YOLOv8n's kernel time at batch 32 went to the general one). */
template <typename T>
__device__ __forceinline__ float epi_ld(const T *p, int64_t i) { return st_ldf(ST_F32, p, i); }
template <>
__device__ __forceinline__ float epi_ld<__half>(const __half *p, int64_t i) { return __half2float(p[i]); }
template <>
__device__ __forceinline__ float epi_ld<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void epi_st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void epi_st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void epi_st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

struct plane_args {
    const void *src, *b;
    void *y;
    st_dtype bt;
    int64_t bs, plane, channels, planes, ys_n, ys_c, ss_n, ss_c;
    st_epilogue epi;
};

/* VEC pixels a thread, 16 bytes at a time where the planes allow it
 * (on an H200 the one-pixel version moved ResNet-50's activations at a
 * third of the bandwidth: 2.1 of its 6.1 ms at batch 32, f16). */
template <typename T, int VEC>
__global__ void epilogue_plane_kernel(plane_args a)
{
    for (int64_t pc = blockIdx.y; pc < a.planes; pc += gridDim.y) {
    int64_t n = pc / a.channels, c = pc % a.channels;
    float bias = a.b ? st_ldf(a.bt, a.b, c * a.bs) : 0.0f;
    const T *s = (const T *)a.src + n * a.ss_n + c * a.ss_c;
    T *d = (T *)a.y + n * a.ys_n + c * a.ys_c;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * VEC; i < a.plane;
         i += (int64_t)gridDim.x * blockDim.x * VEC) {
        if (VEC == 1) {
            epi_st(d, i, st_epilogue_f(a.epi, epi_ld(s, i) + bias));
            continue;
        }
        st_vec<T, VEC> v = *(const st_vec<T, VEC> *)(s + i);
#pragma unroll 1
        for (int e = 0; e < VEC; e++) v.v[e] = st_from_f<T>(st_epilogue_f(a.epi, st_to_f<T>(v.v[e]) + bias));
        *(st_vec<T, VEC> *)(d + i) = v;
    }
    }
}

/* 16 bytes of es-byte pixels when every plane start of src and y is
 * aligned for it, else 1. */
static int plane_vec(const plane_args &p, size_t es)
{
    int v = (int)(16 / es);
    int64_t b = 16;
    if (p.plane % v == 0 && (uintptr_t)p.src % b == 0 && (uintptr_t)p.y % b == 0 && (p.ys_n * (int64_t)es) % b == 0 &&
        (p.ys_c * (int64_t)es) % b == 0 && (p.ss_n * (int64_t)es) % b == 0 && (p.ss_c * (int64_t)es) % b == 0)
        return v;
    return 1;
}

template <typename T>
static void launch_plane(cudaStream_t stream, const plane_args &p, int64_t images)
{
    int vec = plane_vec(p, sizeof(T));
    int threads = p.plane / vec >= 256 ? 256 : 128;
    int64_t bx = (p.plane / vec + threads - 1) / threads;
    dim3 grid((unsigned)(bx > 64 ? 64 : bx), (unsigned)(images > 65535 ? 65535 : images));
    /* the full 16-byte width or 1: each width is another copy of every activation */
    if (vec > 1) epilogue_plane_kernel<T, 16 / sizeof(T)><<<grid, threads, 0, stream>>>(p);
    else epilogue_plane_kernel<T, 1><<<grid, threads, 0, stream>>>(p);
}

/* The dims after the channel dim as one packed run of pixels, or -1. */
static int64_t packed_plane(const st_operand *o)
{
    int64_t run = 1;
    for (int d = o->rank - 1; d >= 2; d--) {
        if (o->sizes[d] != 1 && o->strides[d] != run) return -1;
        run *= o->sizes[d];
    }
    return run;
}

/* Channels-last operands (passes/channels_last.c): the channel is the
 * innermost dim and the pixels step evenly (a packed NHWC tensor, or a
 * channel slice of one: a Concat's slot), so a thread takes VEC channels of
 * one pixel, 16 bytes at a time where the rows allow it.  CODE is the
 * activation's unary code at compile time (SiLU, ReLU), or -1: the switch
 * over every unary op in st_epilogue_f, per element, and one element a
 * thread left YOLOv8n's epilogues at 44 us a launch for a few MB (H200). */
struct cl_epi_args {
    const void *src, *b;
    void *y;
    st_dtype bt;
    int64_t bs, pixels, ps_src, ps_y;
    uint32_t cvec;                       /* channels / VEC */
    st_epilogue epi;
};

template <typename T, int VEC, int CODE, typename I>
__global__ void epilogue_cl_kernel(cl_epi_args a)
{
    /* I: 32-bit index math where the element count allows (a 64-bit
     * division per element held the batch-32 epilogues to about half the
     * bandwidth) */
    I n = (I)(a.pixels * a.cvec), cvec = (I)a.cvec;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p = i / cvec;
        int64_t c = (int64_t)(i - p * cvec) * VEC;
        st_vec<T, VEC> v = *(const st_vec<T, VEC> *)((const T *)a.src + p * a.ps_src + c);
#pragma unroll
        for (int e = 0; e < VEC; e++) {
            float f = st_to_f<T>(v.v[e]);
            if (a.b) f += st_ldf(a.bt, a.b, (c + e) * a.bs);
            f = CODE < 0 ? st_epilogue_f(a.epi, f) : st_unary_f(CODE, f, a.epi.alpha, a.epi.beta, 0.0f, a.epi.alpha, a.epi.beta);
            v.v[e] = st_from_f<T>(f);
        }
        *(st_vec<T, VEC> *)((T *)a.y + p * a.ps_y + c) = v;
    }
}

/* The pixel stride of a 4-D operand whose channels are its innermost,
 * contiguous dim and whose pixels step evenly, or 0. */
static int64_t cl_pixel_stride(const st_operand *o)
{
    if (o->rank != 4 || o->sizes[1] < 2 || o->strides[1] != 1) return 0;
    int64_t ps = o->sizes[3] > 1 ? o->strides[3] : o->sizes[2] > 1 ? o->strides[2] : o->strides[0];
    if (ps < o->sizes[1]) return 0;
    if (o->sizes[2] > 1 && o->strides[2] != ps * o->sizes[3]) return 0;
    if (o->sizes[0] > 1 && o->strides[0] != ps * o->sizes[2] * o->sizes[3]) return 0;
    return ps;
}

template <typename T>
static void launch_cl(cudaStream_t stream, cl_epi_args a, int64_t channels)
{
    const int full = 16 / (int)sizeof(T);
    bool vec = channels % full == 0 && a.ps_src % full == 0 && a.ps_y % full == 0 && (uintptr_t)a.src % 16 == 0 &&
               (uintptr_t)a.y % 16 == 0;
    int w = vec ? full : 1;
    a.cvec = (uint32_t)(channels / w);
    unsigned blocks = st_blocks(a.pixels * a.cvec, THREADS);
    int code = a.epi.act ? a.epi.act - 1 : -2;
    bool small = a.pixels * a.cvec < ((int64_t)1 << 31) - (int64_t)blocks * THREADS;
#define CL_GO(V, C)                                                                                                    \
    (small ? epilogue_cl_kernel<T, V, C, uint32_t><<<blocks, THREADS, 0, stream>>>(a)                                  \
           : epilogue_cl_kernel<T, V, C, int64_t><<<blocks, THREADS, 0, stream>>>(a))
#define CL_V(V)                                                                                                        \
    (code == ST_U_SILU ? CL_GO(V, ST_U_SILU) : code == ST_U_RELU ? CL_GO(V, ST_U_RELU) : code == -2 ? CL_GO(V, -2) : CL_GO(V, -1))
    if (vec) CL_V(16 / sizeof(T));
    else CL_V(1);
#undef CL_V
#undef CL_GO
}

/* y = act(src + b) per channel (b may be NULL); src has y's shape and
 * dtype and may be y itself.  Nothing to do in place without b and act. */
static st_status bias_epilogue(cudaStream_t stream, const st_operand *y, const st_operand *src, const st_operand *b,
                               st_epilogue epi)
{
    if (!b && !epi.act) return src->data == y->data ? ST_OK : st_pack(stream, y, src);
    int64_t plane = packed_plane(y);
    if (y->rank >= 3 && plane > 0 && plane == packed_plane(src) &&
        (y->dtype == ST_F32 || y->dtype == ST_F16 || y->dtype == ST_BF16)) {
        plane_args p;
        p.src = src->data;
        p.y = y->data;
        p.b = b ? b->data : NULL;
        p.bt = b ? b->dtype : ST_F32;
        p.bs = b ? b->strides[0] : 0;
        p.plane = plane;
        p.channels = y->sizes[1];
        p.planes = y->sizes[0] * y->sizes[1];
        p.ys_n = y->strides[0];
        p.ys_c = y->strides[1];
        p.ss_n = src->strides[0];
        p.ss_c = src->strides[1];
        p.epi = epi;
        int64_t planes = y->sizes[0] * y->sizes[1];
        if (y->dtype == ST_F32) launch_plane<float>(stream, p, planes);
        else if (y->dtype == ST_F16) launch_plane<__half>(stream, p, planes);
        else launch_plane<__nv_bfloat16>(stream, p, planes);
        return ST_OK;
    }
    int64_t psy = cl_pixel_stride(y), pss = cl_pixel_stride(src);
    if (psy && pss && (y->dtype == ST_F32 || y->dtype == ST_F16 || y->dtype == ST_BF16)) {
        cl_epi_args c;
        c.src = src->data;
        c.y = y->data;
        c.b = b ? b->data : NULL;
        c.bt = b ? b->dtype : ST_F32;
        c.bs = b ? b->strides[0] : 0;
        c.pixels = y->sizes[0] * y->sizes[2] * y->sizes[3];
        c.ps_src = pss;
        c.ps_y = psy;
        c.epi = epi;
        if (y->dtype == ST_F32) launch_cl<float>(stream, c, y->sizes[1]);
        else if (y->dtype == ST_F16) launch_cl<__half>(stream, c, y->sizes[1]);
        else launch_cl<__nv_bfloat16>(stream, c, y->sizes[1]);
        return ST_OK;
    }
    epi_args a;
    memset(&a, 0, sizeof a);
    a.src = src->data;
    a.y = y->data;
    a.b = b ? b->data : NULL;
    a.yt = y->dtype;
    a.bt = b ? b->dtype : ST_F32;
    a.bs = b ? b->strides[0] : 0;
    a.rank = y->rank;
    for (int d = 0; d < y->rank; d++) {
        a.size[d] = y->sizes[d];
        a.ss[d] = src->strides[d];
        a.ys[d] = y->strides[d];
    }
    a.n = st_operand_numel(y);
    a.epi = epi;
    if (a.n) epilogue_kernel<<<st_blocks(a.n, THREADS), THREADS, 0, stream>>>(a);
    return ST_OK;
}

/* ---- depthwise 2-D convolution ----
 *
 * One input channel per group and one output channel per group (the 7x7
 * convs of ConvNeXt, the 3x3 and 5x5 of MobileNets): cuDNN's grouped
 * direct kernel took 183 us for ConvNeXt-T's first 7x7 stage at batch 32,
 * f16, on an H200 (29% of the model).  Here a block computes a 16 x 32
 * tile of one output plane from the input tile it covers, staged once in
 * shared memory with the zero padding, and applies bias and activation
 * before the one store.  f32 accumulation in row-major tap order. */
#define DW_TH 16
#define DW_TW 32

struct dw_args {
    const void *x, *w, *b;
    void *y;
    st_dtype bt;
    int ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, tih, tiw;
    int64_t xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w, ws_c, ws_h, ws_w, bs, planes, channels;
    st_epilogue epi;
};

template <typename T>
__global__ void dw_kernel(dw_args a)
{
    extern __shared__ float dw_sm[];
    float *tile = dw_sm, *wt = dw_sm + a.tih * a.tiw;
    const int tiles_x = (a.ow + DW_TW - 1) / DW_TW, tiles = tiles_x * ((a.oh + DW_TH - 1) / DW_TH);
    for (int64_t pc = blockIdx.y; pc < a.planes; pc += gridDim.y) {
        int64_t n = pc / a.channels, c = pc - n * a.channels;
        const T *x = (const T *)a.x + n * a.xs_n + c * a.xs_c;
        T *y = (T *)a.y + n * a.ys_n + c * a.ys_c;
        float bias = a.b ? st_ldf(a.bt, a.b, c * a.bs) : 0.0f;
        __syncthreads();
        for (int i = threadIdx.x; i < a.kh * a.kw; i += blockDim.x)
            wt[i] = st_to_f<T>(((const T *)a.w)[c * a.ws_c + (i / a.kw) * a.ws_h + (i % a.kw) * a.ws_w]);
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            int oy0 = (t / tiles_x) * DW_TH, ox0 = (t % tiles_x) * DW_TW;
            int iy0 = oy0 * a.sh - a.ph, ix0 = ox0 * a.sw - a.pw;
            __syncthreads();
            for (int i = threadIdx.x; i < a.tih * a.tiw; i += blockDim.x) {
                int r = i / a.tiw, q = i - r * a.tiw, iy = iy0 + r, ix = ix0 + q;
                tile[i] = iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw ? st_to_f<T>(x[iy * a.xs_h + ix * a.xs_w]) : 0.0f;
            }
            __syncthreads();
            for (int i = threadIdx.x; i < DW_TH * DW_TW; i += blockDim.x) {
                int r = i / DW_TW, q = i - r * DW_TW, oy = oy0 + r, ox = ox0 + q;
                if (oy >= a.oh || ox >= a.ow) continue;
                float acc = 0.0f;
                const float *base = tile + r * a.sh * a.tiw + q * a.sw;
                for (int ky = 0; ky < a.kh; ky++)
                    for (int kx = 0; kx < a.kw; kx++) acc += base[ky * a.dh * a.tiw + kx * a.dw] * wt[ky * a.kw + kx];
                y[oy * a.ys_h + ox * a.ys_w] = st_from_f<T>(st_epilogue_f(a.epi, acc + bias));
            }
        }
    }
}

/* Stride 1, no dilation, a square K x K window (ConvNeXt's 7x7, the 3x3
 * and 5x5 of MobileNets): the same tile, but a thread computes 4
 * neighbouring outputs of a row with the weights in registers, so each
 * tile row it reads (K + 3 values) serves 4 K multiply-adds.  dw_kernel's
 * two shared loads per multiply-add held ConvNeXt-T's first 7x7 stage at
 * 192 us at batch 32 on an H200.  Same taps, same order, so the same
 * sums as dw_kernel. */
#define DW4 4
template <typename T, int K>
__global__ void dw_reg_kernel(dw_args a)
{
    extern __shared__ float dw_sm[];
    float *tile = dw_sm;
    const int tiles_x = (a.ow + DW_TW - 1) / DW_TW, tiles = tiles_x * ((a.oh + DW_TH - 1) / DW_TH);
    const int r = threadIdx.x / (DW_TW / DW4), q0 = (threadIdx.x % (DW_TW / DW4)) * DW4;
    for (int64_t pc = blockIdx.y; pc < a.planes; pc += gridDim.y) {
        int64_t n = pc / a.channels, c = pc - n * a.channels;
        const T *x = (const T *)a.x + n * a.xs_n + c * a.xs_c;
        T *y = (T *)a.y + n * a.ys_n + c * a.ys_c;
        float bias = a.b ? st_ldf(a.bt, a.b, c * a.bs) : 0.0f, wr[K * K];
#pragma unroll
        for (int i = 0; i < K * K; i++)
            wr[i] = st_to_f<T>(((const T *)a.w)[c * a.ws_c + (i / K) * a.ws_h + (i % K) * a.ws_w]);
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            int oy0 = (t / tiles_x) * DW_TH, ox0 = (t % tiles_x) * DW_TW;
            int iy0 = oy0 - a.ph, ix0 = ox0 - a.pw;
            __syncthreads();
            for (int i = threadIdx.x; i < a.tih * a.tiw; i += blockDim.x) {
                int rr = i / a.tiw, q = i - rr * a.tiw, iy = iy0 + rr, ix = ix0 + q;
                tile[i] = iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw ? st_to_f<T>(x[iy * a.xs_h + ix * a.xs_w]) : 0.0f;
            }
            __syncthreads();
            float acc[DW4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int ky = 0; ky < K; ky++) {
                const float *row = tile + (r + ky) * a.tiw + q0;
                float v[DW4 + K - 1];
#pragma unroll
                for (int i = 0; i < DW4 + K - 1; i++) v[i] = row[i];
#pragma unroll
                for (int kx = 0; kx < K; kx++)
#pragma unroll
                    for (int j = 0; j < DW4; j++) acc[j] += v[j + kx] * wr[ky * K + kx];
            }
            int oy = oy0 + r;
            if (oy < a.oh)
#pragma unroll
                for (int j = 0; j < DW4; j++)
                    if (ox0 + q0 + j < a.ow) y[oy * a.ys_h + (ox0 + q0 + j) * a.ys_w] = st_from_f<T>(st_epilogue_f(a.epi, acc[j] + bias));
        }
    }
}

/* Channels-last (a value passes/channels_last.c stored NHWC: ConvNeXt's
 * blocks), stride 1, no dilation, K x K: a thread computes a 4 x 4 patch
 * of outputs for one channel with its weights in registers, sliding down
 * the patch's input rows; the 32 threads of a warp take 32 neighbouring
 * channels, so every load and store is one run of 32 elements.  The taps
 * are summed row by row, in dw_kernel's order, so the sums are its sums.
 * The NCHW tile kernels above would read and write at a stride of C. */
#define DWC_TW 4
template <typename T, int K, int DWC_TH>
__global__ void __launch_bounds__(256) dw_nhwc_kernel(dw_args a, int64_t strips_w, int64_t strips_h, int64_t strips)
{
    int c = blockIdx.x * 32 + threadIdx.x;
    int64_t sidx = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (c >= a.channels || sidx >= strips) return;
    int64_t tx = sidx % strips_w, rest = sidx / strips_w;
    int64_t ty = rest % strips_h, n = rest / strips_h;
    int ox0 = (int)tx * DWC_TW, oy0 = (int)ty * DWC_TH;
    const T *x = (const T *)a.x + n * a.xs_n + c * a.xs_c;
    T *y = (T *)a.y + n * a.ys_n + c * a.ys_c;
    /* offsets within one image in 32 bits (the launch checks they fit):
     * 64-bit address math held 118 registers and left 2 blocks an SM */
    const int xh = (int)a.xs_h, xw = (int)a.xs_w;
    float wr[K * K], acc[DWC_TH][DWC_TW];
#pragma unroll
    for (int i = 0; i < K * K; i++) wr[i] = st_to_f<T>(((const T *)a.w)[c * a.ws_c + (i / K) * a.ws_h + (i % K) * a.ws_w]);
#pragma unroll
    for (int i = 0; i < DWC_TH; i++)
#pragma unroll
        for (int j = 0; j < DWC_TW; j++) acc[i][j] = 0.0f;
#pragma unroll
    for (int r = 0; r < DWC_TH + K - 1; r++) {
        int iy = oy0 - a.ph + r;
        bool row_in = iy >= 0 && iy < a.ih;
        float v[DWC_TW + K - 1];
#pragma unroll
        for (int i = 0; i < DWC_TW + K - 1; i++) {
            int ix = ox0 - a.pw + i;
            v[i] = row_in && ix >= 0 && ix < a.iw ? st_to_f<T>(x[iy * xh + ix * xw]) : 0.0f;
        }
#pragma unroll
        for (int oi = 0; oi < DWC_TH; oi++) {
            const int ky = r - oi;
            if (ky < 0 || ky >= K) continue;
#pragma unroll
            for (int kx = 0; kx < K; kx++)
#pragma unroll
                for (int j = 0; j < DWC_TW; j++) acc[oi][j] += v[j + kx] * wr[ky * K + kx];
        }
    }
    float bias = a.b ? st_ldf(a.bt, a.b, c * a.bs) : 0.0f;
#pragma unroll
    for (int oi = 0; oi < DWC_TH; oi++) {
        int oy = oy0 + oi;
        if (oy >= a.oh) break;
#pragma unroll
        for (int j = 0; j < DWC_TW; j++)
            if (ox0 + j < a.ow) y[oy * (int)a.ys_h + (ox0 + j) * (int)a.ys_w] = st_from_f<T>(st_epilogue_f(a.epi, acc[oi][j] + bias));
    }
}

/* Rows of outputs a thread: 4, or STRATA_CUDA_DW_ROWS=8 (for measuring). */
static int dw_rows(void)
{
    const char *e = getenv("STRATA_CUDA_DW_ROWS");
    return e && strcmp(e, "8") == 0 ? 8 : 4;
}

static int64_t dw_strips(const dw_args &a, int64_t images, int rows)
{
    return images * ((a.ow + DWC_TW - 1) / DWC_TW) * ((a.oh + rows - 1) / rows);
}

static void dw_nhwc(const dw_args &a, int64_t images, cudaStream_t st, st_dtype t, int rows)
{
    int64_t sw = (a.ow + DWC_TW - 1) / DWC_TW, sh = (a.oh + rows - 1) / rows, strips = images * sw * sh;
    dim3 threads(32, 8);
    dim3 grid((unsigned)((a.channels + 31) / 32), (unsigned)((strips + 7) / 8));
#define DWC_GO(T, K)                                                                                                   \
    (rows == 8 ? dw_nhwc_kernel<T, K, 8><<<grid, threads, 0, st>>>(a, sw, sh, strips)                                    \
               : dw_nhwc_kernel<T, K, 4><<<grid, threads, 0, st>>>(a, sw, sh, strips))
#define DWC_K(T) (a.kh == 3 ? DWC_GO(T, 3) : a.kh == 5 ? DWC_GO(T, 5) : DWC_GO(T, 7))
    if (t == ST_F32) DWC_K(float);
    else if (t == ST_F16) DWC_K(__half);
    else DWC_K(__nv_bfloat16);
#undef DWC_K
#undef DWC_GO
}

/* ---- a network's first conv: 3 input channels, 3x3 ----
 *
 * cuDNN has no tensor-core kernel for C = 3: it ran YOLOv8n's stem (3 ->
 * 16 channels, 3x3, stride 2) as implicit_convolve_sgemm, 0.41 ms at
 * batch 32 in f16 on an H200, plus the bias-and-SiLU pass.  The whole
 * product is 27 MACs per output channel, so one thread takes two
 * horizontally neighbouring output pixels: their 27 inputs each in
 * registers, every output channel's weights and bias from shared memory,
 * the activation applied before the one store.  The weights are read as
 * float4 (27 padded to 28) and each serves both pixels: with one pixel a
 * thread and scalar reads, 432 shared-memory loads a pixel held the kernel
 * at 0.24 ms for YOLOv8n's stem at batch 32 in f16 on an H200, 4x its
 * bytes' time at HBM bandwidth. */
#define SC_C 3
#define SC_K 3
#define SC_MAXM 64
#define SC_J (SC_C * SC_K * SC_K) /* 27 taps */
#define SC_J4 7                   /* float4s per output channel */

struct sc_args {
    const void *x, *b;
    void *y;
    st_dtype bt;
    int ih, iw, oh, ow, sh, sw, dh, dw, ph, pw, m, pairs_x;
    int64_t xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w, bs, pairs;
    const void *w;
    int64_t ws_m, ws_c, ws_h, ws_w;
    st_epilogue epi;
};

/* The 27 taps of output pixel (oy, ox), zero outside X. */
template <typename T>
__device__ __forceinline__ void sc_taps(const sc_args &a, const T *x, int oy, int ox, float *in)
{
#pragma unroll
    for (int ky = 0; ky < SC_K; ky++) {
        int iy = oy * a.sh - a.ph + ky * a.dh;
#pragma unroll
        for (int kx = 0; kx < SC_K; kx++) {
            int ix = ox * a.sw - a.pw + kx * a.dw;
            bool in_ = iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw;
#pragma unroll
            for (int c = 0; c < SC_C; c++)
                in[c * SC_K * SC_K + ky * SC_K + kx] = in_ ? st_to_f<T>(x[c * a.xs_c + iy * a.xs_h + ix * a.xs_w]) : 0.0f;
        }
    }
    in[SC_J] = 0.0f;
}

template <int CODE>
__device__ __forceinline__ float sc_act(const sc_args &a, float v)
{
    return CODE < 0 ? st_epilogue_f(a.epi, v) : st_unary_f(CODE, v, a.epi.alpha, a.epi.beta, 0.0f, a.epi.alpha, a.epi.beta);
}

template <typename T, int CODE, int VEC>
__global__ void __launch_bounds__(128) small_c_kernel(sc_args a)
{
    __shared__ float4 wsh[SC_MAXM * SC_J4];
    __shared__ float bsh[SC_MAXM];
    float *wf = (float *)wsh;
    for (int i = threadIdx.x; i < a.m * SC_J4 * 4; i += blockDim.x) {
        int m = i / (SC_J4 * 4), j = i % (SC_J4 * 4), c = j / (SC_K * SC_K), t = j % (SC_K * SC_K);
        wf[i] = j < SC_J ? st_to_f<T>(((const T *)a.w)[m * a.ws_m + c * a.ws_c + (t / SC_K) * a.ws_h + (t % SC_K) * a.ws_w]) : 0.0f;
    }
    for (int i = threadIdx.x; i < a.m; i += blockDim.x) bsh[i] = a.b ? st_ldf(a.bt, a.b, i * a.bs) : 0.0f;
    __syncthreads();
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < a.pairs; p += (int64_t)gridDim.x * blockDim.x) {
        int ox = (int)(p % a.pairs_x) * 2;
        int64_t t = p / a.pairs_x;
        int oy = (int)(t % a.oh);
        int64_t n = t / a.oh;
        bool two = ox + 1 < a.ow;
        const T *x = (const T *)a.x + n * a.xs_n;
        float in0[SC_J4 * 4], in1[SC_J4 * 4];
        sc_taps<T>(a, x, oy, ox, in0);
        sc_taps<T>(a, x, oy, two ? ox + 1 : ox, in1);
        T *y = (T *)a.y + n * a.ys_n + oy * a.ys_h + ox * a.ys_w;
        /* VEC output channels per store: on a channels-last Y one 16-byte
         * store instead of VEC scattered 2-byte ones (the scattered
         * stores left this kernel at 0.49 ms for YOLOv8n's stem at batch
         * 32, slower than cuDNN) */
        for (int m0 = 0; m0 < a.m; m0 += VEC) {
            st_vec<T, VEC> v0, v1;
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                int m = m0 + e;
                float acc0 = bsh[m], acc1 = acc0;
#pragma unroll
                for (int j = 0; j < SC_J4; j++) {
                    float4 w = wsh[m * SC_J4 + j];
                    acc0 = fmaf(w.x, in0[4 * j], acc0), acc1 = fmaf(w.x, in1[4 * j], acc1);
                    acc0 = fmaf(w.y, in0[4 * j + 1], acc0), acc1 = fmaf(w.y, in1[4 * j + 1], acc1);
                    acc0 = fmaf(w.z, in0[4 * j + 2], acc0), acc1 = fmaf(w.z, in1[4 * j + 2], acc1);
                    acc0 = fmaf(w.w, in0[4 * j + 3], acc0), acc1 = fmaf(w.w, in1[4 * j + 3], acc1);
                }
                v0.v[e] = st_from_f<T>(sc_act<CODE>(a, acc0));
                v1.v[e] = st_from_f<T>(sc_act<CODE>(a, acc1));
            }
            if (VEC > 1) {
                *(st_vec<T, VEC> *)(y + m0) = v0;
                if (two) *(st_vec<T, VEC> *)(y + a.ys_w + m0) = v1;
            } else {
                y[m0 * a.ys_c] = v0.v[0];
                if (two) y[a.ys_w + m0 * a.ys_c] = v1.v[0];
            }
        }
    }
}

/* Runs the first-conv kernel when the conv is one: C = 3, 3x3, one group,
 * at most SC_MAXM outputs, one float dtype.  STRATA_CUDA_CONV (any value)
 * or STRATA_CUDA_SMALL_C=0 leaves it to cuDNN. */
static bool small_c_conv(const st_kctx *k, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    if (s->nsp != 2 || s->group != 1 || x->sizes[1] != SC_C || w->sizes[2] != SC_K || w->sizes[3] != SC_K ||
        y->sizes[1] > SC_MAXM)
        return false;
    if (x->dtype != y->dtype || w->dtype != x->dtype || (x->dtype != ST_F32 && x->dtype != ST_F16 && x->dtype != ST_BF16))
        return false;
    const char *e = getenv("STRATA_CUDA_SMALL_C");
    if (getenv("STRATA_CUDA_CONV") || (e && strcmp(e, "0") == 0)) return false;
    geo g = geo_make(s, x, y, w);
    if (g.isz[1] > INT32_MAX / 2 || g.isz[2] > INT32_MAX / 2 || g.osz[1] > INT32_MAX / 2 || g.osz[2] > INT32_MAX / 2) return false;
    sc_args a;
    a.x = x->data;
    a.w = w->data;
    a.b = b ? b->data : NULL;
    a.bt = b ? b->dtype : ST_F32;
    a.bs = b ? b->strides[0] : 0;
    a.y = y->data;
    a.ih = (int)g.isz[1], a.iw = (int)g.isz[2], a.oh = (int)g.osz[1], a.ow = (int)g.osz[2];
    a.sh = (int)g.st[1], a.sw = (int)g.st[2], a.dh = (int)g.dl[1], a.dw = (int)g.dl[2], a.ph = (int)g.pb[1], a.pw = (int)g.pb[2];
    a.m = (int)y->sizes[1];
    a.xs_n = g.xs[0], a.xs_c = g.xs[1], a.xs_h = g.xs[3], a.xs_w = g.xs[4];
    a.ys_n = g.ys[0], a.ys_c = g.ys[1], a.ys_h = g.ys[3], a.ys_w = g.ys[4];
    a.ws_m = g.ws[0], a.ws_c = g.ws[1], a.ws_h = g.ws[3], a.ws_w = g.ws[4];
    a.pairs_x = (a.ow + 1) / 2;
    a.pairs = y->sizes[0] * (int64_t)a.oh * a.pairs_x;
    a.epi = s->epi;
    unsigned blocks = st_blocks(a.pairs, 128);
    cudaStream_t st = st_stream(k);
    int code = a.epi.act ? a.epi.act - 1 : -2;
    /* 16-byte stores where Y is channels-last and every pixel's run aligned */
    int full = (int)(16 / st_dtype_size(x->dtype));
    bool vec = a.ys_c == 1 && a.m % full == 0 && (uintptr_t)a.y % 16 == 0 && (a.ys_n | a.ys_h | a.ys_w) % full == 0;
#define SC_GO(T, C) (vec ? small_c_kernel<T, C, 16 / sizeof(T)><<<blocks, 128, 0, st>>>(a) : small_c_kernel<T, C, 1><<<blocks, 128, 0, st>>>(a))
#define SC_T(T) (code == ST_U_SILU ? SC_GO(T, ST_U_SILU) : code == ST_U_RELU ? SC_GO(T, ST_U_RELU) : SC_GO(T, -1))
    if (x->dtype == ST_F32) SC_T(float);
    else if (x->dtype == ST_F16) SC_T(__half);
    else SC_T(__nv_bfloat16);
#undef SC_T
#undef SC_GO
    return true;
}

/* Work item i of a channels-last kernel that gives each thread V
 * neighbouring channels of one output pixel (cv groups of V channels a
 * pixel): its first channel c, its pixel (ox, oy) and image n. */
__device__ __forceinline__ void cl_item(int64_t i, int cv, int V, int ow, int oh, int *c, int *ox, int *oy, int64_t *n)
{
    *c = (int)(i % cv) * V;
    int64_t t = i / cv;
    *ox = (int)(t % ow);
    t /= ow;
    *oy = (int)(t % oh);
    *n = t / oh;
}

/* A depthwise conv over channels-last X and Y with any window (MobileNet's
 * and EfficientNet's stride-2 depthwise convs; dw_nhwc_kernel takes only
 * stride 1 and square 3/5/7 windows): a thread takes V neighbouring
 * channels of one output pixel, so a warp reads whole 16-byte runs where
 * the plane kernels would step C elements apart (cl_dw_pool). */
template <typename T, int V>
__global__ void dw_cl_kernel(dw_args a, int64_t total)
{
    typedef st_vec<T, V> vec;
    const int cv = (int)(a.channels / V);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int c, ox, oy;
        int64_t n;
        cl_item(i, cv, V, a.ow, a.oh, &c, &ox, &oy, &n);
        float acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = a.b ? st_ldf(a.bt, a.b, (c + j) * a.bs) : 0.0f;
        const T *x = (const T *)a.x + n * a.xs_n + c;
        const T *w = (const T *)a.w + c * a.ws_c;
        for (int ky = 0; ky < a.kh; ky++) {
            int iy = oy * a.sh - a.ph + ky * a.dh;
            if (iy < 0 || iy >= a.ih) continue;
            for (int kx = 0; kx < a.kw; kx++) {
                int ix = ox * a.sw - a.pw + kx * a.dw;
                if (ix < 0 || ix >= a.iw) continue;
                vec u = *(const vec *)(x + iy * a.xs_h + ix * a.xs_w);
#pragma unroll
                for (int j = 0; j < V; j++) acc[j] = fmaf(st_to_f<T>(u.v[j]), st_to_f<T>(w[j * a.ws_c + ky * a.ws_h + kx * a.ws_w]), acc[j]);
            }
        }
        vec o;
#pragma unroll
        for (int j = 0; j < V; j++) o.v[j] = st_from_f<T>(st_epilogue_f(a.epi, acc[j]));
        *(vec *)((T *)a.y + n * a.ys_n + oy * a.ys_h + ox * a.ys_w + c) = o;
    }
}

/* The channels-last depthwise and global-pool kernels, on unless
 * STRATA_CUDA_CL_DW_POOL=0: on an H200 in f16 at batch 32 they took
 * MobileNetV3-L from 2.18 to 1.69 ms and EfficientNet-B0 from 3.73 to
 * 3.11 (bench/RESULTS.md, 2026-12-04, fourth session). */
static bool cl_dw_pool(const char *which)
{
    /* =dw or =pool keeps one of the two (to tell them apart on a GPU) */
    const char *e = getenv("STRATA_CUDA_CL_DW_POOL");
    if (!e) return true;
    if (strcmp(e, "0") == 0) return false;
    if (strcmp(e, "dw") == 0 || strcmp(e, "pool") == 0) return strcmp(e, which) == 0;
    return true;
}

template <typename T>
static void dw_cl(const dw_args &a, int64_t images, cudaStream_t st)
{
    const int full = 16 / (int)sizeof(T);
    uint64_t m = (uint64_t)a.channels | (uint64_t)a.xs_n | (uint64_t)a.xs_h | (uint64_t)a.xs_w | (uint64_t)a.ys_n |
                 (uint64_t)a.ys_h | (uint64_t)a.ys_w;
    bool vec = m % full == 0 && (uintptr_t)a.x % 16 == 0 && (uintptr_t)a.y % 16 == 0;
    int64_t total = images * a.oh * a.ow * (vec ? a.channels / full : a.channels);
    unsigned blocks = st_blocks(total, THREADS);
    if (vec) dw_cl_kernel<T, 16 / sizeof(T)><<<blocks, THREADS, 0, st>>>(a, total);
    else dw_cl_kernel<T, 1><<<blocks, THREADS, 0, st>>>(a, total);
}

static bool dw_conv(const st_kctx *k, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    if (s->nsp != 2 || s->group < 2 || s->group != x->sizes[1] || s->group != y->sizes[1] || w->sizes[1] != 1) return false;
    if (x->dtype != y->dtype || w->dtype != x->dtype || (x->dtype != ST_F32 && x->dtype != ST_F16 && x->dtype != ST_BF16))
        return false;
    if (getenv("STRATA_CUDA_CONV")) return false;
    /* STRATA_CUDA_DW=cudnn: cuDNN's grouped convolution instead (for measuring) */
    const char *dwe = getenv("STRATA_CUDA_DW");
    if (dwe && strcmp(dwe, "cudnn") == 0) return false;
    geo g = geo_make(s, x, y, w);
    if (g.isz[1] * g.isz[2] > INT32_MAX / 4 || g.osz[1] * g.osz[2] > INT32_MAX / 4) return false;
    dw_args a;
    a.x = x->data;
    a.w = w->data;
    a.b = b ? b->data : NULL;
    a.bt = b ? b->dtype : ST_F32;
    a.bs = b ? b->strides[0] : 0;
    a.y = y->data;
    a.ih = (int)g.isz[1], a.iw = (int)g.isz[2], a.oh = (int)g.osz[1], a.ow = (int)g.osz[2];
    a.kh = (int)g.k[1], a.kw = (int)g.k[2], a.sh = (int)g.st[1], a.sw = (int)g.st[2];
    a.dh = (int)g.dl[1], a.dw = (int)g.dl[2], a.ph = (int)g.pb[1], a.pw = (int)g.pb[2];
    a.tih = (DW_TH - 1) * a.sh + (a.kh - 1) * a.dh + 1;
    a.tiw = (DW_TW - 1) * a.sw + (a.kw - 1) * a.dw + 1;
    size_t smem = (size_t)(a.tih * a.tiw + a.kh * a.kw) * sizeof(float);
    if (smem > 48 * 1024) return false;
    a.xs_n = g.xs[0], a.xs_c = g.xs[1], a.xs_h = g.xs[3], a.xs_w = g.xs[4];
    a.ys_n = g.ys[0], a.ys_c = g.ys[1], a.ys_h = g.ys[3], a.ys_w = g.ys[4];
    a.ws_c = g.ws[0], a.ws_h = g.ws[3], a.ws_w = g.ws[4];
    a.channels = y->sizes[1];
    a.planes = y->sizes[0] * y->sizes[1];
    a.epi = s->epi;
    int tiles = ((a.ow + DW_TW - 1) / DW_TW) * ((a.oh + DW_TH - 1) / DW_TH);
    dim3 grid((unsigned)(tiles > 64 ? 64 : tiles), (unsigned)(a.planes > 65535 ? 65535 : a.planes));
    cudaStream_t st = st_stream(k);
    bool square = a.sh == 1 && a.sw == 1 && a.dh == 1 && a.dw == 1 && a.kh == a.kw && (a.kh == 3 || a.kh == 5 || a.kh == 7);
    int rows = dw_rows();
    int64_t strips = dw_strips(a, y->sizes[0], rows);
    bool fits32 = (int64_t)a.ih * a.xs_h + (int64_t)a.iw * a.xs_w < INT32_MAX && (int64_t)a.oh * a.ys_h + (int64_t)a.ow * a.ys_w < INT32_MAX;
    if (square && a.xs_c == 1 && a.ys_c == 1 && a.channels >= 16 && (strips + 7) / 8 <= 65535 && fits32) {
        dw_nhwc(a, y->sizes[0], st, x->dtype, rows);
        return true;
    }
    if (a.xs_c == 1 && a.ys_c == 1 && cl_dw_pool("dw")) {
        if (x->dtype == ST_F32) dw_cl<float>(a, y->sizes[0], st);
        else if (x->dtype == ST_F16) dw_cl<__half>(a, y->sizes[0], st);
        else dw_cl<__nv_bfloat16>(a, y->sizes[0], st);
        return true;
    }
    if (square) {
        const int threads = DW_TH * DW_TW / DW4;
#define DW_GO(T, K) dw_reg_kernel<T, K><<<grid, threads, smem, st>>>(a)
#define DW_K(T) (a.kh == 3 ? DW_GO(T, 3) : a.kh == 5 ? DW_GO(T, 5) : DW_GO(T, 7))
        if (x->dtype == ST_F32) DW_K(float);
        else if (x->dtype == ST_F16) DW_K(__half);
        else DW_K(__nv_bfloat16);
#undef DW_K
#undef DW_GO
        return true;
    }
    if (x->dtype == ST_F32) dw_kernel<float><<<grid, 256, smem, st>>>(a);
    else if (x->dtype == ST_F16) dw_kernel<__half><<<grid, 256, smem, st>>>(a);
    else dw_kernel<__nv_bfloat16><<<grid, 256, smem, st>>>(a);
    return true;
}

/* ---- patchify: stride equal to the kernel, no padding ----
 *
 * ViT's patch embedding (16x16, stride 16) and ConvNeXt's stem (4x4, 4)
 * and downsampling convs (2x2, 2) cut the image into disjoint patches: the
 * conv is one GEMM over the patches, [N * patches, C * kh * kw] x [C * kh *
 * kw, O].  cuDNN's heuristic picked a CUDA-core implicit GEMM for ViT-S's
 * (299 us of 3.3 ms at batch 32 on an H200).  The patches are packed into
 * the workspace (the columns in the input's fastest order: (c, kh, kw) for
 * NCHW, (kh, kw, c) for channels-last, with the weights packed to match),
 * then cuBLASLt writes Y through its strides, and bias and activation run
 * as the conv epilogue does. */
static bool patchify_fits(const st_conv_state *s, const st_operand *x, const st_operand *w, const st_operand *y,
                          const st_cuda_ctx *ctx, size_t *xbytes, size_t *wbytes)
{
    if (s->nsp != 2 || s->group != 1 || getenv("STRATA_CUDA_CONV")) return false;
    if (x->dtype != y->dtype || w->dtype != x->dtype || (x->dtype != ST_F32 && x->dtype != ST_F16 && x->dtype != ST_BF16))
        return false;
    for (int i = 0; i < 2; i++)
        if (s->s[i] != s->k[i] || s->d[i] != 1 || s->pb[i] != 0 || s->pe[i] != 0 || s->k[i] < 2) return false;
    /* Y's pixels as one run of rows */
    if (y->sizes[2] > 1 && y->strides[2] != y->sizes[3] * y->strides[3]) return false;
    size_t es = st_dtype_size(x->dtype);
    int64_t kk = x->sizes[1] * s->k[0] * s->k[1], rows = y->sizes[0] * y->sizes[2] * y->sizes[3];
    if (kk > INT32_MAX || rows > INT32_MAX) return false;
    *xbytes = st_align256((size_t)(rows * kk) * es);
    *wbytes = st_align256((size_t)(kk * y->sizes[1]) * es);
    return *xbytes + *wbytes <= ctx->workspace_bytes / 2;
}

/* The patches of src (6 dims, the last the row: kw, or c channels-last)
 * packed row-major at dst: a thread per element, the element's dims found
 * with 32-bit divisions (st_pack's general walk divides in 64 bits over six
 * dims: 129 us for ConvNeXt-T's 9.6 MB stem input at batch 32). */
struct patch_args {
    const void *src;
    void *dst;
    uint32_t size[6];
    int64_t stride[6];
    uint32_t n;
};

template <typename T>
__global__ void patch_pack_kernel(patch_args a)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        uint32_t r = i;
        int64_t off = 0;
#pragma unroll
        for (int d = 5; d >= 0; d--) {
            uint32_t q = r / a.size[d];
            off += (int64_t)(r - q * a.size[d]) * a.stride[d];
            r = q;
        }
        ((T *)a.dst)[i] = ((const T *)a.src)[off];
    }
}

static st_status patch_pack(cudaStream_t stream, const st_operand *src, void *dst)
{
    int64_t n = st_operand_numel(src);
    if (n >= (int64_t)UINT32_MAX) {
        st_operand d = st_packed_like(src, dst);
        return st_pack(stream, &d, src);
    }
    patch_args a;
    a.src = src->data;
    a.dst = dst;
    a.n = (uint32_t)n;
    for (int d = 0; d < 6; d++) {
        a.size[d] = (uint32_t)src->sizes[d];
        a.stride[d] = src->strides[d];
    }
    unsigned blocks = st_blocks(n, THREADS);
    if (st_dtype_size(src->dtype) == 4) patch_pack_kernel<uint32_t><<<blocks, THREADS, 0, stream>>>(a);
    else patch_pack_kernel<uint16_t><<<blocks, THREADS, 0, stream>>>(a);
    return ST_OK;
}

static st_status patchify_conv(const st_kctx *k, const st_conv_state *s, size_t xbytes)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    cudaStream_t stream = st_stream(k);
    int64_t n = y->sizes[0], o = y->sizes[1], hb = y->sizes[2], wb = y->sizes[3], c = x->sizes[1];
    int64_t kh = s->k[0], kw = s->k[1], kk = c * kh * kw;
    bool cl = x->strides[1] == 1; /* channels-last input: (kh, kw, c) columns */
    /* patches: [n, hb, wb] rows by the columns, packed */
    st_operand src, xp, ws_, wp;
    memset(&src, 0, sizeof src);
    src.dtype = x->dtype;
    src.data = x->data;
    src.rank = 6;
    int64_t sz[6] = {n, hb, wb, 0, 0, 0}, st[6] = {x->strides[0], x->strides[2] * kh, x->strides[3] * kw, 0, 0, 0};
    if (cl) {
        sz[3] = kh, sz[4] = kw, sz[5] = c;
        st[3] = x->strides[2], st[4] = x->strides[3], st[5] = x->strides[1];
    } else {
        sz[3] = c, sz[4] = kh, sz[5] = kw;
        st[3] = x->strides[1], st[4] = x->strides[2], st[5] = x->strides[3];
    }
    for (int d = 0; d < 6; d++) {
        src.sizes[d] = sz[d];
        src.strides[d] = st[d];
    }
    xp = st_packed_like(&src, ctx->workspace);
    ST_TRY(patch_pack(stream, &src, xp.data));
    /* B[q, o] (q a column of the patches): the weights in the same order */
    const void *bmat = w->data;
    int64_t b_rs = w->strides[3], b_cs = w->strides[0];
    bool w_packed = w->strides[3] == 1 && w->strides[2] == kw && w->strides[1] == kh * kw;
    if (cl || !w_packed) {
        memset(&ws_, 0, sizeof ws_);
        ws_.dtype = w->dtype;
        ws_.data = w->data;
        ws_.rank = 4;
        int64_t wsz[4] = {o, cl ? kh : c, cl ? kw : kh, cl ? c : kw};
        int64_t wst[4] = {w->strides[0], cl ? w->strides[2] : w->strides[1], cl ? w->strides[3] : w->strides[2],
                          cl ? w->strides[1] : w->strides[3]};
        for (int d = 0; d < 4; d++) {
            ws_.sizes[d] = wsz[d];
            ws_.strides[d] = wst[d];
        }
        wp = st_packed_like(&ws_, (char *)ctx->workspace + xbytes);
        ST_TRY(st_pack(stream, &wp, &ws_));
        bmat = wp.data;
        b_rs = 1;
        b_cs = kk;
    }
    st_cuda_gemm_args g;
    memset(&g, 0, sizeof g);
    g.t = x->dtype;
    g.batch = n;
    g.m = hb * wb;
    g.n = o;
    g.k = kk;
    g.a = xp.data;
    g.a_rs = kk;
    g.a_cs = 1;
    g.a_bs = hb * wb * kk;
    g.b = bmat;
    g.b_rs = b_rs;
    g.b_cs = b_cs;
    g.y = y->data;
    g.y_rs = y->strides[3];
    g.y_cs = y->strides[1];
    g.y_bs = y->strides[0];
    g.ws_skip = (cl || !w_packed) ? xbytes + st_align256((size_t)(kk * o) * st_dtype_size(w->dtype)) : xbytes;
    ST_TRY(st_cuda_gemm_strided(k, &g));
    return bias_epilogue(stream, y, y, b, s->epi);
}

/* ---- cuDNN ---- */

/* How a command's Conv runs, chosen on its first run. */
enum { MODE_STRIDED, MODE_PACKED, MODE_DIRECT, MODE_FUSED };

struct conv_cache {
    int mode;                        /* MODE_STRIDED: cuDNN on the operands; MODE_PACKED: cuDNN on
                                        packed copies of X and Y in the workspace; MODE_DIRECT */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws;
    void *wk;                        /* W as [K, kh, kw, C] (KRSC) for channels-last X, or NULL */
    bool cl_pack;                    /* MODE_PACKED: X's copy is packed channels-last (cl_slice) */
    st_cf_plan *cf;                  /* MODE_FUSED: conv, bias and activation as one cuDNN graph */
    char key[640];                   /* the problem, for conv_tune.c (describe) */
    bool set_up;                     /* the first run's path choice was made (setup_conv) */
    float *aff;                      /* the affine epilogue's S, T, PS, PT on the device (conv_affine) */
};

static void conv_cache_free(void *p)
{
    conv_cache *c = (conv_cache *)p;
    if (!c) return;
    if (c->xd) cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd) cudnnDestroyTensorDescriptor(c->yd);
    if (c->wd) cudnnDestroyFilterDescriptor(c->wd);
    if (c->cd) cudnnDestroyConvolutionDescriptor(c->cd);
    if (c->wk) cudaFree(c->wk);
    if (c->aff) cudaFree(c->aff);
    st_cf_free(c->cf);
    free(c);
}

/* A tensor's dims and strides as cuDNN takes them: 1-D convolutions get a
 * unit H dim, unit dims get the stride a packed tensor would have there
 * (their stride is never used, and cuDNN checks strides for consistency),
 * everything must fit an int and step forward.  False if it cannot. */
static bool dnn_dims(const st_operand *o, int nsp, int *dims, int *strides, int *nd)
{
    int64_t sz[5], st[5];
    int n = 0;
    sz[n] = o->sizes[0], st[n++] = o->strides[0];
    sz[n] = o->sizes[1], st[n++] = o->strides[1];
    if (nsp == 1) sz[n] = 1, st[n++] = 0;
    for (int i = 0; i < nsp; i++) sz[n] = o->sizes[2 + i], st[n++] = o->strides[2 + i];
    for (int d = n - 1; d >= 0; d--) {
        if (sz[d] == 1) st[d] = d == n - 1 ? 1 : st[d + 1] * sz[d + 1];
        if (st[d] <= 0 || st[d] > INT32_MAX || sz[d] > INT32_MAX || sz[d] < 1) return false;
        dims[d] = (int)sz[d];
        strides[d] = (int)st[d];
    }
    *nd = n;
    return true;
}

/* Math mode per dtype: f16/bf16 on tensor cores; f32 FMA only, unless TF32
 * is allowed (cuDNN's default math lets TF32 in on Ampere and later). */
static cudnnMathType_t base_math(st_dtype t, bool tf32)
{
    if (t != ST_F32) return CUDNN_TENSOR_OP_MATH;
    return tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

/* Device `dev`'s name with spaces as '_', looked up once per process. */
static const char *device_name(int dev)
{
    static char names[16][260];
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    if (dev < 0 || dev >= 16) return "device";
    pthread_mutex_lock(&mu);
    if (!names[dev][0]) {
        cudaDeviceProp pr;
        snprintf(names[dev], sizeof names[dev], "%s", cudaGetDeviceProperties(&pr, dev) == cudaSuccess ? pr.name : "device");
        for (char *q = names[dev]; *q; q++)
            if (*q == ' ') *q = '_';
    }
    pthread_mutex_unlock(&mu);
    return names[dev];
}

/* Builds the descriptors of a Conv (or of ConvTranspose's backward-data
 * problem, where `fx` is the forward convolution's input: Y of the
 * ConvTranspose, and `fy` its output: X).  Returns a message-setting error
 * when cuDNN cannot describe the problem. */
static st_status describe(conv_cache *c, const st_conv_state *s, const st_operand *fx, const st_operand *w,
                          const st_operand *fy, bool tf32, bool krsc)
{
    int nsp = s->nsp, xdims[5], xstr[5], ydims[5], ystr[5], nd, ndy;
    if (!dnn_dims(fx, nsp, xdims, xstr, &nd) || !dnn_dims(fy, nsp, ydims, ystr, &ndy))
        return st_error(ST_ERR_BACKEND, "strides cuDNN cannot describe");
    if (!st_operand_is_contiguous(w)) return st_error(ST_ERR_BACKEND, "a strided W");
    int wdims[5], n = 0, pads[3], strd[3], dil[3], ns = 0;
    wdims[n++] = (int)w->sizes[0];
    wdims[n++] = (int)w->sizes[1];
    if (nsp == 1) {
        wdims[n++] = 1;
        pads[ns] = 0, strd[ns] = 1, dil[ns++] = 1;
    }
    for (int i = 0; i < nsp; i++) {
        /* cuDNN pads both ends alike: begin pads, checked below to give Y's size */
        if (s->pb[i] > INT32_MAX || s->s[i] > INT32_MAX || s->d[i] > INT32_MAX || w->sizes[2 + i] > INT32_MAX)
            return st_error(ST_ERR_BACKEND, "window parameters over int range");
        wdims[n++] = (int)w->sizes[2 + i];
        pads[ns] = (int)s->pb[i], strd[ns] = (int)s->s[i], dil[ns++] = (int)s->d[i];
    }
    cudnnDataType_t dt = dnn_type(fx->dtype);
    ST_TRY(dnn(cudnnCreateTensorDescriptor(&c->xd), "cudnnCreateTensorDescriptor"));
    ST_TRY(dnn(cudnnCreateTensorDescriptor(&c->yd), "cudnnCreateTensorDescriptor"));
    ST_TRY(dnn(cudnnCreateFilterDescriptor(&c->wd), "cudnnCreateFilterDescriptor"));
    ST_TRY(dnn(cudnnCreateConvolutionDescriptor(&c->cd), "cudnnCreateConvolutionDescriptor"));
    ST_TRY(dnn(cudnnSetTensorNdDescriptor(c->xd, dt, nd, xdims, xstr), "cudnnSetTensorNdDescriptor (input)"));
    ST_TRY(dnn(cudnnSetTensorNdDescriptor(c->yd, dt, ndy, ydims, ystr), "cudnnSetTensorNdDescriptor (output)"));
    ST_TRY(dnn(cudnnSetFilterNdDescriptor(c->wd, dt, krsc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, n, wdims),
               "cudnnSetFilterNdDescriptor"));
    ST_TRY(dnn(cudnnSetConvolutionNdDescriptor(c->cd, ns, pads, strd, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "cudnnSetConvolutionNdDescriptor"));
    if (s->group > 1) ST_TRY(dnn(cudnnSetConvolutionGroupCount(c->cd, (int)s->group), "cudnnSetConvolutionGroupCount"));
    ST_TRY(dnn(cudnnSetConvolutionMathType(c->cd, base_math(fx->dtype, tf32)), "cudnnSetConvolutionMathType"));
    int out[5];
    ST_TRY(dnn(cudnnGetConvolutionNdForwardOutputDim(c->cd, c->xd, c->wd, nd, out), "cudnnGetConvolutionNdForwardOutputDim"));
    for (int d = 0; d < nd; d++)
        if (out[d] != ydims[d])
            return st_error(ST_ERR_BACKEND, "asymmetric pads: cuDNN's output dim %d is %d, not %d", d, out[d], ydims[d]);
    /* the whole problem, for the timed choice kept on disk (conv_tune.c) */
    int dev = 0;
    cudaGetDevice(&dev);
    size_t at = (size_t)snprintf(c->key, sizeof c->key, "%s cudnn%zu t%d g%d tf%d%s", device_name(dev), cudnnGetVersion(),
                                 (int)dt, (int)s->group, (int)tf32, krsc ? " krsc" : "");
    const int *lists[8] = {xdims, xstr, ydims, ystr, wdims, pads, strd, dil};
    const int lens[8] = {nd, nd, ndy, ndy, n, ns, ns, ns};
    for (int l = 0; l < 8 && at < sizeof c->key; l++) {
        at += (size_t)snprintf(c->key + at, sizeof c->key - at, " ");
        for (int i = 0; i < lens[l] && at < sizeof c->key; i++)
            at += (size_t)snprintf(c->key + at, sizeof c->key - at, "%s%d", i ? "," : "", lists[l][i]);
    }
    if (at >= sizeof c->key) c->key[0] = 0; /* too long to key: timed each process */
    return ST_OK;
}

/* The math mode to run a heuristic's candidate with, or false to skip it:
 * f32 without TF32 takes no tensor-core candidate. */
static bool candidate_math(st_dtype t, bool tf32, cudnnMathType_t cand, cudnnMathType_t *use)
{
    if (t == ST_F32 && !tf32) {
        if (cand == CUDNN_TENSOR_OP_MATH || cand == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
        *use = CUDNN_FMA_MATH;
        return true;
    }
    *use = cand;
    return true;
}

/* Whether a candidate keeps the dtype's accuracy, and the math type to
 * run it with: f32 without TF32 takes no tensor-core candidate and no
 * transform-domain algorithm. */
static bool allowed(st_dtype t, const st_cuda_ctx *ctx, cudnnConvolutionFwdAlgo_t al, cudnnMathType_t cand, cudnnMathType_t *use)
{
    if (!candidate_math(t, ctx->allow_tf32, cand, use)) return false;
    return !(t == ST_F32 && !ctx->allow_tf32 &&
             (al == CUDNN_CONVOLUTION_FWD_ALGO_FFT || al == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
              al == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || al == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED));
}

/* Whether the first run times cuDNN's algorithms (cudnnFind...) instead
 * of taking its heuristic's first that runs: STRATA_CUDA_CONV_TUNE=1.
 * Off by default, because on an H200 it lost: its timed winners for
 * YOLOv8n and ResNet-50 at batch 32 in f16 (FFT convolutions for 126
 * launches, CUDA-core implicit GEMMs for 19) made the models 1.07x and
 * 1.42x slower than the heuristic's picks (bench/RESULTS.md, 2026-12-04). */
static bool tune(void)
{
    const char *e = getenv("STRATA_CUDA_CONV_TUNE");
    return e && strcmp(e, "1") == 0;
}

/* First run: candidates in order (fastest measured first when tuning,
 * else the heuristic's order), the first that runs is kept (and has
 * written y).
 *
 * The heuristic picks a CUDA-core implicit GEMM for ten of YOLOv8n's f16
 * convs at batch 32 on an H200 (0.47 ms each, 4.7 of the model's 10.1
 * ms); timing did not find better ones (tune() says what it found). */
static st_status choose_forward(conv_cache *c, const st_cuda_ctx *ctx, st_dtype t, const void *x, const void *w, void *y,
                                void *ws_ptr, size_t ws_bytes)
{
    cudnnHandle_t h = (cudnnHandle_t)ctx->cudnn;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0, stored_algo, stored_math;
    bool found = false;
    const float one = 1.0f, zero = 0.0f;
    /* an earlier process's timed choice for the same problem, if it still runs */
    if (tune() && c->key[0] && st_cuda_tune_lookup(c->key, &stored_algo, &stored_math)) {
        cudnnConvolutionFwdAlgo_t al = (cudnnConvolutionFwdAlgo_t)stored_algo;
        cudnnMathType_t math;
        size_t ws = 0;
        if (allowed(t, ctx, al, (cudnnMathType_t)stored_math, &math) && cudnnSetConvolutionMathType(c->cd, math) == CUDNN_STATUS_SUCCESS &&
            cudnnGetConvolutionForwardWorkspaceSize(h, c->xd, c->wd, c->cd, c->yd, al, &ws) == CUDNN_STATUS_SUCCESS &&
            ws <= ws_bytes &&
            cudnnConvolutionForward(h, &one, c->xd, x, c->wd, w, c->cd, al, ws_ptr, ws, &zero, c->yd, y) == CUDNN_STATUS_SUCCESS) {
            c->algo = al;
            c->ws = ws;
            return ST_OK;
        }
        cudaGetLastError();
    }
    if (tune()) {
        /* it synchronizes the device: no other thread may be capturing */
        st_cuda_exclusive_lock();
        found = cudnnFindConvolutionForwardAlgorithmEx(h, c->xd, x, c->wd, w, c->cd, c->yd, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                        &got, perf, ws_ptr, ws_bytes) == CUDNN_STATUS_SUCCESS;
        st_cuda_exclusive_unlock();
        if (!found) cudaGetLastError();
    }
    if (!found)
        ST_TRY(dnn(cudnnGetConvolutionForwardAlgorithm_v7(h, c->xd, c->wd, c->cd, c->yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
                   "cudnnGetConvolutionForwardAlgorithm_v7"));
    const char *last = "no candidate algorithm";
    for (int i = 0; i < got; i++) {
        cudnnMathType_t math;
        if (perf[i].status != CUDNN_STATUS_SUCCESS || !allowed(t, ctx, perf[i].algo, perf[i].mathType, &math)) continue;
        if (cudnnSetConvolutionMathType(c->cd, math) != CUDNN_STATUS_SUCCESS) continue;
        size_t ws = 0;
        if (cudnnGetConvolutionForwardWorkspaceSize(h, c->xd, c->wd, c->cd, c->yd, perf[i].algo, &ws) != CUDNN_STATUS_SUCCESS ||
            ws > ws_bytes)
            continue;
        cudnnStatus_t e = cudnnConvolutionForward(h, &one, c->xd, x, c->wd, w, c->cd, perf[i].algo, ws_ptr, ws, &zero, c->yd, y);
        if (e == CUDNN_STATUS_SUCCESS) {
            c->algo = perf[i].algo;
            c->ws = ws;
            if (found && c->key[0]) st_cuda_tune_store(c->key, (int)perf[i].algo, (int)math);
            return ST_OK;
        }
        last = cudnnGetErrorString(e);
        cudaGetLastError(); /* a refused launch must not fail the command later */
    }
    return st_error(ST_ERR_BACKEND, "no cuDNN algorithm ran (%s)", last);
}

/* MODE_PACKED's buffers: whichever of X and Y is not packed gets a packed
 * copy at the start of the workspace, cuDNN's workspace after them.  A
 * packed operand is used where it is (a chunk of a batched Split view or
 * a concat slice is what usually needs the copy, and its partner is often
 * a whole arena tensor too large for the workspace).  False if they do
 * not fit. */
static bool packed_buffers(const st_cuda_ctx *ctx, const st_operand *x, const st_operand *y, st_operand *px, st_operand *py,
                           size_t *used, bool cl_pack)
{
    size_t es = st_dtype_size(x->dtype);
    bool cx = !cl_pack && st_operand_is_contiguous(x), cy = cl_pack || st_operand_is_contiguous(y);
    size_t xb = cx ? 0 : st_align256((size_t)st_operand_numel(x) * es);
    size_t yb = cy ? 0 : st_align256((size_t)st_operand_numel(y) * es);
    if (xb + yb > ctx->workspace_bytes / 2) return false;
    *px = cx ? *x : st_packed_like(x, ctx->workspace);
    if (cl_pack) {
        /* [N, C, H, W] stored NHWC without the gaps of the slice */
        int64_t c = x->sizes[1], h = x->sizes[2], w = x->sizes[3];
        px->strides[0] = h * w * c, px->strides[1] = 1, px->strides[2] = w * c, px->strides[3] = c;
    }
    *py = cy ? *y : st_packed_like(y, (char *)ctx->workspace + xb);
    *used = xb + yb;
    return true;
}

/* Packs X for MODE_PACKED unless it is used where it is. */
static st_status pack_x(cudaStream_t stream, const st_operand *px, const st_operand *x)
{
    return px->data == x->data ? ST_OK : st_pack(stream, px, x);
}

static void reset_descs(conv_cache *c)
{
    if (c->xd) cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd) cudnnDestroyTensorDescriptor(c->yd);
    if (c->wd) cudnnDestroyFilterDescriptor(c->wd);
    if (c->cd) cudnnDestroyConvolutionDescriptor(c->cd);
    c->xd = c->yd = NULL;
    c->wd = NULL;
    c->cd = NULL;
}

/* W [K, C, kh, kw] -> [K, kh, kw, C], element by element (once per
 * command: W is a constant). */
template <typename T>
__global__ void krsc_kernel(const T *w, T *o, int64_t k, int64_t c, int64_t rs)
{
    int64_t n = k * c * rs;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ci = i % c, t = i / c, r = t % rs, ki = t / rs;
        o[i] = w[(ki * c + ci) * rs + r];
    }
}

/* Whether W gets a KRSC copy: X is channels-last (C steps by one), W is a
 * constant (conv_prepare) and packed, one group, 2-D.  cuDNN's NHWC
 * kernels want the filter KRSC; given KCRS they transposed it on every
 * run (39 launches of YOLOv8n at batch 32 in f16 on an H200).
 * STRATA_CUDA_KRSC=0 turns it off. */
static bool want_krsc(const st_kctx *k, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1];
    const char *e = getenv("STRATA_CUDA_KRSC");
    if ((e && strcmp(e, "0") == 0) || !k->priv || s->group != 1 || s->nsp != 2) return false;
    if (x->sizes[1] < 2 || x->strides[1] != 1 || !st_operand_is_contiguous(w)) return false;
    return w->dtype == ST_F16 || w->dtype == ST_BF16 || w->dtype == ST_F32;
}

static st_status make_krsc(conv_cache *c, const st_operand *w, cudaStream_t stream)
{
    size_t bytes = (size_t)st_operand_numel(w) * st_dtype_size(w->dtype);
    st_cuda_exclusive_lock(); /* the first run is never captured */
    cudaError_t err = cudaMalloc(&c->wk, bytes);
    st_cuda_exclusive_unlock();
    if (err != cudaSuccess) {
        c->wk = NULL;
        return st_cuda_ok(err, "cudaMalloc (Conv's KRSC filter)");
    }
    int64_t kk = w->sizes[0], cc = w->sizes[1], rs = w->sizes[2] * w->sizes[3];
    unsigned blocks = st_blocks(st_operand_numel(w), THREADS);
    if (w->dtype == ST_F32) krsc_kernel<float><<<blocks, THREADS, 0, stream>>>((const float *)w->data, (float *)c->wk, kk, cc, rs);
    else krsc_kernel<uint16_t><<<blocks, THREADS, 0, stream>>>((const uint16_t *)w->data, (uint16_t *)c->wk, kk, cc, rs);
    return ST_OK;
}

/* MODE_STRIDED's first run: cuDNN on the operands as they are. */
static st_status try_strided(conv_cache *c, const st_kctx *k, const st_cuda_ctx *ctx, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    if (want_krsc(k, s) && (c->wk || make_krsc(c, w, st_stream(k)) == ST_OK)) {
        st_status r = describe(c, s, x, w, y, ctx->allow_tf32, true);
        if (r == ST_OK) r = choose_forward(c, ctx, x->dtype, x->data, c->wk, y->data, ctx->workspace, ctx->workspace_bytes);
        if (r == ST_OK) r = bias_epilogue(st_stream(k), y, y, b, s->epi);
        if (r == ST_OK) {
            c->mode = MODE_STRIDED;
            return ST_OK;
        }
        /* the KCRS filter below, as before */
        reset_descs(c);
        st_cuda_exclusive_lock();
        cudaFree(c->wk);
        st_cuda_exclusive_unlock();
        c->wk = NULL;
    }
    st_status r = describe(c, s, x, w, y, ctx->allow_tf32, false);
    if (r == ST_OK) r = choose_forward(c, ctx, x->dtype, x->data, w->data, y->data, ctx->workspace, ctx->workspace_bytes);
    if (r == ST_OK) r = bias_epilogue(st_stream(k), y, y, b, s->epi);
    if (r == ST_OK) c->mode = MODE_STRIDED;
    else reset_descs(c);
    return r;
}

/* MODE_PACKED's first run: cuDNN on packed copies where X or Y is strided. */
static st_status try_packed(conv_cache *c, const st_kctx *k, const st_cuda_ctx *ctx, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    cudaStream_t stream = st_stream(k);
    st_operand px, py;
    size_t used = 0;
    if (!packed_buffers(ctx, x, y, &px, &py, &used, c->cl_pack))
        return st_error(ST_ERR_BACKEND, "packed copies of X and Y exceed the workspace");
    bool krsc = c->cl_pack && want_krsc(k, s) && (c->wk || make_krsc(c, w, stream) == ST_OK);
    st_status r = describe(c, s, &px, w, &py, ctx->allow_tf32, krsc);
    if (r == ST_OK) r = pack_x(stream, &px, x);
    if (r == ST_OK)
        r = choose_forward(c, ctx, x->dtype, px.data, krsc ? c->wk : w->data, py.data, (char *)ctx->workspace + used,
                           ctx->workspace_bytes - used);
    if (r == ST_OK) r = bias_epilogue(stream, y, &py, b, s->epi);
    if (r == ST_OK) {
        c->mode = MODE_PACKED;
        return ST_OK;
    }
    reset_descs(c);
    if (c->wk) {
        st_cuda_exclusive_lock();
        cudaFree(c->wk);
        st_cuda_exclusive_unlock();
        c->wk = NULL;
    }
    return r;
}

/* Whether X is a channel slice of a channels-last value (a Split's chunk
 * of an NHWC conv output: YOLO's C2f blocks), which cuDNN takes only
 * through a transpose of its own (31 generic-transpose launches, 0.51 ms,
 * for YOLOv8n at batch 1 in f16 on an H200; nhwcSliceC at batch 32).
 * Such an X is packed channels-last first, a copy of C-element runs.
 * STRATA_CUDA_CL_PACK=0 turns it off. */
static bool cl_slice(const st_operand *x)
{
    const char *e = getenv("STRATA_CUDA_CL_PACK");
    if ((e && strcmp(e, "0") == 0) || x->rank != 4 || x->dtype == ST_F32) return false;
    int64_t ps = cl_pixel_stride(x);
    return ps > x->sizes[1];
}

/* A channels-last operand's dims and strides as cuDNN is told them: a
 * size-1 H, W or N dim gets the stride packed NHWC would give it (the
 * pixel stride for W, W pixels for H, H*W pixels for N), not whatever
 * stride the view happened to carry.  A [N, C, 1, 1] view often carries
 * strides [C, 1, 1, 1], which also reads as packed NCHW, and the layout
 * cuDNN infers from the strides then is ambiguous.  With such strides the
 * fused one-pixel convs of EfficientNet-B0's squeeze-excite blocks (SiLU,
 * batch 32, f16) came out 0.135 of max|ref| off PyTorch on an H200; with
 * these, 3.93e-03, as unfused (bench/RESULTS.md, 2026-12-04, fifth
 * session), so one-pixel convs are no longer kept out of the fusion. */
static void cl_canon(const st_operand *o, int64_t *dims, int64_t *strides)
{
    int64_t ps = cl_pixel_stride(o);
    for (int d = 0; d < 4; d++) dims[d] = o->sizes[d], strides[d] = o->strides[d];
    if (o->sizes[3] == 1) strides[3] = ps;
    if (o->sizes[2] == 1) strides[2] = ps * o->sizes[3];
    if (o->sizes[0] == 1) strides[0] = ps * o->sizes[2] * o->sizes[3];
}

/* Whether the fused conv's first run times the first ST_CF_MAX_CANDS
 * engine configs of cuDNN's heuristic that build its graph and keeps the
 * fastest (STRATA_CUDA_CONV_FUSED_TUNE=1), its choice kept on disk as the
 * config's position in the heuristic's list (conv_tune.c, math -2), so a
 * later process builds that one alone.  Off by default: each candidate
 * is a runtime-compiled kernel, which costs time to the first result. */
static bool tune_fused(void)
{
    const char *e = getenv("STRATA_CUDA_CONV_FUSED_TUNE");
    return e && strcmp(e, "1") == 0;
}

/* The fused problem as a tuning-cache key (empty if it does not fit). */
static void fused_key(const st_cf_problem *q, char *key, size_t len)
{
    int dev = 0;
    cudaGetDevice(&dev);
    size_t at = (size_t)snprintf(key, len, "fused %s cudnn%zu t%d b%d a%d r%d a%d k%lldx%lld", device_name(dev), cudnnGetVersion(),
                                 (int)q->dtype, (int)q->has_b, q->act, (int)q->has_r, q->act2, (long long)q->kh, (long long)q->kw);
    const int64_t *lists[10] = {q->xdims, q->xstrides, q->ydims, q->ystrides, q->rstrides, q->strides, q->dilations, q->pre, q->post,
                                q->align};
    const int lens[10] = {4, 4, 4, 4, q->has_r ? 4 : 0, 2, 2, 2, 2, 5};
    for (int l = 0; l < 10 && at < len; l++) {
        at += (size_t)snprintf(key + at, len - at, " ");
        for (int i = 0; i < lens[l] && at < len; i++) at += (size_t)snprintf(key + at, len - at, "%s%lld", i ? "," : "", (long long)lists[l][i]);
    }
    if (at >= len) key[0] = 0;
}

/* Times each candidate of cf (a warm run, then 3 runs between events on
 * the handle's stream), makes the fastest the one that runs and returns
 * its index, or -1 when none ran.  Synchronizes, as cudnnFind does. */
static int time_fused(st_cf_plan *cf, cudnnHandle_t h, const st_operand *x, const void *wk, const st_operand *b, const st_operand *y,
                      const st_operand *r, void *ws)
{
    cudaStream_t st;
    cudaEvent_t e0, e1;
    if (cudnnGetStream(h, &st) != CUDNN_STATUS_SUCCESS || cudaEventCreate(&e0) != cudaSuccess) return -1;
    if (cudaEventCreate(&e1) != cudaSuccess) {
        cudaEventDestroy(e0);
        return -1;
    }
    int best = -1;
    float best_ms = 0;
    st_cuda_exclusive_lock();
    for (int i = 0; i < st_cf_candidates(cf); i++) {
        st_cf_choose(cf, i);
        bool ran = st_cf_run(h, cf, x->data, wk, b ? b->data : NULL, y->data, r ? r->data : NULL, ws) == ST_OK;
        ran = ran && cudaEventRecord(e0, st) == cudaSuccess;
        for (int k = 0; k < 3 && ran; k++) ran = st_cf_run(h, cf, x->data, wk, b ? b->data : NULL, y->data, r ? r->data : NULL, ws) == ST_OK;
        float ms = 0;
        ran = ran && cudaEventRecord(e1, st) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
              cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
        if (!ran) {
            cudaGetLastError();
            continue;
        }
        if (verbose()) fprintf(stderr, "strata: cuda: fused conv candidate %d (heuristic #%d): %.4f ms\n", i, st_cf_candidate_at(cf, i), ms / 3);
        if (best < 0 || ms < best_ms) best = i, best_ms = ms;
    }
    st_cuda_exclusive_unlock();
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (best >= 0) st_cf_choose(cf, best);
    return best;
}

/* MODE_FUSED's first run (conv_fused.cu; STRATA_CUDA_CONV_FUSED=0 off): an
 * f16/bf16 conv over channels-last X and Y with a constant W, its bias
 * and ReLU or SiLU as one cuDNN graph.  An error when it does not apply
 * or cuDNN builds no engine for it; the caller then goes on unfused. */
static st_status try_fused(conv_cache *c, const st_kctx *k, const st_cuda_ctx *ctx, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    int act = s->epi.act == 0 ? ST_CF_NONE : s->epi.act == ST_U_RELU + 1 ? ST_CF_RELU : s->epi.act == ST_U_SILU + 1 ? ST_CF_SILU : -1;
    if (act < 0 || (x->dtype != ST_F16 && x->dtype != ST_BF16) || y->dtype != x->dtype || !want_krsc(k, s))
        return st_error(ST_ERR_UNSUPPORTED, "not a fusable conv");
    if (act == ST_CF_SILU && st_cf_mode() == ST_CF_NOSWISH) return st_error(ST_ERR_UNSUPPORTED, "SiLU (STRATA_CUDA_CONV_FUSED=noswish)");
    if (!cl_pixel_stride(x) || !cl_pixel_stride(y) || (b && (b->dtype != x->dtype || b->strides[0] != 1)))
        return st_error(ST_ERR_UNSUPPORTED, "operands not channels-last");
    const st_operand *r = s->residual ? &k->in[3] : NULL;
    int act2 = !r || s->epi2.act == 0 ? ST_CF_NONE : s->epi2.act == ST_U_RELU + 1 ? ST_CF_RELU : s->epi2.act == ST_U_SILU + 1 ? ST_CF_SILU : -1;
    if (r && (act2 < 0 || r->dtype != x->dtype || !cl_pixel_stride(r)))
        return st_error(ST_ERR_UNSUPPORTED, "a residual not channels-last, or its activation not ReLU or SiLU");
    st_cf_problem q;
    memset(&q, 0, sizeof q);
    cl_canon(x, q.xdims, q.xstrides);
    cl_canon(y, q.ydims, q.ystrides);
    if (r) {
        int64_t rdims[4];
        cl_canon(r, rdims, q.rstrides);
        q.has_r = true;
        q.act2 = act2;
        q.align[4] = st_cf_align(r->data);
    }
    q.kh = w->sizes[2], q.kw = w->sizes[3];
    for (int i = 0; i < 2; i++) q.strides[i] = s->s[i], q.dilations[i] = s->d[i], q.pre[i] = s->pb[i], q.post[i] = s->pe[i];
    q.dtype = x->dtype;
    q.has_b = b != NULL;
    q.act = act;
    if (!c->wk) ST_TRY(make_krsc(c, w, st_stream(k)));
    q.align[0] = st_cf_align(x->data), q.align[1] = st_cf_align(c->wk);
    q.align[2] = b ? st_cf_align(b->data) : 16, q.align[3] = st_cf_align(y->data);
    cudnnHandle_t h = (cudnnHandle_t)ctx->cudnn;
    bool tuning = tune_fused();
    char key[768] = "";
    int at = -1, stored, mark;
    if (tuning) fused_key(&q, key, sizeof key);
    if (tuning && key[0] && st_cuda_tune_lookup(key, &stored, &mark) && mark == -2) at = stored;
    st_status built = st_cf_build(h, &q, ctx->workspace_bytes, at, tuning && at < 0 ? ST_CF_MAX_CANDS : 1, &c->cf);
    if (built != ST_OK && at >= 0) built = st_cf_build(h, &q, ctx->workspace_bytes, -1, ST_CF_MAX_CANDS, &c->cf);
    ST_TRY(built);
    if (st_cf_candidates(c->cf) > 1) {
        int best = time_fused(c->cf, h, x, c->wk, b, y, r, ctx->workspace);
        if (best >= 0 && key[0]) st_cuda_tune_store(key, st_cf_candidate_at(c->cf, best), -2);
    }
    st_status e = st_cf_run(h, c->cf, x->data, c->wk, b ? b->data : NULL, y->data, r ? r->data : NULL, ctx->workspace);
    if (e != ST_OK) {
        st_cf_free(c->cf);
        c->cf = NULL;
        return e;
    }
    c->mode = MODE_FUSED;
    return ST_OK;
}

/* First run: cuDNN on the operands as they are, else on packed copies,
 * else the direct kernel.  Sets c->mode; true when Y is computed.
 *
 * Packing strided f16/bf16 operands first (a batched Split's chunks, a
 * concat's slices) did not help: on an H200 cuDNN's heuristic then put
 * ten of YOLOv8n's convs at batch 32 on a CUDA-core implicit GEMM instead
 * of six, and the model's kernels took 10.1 ms instead of 9.6
 * (bench/RESULTS.md, 2026-12-04).  The strides go to cuDNN first. */
static bool setup_conv(conv_cache *c, const st_kctx *k, const st_cuda_ctx *ctx, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (st_operand_numel(x) == 0 || force_direct()) {
        c->mode = MODE_DIRECT;
        return false;
    }
    if (st_cf_mode() != ST_CF_OFF) {
        if (try_fused(c, k, ctx, s) == ST_OK) {
            if (verbose()) fprintf(stderr, "strata: cuda: Conv '%s' fused with its bias and activation\n", k->node->name);
            return true;
        }
        if (verbose()) fprintf(stderr, "strata: cuda: Conv '%s' unfused: %s\n", k->node->name, st_last_error());
    }
    if (cl_slice(x)) {
        c->cl_pack = true;
        if (try_packed(c, k, ctx, s) == ST_OK) return true;
        c->cl_pack = false;
    }
    if (try_strided(c, k, ctx, s) == ST_OK) return true;
    char why[256];
    snprintf(why, sizeof why, "%s", st_last_error());
    bool strided = !st_operand_is_contiguous(x) || !st_operand_is_contiguous(y);
    if (strided && try_packed(c, k, ctx, s) == ST_OK) {
        if (verbose()) fprintf(stderr, "strata: cuda: Conv '%s' runs cuDNN on packed copies: %s\n", k->node->name, why);
        return true;
    }
    if (verbose())
        fprintf(stderr, "strata: cuda: Conv '%s' runs the direct kernel: %s; packed: %s\n", k->node->name, why,
                strided ? st_last_error() : "the operands are packed already");
    c->mode = MODE_DIRECT;
    return false;
}

/* The command's cache, made empty on its first (uncaptured) run; NULL
 * when out of memory. */
static conv_cache *cache_of(const st_cuda_ctx *ctx)
{
    conv_cache *c = (conv_cache *)ctx->slot->data;
    if (c) return c;
    c = (conv_cache *)calloc(1, sizeof *c);
    if (!c) return NULL;
    ctx->slot->data = c;
    ctx->slot->release = conv_cache_free;
    return c;
}

/* The conv by whichever path fits; *res_done when that path added the
 * residual too (the fused graph), else st_cuda_conv adds it after. */
static st_status conv_run(const st_kctx *k, const st_conv_state *s, bool *res_done)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    const st_operand *r = s->residual ? &k->in[3] : NULL;
    cudaStream_t stream = st_stream(k);
    if (st_operand_numel(y) == 0) return ST_OK;
    if (dw_conv(k, s)) return ST_OK;
    if (small_c_conv(k, s)) return ST_OK;
    size_t xbytes, wbytes;
    if (patchify_fits(s, x, w, y, ctx, &xbytes, &wbytes)) return patchify_conv(k, s, xbytes);
    conv_cache *c = (conv_cache *)ctx->slot->data;
    if (!c || !c->set_up) {
        if (ctx->capturing)
            return st_error(ST_ERR_BACKEND, "cuda: Conv: no cached cuDNN set-up (the command's first run was captured)");
        if (!c && !(c = cache_of(ctx))) return st_error(ST_ERR_NOMEM, "out of memory");
        c->set_up = true;
        if (setup_conv(c, k, ctx, s)) {
            *res_done = c->mode == MODE_FUSED;
            return ST_OK;
        }
    }
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = (cudnnHandle_t)ctx->cudnn;
    switch (c->mode) {
    case MODE_STRIDED:
        ST_TRY(dnn(cudnnConvolutionForward(h, &one, c->xd, x->data, c->wd, c->wk ? c->wk : w->data, c->cd, c->algo, ctx->workspace, c->ws, &zero,
                                           c->yd, y->data),
                   "cudnnConvolutionForward"));
        return bias_epilogue(stream, y, y, b, s->epi);
    case MODE_PACKED: {
        st_operand px, py;
        size_t used = 0;
        if (!packed_buffers(ctx, x, y, &px, &py, &used, c->cl_pack))
            return st_error(ST_ERR_INTERNAL, "cuda: Conv: packed buffers no longer fit");
        ST_TRY(pack_x(stream, &px, x));
        ST_TRY(dnn(cudnnConvolutionForward(h, &one, c->xd, px.data, c->wd, c->wk ? c->wk : w->data, c->cd, c->algo,
                                           (char *)ctx->workspace + used,
                                           c->ws, &zero, c->yd, py.data),
                   "cudnnConvolutionForward"));
        return bias_epilogue(stream, y, &py, b, s->epi);
    }
    case MODE_FUSED:
        if (!st_cf_fits(c->cf, x->data, c->wk, b ? b->data : NULL, y->data, r ? r->data : NULL)) {
            /* an operand (a caller's buffer) now sits at a lower alignment
             * than the plan promised cuDNN: build another for it */
            if (ctx->capturing)
                return st_error(ST_ERR_BACKEND, "cuda: Conv: operands less aligned than the fused plan (the run is captured)");
            st_cf_free(c->cf);
            c->cf = NULL;
            if (setup_conv(c, k, ctx, s)) {
                *res_done = c->mode == MODE_FUSED;
                return ST_OK;
            }
            direct_conv(k, s);
            return ST_OK;
        }
        *res_done = true;
        return st_cf_run(h, c->cf, x->data, c->wk, b ? b->data : NULL, y->data, r ? r->data : NULL, ctx->workspace);
    default:
        direct_conv(k, s);
        return ST_OK;
    }
}

/* Y = epi2(Y + R) (a residual that the conv's path did not add): the
 * separate Add it replaces, on the element-wise layer's walk (merged
 * dims, ew_rows.cuh's vectorized fast path when no activation follows),
 * with the activation in the same pass otherwise.  Each element of Y is
 * read before it is written, and R never shares Y's bytes
 * (passes/fuse_conv_add.c). */
__global__ void residual_kernel(st_walk w, void *y, const void *r, st_dtype t, st_epilogue epi)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        st_stf(t, y, off[0], st_epilogue_f(epi, st_ldf(t, y, off[1]) + st_ldf(t, r, off[2])));
    }
}

/* Y = act(Y S[m] + T[m]) PS[m] + PT[m] per output channel m
 * (st_conv_state.ch_scale ... post_shift, passes/fuse_affine.c) over the
 * conv's output, which holds conv + bias.  The walk's second operand
 * steps by one along the channel dim only, so its offset is m; dims are
 * walked in Y's stride order (channels-last Y walks its channels as the
 * row).  aff holds S, T, PS, PT, m floats each; pre and post say which
 * pair applies. */
__global__ void affine_kernel(st_walk w, void *y, st_dtype t, const float *aff, int64_t m, bool pre, bool post,
                              st_epilogue epi)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        int64_t c = off[1];
        float v = st_ldf(t, y, off[0]);
        if (pre) v = v * aff[c] + aff[m + c];
        v = st_epilogue_f(epi, v);
        if (post) v = v * aff[2 * m + c] + aff[3 * m + c];
        st_stf(t, y, off[0], v);
    }
}

/* The affine arrays on the device, uploaded on the command's first run
 * (never captured) into its cache; the identity where a pair is absent. */
static st_status affine_upload(conv_cache *c, const st_conv_state *s, int64_t m, cudaStream_t stream)
{
    size_t bytes = (size_t)m * 4 * sizeof(float);
    float *h = (float *)malloc(bytes);
    if (!h) return st_error(ST_ERR_NOMEM, "out of memory");
    st_conv_affine_table(s, m, h);
    st_cuda_exclusive_lock();
    cudaError_t err = cudaMalloc(&c->aff, bytes);
    st_cuda_exclusive_unlock();
    if (err != cudaSuccess) {
        c->aff = NULL;
        free(h);
        return st_cuda_ok(err, "cudaMalloc (Conv's affine epilogue)");
    }
    /* pageable source: the copy is done when this returns, so h may go */
    err = cudaMemcpyAsync(c->aff, h, bytes, cudaMemcpyHostToDevice, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    free(h);
    return st_cuda_ok(err, "cudaMemcpyAsync (Conv's affine epilogue)");
}

/* A conv with an affine epilogue: conv + bias by whichever path fits
 * (the state without its activation and affine maps), then affine_kernel
 * in one pass.  Before, each op of the chain was a pass of its own,
 * each rounding to the session's dtype: PP-OCRv4's recogniser in f16 was
 * 1.1% of max|ref| off on CUDA and OpenCL, 0.66% on the CPU, whose
 * kernels apply the chain in registers. */
static st_status conv_affine(const st_kctx *k, const st_conv_state *s)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *y = &k->out[0];
    st_conv_state plain = *s;
    memset(&plain.epi, 0, sizeof plain.epi);
    plain.ch_scale = plain.ch_shift = plain.post_scale = plain.post_shift = NULL;
    bool res_done = false;
    ST_TRY(conv_run(k, &plain, &res_done));
    if (st_operand_numel(y) == 0) return ST_OK;
    conv_cache *c = (conv_cache *)ctx->slot->data;
    if (!c || !c->aff) {
        if (ctx->capturing)
            return st_error(ST_ERR_BACKEND, "cuda: Conv: no affine epilogue on the device (the command's first run was captured)");
        if (!c && !(c = cache_of(ctx))) return st_error(ST_ERR_NOMEM, "out of memory");
        ST_TRY(affine_upload(c, s, y->sizes[1], st_stream(k)));
    }
    int64_t chan[ST_MAX_RANK] = {0};
    chan[1] = 1;
    st_walk w = st_walk2(y->rank, y->sizes, y->strides, chan);
    bool pre = s->ch_scale || s->ch_shift, post = s->post_scale || s->post_shift;
    affine_kernel<<<st_blocks(w.n, THREADS), THREADS, 0, st_stream(k)>>>(w, y->data, y->dtype, c->aff, y->sizes[1], pre, post,
                                                                          s->epi);
    return ST_OK;
}

extern "C" st_status st_cuda_conv(const st_kctx *k)
{
    const st_conv_state *s = (const st_conv_state *)k->state;
    if (st_conv_has_affine(s)) return conv_affine(k, s);
    bool res_done = false;
    ST_TRY(conv_run(k, s, &res_done));
    if (!s->residual || res_done) return ST_OK;
    const st_operand *y = &k->out[0], *r = &k->in[3];
    const st_operand *in[2] = {y, r};
    st_walk w = st_walk_ew(y, 2, in);
    if (w.n == 0) return ST_OK;
    void *ptr[3] = {y->data, y->data, r->data};
    if (!s->epi2.act && st_ew_fast(st_stream(k), y->dtype, 2, w, ptr, ST_B_ADD, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f)) return ST_OK;
    residual_kernel<<<st_blocks(w.n, THREADS), THREADS, 0, st_stream(k)>>>(w, y->data, r->data, y->dtype, s->epi2);
    return ST_OK;
}

/* ---- ConvTranspose: cuDNN's backward-data convolution ---- */

struct dct_args {
    geo g;
    const void *x, *w, *b;
    void *y;
    st_dtype xt, wt, bt, yt;
    int64_t n, m, cg, mg, bs;
};

/* y[n, m, o] = b[m] + sum over the group's input channels c and the taps
 * k with o = i * stride - pad + k * dilation of x[n, c, i] * w[c, m % mg, k]. */
__global__ void dct_kernel(dct_args a)
{
    const geo &g = a.g;
    int64_t total = a.n * a.m * g.osz[0] * g.osz[1] * g.osz[2];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i;
        int64_t ow = r % g.osz[2];
        r /= g.osz[2];
        int64_t oh = r % g.osz[1];
        r /= g.osz[1];
        int64_t od = r % g.osz[0];
        r /= g.osz[0];
        int64_t m = r % a.m, n = r / a.m, grp = m / a.mg, ml = m % a.mg;
        float acc = a.b ? st_ldf(a.bt, a.b, m * a.bs) : 0.0f;
        for (int64_t kd = 0; kd < g.k[0]; kd++) {
            int64_t td = od + g.pb[0] - kd * g.dl[0];
            if (td < 0 || td % g.st[0]) continue;
            int64_t id = td / g.st[0];
            if (id >= g.isz[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; kh++) {
                int64_t th = oh + g.pb[1] - kh * g.dl[1];
                if (th < 0 || th % g.st[1]) continue;
                int64_t ih = th / g.st[1];
                if (ih >= g.isz[1]) continue;
                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                    int64_t tw = ow + g.pb[2] - kw * g.dl[2];
                    if (tw < 0 || tw % g.st[2]) continue;
                    int64_t iw = tw / g.st[2];
                    if (iw >= g.isz[2]) continue;
                    for (int64_t c = 0; c < a.cg; c++) {
                        int64_t ci = grp * a.cg + c;
                        float xv = st_ldf(a.xt, a.x, n * g.xs[0] + ci * g.xs[1] + id * g.xs[2] + ih * g.xs[3] + iw * g.xs[4]);
                        float wv = st_ldf(a.wt, a.w, ci * g.ws[0] + ml * g.ws[1] + kd * g.ws[2] + kh * g.ws[3] + kw * g.ws[4]);
                        acc += xv * wv;
                    }
                }
            }
        }
        st_stf(a.yt, a.y, n * g.ys[0] + m * g.ys[1] + od * g.ys[2] + oh * g.ys[3] + ow * g.ys[4], acc);
    }
}

static void direct_conv_transpose(const st_kctx *k, const st_conv_state *s)
{
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    dct_args a;
    memset(&a, 0, sizeof a);
    a.g = geo_make(s, x, y, w);
    a.x = x->data;
    a.w = w->data;
    a.b = b ? b->data : NULL;
    a.y = y->data;
    a.xt = x->dtype;
    a.wt = w->dtype;
    a.bt = b ? b->dtype : ST_F32;
    a.yt = y->dtype;
    a.bs = b ? b->strides[0] : 0;
    a.n = y->sizes[0];
    a.m = y->sizes[1];
    a.cg = x->sizes[1] / s->group;
    a.mg = y->sizes[1] / s->group;
    dct_kernel<<<st_blocks(st_operand_numel(y), THREADS), THREADS, 0, st_stream(k)>>>(a);
}

struct ct_cache {
    conv_cache c;
    cudnnConvolutionBwdDataAlgo_t algo;
};

static void ct_cache_free(void *p)
{
    ct_cache *c = (ct_cache *)p;
    if (!c) return;
    if (c->c.xd) cudnnDestroyTensorDescriptor(c->c.xd);
    if (c->c.yd) cudnnDestroyTensorDescriptor(c->c.yd);
    if (c->c.wd) cudnnDestroyFilterDescriptor(c->c.wd);
    if (c->c.cd) cudnnDestroyConvolutionDescriptor(c->c.cd);
    free(c);
}

/* The backward-data problem: dx = Y (the forward conv's input), dy = X. */
static st_status choose_backward(ct_cache *cc, const st_kctx *k, const st_cuda_ctx *ctx)
{
    conv_cache *c = &cc->c;
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    cudnnHandle_t h = (cudnnHandle_t)ctx->cudnn;
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int got = 0;
    ST_TRY(dnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, c->wd, c->yd, c->cd, c->xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                           &got, perf),
               "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    const float one = 1.0f, zero = 0.0f;
    const char *last = "no candidate algorithm";
    for (int i = 0; i < got; i++) {
        cudnnMathType_t math;
        if (perf[i].status != CUDNN_STATUS_SUCCESS || !candidate_math(x->dtype, ctx->allow_tf32, perf[i].mathType, &math)) continue;
        cudnnConvolutionBwdDataAlgo_t al = perf[i].algo;
        if (x->dtype == ST_F32 && !ctx->allow_tf32 &&
            (al == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || al == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
             al == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || al == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED))
            continue;
        if (cudnnSetConvolutionMathType(c->cd, math) != CUDNN_STATUS_SUCCESS) continue;
        size_t ws = 0;
        if (cudnnGetConvolutionBackwardDataWorkspaceSize(h, c->wd, c->yd, c->cd, c->xd, perf[i].algo, &ws) != CUDNN_STATUS_SUCCESS ||
            ws > ctx->workspace_bytes)
            continue;
        cudnnStatus_t e = cudnnConvolutionBackwardData(h, &one, c->wd, w->data, c->yd, x->data, c->cd, perf[i].algo, ctx->workspace,
                                                       ws, &zero, c->xd, y->data);
        if (e == CUDNN_STATUS_SUCCESS) {
            cc->algo = perf[i].algo;
            c->ws = ws;
            return ST_OK;
        }
        last = cudnnGetErrorString(e);
        cudaGetLastError();
    }
    return st_error(ST_ERR_BACKEND, "no cuDNN algorithm ran (%s)", last);
}

extern "C" st_status st_cuda_conv_transpose(const st_kctx *k)
{
    const st_conv_state *s = (const st_conv_state *)k->state;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *x = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    const st_operand *b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    if (st_operand_numel(y) == 0) return ST_OK;
    ct_cache *c = (ct_cache *)ctx->slot->data;
    bool ran = false;
    if (!c) {
        if (ctx->capturing)
            return st_error(ST_ERR_BACKEND, "cuda: ConvTranspose: no cached cuDNN set-up (the command's first run was captured)");
        c = (ct_cache *)calloc(1, sizeof *c);
        if (!c) return st_error(ST_ERR_NOMEM, "out of memory");
        ctx->slot->data = c;
        ctx->slot->release = ct_cache_free;
        st_status r = ST_OK;
        for (int i = 0; i < s->nsp && r == ST_OK; i++)
            if (s->pb[i] != s->pe[i]) r = st_error(ST_ERR_BACKEND, "asymmetric pads");
        if (r == ST_OK && st_operand_numel(x) == 0) r = st_error(ST_ERR_BACKEND, "empty input");
        /* the forward convolution maps Y's shape to X's: its input is Y */
        if (r == ST_OK) r = describe(&c->c, s, y, w, x, ctx->allow_tf32, false);
        if (r == ST_OK) r = choose_backward(c, k, ctx);
        if (r != ST_OK) {
            if (verbose())
                fprintf(stderr, "strata: cuda: ConvTranspose '%s' runs the direct kernel: %s\n", k->node->name, st_last_error());
            c->c.mode = MODE_DIRECT;
        } else {
            ran = true;
        }
    }
    if (c->c.mode == MODE_DIRECT) {
        direct_conv_transpose(k, s);
        return ST_OK;
    }
    if (!ran) {
        const float one = 1.0f, zero = 0.0f;
        ST_TRY(dnn(cudnnConvolutionBackwardData((cudnnHandle_t)ctx->cudnn, &one, c->c.wd, w->data, c->c.yd, x->data, c->c.cd, c->algo,
                                                ctx->workspace, c->c.ws, &zero, c->c.xd, y->data),
                   "cudnnConvolutionBackwardData"));
    }
    return bias_epilogue(st_stream(k), y, y, b, s->epi);
}

/* ---- pooling ---- */

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

/* Conv and ConvTranspose: cuDNN (or the direct kernels) in f32, f16 and
 * bf16; Conv also with the per-channel affine epilogue
 * (ST_CAP_CONV_AFFINE: conv_affine) and the residual. */
/* Conv's prepare: k->priv is non-NULL when W is a constant, which lets
 * the first run keep a re-laid-out copy of it (want_krsc). */
static char conv_w_const;
static st_status conv_prepare(const st_knode *n, void **priv)
{
    *priv = n->n_in > 1 && n->data[1] ? &conv_w_const : NULL;
    return ST_OK;
}

static bool conv_accepts(const st_knode *n, char *why, size_t len)
{
    const st_conv_state *s = (const st_conv_state *)n->state;
    /* the affine epilogue (passes/fuse_affine.c) and the residual
     * (passes/fuse_conv_add.c) are st_cuda_conv's alone; the affine one
     * does not also take a residual (the pass never makes both) */
    if (s && st_conv_has_affine(s) && (strcmp(n->op->name, "Conv") != 0 || s->residual))
        return st_kernel_refuse(why, len, "a per-channel affine epilogue");
    /* the residual (passes/fuse_conv_add.c) is st_cuda_conv's alone */
    if (s && s->residual && strcmp(n->op->name, "Conv") != 0) return st_kernel_refuse(why, len, "a residual operand");
    return st_cuda_accepts_no_f64(n, why, len);
}

extern "C" const st_kernel st_cuda_k_conv[] = {
    {"Conv", "", ST_DT_FLOATS, st_cuda_conv, conv_accepts, conv_prepare, NULL},
    {"ConvTranspose", "", ST_DT_FLOATS, st_cuda_conv_transpose, conv_accepts, NULL, NULL},
    {"MaxPool", "", ST_DT_FLOATS | ST_DT(ST_I8) | ST_DT(ST_U8), st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {"AveragePool", "", ST_DT_FLOATS, st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {"GlobalAveragePool", "", ST_DT_FLOATS, st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {"GlobalMaxPool", "", ST_DT_FLOATS, st_cuda_pool, st_cuda_accepts_no_f64, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
