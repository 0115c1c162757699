/*
 * k_elementwise.c — host side of the OpenCL elementwise kernels
 * (elementwise.cl, copy.cl): unary ops and Clip, binary ops, the variadic
 * Sum/Max/Min/Mean, Where, Cast.
 *
 * Each picks a compute class from the dtypes the way the CPU kernels do
 * (f32/f16/bf16 in f32, anything with f64 in double, integers in int64),
 * takes its geometry from the walk ops/lower_elementwise.h lowers (the
 * inputs broadcast into the output's shape, the dims in the output's
 * memory order and merged where every operand is contiguous: the CPU's
 * and CUDA's walk) and launches one work-item per output element over
 * (the walk's row, its other dims).  A contiguous or scalar-broadcast walk
 * is one row, which the kernels index without a division.
 */
#include <math.h>
#include <stdint.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/elementwise.h"

enum { CLS_F32 = 0, CLS_F64 = 1, CLS_I64 = 2 };

static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* The class of an op on dtypes a and b (b = a for one input): f64 only
 * when f64 is involved (a device may lack it), f32 when either is a
 * float, else int64. */
static int compute_class(st_dtype a, st_dtype b)
{
    if (a == ST_F64 || b == ST_F64) return CLS_F64;
    if (f32_family(a) || f32_family(b)) return CLS_F32;
    return CLS_I64;
}

/* accepts refused float64 on a device without it (st_cl_accepts_fp64) */
static st_status class_ok(const st_cl_ctx *c, int cls, const char *what)
{
    if (cls == CLS_F64 && !c->dev->fp64)
        return st_error(ST_ERR_INTERNAL, "%s: float64 reached a device without cl_khr_fp64 ('%s')", what, c->dev->name);
    return ST_OK;
}

/* td[0] = y, td[1 + k] = in[k] as the lowered walk of y and its inputs
 * broadcast into its shape, and the grid over it. */
static st_status walk_tds(const st_view *y, int n_in, const st_view *const *in, st_cl_td *td, size_t global[2])
{
    st_lower_ew w;
    st_lower_ew_views(&w, y, n_in, in);
    ST_TRY(st_cl_td_of(y, &td[0]));
    for (int k = 0; k < n_in; k++) ST_TRY(st_cl_td_of(in[k], &td[k + 1]));
    st_cl_td_walk(&w, td);
    st_cl_grid(td, n_in + 1, global);
    return ST_OK;
}

static st_status run_unary(const st_kctx *k, const st_ew_state *s, int code, float lof, float hif, long lol, long hil,
                           const st_view *lov, const st_view *hiv)
{
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int cls = compute_class(x->dtype, y->dtype == ST_F64 ? ST_F64 : x->dtype);
    ST_TRY(class_ok(c, cls, "unary op"));
    st_cl_td td[2], lod, hid;
    size_t global[2];
    ST_TRY(walk_tds(y, 1, (const st_view *[]){x}, td, global));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), lom = NULL, him = NULL;
    if (lov && lov->storage) {
        ST_TRY(st_cl_td_of(lov, &lod));
        lom = st_cl_mem(lov);
    } else {
        ST_TRY(st_cl_td_of(x, &lod));
    }
    if (hiv && hiv->storage) {
        ST_TRY(st_cl_td_of(hiv, &hid));
        him = st_cl_mem(hiv);
    } else {
        ST_TRY(st_cl_td_of(x, &hid));
    }
    cl_int ccode = code, ccls = cls, flags = (s->detect_pos ? 1 : 0) | (s->detect_neg ? 2 : 0);
    cl_float a = s->alpha, b = s->beta, g = s->gamma, clo = lof, chi = hif;
    cl_long llo = lol, lhi = hil;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_unary, &kern));
    st_cl_arg args[] = {ST_CLA(ym),    ST_CLA(td[0]), ST_CLA(xm),  ST_CLA(td[1]), ST_CLA(ccode), ST_CLA(ccls),
                        ST_CLA(a),     ST_CLA(b),     ST_CLA(g),   ST_CLA(flags), ST_CLA(clo),   ST_CLA(chi),
                        ST_CLA(llo),   ST_CLA(lhi),   ST_CLA(lom), ST_CLA(lod),   ST_CLA(him),   ST_CLA(hid)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_unary, (int)(sizeof args / sizeof *args), args));
    return st_cl_run(c, kern, ST_CLK_unary, 2, global, NULL, true);
}

