/*
 * rows.cl — kernels that work along a set of axes: Softmax/LogSoftmax and
 * the reductions (ReduceSum, ReduceMean, ...), and BatchNormalization.
 *
 * The host splits x's shape into outer positions and rows exactly as the
 * CPU kernels do (backends/common/rows.h: both halves coalesced, rows
 * numbered row-major over the outer axes, elements visited row-major
 * within a row), and passes both halves with x's and y's strides in
 * st_rows_p.  A reduction's output has stride 0 along the row.
 *
 * Every output is computed by one work-item (or, for a long softmax row,
 * one work-group) in a fixed order, so results do not depend on how the
 * device schedules work.
 */

/* Same layout as st_cl_rows_p in k_rows.c. */
typedef struct st_rows_p {
    long n_outer, row_len, outer_rank, row_rank;
    long osz[8], rsz[8];
    long xo, xos[8], xrs[8];
    long yo, yos[8], yrs[8];
    long x_dt, y_dt, kind, cls;
} st_rows_p;

/* Offsets of outer row o in x and y. */
inline void rows_outer(const st_rows_p *p, long o, long *ox, long *oy)
{
    long a = p->xo, b = p->yo;
    for (int d = (int)p->outer_rank - 1; d >= 0; d--) {
        long q, r;
        DIVMOD(o, p->osz[d], q, r);
        a += r * p->xos[d];
        b += r * p->yos[d];
        o = q;
    }
    *ox = a;
    *oy = b;
}

/* Offset of element j of a row, with the row strides st. */
inline long rows_at(const st_rows_p *p, const long *st, long j)
{
    if (p->row_rank == 1) return j * st[0];
    long off = 0;
    for (int d = (int)p->row_rank - 1; d >= 0; d--) {
        long q, r;
        DIVMOD(j, p->rsz[d], q, r);
        off += r * st[d];
        j = q;
    }
    return off;
}

#define N_SOFTMAX 0
#define N_LOG_SOFTMAX 1

/* A row per work-item: short rows, many of them. */
kernel void st_softmax_serial(gp y, gcp x, st_rows_p p)
{
    long o = get_global_id(0), ox, oy;
    if (o >= p.n_outer) return;
    rows_outer(&p, o, &ox, &oy);
    int xdt = (int)p.x_dt, ydt = (int)p.y_dt;
    float mx = -INFINITY;
    for (long j = 0; j < p.row_len; j++) {
        float v = ld_f(x, ox + rows_at(&p, p.xrs, j), xdt);
        mx = ((v > mx) | (v != v)) ? v : mx;
    }
    float sum = 0.0f;
    for (long j = 0; j < p.row_len; j++) sum += exp(ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - mx);
    if (p.kind == N_LOG_SOFTMAX) {
        float lse = mx + log(sum);
        for (long j = 0; j < p.row_len; j++)
            st_f(y, oy + rows_at(&p, p.yrs, j), ydt, ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - lse);
    } else {
        float inv = 1.0f / sum;
        for (long j = 0; j < p.row_len; j++)
            st_f(y, oy + rows_at(&p, p.yrs, j), ydt, exp(ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - mx) * inv);
    }
}

#define SG 256

/* A row per work-group of SG: long rows.  Each work-item strides over the
 * row, then a fixed tree combines the partial results. */
