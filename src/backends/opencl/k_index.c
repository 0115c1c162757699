/*
 * k_index.c — host side of the index family on OpenCL (index.cl): Gather,
 * GatherElements, ScatterND, OneHot, Range, CumSum, ArgMax/ArgMin, TopK,
 * and the ops that are one strided copy described to copy.cl (Expand: a
 * broadcast read; Tile: each dim as [repeat, dim] with stride 0 on the
 * repeat; DepthToSpace/SpaceToDepth: a 6-d permutation), the same
 * re-descriptions the CPU and CUDA use, from ops/lower_index.h, as are the
 * gather walks, the tuple splits, Einsum's strides and the accepts
 * checks (backends/cpu/k_index_copy.c, cuda/k_index.cu).  Before
 * these, a model's Gather or Expand sent its tensor to the host and back
 * (the Silero VADs' decoder Gather did on every step).
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/index.h"
#include "ops/lower_index.h"
#include "ops/ops.h"
#include "ops/reduce.h"

/* One work-item per element of n (1-D grid, rounded up by st_cl_run). */
static st_status run1(st_cl_ctx *c, st_clk id, int n_args, const st_cl_arg *args, int64_t n)
{
    if (n <= 0) return ST_OK;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, id, &kern));
    ST_TRY(st_cl_set_args(kern, id, n_args, args));
    size_t global = (size_t)n;
    return st_cl_run(c, kern, id, 1, &global, NULL, true);
}

/* ---- the copies: Expand, Tile, DepthToSpace, SpaceToDepth ---- */

/* y re-described with the lowered copy's sizes and y strides (same
 * storage and offset), x's descriptor with its x strides: one copy. */
static st_status copy_lowered(const st_kctx *k, const st_lower_copy *p)
{
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    if (p->total == 0) return ST_OK;
    if (p->rank > ST_MAX_RANK) /* accepts refused it (st_lidx_accepts) */
        return st_error(ST_ERR_INTERNAL, "node '%s' (%s): a copy of %d dims", k->node->name, k->node->op->name, p->rank);
    st_view yv = *y;
    yv.rank = p->rank;
    for (int d = 0; d < p->rank; d++) {
        yv.sizes[d] = p->n[d];
        yv.strides[d] = p->ys[d];
    }
    st_cl_td xt;
    ST_TRY(st_cl_td_of(x, &xt));
    xt.rank = p->rank;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        xt.n[d] = d < p->rank ? p->n[d] : 1;
        xt.s[d] = d < p->rank ? p->xs[d] : 0;
    }
    return st_cl_copy_view(k->dev, &yv, x, &xt, true);
}

static st_status cl_expand(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_expand(k, &p);
    return copy_lowered(k, &p);
}

static st_status cl_tile(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_tile(k, &p);
    return copy_lowered(k, &p);
}

static st_status cl_depth_to_space(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_depth_to_space(k, &p);
    return copy_lowered(k, &p);
}

static st_status cl_space_to_depth(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_space_to_depth(k, &p);
    return copy_lowered(k, &p);
}

/* ---- gathers, scatters ---- */

/* Same layout as st_gather_p in index.cl. */
typedef struct st_cl_gather_p {
    cl_long rank, dim, data_axis, idx_dt, es;
    cl_long off[3];
    cl_long n[ST_MAX_RANK];
    cl_long s[3][ST_MAX_RANK];
    cl_long total;
} st_cl_gather_p;

/* The element offset of v's origin (kernels index by element). */
static st_status elem_off(const st_view *v, cl_long *off)
{
    st_cl_td td;
    ST_TRY(st_cl_td_of(v, &td));
    *off = td.off;
    return ST_OK;
}

