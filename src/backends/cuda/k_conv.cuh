/*
 * k_conv.cuh — what the CUDA conv files share (shape rule: ops/conv.c):
 *   k_conv.cu            Conv: the path choice, cuDNN (the fused graph,
 *                        strided and packed operands), patchify as one
 *                        cuBLASLt GEMM, the bias and activation epilogue,
 *                        the residual that follows
 *   k_conv_direct.cu     strata's own conv kernels: the direct fallback,
 *                        depthwise convs, a network's first conv (C = 3)
 *   k_conv_transpose.cu  ConvTranspose (cuDNN's backward-data conv)
 *   k_pool.cu            the pools
 * Each file keeps its kernels' table lines (cuda/table.c).
 *
 * No kernels here, and no header that has some (ew_rows.cuh, rows.cuh):
 * every file that includes one carries its own copy of its kernels.
 * CMakeLists.txt compresses these files' device code, as fatbinary did
 * for the one image they were (it compresses only images over 10 MB).
 */
#ifndef ST_CUDA_K_CONV_CUH
#define ST_CUDA_K_CONV_CUH

#include <cudnn.h>

#include "backends/cuda/conv_fused.h"
#include "backends/cuda/vec.cuh"
extern "C" {
#include "backends/cuda/cuda_internal.h"
#include "ops/conv.h"
}

/* cuDNN's status as strata's: an error naming the call */
static inline st_status dnn(cudnnStatus_t e, const char *what)
{
    if (e == CUDNN_STATUS_SUCCESS) return ST_OK;
    return st_error(ST_ERR_BACKEND, "cudnn: %s: %s", what, cudnnGetErrorString(e));
}

/* STRATA_CUDA_VERBOSE=1: say on stderr which path a conv takes */
static inline bool verbose(void)
{
    const char *v = getenv("STRATA_CUDA_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

/* ---- geometry of the direct kernels and pools: spatial dims padded to 3 ---- */

struct geo {
    int64_t isz[3], osz[3], k[3], st[3], dl[3], pb[3], pe[3];
    int64_t xs[5], ys[5], ws[5];      /* n, c, then 3 spatial (0 on padding dims) */
};

static inline geo geo_make(const st_conv_state *s, const st_operand *x, const st_operand *y, const st_operand *w)
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

/* The channels-last depthwise and global-pool kernels, on unless
 * STRATA_CUDA_CL_DW_POOL=0: on an H200 in f16 at batch 32 they took
 * MobileNetV3-L from 2.18 to 1.69 ms and EfficientNet-B0 from 3.73 to
 * 3.11 (bench/RESULTS.md, 2026-12-04, fourth session). */
static inline bool cl_dw_pool(const char *which)
{
    /* =dw or =pool keeps one of the two (to tell them apart on a GPU) */
    const char *e = getenv("STRATA_CUDA_CL_DW_POOL");
    if (!e) return true;
    if (strcmp(e, "0") == 0) return false;
    if (strcmp(e, "dw") == 0 || strcmp(e, "pool") == 0) return strcmp(e, which) == 0;
    return true;
}

/* ---- cuDNN's legacy API: the state Conv and ConvTranspose keep ---- */

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
    char key[640];                   /* the problem, for conv_tune.c (st_cuda_conv_describe) */
    bool set_up;                     /* the first run's path choice was made (setup_conv) */
    float *aff;                      /* the affine epilogue's S, T, PS, PT on the device (k_conv.cu's conv_affine) */
};

/* ---- across the files ---- */

/* k_conv.cu: y = act(src + b) per channel, as the cuDNN paths finish */
st_status st_cuda_conv_epilogue(cudaStream_t stream, const st_operand *y, const st_operand *src, const st_operand *b,
                                st_epilogue epi);
/* k_conv.cu: the descriptors and math of a problem for cuDNN */
st_status st_cuda_conv_describe(conv_cache *c, const st_conv_state *s, const st_operand *fx, const st_operand *w,
                                const st_operand *fy, bool tf32, bool krsc);
bool st_cuda_conv_math(st_dtype t, bool tf32, cudnnMathType_t cand, cudnnMathType_t *use);
/* k_conv.cu: Conv's and ConvTranspose's accepts */
bool st_cuda_conv_accepts(const st_knode *n, char *why, size_t len);

/* k_conv_direct.cu: the direct fallback, any conv */
void st_cuda_conv_direct(const st_kctx *k, const st_conv_state *s);
/* k_conv_direct.cu: false (nothing launched) when the conv is not one */
bool st_cuda_conv_dw(const st_kctx *k, const st_conv_state *s);
bool st_cuda_conv_small_c(const st_kctx *k, const st_conv_state *s);

#endif