kernel __attribute__((reqd_work_group_size(SG, 1, 1))) void st_softmax_group(gp y, gcp x, st_rows_p p)
{
    local float red[SG];
    long o = get_group_id(0), ox, oy;
    int t = get_local_id(0);
    rows_outer(&p, o, &ox, &oy);
    int xdt = (int)p.x_dt, ydt = (int)p.y_dt;
    float mx = -INFINITY;
    for (long j = t; j < p.row_len; j += SG) {
        float v = ld_f(x, ox + rows_at(&p, p.xrs, j), xdt);
        mx = ((v > mx) | (v != v)) ? v : mx;
    }
    red[t] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = SG / 2; h > 0; h >>= 1) {
        if (t < h) {
            float a = red[t], b = red[t + h];
            red[t] = ((b > a) | (b != b)) ? b : a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (long j = t; j < p.row_len; j += SG) sum += exp(ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - mx);
    red[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = SG / 2; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    sum = red[0];
    if (p.kind == N_LOG_SOFTMAX) {
        float lse = mx + log(sum);
        for (long j = t; j < p.row_len; j += SG)
            st_f(y, oy + rows_at(&p, p.yrs, j), ydt, ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - lse);
    } else {
        float inv = 1.0f / sum;
        for (long j = t; j < p.row_len; j += SG)
            st_f(y, oy + rows_at(&p, p.yrs, j), ydt, exp(ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - mx) * inv);
    }
}

/* st_reduce_kind */
#define R_SUM 0
#define R_MEAN 1
#define R_MAX 2
#define R_MIN 3
#define R_PROD 4
#define R_L1 5
#define R_L2 6
#define R_LOG_SUM 7
#define R_LOG_SUM_EXP 8
#define R_SUM_SQUARE 9

/* One output per work-item, its row summed in row-major order.  cls:
 * CLS_F32 for f32/f16/bf16, CLS_F64 for f64 (and integers under L2, log
 * sum, log-sum-exp, as on the CPU), CLS_I64 for the rest of integers
 * (wrapping; the mean divides at the end, in double when available). */
kernel void st_reduce(gp y, gcp x, st_rows_p p)
{
    long o = get_global_id(0), ox, oy;
    if (o >= p.n_outer) return;
    rows_outer(&p, o, &ox, &oy);
    int xdt = (int)p.x_dt, ydt = (int)p.y_dt, kind = (int)p.kind;
    long n = p.row_len;
    if (p.cls == CLS_F32) {
        float acc = kind == R_PROD ? 1.0f : kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0.0f, shift = 0.0f;
        if (kind == R_LOG_SUM_EXP) {
            float mx = -INFINITY;
            for (long j = 0; j < n; j++) {
                float v = ld_f(x, ox + rows_at(&p, p.xrs, j), xdt);
                mx = ((v > mx) | (v != v)) ? v : mx;
            }
            shift = mx;
            float sh = isfinite(mx) ? mx : INFINITY;
            for (long j = 0; j < n; j++) acc += exp(ld_f(x, ox + rows_at(&p, p.xrs, j), xdt) - sh);
        } else {
            for (long j = 0; j < n; j++) {
                float v = ld_f(x, ox + rows_at(&p, p.xrs, j), xdt);
                switch (kind) {
                case R_L1: acc += fabs(v); break;
                case R_L2:
                case R_SUM_SQUARE: acc = fma(v, v, acc); break;
                case R_PROD: acc *= v; break;
                case R_MAX: acc = ((v > acc) | (v != v)) ? v : acc; break;
                case R_MIN: acc = ((v < acc) | (v != v)) ? v : acc; break;
                default: acc += v; break;
                }
            }
        }
        switch (kind) {
        case R_MEAN: acc /= (float)n; break;
        case R_L2: acc = sqrt(acc); break;
        case R_LOG_SUM: acc = log(acc); break;
        case R_LOG_SUM_EXP: acc = isfinite(shift) ? log(acc) + shift : shift; break;
        }
        st_f(y, oy, ydt, acc);
    }
#ifdef ST_FP64
    else if (p.cls == CLS_F64) {
        double acc = kind == R_PROD ? 1.0 : kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0.0, shift = 0.0;
        if (kind == R_LOG_SUM_EXP) {
            double mx = -INFINITY;
            for (long j = 0; j < n; j++) {
                double v = ld_d(x, ox + rows_at(&p, p.xrs, j), xdt);
                mx = ((v > mx) | (v != v)) ? v : mx;
            }
            shift = isfinite(mx) ? mx : 0.0;
            for (long j = 0; j < n; j++) acc += exp(ld_d(x, ox + rows_at(&p, p.xrs, j), xdt) - shift);
        } else {
            for (long j = 0; j < n; j++) {
                double v = ld_d(x, ox + rows_at(&p, p.xrs, j), xdt);
                switch (kind) {
                case R_L1: acc += fabs(v); break;
                case R_L2:
                case R_SUM_SQUARE: acc += v * v; break;
                case R_PROD: acc *= v; break;
                case R_MAX: acc = ((v > acc) | (v != v)) ? v : acc; break;
                case R_MIN: acc = ((v < acc) | (v != v)) ? v : acc; break;
                default: acc += v; break;
                }
            }
        }
        switch (kind) {
        case R_MEAN: acc /= (double)n; break;
        case R_L2: acc = sqrt(acc); break;
        case R_LOG_SUM: acc = log(acc); break;
        case R_LOG_SUM_EXP: acc = log(acc) + shift; break;
        }
        st_d(y, oy, ydt, acc);
    }
#endif
    else {
        bool uns = xdt == DT_U64;
        ulong acc = kind == R_PROD ? 1ul
                  : kind == R_MAX  ? (uns ? 0ul : (ulong)LONG_MIN)
                  : kind == R_MIN  ? (uns ? ULONG_MAX : (ulong)LONG_MAX)
                                   : 0ul;
        for (long j = 0; j < n; j++) {
            ulong v = (ulong)ld_l(x, ox + rows_at(&p, p.xrs, j), xdt);
            bool gt = uns ? v > acc : (long)v > (long)acc, lt = uns ? v < acc : (long)v < (long)acc;
            switch (kind) {
            case R_L1: acc += !uns && (long)v < 0 ? 0ul - v : v; break;
            case R_SUM_SQUARE: acc += v * v; break;
            case R_PROD: acc *= v; break;
            case R_MAX: if (gt) acc = v; break;
            case R_MIN: if (lt) acc = v; break;
            default: acc += v; break;
            }
        }
        if (kind == R_MEAN) {
#ifdef ST_FP64
            double sum = uns ? (double)acc : (double)(long)acc;
            st_d(y, oy, ydt, sum / (double)n);
#else
            float sum = uns ? (float)acc : (float)(long)acc;
            st_f(y, oy, ydt, sum / (float)n);
#endif
        } else {
            st_l(y, oy, ydt, (long)acc);
        }
    }
}

/* BatchNormalization (inference): y = x * a + b with a = scale /
 * sqrt(var + eps), b = B - mean * a, per parameter set c = (i / inner) %
 * count of x's row-major element i.  The parameters are 1-D views (or
 * packed, for the non-spatial form) given by offset and stride. */
typedef struct st_bn_p {
    long inner, count;
    long po[4], ps[4];
    long p_dt[4];
    float eps, pad;
} st_bn_p;

kernel void st_batchnorm(gp y, st_td yd, gcp x, st_td xd, gcp scale, gcp bias, gcp mean, gcp var, st_bn_p p)
{
    long i = get_global_id(0), r = get_global_id(1), oy, ox, unused;
    if (td_outside(&yd, i, r)) return;
    td_row3(&yd, &xd, &xd, r, &oy, &ox, &unused);
    oy += i * TD_INNER(yd);
    ox += i * TD_INNER(xd);
    long c = ((r * yd.n[yd.rank - 1] + i) / p.inner) % p.count;
    float s = ld_f(scale, p.po[0] + c * p.ps[0], (int)p.p_dt[0]);
    float b = ld_f(bias, p.po[1] + c * p.ps[1], (int)p.p_dt[1]);
    float m = ld_f(mean, p.po[2] + c * p.ps[2], (int)p.p_dt[2]);
    float v = ld_f(var, p.po[3] + c * p.ps[3], (int)p.p_dt[3]);
    float a = s / sqrt(v + p.eps);
    float sh = fma(-m, a, b);
    st_f(y, oy, (int)yd.dt, fma(ld_f(x, ox, (int)xd.dt), a, sh));
}
