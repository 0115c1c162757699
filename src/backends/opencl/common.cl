/*
 * common.cl — what every strata OpenCL kernel shares: dtype codes, the
 * strided operand descriptor, and loads/stores of any dtype.
 *
 * An operand is a buffer (the storage's one cl_mem, rule 1 of docs/architecture.md)
 * plus an st_td: the element offset of element [0, ..., 0] from the
 * buffer's base, the dtype, and sizes/strides in elements (strides may be
 * 0 or negative).  Kernels index by element and load through ld_f /
 * ld_d / ld_l, which switch on the dtype at run time; the switch is
 * uniform across a launch, so it costs a branch, not divergence.
 *
 * f16 needs no cl_khr_fp16: vload_half / vstore_half_rte are core OpenCL
 * and convert to and from float, so every kernel computes f16 and bf16 in
 * f32.  f64 exists only when the host passes -DST_FP64 (cl_khr_fp64).
 * This file is compiled first; the others follow it in one program.
 */
#ifdef ST_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* st_dtype (ONNX TensorProto numbering) */
#define DT_F32 1
#define DT_U8 2
#define DT_I8 3
#define DT_U16 4
#define DT_I16 5
#define DT_I32 6
#define DT_I64 7
#define DT_BOOL 9
#define DT_F16 10
#define DT_F64 11
#define DT_U32 12
#define DT_U64 13
#define DT_BF16 16

#define MAX_RANK 8

/* Same layout as st_cl_td in cl_internal.h: all 8-byte members. */
typedef struct st_td {
    long off;
    long dt;
    long rank;
    long n[MAX_RANK];
    long s[MAX_RANK];
} st_td;

/* Compute classes of elementwise kernels. */
#define CLS_F32 0
#define CLS_F64 1
#define CLS_I64 2

typedef global const uchar *gcp;
typedef global uchar *gp;

inline float bf16_to_f(ushort b) { return as_float((uint)b << 16); }

inline ushort f_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                                          /* round to nearest even */
    return (ushort)(u >> 16);
}

inline long ld_l(gcp p, long i, int dt)
{
    switch (dt) {
    case DT_I8: return ((global const char *)p)[i];
    case DT_U8:
    case DT_BOOL: return p[i];
    case DT_I16: return ((global const short *)p)[i];
    case DT_U16: return ((global const ushort *)p)[i];
    case DT_I32: return ((global const int *)p)[i];
    case DT_U32: return ((global const uint *)p)[i];
    case DT_I64:
    case DT_U64: return ((global const long *)p)[i];
    case DT_F32: return convert_long_sat_rtz(((global const float *)p)[i]);
    case DT_F16: return convert_long_sat_rtz(vload_half(i, (global const half *)p));
    case DT_BF16: return convert_long_sat_rtz(bf16_to_f(((global const ushort *)p)[i]));
#ifdef ST_FP64
    case DT_F64: return convert_long_sat_rtz(((global const double *)p)[i]);
#endif
    }
    return 0;
}

inline float ld_f(gcp p, long i, int dt)
{
    switch (dt) {
    case DT_F32: return ((global const float *)p)[i];
    case DT_F16: return vload_half(i, (global const half *)p);
    case DT_BF16: return bf16_to_f(((global const ushort *)p)[i]);
#ifdef ST_FP64
    case DT_F64: return (float)((global const double *)p)[i];
#endif
    case DT_U64: return (float)((global const ulong *)p)[i];
    }
    return (float)ld_l(p, i, dt);
}

inline void st_l(gp p, long i, int dt, long v)
{
    switch (dt) {
    case DT_I8:
    case DT_U8: p[i] = (uchar)v; break;
    case DT_BOOL: p[i] = v != 0; break;
    case DT_I16:
    case DT_U16: ((global ushort *)p)[i] = (ushort)v; break;
    case DT_I32:
    case DT_U32: ((global uint *)p)[i] = (uint)v; break;
    case DT_I64:
    case DT_U64: ((global long *)p)[i] = v; break;
    case DT_F32: ((global float *)p)[i] = (float)v; break;
    case DT_F16: vstore_half_rte((float)v, i, (global half *)p); break;
    case DT_BF16: ((global ushort *)p)[i] = f_to_bf16((float)v); break;
#ifdef ST_FP64
    case DT_F64: ((global double *)p)[i] = (double)v; break;
#endif
    }
}

inline void st_f(gp p, long i, int dt, float v)
{
    switch (dt) {
    case DT_F32: ((global float *)p)[i] = v; break;
    case DT_F16: vstore_half_rte(v, i, (global half *)p); break;
    case DT_BF16: ((global ushort *)p)[i] = f_to_bf16(v); break;
#ifdef ST_FP64
    case DT_F64: ((global double *)p)[i] = (double)v; break;
#endif
    case DT_BOOL: p[i] = v != 0.0f; break;
    default: st_l(p, i, dt, isnan(v) ? 0 : convert_long_sat_rtz(v)); break;
    }
}

