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

/* ---- nearest over the last two axes, the others left as they are ----
 *
 * YOLO's and FPN's 2x upsampling: the general kernel above spends 64-bit
 * divisions and a tap-table walk on every element and copies bytes one by
 * one (300 us for YOLOv8n's 26 MB upsample at batch 32 on an H200).  Here
 * the input row and column of each output row and column come from two
 * int32 maps, the leading axes merge into one outer index, the element
 * is copied whole, and the index math is 32-bit. */
struct nn2_args {
    const int *hmap, *wmap;        /* device: input row per output row, input column per output column */
    const void *x;
    void *y;
    unsigned ho, wo, l1, n;        /* l1: the inner leading group's size (1 when there is one group) */
    int64_t xs0, xs1, xsh, xsw, ys0, ys1, ysh, ysw;
};

template <typename T>
__global__ void resize_nn2_kernel(nn2_args a)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        unsigned w = i % a.wo, t = i / a.wo, h = t % a.ho, o = t / a.ho, o1 = o % a.l1, o0 = o / a.l1;
        const T *x = (const T *)a.x + o0 * a.xs0 + o1 * a.xs1 + __ldg(a.hmap + h) * a.xsh + __ldg(a.wmap + w) * a.xsw;
        ((T *)a.y)[o0 * a.ys0 + o1 * a.ys1 + h * a.ysh + w * a.ysw] = *x;
    }
}

/* The same copy when the inner leading group is the channel axis and
 * steps by one element in both operands (a channels-last value,
 * passes/channels_last.c): the channels of one output pixel are one run
 * of l1 elements, copied in units of U (16 bytes where sizes and
 * alignment allow).  With the kernel above, neighbouring threads touched
 * elements C apart: YOLOv8n's two upsamples at batch 32 in f16 took 0.61
 * ms on an H200 (about a tenth of the bandwidth). */
template <typename U>
__global__ void resize_nn2_cl_kernel(nn2_args a, unsigned units, unsigned es)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        unsigned u = i % units, t = i / units, w = t % a.wo, t2 = t / a.wo, h = t2 % a.ho, o0 = t2 / a.ho;
        const char *x = (const char *)a.x + (o0 * a.xs0 + __ldg(a.hmap + h) * a.xsh + __ldg(a.wmap + w) * a.xsw) * es;
        char *y = (char *)a.y + (o0 * a.ys0 + h * a.ysh + w * a.ysw) * es;
        ((U *)y)[u] = ((const U *)x)[u];
    }
}

/* The leading axes (all but the last two) as at most two groups of
 * (size, x stride, y stride), unit axes dropped and neighbours merged
 * where both operands step evenly across them: a batch and a channel axis
 * stay two groups when Y is a concat's slice.  False if more remain. */
static bool nn2_groups(int r, const int64_t *size, const st_operand *x, const st_operand *y, int64_t g[2][3])
{
    int n = 0;
    for (int d = 0; d < r - 2; d++) {
        if (size[d] == 1) continue;
        if (n > 0 && g[n - 1][1] == x->strides[d] * size[d] && g[n - 1][2] == y->strides[d] * size[d]) {
            g[n - 1][0] *= size[d];
            g[n - 1][1] = x->strides[d];
            g[n - 1][2] = y->strides[d];
            continue;
        }
        if (n == 2) return false;
        g[n][0] = size[d], g[n][1] = x->strides[d], g[n][2] = y->strides[d];
        n++;
    }
    for (; n < 2; n++) g[n][0] = 1, g[n][1] = 0, g[n][2] = 0;
    return true;
}

/* Whether the fast path takes this Resize: nearest, no crop, the leading
 * axes unresized and in at most two groups. */
static bool nn2_fits(const st_resize_state *s, const st_operand *x, const st_operand *y)
{
    int r = s->rank;
    size_t es = st_dtype_size(y->dtype);
    int64_t g[2][3];
    if (!s->nearest || s->crop || r < 2 || !(es == 1 || es == 2 || es == 4 || es == 8)) return false;
    if (st_operand_numel(y) >= (int64_t)1 << 31) return false;
    for (int d = 0; d < r - 2; d++) {
        if (s->in[d] != s->out[d]) return false;
        for (int64_t c = 0; c < s->out[d]; c++)
            if (s->taps[s->first[d] + c].idx != c) return false;
    }
    return nn2_groups(r, s->out, x, y, g);
}

struct rs_cache {
    st_resize_tap *taps;
    int *maps;                     /* the fast path's row and column maps, or NULL */
    int *host_maps;                /* their host copy, the asynchronous copy's source */
};

static void rs_cache_free(void *p)
{
    rs_cache *c = (rs_cache *)p;
    if (!c) return;
    if (c->taps) cudaFree(c->taps);
    if (c->maps) cudaFree(c->maps);
    free(c->host_maps);
    free(c);
}

/* First run: the two maps on the device.  The host copy stays in the
 * cache: the copy is asynchronous, in stream order before the kernel (a
 * synchronous copy could land inside another thread's graph capture). */
