/*
 * copy.cl — the strided copy: a view op that must copy, Concat's inputs
 * that were not placed in its output, Cast.  Element i (row-major) of x
 * goes to element i (row-major) of y; the two may have different shapes
 * of the same element count (a reshape of a layout that cannot be a
 * view), and different dtypes (Cast: floats through float or double,
 * integers through 64-bit, float to integer truncates and saturates with
 * NaN to 0, anything to bool is != 0).
 */

kernel void st_copy(gp y, st_td yd, gcp x, st_td xd, int cls, int same_shape)
{
    long i = get_global_id(0), r = get_global_id(1);
    if (td_outside(&yd, i, r)) return;
    long oy = td_row(&yd, &yd, r) + i * TD_INNER(yd);
    long ox = same_shape ? td_row(&yd, &xd, r) + i * TD_INNER(xd) : td_at(&xd, &xd, r * yd.n[yd.rank - 1] + i);
    int ty = (int)yd.dt, tx = (int)xd.dt;
    if (ty == tx) {
        mv(y, oy, x, ox, dt_size(ty));
    } else if (cls == CLS_F32) {
        st_f(y, oy, ty, ld_f(x, ox, tx));
    }
#ifdef ST_FP64
    else if (cls == CLS_F64) {
        st_d(y, oy, ty, ld_d(x, ox, tx));
    }
#endif
    else {
        st_l(y, oy, ty, ld_l(x, ox, tx));
    }
}
