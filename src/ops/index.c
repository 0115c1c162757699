/*
 * index.c — shape rules of the index family: Expand, Tile, Pad,
 * CenterCropPad, Range,
 * ConstantOfShape, EyeLike, Trilu, OneHot, GatherElements, GatherND,
 * ScatterND, ScatterElements (and its deprecated alias Scatter), Compress,
 * NonZero, Unique, DepthToSpace, SpaceToDepth, NonMaxSuppression and Einsum.
 * Kernels: backends/cpu/k_index_*.c, k_nms.c, k_einsum.c; parameter
 * blocks: ops/index.h.
 *
 * Inputs that decide an output shape (Expand's shape, Tile's repeats, Pad's
 * pads, Range's bounds, OneHot's depth) are read here as constants.  The
 * ops whose output shape depends on input *data* (Compress's condition,
 * NonZero's, Unique's and NonMaxSuppression's inputs) need that data
 * constant and compute the shape from it here with the same routine the
 * kernel runs (ops/select.h), so the two cannot disagree; with all inputs
 * constant the planner then folds the node.  Einsum's equation is parsed
 * here once into per-operand labels (st_einsum_state).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/index.h"
#include "ops/ops.h"
#include "ops/select.h"

static const st_dtype INDEX_TYPES[] = {ST_I64, ST_I32, 0};
static const st_dtype NUMERIC[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_I16, ST_I32, ST_I64,
                                   ST_U8,  ST_U16, ST_U32,  ST_U64, 0};

static bool has_in(const st_infer *c, int i) { return i < c->n_in && c->in[i].present; }

static int64_t numel_of(const st_tinfo *t) { return st_numel(t->rank, t->dims); }

/* A constant input as the packed operand a kernel would see. */
static st_operand const_operand(const st_tinfo *t)
{
    st_view v;
    st_view_init(&v, t->dtype, t->rank, t->dims);
    return st_operand_of(&v, (void *)t->data);
}

static st_status need_inputs(const st_infer *c, int n_required)
{
    for (int i = 0; i < n_required; i++)
        if (!has_in(c, i)) return st_infer_error(c, ST_ERR_MODEL, "input %d is required", i);
    return ST_OK;
}

static st_index_state *index_state(st_infer *c)
{
    return st_infer_state(c, sizeof(st_index_state));
}

#define NEW_STATE(var, c)                                                               \
    st_index_state *var = index_state(c);                                               \
    if (!var) return st_infer_error(c, ST_ERR_NOMEM, "out of memory")

static void out_like(st_infer *c, int out, const st_tinfo *t)
{
    c->out[out] = *t;
    c->out[out].present = true;
    c->out[out].data = NULL;
}

/* ---- Expand, Tile ---- */

static st_status infer_expand(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    int64_t shape[ST_MAX_RANK];
    int n;
    ST_TRY(st_infer_const_ints(c, 1, shape, ST_MAX_RANK, &n));
    st_tinfo want = {0};
    want.rank = n;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "shape[%d] = %lld is negative", i, (long long)shape[i]);
        want.dims[i] = shape[i];
    }
    /* bidirectional: a 1 in the shape keeps the input's dim */
    const st_tinfo *ins[2] = {&c->in[0], &want};
    ST_TRY(st_infer_broadcast(c, 2, ins, &c->out[0]));
    c->out[0].dtype = c->in[0].dtype;
    return ST_OK;
}

static st_status infer_tile(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    int64_t reps[ST_MAX_RANK];
    int n, r = c->in[0].rank;
    ST_TRY(st_infer_const_ints(c, 1, reps, ST_MAX_RANK, &n));
    if (n != r) return st_infer_error(c, ST_ERR_SHAPE, "repeats has %d values for an input of rank %d", n, r);
    out_like(c, 0, &c->in[0]);
    for (int d = 0; d < r; d++) {
        if (reps[d] < 0) return st_infer_error(c, ST_ERR_SHAPE, "repeats[%d] = %lld is negative", d, (long long)reps[d]);
        if (__builtin_mul_overflow(c->in[0].dims[d], reps[d], &c->out[0].dims[d]))
            return st_infer_error(c, ST_ERR_SHAPE, "repeats[%d] = %lld overflows the dim", d, (long long)reps[d]);
    }
    return ST_OK;
}

/* ---- Pad ---- */