#ifdef ST_FP64
inline double ld_d(gcp p, long i, int dt)
{
    switch (dt) {
    case DT_F64: return ((global const double *)p)[i];
    case DT_F32: return ((global const float *)p)[i];
    case DT_F16: return vload_half(i, (global const half *)p);
    case DT_BF16: return bf16_to_f(((global const ushort *)p)[i]);
    case DT_U64: return (double)((global const ulong *)p)[i];
    }
    return (double)ld_l(p, i, dt);
}

inline void st_d(gp p, long i, int dt, double v)
{
    switch (dt) {
    case DT_F64: ((global double *)p)[i] = v; break;
    case DT_F32: ((global float *)p)[i] = (float)v; break;
    case DT_F16: vstore_half_rte((float)v, i, (global half *)p); break;
    case DT_BF16: ((global ushort *)p)[i] = f_to_bf16((float)v); break;
    case DT_BOOL: p[i] = v != 0.0; break;
    default: st_l(p, i, dt, isnan(v) ? 0 : convert_long_sat_rtz(v)); break;
    }
}
#endif

/* Copies one element of es bytes (data movement in any dtype). */
inline void mv(gp y, long iy, gcp x, long ix, int es)
{
    switch (es) {
    case 1: y[iy] = x[ix]; break;
    case 2: ((global ushort *)y)[iy] = ((global const ushort *)x)[ix]; break;
    case 4: ((global uint *)y)[iy] = ((global const uint *)x)[ix]; break;
    default: ((global ulong *)y)[iy] = ((global const ulong *)x)[ix]; break;
    }
}

inline int dt_size(int dt)
{
    switch (dt) {
    case DT_U8:
    case DT_I8:
    case DT_BOOL: return 1;
    case DT_U16:
    case DT_I16:
    case DT_F16:
    case DT_BF16: return 2;
    case DT_I64:
    case DT_U64:
    case DT_F64: return 8;
    }
    return 4;
}

/* q = i / n, r = i % n, in 32 bits when both fit (64-bit division is
 * slow on GPUs). */
#define DIVMOD(i, n, q, r)                                  \
    do {                                                    \
        if ((((ulong)(i)) | ((ulong)(n))) >> 32 == 0) {     \
            (q) = (long)((uint)(i) / (uint)(n));            \
        } else {                                            \
            (q) = (i) / (n);                                \
        }                                                   \
        (r) = (i) - (q) * (n);                              \
    } while (0)

/* The element offset, in descriptor t, of the row-major element number i
 * of the shape `shape` (whose sizes the descriptor's strides follow). */
inline long td_at(const st_td *shape, const st_td *t, long i)
{
    long off = t->off;
    for (int d = (int)shape->rank - 1; d > 0; d--) {
        long q, r;
        DIVMOD(i, shape->n[d], q, r);
        off += r * t->s[d];
        i = q;
    }
    if (shape->rank > 0) off += i * t->s[0];
    return off;
}

/* Elementwise kernels run on a 2-D grid: dimension 0 walks the innermost
 * (coalesced) dim, dimension 1 the rows made of all the others, so the
 * divisions that locate a row are made once per row, not per element
 * (and are uniform across the work-items that vectorise together). */
inline long td_row(const st_td *shape, const st_td *t, long r)
{
    long off = t->off;
    for (int d = (int)shape->rank - 2; d >= 0; d--) {
        long q, rr;
        DIVMOD(r, shape->n[d], q, rr);
        off += rr * t->s[d];
        r = q;
    }
    return off;
}

inline void td_row3(const st_td *t0, const st_td *t1, const st_td *t2, long r, long *o0, long *o1, long *o2)
{
    long a = t0->off, b = t1->off, c = t2->off;
    for (int d = (int)t0->rank - 2; d >= 0; d--) {
        long q, rr;
        DIVMOD(r, t0->n[d], q, rr);
        a += rr * t0->s[d];
        b += rr * t1->s[d];
        c += rr * t2->s[d];
        r = q;
    }
    *o0 = a;
    *o1 = b;
    *o2 = c;
}

/* Whether (i, r) is outside the grid of shape t (launches are rounded up
 * to whole work-groups). */
inline bool td_outside(const st_td *t, long i, long r)
{
    if (i >= t->n[t->rank - 1]) return true;
    long rows = 1;
    for (int d = 0; d < (int)t->rank - 1; d++) rows *= t->n[d];
    return r >= rows;
}

/* The element stride of the innermost dim. */
#define TD_INNER(t) ((t).s[(t).rank - 1])
