/*
 * k_conv_affine.cu — a CUDA Conv's per-channel affine epilogue
 * (st_conv_state.ch_scale ... post_shift, passes/fuse_affine.c): after
 * k_conv.cu ran conv + bias, y = act(y S[m] + T[m]) PS[m] + PT[m] in one
 * pass over the output, with the maps uploaded once into the command's
 * cache.  It includes no header that launches kernels (k_conv.cuh says
 * why that matters to the module's size).
 */
#include <stdlib.h>

#include "backends/cuda/k_conv.cuh"

#define THREADS 256

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
        return st_cuda_check((int)err, "cudaMalloc (Conv's affine epilogue)");
    }
    /* pageable source: the copy is done when this returns, so h may go */
    err = cudaMemcpyAsync(c->aff, h, bytes, cudaMemcpyHostToDevice, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    free(h);
    return st_cuda_check((int)err, "cudaMemcpyAsync (Conv's affine epilogue)");
}

/* The maps and the activation over Y, which holds conv + bias; on the
 * command's first run (never captured) the maps go to c->aff first. */
st_status st_cuda_conv_affine(const st_kctx *k, const st_conv_state *s, conv_cache *c)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    if (!c->aff) {
        if (ctx->capturing)
            return st_error(ST_ERR_BACKEND, "cuda: Conv: no affine epilogue on the device (the command's first run was captured)");
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
