/*
 * k_quant.cu — QuantizeLinear and DequantizeLinear on CUDA, per tensor or
 * per axis (the blocked form of opset 21 stays on the CPU: accepts
 * refuses it).  The arithmetic is the CPU's (backends/cpu/k_misc_quant.c)
 * step for step so both give the same integers: x / scale correctly
 * rounded (nvcc's default -prec-div=true; strata never builds with
 * --use_fast_math), rintf (half to even), NaN to the zero point,
 * saturation.  Why on the device: otherwise each Q/DQ pair of a QDQ model
 * is two transfers around a CPU node.
 */
#include "backends/cuda/common.cuh"
#include "ops/misc.h"

#define THREADS 256

static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }
static bool int_type(st_dtype t) { return t == ST_U8 || t == ST_I8 || t == ST_U16 || t == ST_I16; }
static int64_t lo_of(st_dtype t) { return t == ST_I8 ? -128 : t == ST_I16 ? -32768 : 0; }
static int64_t hi_of(st_dtype t) { return t == ST_I8 ? 127 : t == ST_I16 ? 32767 : t == ST_U16 ? 65535 : 255; }

static bool accepts_quant(const st_knode *n, char *why, size_t len, bool dequant)
{
    const st_quant_state *s = (const st_quant_state *)n->state;
    if (s->block > 0) return st_kernel_refuse(why, len, "blocked quantization (block_size %lld)", (long long)s->block);
    st_dtype x = n->views[0].dtype, y = n->views[n->n_in].dtype;
    bool ok = dequant ? (int_type(x) || x == ST_I32) && f32_family(y) : (f32_family(x) || x == ST_I32) && int_type(y);
    if (!ok) return st_kernel_refuse(why, len, "this input and output dtype pair");
    if (!f32_family(n->views[1].dtype)) return st_kernel_refuse(why, len, "a float64 scale");
    return true;
}

static bool accepts_q(const st_knode *n, char *why, size_t len) { return accepts_quant(n, why, len, false); }
static bool accepts_dq(const st_knode *n, char *why, size_t len) { return accepts_quant(n, why, len, true); }

struct quant_args {
    st_walk w;                        /* operands: y, x, scale, zero point */
    const void *x, *s, *z;
    void *y;
    st_dtype xt, st, zt, yt;
    bool dequant, has_z;
    int64_t lo, hi;
};

__global__ void quant_kernel(quant_args p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(p.w, i, off);
        int64_t zp = p.has_z ? st_ldi(p.zt, p.z, off[3]) : 0;
        float scale = st_ldf(p.st, p.s, off[2]);
        if (p.dequant) {
            st_stf(p.yt, p.y, off[0], (float)(st_ldi(p.xt, p.x, off[1]) - zp) * scale);
            continue;
        }
        float v = __fdiv_rn(st_ldf(p.xt, p.x, off[1]), scale);
        float r = isnan(v) ? 0.0f : rintf(v);
        int64_t q;
        if (r < (float)(p.lo - zp)) q = p.lo;
        else if (r > (float)(p.hi - zp)) q = p.hi;
        else {
            q = (int64_t)r + zp;
            q = q < p.lo ? p.lo : q > p.hi ? p.hi : q;
        }
        st_sti(p.yt, p.y, off[0], q);
    }
}

static st_status run_quant(const st_kctx *k, bool dequant)
{
    const st_quant_state *s = (const st_quant_state *)k->state;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *y = &k->out[0];
    const st_operand *zp = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    /* scale and zero point: one value (strides 0), or one per index of
     * the axis (that axis's stride, 0 elsewhere) */
    int64_t ss[ST_MAX_RANK] = {0}, sz[ST_MAX_RANK] = {0};
    if (s->axis >= 0) {
        ss[s->axis] = sc->strides[0];
        if (zp) sz[s->axis] = zp->strides[0];
    }
    quant_args p;
    p.w = st_walk4(y->rank, y->sizes, y->strides, x->strides, ss, sz);
    if (p.w.n == 0) return ST_OK;
    p.x = x->data;
    p.s = sc->data;
    p.z = zp ? zp->data : sc->data;
    p.y = y->data;
    p.xt = x->dtype;
    p.st = sc->dtype;
    p.zt = zp ? zp->dtype : ST_U8;
    p.yt = y->dtype;
    p.dequant = dequant;
    p.has_z = zp != NULL;
    p.lo = lo_of(y->dtype);
    p.hi = hi_of(y->dtype);
    quant_kernel<<<st_blocks(p.w.n, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

static st_status st_cuda_quantize(const st_kctx *k) { return run_quant(k, false); }
static st_status st_cuda_dequantize(const st_kctx *k) { return run_quant(k, true); }

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

extern "C" const st_kernel st_cuda_k_quant[] = {
    {"QuantizeLinear", "", ST_CUDA_DT, st_cuda_quantize, accepts_q, NULL, NULL},
    {"DequantizeLinear", "", ST_CUDA_DT, st_cuda_dequantize, accepts_dq, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