static st_status infer_pad(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    const st_tinfo *x = &c->in[0];
    int r = x->rank;
    st_pad_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    const char *mode = st_attr_string(c->node, "mode", "constant");
    if (strcmp(mode, "constant") == 0) s->mode = ST_PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) s->mode = ST_PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0) s->mode = ST_PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0 && c->opset >= 19) s->mode = ST_PAD_WRAP;
    else if (strcmp(mode, "wrap") == 0) return st_infer_error(c, ST_ERR_MODEL, "mode 'wrap' needs opset 19 (the model has %d)", c->opset);
    else return st_infer_error(c, ST_ERR_UNSUPPORTED, "mode '%s' is not supported", mode);

    int64_t pads[2 * ST_MAX_RANK], axes[ST_MAX_RANK];
    int np, na = r;
    for (int d = 0; d < r; d++) axes[d] = d;
    if (c->opset < 11) {
        const int64_t *a = st_attr_ints(c->node, "pads", &np);
        if (!a) return st_infer_error(c, ST_ERR_MODEL, "needs a pads attribute");
        if (np > 2 * ST_MAX_RANK) return st_infer_error(c, ST_ERR_SHAPE, "pads has %d values", np);
        memcpy(pads, a, (size_t)np * sizeof *a);
        s->value = st_attr_float(c->node, "value", 0.0f);
    } else {
        if (!has_in(c, 1)) return st_infer_error(c, ST_ERR_MODEL, "needs a pads input");
        ST_TRY(st_infer_const_ints(c, 1, pads, 2 * ST_MAX_RANK, &np));
        if (has_in(c, 2)) {
            const st_tinfo *v = &c->in[2];
            if (numel_of(v) > 1) return st_infer_error(c, ST_ERR_SHAPE, "constant_value has %lld values, expected 1", (long long)numel_of(v));
            if (v->dtype != x->dtype)
                return st_infer_error(c, ST_ERR_DTYPE, "constant_value is %s, the data %s", st_dtype_name(v->dtype), st_dtype_name(x->dtype));
            s->value_input = numel_of(v) == 1;
        }
        if (has_in(c, 3)) ST_TRY(st_infer_const_ints(c, 3, axes, ST_MAX_RANK, &na));
    }
    if (np != 2 * na) return st_infer_error(c, ST_ERR_SHAPE, "pads has %d values for %d axes", np, na);
    bool seen[ST_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int ax;
        ST_TRY(st_infer_axis(c, axes[i], r, &ax));
        if (seen[ax]) return st_infer_error(c, ST_ERR_MODEL, "axis %d is repeated", ax);
        seen[ax] = true;
        s->begin[ax] = pads[i];
        s->end[ax] = pads[na + i];
    }
    out_like(c, 0, x);
    for (int d = 0; d < r; d++) {
        int64_t n;
        if (__builtin_add_overflow(x->dims[d], s->begin[d], &n) || __builtin_add_overflow(n, s->end[d], &n))
            return st_infer_error(c, ST_ERR_SHAPE, "pads of axis %d overflow its size", d);
        if (n < 0) return st_infer_error(c, ST_ERR_SHAPE, "pads crop axis %d of size %lld below zero", d, (long long)x->dims[d]);
        /* what the crops keep, which the other modes read from */
        int64_t kept = x->dims[d] + (s->begin[d] < 0 ? s->begin[d] : 0) + (s->end[d] < 0 ? s->end[d] : 0);
        if (kept < 0) return st_infer_error(c, ST_ERR_SHAPE, "pads crop more than the %lld elements of axis %d", (long long)x->dims[d], d);
        if (s->mode != ST_PAD_CONSTANT && kept == 0 && n > 0)
            return st_infer_error(c, ST_ERR_SHAPE, "mode '%s' cannot pad axis %d, which is empty (after any crop)", mode, d);
        c->out[0].dims[d] = n;
    }
    return ST_OK;
}

/* CenterCropPad (opset 18): each listed axis cropped or zero-padded to the
 * shape input's size, centred, the odd element going to the end; run as a
 * constant Pad whose negative pads crop. */
