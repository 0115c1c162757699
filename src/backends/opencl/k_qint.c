/*
 * k_qint.c — host side of the integer quantization ops on OpenCL
 * (qint.cl): DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv, 8-bit, bit-identical with the CPU backend.
 *
 * Why on the device: a dynamically quantized model (ORT's
 * quantize_dynamic: DynamicQuantizeLinear -> ConvInteger / MatMulInteger
 * -> Cast -> Mul) otherwise runs its every conv on the CPU, with two
 * transfers around each.  The kernels are direct ones with int32 sums
 * (the matmul one output per work-item, the conv QCB output channels of
 * one pixel); what they do not take (a float64 scale, more than 4 batch
 * dims) stays on the CPU: accepts refuses it.  QLinearConv also takes
 * what the QDQ fusion (passes/fuse_qdq.c) sets in its state: the type to
 * requantize to and a table of the elementwise ops that followed it.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/misc.h"

#define QMM_BATCH 4
/* output channels per work-item of st_qconv (qint.cl's QCB) */
#define QCB 8
/* DynamicQuantizeLinear's partial ranges: enough parts to fill a device */
#define DYNQ_PARTS 256

static bool is8(st_dtype t) { return t == ST_U8 || t == ST_I8; }
static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* Every present operand 8-bit, but the scales (f32, f16, bf16: inputs
 * `scales`), QLinearConv's int32 bias (input `bias`, or -1) and output 0
 * (8-bit, or int32 for the Integer ops). */
static bool q_accepts(const st_knode *n, char *why, size_t len, const int *scales, int n_scales, int bias)
{
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        bool scale = false;
        for (int j = 0; j < n_scales; j++) scale |= scales[j] == i;
        bool ok = scale ? f32_family(v->dtype)
                  : i == bias && i < n->n_in ? v->dtype == ST_I32
                  : i == n->n_in ? is8(v->dtype) || v->dtype == ST_I32
                  : is8(v->dtype);
        if (!ok) return st_kernel_refuse(why, len, "a %s operand %d", st_dtype_name(v->dtype), i);
    }
    return true;
}

static bool accepts_dynq(const st_knode *n, char *why, size_t len)
{
    if (!f32_family(n->views[0].dtype)) return st_kernel_refuse(why, len, "a %s input", st_dtype_name(n->views[0].dtype));
    return true;
}

static bool accepts_qmm(const st_knode *n, char *why, size_t len)
{
    const st_qmatmul_state *s = n->state;
    const st_view *a = &n->views[0], *b = &n->views[s->qlinear ? 3 : 1], *y = &n->views[n->n_in];
    int nb = y->rank - (a->rank == 1 ? 0 : 1) - (b->rank == 1 ? 0 : 1);
    if (nb > QMM_BATCH) return st_kernel_refuse(why, len, "%d batch dims (at most %d)", nb, QMM_BATCH);
    static const int QL_SCALES[] = {1, 4, 6};
    return s->qlinear ? q_accepts(n, why, len, QL_SCALES, 3, 8) : q_accepts(n, why, len, NULL, 0, -1);
}

/* The largest element offset in v from its element [0, ..., 0]. */
static int64_t span(const st_view *v)
{
    int64_t e = 0;
    for (int d = 0; d < v->rank; d++) e += (v->sizes[d] - 1) * (v->strides[d] < 0 ? -v->strides[d] : v->strides[d]);
    return e;
}

static bool accepts_qconv(const st_knode *n, char *why, size_t len)
{
    const st_qconv_state *s = n->state;
    if (s->q_type && !is8((st_dtype)s->q_type)) return st_kernel_refuse(why, len, "requantization to %s", st_dtype_name((st_dtype)s->q_type));
    /* st_qconv indexes within x and w in 32 bits */
    if (span(&n->views[0]) >= INT32_MAX || span(&n->views[s->qlinear ? 3 : 1]) >= INT32_MAX)
        return st_kernel_refuse(why, len, "an x or w of 2^31 elements or more");
    static const int QL_SCALES[] = {1, 4, 6};
    return s->qlinear ? q_accepts(n, why, len, QL_SCALES, 3, 8) : q_accepts(n, why, len, NULL, 0, -1);
}