st_status st_cl_unary(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    return run_unary(k, s, s->code, 0.0f, 0.0f, 0, 0, NULL, NULL);
}

st_status st_cl_clip(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    bool flt = st_dtype_is_float(k->views[0].dtype);
    /* attributes (opset < 11) or the type's range; input tensors override
     * on the device */
    float lof = flt ? s->alpha : -INFINITY, hif = flt ? s->beta : INFINITY;
    if (lof < -3.402823466e38f) lof = -INFINITY;
    if (hif > 3.402823466e38f) hif = INFINITY;
    const st_view *lo = k->n_in > 1 && k->in[1].data ? &k->views[1] : NULL;
    const st_view *hi = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    return run_unary(k, s, ST_U_CLIP, lof, hif, INT64_MIN, INT64_MAX, lo, hi);
}

/* y = a op b over y's shape; a and b broadcast. */
static st_status run_binary(st_cl_ctx *c, const st_view *a, const st_view *b, const st_view *y, int code, bool fmod_mode,
                            bool chain)
{
    int cls = compute_class(a->dtype, b->dtype);
    ST_TRY(class_ok(c, cls, "binary op"));
    st_cl_td td[3];
    size_t global[2];
    ST_TRY(walk_tds(y, 2, (const st_view *[]){a, b}, td, global));
    cl_mem ym = st_cl_mem(y), am = st_cl_mem(a), bm = st_cl_mem(b);
    cl_int ccode = code, ccls = cls, fm = fmod_mode, uns = !st_dtype_is_signed(a->dtype) && a->dtype != ST_BOOL &&
                                                          !st_dtype_is_float(a->dtype);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_binary, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(am),   ST_CLA(td[1]), ST_CLA(bm),
                        ST_CLA(td[2]), ST_CLA(ccode), ST_CLA(ccls), ST_CLA(fm),    ST_CLA(uns)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_binary, (int)(sizeof args / sizeof *args), args));
    return st_cl_run(c, kern, ST_CLK_binary, 2, global, NULL, chain);
}

st_status st_cl_binary(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    st_view b = k->views[1];
    st_ew_legacy_b(s, &b.rank, b.sizes, b.strides);
    return run_binary(k->dev, &k->views[0], &b, &k->views[k->n_in], s->code, s->fmod != 0, true);
}

/* y = x converted and strided; x may have another shape of the same
 * element count (row-major order), or be broadcast (stride 0). */
st_status st_cl_copy_view(st_cl_ctx *c, const st_view *y, const st_view *x, const st_cl_td *xtd, bool chain)
{
    /* a float source converts through float (or double), an integer one
     * through int64, so an integer is never rounded on its way */
    int cls = x->dtype == ST_F64 || y->dtype == ST_F64 ? CLS_F64 : st_dtype_is_float(x->dtype) ? CLS_F32 : CLS_I64;
    if (x->dtype != y->dtype) ST_TRY(class_ok(c, cls, "copy"));
    st_cl_td td[2];
    ST_TRY(st_cl_td_of(y, &td[0]));
    if (xtd) td[1] = *xtd;
    else ST_TRY(st_cl_td_of(x, &td[1]));
    bool same_shape = td[0].rank == td[1].rank;
    for (int d = 0; d < td[0].rank && same_shape; d++) same_shape = td[0].n[d] == td[1].n[d];
    size_t global[2];
    if (same_shape) {
        /* element for element (a broadcast xtd too): the lowered walk */
        int64_t xs[ST_MAX_RANK];
        for (int d = 0; d < td[1].rank; d++) xs[d] = td[1].s[d];
        st_lower_ew w;
        st_lower_ew_make(&w, y->rank, y->sizes, 2, (const int64_t *[]){y->strides, xs});
        st_cl_td_walk(&w, td);
        st_cl_grid(td, 2, global);
    } else {
        /* a reshape: y's row-major order stands for x's, so nothing is reordered */
        st_cl_grid(td, 1, global);
    }
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x);
    cl_int ccls = cls, same = same_shape;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_copy, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(xm), ST_CLA(td[1]), ST_CLA(ccls), ST_CLA(same)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_copy, 6, args));
    return st_cl_run(c, kern, ST_CLK_copy, 2, global, NULL, chain);
}

