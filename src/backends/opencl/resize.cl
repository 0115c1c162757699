/*
 * resize.cl — Resize/Upsample from the tap tables the shape rule built
 * (ops/resize.h): for output coordinate o on axis a, taps
 * first[a] + o * ntaps[a] + t give input coordinates and weights, for
 * every mode (nearest 1 tap, linear 2, cubic 4; untouched axes 1).  The
 * host uploads the table once per command (the command's slot).
 *
 * One output element per work-item: nearest copies the source element's
 * bytes (any dtype); otherwise the weighted sum over every combination
 * of the axes' taps, in f32 (f64 data in double).  A tf_crop_and_resize
 * coordinate outside the input gives the extrapolation value.
 */

/* Same layout as st_cl_tap in k_resize.c. */
typedef struct st_tap {
    long idx;
    ulong wd_bits;   /* the weight as a double's bits (f64 data) */
    float wf;
    int outside;
} st_tap;

typedef struct st_resize_p {
    long rank, nearest;
    long ntaps[8], first[8];
    ulong ext_bits;  /* the extrapolation value in y's dtype, as bytes */
    float ext_f;
    int pad;
} st_resize_p;

/* Grid: (last axis, rows of all the other axes).  The taps of the row's
 * axes are looked up once per work-item, uniformly across a row. */
kernel void st_resize(gp y, st_td yd, gcp x, st_td xd, global const st_tap *taps, st_resize_p p)
{
    long i = get_global_id(0), r = get_global_id(1);
    if (td_outside(&yd, i, r)) return;
    int l = (int)p.rank - 1;
    long o[8];
    o[l] = i;
    for (int a = l - 1; a >= 0; a--) {
        long q, rr;
        DIVMOD(r, yd.n[a], q, rr);
        o[a] = rr;
        r = q;
    }
    long oy = yd.off;
    for (int a = 0; a <= l; a++) oy += o[a] * yd.s[a];
    int ydt = (int)yd.dt, es = dt_size(ydt);
    bool outside = false;
    for (int a = 0; a <= l; a++) outside |= taps[p.first[a] + o[a] * p.ntaps[a]].outside != 0;
    if (outside) {
        ulong e = p.ext_bits;
        switch (es) {
        case 1: y[oy] = (uchar)e; break;
        case 2: ((global ushort *)y)[oy] = (ushort)e; break;
        case 4: ((global uint *)y)[oy] = (uint)e; break;
        default: ((global ulong *)y)[oy] = e; break;
        }
        return;
    }
    if (p.nearest) {
        long ox = xd.off;
        for (int a = 0; a <= l; a++) ox += taps[p.first[a] + o[a]].idx * xd.s[a];
        mv(y, oy, x, ox, es);
        return;
    }
    long combos = 1;
    for (int a = 0; a <= l; a++) combos *= p.ntaps[a];
    int xdt = (int)xd.dt;
#ifdef ST_FP64
    if (xdt == DT_F64) {
        double acc = 0.0;
        for (long cmb = 0; cmb < combos; cmb++) {
            long c = cmb, ox = xd.off;
            double w = 1.0;
            for (int a = l; a >= 0; a--) {
                long t = c % p.ntaps[a];
                c /= p.ntaps[a];
                global const st_tap *tp = &taps[p.first[a] + o[a] * p.ntaps[a] + t];
                w *= as_double(tp->wd_bits);
                ox += tp->idx * xd.s[a];
            }
            acc += w * ld_d(x, ox, xdt);
        }
        st_d(y, oy, ydt, acc);
        return;
    }
#endif
    float acc = 0.0f;
    for (long cmb = 0; cmb < combos; cmb++) {
        long c = cmb, ox = xd.off;
        float w = 1.0f;
        for (int a = l; a >= 0; a--) {
            long t = c % p.ntaps[a];
            c /= p.ntaps[a];
            global const st_tap *tp = &taps[p.first[a] + o[a] * p.ntaps[a] + t];
            w *= tp->wf;
            ox += tp->idx * xd.s[a];
        }
        acc += w * ld_f(x, ox, xdt);
    }
    st_f(y, oy, ydt, acc);
}
