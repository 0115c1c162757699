/*
 * k_rows.c — host side of the row kernels on OpenCL (rows.cl): the norm
 * family's Softmax, LogSoftmax and BatchNormalization, and the ReduceX
 * ops.  Shapes are split into outer positions and rows with the CPU's
 * st_rows (backends/common/rows.h), so a row is the same set of elements, in
 * the same order, on both backends.
 */
#include <string.h>

#include "backends/common/rows.h"
#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/norm.h"
#include "ops/reduce.h"

#define SG 256

enum { CLS_F32 = 0, CLS_F64 = 1, CLS_I64 = 2 };

/* Same layout as st_rows_p in rows.cl. */
typedef struct st_cl_rows_p {
    cl_long n_outer, row_len, outer_rank, row_rank;
    cl_long osz[8], rsz[8];
    cl_long xo, xos[8], xrs[8];
    cl_long yo, yos[8], yrs[8];
    cl_long x_dt, y_dt, kind, cls;
} st_cl_rows_p;
_Static_assert(sizeof(st_cl_rows_p) == 58 * 8, "st_cl_rows_p has no padding");

typedef struct st_cl_bn_p {
    cl_long inner, count;
    cl_long po[4], ps[4];
    cl_long p_dt[4];
    cl_float eps, pad;
} st_cl_bn_p;
_Static_assert(sizeof(st_cl_bn_p) == 14 * 8 + 8, "st_cl_bn_p has no padding");

_Static_assert(ST_N_SOFTMAX == 0 && ST_N_LOG_SOFTMAX == 1, "rows.cl's N_ codes follow st_norm_kind");
_Static_assert(ST_R_SUM == 0 && ST_R_MEAN == 1 && ST_R_LOG_SUM_EXP == 8 && ST_R_SUM_SQUARE == 9,
               "rows.cl's R_ codes follow st_reduce_kind");

static bool f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* x's shape split by mask; y described over x's shape by ys. */
static void rows_params(const st_view *x, const st_view *y, const int64_t *ys, uint32_t mask, st_cl_rows_p *p)
{
    memset(p, 0, sizeof *p);
    st_rows r;
    st_rows_init(&r, x->rank, x->sizes, mask, 2, (const int64_t *[]){x->strides, ys});
    p->n_outer = r.n_outer;
    p->row_len = r.row_len;
    p->outer_rank = r.outer_rank;
    p->row_rank = r.row_rank;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        p->osz[d] = d < r.outer_rank ? r.outer_sizes[d] : 1;
        p->rsz[d] = d < r.row_rank ? r.row_sizes[d] : 1;
        p->xos[d] = d < r.outer_rank ? r.outer_strides[0][d] : 0;
        p->yos[d] = d < r.outer_rank ? r.outer_strides[1][d] : 0;
        p->xrs[d] = d < r.row_rank ? r.row_strides[0][d] : 0;
        p->yrs[d] = d < r.row_rank ? r.row_strides[1][d] : 0;
    }
    p->xo = x->offset / (int64_t)st_dtype_size(x->dtype);
    p->yo = y->offset / (int64_t)st_dtype_size(y->dtype);
    p->x_dt = x->dtype;
    p->y_dt = y->dtype;
}

static st_status launch_rows(st_cl_ctx *c, st_clk id, const st_cl_rows_p *p, cl_mem y, cl_mem x, size_t global,
                             const size_t *local)
{
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, id, &kern));
    st_cl_arg args[] = {ST_CLA(y), ST_CLA(x), {sizeof *p, p}};
    ST_TRY(st_cl_set_args(kern, id, 3, args));
    return st_cl_run(c, kern, id, 1, &global, local, true);
}

static st_status softmax(const st_kctx *k, const st_norm_state *s)
{
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    st_cl_rows_p p;
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    rows_params(x, y, y->strides, mask, &p);
    p.kind = s->kind;
    if (p.n_outer == 0) return ST_OK;
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x);
    /* long rows: a work-group each; short ones: a work-item each */
    if (p.row_len >= 2048 || (p.row_len >= 256 && p.n_outer < 1024)) {
        size_t local = SG;
        return launch_rows(k->dev, ST_CLK_softmax_group, &p, ym, xm, (size_t)p.n_outer * SG, &local);
    }
    return launch_rows(k->dev, ST_CLK_softmax_serial, &p, ym, xm, (size_t)p.n_outer, NULL);
}

/* One parameter of BatchNormalization as (element offset, stride) over
 * the flat parameter index. */
static st_status bn_param(const st_view *v, cl_long *off, cl_long *stride)
{
    *off = v->offset / (int64_t)st_dtype_size(v->dtype);
    int64_t n = st_view_numel(v);
    int live = 0, d0 = 0;
    for (int d = 0; d < v->rank; d++)
        if (v->sizes[d] != 1) {
            live++;
            d0 = d;
        }
    if (live <= 1) {
        *stride = live ? v->strides[d0] : 0;
        return ST_OK;
    }
    if (st_view_is_contiguous(v)) {
        *stride = 1;
        return ST_OK;
    }
    return st_error(ST_ERR_INTERNAL, "BatchNormalization: a strided %lld-element multi-dim parameter reached the kernel",
                    (long long)n);
}

