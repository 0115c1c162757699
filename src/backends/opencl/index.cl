/*
 * index.cl — the index family on the device (host side: k_index.c):
 * Gather, GatherElements, ScatterND, OneHot, Range, CumSum, ArgMax/ArgMin
 * and TopK.  Each follows the CPU kernel's rule (backends/cpu/k_index_*.c,
 * k_reduce.c); the ops that are one strided copy (Expand, Tile,
 * DepthToSpace, SpaceToDepth) need no kernel here: k_index.c describes
 * them to copy.cl's st_copy.
 *
 * The element rules (an index's wrap and bounds, the scatter reduction,
 * OneHot, Trilu, CumSum, TopK's order, Einsum's walk) are
 * ops/index_math.h's, compiled into this program ahead of this file, the
 * CPU's and CUDA's.  Floats compute in f32, f64 in double.
 *
 * A kernel cannot fail the run, so an index out of range (which the CPU
 * reports as an error) reads as zero bytes and a scatter skips it.
 * Operands are (cl_mem, st_td) pairs: rule 1, no sub-buffers.
 */

/* The row-major coordinates of element i of shape t. */
inline void idx_coords(const st_td *t, long i, long *c)
{
    for (int d = (int)t->rank - 1; d >= 0; d--) {
        long q, r;
        DIVMOD(i, t->n[d], q, r);
        c[d] = r;
        i = q;
    }
}

inline long idx_numel(const st_td *t)
{
    long n = 1;
    for (int d = 0; d < (int)t->rank; d++) n *= t->n[d];
    return n;
}

inline void zero_bytes(gp y, long oy, int es)
{
    switch (es) {
    case 1: y[oy] = 0; break;
    case 2: ((global ushort *)y)[oy] = 0; break;
    case 4: ((global uint *)y)[oy] = 0; break;
    default: ((global ulong *)y)[oy] = 0; break;
    }
}

/* Gather and GatherElements: one walk over y lowered on the host
 * (ops/lower_index.h, st_lower_gather; k_index.c copies it in the same
 * order), the index standing for x's dim along axis. */
typedef struct st_gather_p {
    long rank, dim, data_axis, idx_dt, es;
    long off[3];                    /* x, y, the indices: element offsets of element [0...] */
    long n[MAX_RANK];
    long s[3][MAX_RANK];            /* x (0 on the dims the index stands for), y, the indices */
    long total;
} st_gather_p;

kernel void st_gather_walk(gp y, gcp x, gcp ix, st_gather_p p)
{
    long i = get_global_id(0);
    if (i >= p.total) return;
    long ox = p.off[0], oy = p.off[1], oi = p.off[2], r = i;
    for (int d = (int)p.rank - 1; d >= 0; d--) {
        long q, c;
        DIVMOD(r, p.n[d], q, c);
        r = q;
        ox += c * p.s[0][d];
        oy += c * p.s[1][d];
        oi += c * p.s[2][d];
    }
    long v = st_im_index(ld_l(ix, oi, (int)p.idx_dt), p.dim);
    if (v < 0) {
        zero_bytes(y, oy, (int)p.es);
        return;
    }
    mv(y, oy, x, ox + v * p.data_axis, (int)p.es);
}

/* y[oy] reduced with u[ou] (ops/index_math.h): f32, f16 and bf16 in
 * f32, f64 in double, integers in 64 bits (uint64 ordered unsigned). */
inline void reduce_at(long red, gp y, long oy, int ty, gcp u, long ou, int tu)
{
    if (red == ST_RED_NONE) {
        mv(y, oy, u, ou, dt_size(ty));
    } else if (ty == DT_F32 || ty == DT_F16 || ty == DT_BF16) {
        st_f(y, oy, ty, st_im_reduce_f32((int)red, ld_f(y, oy, ty), ld_f(u, ou, tu)));
    }
#ifdef ST_FP64
    else if (ty == DT_F64) {
        st_d(y, oy, ty, st_im_reduce_f64((int)red, ld_d(y, oy, ty), ld_d(u, ou, tu)));
    }
#endif
    else {
        st_l(y, oy, ty, st_im_reduce_i64((int)red, ld_l(y, oy, ty), ld_l(u, ou, tu), ty == DT_U64));
    }
}

/* ScatterND after y = x (k_index.c copies first): work-item j owns
 * element j of a slice and applies every index tuple to it in order, so
 * duplicate indices resolve as on the CPU (last write wins, reductions in
 * index order).  m = index depth, q = the indices' rank; u's dims are
 * [tuples..., slice...]. */