/* Gather and GatherElements: the lowered walk (x: data, y: peer). */
static st_status gather_walk(const st_kctx *k, const st_lower_gather *w)
{
    const st_view *x = &k->views[w->operand[ST_LG_DATA]], *y = &k->views[w->operand[ST_LG_PEER]];
    const st_view *ix = &k->views[w->operand[ST_LG_INDEX]];
    if (w->total == 0) return ST_OK;
    st_cl_gather_p p;
    memset(&p, 0, sizeof p);
    p.rank = w->rank;
    p.dim = w->dim;
    p.data_axis = w->data_axis;
    p.idx_dt = ix->dtype;
    p.es = (cl_long)st_dtype_size(y->dtype);
    ST_TRY(elem_off(x, &p.off[0]));
    ST_TRY(elem_off(y, &p.off[1]));
    ST_TRY(elem_off(ix, &p.off[2]));
    static const int role[3] = {ST_LG_DATA, ST_LG_PEER, ST_LG_INDEX};
    for (int d = 0; d < w->rank; d++) {
        p.n[d] = w->n[d];
        for (int r = 0; r < 3; r++) p.s[r][d] = w->s[role[r]][d];
    }
    p.total = w->total;
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), im = st_cl_mem(ix);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(xm), ST_CLA(im), {sizeof p, &p}};
    return run1(k->dev, ST_CLK_gather_walk, 4, args, w->total);
}

static st_status cl_gather(const st_kctx *k)
{
    st_lower_gather w;
    st_lower_gather_of(k, &w);
    return gather_walk(k, &w);
}

static st_status cl_gather_elements(const st_kctx *k)
{
    st_lower_gather w;
    st_lower_gather_elements(k, &w);
    return gather_walk(k, &w);
}

static st_status cl_scatter_nd(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_view *x = &k->views[0], *ix = &k->views[1], *u = &k->views[2], *y = &k->views[k->n_in];
    if (st_view_numel(y) == 0) return ST_OK;
    ST_TRY(st_cl_copy_view(k->dev, y, x, NULL, true));
    st_lower_nd nd;
    st_lower_scatter_nd(k, &nd);
    if (nd.items == 0) return ST_OK;
    st_cl_td yd, id, ud;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(ix, &id));
    ST_TRY(st_cl_td_of(u, &ud));
    cl_mem ym = st_cl_mem(y), im = st_cl_mem(ix), um = st_cl_mem(u);
    cl_long red = s->reduction;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(im), ST_CLA(id), ST_CLA(um), ST_CLA(ud), ST_CLA(red)};
    return run1(k->dev, ST_CLK_scatter_nd, 7, args, nd.items);
}

static st_status cl_one_hot(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_view *ix = &k->views[0], *v = &k->views[2], *y = &k->views[k->n_in];
    st_cl_td yd, id, vd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(ix, &id));
    ST_TRY(st_cl_td_of(v, &vd));
    cl_mem ym = st_cl_mem(y), im = st_cl_mem(ix), vm = st_cl_mem(v);
    cl_long axis = s->axis, neg = s->flag;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(im), ST_CLA(id), ST_CLA(vm), ST_CLA(vd), ST_CLA(axis), ST_CLA(neg)};
    return run1(k->dev, ST_CLK_one_hot, 8, args, st_view_numel(y));
}

static st_status cl_range(const st_kctx *k)
{
    const st_view *a = &k->views[0], *dl = &k->views[2], *y = &k->views[k->n_in];
    st_cl_td yd, ad, dd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(a, &ad));
    ST_TRY(st_cl_td_of(dl, &dd));
    cl_mem ym = st_cl_mem(y), am = st_cl_mem(a), dm = st_cl_mem(dl);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(am), ST_CLA(ad), ST_CLA(dm), ST_CLA(dd)};
    return run1(k->dev, ST_CLK_range, 6, args, st_view_numel(y));
}

/* ---- along an axis: CumSum, ArgMax/ArgMin, TopK ---- */

/* Lines of x along axis (all other dims), 0 for an empty x. */
static int64_t lines(const st_view *x, int axis)
{
    int64_t n = x->sizes[axis];
    return n ? st_view_numel(x) / n : 0;
}