st_status st_cl_cast(const st_kctx *k)
{
    return st_cl_copy_view(k->dev, &k->views[k->n_in], &k->views[0], NULL, true);
}

/* Sum/Max/Min/Mean: y = x0 broadcast, then y = y op xi, then Mean's
 * division: a chain of launches. */
st_status st_cl_variadic(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *y = &k->views[k->n_in];
    st_cl_td xb;
    ST_TRY(st_cl_td_broadcast(&k->views[0], y, &xb));
    ST_TRY(st_cl_copy_view(c, y, &k->views[0], &xb, true));
    for (int i = 1; i < k->n_in; i++) ST_TRY(run_binary(c, y, &k->views[i], y, s->code, false, true));
    if (s->code == ST_B_MEAN && k->n_in > 1) {
        /* a scalar divisor in a tiny buffer the command owns (its slot) */
        if (!c->slot->data) {
            union {
                float f;
                double d;
            } v;
            size_t es = y->dtype == ST_F64 ? 8 : 4;
            if (es == 8) v.d = (double)k->n_in;
            else v.f = (float)k->n_in;
            cl_int err;
            cl_mem m = clCreateBuffer(c->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, es, &v, &err);
            ST_TRY(st_cl_check(err, "clCreateBuffer (Mean's divisor)"));
            c->slot->data = m;
            c->slot->release = st_cl_release_mem;
        }
        st_storage fake = {0};
        fake.dev = c->slot->data;
        st_view d;
        st_view_init(&d, y->dtype == ST_F64 ? ST_F64 : ST_F32, 0, NULL);
        d.storage = &fake;
        ST_TRY(run_binary(c, y, &d, y, ST_B_DIV, false, true));
    }
    return ST_OK;
}

st_status st_cl_where(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_view *y = &k->views[k->n_in];
    st_cl_td td[4];
    size_t global[2];
    ST_TRY(walk_tds(y, 3, (const st_view *[]){&k->views[0], &k->views[1], &k->views[2]}, td, global));
    cl_mem ym = st_cl_mem(y), cm = st_cl_mem(&k->views[0]), xm = st_cl_mem(&k->views[1]), zm = st_cl_mem(&k->views[2]);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_where, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(cm), ST_CLA(td[1]),
                        ST_CLA(xm), ST_CLA(td[2]), ST_CLA(zm), ST_CLA(td[3])};
    ST_TRY(st_cl_set_args(kern, ST_CLK_where, 8, args));
    return st_cl_run(c, kern, ST_CLK_where, 2, global, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

#define UNARY_K(name, code, types, a, b, g) {#name, "", ST_DT_ALL, st_cl_unary, st_cl_accepts_fp64, NULL, NULL},
#define BINARY_K(name, code, types, to_bool) {#name, "", ST_DT_ALL, st_cl_binary, st_cl_accepts_fp64, NULL, NULL},
#define VARIADIC_K(name, code, types) {#name, "", ST_DT_ALL, st_cl_variadic, st_cl_accepts_fp64, NULL, NULL},
const st_kernel st_cl_k_elementwise[] = {
    ST_UNARY_OPS(UNARY_K)
    ST_BINARY_OPS(BINARY_K)
    ST_VARIADIC_OPS(VARIADIC_K)
    {"Where", "", ST_DT_ALL, st_cl_where, st_cl_accepts_fp64, NULL, NULL},
    {"Clip", "", ST_DT_ALL, st_cl_clip, st_cl_accepts_fp64, NULL, NULL},
    {"Cast", "", ST_DT_ALL, st_cl_cast, st_cl_accepts_fp64, NULL, NULL},
    {"CastLike", "", ST_DT_ALL, st_cl_cast, st_cl_accepts_fp64, NULL, NULL},
    {NULL}
};