static cl_long elem_off(const st_view *v) { return v->offset / (int64_t)st_dtype_size(v->dtype); }

/* ---- DynamicQuantizeLinear ---- */

static st_status st_cl_dynamic_quantize(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n = st_view_numel(x);
    /* the parts' ranges, then the scale and zero point: a buffer the
     * command owns (its slot) */
    cl_long parts = n < DYNQ_PARTS ? (n > 0 ? n : 1) : DYNQ_PARTS;
    if (!c->slot->data) {
        cl_int err;
        cl_mem m = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE, (size_t)(2 * DYNQ_PARTS + 2) * sizeof(cl_float), NULL, &err);
        ST_TRY(st_cl_check(err, "clCreateBuffer (DynamicQuantizeLinear's range)"));
        c->slot->data = m;
        c->slot->release = st_cl_release_mem;
    }
    cl_mem mm = c->slot->data, xm = st_cl_mem(x), ym = st_cl_mem(y);
    st_cl_td xd, yd, xb, sd, zd;
    ST_TRY(st_cl_td_of(x, &xd));
    st_cl_td_coalesce(&xd, 1);
    cl_long cn = n;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_dynq_range, &kern));
    st_cl_arg ra[] = {ST_CLA(xm), ST_CLA(xd), ST_CLA(cn), ST_CLA(parts), ST_CLA(mm)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_dynq_range, 5, ra));
    size_t g = (size_t)parts;
    ST_TRY(st_cl_run(c, kern, ST_CLK_dynq_range, 1, &g, NULL, true));

    bool has_s = k->n_out > 1 && k->out[1].data, has_z = k->n_out > 2 && k->out[2].data;
    const st_view *sv = has_s ? &k->views[k->n_in + 1] : x, *zv = has_z ? &k->views[k->n_in + 2] : x;
    memset(&sd, 0, sizeof sd);
    memset(&zd, 0, sizeof zd);
    if (has_s) ST_TRY(st_cl_td_of(sv, &sd));
    if (has_z) ST_TRY(st_cl_td_of(zv, &zd));
    cl_mem sm = has_s ? st_cl_mem(sv) : mm, zm = has_z ? st_cl_mem(zv) : mm;
    cl_int hs = has_s, hz = has_z;
    ST_TRY(st_cl_kernel(c, ST_CLK_dynq_params, &kern));
    st_cl_arg pa[] = {ST_CLA(mm), ST_CLA(parts), ST_CLA(sm), ST_CLA(sd), ST_CLA(zm), ST_CLA(zd), ST_CLA(hs), ST_CLA(hz)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_dynq_params, 8, pa));
    g = 1;
    ST_TRY(st_cl_run(c, kern, ST_CLK_dynq_params, 1, &g, NULL, true));

    if (n == 0) return ST_OK;
    st_cl_td td[2];
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_broadcast(x, y, &xb));
    td[0] = yd;
    td[1] = xb;
    st_cl_td_coalesce(td, 2);
    size_t global[2];
    st_cl_grid(td, 2, global);
    ST_TRY(st_cl_kernel(c, ST_CLK_dynq_apply, &kern));
    st_cl_arg aa[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(xm), ST_CLA(td[1]), ST_CLA(mm), ST_CLA(parts)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_dynq_apply, 6, aa));
    return st_cl_run(c, kern, ST_CLK_dynq_apply, 2, global, NULL, true);
}

/* ---- MatMulInteger, QLinearMatMul ---- */

/* Same layout as st_qmm_op / st_qmm_p in qint.cl. */
typedef struct st_cl_qmm_op {
    cl_long off, dt, rs, cs, bs[QMM_BATCH];
} st_cl_qmm_op;