static st_status infer_center_crop_pad(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    const st_tinfo *x = &c->in[0];
    int r = x->rank;
    st_pad_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->mode = ST_PAD_CONSTANT;
    int64_t shape[ST_MAX_RANK], axes[ST_MAX_RANK];
    int ns, na;
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    ST_TRY(st_infer_const_ints(c, 1, shape, ST_MAX_RANK, &ns));
    const int64_t *a = st_attr_ints(c->node, "axes", &na);
    if (a) {
        if (na > ST_MAX_RANK) return st_infer_error(c, ST_ERR_MODEL, "axes has %d values", na);
        memcpy(axes, a, (size_t)na * sizeof *a);
    } else {
        na = r;
        for (int d = 0; d < r; d++) axes[d] = d;
    }
    if (ns != na) return st_infer_error(c, ST_ERR_SHAPE, "shape has %d values for %d axes", ns, na);
    out_like(c, 0, x);
    bool seen[ST_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int ax;
        ST_TRY(st_infer_axis(c, axes[i], r, &ax));
        if (seen[ax]) return st_infer_error(c, ST_ERR_MODEL, "axis %d is repeated", ax);
        seen[ax] = true;
        if (shape[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "shape[%d] = %lld is negative", i, (long long)shape[i]);
        int64_t dim = x->dims[ax];
        s->begin[ax] = shape[i] < dim ? -((dim - shape[i]) / 2) : (shape[i] - dim) / 2;
        s->end[ax] = shape[i] - dim - s->begin[ax];
        c->out[0].dims[ax] = shape[i];
    }
    return ST_OK;
}

/* ---- Range, ConstantOfShape, EyeLike ---- */

static st_status infer_range(st_infer *c)
{
    static const st_dtype TYPES[] = {ST_F32, ST_F64, ST_I16, ST_I32, ST_I64, 0};
    ST_TRY(need_inputs(c, 3));
    ST_TRY(st_infer_dtype(c, 0, TYPES));
    st_dtype t = c->in[0].dtype;
    for (int i = 0; i < 3; i++) {
        if (c->in[i].dtype != t) return st_infer_error(c, ST_ERR_DTYPE, "start, limit and delta have different dtypes");
        if (numel_of(&c->in[i]) != 1) return st_infer_error(c, ST_ERR_SHAPE, "input %d is not a scalar", i);
        ST_TRY(st_infer_need_const(c, i));
    }
    int64_t n;
    if (st_dtype_is_float(t)) {
        double start = st_load_f64(t, c->in[0].data), limit = st_load_f64(t, c->in[1].data), delta = st_load_f64(t, c->in[2].data);
        if (delta == 0 || !isfinite(start) || !isfinite(limit) || !isfinite(delta))
            return st_infer_error(c, ST_ERR_MODEL, "delta is zero or a bound is not finite");
        double cnt = ceil((limit - start) / delta);
        if (cnt > 1e15) return st_infer_error(c, ST_ERR_SHAPE, "the range has too many elements");
        n = cnt > 0 ? (int64_t)cnt : 0;
    } else {
        int64_t start = st_load_i64(t, c->in[0].data), limit = st_load_i64(t, c->in[1].data), delta = st_load_i64(t, c->in[2].data);
        if (delta == 0) return st_infer_error(c, ST_ERR_MODEL, "delta is zero");
        int64_t span;
        /* bounds near the int64 limits: the span, or span / -1, overflows */
        if (__builtin_sub_overflow(limit, start, &span) || (span == INT64_MIN && delta == -1))
            return st_infer_error(c, ST_ERR_SHAPE, "the range has too many elements");
        /* ceil(span / delta) for either sign */
        n = span / delta + ((span % delta != 0) && ((span < 0) == (delta < 0)) ? 1 : 0);
        if (n < 0) n = 0;
    }
    c->out[0].dtype = t;
    c->out[0].rank = 1;
    c->out[0].dims[0] = n;
    return ST_OK;
}

static st_status infer_constant_of_shape(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    int64_t shape[ST_MAX_RANK];
    int n = 0;
    if (c->in[0].rank != 1) return st_infer_error(c, ST_ERR_SHAPE, "the shape input must be 1-D");
    if (c->in[0].dims[0] > 0) ST_TRY(st_infer_const_ints(c, 0, shape, ST_MAX_RANK, &n));
    st_const_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->dtype = ST_F32; /* value 0.0f */
    const st_attr *a = st_node_attr(c->node, "value");
    if (a) {
        if (a->type != ST_ATTR_TENSOR || !a->t) return st_infer_error(c, ST_ERR_MODEL, "value must be a tensor");
        if (!st_dtype_valid(a->t->dtype))
            return st_infer_error(c, ST_ERR_UNSUPPORTED, "value of dtype %s is not supported", st_dtype_name(a->t->dtype));
        if (st_const_numel(a->t) != 1 || !a->t->data) return st_infer_error(c, ST_ERR_MODEL, "value must hold one element");
        s->dtype = a->t->dtype;
        memcpy(s->value, a->t->data, st_dtype_size(s->dtype));
    }
    c->out[0].dtype = s->dtype;
    c->out[0].rank = n;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "shape[%d] = %lld is negative", i, (long long)shape[i]);
        c->out[0].dims[i] = shape[i];
    }
    return ST_OK;
}

static st_status infer_eye_like(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    if (c->in[0].rank != 2) return st_infer_error(c, ST_ERR_SHAPE, "input must be 2-D, has rank %d", c->in[0].rank);
    NEW_STATE(s, c);
    s->k = st_attr_int(c->node, "k", 0);
    int64_t dt = st_attr_int(c->node, "dtype", c->in[0].dtype);
    if (!st_dtype_valid((st_dtype)dt)) return st_infer_error(c, ST_ERR_UNSUPPORTED, "dtype %lld is not supported", (long long)dt);
    out_like(c, 0, &c->in[0]);
    c->out[0].dtype = (st_dtype)dt;
    return ST_OK;
}

