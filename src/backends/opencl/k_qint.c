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
 * The geometry (sizes, strides, each parameter's step) and the accepts
 * checks are the CUDA backend's too: ops/lower_qint.c computes them once.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/lower_qint.h"
#include "ops/misc.h"

#define QMM_BATCH ST_LQ_BATCH
/* output channels per work-item of st_qconv (qint.cl's QCB) */
#define QCB 8
/* DynamicQuantizeLinear's partial ranges: enough parts to fill a device */
#define DYNQ_PARTS 256

/* The largest element offset in v from its element [0, ..., 0]. */
static int64_t span(const st_view *v)
{
    int64_t e = 0;
    for (int d = 0; d < v->rank; d++) e += (v->sizes[d] - 1) * (v->strides[d] < 0 ? -v->strides[d] : v->strides[d]);
    return e;
}

/* What the CUDA kernels refuse too (ops/lower_qint.c), and the 32-bit
 * indexing of st_qconv. */
static bool accepts_qconv(const st_knode *n, char *why, size_t len)
{
    const st_qconv_state *s = n->state;
    if (!st_lq_accepts_requant(n, why, len)) return false;
    /* st_qconv indexes within x and w in 32 bits */
    if (span(&n->views[0]) >= INT32_MAX || span(&n->views[s->qlinear ? 3 : 1]) >= INT32_MAX)
        return st_kernel_refuse(why, len, "an x or w of 2^31 elements or more");
    return st_lq_accepts_operands(n, why, len, s->qlinear);
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

/* Operand i's view (ops/lower_qint.h's numbering), NULL when absent. */
static const st_view *operand_view(const st_kctx *k, int i) { return i < 0 ? NULL : &k->views[i]; }

static st_status st_cl_qmatmul(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    if (st_view_numel(&k->views[k->n_in]) == 0) return ST_OK;
    st_lq_matmul q;
    st_lower_qmatmul(k, &q);
    st_cl_qmm_p p;
    memset(&p, 0, sizeof p);
    p.nb = q.nb;
    p.m = q.m;
    p.k = q.k;
    p.n = q.n;
    for (int d = 0; d < q.nb; d++) p.bn[d] = q.bn[d];
    /* absent operands: offset and dt 0, and a real buffer (a's, never
     * read) */
    const st_view *a = &k->views[q.o[ST_LQ_A].operand];
    cl_mem mem[ST_LQ_MM_OPS];
    for (int i = 0; i < ST_LQ_MM_OPS; i++) {
        const st_lq_mm_op *o = &q.o[i];
        const st_view *v = operand_view(k, o->operand);
        p.o[i].off = v ? elem_off(v) : 0;
        p.o[i].dt = o->dt;
        p.o[i].rs = o->rs;
        p.o[i].cs = o->cs;
        for (int d = 0; d < QMM_BATCH; d++) p.o[i].bs[d] = o->bs[d];
        mem[i] = st_cl_mem(v ? v : a);
    }
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_qmatmul, &kern));
    st_cl_arg args[11];
    for (int i = 0; i < 10; i++) args[i] = ST_CLA(mem[i]);
    args[10] = ST_CLA(p);
    ST_TRY(st_cl_set_args(kern, ST_CLK_qmatmul, 11, args));
    size_t global[3] = {(size_t)p.n, (size_t)p.m, (size_t)q.batches};
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

/* A lowered scalar or per-channel parameter as st_qconv takes it: element
 * offset and dtype, 0 and 0 when absent. */
static void param_of(const st_kctx *k, const st_lq_param *q, cl_long *off, cl_long *dt)
{
    const st_view *v = operand_view(k, q->operand);
    *off = v ? elem_off(v) : 0;
    *dt = q->dt;
}

static st_status st_cl_qconv(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_qconv_state *s = k->state;
    if (st_view_numel(&k->views[k->n_in]) == 0) return ST_OK;
    st_lq_conv q;
    st_lower_qconv(k, &q);
    const st_view *x = &k->views[q.x], *w = &k->views[q.w], *y = &k->views[q.y];
    st_cl_qconv_p p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < 3; i++) {
        p.is[i] = q.is[i];
        p.os[i] = q.os[i];
        p.k[i] = q.k[i];
        p.s[i] = q.s[i];
        p.d[i] = q.d[i];
        p.pb[i] = q.pb[i];
    }
    p.nimg = q.nimg;
    p.groups = q.groups;
    p.cg = q.cg;
    p.mg = q.mg;
    p.xo = elem_off(x);
    p.wo = elem_off(w);
    p.yo = elem_off(y);
    for (int i = 0; i < 5; i++) {
        p.xs[i] = q.xs[i];
        p.ws[i] = q.ws[i];
        p.ys[i] = q.ys[i];
    }
    p.x_dt = x->dtype;
    p.w_dt = w->dtype;
    p.y_dt = y->dtype;
    param_of(k, &q.xz, &p.xz_o, &p.xz_dt);
    param_of(k, &q.wz, &p.wz_o, &p.wz_dt);
    param_of(k, &q.bias, &p.b_o, &p.b_dt);
    param_of(k, &q.xsc, &p.xsc_o, &p.xsc_dt);
    param_of(k, &q.wsc, &p.wsc_o, &p.wsc_dt);
    param_of(k, &q.ysc, &p.ysc_o, &p.ysc_dt);
    param_of(k, &q.yz, &p.yz_o, &p.yz_dt);
    p.wz_step = q.wz.step;
    p.b_step = q.bias.step;
    p.wsc_step = q.wsc.step;
    p.q_dt = s->q_type;
    p.has_lut = s->has_lut;
    /* the table's entries are bytes (the CPU stores the low byte too) */
    st_cl_qtab lut;
    memset(&lut, 0, sizeof lut);
    for (int b = 0; s->has_lut && b < 256; b++) lut.t[b] = (cl_uchar)s->lut[b];
    const st_lq_param *prm[7] = {&q.xz, &q.wz, &q.bias, &q.xsc, &q.wsc, &q.ysc, &q.yz};
    /* y, x, w, then the parameters; absent ones get a real buffer (x's,
     * never read) */
    cl_mem mem[10] = {st_cl_mem(y), st_cl_mem(x), st_cl_mem(w)};
    for (int i = 0; i < 7; i++) {
        const st_view *v = operand_view(k, prm[i]->operand);
        mem[3 + i] = st_cl_mem(v ? v : x);
    }
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
    {"DynamicQuantizeLinear", "", ST_DT_ALL, st_cl_dynamic_quantize, st_lq_accepts_dynq, NULL, NULL},
    {"MatMulInteger", "", ST_DT_ALL, st_cl_qmatmul, st_lq_accepts_qmatmul, NULL, NULL},
    {"QLinearMatMul", "", ST_DT_ALL, st_cl_qmatmul, st_lq_accepts_qmatmul, NULL, NULL},
    {"ConvInteger", "", ST_DT_ALL, st_cl_qconv, accepts_qconv, NULL, NULL},
    {"QLinearConv", "", ST_DT_ALL, st_cl_qconv, accepts_qconv, NULL, NULL},
    {NULL}
};