static st_status cl_cumsum(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    const st_view *x = &k->views[0], *a = &k->views[1], *y = &k->views[k->n_in];
    int64_t n = st_view_numel(x);
    if (n == 0) return ST_OK;
    st_cl_td yd, xd, ad;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    ST_TRY(st_cl_td_of(a, &ad));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), am = st_cl_mem(a);
    cl_long axis = s->axis, ex = s->exclusive, rev = s->reverse;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(am), ST_CLA(ad), ST_CLA(axis), ST_CLA(ex), ST_CLA(rev)};
    /* the axis may be known only on the device: enough work-items for any
     * (the kernel drops the ones past its line count) */
    return run1(k->dev, ST_CLK_cumsum, 9, args, n);
}

/* y's descriptor over x's rank: the reduced axis of size 1, its strides
 * on the other dims (keepdims=0 drops the axis from y). */
static st_status over_x(const st_view *y, const st_view *x, int axis, st_cl_td *td)
{
    ST_TRY(st_cl_td_of(y, td));
    td->rank = x->rank;
    for (int d = 0, e = 0; d < x->rank; d++) {
        if (d == axis) {
            td->n[d] = 1;
            td->s[d] = 0;
            if (y->rank == x->rank) e++;
            continue;
        }
        td->n[d] = x->sizes[d];
        td->s[d] = y->strides[e++];
    }
    return ST_OK;
}

static st_status cl_argminmax(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    if (x->sizes[s->axis] == 0) return ST_OK;
    st_cl_td yd, xd;
    ST_TRY(over_x(y, x, s->axis, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x);
    cl_long axis = s->axis, is_max = s->kind == ST_R_MAX, last = s->select_last;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(axis), ST_CLA(is_max), ST_CLA(last)};
    return run1(k->dev, ST_CLK_argminmax, 7, args, lines(x, s->axis));
}

static st_status cl_topk(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    const st_view *x = &k->views[0], *v = &k->views[k->n_in], *ix = &k->views[k->n_in + 1];
    if (!v->storage || !ix->storage) return st_error(ST_ERR_INTERNAL, "node '%s' (TopK): an output is missing", k->node->name);
    if (v->sizes[s->axis] == 0) return ST_OK;
    st_cl_td vd, id, xd;
    ST_TRY(st_cl_td_of(v, &vd));
    ST_TRY(st_cl_td_of(ix, &id));
    ST_TRY(st_cl_td_of(x, &xd));
    cl_mem vm = st_cl_mem(v), im = st_cl_mem(ix), xm = st_cl_mem(x);
    cl_long axis = s->axis, largest = s->largest;
    st_cl_arg args[] = {ST_CLA(vm), ST_CLA(vd), ST_CLA(im), ST_CLA(id), ST_CLA(xm), ST_CLA(xd), ST_CLA(axis), ST_CLA(largest)};
    return run1(k->dev, ST_CLK_topk, 8, args, lines(x, s->axis));
}

/* ---- NonZero, Einsum ---- */

static st_status cl_nonzero(const st_kctx *k)
{
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    if (st_view_numel(y) == 0) return ST_OK;
    st_cl_td yd, xd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd)};
    return run1(k->dev, ST_CLK_nonzero, 4, args, 1);
}

/* Same layout as st_ein_p in index.cl: the lowered walk (ops/
 * index_math.h's st_im_einsum, all 8-byte members), then each operand's
 * element offset and dtype. */
typedef struct st_cl_ein_p {
    st_lower_einsum g;
    cl_long off[ST_LEIN_IN], dt[ST_LEIN_IN];
    cl_long yoff, ydt;
} st_cl_ein_p;