/* ---- Trilu, OneHot ---- */

static st_status infer_trilu(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    if (c->in[0].rank < 2) return st_infer_error(c, ST_ERR_SHAPE, "input must have rank >= 2, has %d", c->in[0].rank);
    if (has_in(c, 1)) {
        ST_TRY(st_infer_dtype(c, 1, (const st_dtype[]){ST_I64, 0}));
        if (numel_of(&c->in[1]) != 1) return st_infer_error(c, ST_ERR_SHAPE, "k must be a scalar");
    }
    NEW_STATE(s, c);
    s->flag = st_attr_int(c->node, "upper", 1) != 0;
    out_like(c, 0, &c->in[0]);
    return ST_OK;
}

static st_status infer_one_hot(st_infer *c)
{
    ST_TRY(need_inputs(c, 3));
    const st_tinfo *ix = &c->in[0], *dep = &c->in[1], *val = &c->in[2];
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    ST_TRY(st_infer_dtype(c, 1, NUMERIC));
    if (numel_of(dep) != 1) return st_infer_error(c, ST_ERR_SHAPE, "depth must hold one value");
    if (val->rank != 1 || val->dims[0] != 2) return st_infer_error(c, ST_ERR_SHAPE, "values must be [off_value, on_value]");
    ST_TRY(st_infer_need_const(c, 1));
    int64_t depth = st_dtype_is_float(dep->dtype) ? (int64_t)st_load_f64(dep->dtype, dep->data) : st_load_i64(dep->dtype, dep->data);
    if (depth < 0) return st_infer_error(c, ST_ERR_SHAPE, "depth %lld is negative", (long long)depth);
    int r = ix->rank + 1, ax;
    if (r > ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "result rank exceeds %d", ST_MAX_RANK);
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", -1), r, &ax));
    NEW_STATE(s, c);
    s->axis = ax;
    s->flag = c->opset >= 11; /* negative indices count from the end */
    st_tinfo *o = &c->out[0];
    o->dtype = val->dtype;
    o->rank = r;
    for (int d = 0, k = 0; d < r; d++) o->dims[d] = d == ax ? depth : ix->dims[k++];
    return ST_OK;
}

/* ---- GatherElements, GatherND ---- */

static st_status infer_gather_elements(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    const st_tinfo *x = &c->in[0], *ix = &c->in[1];
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    if (x->rank < 1 || ix->rank != x->rank)
        return st_infer_error(c, ST_ERR_SHAPE, "data (rank %d) and indices (rank %d) must have one rank >= 1", x->rank, ix->rank);
    NEW_STATE(s, c);
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), x->rank, &s->axis));
    for (int d = 0; d < x->rank; d++)
        if (d != s->axis && ix->dims[d] > x->dims[d])
            return st_infer_error(c, ST_ERR_SHAPE, "indices dim %d (%lld) exceeds the data's (%lld)", d, (long long)ix->dims[d],
                                  (long long)x->dims[d]);
    out_like(c, 0, ix);
    c->out[0].dtype = x->dtype;
    return ST_OK;
}

static st_status infer_gather_nd(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    const st_tinfo *x = &c->in[0], *ix = &c->in[1];
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    int r = x->rank, q = ix->rank;
    int64_t b = c->opset >= 12 ? st_attr_int(c->node, "batch_dims", 0) : 0;
    if (r < 1 || q < 1) return st_infer_error(c, ST_ERR_SHAPE, "data and indices must have rank >= 1");
    if (b < 0 || b >= q || b >= r) return st_infer_error(c, ST_ERR_SHAPE, "batch_dims %lld is out of range", (long long)b);
    int64_t m = ix->dims[q - 1];
    if (m < 1 || m > r - b)
        return st_infer_error(c, ST_ERR_SHAPE, "indices' last dim %lld must be in [1, %lld]", (long long)m, (long long)(r - b));
    for (int d = 0; d < b; d++)
        if (ix->dims[d] != x->dims[d]) return st_infer_error(c, ST_ERR_SHAPE, "batch dim %d differs between data and indices", d);
    int out_rank = q - 1 + r - (int)b - (int)m;
    if (out_rank > ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "result rank exceeds %d", ST_MAX_RANK);
    NEW_STATE(s, c);
    s->n = b;
    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = out_rank;
    int k = 0;
    for (int d = 0; d < q - 1; d++) o->dims[k++] = ix->dims[d];
    for (int d = (int)(b + m); d < r; d++) o->dims[k++] = x->dims[d];
    return ST_OK;
}

/* ---- ScatterND, ScatterElements, Scatter ---- */

