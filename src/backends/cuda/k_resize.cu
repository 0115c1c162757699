/*
 * k_resize.cu — the CUDA kernel of Resize/Upsample.  (ConvTranspose, the
 * family's other op, shares cuDNN's set-up with Conv in k_conv.cu.)
 *
 * The shape rule (ops/resize.c) has already turned every coordinate
 * transformation mode into tap tables: per axis and output coordinate,
 * the input coordinates and weights (ops/resize.h).  The first,
 * uncaptured run copies the tables to device memory kept in the command's
 * slot; then one thread per output element combines its taps over all
 * axes: nearest copies one element (any dtype), linear and cubic weigh
 * 2 or 4 taps per resized axis in f32 (f16/bf16 data computed in f32).
 * tf_crop_and_resize's coordinates outside the input give the
 * extrapolation value.
 */
#include "backends/cuda/rows.cuh"
extern "C" {
#include "ops/resize.h"
}

#define THREADS 256

struct rs_args {
    const st_resize_tap *taps;     /* device copy */
    const void *x;
    void *y;
    st_dtype xt, yt;
    int rank, es;
    bool nearest;
    float extrapolation;
    unsigned char ext[16];         /* the extrapolation value in y's dtype */
    int ntaps[ST_MAX_RANK];
    int64_t out[ST_MAX_RANK], first[ST_MAX_RANK], xs[ST_MAX_RANK], ys[ST_MAX_RANK];
    int64_t n;
};

__global__ void resize_kernel(rs_args a)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i, yo = 0, tb[ST_MAX_RANK];
        bool outside = false;
        for (int d = a.rank - 1; d >= 0; d--) {
            int64_t c = r % a.out[d];
            r /= a.out[d];
            yo += c * a.ys[d];
            tb[d] = a.first[d] + c * a.ntaps[d];
            outside |= a.taps[tb[d]].outside;
        }
        if (a.nearest || outside) {
            const unsigned char *src = a.ext;
            if (!outside) {
                int64_t xo = 0;
                for (int d = 0; d < a.rank; d++) xo += a.taps[tb[d]].idx * a.xs[d];
                src = (const unsigned char *)a.x + xo * a.es;
            }
            unsigned char *dst = (unsigned char *)a.y + yo * a.es;
            for (int b = 0; b < a.es; b++) dst[b] = src[b];
            continue;
        }
        /* every combination of the axes' taps */
        int64_t combos = 1;
        for (int d = 0; d < a.rank; d++) combos *= a.ntaps[d];
        float acc = 0.0f;
        for (int64_t c = 0; c < combos; c++) {
            int64_t rest = c, xo = 0;
            float w = 1.0f;
            for (int d = a.rank - 1; d >= 0; d--) {
                int t = (int)(rest % a.ntaps[d]);
                rest /= a.ntaps[d];
                const st_resize_tap &tp = a.taps[tb[d] + t];
                xo += tp.idx * a.xs[d];
                w *= tp.wf;
            }
            acc += w * st_ldf(a.xt, a.x, xo);
        }
        if (st_is_f32_class(a.yt)) st_stf(a.yt, a.y, yo, acc);
        else st_sti(a.yt, a.y, yo, (int64_t)acc);
    }
}

static bool float_class(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

struct rs_cache {
    st_resize_tap *taps;
};

static void rs_cache_free(void *p)
{
    rs_cache *c = (rs_cache *)p;
    if (!c) return;
    if (c->taps) cudaFree(c->taps);
    free(c);
}

extern "C" st_status st_cuda_resize(const st_kctx *k)
{
    const st_resize_state *s = (const st_resize_state *)k->state;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    cudaStream_t stream = st_stream(k);
    if (st_operand_numel(y) == 0) return ST_OK;
    if (s->rank == 0) return st_pack(stream, y, x);
    rs_cache *c = (rs_cache *)ctx->slot->data;
    if (!c) {
        if (ctx->capturing)
            return st_error(ST_ERR_BACKEND, "cuda: Resize: no tap tables on the device (the command's first run was captured)");
        c = (rs_cache *)calloc(1, sizeof *c);
        if (!c) return st_error(ST_ERR_NOMEM, "out of memory");
        ctx->slot->data = c;
        ctx->slot->release = rs_cache_free;
        size_t bytes = (size_t)s->n_taps * sizeof(st_resize_tap);
        st_cuda_exclusive_lock(); /* not capturing (above): no capture lock is held here */
        cudaError_t err = cudaMalloc((void **)&c->taps, bytes ? bytes : 1);
        st_cuda_exclusive_unlock();
        ST_TRY(st_cuda_ok(err, "cudaMalloc (Resize tap tables)"));
        /* the plan's state outlives the slot, so the asynchronous copy's
         * source stays valid; stream order puts it before the kernel */
        if (bytes)
            ST_TRY(st_cuda_ok(cudaMemcpyAsync(c->taps, s->taps, bytes, cudaMemcpyHostToDevice, stream),
                                 "cudaMemcpyAsync (Resize tap tables)"));
    }
    rs_args a;
    memset(&a, 0, sizeof a);
    a.taps = c->taps;
    a.x = x->data;
    a.y = y->data;
    a.xt = x->dtype;
    a.yt = y->dtype;
    a.rank = s->rank;
    a.es = (int)st_dtype_size(y->dtype);
    a.nearest = s->nearest;
    a.extrapolation = (float)s->extrapolation;
    st_store_f64(y->dtype, a.ext, s->extrapolation);
    for (int d = 0; d < s->rank; d++) {
        a.ntaps[d] = s->ntaps[d];
        a.out[d] = s->out[d];
        a.first[d] = s->first[d];
        a.xs[d] = x->strides[d];
        a.ys[d] = y->strides[d];
    }
    a.n = st_operand_numel(y);
    resize_kernel<<<st_blocks(a.n, THREADS), THREADS, 0, stream>>>(a);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

static bool resize_accepts(const st_knode *n, char *why, size_t len)
{
    const st_resize_state *s = (const st_resize_state *)n->state;
    st_dtype t = n->views[0].dtype;
    if (!s->nearest && !float_class(t))
        return st_kernel_refuse(why, len, "%s interpolation of %s data", n->op->name, st_dtype_name(t));
    if (st_dtype_size(t) > 8) return st_kernel_refuse(why, len, "Resize of %s data", st_dtype_name(t));
    return true;
}

extern "C" const st_kernel st_cuda_k_resize[] = {
    {"Resize", "", ST_DT_ALL, st_cuda_resize, resize_accepts, NULL, NULL},
    {"Upsample", "", ST_DT_ALL, st_cuda_resize, resize_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
