/*
 * qint.cl — the integer quantization ops (k_qint.c): DynamicQuantizeLinear,
 * MatMulInteger / QLinearMatMul and ConvInteger / QLinearConv.
 *
 * The arithmetic is the CPU's (backends/cpu/k_misc_quant.c, gemm_s8.c's
 * scalar epilogue) step for step, so both backends give the same bytes:
 *   - sums of (x - x_zp) * (w - w_zp) in 32 bits with wrap-around (uint:
 *     signed overflow is undefined in OpenCL C as in C), plus QLinearConv's
 *     int32 bias;
 *   - requantization with the multiplier (a_scale * b_scale) / y_scale as
 *     one f32 expression per element, (float)sum * multiplier, rint (half
 *     to even), NaN to 0, clamped to the type's range less the zero point,
 *     plus the zero point;
 *   - DynamicQuantizeLinear's range over [min(x, 0), max(x, 0)] (NaN
 *     ignored, as the CPU's compares do), scale = (max - min) / 255,
 *     zero point = the quantized -min / scale, then each x / scale
 *     quantized.  Divisions are correctly rounded where the program is
 *     built with -cl-fp32-correctly-rounded-divide-sqrt (cl_program.c).
 * Padding of the integer convs contributes nothing (the spec pads with
 * x's zero point), so padded taps are skipped.
 * The QDQ fusion's ops (passes/fuse_qdq.c, host side k_qlinear.c) are
 * here too, as the CPU's backends/cpu/k_qlinear.c computes them:
 * QLinearLookup (a 256-byte table), QLinearConcat (a table per input),
 * QLinearAdd / QLinearMul ((float)(x - zp) * scale per input, the float op,
 * then x / scale quantized), and QLinearConv's requantization to the
 * fusion's type followed by its table.
 */

/* A 256-entry byte table, by value (a kernel argument), indexed by the
 * stored byte. */
typedef struct st_qtab {
    uchar t[256];
} st_qtab;

/* one 8-bit element, signed or not */
inline int ld8(gcp p, long i, int is_signed) { return is_signed ? (int)((global const char *)p)[i] : (int)p[i]; }

/* round half to even, NaN to 0, saturate to [lo, hi] less zp, add zp */
inline int requant(float f, int zp, int lo, int hi)
{
    float r = isnan(f) ? 0.0f : rint(f);
    float flo = (float)(lo - zp), fhi = (float)(hi - zp);
    r = r < flo ? flo : r > fhi ? fhi : r;
    return (int)r + zp;
}

/* ---- DynamicQuantizeLinear ---- */

/* Part g's min and max (both start at 0) over its chunk of x's elements
 * in row-major order; min and max are exact, so the parts combine to the
 * CPU's result in any order. */