static st_status parse_reduction(st_infer *c, st_index_state *s)
{
    const char *red = st_attr_string(c->node, "reduction", "none");
    if (strcmp(red, "none") == 0) s->reduction = ST_RED_NONE;
    else if (strcmp(red, "add") == 0) s->reduction = ST_RED_ADD;
    else if (strcmp(red, "mul") == 0) s->reduction = ST_RED_MUL;
    else if (strcmp(red, "max") == 0) s->reduction = ST_RED_MAX;
    else if (strcmp(red, "min") == 0) s->reduction = ST_RED_MIN;
    else return st_infer_error(c, ST_ERR_MODEL, "reduction '%s' is not one of none, add, mul, max, min", red);
    return ST_OK;
}

static st_status infer_scatter_nd(st_infer *c)
{
    ST_TRY(need_inputs(c, 3));
    const st_tinfo *x = &c->in[0], *ix = &c->in[1], *u = &c->in[2];
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    int r = x->rank, q = ix->rank;
    if (r < 1 || q < 1) return st_infer_error(c, ST_ERR_SHAPE, "data and indices must have rank >= 1");
    int64_t m = ix->dims[q - 1];
    if (m < 1 || m > r) return st_infer_error(c, ST_ERR_SHAPE, "indices' last dim %lld must be in [1, %d]", (long long)m, r);
    int ur = q - 1 + r - (int)m;
    bool ok = u->rank == ur && u->dtype == x->dtype;
    for (int d = 0; ok && d < ur; d++) ok = u->dims[d] == (d < q - 1 ? ix->dims[d] : x->dims[m + d - (q - 1)]);
    if (!ok) return st_infer_error(c, ST_ERR_SHAPE, "updates must have the data's dtype and shape indices.shape[:-1] + data.shape[%lld:]", (long long)m);
    NEW_STATE(s, c);
    ST_TRY(parse_reduction(c, s));
    out_like(c, 0, x);
    return ST_OK;
}

static st_status infer_scatter_elements(st_infer *c)
{
    ST_TRY(need_inputs(c, 3));
    const st_tinfo *x = &c->in[0], *ix = &c->in[1], *u = &c->in[2];
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    if (x->rank < 1 || ix->rank != x->rank || u->rank != x->rank || u->dtype != x->dtype)
        return st_infer_error(c, ST_ERR_SHAPE, "data, indices and updates must have one rank >= 1 (and updates the data's dtype)");
    NEW_STATE(s, c);
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), x->rank, &s->axis));
    for (int d = 0; d < x->rank; d++) {
        if (ix->dims[d] != u->dims[d]) return st_infer_error(c, ST_ERR_SHAPE, "indices and updates differ in dim %d", d);
        if (d != s->axis && ix->dims[d] > x->dims[d])
            return st_infer_error(c, ST_ERR_SHAPE, "indices dim %d (%lld) exceeds the data's (%lld)", d, (long long)ix->dims[d],
                                  (long long)x->dims[d]);
    }
    ST_TRY(parse_reduction(c, s));
    out_like(c, 0, x);
    return ST_OK;
}

/* ---- Compress, NonZero, Unique: shapes from data ---- */

static st_status infer_compress(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    const st_tinfo *x = &c->in[0], *cond = &c->in[1];
    if (cond->dtype != ST_BOOL || cond->rank != 1) return st_infer_error(c, ST_ERR_SHAPE, "condition must be a 1-D bool tensor");
    NEW_STATE(s, c);
    s->axis = -1;
    int64_t dim = numel_of(x);
    if (st_node_attr(c->node, "axis")) {
        if (x->rank < 1) return st_infer_error(c, ST_ERR_SHAPE, "input must have rank >= 1 to take an axis");
        ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), x->rank, &s->axis));
        dim = x->dims[s->axis];
    }
    if (cond->dims[0] > 0) ST_TRY(st_infer_need_const(c, 1));
    int64_t kept = 0;
    for (int64_t i = 0; i < cond->dims[0]; i++) {
        if (!((const uint8_t *)cond->data)[i]) continue;
        if (i >= dim) return st_infer_error(c, ST_ERR_SHAPE, "condition selects entry %lld of an axis of %lld", (long long)i, (long long)dim);
        kept++;
    }
    st_tinfo *o = &c->out[0];
    if (s->axis < 0) {
        o->dtype = x->dtype;
        o->rank = 1;
        o->dims[0] = kept;
    } else {
        out_like(c, 0, x);
        o->dims[s->axis] = kept;
    }
    return ST_OK;
}

static st_status infer_nonzero(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    if (!st_dtype_valid(c->in[0].dtype)) return st_infer_error(c, ST_ERR_DTYPE, "input dtype is not supported");
    if (numel_of(&c->in[0]) > 0) ST_TRY(st_infer_need_const(c, 0));
    int64_t n = 0;
    if (numel_of(&c->in[0]) > 0) {
        st_operand x = const_operand(&c->in[0]);
        n = st_nonzero_count(&x);
    }
    c->out[0].dtype = ST_I64;
    c->out[0].rank = 2;
    c->out[0].dims[0] = c->in[0].rank;
    c->out[0].dims[1] = n;
    return ST_OK;
}

