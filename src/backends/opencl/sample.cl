/*
 * sample.cl — GridSample (2-D) on the device (host side: k_sample.c), by
 * the CPU kernel's rule (backends/cpu/k_misc_sample.c): PyTorch's
 * grid_sample, a grid value of -1 / +1 the centre of the first / last
 * pixel (align_corners) or their outer edge; bilinear and nearest apply
 * the padding mode to the source coordinate, bicubic (A = -0.75) to each
 * of its 16 taps; zeros outside; nearest rounds half to even.  One
 * work-item per output element, in f32.
 */

/* Same layout as st_cl_gs_p in k_sample.c. */
typedef struct st_gs_p {
    long mode, padding, align;
} st_gs_p;

inline float gs_unnorm(float v, long size, long align)
{
    return align ? (v + 1) / 2 * (float)(size - 1) : ((v + 1) * (float)size - 1) / 2;
}

inline float gs_reflect(float v, float lo2, float hi2)
{
    if (lo2 == hi2) return 0;
    float mn = lo2 / 2, span = (hi2 - lo2) / 2;
    v = fabs(v - mn);
    float extra = fmod(v, span);
    long flips = (long)floor(v / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

inline float gs_pad(const st_gs_p *p, float v, long size)
{
    if (p->padding == 1) return clamp(v, 0.0f, (float)(size - 1));
    if (p->padding == 2) {
        v = p->align ? gs_reflect(v, 0, 2.0f * (float)(size - 1)) : gs_reflect(v, -1, 2.0f * (float)size - 1);
        return clamp(v, 0.0f, (float)(size - 1));
    }
    return v;
}

/* An integral coordinate as an index; far outside (or NaN) stays outside. */
inline long gs_index(float v, long size)
{
    if (!(v >= -2.0f && v <= (float)size + 1.0f)) return -(1L << 40);
    return (long)v;
}

inline float gs_pixel(gcp x, const st_td *xd, long base, long iy, long ix)
{
    if (iy < 0 || ix < 0 || iy >= xd->n[2] || ix >= xd->n[3]) return 0;
    return ld_f(x, base + iy * xd->s[2] + ix * xd->s[3], (int)xd->dt);
}

inline void gs_cubic(float t, float *w)
{
    const float A = -0.75f;
    float x1 = t + 1, x2 = t, x3 = 1 - t, x4 = 2 - t;
    w[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    w[1] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[2] = ((A + 2) * x3 - (A + 3)) * x3 * x3 + 1;
    w[3] = ((A * x4 - 5 * A) * x4 + 8 * A) * x4 - 4 * A;
}

kernel void st_gridsample(gp y, st_td yd, gcp x, st_td xd, gcp g, st_td gd, st_gs_p p)
{
    long i = get_global_id(0);
    long ow = yd.n[3], oh = yd.n[2], C = yd.n[1];
    if (i >= yd.n[0] * C * oh * ow) return;
    long ox = i % ow, r = i / ow, oy = r % oh;
    r /= oh;
    long c = r % C, n = r / C, H = xd.n[2], W = xd.n[3];
    long go = gd.off + n * gd.s[0] + oy * gd.s[1] + ox * gd.s[2];
    float gx = ld_f(g, go, (int)gd.dt), gy = ld_f(g, go + gd.s[3], (int)gd.dt);
    float fx = gs_unnorm(gx, W, p.align), fy = gs_unnorm(gy, H, p.align);
    if (p.mode != 2) {
        fx = gs_pad(&p, fx, W);
        fy = gs_pad(&p, fy, H);
    }
    long base = xd.off + n * xd.s[0] + c * xd.s[1];
    float v;
    if (p.mode == 1) {
        v = gs_pixel(x, &xd, base, gs_index(rint(fy), H), gs_index(rint(fx), W));
    } else if (p.mode == 0) {
        float x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
        long ix = gs_index(x0, W), iy = gs_index(y0, H);
        v = (1 - ty) * ((1 - tx) * gs_pixel(x, &xd, base, iy, ix) + tx * gs_pixel(x, &xd, base, iy, ix + 1)) +
            ty * ((1 - tx) * gs_pixel(x, &xd, base, iy + 1, ix) + tx * gs_pixel(x, &xd, base, iy + 1, ix + 1));
    } else {
        float x0 = floor(fx), y0 = floor(fy), wx[4], wy[4];
        gs_cubic(fx - x0, wx);
        gs_cubic(fy - y0, wy);
        v = 0;
        for (int a = 0; a < 4; a++) {
            float row = 0, py = gs_pad(&p, y0 - 1 + a, H);
            for (int b = 0; b < 4; b++) {
                float px = gs_pad(&p, x0 - 1 + b, W);
                row += wx[b] * gs_pixel(x, &xd, base, gs_index(floor(py), H), gs_index(floor(px), W));
            }
            v += wy[a] * row;
        }
    }
    st_f(y, yd.off + n * yd.s[0] + c * yd.s[1] + oy * yd.s[2] + ox * yd.s[3], (int)yd.dt, v);
}
