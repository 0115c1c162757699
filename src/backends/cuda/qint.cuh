/*
 * qint.cuh — what the CUDA integer conv kernels share (k_qint.cu's direct
 * kernel and qconv_igemm.cu's tensor-core one): the arguments of a
 * ConvInteger / QLinearConv, one 8-bit load, and the epilogue that turns
 * an int32 sum into the output element.  One epilogue for both, so the
 * fast kernel stays bit-identical with the direct one by construction
 * (and with the CPU's k_misc_quant.c / gemm_s8.c scalar epilogue):
 *   - ConvInteger: the wrapped int32 sum;
 *   - QLinearConv: plus the int32 bias, then (float)sum times the
 *     multiplier (x_scale * w_scale) / y_scale, each step rounded once
 *     (__fmul_rn / __fdiv_rn: no contraction, IEEE division), rintf (half
 *     to even), NaN to 0, clamped to the range (of the QDQ fusion's
 *     requantization type where it set one) less the zero point, plus the
 *     zero point, then through the fusion's table if it made one.
 */
#ifndef ST_CUDA_QINT_CUH
#define ST_CUDA_QINT_CUH

#include "backends/cuda/common.cuh"

/* Spatial dims are three, the missing leading ones of size 1 (stride 0). */
struct qconv_args {
    int64_t total, nimg, groups, cg, mg;
    int64_t is[3], os[3], k[3], s[3], d[3], pb[3];
    int64_t xs[5], ws[5], ys[5];
    const void *x, *w, *xz, *wz, *bias, *xsc, *wsc, *ysc, *yz;   /* NULL: absent */
    void *y;
    st_dtype x_dt, w_dt, y_dt, xz_dt, wz_dt, b_dt, xsc_dt, wsc_dt, ysc_dt, yz_dt;
    int64_t wz_step, b_step, wsc_step;
    /* the QDQ fusion's: the type to requantize to (y's when 0) and the
     * table the byte then goes through */
    st_dtype q_dt;
    bool has_lut;
    uint8_t lut[256];
};

/* one 8-bit element, signed or not */
__device__ __forceinline__ int ld8(const void *p, int64_t i, bool is_signed)
{
    return is_signed ? (int)((const int8_t *)p)[i] : (int)((const uint8_t *)p)[i];
}

/* round half to even, NaN to 0, saturate to [lo, hi] less zp, add zp */
__device__ __forceinline__ int requant(float f, int zp, int lo, int hi)
{
    float r = isnan(f) ? 0.0f : rintf(f);
    float flo = (float)(lo - zp), fhi = (float)(hi - zp);
    r = r < flo ? flo : r > fhi ? fhi : r;
    return (int)r + zp;
}

/* Output channel m's element at off from its sum of
 * (x - x_zp) * (w - w_zp), wrapped to 32 bits. */
__device__ __forceinline__ void qconv_store(const qconv_args &p, uint32_t acc, int64_t m, int64_t off)
{
    if (p.y_dt == ST_I32) {
        ((int32_t *)p.y)[off] = (int32_t)acc;
        return;
    }
    if (p.bias) acc += (uint32_t)st_ldi(p.b_dt, p.bias, m * p.b_step);
    float s = __fmul_rn(st_ldf(p.xsc_dt, p.xsc, 0), st_ldf(p.wsc_dt, p.wsc, m * p.wsc_step));
    s = __fdiv_rn(s, st_ldf(p.ysc_dt, p.ysc, 0));
    int zy = p.yz ? (int)st_ldi(p.yz_dt, p.yz, 0) : 0;
    bool s8 = (p.q_dt ? p.q_dt : p.y_dt) == ST_I8;
    int q = requant(__fmul_rn((float)(int32_t)acc, s), zy, s8 ? -128 : 0, s8 ? 127 : 255);
    ((uint8_t *)p.y)[off] = p.has_lut ? p.lut[q & 255] : (uint8_t)q;
}

/* qconv_igemm.cu: whether the implicit-GEMM kernel takes this conv, and
 * its launch (only after it said yes). */
bool st_qconv_igemm_takes(const qconv_args &p);
void st_qconv_igemm(const qconv_args &p, const st_cuda_ctx *ctx);

#endif