kernel void st_scatter_nd(gp y, st_td yd, gcp ix, st_td id, gcp u, st_td ud, long red)
{
    long j = get_global_id(0);
    int q = (int)id.rank, m = (int)id.n[q - 1], yr = (int)yd.rank, sr = yr - m;
    long slice = 1, tuples = 1;
    for (int d = m; d < yr; d++) slice *= yd.n[d];
    for (int d = 0; d < q - 1; d++) tuples *= id.n[d];
    if (j >= slice) return;
    /* the slice element's offsets in y (past the indexed dims) and in u */
    long sy = 0, su = 0, r = j;
    for (int d = sr - 1; d >= 0; d--) {
        long qq, cc;
        DIVMOD(r, yd.n[m + d], qq, cc);
        r = qq;
        sy += cc * yd.s[m + d];
        su += cc * ud.s[q - 1 + d];
    }
    for (long t = 0; t < tuples; t++) {
        long oi = id.off, ou = ud.off + su, rr = t;
        for (int d = q - 2; d >= 0; d--) {
            long qq, cc;
            DIVMOD(rr, id.n[d], qq, cc);
            rr = qq;
            oi += cc * id.s[d];
            ou += cc * ud.s[d];
        }
        long oy = yd.off + sy;
        bool ok = true;
        for (int c = 0; c < m; c++) {
            long v = st_im_index(ld_l(ix, oi + c * id.s[q - 1], (int)id.dt), yd.n[c]);
            ok &= v >= 0;
            oy += v * yd.s[c];
        }
        if (ok) reduce_at(red, y, oy, (int)yd.dt, u, ou, (int)ud.dt);
    }
}

/* OneHot: y[c] = c[axis] == index[c without axis] ? on : off, values
 * v = [off, on] in y's dtype. */
kernel void st_one_hot(gp y, st_td yd, gcp ix, st_td id, gcp v, st_td vd, long axis, long neg_ok)
{
    long i = get_global_id(0);
    if (i >= idx_numel(&yd)) return;
    long c[MAX_RANK];
    idx_coords(&yd, i, c);
    long oy = yd.off, oi = id.off;
    for (int d = 0, e = 0; d < (int)yd.rank; d++) {
        oy += c[d] * yd.s[d];
        if (d != axis) oi += c[d] * id.s[e++];
    }
    /* a float index truncates (ld_l), as the CPU's cast does */
    long k = st_im_one_hot(ld_l(ix, oi, (int)id.dt), yd.n[axis], (int)neg_ok);
    mv(y, oy, v, vd.off + (k == c[axis] ? vd.s[0] : 0), dt_size((int)yd.dt));
}

/* Range: y[i] = start + i * delta (start and delta are device scalars). */
kernel void st_range(gp y, st_td yd, gcp a, st_td ad, gcp dl, st_td dd)
{
    long i = get_global_id(0);
    if (i >= yd.n[0]) return;
    int ty = (int)yd.dt;
    long oy = yd.off + i * yd.s[0];
    if (ty == DT_F32 || ty == DT_F16 || ty == DT_BF16) {
        st_f(y, oy, ty, ld_f(a, ad.off, (int)ad.dt) + (float)i * ld_f(dl, dd.off, (int)dd.dt));
    }
#ifdef ST_FP64
    else if (ty == DT_F64) {
        st_d(y, oy, ty, ld_d(a, ad.off, (int)ad.dt) + (double)i * ld_d(dl, dd.off, (int)dd.dt));
    }
#endif
    else {
        st_l(y, oy, ty, ld_l(a, ad.off, (int)ad.dt) + i * ld_l(dl, dd.off, (int)dd.dt));
    }
}

/* The offsets of line `line` of x and y along `axis` (every other dim
 * enumerates the lines). */
inline void line_offsets(const st_td *xd, const st_td *yd, int axis, long line, long *ox, long *oy)
{
    long a = xd->off, b = yd->off;
    for (int d = (int)xd->rank - 1; d >= 0; d--) {
        if (d == axis) continue;
        long q, r;
        DIVMOD(line, xd->n[d], q, r);
        line = q;
        a += r * xd->s[d];
        b += r * yd->s[d];
    }
    *ox = a;
    *oy = b;
}

/* CumSum: one work-item per line; the axis is a device scalar (ad) when
 * axis < 0.  f32-class sums in f32, integers in 64 bits, as the CPU. */
