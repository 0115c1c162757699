/*
 * k_sample.cu — GridSample (2-D) on CUDA, one thread per output element in
 * f32, line for line backends/opencl/sample.cl (which the node tests check
 * on PoCL) and the CPU's rule (backends/cpu/k_misc_sample.c): PyTorch's
 * grid_sample with bilinear, nearest (half to even) and bicubic
 * (A = -0.75), zeros, border and reflection padding.
 */
#include "backends/cuda/common.cuh"
extern "C" {
#include "ops/misc.h"
}

#define THREADS 256

struct gs_td {
    st_dtype dt;
    int64_t n[4], s[4];
};

static gs_td gs_of(const st_operand *o)
{
    gs_td t;
    t.dt = o->dtype;
    for (int d = 0; d < 4; d++) {
        t.n[d] = o->sizes[d];
        t.s[d] = o->strides[d];
    }
    return t;
}

__device__ __forceinline__ float gs_unnorm(float v, int64_t size, bool align)
{
    return align ? (v + 1) / 2 * (float)(size - 1) : ((v + 1) * (float)size - 1) / 2;
}

__device__ float gs_reflect(float v, float lo2, float hi2)
{
    if (lo2 == hi2) return 0;
    float mn = lo2 / 2, span = (hi2 - lo2) / 2;
    v = fabsf(v - mn);
    float extra = fmodf(v, span);
    int64_t flips = (int64_t)floorf(v / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

__device__ float gs_pad(int padding, bool align, float v, int64_t size)
{
    if (padding == ST_GS_BORDER) return fminf(fmaxf(v, 0.0f), (float)(size - 1));
    if (padding == ST_GS_REFLECTION) {
        v = align ? gs_reflect(v, 0, 2.0f * (float)(size - 1)) : gs_reflect(v, -1, 2.0f * (float)size - 1);
        return fminf(fmaxf(v, 0.0f), (float)(size - 1));
    }
    return v;
}

/* An integral coordinate as an index; far outside (or NaN) stays outside. */
__device__ __forceinline__ int64_t gs_index(float v, int64_t size)
{
    if (!(v >= -2.0f && v <= (float)size + 1.0f)) return -((int64_t)1 << 40);
    return (int64_t)v;
}

__device__ __forceinline__ float gs_pixel(const void *x, const gs_td &xd, int64_t base, int64_t iy, int64_t ix)
{
    if (iy < 0 || ix < 0 || iy >= xd.n[2] || ix >= xd.n[3]) return 0;
    return st_ldf(xd.dt, x, base + iy * xd.s[2] + ix * xd.s[3]);
}

__device__ void gs_cubic(float t, float *w)
{
    const float A = -0.75f;
    float x1 = t + 1, x2 = t, x3 = 1 - t, x4 = 2 - t;
    w[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    w[1] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[2] = ((A + 2) * x3 - (A + 3)) * x3 * x3 + 1;
    w[3] = ((A * x4 - 5 * A) * x4 + 8 * A) * x4 - 4 * A;
}

__global__ void gridsample_kernel(gs_td yd, gs_td xd, gs_td gd, int mode, int padding, bool align, void *y, const void *x,
                                  const void *g, int64_t total)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ow = yd.n[3], oh = yd.n[2], C = yd.n[1];
        int64_t ox = i % ow, r = i / ow, oy = r % oh;
        r /= oh;
        int64_t c = r % C, n = r / C, H = xd.n[2], W = xd.n[3];
        int64_t go = n * gd.s[0] + oy * gd.s[1] + ox * gd.s[2];
        float gx = st_ldf(gd.dt, g, go), gy = st_ldf(gd.dt, g, go + gd.s[3]);
        float fx = gs_unnorm(gx, W, align), fy = gs_unnorm(gy, H, align);
        if (mode != ST_GS_BICUBIC) {
            fx = gs_pad(padding, align, fx, W);
            fy = gs_pad(padding, align, fy, H);
        }
        int64_t base = n * xd.s[0] + c * xd.s[1];
        float v;
        if (mode == ST_GS_NEAREST) {
            v = gs_pixel(x, xd, base, gs_index(rintf(fy), H), gs_index(rintf(fx), W));
        } else if (mode == ST_GS_BILINEAR) {
            float x0 = floorf(fx), y0 = floorf(fy), tx = fx - x0, ty = fy - y0;
            int64_t ix = gs_index(x0, W), iy = gs_index(y0, H);
            v = (1 - ty) * ((1 - tx) * gs_pixel(x, xd, base, iy, ix) + tx * gs_pixel(x, xd, base, iy, ix + 1)) +
                ty * ((1 - tx) * gs_pixel(x, xd, base, iy + 1, ix) + tx * gs_pixel(x, xd, base, iy + 1, ix + 1));
        } else {
            float x0 = floorf(fx), y0 = floorf(fy), wx[4], wy[4];
            gs_cubic(fx - x0, wx);
            gs_cubic(fy - y0, wy);
            v = 0;
            for (int a = 0; a < 4; a++) {
                float row = 0, py = gs_pad(padding, align, y0 - 1 + a, H);
                for (int b = 0; b < 4; b++) {
                    float px = gs_pad(padding, align, x0 - 1 + b, W);
                    row += wx[b] * gs_pixel(x, xd, base, gs_index(floorf(py), H), gs_index(floorf(px), W));
                }
                v += wy[a] * row;
            }
        }
        st_stf(yd.dt, y, n * yd.s[0] + c * yd.s[1] + oy * yd.s[2] + ox * yd.s[3], v);
    }
}

static st_status cuda_gridsample(const st_kctx *k)
{
    const st_gridsample_state *s = (const st_gridsample_state *)k->state;
    const st_operand *x = &k->in[0], *g = &k->in[1], *y = &k->out[0];
    int64_t total = st_operand_numel(y);
    if (total == 0) return ST_OK;
    gridsample_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(gs_of(y), gs_of(x), gs_of(g), s->mode, s->padding,
                                                                               s->align_corners, y->data, x->data, g->data, total);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

static bool gridsample_accepts(const st_knode *n, char *why, size_t len)
{
    if (n->views[0].rank != 4) return st_kernel_refuse(why, len, "GridSample over %d spatial dims", n->views[0].rank - 2);
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        st_dtype t = n->views[i].dtype;
        if (t != ST_F32 && t != ST_F16 && t != ST_BF16) return st_kernel_refuse(why, len, "GridSample of %s data", st_dtype_name(t));
    }
    return true;
}

extern "C" const st_kernel st_cuda_k_sample[] = {
    {"GridSample", "", ST_DT_FLOATS, cuda_gridsample, gridsample_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
