/*
 * conv.cl — the windowed ops: Conv (implicit GEMM, or direct for small
 * or 3-D cases), ConvTranspose, MaxPool/AveragePool and the global pools.
 *
 * All take one parameter block, st_win_p: spatial dims padded to three
 * with leading unit dims (kernel 1, stride 1, no pads, stride 0), every
 * operand's element offset and strides (N, C, D, H, W), dtypes, and the
 * fused activation of a Conv (st_epilogue).  Accumulation is f32.
 *
 * st_conv_gemm is Conv as a GEMM, per (image, group): Y[m, p] = W[m, k]
 * X'[k, p], with k = (c, kh, kw) and p = (oh, ow); the im2col matrix X' is
 * never built, each 16x64 block of it is gathered straight into local
 * memory (zeros where a window hangs over the padding).  Same tiling as
 * gemm.cl.  st_conv_direct computes one output element per work-item (a
 * depthwise conv has only C/g * K = 9 products per output: no GEMM).
 */

/* Same layout as st_cl_win_p in k_conv.c. */
typedef struct st_win_p {
    long groups, cg, mg, nimg;
    long is[3], os[3], k[3], s[3], d[3], pb[3], pe[3];
    long xo, xs[5], wo, ws[5], yo, ys[5], bo, bs, io, iss[5];
    long x_dt, w_dt, y_dt, b_dt, has_b, act, w_packed, is_max, include_pad, storage_order, has_ix;
    float act_a, act_b;
} st_win_p;

#define CT 64
#define CK 16
#define CW 16