static st_status infer_unique(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    const st_tinfo *x = &c->in[0];
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    NEW_STATE(s, c);
    s->flag = st_attr_int(c->node, "sorted", 1) != 0;
    s->axis = -1;
    if (st_node_attr(c->node, "axis")) {
        if (x->rank < 1) return st_infer_error(c, ST_ERR_SHAPE, "input must have rank >= 1 to take an axis");
        ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), x->rank, &s->axis));
    }
    int64_t n_slices = s->axis < 0 ? numel_of(x) : x->dims[s->axis];
    if (numel_of(x) > 0) ST_TRY(st_infer_need_const(c, 0));
    st_operand xo = const_operand(x);
    st_unique_result u;
    st_status st = st_unique_run(&xo, s->axis, s->flag, &u);
    if (st != ST_OK) return st;
    int64_t n_unique = u.n_unique;
    st_unique_free(&u);
    if (c->n_out > 0 && c->out[0].present) {
        if (s->axis < 0) {
            c->out[0].dtype = x->dtype;
            c->out[0].rank = 1;
            c->out[0].dims[0] = n_unique;
        } else {
            out_like(c, 0, x);
            c->out[0].dims[s->axis] = n_unique;
        }
    }
    for (int k = 1; k < c->n_out && k < 4; k++) {
        c->out[k].dtype = ST_I64;
        c->out[k].rank = 1;
        c->out[k].dims[0] = k == 2 ? n_slices : n_unique;
    }
    return ST_OK;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

static st_status infer_depth_space(st_infer *c)
{
    ST_TRY(need_inputs(c, 1));
    const st_tinfo *x = &c->in[0];
    bool to_space = strcmp(c->node->op_type, "DepthToSpace") == 0;
    if (x->rank != 4) return st_infer_error(c, ST_ERR_SHAPE, "input must be 4-D [N, C, H, W], has rank %d", x->rank);
    NEW_STATE(s, c);
    s->n = st_attr_int(c->node, "blocksize", 0);
    int64_t b = s->n;
    if (b < 1) return st_infer_error(c, ST_ERR_MODEL, "blocksize must be positive");
    out_like(c, 0, x);
    if (to_space) {
        const char *mode = c->opset >= 11 ? st_attr_string(c->node, "mode", "DCR") : "DCR";
        if (strcmp(mode, "CRD") == 0) s->flag = true;
        else if (strcmp(mode, "DCR") != 0) return st_infer_error(c, ST_ERR_MODEL, "mode '%s' is not DCR or CRD", mode);
        if (x->dims[1] % (b * b)) return st_infer_error(c, ST_ERR_SHAPE, "channels %lld are not a multiple of blocksize^2", (long long)x->dims[1]);
        c->out[0].dims[1] = x->dims[1] / (b * b);
        c->out[0].dims[2] = x->dims[2] * b;
        c->out[0].dims[3] = x->dims[3] * b;
    } else {
        if (x->dims[2] % b || x->dims[3] % b) return st_infer_error(c, ST_ERR_SHAPE, "H and W must be multiples of blocksize %lld", (long long)b);
        c->out[0].dims[1] = x->dims[1] * b * b;
        c->out[0].dims[2] = x->dims[2] / b;
        c->out[0].dims[3] = x->dims[3] / b;
    }
    return ST_OK;
}

/* ---- NonMaxSuppression ---- */

