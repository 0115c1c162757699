/*
 * k_conv.cu — CUDA Conv (1 to 3 spatial dims).
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
 * The direct kernel and strata's own depthwise and first-conv kernels are
 * in k_conv_direct.cu, ConvTranspose in k_conv_transpose.cu, the pools in
 * k_pool.cu (k_conv.cuh lists the files).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/conv_tune.h"
#include "backends/cuda/ew_rows.cuh"
#include "backends/cuda/k_conv.cuh"
#include "backends/cuda/rows.cuh"

#define THREADS 256

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
st_status st_cuda_conv_epilogue(cudaStream_t stream, const st_operand *y, const st_operand *src, const st_operand *b,
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
    return st_cuda_conv_epilogue(stream, y, y, b, s->epi);
}

/* ---- cuDNN ---- */

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
st_status st_cuda_conv_describe(conv_cache *c, const st_conv_state *s, const st_operand *fx, const st_operand *w,
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
bool st_cuda_conv_math(st_dtype t, bool tf32, cudnnMathType_t cand, cudnnMathType_t *use)
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
    if (!st_cuda_conv_math(t, ctx->allow_tf32, cand, use)) return false;
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
        st_status r = st_cuda_conv_describe(c, s, x, w, y, ctx->allow_tf32, true);
        if (r == ST_OK) r = choose_forward(c, ctx, x->dtype, x->data, c->wk, y->data, ctx->workspace, ctx->workspace_bytes);
        if (r == ST_OK) r = st_cuda_conv_epilogue(st_stream(k), y, y, b, s->epi);
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
    st_status r = st_cuda_conv_describe(c, s, x, w, y, ctx->allow_tf32, false);
    if (r == ST_OK) r = choose_forward(c, ctx, x->dtype, x->data, w->data, y->data, ctx->workspace, ctx->workspace_bytes);
    if (r == ST_OK) r = st_cuda_conv_epilogue(st_stream(k), y, y, b, s->epi);
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
    st_status r = st_cuda_conv_describe(c, s, &px, w, &py, ctx->allow_tf32, krsc);
    if (r == ST_OK) r = pack_x(stream, &px, x);
    if (r == ST_OK)
        r = choose_forward(c, ctx, x->dtype, px.data, krsc ? c->wk : w->data, py.data, (char *)ctx->workspace + used,
                           ctx->workspace_bytes - used);
    if (r == ST_OK) r = st_cuda_conv_epilogue(stream, y, &py, b, s->epi);
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
    if (st_cuda_conv_dw(k, s)) return ST_OK;
    if (st_cuda_conv_small_c(k, s)) return ST_OK;
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
        return st_cuda_conv_epilogue(stream, y, y, b, s->epi);
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
        return st_cuda_conv_epilogue(stream, y, &py, b, s->epi);
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
            st_cuda_conv_direct(k, s);
            return ST_OK;
        }
        *res_done = true;
        return st_cf_run(h, c->cf, x->data, c->wk, b ? b->data : NULL, y->data, r ? r->data : NULL, ctx->workspace);
    default:
        st_cuda_conv_direct(k, s);
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

bool st_cuda_conv_accepts(const st_knode *n, char *why, size_t len)
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
    {"Conv", "", ST_DT_FLOATS, st_cuda_conv, st_cuda_conv_accepts, conv_prepare, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