kernel __attribute__((reqd_work_group_size(CW, CW, 1))) void st_conv_gemm(gp y, gcp x, gcp w, gcp bias, st_win_p p)
{
    local float As[CK][CT + 1];
    local float Bs[CK][CT + 1];
    int lx = get_local_id(0), ly = get_local_id(1), tid = ly * CW + lx;
    long row0 = (long)get_group_id(1) * CT, col0 = (long)get_group_id(0) * CT;
    long z = get_global_id(2);
    long n = z / p.groups, g = z - n * p.groups;
    int kh = (int)p.k[1], kw = (int)p.k[2], kvol = kh * kw;
    int ow = (int)p.os[2], ih = (int)p.is[1], iw = (int)p.is[2];
    long M = p.mg, K = p.cg * kvol, P = p.os[1] * p.os[2];
    long xbase = p.xo + n * p.xs[0] + g * p.cg * p.xs[1];
    long wbase = p.wo + g * p.mg * p.ws[0];
    int xdt = (int)p.x_dt, wdt = (int)p.w_dt;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (long k0 = 0; k0 < K; k0 += CK) {
        for (int t = 0; t < (CT * CK) / (CW * CW); t++) {
            int idx = tid + t * CW * CW;
            /* A = W[m, k]: contiguous along k when packed */
            int r = idx / CK, kk = idx % CK;
            long gm = row0 + r, gk = k0 + kk;
            float av = 0.0f;
            if (gm < M && gk < K) {
                long off;
                if (p.w_packed) {
                    off = wbase + gm * p.ws[0] + gk;
                } else {
                    int c = (int)(gk / kvol), rr = (int)(gk % kvol), a = rr / kw, b = rr - a * kw;
                    off = wbase + gm * p.ws[0] + c * p.ws[1] + a * p.ws[3] + b * p.ws[4];
                }
                av = wdt == DT_F32 ? ((global const float *)w)[off] : ld_f(w, off, wdt);
            }
            As[kk][r] = av;
            /* B = X'[k, p]: neighbouring work-items take neighbouring pixels */
            int cc = idx % CT;
            kk = idx / CT;
            long gp_ = col0 + cc;
            gk = k0 + kk;
            float bv = 0.0f;
            if (gk < K && gp_ < P) {
                int c = (int)(gk / kvol), rr = (int)(gk - (long)c * kvol), a = rr / kw, b = rr - a * kw;
                int oy = (int)(gp_ / ow), ox = (int)(gp_ - (long)oy * ow);
                int iy = oy * (int)p.s[1] - (int)p.pb[1] + a * (int)p.d[1];
                int ix = ox * (int)p.s[2] - (int)p.pb[2] + b * (int)p.d[2];
                if (iy >= 0 && iy < ih && ix >= 0 && ix < iw)
                    bv = xdt == DT_F32 ? ((global const float *)x)[xbase + c * p.xs[1] + iy * p.xs[3] + ix * p.xs[4]]
                                       : ld_f(x, xbase + c * p.xs[1] + iy * p.xs[3] + ix * p.xs[4], xdt);
            }
            Bs[kk][cc] = bv;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < CK; kk++) {
            float av[4], bv[4];
            for (int i = 0; i < 4; i++) av[i] = As[kk][ly + CW * i];
            for (int j = 0; j < 4; j++) bv[j] = Bs[kk][lx + CW * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < 4; i++) {
        long m = row0 + ly + CW * i;
        if (m >= M) continue;
        long oc = g * p.mg + m;
        float bv = p.has_b ? ld_f(bias, p.bo + oc * p.bs, (int)p.b_dt) : 0.0f;
        long ybase = p.yo + n * p.ys[0] + oc * p.ys[1];
        for (int j = 0; j < 4; j++) {
            long q = col0 + lx + CW * j;
            if (q >= P) continue;
            long oy = q / ow, ox = q - oy * ow;
            float v = acc[i][j] + bv;
            st_f(y, ybase + oy * p.ys[3] + ox * p.ys[4], (int)p.y_dt, act_f((int)p.act, v, p.act_a, p.act_b));
        }
    }
}

/* Conv on devices without fast local memory (CPUs, PoCL): no barriers,
 * a work-item computes RB output channels of one pixel, so neighbouring
 * work-items read neighbouring input pixels (the compiler vectorises
 * across them) and every input value loaded serves RB channels.  Same
 * grid as a GEMM: (pixels, channel blocks, image * group). */
#define RB 8
kernel void st_conv_rows(gp y, gcp x, gcp w, gcp bias, st_win_p p)
{
    long q = get_global_id(0), P = p.os[1] * p.os[2];
    if (q >= P) return;
    long m0 = get_global_id(1) * RB, z = get_global_id(2);
    long n = z / p.groups, g = z - n * p.groups;
    int ow = (int)p.os[2], ih = (int)p.is[1], iw = (int)p.is[2];
    int oy = (int)(q / ow), ox = (int)(q - (long)oy * ow);
    int iy0 = oy * (int)p.s[1] - (int)p.pb[1], ix0 = ox * (int)p.s[2] - (int)p.pb[2];
    int nm = p.mg - m0 < RB ? (int)(p.mg - m0) : RB;
    long xbase = p.xo + n * p.xs[0] + g * p.cg * p.xs[1];
    long wbase = p.wo + (g * p.mg + m0) * p.ws[0];
    int xdt = (int)p.x_dt, wdt = (int)p.w_dt;
    bool f32 = xdt == DT_F32 && wdt == DT_F32;
    float acc[RB];
    for (int i = 0; i < RB; i++) acc[i] = 0.0f;
    for (long c = 0; c < p.cg; c++) {
        long xc = xbase + c * p.xs[1], wc = wbase + c * p.ws[1];
        for (int a = 0; a < (int)p.k[1]; a++) {
            int iy = iy0 + a * (int)p.d[1];
            bool rowin = iy >= 0 && iy < ih;
            for (int b = 0; b < (int)p.k[2]; b++) {
                int ix = ix0 + b * (int)p.d[2];
                long wo = wc + a * p.ws[3] + b * p.ws[4];
                if (f32) {
                    float xv = rowin && ix >= 0 && ix < iw ? ((global const float *)x)[xc + iy * p.xs[3] + ix * p.xs[4]] : 0.0f;
                    for (int i = 0; i < RB; i++) acc[i] = fma(((global const float *)w)[wo + (i < nm ? i : 0) * p.ws[0]], xv, acc[i]);
                } else {
                    float xv = rowin && ix >= 0 && ix < iw ? ld_f(x, xc + iy * p.xs[3] + ix * p.xs[4], xdt) : 0.0f;
                    for (int i = 0; i < RB; i++) acc[i] = fma(ld_f(w, wo + (i < nm ? i : 0) * p.ws[0], wdt), xv, acc[i]);
                }
            }
        }
    }
    for (int i = 0; i < nm; i++) {
        long oc = g * p.mg + m0 + i;
        float v = acc[i] + (p.has_b ? ld_f(bias, p.bo + oc * p.bs, (int)p.b_dt) : 0.0f);
        st_f(y, p.yo + n * p.ys[0] + oc * p.ys[1] + oy * p.ys[3] + ox * p.ys[4], (int)p.y_dt,
             act_f((int)p.act, v, p.act_a, p.act_b));
    }
}

/* Decomposes i into (n, c, o0, o1, o2) over (nimg, channels, os). */
inline void win_index(const st_win_p *p, long channels, long i, long *n, long *c, long *o)
{
    long q;
    q = i / p->os[2];
    o[2] = i - q * p->os[2];
    i = q;
    q = i / p->os[1];
    o[1] = i - q * p->os[1];
    i = q;
    q = i / p->os[0];
    o[0] = i - q * p->os[0];
    i = q;
    q = i / channels;
    *c = i - q * channels;
    *n = q;
}

/* One output element per work-item: any group count, 1 to 3 dims. */
kernel void st_conv_direct(gp y, gcp x, gcp w, gcp bias, st_win_p p)
{
    long i = get_global_id(0), n, m, o[3];
    win_index(&p, p.groups * p.mg, i, &n, &m, o);
    if (n >= p.nimg) return;
    long g = m / p.mg;
    float acc = p.has_b ? ld_f(bias, p.bo + m * p.bs, (int)p.b_dt) : 0.0f;
    int xdt = (int)p.x_dt, wdt = (int)p.w_dt;
    bool f32 = xdt == DT_F32 && wdt == DT_F32;
    long start[3];
    for (int a = 0; a < 3; a++) start[a] = o[a] * p.s[a] - p.pb[a];
    for (long c = 0; c < p.cg; c++) {
        long xc = p.xo + n * p.xs[0] + (g * p.cg + c) * p.xs[1];
        long wc = p.wo + m * p.ws[0] + c * p.ws[1];
        for (long k0 = 0; k0 < p.k[0]; k0++) {
            long i0 = start[0] + k0 * p.d[0];
            if (i0 < 0 || i0 >= p.is[0]) continue;
            for (long k1 = 0; k1 < p.k[1]; k1++) {
                long i1 = start[1] + k1 * p.d[1];
                if (i1 < 0 || i1 >= p.is[1]) continue;
                long xr = xc + i0 * p.xs[2] + i1 * p.xs[3], wr = wc + k0 * p.ws[2] + k1 * p.ws[3];
                if (f32) {
                    for (long k2 = 0; k2 < p.k[2]; k2++) {
                        long i2 = start[2] + k2 * p.d[2];
                        if (i2 < 0 || i2 >= p.is[2]) continue;
                        acc = fma(((global const float *)x)[xr + i2 * p.xs[4]], ((global const float *)w)[wr + k2 * p.ws[4]], acc);
                    }
                } else {
                    for (long k2 = 0; k2 < p.k[2]; k2++) {
                        long i2 = start[2] + k2 * p.d[2];
                        if (i2 < 0 || i2 >= p.is[2]) continue;
                        acc = fma(ld_f(x, xr + i2 * p.xs[4], xdt), ld_f(w, wr + k2 * p.ws[4], wdt), acc);
                    }
                }
            }
        }
    }
    long yo = p.yo + n * p.ys[0] + m * p.ys[1] + o[0] * p.ys[2] + o[1] * p.ys[3] + o[2] * p.ys[4];
    st_f(y, yo, (int)p.y_dt, act_f((int)p.act, acc, p.act_a, p.act_b));
}

/* A Conv's per-channel affine epilogue (passes/fuse_affine.c) over its
 * output, which holds conv + bias: y = act(y S[m] + T[m]) PS[m] + PT[m],
 * one element per work-item, in one pass instead of one per op of the
 * chain.  aff holds S, T, PS, PT, M floats each (k_conv.c); pre and post
 * say which pair applies. */
kernel void st_conv_affine(gp y, global const float *aff, st_win_p p, int pre, int post)
{
    long i = get_global_id(0), n, m, o[3], M = p.groups * p.mg;
    win_index(&p, M, i, &n, &m, o);
    if (n >= p.nimg) return;
    long yo = p.yo + n * p.ys[0] + m * p.ys[1] + o[0] * p.ys[2] + o[1] * p.ys[3] + o[2] * p.ys[4];
    float v = ld_f(y, yo, (int)p.y_dt);
    if (pre) v = fma(v, aff[m], aff[M + m]);
    v = act_f((int)p.act, v, p.act_a, p.act_b);
    if (post) v = fma(v, aff[2 * M + m], aff[3 * M + m]);
    st_f(y, yo, (int)p.y_dt, v);
}

/* ConvTranspose, one output element per work-item: the input positions
 * whose stride-spread taps land on it.  W is [C, M/g, k...]. */
kernel void st_conv_transpose(gp y, gcp x, gcp w, gcp bias, st_win_p p)
{
    long i = get_global_id(0), n, m, o[3];
    win_index(&p, p.groups * p.mg, i, &n, &m, o);
    if (n >= p.nimg) return;
    long g = m / p.mg, mm = m - g * p.mg;
    float acc = p.has_b ? ld_f(bias, p.bo + m * p.bs, (int)p.b_dt) : 0.0f;
    int xdt = (int)p.x_dt, wdt = (int)p.w_dt;
    for (long k0 = 0; k0 < p.k[0]; k0++) {
        long t0 = o[0] + p.pb[0] - k0 * p.d[0];
        if (t0 < 0 || t0 % p.s[0] || t0 / p.s[0] >= p.is[0]) continue;
        for (long k1 = 0; k1 < p.k[1]; k1++) {
            long t1 = o[1] + p.pb[1] - k1 * p.d[1];
            if (t1 < 0 || t1 % p.s[1] || t1 / p.s[1] >= p.is[1]) continue;
            for (long k2 = 0; k2 < p.k[2]; k2++) {
                long t2 = o[2] + p.pb[2] - k2 * p.d[2];
                if (t2 < 0 || t2 % p.s[2] || t2 / p.s[2] >= p.is[2]) continue;
                long xoff = p.xo + n * p.xs[0] + (t0 / p.s[0]) * p.xs[2] + (t1 / p.s[1]) * p.xs[3] + (t2 / p.s[2]) * p.xs[4];
                long woff = p.wo + mm * p.ws[1] + k0 * p.ws[2] + k1 * p.ws[3] + k2 * p.ws[4];
                for (long c = 0; c < p.cg; c++) {
                    long ci = g * p.cg + c;
                    acc = fma(ld_f(x, xoff + ci * p.xs[1], xdt), ld_f(w, woff + ci * p.ws[0], wdt), acc);
                }
            }
        }
    }
    long yo = p.yo + n * p.ys[0] + m * p.ys[1] + o[0] * p.ys[2] + o[1] * p.ys[3] + o[2] * p.ys[4];
    st_f(y, yo, (int)p.y_dt, act_f((int)p.act, acc, p.act_a, p.act_b));
}

/* MaxPool (with its optional Indices output), AveragePool and the global
 * pools; one output element per work-item.  The average's divisor with
 * count_include_pad counts pads, not the overhang of a ceil_mode window. */
kernel void st_pool(gp y, gcp x, gp ix, st_win_p p)
{
    long i = get_global_id(0), n, c, o[3];
    win_index(&p, p.cg, i, &n, &c, o);
    if (n >= p.nimg) return;
    long start[3], total = 1;
    for (int a = 0; a < 3; a++) {
        start[a] = o[a] * p.s[a] - p.pb[a];
        long lim = start[a] + (p.k[a] - 1) * p.d[a] + 1, hi = p.is[a] + p.pe[a];
        total *= ((lim < hi ? lim : hi) - start[a] + p.d[a] - 1) / p.d[a];
    }
    int xdt = (int)p.x_dt;
    long xc = p.xo + n * p.xs[0] + c * p.xs[1];
    float acc = p.is_max ? -INFINITY : 0.0f;
    long best = -1, count = 0;
    for (long k0 = 0; k0 < p.k[0]; k0++) {
        long i0 = start[0] + k0 * p.d[0];
        if (i0 < 0 || i0 >= p.is[0]) continue;
        for (long k1 = 0; k1 < p.k[1]; k1++) {
            long i1 = start[1] + k1 * p.d[1];
            if (i1 < 0 || i1 >= p.is[1]) continue;
            for (long k2 = 0; k2 < p.k[2]; k2++) {
                long i2 = start[2] + k2 * p.d[2];
                if (i2 < 0 || i2 >= p.is[2]) continue;
                long xi = xc + i0 * p.xs[2] + i1 * p.xs[3] + i2 * p.xs[4];
                float v = xdt == DT_F32 ? ((global const float *)x)[xi] : ld_f(x, xi, xdt);
                if (p.is_max) {
                    if (v > acc || best < 0) {
                        acc = v;
                        /* the flat index over the spatial dims, row-major (or
                         * column-major for storage_order 1, 2-D) */
                        best = p.storage_order == 1 ? i2 * p.is[1] + i1 : (i0 * p.is[1] + i1) * p.is[2] + i2;
                    }
                } else {
                    acc += v;
                }
                count++;
            }
        }
    }
    float r = p.is_max ? acc : acc / (float)(p.include_pad ? total : (count ? count : 1));
    long yo = p.yo + n * p.ys[0] + c * p.ys[1] + o[0] * p.ys[2] + o[1] * p.ys[3] + o[2] * p.ys[4];
    st_f(y, yo, (int)p.y_dt, r);
    if (p.has_ix) {
        long plane = p.is[0] * p.is[1] * p.is[2];
        long io = p.io + n * p.iss[0] + c * p.iss[1] + o[0] * p.iss[2] + o[1] * p.iss[3] + o[2] * p.iss[4];
        ((global long *)ix)[io] = (n * p.cg + c) * plane + best;
    }
}

/* A global pool (the window is the whole input): a work-group of PG per
 * (image, channel) strides over the plane, then a fixed tree combines the
 * partial sums or maxima. */
#define PG 64
kernel __attribute__((reqd_work_group_size(PG, 1, 1))) void st_pool_global(gp y, gcp x, st_win_p p)
{
    local float red[PG];
    long o = get_group_id(0);
    int t = get_local_id(0);
    long n = o / p.cg, c = o - n * p.cg;
    long plane = p.is[0] * p.is[1] * p.is[2];
    long xc = p.xo + n * p.xs[0] + c * p.xs[1];
    int xdt = (int)p.x_dt;
    float acc = p.is_max ? -INFINITY : 0.0f;
    for (long j = t; j < plane; j += PG) {
        long r = j / p.is[2], i2 = j - r * p.is[2], i0 = r / p.is[1], i1 = r - i0 * p.is[1];
        long xi = xc + i0 * p.xs[2] + i1 * p.xs[3] + i2 * p.xs[4];
        float v = xdt == DT_F32 ? ((global const float *)x)[xi] : ld_f(x, xi, xdt);
        acc = p.is_max ? fmax(acc, v) : acc + v;
    }
    red[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = PG / 2; h > 0; h >>= 1) {
        if (t < h) red[t] = p.is_max ? fmax(red[t], red[t + h]) : red[t] + red[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) {
        float r = p.is_max ? red[0] : red[0] / (float)plane;
        st_f(y, p.yo + n * p.ys[0] + c * p.ys[1], (int)p.y_dt, r);
    }
}