static st_status infer_nms(st_infer *c)
{
    ST_TRY(need_inputs(c, 2));
    const st_tinfo *boxes = &c->in[0], *scores = &c->in[1];
    if (boxes->rank != 3 || boxes->dims[2] != 4) return st_infer_error(c, ST_ERR_SHAPE, "boxes must be [batches, boxes, 4]");
    if (scores->rank != 3 || scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return st_infer_error(c, ST_ERR_SHAPE, "scores must be [batches, classes, boxes] matching boxes");
    ST_TRY(st_infer_dtype(c, 0, (const st_dtype[]){ST_F32, ST_F16, ST_BF16, ST_F64, 0}));
    ST_TRY(st_infer_dtype(c, 1, (const st_dtype[]){ST_F32, ST_F16, ST_BF16, ST_F64, 0}));
    NEW_STATE(s, c);
    s->flag = st_attr_int(c->node, "center_point_box", 0) != 0;
    st_operand ops[5] = {{0}};
    for (int i = 0; i < 5 && i < c->n_in; i++) {
        if (!has_in(c, i)) continue;
        if (i >= 2 && numel_of(&c->in[i]) > 1) return st_infer_error(c, ST_ERR_SHAPE, "input %d must hold one value", i);
        if (numel_of(&c->in[i]) == 0) continue;
        ST_TRY(st_infer_need_const(c, i));
        ops[i] = const_operand(&c->in[i]);
    }
    int64_t count = 0;
    if (numel_of(boxes) > 0 && numel_of(scores) > 0) {
        st_nms_params p;
        st_nms_params_read(ops, 5, s->flag, &p);
        int64_t *sel = NULL;
        st_status st = st_nms_select(&ops[0], &ops[1], &p, &sel, &count);
        free(sel);
        if (st != ST_OK) return st;
    }
    c->out[0].dtype = ST_I64;
    c->out[0].rank = 2;
    c->out[0].dims[0] = count;
    c->out[0].dims[1] = 3;
    return ST_OK;
}

/* ---- Einsum ---- */

static int ein_letter(char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return 26 + ch - 'a';
    return -1;
}

/* One term of the equation: its letters, and where an ellipsis sits (-1: none). */
typedef struct ein_term {
    int n;
    int8_t lab[ST_MAX_RANK + 1];
    int ell;
} ein_term;

static st_status ein_parse_term(const st_infer *c, const char *p, size_t len, ein_term *t)
{
    t->n = 0;
    t->ell = -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == ' ') continue;
        if (p[i] == '.') {
            if (i + 2 >= len || p[i + 1] != '.' || p[i + 2] != '.' || t->ell >= 0)
                return st_infer_error(c, ST_ERR_MODEL, "malformed or repeated ellipsis in the equation");
            t->ell = t->n;
            i += 2;
            continue;
        }
        int l = ein_letter(p[i]);
        if (l < 0) return st_infer_error(c, ST_ERR_MODEL, "character '%c' is not a subscript letter", p[i]);
        if (t->n >= ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "a term has more than %d subscripts", ST_MAX_RANK);
        t->lab[t->n++] = (int8_t)l;
    }
    return ST_OK;
}

static st_status infer_einsum(st_infer *c)
{
    const char *eq = st_attr_string(c->node, "equation", NULL);
    if (!eq) return st_infer_error(c, ST_ERR_MODEL, "needs an equation attribute");
    if (c->n_in < 1 || c->n_in > ST_EIN_MAX_IN)
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "%d inputs (1 to %d supported)", c->n_in, ST_EIN_MAX_IN);
    ST_TRY(need_inputs(c, c->n_in));
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i].dtype != c->in[0].dtype) return st_infer_error(c, ST_ERR_DTYPE, "inputs have different dtypes");
    st_einsum_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->n_in = c->n_in;

    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    ein_term terms[ST_EIN_MAX_IN];
    int nt = 0, max_ell = 0;
    for (size_t start = 0;;) {
        size_t end = start;
        while (end < lhs_len && eq[end] != ',') end++;
        if (nt == c->n_in) return st_infer_error(c, ST_ERR_MODEL, "the equation has more terms than the %d inputs", c->n_in);
        ST_TRY(ein_parse_term(c, eq + start, end - start, &terms[nt]));
        ein_term *t = &terms[nt];
        int r = c->in[nt].rank, ell_rank = r - t->n;
        if (t->ell < 0 ? ell_rank != 0 : ell_rank < 0)
            return st_infer_error(c, ST_ERR_SHAPE, "term %d has %d subscripts for an input of rank %d", nt, t->n, r);
        if (ell_rank > max_ell) max_ell = ell_rank;
        nt++;
        if (end >= lhs_len) break;
        start = end + 1;
    }
    if (nt != c->n_in) return st_infer_error(c, ST_ERR_MODEL, "the equation has %d terms for %d inputs", nt, c->n_in);

    /* labels per input dim; ellipsis dims right-aligned across inputs */
    int count[ST_EIN_LABELS] = {0};
    for (int l = 0; l < ST_EIN_LABELS; l++) s->size[l] = -1;
    for (int i = 0; i < nt; i++) {
        const ein_term *t = &terms[i];
        int r = c->in[i].rank, ell_rank = r - t->n, d = 0;
        s->rank[i] = r;
        for (int j = 0; j <= t->n; j++) {
            if (j == t->ell)
                for (int e = 0; e < ell_rank; e++) s->label[i][d++] = (int8_t)(ST_EIN_ELL + max_ell - ell_rank + e);
            if (j < t->n) s->label[i][d++] = t->lab[j];
        }
        for (d = 0; d < r; d++) {
            int l = s->label[i][d];
            int64_t n = c->in[i].dims[d];
            count[l]++;
            if (s->size[l] < 0 || s->size[l] == 1) s->size[l] = n; /* a 1 broadcasts */
            else if (n != 1 && n != s->size[l])
                return st_infer_error(c, ST_ERR_SHAPE, "subscript sizes disagree (%lld and %lld)", (long long)s->size[l], (long long)n);
        }
    }
    /* a repeated subscript within one term takes a diagonal: no broadcasting there */
    for (int i = 0; i < nt; i++)
        for (int d = 0; d < s->rank[i]; d++)
            for (int e = d + 1; e < s->rank[i]; e++)
                if (s->label[i][d] == s->label[i][e] && c->in[i].dims[d] != c->in[i].dims[e])
                    return st_infer_error(c, ST_ERR_SHAPE, "a diagonal over dims of sizes %lld and %lld", (long long)c->in[i].dims[d],
                                          (long long)c->in[i].dims[e]);

    s->out_rank = 0;
    if (arrow) {
        ein_term t;
        const char *rhs = arrow + 2;
        if (strstr(rhs, "->") || strchr(rhs, ',')) return st_infer_error(c, ST_ERR_MODEL, "malformed output in the equation");
        ST_TRY(ein_parse_term(c, rhs, strlen(rhs), &t));
        bool used[ST_EIN_LABELS] = {0};
        for (int j = 0; j <= t.n; j++) {
            if (j == t.ell)
                for (int e = 0; e < max_ell; e++) {
                    if (s->out_rank >= ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "output rank exceeds %d", ST_MAX_RANK);
                    s->out_label[s->out_rank++] = (int8_t)(ST_EIN_ELL + e);
                }
            if (j == t.n) break;
            int l = t.lab[j];
            if (!count[l]) return st_infer_error(c, ST_ERR_MODEL, "output subscript '%c' is in no input", l < 26 ? 'A' + l : 'a' + l - 26);
            if (used[l]) return st_infer_error(c, ST_ERR_MODEL, "output subscript '%c' is repeated", l < 26 ? 'A' + l : 'a' + l - 26);
            used[l] = true;
            if (s->out_rank >= ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "output rank exceeds %d", ST_MAX_RANK);
            s->out_label[s->out_rank++] = (int8_t)l;
        }
    } else {
        /* implicit: the ellipsis dims, then the letters seen once, alphabetically */
        for (int e = 0; e < max_ell; e++) s->out_label[s->out_rank++] = (int8_t)(ST_EIN_ELL + e);
        for (int l = 0; l < ST_EIN_ELL; l++)
            if (count[l] == 1) {
                if (s->out_rank >= ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "output rank exceeds %d", ST_MAX_RANK);
                s->out_label[s->out_rank++] = (int8_t)l;
            }
    }
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].rank = s->out_rank;
    for (int d = 0; d < s->out_rank; d++) c->out[0].dims[d] = s->size[s->out_label[d]];
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