typedef struct st_cl_qmm_p {
    cl_long nb, bn[QMM_BATCH], m, n, k;
    st_cl_qmm_op o[10];
} st_cl_qmm_p;
_Static_assert(sizeof(st_cl_qmm_p) == (8 + 10 * 8) * 8, "st_cl_qmm_p has no padding");

/* A matrix's batch strides over the output's nb batch dims (right-aligned,
 * 0 where broadcast). */
static void batch_strides(const st_view *mat, int nb, cl_long *bs)
{
    int br = mat->rank > 1 ? mat->rank - 2 : 0;
    for (int d = 0; d < nb; d++) {
        int q = d - (nb - br);
        bs[d] = q < 0 || mat->sizes[q] == 1 ? 0 : mat->strides[q];
    }
}

/* A per-row (is_a) or per-column parameter o of matrix mat, as the CPU's
 * qparam_init reads it: one value, a 1-D one per row / column, or mat's
 * shape with a unit column / row. */
static void qmm_param(st_cl_qmm_op *p, const st_view *o, const st_view *mat, bool is_a, int nb)
{
    memset(p, 0, sizeof *p);
    if (!o) return;
    p->off = elem_off(o);
    p->dt = o->dtype;
    if (st_view_numel(o) == 1) return;
    int64_t step;
    if (o->rank == 1) {
        step = mat->rank == 1 ? 0 : o->strides[0];
    } else {
        step = o->strides[o->rank - (is_a ? 2 : 1)];
        int br = mat->rank - 2;
        for (int d = 0; d < nb; d++) {
            int q = d - (nb - br);
            p->bs[d] = q < 0 || mat->sizes[q] == 1 ? 0 : o->strides[q];
        }
    }
    if (is_a) p->rs = step;
    else p->cs = step;
}

static const st_view *opt_view(const st_kctx *k, int i) { return i < k->n_in && k->in[i].data ? &k->views[i] : NULL; }

static st_status st_cl_qmatmul(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_qmatmul_state *s = k->state;
    int bi = s->qlinear ? 3 : 1;
    const st_view *a = &k->views[0], *b = &k->views[bi], *y = &k->views[k->n_in];
    if (st_view_numel(y) == 0) return ST_OK;
    bool a_vec = a->rank == 1, b_vec = b->rank == 1;
    st_cl_qmm_p p;
    memset(&p, 0, sizeof p);
    p.nb = y->rank - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
    p.m = a_vec ? 1 : a->sizes[a->rank - 2];
    p.k = a->sizes[a->rank - 1];
    p.n = b_vec ? 1 : b->sizes[b->rank - 1];
    int64_t batches = 1;
    for (int d = 0; d < p.nb; d++) batches *= p.bn[d] = y->sizes[d];
    /* y */
    p.o[0].off = elem_off(y);
    p.o[0].dt = y->dtype;
    p.o[0].rs = a_vec ? 0 : y->strides[y->rank - (b_vec ? 1 : 2)];
    p.o[0].cs = b_vec ? 0 : y->strides[y->rank - 1];
    for (int d = 0; d < p.nb; d++) p.o[0].bs[d] = y->strides[d];
    /* a, b */
    p.o[1].off = elem_off(a);
    p.o[1].dt = a->dtype;
    p.o[1].rs = a_vec ? 0 : a->strides[a->rank - 2];
    p.o[1].cs = a->strides[a->rank - 1];
    batch_strides(a, (int)p.nb, p.o[1].bs);
    p.o[2].off = elem_off(b);
    p.o[2].dt = b->dtype;
    p.o[2].rs = b_vec ? b->strides[0] : b->strides[b->rank - 2];
    p.o[2].cs = b_vec ? 0 : b->strides[b->rank - 1];
    batch_strides(b, (int)p.nb, p.o[2].bs);
    const st_view *az, *bz, *as = NULL, *bs = NULL, *ys = NULL, *yz = NULL, *bias = NULL;
    if (s->qlinear) {
        as = &k->views[1];
        az = opt_view(k, 2);
        bs = &k->views[4];
        bz = opt_view(k, 5);
        ys = &k->views[6];
        yz = opt_view(k, 7);
        bias = opt_view(k, 8);
    } else {
        az = opt_view(k, 2);
        bz = opt_view(k, 3);
    }
    qmm_param(&p.o[3], az, a, true, (int)p.nb);
    qmm_param(&p.o[4], bz, b, false, (int)p.nb);
    qmm_param(&p.o[5], as, a, true, (int)p.nb);
    qmm_param(&p.o[6], bs, b, false, (int)p.nb);
    qmm_param(&p.o[7], ys, a, true, 0);
    qmm_param(&p.o[8], yz, a, true, 0);
    /* the bias: one int32 per column, [n] or [1, n] */
    if (bias) {
        p.o[9].off = elem_off(bias);
        p.o[9].dt = bias->dtype;
        p.o[9].cs = bias->strides[bias->rank - 1];
    }
    /* absent operands get a real buffer (a, never read) */
    const st_view *ops[10] = {y, a, b, az, bz, as, bs, ys, yz, bias};
    cl_mem mem[10];
    for (int i = 0; i < 10; i++) mem[i] = st_cl_mem(ops[i] ? ops[i] : a);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_qmatmul, &kern));
    st_cl_arg args[11];
    for (int i = 0; i < 10; i++) args[i] = ST_CLA(mem[i]);
    args[10] = ST_CLA(p);
    ST_TRY(st_cl_set_args(kern, ST_CLK_qmatmul, 11, args));
    size_t global[3] = {(size_t)p.n, (size_t)p.m, (size_t)batches};
    return st_cl_run(c, kern, ST_CLK_qmatmul, 3, global, NULL, true);
}