kernel void st_dynq_range(gcp x, st_td xd, long n, long parts, global float *mm)
{
    long g = get_global_id(0);
    if (g >= parts) return;
    long chunk = (n + parts - 1) / parts, i0 = g * chunk, i1 = i0 + chunk < n ? i0 + chunk : n;
    float mn = 0.0f, mx = 0.0f;
    int dt = (int)xd.dt;
    for (long i = i0; i < i1; i++) {
        float v = ld_f(x, td_at(&xd, &xd, i), dt);
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    mm[2 * g] = mn;
    mm[2 * g + 1] = mx;
}

/* One work-item: the parts' range, the scale and zero point (kept after
 * the parts, mm[2 * parts] and [2 * parts + 1], for st_dynq_apply) and
 * the two scalar outputs where present. */
kernel void st_dynq_params(global float *mm, long parts, gp ys, st_td ysd, gp yz, st_td yzd, int has_s, int has_z)
{
    if (get_global_id(0) != 0) return;
    float mn = 0.0f, mx = 0.0f;
    for (long g = 0; g < parts; g++) {
        if (mm[2 * g] < mn) mn = mm[2 * g];
        if (mm[2 * g + 1] > mx) mx = mm[2 * g + 1];
    }
    float scale = (mx - mn) / 255.0f;
    int zp = scale != 0.0f ? requant((0.0f - mn) / scale, 0, 0, 255) : 0;
    mm[2 * parts] = scale;
    mm[2 * parts + 1] = (float)zp;
    if (has_s) st_f(ys, ysd.off, (int)ysd.dt, scale);
    if (has_z) yz[yzd.off] = (uchar)zp;
}

kernel void st_dynq_apply(gp y, st_td yd, gcp x, st_td xd, global const float *mm, long parts)
{
    long i = get_global_id(0), r = get_global_id(1), oy, ox;
    if (td_outside(&yd, i, r)) return;
    oy = td_row(&yd, &yd, r) + i * TD_INNER(yd);
    ox = td_row(&yd, &xd, r) + i * TD_INNER(xd);
    float scale = mm[2 * parts];
    int zp = (int)mm[2 * parts + 1];
    y[oy] = (uchar)(scale != 0.0f ? requant(ld_f(x, ox, (int)xd.dt) / scale, zp, 0, 255) : zp);
}

/* ---- MatMulInteger, QLinearMatMul ---- */

#define QMM_BATCH 4

/* Same layout as st_cl_qmm_op in k_qint.c: an operand's element (batch b,
 * row i, column j) is at off + sum(b[d] * bs[d]) + i * rs + j * cs; a
 * per-row parameter (of A) has cs 0, a per-column one (of B) rs 0, a
 * scalar all strides 0.  dt 0: absent. */
typedef struct st_qmm_op {
    long off, dt, rs, cs, bs[QMM_BATCH];
} st_qmm_op;

/* Same layout as st_cl_qmm_p in k_qint.c. */
typedef struct st_qmm_p {
    long nb, bn[QMM_BATCH], m, n, k;
    /* y, a, b, a_zp, b_zp, a_scale, b_scale, y_scale, y_zp, and
     * QLinearMatMul's int32 bias per column (the QDQ fusion's, of a Gemm) */
    st_qmm_op o[10];
} st_qmm_p;

inline long qmm_at(const st_qmm_op *o, const long *b, long i, long j)
{
    return o->off + b[0] * o->bs[0] + b[1] * o->bs[1] + b[2] * o->bs[2] + b[3] * o->bs[3] + i * o->rs + j * o->cs;
}

/* One output element per work-item: dimension 0 the column, 1 the row,
 * 2 the batch. */
kernel void st_qmatmul(gp y, gcp a, gcp b, gcp az, gcp bz, gcp as, gcp bs, gcp ys, gcp yz, gcp bias, st_qmm_p p)
{
    long j = get_global_id(0), i = get_global_id(1), t = get_global_id(2);
    if (j >= p.n || i >= p.m) return;
    long bi[QMM_BATCH] = {0, 0, 0, 0};
    for (int d = (int)p.nb - 1; d >= 0; d--) {
        bi[d] = t % p.bn[d];
        t /= p.bn[d];
    }
    const st_qmm_op *oy = &p.o[0], *oa = &p.o[1], *ob = &p.o[2];
    int sa = oa->dt == DT_I8, sb = ob->dt == DT_I8;
    int za = p.o[3].dt ? (int)ld_l(az, qmm_at(&p.o[3], bi, i, j), (int)p.o[3].dt) : 0;
    int zb = p.o[4].dt ? (int)ld_l(bz, qmm_at(&p.o[4], bi, i, j), (int)p.o[4].dt) : 0;
    long pa = qmm_at(oa, bi, i, 0), pb = qmm_at(ob, bi, 0, j);
    uint acc = 0;
    for (long q = 0; q < p.k; q++)
        acc += (uint)((ld8(a, pa + q * oa->cs, sa) - za) * (ld8(b, pb + q * ob->rs, sb) - zb));
    long off = qmm_at(oy, bi, i, j);
    if (oy->dt == DT_I32) {
        ((global int *)y)[off] = as_int(acc);
        return;
    }
    if (p.o[9].dt) acc += (uint)ld_l(bias, qmm_at(&p.o[9], bi, i, j), (int)p.o[9].dt);
    float s = ld_f(as, qmm_at(&p.o[5], bi, i, j), (int)p.o[5].dt) * ld_f(bs, qmm_at(&p.o[6], bi, i, j), (int)p.o[6].dt);
    s = s / ld_f(ys, p.o[7].off, (int)p.o[7].dt);
    int zy = p.o[8].dt ? (int)ld_l(yz, p.o[8].off, (int)p.o[8].dt) : 0;
    bool s8 = oy->dt == DT_I8;
    int q = requant((float)as_int(acc) * s, zy, s8 ? -128 : 0, s8 ? 127 : 255);
    y[off] = (uchar)q;
}

/* ---- ConvInteger, QLinearConv ---- */

/* Same layout as st_cl_qconv_p in k_qint.c.  Spatial dims are three, the
 * missing leading ones of size 1 (stride 0 in x, w and y). */
typedef struct st_qconv_p {
    long nimg, groups, cg, mg;
    long is[3], os[3], k[3], s[3], d[3], pb[3];
    long xo, xs[5], wo, ws[5], yo, ys[5];
    long x_dt, w_dt, y_dt;
    /* scalars at their offsets (dt 0: absent); per channel with step */
    long xz_o, xz_dt, wz_o, wz_dt, wz_step, b_o, b_dt, b_step;
    long xsc_o, xsc_dt, wsc_o, wsc_dt, wsc_step, ysc_o, ysc_dt, yz_o, yz_dt;
    /* the QDQ fusion's: the type y_scale and y_zp requantize to (0: y's),
     * and whether the byte then goes through the table */
    long q_dt, has_lut;
} st_qconv_p;

/* QCB output channels of one pixel per work-item: dimension 0 the pixel
 * (neighbouring work-items take neighbouring pixels, which a CPU device
 * vectorises across), 1 the block of channels within a group and the
 * group, 2 the image.  Each x element is loaded once for the QCB
 * channels, and the weights are the same for every work-item of a
 * work-group.  The sums are the same per channel as one output per
 * work-item would make (the order of an integer sum does not matter). */
#define QCB 8

inline void qconv_store(gp y, gcp bias, gcp xsc, gcp wsc, gcp ysc, gcp yz, const st_qconv_p *p, const st_qtab *lut, long off,
                        long m, uint acc)
{
    if (p->y_dt == DT_I32) {
        ((global int *)y)[off] = as_int(acc);
        return;
    }
    if (p->b_dt) acc += (uint)ld_l(bias, p->b_o + m * p->b_step, (int)p->b_dt);
    float s = ld_f(xsc, p->xsc_o, (int)p->xsc_dt) * ld_f(wsc, p->wsc_o + m * p->wsc_step, (int)p->wsc_dt);
    s = s / ld_f(ysc, p->ysc_o, (int)p->ysc_dt);
    int zy = p->yz_dt ? (int)ld_l(yz, p->yz_o, (int)p->yz_dt) : 0;
    bool s8 = (p->q_dt ? p->q_dt : p->y_dt) == DT_I8;
    int q = requant((float)as_int(acc) * s, zy, s8 ? -128 : 0, s8 ? 127 : 255);
    y[off] = p->has_lut ? lut->t[q & 255] : (uchar)q;
}

kernel void st_qconv(gp y, gcp x, gcp w, gcp xz, gcp wz, gcp bias, gcp xsc, gcp wsc, gcp ysc, gcp yz, st_qconv_p p, st_qtab lut)
{
    long pix = get_global_id(0), blk = get_global_id(1), n = get_global_id(2);
    long nblk = (p.mg + QCB - 1) / QCB;
    if (pix >= p.os[0] * p.os[1] * p.os[2] || blk >= p.groups * nblk) return;
    long g = blk / nblk, m0 = g * p.mg + (blk - g * nblk) * QCB;
    int nm = (int)min((long)QCB, (g + 1) * p.mg - m0);
    long o2 = pix % p.os[2], r = pix / p.os[2];
    long o1 = r % p.os[1], o0 = r / p.os[1];
    int sx = p.x_dt == DT_I8, sw = p.w_dt == DT_I8;
    int zx = p.xz_dt ? (int)ld_l(xz, p.xz_o, (int)p.xz_dt) : 0;
    int zw[QCB];
    uint acc[QCB];
    for (int j = 0; j < QCB; j++) {
        zw[j] = p.wz_dt && j < nm ? (int)ld_l(wz, p.wz_o + (m0 + j) * p.wz_step, (int)p.wz_dt) : 0;
        acc[j] = 0;
    }
    /* sum (x - zx)(w - zw) = sum (x - zx) w - zw sum (x - zx), exact in
     * 32-bit wrap-around; offsets within a channel in 32 bits (accepts in
     * k_qint.c refuses an x or w that spans 2^31 elements); the channels
     * past the group's last (j >= nm) read its last one and are not stored */
    uint xsum = 0;
    int st0 = (int)(o0 * p.s[0] - p.pb[0]), st1 = (int)(o1 * p.s[1] - p.pb[1]), st2 = (int)(o2 * p.s[2] - p.pb[2]);
    int is0 = (int)p.is[0], is1 = (int)p.is[1], is2 = (int)p.is[2], k0n = (int)p.k[0], k1n = (int)p.k[1], k2n = (int)p.k[2];
    int d0 = (int)p.d[0], d1 = (int)p.d[1], d2 = (int)p.d[2];
    int xs2 = (int)p.xs[2], xs3 = (int)p.xs[3], xs4 = (int)p.xs[4], ws2 = (int)p.ws[2], ws3 = (int)p.ws[3], ws4 = (int)p.ws[4];
    int wm = (int)p.ws[0];
    for (long c = 0; c < p.cg; c++) {
        gcp xc = x + (p.xo + n * p.xs[0] + (g * p.cg + c) * p.xs[1]);
        gcp wc = w + (p.wo + m0 * p.ws[0] + c * p.ws[1]);
        for (int k0 = 0; k0 < k0n; k0++) {
            int i0 = st0 + k0 * d0;
            if (i0 < 0 || i0 >= is0) continue;
            for (int k1 = 0; k1 < k1n; k1++) {
                int i1 = st1 + k1 * d1;
                if (i1 < 0 || i1 >= is1) continue;
                gcp xr = xc + (i0 * xs2 + i1 * xs3);
                gcp wr = wc + (k0 * ws2 + k1 * ws3);
                for (int k2 = 0; k2 < k2n; k2++) {
                    int i2 = st2 + k2 * d2;
                    if (i2 < 0 || i2 >= is2) continue;
                    int xv = (sx ? (int)((global const char *)xr)[i2 * xs4] : (int)xr[i2 * xs4]) - zx;
                    gcp wo = wr + k2 * ws4;
                    xsum += (uint)xv;
                    if (sw)
                        for (int j = 0; j < QCB; j++) acc[j] += (uint)(xv * (int)((global const char *)wo)[min(j, nm - 1) * wm]);
                    else
                        for (int j = 0; j < QCB; j++) acc[j] += (uint)(xv * (int)wo[min(j, nm - 1) * wm]);
                }
            }
        }
    }
    for (int j = 0; j < QCB; j++) acc[j] -= (uint)zw[j] * xsum;
    long off = p.yo + n * p.ys[0] + o0 * p.ys[2] + o1 * p.ys[3] + o2 * p.ys[4];
    for (int j = 0; j < nm; j++) qconv_store(y, bias, xsc, wsc, ysc, yz, &p, &lut, off + (m0 + j) * p.ys[1], m0 + j, acc[j]);
}

/* ---- QLinearLookup, QLinearConcat: y = table[x] ---- */

kernel void st_qlut(gp y, st_td yd, gcp x, st_td xd, st_qtab t)
{
    long i = get_global_id(0), r = get_global_id(1);
    if (td_outside(&yd, i, r)) return;
    long oy = td_row(&yd, &yd, r) + i * TD_INNER(yd), ox = td_row(&yd, &xd, r) + i * TD_INNER(xd);
    y[oy] = t.t[x[ox]];
}

/* ---- QLinearAdd, QLinearMul ---- */

/* Same layout as st_cl_qbin_p in k_qlinear.c: the constant scales and
 * zero points, read on the host when the command was prepared. */
typedef struct st_qbin_p {
    float sa, sb, sc;
    int za, zb, zc;
    int a_signed, c_signed, mul, pad;
} st_qbin_p;

kernel void st_qbinary(gp y, st_td yd, gcp a, st_td ad, gcp b, st_td bd, st_qbin_p p)
{
    /* each product and sum rounded on its own, as the CPU's C does: a
     * contracted fma would round once and move ties */
#pragma OPENCL FP_CONTRACT OFF
    long i = get_global_id(0), r = get_global_id(1), oy, oa, ob;
    if (td_outside(&yd, i, r)) return;
    td_row3(&yd, &ad, &bd, r, &oy, &oa, &ob);
    oy += i * TD_INNER(yd);
    oa += i * TD_INNER(ad);
    ob += i * TD_INNER(bd);
    float fa = (float)(ld8(a, oa, p.a_signed) - p.za) * p.sa;
    float fb = (float)(ld8(b, ob, p.a_signed) - p.zb) * p.sb;
    float f = p.mul ? fa * fb : fa + fb;
    y[oy] = (uchar)requant(f / p.sc, p.zc, p.c_signed ? -128 : 0, p.c_signed ? 127 : 255);
}