/* types: the ONNX type constraint of the type operand (op.h) */
#define INDEX_OP(name, min, rule, t) {name, "", min, 0, rule, NULL, NULL, .types = t}
const st_op_def st_ops_index[] = {
    INDEX_OP("Expand", 8, infer_expand, ST_DT_ALL),
    INDEX_OP("Tile", 6, infer_tile, ST_DT_ALL),
    INDEX_OP("Pad", 2, infer_pad, ST_DT_ALL),
    INDEX_OP("CenterCropPad", 18, infer_center_crop_pad, ST_DT_ALL),
    INDEX_OP("Range", 11, infer_range, ST_DT_NUMERIC),
    {"ConstantOfShape", "", 9, 0, infer_constant_of_shape, NULL, NULL, .types = ST_DT_ALL, .t_operand = -1},
    INDEX_OP("EyeLike", 9, infer_eye_like, ST_DT_ALL),
    INDEX_OP("Trilu", 14, infer_trilu, ST_DT_ALL),
    INDEX_OP("OneHot", 9, infer_one_hot, ST_DT_NUMERIC),
    INDEX_OP("GatherElements", 11, infer_gather_elements, ST_DT_ALL),
    INDEX_OP("GatherND", 11, infer_gather_nd, ST_DT_ALL),
    INDEX_OP("ScatterND", 11, infer_scatter_nd, ST_DT_ALL),
    INDEX_OP("ScatterElements", 11, infer_scatter_elements, ST_DT_ALL),
    INDEX_OP("Scatter", 9, infer_scatter_elements, ST_DT_ALL),
    INDEX_OP("Compress", 9, infer_compress, ST_DT_ALL),
    INDEX_OP("NonZero", 9, infer_nonzero, ST_DT_ALL),
    INDEX_OP("Unique", 11, infer_unique, ST_DT_NUMERIC),
    INDEX_OP("DepthToSpace", 1, infer_depth_space, ST_DT_ALL),
    INDEX_OP("SpaceToDepth", 1, infer_depth_space, ST_DT_ALL),
    INDEX_OP("NonMaxSuppression", 10, infer_nms, ST_DT_ALL_FLOATS),
    INDEX_OP("Einsum", 12, infer_einsum, ST_DT_NUMERIC),
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