static st_status cl_einsum(const st_kctx *k)
{
    const st_view *y = &k->views[k->n_in];
    st_cl_ein_p p;
    memset(&p, 0, sizeof p);
    st_lower_einsum_of(k, &p.g);
    if (p.g.total == 0) return ST_OK;
    cl_mem m[ST_LEIN_IN];
    for (int i = 0; i < ST_LEIN_IN; i++) {
        const st_view *v = &k->views[i < k->n_in ? i : 0];
        ST_TRY(elem_off(v, &p.off[i]));
        p.dt[i] = v->dtype;
        m[i] = st_cl_mem(v);
    }
    ST_TRY(elem_off(y, &p.yoff));
    p.ydt = y->dtype;
    cl_mem ym = st_cl_mem(y);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(m[0]), ST_CLA(m[1]), ST_CLA(m[2]), ST_CLA(m[3]), {sizeof p, &p}};
    return run1(k->dev, ST_CLK_einsum, 6, args, p.g.total);
}

/* ---- ScatterElements, GatherND, Trilu, EyeLike, ConstantOfShape ---- */

static st_status cl_scatter_elements(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_view *x = &k->views[0], *ix = &k->views[1], *u = &k->views[2], *y = &k->views[k->n_in];
    if (st_view_numel(y) == 0) return ST_OK;
    ST_TRY(st_cl_copy_view(k->dev, y, x, NULL, true));
    st_cl_td yd, id, ud;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(ix, &id));
    ST_TRY(st_cl_td_of(u, &ud));
    cl_mem ym = st_cl_mem(y), im = st_cl_mem(ix), um = st_cl_mem(u);
    cl_long axis = s->axis, red = s->reduction;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(im), ST_CLA(id), ST_CLA(um), ST_CLA(ud), ST_CLA(axis), ST_CLA(red)};
    st_lower_gather w;
    st_lower_scatter_elements(k, &w);
    return run1(k->dev, ST_CLK_scatter_elements, 8, args, w.lines);
}

static st_status cl_gather_nd(const st_kctx *k)
{
    const st_view *x = &k->views[0], *ix = &k->views[1], *y = &k->views[k->n_in];
    st_cl_td yd, xd, id;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    ST_TRY(st_cl_td_of(ix, &id));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), im = st_cl_mem(ix);
    st_lower_nd nd;
    st_lower_gather_nd(k, &nd);
    cl_long b = nd.b;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(im), ST_CLA(id), ST_CLA(b)};
    return run1(k->dev, ST_CLK_gather_nd, 7, args, nd.items);
}

static st_status cl_trilu(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    const st_view *kv = k->n_in > 1 && k->views[1].rank >= 0 && k->views[1].storage ? &k->views[1] : x;
    st_cl_td yd, xd, kd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    ST_TRY(st_cl_td_of(kv, &kd));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), km = st_cl_mem(kv);
    cl_long has_k = kv != x, upper = s->flag;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(km), ST_CLA(kd), ST_CLA(has_k), ST_CLA(upper)};
    return run1(k->dev, ST_CLK_trilu, 8, args, st_view_numel(y));
}

static st_status fill(const st_kctx *k, cl_long diag_k, cl_long diag_only, const unsigned char *val)
{
    const st_view *y = &k->views[k->n_in];
    st_cl_td yd;
    ST_TRY(st_cl_td_of(y, &yd));
    cl_ulong bits = 0;
    memcpy(&bits, val, st_dtype_size(y->dtype));
    cl_mem ym = st_cl_mem(y);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(diag_k), ST_CLA(diag_only), ST_CLA(bits)};
    return run1(k->dev, ST_CLK_fill_diag, 5, args, st_view_numel(y));
}

static st_status cl_eye_like(const st_kctx *k)
{
    const st_index_state *s = k->state;
    unsigned char one[16] = {0};
    st_store_f64(k->views[k->n_in].dtype, one, 1.0);
    return fill(k, s->k, 1, one);
}

