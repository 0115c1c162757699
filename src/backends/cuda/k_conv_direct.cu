/*
 * k_conv_direct.cu — strata's own CUDA conv kernels, which k_conv.cu's
 * st_cuda_conv runs before or instead of cuDNN: the direct kernel (one
 * thread per output element, any strides: the fallback), the depthwise
 * kernels (plane tiles, registers, channels-last) and a network's first
 * conv (3 input channels, 3x3).  Bias and activation are applied before
 * each kernel's one store.
 */
#include <stdlib.h>

#include "backends/cuda/k_conv.cuh"

#define THREADS 256

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

void st_cuda_conv_direct(const st_kctx *k, const st_conv_state *s)
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

bool st_cuda_conv_dw(const st_kctx *k, const st_conv_state *s)
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
bool st_cuda_conv_small_c(const st_kctx *k, const st_conv_state *s)
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