/* ---- ConvInteger, QLinearConv ---- */

/* Same layout as st_qconv_p in qint.cl. */
typedef struct st_cl_qconv_p {
    cl_long nimg, groups, cg, mg;
    cl_long is[3], os[3], k[3], s[3], d[3], pb[3];
    cl_long xo, xs[5], wo, ws[5], yo, ys[5];
    cl_long x_dt, w_dt, y_dt;
    cl_long xz_o, xz_dt, wz_o, wz_dt, wz_step, b_o, b_dt, b_step;
    cl_long xsc_o, xsc_dt, wsc_o, wsc_dt, wsc_step, ysc_o, ysc_dt, yz_o, yz_dt;
    cl_long q_dt, has_lut;
} st_cl_qconv_p;
_Static_assert(sizeof(st_cl_qconv_p) == 62 * 8, "st_cl_qconv_p has no padding");

/* Same layout as st_qtab in qint.cl. */
typedef struct st_cl_qtab {
    cl_uchar t[256];
} st_cl_qtab;

/* An N, C, spatial... operand's element offset and strides, the spatial
 * ones right-aligned to 3 (0 on the padding dims). */
static void win_strides(const st_view *v, int nsp, cl_long *off, cl_long *st)
{
    *off = elem_off(v);
    st[0] = v->strides[0];
    st[1] = v->strides[1];
    for (int i = 0; i < 3; i++) st[2 + i] = i < 3 - nsp ? 0 : v->strides[2 + i - (3 - nsp)];
}

/* A scalar or per-channel parameter: offset, dtype and step (0 when one
 * value).  Absent: dtype 0. */
static void chan_param(const st_view *v, cl_long *off, cl_long *dt, cl_long *step)
{
    *off = *dt = 0;
    if (step) *step = 0;
    if (!v) return;
    *off = elem_off(v);
    *dt = v->dtype;
    if (step && st_view_numel(v) != 1) *step = v->strides[0];
}

