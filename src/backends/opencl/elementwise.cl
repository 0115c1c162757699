/*
 * elementwise.cl — unary (with Clip; the f32 math is activation.cl's),
 * binary, and Where.  One work-item per output element; inputs
 * come with strides in the output's shape (0 on broadcast dims).
 *
 * The op codes are st_unary / st_binary, from ops/codes.h (embedded first
 * in the program).  Float data computes in f32
 * (CLS_F32), f64 in double, integers in 64-bit two's complement with the
 * CPU kernels' conventions (wrapping arithmetic, truncating division,
 * x / 0 = 0).
 */

#define B_ENUM_(name) B_##name,
enum st_binary_code { ST_BINARY_CODES(B_ENUM_) };

#ifdef ST_FP64
inline double unary_d(int code, double x, double a, double b, double g, double lo, double hi, int flags)
{
    return st_sm_unary_f64(code, x, a, b, g, lo, hi, flags);   /* ops/scalar_math.h */
}
#endif

inline long unary_l(int code, long x, long lo, long hi) { return st_sm_unary_i64(code, x, lo, hi); }

/* lop/hip: Clip's min and max tensors (NULL when absent; then lof/hif or
 * lol/hil hold the defaults).  Grid: (innermost dim, rows). */
kernel void st_unary(gp y, st_td yd, gcp x, st_td xd, int code, int cls, float a, float b, float g, int flags, float lof,
                     float hif, long lol, long hil, gcp lop, st_td lod, gcp hip, st_td hid)
{
    long i = get_global_id(0), r = get_global_id(1), oy, ox, unused;
    if (td_outside(&yd, i, r)) return;
    td_row3(&yd, &xd, &xd, r, &oy, &ox, &unused);
    oy += i * TD_INNER(yd);
    ox += i * TD_INNER(xd);
    if (cls == CLS_F32) {
        float lo = lop ? ld_f(lop, lod.off, (int)lod.dt) : lof;
        float hi = hip ? ld_f(hip, hid.off, (int)hid.dt) : hif;
        if (yd.dt == DT_F32 && xd.dt == DT_F32)
            ((global float *)y)[oy] = unary_f(code, ((global const float *)x)[ox], a, b, g, lo, hi, flags);
        else
            st_f(y, oy, (int)yd.dt, unary_f(code, ld_f(x, ox, (int)xd.dt), a, b, g, lo, hi, flags));
    }
#ifdef ST_FP64
    else if (cls == CLS_F64) {
        double lo = lop ? ld_d(lop, lod.off, (int)lod.dt) : (double)lof;
        double hi = hip ? ld_d(hip, hid.off, (int)hid.dt) : (double)hif;
        st_d(y, oy, (int)yd.dt, unary_d(code, ld_d(x, ox, (int)xd.dt), a, b, g, lo, hi, flags));
    }
#endif
    else {
        long lo = lop ? ld_l(lop, lod.off, (int)lod.dt) : lol;
        long hi = hip ? ld_l(hip, hid.off, (int)hid.dt) : hil;
        st_l(y, oy, (int)yd.dt, unary_l(code, ld_l(x, ox, (int)xd.dt), lo, hi));
    }
}

/* ops/scalar_math.h's, as the CPU's and CUDA's; float Mod is fmod (ONNX
 * asks fmod=1 for floats) */
inline float binary_f(int code, float a, float b) { return st_sm_binary_f32(code, a, b, 1); }

#ifdef ST_FP64
inline double binary_d(int code, double a, double b, int fmod_mode) { return st_sm_binary_f64(code, a, b, fmod_mode); }
#endif

inline long binary_l(int code, long a, long b, int fmod_mode, int uns) { return st_sm_binary_i64(code, a, b, fmod_mode, uns); }

kernel void st_binary(gp y, st_td yd, gcp a, st_td ad, gcp b, st_td bd, int code, int cls, int fmod_mode, int uns)
{
    long i = get_global_id(0), r = get_global_id(1), oy, oa, ob;
    if (td_outside(&yd, i, r)) return;
    td_row3(&yd, &ad, &bd, r, &oy, &oa, &ob);
    oy += i * TD_INNER(yd);
    oa += i * TD_INNER(ad);
    ob += i * TD_INNER(bd);
    if (cls == CLS_F32) {
        if (yd.dt == DT_F32 && ad.dt == DT_F32 && bd.dt == DT_F32)
            ((global float *)y)[oy] = binary_f(code, ((global const float *)a)[oa], ((global const float *)b)[ob]);
        else
            st_f(y, oy, (int)yd.dt, binary_f(code, ld_f(a, oa, (int)ad.dt), ld_f(b, ob, (int)bd.dt)));
    }
#ifdef ST_FP64
    else if (cls == CLS_F64) {
        st_d(y, oy, (int)yd.dt, binary_d(code, ld_d(a, oa, (int)ad.dt), ld_d(b, ob, (int)bd.dt), fmod_mode));
    }
#endif
    else {
        st_l(y, oy, (int)yd.dt, binary_l(code, ld_l(a, oa, (int)ad.dt), ld_l(b, ob, (int)bd.dt), fmod_mode, uns));
    }
}

/* y = c ? x : z, elements moved as bytes (any dtype). */
kernel void st_where(gp y, st_td yd, gcp c, st_td cd, gcp x, st_td xd, gcp z, st_td zd)
{
    long i = get_global_id(0), r = get_global_id(1), oy, oc, ox;
    if (td_outside(&yd, i, r)) return;
    td_row3(&yd, &cd, &xd, r, &oy, &oc, &ox);
    long oz = td_row(&yd, &zd, r) + i * TD_INNER(zd);
    oy += i * TD_INNER(yd);
    oc += i * TD_INNER(cd);
    ox += i * TD_INNER(xd);
    int es = dt_size((int)yd.dt);
    if (c[oc]) mv(y, oy, x, ox, es);
    else mv(y, oy, z, oz, es);
}
