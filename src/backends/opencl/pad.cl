/*
 * pad.cl — Pad (and CenterCropPad) on the device: one output element per
 * work-item, its source found per axis by ops/index_math.h's
 * st_im_pad_source (the CPU's and CUDA's rule): negative pads crop first,
 * then constant, reflect (without repeating the edge), edge or wrap
 * fill the rest.  Any dtype of up to 8 bytes: only bytes move.
 */

/* Same layout as st_cl_pad_p in k_pad.c. */
typedef struct st_pad_p {
    long mode;       /* st_pad_mode: 0 constant, 1 reflect, 2 edge, 3 wrap */
    long has_value;  /* the value is element [0] of the v operand, else value_bits */
    long begin[8], end[8];
    ulong value_bits; /* the constant in y's dtype, as bytes */
} st_pad_p;

/* Grid: (y's last axis, rows of all the other axes). */
kernel void st_pad(gp y, st_td yd, gcp x, st_td xd, gcp v, st_td vd, st_pad_p p)
{
    long i = get_global_id(0), r = get_global_id(1);
    if (td_outside(&yd, i, r)) return;
    int l = (int)yd.rank - 1;
    long oy = yd.off + i * yd.s[l], ox = xd.off;
    long s = st_im_pad_source((int)p.mode, i, p.begin[l], p.end[l], xd.n[l]);
    bool inside = s >= 0;
    ox += s * xd.s[l];
    for (int a = l - 1; a >= 0; a--) {
        long q, o;
        DIVMOD(r, yd.n[a], q, o);
        r = q;
        oy += o * yd.s[a];
        long sa = st_im_pad_source((int)p.mode, o, p.begin[a], p.end[a], xd.n[a]);
        inside &= sa >= 0;
        ox += sa * xd.s[a];
    }
    int es = dt_size((int)yd.dt);
    if (inside) {
        mv(y, oy, x, ox, es);
    } else if (p.has_value) {
        mv(y, oy, v, vd.off, es);
    } else {
        ulong e = p.value_bits;
        switch (es) {
        case 1: y[oy] = (uchar)e; break;
        case 2: ((global ushort *)y)[oy] = (ushort)e; break;
        case 4: ((global uint *)y)[oy] = (uint)e; break;
        default: ((global ulong *)y)[oy] = e; break;
        }
    }
}
