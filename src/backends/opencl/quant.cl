/*
 * quant.cl — QuantizeLinear and DequantizeLinear (k_quant.c), per tensor
 * or per axis: the scale and zero point come with strides in the
 * output's shape, 0 on every dim but the axis.  The arithmetic is the
 * CPU's (backends/cpu/k_misc_quant.c) step for step, so both backends give
 * the same integers: x / scale correctly rounded (the program is built
 * with -cl-fp32-correctly-rounded-divide-sqrt where the device has it),
 * rint (half to even), NaN to the zero point, saturation.
 */

kernel void st_quant(gp y, st_td yd, gcp x, st_td xd, gcp s, st_td sd, gcp z, st_td zd, int dequant, int has_z,
                     long lo, long hi)
{
    long i = get_global_id(0), r = get_global_id(1), oy, ox, os;
    if (td_outside(&yd, i, r)) return;
    td_row3(&yd, &xd, &sd, r, &oy, &ox, &os);
    oy += i * TD_INNER(yd);
    ox += i * TD_INNER(xd);
    os += i * TD_INNER(sd);
    long zp = has_z ? ld_l(z, td_row(&yd, &zd, r) + i * TD_INNER(zd), (int)zd.dt) : 0;
    float scale = ld_f(s, os, (int)sd.dt);
    if (dequant) {
        st_f(y, oy, (int)yd.dt, (float)(ld_l(x, ox, (int)xd.dt) - zp) * scale);
        return;
    }
    float v = ld_f(x, ox, (int)xd.dt) / scale;
    float q = isnan(v) ? 0.0f : rint(v);
    long out;
    if (q < (float)(lo - zp)) out = lo;
    else if (q > (float)(hi - zp)) out = hi;
    else {
        out = (long)q + zp;
        out = out < lo ? lo : out > hi ? hi : out;
    }
    st_l(y, oy, (int)yd.dt, out);
}