kernel void st_cumsum(gp y, st_td yd, gcp x, st_td xd, gcp a, st_td ad, long axis, long exclusive, long reverse)
{
    long line = get_global_id(0);
    int r = (int)xd.rank;
    if (axis < 0) {
        axis = st_im_index(ld_l(a, ad.off, (int)ad.dt), r);
        if (axis < 0) return;
    }
    long n = xd.n[axis];
    if (n == 0 || line >= idx_numel(&xd) / n) return;
    long ox, oy;
    line_offsets(&xd, &yd, (int)axis, line, &ox, &oy);
    long xs = xd.s[axis], ys = yd.s[axis];
    int t = (int)xd.dt;
    if (t == DT_F32 || t == DT_F16 || t == DT_BF16) {
        float acc = 0.0f;
        for (long s = 0; s < n; s++) {
            long i = st_im_cumsum_at(s, n, (int)reverse);
            float v = ld_f(x, ox + i * xs, t);
            if (!exclusive) acc += v;
            st_f(y, oy + i * ys, t, acc);
            if (exclusive) acc += v;
        }
    }
#ifdef ST_FP64
    else if (t == DT_F64) {
        double acc = 0.0;
        for (long s = 0; s < n; s++) {
            long i = st_im_cumsum_at(s, n, (int)reverse);
            double v = ld_d(x, ox + i * xs, t);
            if (!exclusive) acc += v;
            st_d(y, oy + i * ys, t, acc);
            if (exclusive) acc += v;
        }
    }
#endif
    else {
        ulong acc = 0;
        for (long s = 0; s < n; s++) {
            long i = st_im_cumsum_at(s, n, (int)reverse);
            ulong v = (ulong)ld_l(x, ox + i * xs, t);
            if (!exclusive) acc += v;
            st_l(y, oy + i * ys, t, (long)acc);
            if (exclusive) acc += v;
        }
    }
}

/* The order of x's elements at oa and ob for TopK (ops/index_math.h):
 * by value, a NaN above every number, as numpy sorts; f64 in double,
 * uint64 unsigned. */
inline int x_cmp(gcp x, int t, long oa, long ob)
{
#ifdef ST_FP64
    if (t == DT_F64) return st_im_cmp_f64(ld_d(x, oa, t), ld_d(x, ob, t));
#endif
    if (t == DT_F32 || t == DT_F16 || t == DT_BF16) return st_im_cmp_f32(ld_f(x, oa, t), ld_f(x, ob, t));
    return st_im_cmp_i64(ld_l(x, oa, t), ld_l(x, ob, t), t == DT_U64);
}

/* ArgMax / ArgMin: one work-item per line; y holds x's shape with the
 * axis of size 1 (its strides over x's other dims). */