static st_status st_cl_qconv(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_qconv_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t numel = st_view_numel(y);
    if (numel == 0) return ST_OK;
    const st_view *w, *xz, *wz, *bias = NULL, *xs = NULL, *ws = NULL, *ys = NULL, *yz = NULL;
    if (s->qlinear) {
        xs = &k->views[1];
        xz = opt_view(k, 2);
        w = &k->views[3];
        ws = &k->views[4];
        wz = opt_view(k, 5);
        ys = &k->views[6];
        yz = opt_view(k, 7);
        bias = opt_view(k, 8);
    } else {
        w = &k->views[1];
        xz = opt_view(k, 2);
        wz = opt_view(k, 3);
    }
    st_cl_qconv_p p;
    memset(&p, 0, sizeof p);
    int nsp = s->nsp, pad = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - pad;
        p.is[i] = j < 0 ? 1 : x->sizes[2 + j];
        p.os[i] = j < 0 ? 1 : y->sizes[2 + j];
        p.k[i] = j < 0 ? 1 : s->k[j];
        p.s[i] = j < 0 ? 1 : s->s[j];
        p.d[i] = j < 0 ? 1 : s->d[j];
        p.pb[i] = j < 0 ? 0 : s->pb[j];
    }
    p.nimg = x->sizes[0];
    p.groups = s->group;
    p.cg = x->sizes[1] / s->group;
    p.mg = y->sizes[1] / s->group;
    win_strides(x, nsp, &p.xo, p.xs);
    win_strides(w, nsp, &p.wo, p.ws);
    win_strides(y, nsp, &p.yo, p.ys);
    p.x_dt = x->dtype;
    p.w_dt = w->dtype;
    p.y_dt = y->dtype;
    chan_param(xz, &p.xz_o, &p.xz_dt, NULL);
    chan_param(wz, &p.wz_o, &p.wz_dt, &p.wz_step);
    chan_param(bias, &p.b_o, &p.b_dt, &p.b_step);
    chan_param(xs, &p.xsc_o, &p.xsc_dt, NULL);
    chan_param(ws, &p.wsc_o, &p.wsc_dt, &p.wsc_step);
    chan_param(ys, &p.ysc_o, &p.ysc_dt, NULL);
    chan_param(yz, &p.yz_o, &p.yz_dt, NULL);
    p.q_dt = s->q_type;
    p.has_lut = s->has_lut;
    /* the table's entries are bytes (the CPU stores the low byte too) */
    st_cl_qtab lut;
    memset(&lut, 0, sizeof lut);
    for (int b = 0; s->has_lut && b < 256; b++) lut.t[b] = (cl_uchar)s->lut[b];
    const st_view *ops[10] = {y, x, w, xz, wz, bias, xs, ws, ys, yz};
    cl_mem mem[10];
    for (int i = 0; i < 10; i++) mem[i] = st_cl_mem(ops[i] ? ops[i] : x);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_qconv, &kern));
    st_cl_arg args[12];
    for (int i = 0; i < 10; i++) args[i] = ST_CLA(mem[i]);
    args[10] = ST_CLA(p);
    args[11] = ST_CLA(lut);
    ST_TRY(st_cl_set_args(kern, ST_CLK_qconv, 12, args));
    /* QCB channels of one pixel per work-item (qint.cl) */
    size_t global[3] = {(size_t)(p.os[0] * p.os[1] * p.os[2]), (size_t)(p.groups * ((p.mg + QCB - 1) / QCB)), (size_t)p.nimg};
    return st_cl_run(c, kern, ST_CLK_qconv, 3, global, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

const st_kernel st_cl_k_qint[] = {
    {"DynamicQuantizeLinear", "", ST_DT_ALL, st_cl_dynamic_quantize, accepts_dynq, NULL, NULL},
    {"MatMulInteger", "", ST_DT_ALL, st_cl_qmatmul, accepts_qmm, NULL, NULL},
    {"QLinearMatMul", "", ST_DT_ALL, st_cl_qmatmul, accepts_qmm, NULL, NULL},
    {"ConvInteger", "", ST_DT_ALL, st_cl_qconv, accepts_qconv, NULL, NULL},
    {"QLinearConv", "", ST_DT_ALL, st_cl_qconv, accepts_qconv, NULL, NULL},
    {NULL}
};