/* What bn_param takes: at most one dim of more than one element, or packed. */
static bool bn_param_ok(const st_view *v)
{
    int live = 0;
    for (int d = 0; d < v->rank; d++) live += v->sizes[d] != 1;
    return live <= 1 || st_view_is_contiguous(v);
}

static st_status batchnorm(const st_kctx *k, const st_norm_state *s)
{
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    st_cl_bn_p p;
    memset(&p, 0, sizeof p);
    p.count = s->spatial ? x->sizes[1] : st_numel(x->rank - 1, x->sizes + 1);
    p.inner = s->spatial ? st_numel(x->rank - 2, x->sizes + 2) : 1;
    if (p.inner == 0 || p.count == 0) return ST_OK;
    for (int i = 0; i < 4; i++) {
        ST_TRY(bn_param(&k->views[1 + i], &p.po[i], &p.ps[i]));
        p.p_dt[i] = k->views[1 + i].dtype;
    }
    p.eps = s->epsilon;
    st_cl_td td[2];
    ST_TRY(st_cl_td_of(y, &td[0]));
    ST_TRY(st_cl_td_of(x, &td[1]));
    st_cl_td_coalesce(td, 2);
    size_t global[2];
    st_cl_grid(td, 2, global);
    st_cl_ctx *c = k->dev;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_batchnorm, &kern));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), m1 = st_cl_mem(&k->views[1]), m2 = st_cl_mem(&k->views[2]),
           m3 = st_cl_mem(&k->views[3]), m4 = st_cl_mem(&k->views[4]);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(td[0]), ST_CLA(xm), ST_CLA(td[1]), ST_CLA(m1),
                        ST_CLA(m2), ST_CLA(m3),    ST_CLA(m4), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_batchnorm, 9, args));
    return st_cl_run(c, kern, ST_CLK_batchnorm, 2, global, NULL, true);
}

st_status st_cl_norm(const st_kctx *k)
{
    const st_norm_state *s = k->state;
    switch (s->kind) {
    case ST_N_SOFTMAX:
    case ST_N_LOG_SOFTMAX: return softmax(k, s);
    case ST_N_BATCH_NORM: return batchnorm(k, s);
    default: return st_error(ST_ERR_INTERNAL, "%s reached the OpenCL norm kernel", k->node->op_type);
    }
}

st_status st_cl_reduce(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int cls = f32_family(x->dtype) ? CLS_F32 : CLS_F64;
    if (!st_dtype_is_float(x->dtype) && s->kind != ST_R_L2 && s->kind != ST_R_LOG_SUM && s->kind != ST_R_LOG_SUM_EXP)
        cls = CLS_I64;
    if (cls == CLS_F64 && !c->dev->fp64)
        return st_error(ST_ERR_INTERNAL, "%s of %s data reached a device without cl_khr_fp64", k->node->op_type,
                        st_dtype_name(x->dtype));
    /* y's strides over x's shape: 0 on the reduced axes */
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    int64_t ys[ST_MAX_RANK];
    int yd = 0;
    for (int d = 0; d < x->rank; d++) {
        if (mask >> d & 1) {
            ys[d] = 0;
            if (s->keepdims) yd++;
        } else {
            ys[d] = y->strides[yd++];
        }
    }
    st_cl_rows_p p;
    rows_params(x, y, ys, mask, &p);
    p.kind = s->kind;
    p.cls = cls;
    if (p.n_outer == 0) return ST_OK;
    return launch_rows(c, ST_CLK_reduce, &p, st_cl_mem(y), st_cl_mem(x), (size_t)p.n_outer, NULL);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

static bool batchnorm_accepts(const st_knode *n, char *why, size_t len)
{
    if (n->n_in < 5) return st_kernel_refuse(why, len, "BatchNormalization with %d inputs", n->n_in);
    for (int i = 0; i < 5; i++) {
        st_dtype t = n->views[i].dtype;
        if (!f32_family(t))
            return st_kernel_refuse(why, len, "BatchNormalization of %s data is not implemented on OpenCL", st_dtype_name(t));
        if (i > 0 && !bn_param_ok(&n->views[i]))
            return st_kernel_refuse(why, len, "BatchNormalization: a strided multi-dim parameter");
    }
    if (!f32_family(n->views[n->n_in].dtype))
        return st_kernel_refuse(why, len, "BatchNormalization to %s", st_dtype_name(n->views[n->n_in].dtype));
    return true;
}

#define REDUCE(name) {name, "", ST_DT_NUMERIC, st_cl_reduce, st_cl_accepts_fp64, NULL, NULL}
const st_kernel st_cl_k_rows[] = {
    {"Softmax", "", ST_DT_FLOATS, st_cl_norm, st_cl_accepts_f32_family, NULL, NULL},
    {"LogSoftmax", "", ST_DT_FLOATS, st_cl_norm, st_cl_accepts_f32_family, NULL, NULL},
    {"BatchNormalization", "", ST_DT_FLOATS, st_cl_norm, batchnorm_accepts, NULL, NULL},
    REDUCE("ReduceSum"), REDUCE("ReduceMean"), REDUCE("ReduceMax"), REDUCE("ReduceMin"), REDUCE("ReduceProd"),
    REDUCE("ReduceL1"), REDUCE("ReduceL2"), REDUCE("ReduceLogSum"), REDUCE("ReduceLogSumExp"), REDUCE("ReduceSumSquare"),
    {NULL}
};