static st_status cl_constant_of_shape(const st_kctx *k)
{
    const st_const_state *s = k->state;
    unsigned char v[16] = {0};
    if (s->dtype == k->views[k->n_in].dtype) memcpy(v, s->value, st_dtype_size(s->dtype));
    else st_convert(k->views[k->n_in].dtype, v, s->dtype, s->value, 1);
    return fill(k, 0, 0, v);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

/* Any dtype of 1 to 8 bytes (strings live on the host), and the family's
 * shape rules (ops/lower_index.h: a copy within st_cl_td's ST_MAX_RANK). */
static bool bytes_accepts(const st_knode *n, char *why, size_t len)
{
    if (!st_lidx_accepts(n, "OpenCL", ST_MAX_RANK, why, len)) return false;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        if (v->dtype == ST_STRING || st_dtype_size(v->dtype) > 8 || st_dtype_size(v->dtype) == 0)
            return st_kernel_refuse(why, len, "%s of %s data", n->op->name, st_dtype_name(v->dtype));
    }
    return st_cl_accepts_fp64(n, why, len);
}

static bool einsum_accepts(const st_knode *n, char *why, size_t len)
{
    if (!st_lidx_accepts(n, "OpenCL", ST_MAX_RANK, why, len)) return false;
    return st_cl_accepts_f32_family(n, why, len);
}

static bool out_bytes_accepts(const st_knode *n, char *why, size_t len)
{
    const st_view *y = &n->views[n->n_in];
    if (y->dtype == ST_STRING || st_dtype_size(y->dtype) > 8 || st_dtype_size(y->dtype) == 0)
        return st_kernel_refuse(why, len, "%s of %s data", n->op->name, st_dtype_name(y->dtype));
    return st_cl_accepts_fp64(n, why, len);
}

const st_kernel st_cl_k_index[] = {
    {"ScatterElements", "", ST_DT_ALL, cl_scatter_elements, bytes_accepts, NULL, NULL},
    {"Scatter", "", ST_DT_ALL, cl_scatter_elements, bytes_accepts, NULL, NULL},
    {"GatherND", "", ST_DT_ALL, cl_gather_nd, bytes_accepts, NULL, NULL},
    {"Trilu", "", ST_DT_ALL, cl_trilu, bytes_accepts, NULL, NULL},
    {"EyeLike", "", ST_DT_ALL, cl_eye_like, out_bytes_accepts, NULL, NULL},
    {"ConstantOfShape", "", ST_DT_ALL, cl_constant_of_shape, out_bytes_accepts, NULL, NULL},
    {"NonZero", "", ST_DT_ALL, cl_nonzero, bytes_accepts, NULL, NULL},
    {"Einsum", "", ST_DT_FLOATS, cl_einsum, einsum_accepts, NULL, NULL},
    {"Expand", "", ST_DT_ALL, cl_expand, bytes_accepts, NULL, NULL},
    {"Tile", "", ST_DT_ALL, cl_tile, bytes_accepts, NULL, NULL},
    {"DepthToSpace", "", ST_DT_ALL, cl_depth_to_space, bytes_accepts, NULL, NULL},
    {"SpaceToDepth", "", ST_DT_ALL, cl_space_to_depth, bytes_accepts, NULL, NULL},
    {"Gather", "", ST_DT_ALL, cl_gather, bytes_accepts, NULL, NULL},
    {"GatherElements", "", ST_DT_ALL, cl_gather_elements, bytes_accepts, NULL, NULL},
    {"ScatterND", "", ST_DT_ALL, cl_scatter_nd, bytes_accepts, NULL, NULL},
    {"OneHot", "", ST_DT_ALL, cl_one_hot, bytes_accepts, NULL, NULL},
    {"Range", "", ST_DT_ALL, cl_range, bytes_accepts, NULL, NULL},
    {"CumSum", "", ST_DT_ALL, cl_cumsum, bytes_accepts, NULL, NULL},
    {"ArgMax", "", ST_DT_ALL, cl_argminmax, bytes_accepts, NULL, NULL},
    {"ArgMin", "", ST_DT_ALL, cl_argminmax, bytes_accepts, NULL, NULL},
    {"TopK", "", ST_DT_ALL, cl_topk, bytes_accepts, NULL, NULL},
    {NULL}
};