static st_status nn2_maps(rs_cache *c, const st_resize_state *s, cudaStream_t stream)
{
    int r = s->rank;
    int64_t ho = s->out[r - 2], wo = s->out[r - 1];
    size_t bytes = (size_t)(ho + wo) * sizeof(int);
    free(c->host_maps); /* a retry after a failed first run */
    c->host_maps = (int *)malloc(bytes);
    if (!c->host_maps) return st_error(ST_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < ho; i++) c->host_maps[i] = (int)s->taps[s->first[r - 2] + i].idx;
    for (int64_t i = 0; i < wo; i++) c->host_maps[ho + i] = (int)s->taps[s->first[r - 1] + i].idx;
    st_cuda_exclusive_lock();
    cudaError_t err = cudaMalloc((void **)&c->maps, bytes);
    st_cuda_exclusive_unlock();
    if (err != cudaSuccess) {
        c->maps = NULL;
        return st_cuda_ok(err, "cudaMalloc (Resize row and column maps)");
    }
    return st_cuda_ok(cudaMemcpyAsync(c->maps, c->host_maps, bytes, cudaMemcpyHostToDevice, stream),
                      "cudaMemcpyAsync (Resize row and column maps)");
}

/* The 2x nearest Resize; over channels-last values it moves channel runs,
 * unless STRATA_CUDA_CL_COPY=0 (the element-per-thread kernel then runs,
 * for A/B runs; the same knob governs k_conv.cu's channels-last pool). */
static st_status nn2_launch(const rs_cache *c, const st_resize_state *s, const st_operand *x, const st_operand *y,
                            cudaStream_t stream)
{
    int r = s->rank;
    nn2_args a;
    a.hmap = c->maps;
    a.wmap = c->maps + s->out[r - 2];
    a.x = x->data;
    a.y = y->data;
    a.ho = (unsigned)s->out[r - 2];
    a.wo = (unsigned)s->out[r - 1];
    a.n = (unsigned)st_operand_numel(y);
    int64_t g[2][3];
    nn2_groups(r, s->out, x, y, g); /* true: nn2_fits checked it */
    /* g[0] is the outer group, g[1] the inner; with one group it is g[0] */
    bool two = g[1][0] > 1;
    a.l1 = (unsigned)(two ? g[1][0] : 1);
    a.xs0 = g[0][1], a.ys0 = g[0][2];
    a.xs1 = two ? g[1][1] : 0, a.ys1 = two ? g[1][2] : 0;
    a.xsh = x->strides[r - 2], a.xsw = x->strides[r - 1];
    a.ysh = y->strides[r - 2], a.ysw = y->strides[r - 1];
    size_t es = st_dtype_size(y->dtype);
    /* one group only (a batch of one): it is the channel group if it steps by one */
    if (!two && g[0][0] > 1 && g[0][1] == 1 && g[0][2] == 1) {
        a.l1 = (unsigned)g[0][0];
        a.xs1 = a.ys1 = 1;
        a.xs0 = a.ys0 = 0;
        two = true;
    }
    if (two && a.xs1 == 1 && a.ys1 == 1 && !st_knob_off("STRATA_CUDA_CL_COPY")) {
        /* the widest unit that every offset, stride and run is a multiple of */
        uint64_t m = (uint64_t)(a.l1 * es) | (uint64_t)(a.xs0 * es) | (uint64_t)(a.xsh * es) | (uint64_t)(a.xsw * es) |
                     (uint64_t)(a.ys0 * es) | (uint64_t)(a.ysh * es) | (uint64_t)(a.ysw * es) | (uint64_t)(uintptr_t)a.x |
                     (uint64_t)(uintptr_t)a.y;
        unsigned ub = m % 16 == 0 ? 16 : m % 8 == 0 ? 8 : m % 4 == 0 ? 4 : m % 2 == 0 ? 2 : 1;
        unsigned units = (unsigned)(a.l1 * es / ub);
        a.n = (unsigned)(st_operand_numel(y) / a.l1 * units);
        unsigned blocks = (unsigned)st_blocks(a.n, THREADS);
        switch (ub) {
        case 16: resize_nn2_cl_kernel<uint4><<<blocks, THREADS, 0, stream>>>(a, units, (unsigned)es); break;
        case 8: resize_nn2_cl_kernel<uint2><<<blocks, THREADS, 0, stream>>>(a, units, (unsigned)es); break;
        case 4: resize_nn2_cl_kernel<uint32_t><<<blocks, THREADS, 0, stream>>>(a, units, (unsigned)es); break;
        case 2: resize_nn2_cl_kernel<uint16_t><<<blocks, THREADS, 0, stream>>>(a, units, (unsigned)es); break;
        default: resize_nn2_cl_kernel<uint8_t><<<blocks, THREADS, 0, stream>>>(a, units, (unsigned)es); break;
        }
        return ST_OK;
    }
    unsigned blocks = (unsigned)st_blocks(a.n, THREADS);
    switch (es) {
    case 1: resize_nn2_kernel<uint8_t><<<blocks, THREADS, 0, stream>>>(a); break;
    case 2: resize_nn2_kernel<uint16_t><<<blocks, THREADS, 0, stream>>>(a); break;
    case 4: resize_nn2_kernel<uint32_t><<<blocks, THREADS, 0, stream>>>(a); break;
    default: resize_nn2_kernel<uint64_t><<<blocks, THREADS, 0, stream>>>(a); break;
    }
    return ST_OK;
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
    if (nn2_fits(s, x, y)) {
        if (!c->maps) {
            if (ctx->capturing)
                return st_error(ST_ERR_BACKEND, "cuda: Resize: no row and column maps on the device (the command's first run was captured)");
            ST_TRY(nn2_maps(c, s, stream));
        }
        return nn2_launch(c, s, x, y, stream);
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