kernel void st_argminmax(gp y, st_td yd, gcp x, st_td xd, long axis, long is_max, long last)
{
    long line = get_global_id(0);
    long n = xd.n[axis];
    if (n == 0 || line >= idx_numel(&xd) / n) return;
    long ox, oy;
    line_offsets(&xd, &yd, (int)axis, line, &ox, &oy);
    int t = (int)xd.dt;
    long best = 0, xs = xd.s[axis];
    /* NaN wins (the first, or the last with select_last); f64 in double */
#define ARG_SCAN(T, LD)                                                                                                \
    do {                                                                                                               \
        T b = LD(x, ox, t);                                                                                            \
        for (long i = 1; i < n; i++) {                                                                                 \
            T v = LD(x, ox + i * xs, t);                                                                               \
            if (isnan(b)) {                                                                                            \
                if (last && isnan(v)) best = i;                                                                        \
                continue;                                                                                              \
            }                                                                                                          \
            if (isnan(v) || (is_max ? v > b : v < b) || (last && v == b)) {                                            \
                b = v;                                                                                                 \
                best = i;                                                                                              \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)
#ifdef ST_FP64
    if (t == DT_F64) {
        ARG_SCAN(double, ld_d);
    } else
#endif
    if (t == DT_F32 || t == DT_F16 || t == DT_BF16) {
        ARG_SCAN(float, ld_f);
    } else {
        bool uns = t == DT_U64;
        long b = ld_l(x, ox, t);
        for (long i = 1; i < n; i++) {
            long v = ld_l(x, ox + i * xs, t);
            bool gt = uns ? (ulong)v > (ulong)b : v > b, lt = uns ? (ulong)v < (ulong)b : v < b;
            if ((is_max ? gt : lt) || (last && v == b)) {
                b = v;
                best = i;
            }
        }
    }
#undef ARG_SCAN
    st_l(y, oy, (int)yd.dt, best);
}

/* TopK: one work-item per line; the k outputs are found one after the
 * other, each the best element that comes after the previous one in the
 * total order (value, then lower index): O(k * n), no scratch. */
kernel void st_topk(gp v, st_td vd, gp ix, st_td id, gcp x, st_td xd, long axis, long largest)
{
    long line = get_global_id(0);
    long n = xd.n[axis], k = vd.n[axis];
    if (n == 0 || line >= idx_numel(&xd) / n) return;
    long ox, ov, oi, dummy;
    line_offsets(&xd, &vd, (int)axis, line, &ox, &ov);
    line_offsets(&xd, &id, (int)axis, line, &dummy, &oi);
    int t = (int)xd.dt;
    long xs = xd.s[axis], prev = -1;
    for (long j = 0; j < k; j++) {
        long best = -1;
        for (long i = 0; i < n; i++) {
            /* i must come after prev in the output, and before the best so far */
            if (prev >= 0 && !st_im_topk_before(x_cmp(x, t, ox + prev * xs, ox + i * xs), (int)largest, prev, i)) continue;
            if (best >= 0 && !st_im_topk_before(x_cmp(x, t, ox + i * xs, ox + best * xs), (int)largest, i, best)) continue;
            best = i;
        }
        prev = best;
        mv(v, ov + j * vd.s[axis], x, ox + best * xs, dt_size(t)); /* values keep x's dtype */
        st_l(ix, oi + j * id.s[axis], (int)id.dt, best);
    }
}

/* NonZero: its output's shape [rank, count] was computed at plan time
 * from the data (a staged plan, ops/select.c), so the kernel only fills
 * it: one work-item walks x in row-major order (the order the indices
 * must come in) and stops at the planned count. */
kernel void st_nonzero(gp y, st_td yd, gcp x, st_td xd)
{
    if (get_global_id(0) != 0) return;
    long total = idx_numel(&xd), found = 0, cap = yd.n[1];
    int t = (int)xd.dt, r = (int)xd.rank;
    bool isf = t == DT_F32 || t == DT_F16 || t == DT_BF16;
    for (long i = 0; i < total && found < cap; i++) {
        long c[MAX_RANK];
        idx_coords(&xd, i, c);
        long o = xd.off;
        for (int d = 0; d < r; d++) o += c[d] * xd.s[d];
        bool nz = isf ? ld_f(x, o, t) != 0.0f : ld_l(x, o, t) != 0;
#ifdef ST_FP64
        if (t == DT_F64) nz = ld_d(x, o, t) != 0.0; /* not through float, where a tiny value is 0 */
#endif
        if (!nz) continue;
        for (int d = 0; d < r; d++) st_l(y, yd.off + d * yd.s[0] + found * yd.s[1], (int)yd.dt, c[d]);
        found++;
    }
}

/* Einsum: one work-item per output element sums, over every value of the
 * labels the output lacks, the product of the inputs (f32).  k_einsum
 * (k_index.c) gives each label its extent and per input its stride (a
 * repeated label's strides add: a diagonal; a broadcast dim's is 0). */
typedef struct st_ein_p {
    st_im_einsum g;                 /* ops/index_math.h's walk */
    long off[ST_IM_EIN_IN], dt[ST_IM_EIN_IN];
    long yoff, ydt;
} st_ein_p;

kernel void st_einsum(gp y, gcp x0, gcp x1, gcp x2, gcp x3, st_ein_p p)
{
    long i = get_global_id(0);
    if (i >= p.g.total) return;
    long base[ST_IM_EIN_IN], oy;
    st_im_einsum_out(&p.g, i, &oy, base);
    long terms = st_im_einsum_terms(&p.g);
    float acc = 0.0f;
    for (long s = 0; s < terms; s++) {
        long o[ST_IM_EIN_IN];
        st_im_einsum_term(&p.g, s, base, o);
        float v = ld_f(x0, p.off[0] + o[0], (int)p.dt[0]);
        if (p.g.n_in > 1) v *= ld_f(x1, p.off[1] + o[1], (int)p.dt[1]);
        if (p.g.n_in > 2) v *= ld_f(x2, p.off[2] + o[2], (int)p.dt[2]);
        if (p.g.n_in > 3) v *= ld_f(x3, p.off[3] + o[3], (int)p.dt[3]);
        acc += v;
    }
    st_f(y, p.yoff + oy, (int)p.ydt, acc);
}

/* ScatterElements (and Scatter) after y = x: one work-item per line of the
 * indices along the axis, applying its updates in index order, so
 * duplicates (which can only meet within a line) resolve as on the CPU. */
kernel void st_scatter_elements(gp y, st_td yd, gcp ix, st_td id, gcp u, st_td ud, long axis, long red)
{
    long line = get_global_id(0), n = id.n[axis];
    if (n == 0 || line >= idx_numel(&id) / n) return;
    long oi = id.off, ou = ud.off, oy = yd.off, r = line;
    for (int d = (int)id.rank - 1; d >= 0; d--) {
        if (d == axis) continue;
        long q, c;
        DIVMOD(r, id.n[d], q, c);
        r = q;
        oi += c * id.s[d];
        ou += c * ud.s[d];
        oy += c * yd.s[d];
    }
    for (long j = 0; j < n; j++) {
        long v = st_im_index(ld_l(ix, oi + j * id.s[axis], (int)id.dt), yd.n[axis]);
        if (v >= 0) reduce_at(red, y, oy + v * yd.s[axis], (int)yd.dt, u, ou + j * ud.s[axis], (int)ud.dt);
    }
}

/* GatherND: y = [index tuples (q - 1 dims), slice of x past b + m dims];
 * the first b (batch) dims are shared by x, the indices and y. */
kernel void st_gather_nd(gp y, st_td yd, gcp x, st_td xd, gcp ix, st_td id, long b)
{
    long i = get_global_id(0);
    if (i >= idx_numel(&yd)) return;
    long c[MAX_RANK];
    idx_coords(&yd, i, c);
    int q = (int)id.rank, m = (int)id.n[q - 1], yr = (int)yd.rank;
    long oy = yd.off, oi = id.off, ox = xd.off;
    for (int d = 0; d < yr; d++) oy += c[d] * yd.s[d];
    for (int d = 0; d < q - 1; d++) oi += c[d] * id.s[d];
    for (int d = 0; d < b; d++) ox += c[d] * xd.s[d];
    int es = dt_size((int)yd.dt);
    for (int j = 0; j < m; j++) {
        long v = st_im_index(ld_l(ix, oi + j * id.s[q - 1], (int)id.dt), xd.n[b + j]);
        if (v < 0) {
            zero_bytes(y, oy, es);
            return;
        }
        ox += v * xd.s[b + j];
    }
    for (int e = 0; q - 1 + e < yr; e++) ox += c[q - 1 + e] * xd.s[b + m + e];
    mv(y, oy, x, ox, es);
}

/* Trilu: keep x where column - row >= k (upper) or <= k (lower), else 0;
 * k from the device (kd) when given. */
kernel void st_trilu(gp y, st_td yd, gcp x, st_td xd, gcp kp, st_td kd, long has_k, long upper)
{
    long i = get_global_id(0);
    if (i >= idx_numel(&yd)) return;
    long c[MAX_RANK];
    idx_coords(&yd, i, c);
    long oy = yd.off, ox = xd.off;
    for (int d = 0; d < (int)yd.rank; d++) {
        oy += c[d] * yd.s[d];
        ox += c[d] * xd.s[d];
    }
    long k = has_k ? ld_l(kp, kd.off, (int)kd.dt) : 0;
    int r = (int)yd.rank;
    if (st_im_trilu_keep(c[r - 2], c[r - 1], k, yd.n[r - 1], (int)upper)) mv(y, oy, x, ox, dt_size((int)yd.dt));
    else zero_bytes(y, oy, dt_size((int)yd.dt));
}

/* EyeLike (1 on the diagonal k, else 0) and ConstantOfShape (the value's
 * bytes everywhere): value_bits holds the bytes of 1 (EyeLike) or of the
 * value, in y's dtype. */
kernel void st_fill_diag(gp y, st_td yd, long k, long diag_only, ulong value_bits)
{
    long i = get_global_id(0);
    if (i >= idx_numel(&yd)) return;
    long c[MAX_RANK];
    idx_coords(&yd, i, c);
    long oy = yd.off;
    for (int d = 0; d < (int)yd.rank; d++) oy += c[d] * yd.s[d];
    int es = dt_size((int)yd.dt);
    bool on = !diag_only || c[1] - c[0] == k;
    ulong e = on ? value_bits : 0;
    switch (es) {
    case 1: y[oy] = (uchar)e; break;
    case 2: ((global ushort *)y)[oy] = (ushort)e; break;
    case 4: ((global uint *)y)[oy] = (uint)e; break;
    default: ((global ulong *)y)[oy] = e; break;
    }
}
