/*
 * k_conv_transpose.cu — CUDA ConvTranspose (1 to 3 spatial dims): cuDNN's
 * backward-data convolution of the forward conv whose input is Y, with the
 * descriptors and math rules of Conv's (k_conv.cu); bias and activation
 * follow as Conv's epilogue.  Asymmetric pads, or no algorithm that runs,
 * fall back to a direct kernel, one thread per output element
 * (STRATA_CUDA_VERBOSE=1 says so).
 */
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/k_conv.cuh"

#define THREADS 256

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
        if (perf[i].status != CUDNN_STATUS_SUCCESS || !st_cuda_conv_math(x->dtype, ctx->allow_tf32, perf[i].mathType, &math)) continue;
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
        if (r == ST_OK) r = st_cuda_conv_describe(&c->c, s, y, w, x, ctx->allow_tf32, false);
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
    return st_cuda_conv_epilogue(st_stream(k), y, y, b, s->epi);
}

/* ---- the kernel table entry of this file (cuda/table.c) ---- */

/* cuDNN (or the direct kernel) in f32, f16 and bf16; a residual operand is
 * Conv's alone (st_cuda_conv_accepts) */
extern "C" const st_kernel st_cuda_k_conv_transpose[] = {
    {"ConvTranspose", "", ST_DT_FLOATS, st_cuda_conv_transpose, st_cuda_conv_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
