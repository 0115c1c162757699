/*
 * shape.c — shape and layout ops: Shape, Size, Reshape, Flatten, Squeeze,
 * Unsqueeze, Transpose, Slice, Split, Concat, Gather, Identity.
 *
 * Each view op has a view rule: its output as a view of its input's bytes.
 * The planner (passes/views.c) uses it to make the node a pure view; the
 * CPU kernel st_cpu_view_copy uses the same rule when a copy is needed
 * (folding, or a layout the rule cannot express), so the two can never
 * disagree about what the op means.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/concat.h"
#include "ops/op.h"
#include "ops/ops.h"

/* ---- Shape / Size ---- */

st_status st_infer_shape(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    int r = c->in[0].rank;
    int64_t start = st_attr_int(c->node, "start", 0), end = st_attr_int(c->node, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    st_shape_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->start = start;
    s->end = end > start ? end : start;
    c->out[0].dtype = ST_I64;
    c->out[0].rank = 1;
    c->out[0].dims[0] = s->end - s->start;
    return ST_OK;
}

st_status st_infer_size(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    c->out[0].dtype = ST_I64;
    c->out[0].rank = 0;
    return ST_OK;
}

/* ---- the view ops' common state: a list of integers and an axis ---- */

typedef struct layout_state {
    int axis;
    int n;                          /* entries used in v[] */
    int64_t v[ST_MAX_RANK];         /* Reshape/Squeeze/...: the output sizes; Transpose: perm */
    int64_t starts[ST_MAX_RANK], steps[ST_MAX_RANK], counts[ST_MAX_RANK]; /* Slice */
    int64_t index;                  /* Gather with a scalar index */
    int n_split;
    int64_t split[];                /* Split: sizes along axis */
} layout_state;

static layout_state *layout_new(st_infer *c, int n_split)
{
    return st_infer_state(c, sizeof(layout_state) + (size_t)(n_split > 0 ? n_split : 1) * sizeof(int64_t));
}

/* Output sizes as the op's whole effect: Reshape, Flatten, Squeeze and
 * Unsqueeze all re-view the same elements in the same order. */
static st_status set_reshape(st_infer *c, int rank, const int64_t *dims)
{
    layout_state *s = layout_new(c, 0);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->n = rank;
    memcpy(s->v, dims, (size_t)rank * sizeof *dims);
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].rank = rank;
    memcpy(c->out[0].dims, dims, (size_t)rank * sizeof *dims);
    return ST_OK;
}

st_status st_infer_reshape(st_infer *c)
{
    int64_t shape[ST_MAX_RANK];
    int n;
    if (c->opset < 5) {
        int cnt;
        const int64_t *a = st_attr_ints(c->node, "shape", &cnt);
        if (!a || cnt > ST_MAX_RANK) return st_infer_error(c, ST_ERR_MODEL, "needs a shape attribute of at most %d dims", ST_MAX_RANK);
        memcpy(shape, a, (size_t)cnt * sizeof *a);
        n = cnt;
    } else {
        if (c->n_in < 2) return st_infer_error(c, ST_ERR_MODEL, "expects 2 inputs");
        ST_TRY(st_infer_const_ints(c, 1, shape, ST_MAX_RANK, &n));
    }
    bool allowzero = st_attr_int(c->node, "allowzero", 0) != 0;
    int64_t in_numel = st_numel(c->in[0].rank, c->in[0].dims), known = 1;
    int infer_at = -1;
    for (int i = 0; i < n; i++) {
        if (shape[i] == 0 && !allowzero) {
            if (i >= c->in[0].rank) return st_infer_error(c, ST_ERR_SHAPE, "shape[%d] = 0 copies a dim the input lacks", i);
            shape[i] = c->in[0].dims[i];
        }
        if (shape[i] == -1) {
            if (infer_at >= 0) return st_infer_error(c, ST_ERR_SHAPE, "shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (shape[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "shape[%d] = %lld is invalid", i, (long long)shape[i]);
        /* the shape is data: its product can overflow (then it cannot match) */
        if (__builtin_mul_overflow(known, shape[i], &known))
            return st_infer_error(c, ST_ERR_SHAPE, "shape's product overflows at shape[%d] = %lld", i, (long long)shape[i]);
    }
    if (infer_at >= 0) {
        if (known == 0 || in_numel % known)
            return st_infer_error(c, ST_ERR_SHAPE, "cannot infer -1: %lld elements do not divide into %lld", (long long)in_numel,
                                  (long long)known);
        shape[infer_at] = in_numel / known;
        known *= shape[infer_at];
    }
    if (known != in_numel)
        return st_infer_error(c, ST_ERR_SHAPE, "cannot reshape %lld elements into %lld", (long long)in_numel, (long long)known);
    return set_reshape(c, n, shape);
}

st_status st_infer_flatten(st_infer *c)
{
    int r = c->in[0].rank, axis;
    int64_t a = st_attr_int(c->node, "axis", 1);
    if (a < 0) a += r;
    if (a < 0 || a > r) return st_infer_error(c, ST_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)a, r);
    axis = (int)a;
    int64_t dims[2] = {st_numel(axis, c->in[0].dims), st_numel(r - axis, c->in[0].dims + axis)};
    return set_reshape(c, 2, dims);
}

st_status st_infer_squeeze(st_infer *c)
{
    int64_t axes[ST_MAX_RANK];
    int n = 0, r = c->in[0].rank;
    bool given;
    if (c->opset >= 13) {
        given = c->n_in > 1 && c->in[1].present;
        if (given) ST_TRY(st_infer_const_ints(c, 1, axes, ST_MAX_RANK, &n));
    } else {
        const int64_t *a = st_attr_ints(c->node, "axes", &n);
        given = a != NULL;
        if (n > ST_MAX_RANK) return st_infer_error(c, ST_ERR_SHAPE, "too many axes");
        if (a) memcpy(axes, a, (size_t)n * sizeof *a);
    }
    bool drop[ST_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        int ax;
        ST_TRY(st_infer_axis(c, axes[i], r, &ax));
        if (c->in[0].dims[ax] != 1)
            return st_infer_error(c, ST_ERR_SHAPE, "cannot squeeze axis %d of size %lld", ax, (long long)c->in[0].dims[ax]);
        drop[ax] = true;
    }
    int64_t dims[ST_MAX_RANK];
    int k = 0;
    for (int d = 0; d < r; d++) {
        if (given ? drop[d] : c->in[0].dims[d] == 1) continue;
        dims[k++] = c->in[0].dims[d];
    }
    return set_reshape(c, k, dims);
}

st_status st_infer_unsqueeze(st_infer *c)
{
    int64_t axes[ST_MAX_RANK];
    int n = 0;
    if (c->opset >= 13) {
        if (c->n_in < 2) return st_infer_error(c, ST_ERR_MODEL, "needs an axes input");
        ST_TRY(st_infer_const_ints(c, 1, axes, ST_MAX_RANK, &n));
    } else {
        const int64_t *a = st_attr_ints(c->node, "axes", &n);
        if (!a || n > ST_MAX_RANK) return st_infer_error(c, ST_ERR_MODEL, "needs an axes attribute");
        memcpy(axes, a, (size_t)n * sizeof *a);
    }
    int r = c->in[0].rank + n;
    if (r > ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "result rank %d exceeds %d", r, ST_MAX_RANK);
    bool ins[ST_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        int ax;
        ST_TRY(st_infer_axis(c, axes[i], r, &ax));
        if (ins[ax]) return st_infer_error(c, ST_ERR_MODEL, "axis %d is repeated", ax);
        ins[ax] = true;
    }
    int64_t dims[ST_MAX_RANK];
    for (int d = 0, k = 0; d < r; d++) dims[d] = ins[d] ? 1 : c->in[0].dims[k++];
    return set_reshape(c, r, dims);
}

bool st_view_reshape_rule(const void *state, int out, const st_view *in, st_view *res)
{
    const layout_state *s = state;
    (void)out;
    *res = *in;
    return st_view_reshape(res, s->n, s->v);
}

/* ---- Identity ---- */

st_status st_infer_identity(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    c->out[0] = c->in[0];
    c->out[0].data = NULL;
    return ST_OK;
}

bool st_view_identity_rule(const void *state, int out, const st_view *in, st_view *res)
{
    (void)state;
    (void)out;
    *res = *in;
    return true;
}

/* ---- Transpose ---- */

st_status st_infer_transpose(st_infer *c)
{
    int r = c->in[0].rank, n;
    const int64_t *perm = st_attr_ints(c->node, "perm", &n);
    layout_state *s = layout_new(c, 0);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    if (!perm) {
        for (int i = 0; i < r; i++) s->v[i] = r - 1 - i;
    } else {
        if (n != r) return st_infer_error(c, ST_ERR_SHAPE, "perm has %d entries for rank %d", n, r);
        bool seen[ST_MAX_RANK] = {0};
        for (int i = 0; i < r; i++) {
            if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
                return st_infer_error(c, ST_ERR_MODEL, "perm is not a permutation of 0..%d", r - 1);
            seen[perm[i]] = true;
            s->v[i] = perm[i];
        }
    }
    s->n = r;
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].rank = r;
    for (int i = 0; i < r; i++) c->out[0].dims[i] = c->in[0].dims[s->v[i]];
    return ST_OK;
}

bool st_view_transpose_rule(const void *state, int out, const st_view *in, st_view *res)
{
    const layout_state *s = state;
    int perm[ST_MAX_RANK];
    (void)out;
    for (int i = 0; i < s->n; i++) perm[i] = (int)s->v[i];
    *res = *in;
    st_view_permute(res, perm);
    return true;
}

/* ---- Slice ---- */

/* Clamps one axis's start/end/step the way the spec says, and returns the
 * element count. */
static int64_t slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first)
{
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        *first = start;
        /* (n - 1) / step + 1, not (n + step - 1) / step: a step near
         * INT64_MAX must not overflow */
        return end > start ? (end - start - 1) / step + 1 : 0;
    }
    start = start < 0 ? -1 : start > dim - 1 ? dim - 1 : start;
    end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
    *first = start;
    /* -INT64_MIN overflows: take the magnitude unsigned */
    uint64_t mag = (uint64_t)0 - (uint64_t)step;
    return start > end ? (int64_t)((uint64_t)(start - end - 1) / mag) + 1 : 0;
}

st_status st_infer_slice(st_infer *c)
{
    int r = c->in[0].rank;
    int64_t starts[ST_MAX_RANK], ends[ST_MAX_RANK], axes[ST_MAX_RANK], steps[ST_MAX_RANK];
    int ns, ne, na = 0, nst = 0;
    if (c->opset < 10) {
        const int64_t *a = st_attr_ints(c->node, "starts", &ns), *e = st_attr_ints(c->node, "ends", &ne);
        const int64_t *x = st_attr_ints(c->node, "axes", &na);
        if (!a || !e || ns > ST_MAX_RANK || ne != ns) return st_infer_error(c, ST_ERR_MODEL, "needs starts and ends of one length");
        memcpy(starts, a, (size_t)ns * sizeof *a);
        memcpy(ends, e, (size_t)ne * sizeof *e);
        if (x) memcpy(axes, x, (size_t)na * sizeof *x);
    } else {
        if (c->n_in < 3) return st_infer_error(c, ST_ERR_MODEL, "needs starts and ends inputs");
        ST_TRY(st_infer_const_ints(c, 1, starts, ST_MAX_RANK, &ns));
        ST_TRY(st_infer_const_ints(c, 2, ends, ST_MAX_RANK, &ne));
        if (c->n_in > 3 && c->in[3].present) ST_TRY(st_infer_const_ints(c, 3, axes, ST_MAX_RANK, &na));
        if (c->n_in > 4 && c->in[4].present) ST_TRY(st_infer_const_ints(c, 4, steps, ST_MAX_RANK, &nst));
        if (ne != ns) return st_infer_error(c, ST_ERR_SHAPE, "starts and ends differ in length");
    }
    if (na == 0) {
        na = ns;
        for (int i = 0; i < ns; i++) axes[i] = i;
    }
    if (nst == 0) {
        nst = ns;
        for (int i = 0; i < ns; i++) steps[i] = 1;
    }
    if (na != ns || nst != ns) return st_infer_error(c, ST_ERR_SHAPE, "starts, ends, axes and steps differ in length");
    layout_state *s = layout_new(c, 0);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    for (int d = 0; d < r; d++) {
        s->starts[d] = 0;
        s->steps[d] = 1;
        s->counts[d] = c->in[0].dims[d];
    }
    bool seen[ST_MAX_RANK] = {0};
    for (int i = 0; i < ns; i++) {
        int ax;
        ST_TRY(st_infer_axis(c, axes[i], r, &ax));
        if (seen[ax]) return st_infer_error(c, ST_ERR_MODEL, "axis %d is repeated", ax);
        seen[ax] = true;
        if (steps[i] == 0) return st_infer_error(c, ST_ERR_MODEL, "step on axis %d is 0", ax);
        s->steps[ax] = steps[i];
        s->counts[ax] = slice_axis(c->in[0].dims[ax], starts[i], ends[i], steps[i], &s->starts[ax]);
    }
    s->n = r;
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].rank = r;
    for (int d = 0; d < r; d++) c->out[0].dims[d] = s->counts[d];
    return ST_OK;
}

bool st_view_slice_rule(const void *state, int out, const st_view *in, st_view *res)
{
    const layout_state *s = state;
    (void)out;
    *res = *in;
    for (int d = 0; d < s->n; d++)
        if (s->starts[d] != 0 || s->steps[d] != 1 || s->counts[d] != in->sizes[d])
            st_view_slice(res, d, s->starts[d], s->steps[d], s->counts[d]);
    return true;
}

/* ---- Split ---- */

st_status st_infer_split(st_infer *c)
{
    int r = c->in[0].rank, ax;
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), r, &ax));
    int64_t dim = c->in[0].dims[ax];
    int n = c->n_out;
    layout_state *s = layout_new(c, n);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->axis = ax;
    s->n_split = n;
    int given = 0;
    /* opset 18: num_outputs asks for equal parts, the last one smaller
     * when the axis does not divide; it and the split input exclude each
     * other */
    bool num_outputs = c->opset >= 18 && st_node_attr(c->node, "num_outputs");
    if (num_outputs) {
        int64_t no = st_attr_int(c->node, "num_outputs", 0);
        if (c->n_in > 1 && c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "has both the split input and num_outputs");
        if (no != n) return st_infer_error(c, ST_ERR_MODEL, "num_outputs is %lld, but the node has %d outputs", (long long)no, n);
    }
    if (c->opset >= 13 && c->n_in > 1 && c->in[1].present) {
        ST_TRY(st_infer_need_const(c, 1));
        int64_t cnt = st_numel(c->in[1].rank, c->in[1].dims);
        if (cnt != n) return st_infer_error(c, ST_ERR_SHAPE, "split has %lld sizes for %d outputs", (long long)cnt, n);
        for (int i = 0; i < n; i++)
            s->split[i] = c->in[1].dtype == ST_I32 ? ((const int32_t *)c->in[1].data)[i] : ((const int64_t *)c->in[1].data)[i];
        given = 1;
    } else if (c->opset < 13) {
        int cnt;
        const int64_t *a = st_attr_ints(c->node, "split", &cnt);
        if (a) {
            if (cnt != n) return st_infer_error(c, ST_ERR_SHAPE, "split has %d sizes for %d outputs", cnt, n);
            memcpy(s->split, a, (size_t)n * sizeof *a);
            given = 1;
        }
    }
    if (!given) {
        if (dim % n && !num_outputs)
            return st_infer_error(c, ST_ERR_SHAPE, "dim %lld does not split into %d equal parts", (long long)dim, n);
        /* parts of ceil(dim / n), the last what is left: ONNX's rule, which
         * leaves a negative last part (refused below) when n - 1 parts
         * already overrun the axis */
        int64_t part = (dim + n - 1) / n;
        for (int i = 0; i < n; i++) s->split[i] = i < n - 1 ? part : dim - part * (n - 1);
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (s->split[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "split size %d is negative", i);
        total += s->split[i];
    }
    if (total != dim) return st_infer_error(c, ST_ERR_SHAPE, "split sizes sum to %lld, the axis has %lld", (long long)total, (long long)dim);
    for (int i = 0; i < n; i++) {
        c->out[i].dtype = c->in[0].dtype;
        c->out[i].rank = r;
        memcpy(c->out[i].dims, c->in[0].dims, sizeof c->out[i].dims);
        c->out[i].dims[ax] = s->split[i];
    }
    return ST_OK;
}

bool st_view_split_rule(const void *state, int out, const st_view *in, st_view *res)
{
    const layout_state *s = state;
    int64_t start = 0;
    for (int i = 0; i < out; i++) start += s->split[i];
    *res = *in;
    st_view_slice(res, s->axis, start, 1, s->split[out]);
    return true;
}

/* ---- Gather ---- */

st_status st_infer_gather(st_infer *c)
{
    if (c->n_in != 2) return st_infer_error(c, ST_ERR_MODEL, "expects 2 inputs");
    int r = c->in[0].rank, ax;
    if (r < 1) return st_infer_error(c, ST_ERR_SHAPE, "data must have rank >= 1");
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), r, &ax));
    const st_tinfo *ix = &c->in[1];
    if (ix->dtype != ST_I64 && ix->dtype != ST_I32)
        return st_infer_error(c, ST_ERR_DTYPE, "indices must be int64 or int32, not %s", st_dtype_name(ix->dtype));
    if (r + ix->rank - 1 > ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "result rank exceeds %d", ST_MAX_RANK);
    st_gather_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->axis = ax;
    int64_t dim = c->in[0].dims[ax];
    if (ix->data) {
        int64_t n = st_numel(ix->rank, ix->dims);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = ix->dtype == ST_I64 ? ((const int64_t *)ix->data)[i] : ((const int32_t *)ix->data)[i];
            if (v < -dim || v >= dim)
                return st_infer_error(c, ST_ERR_SHAPE, "index %lld is out of range for axis %d of size %lld", (long long)v, ax,
                                      (long long)dim);
            if (ix->rank == 0) {
                s->scalar = true;
                s->index = v < 0 ? v + dim : v;
            }
        }
    }
    st_tinfo *o = &c->out[0];
    o->dtype = c->in[0].dtype;
    o->rank = r + ix->rank - 1;
    int k = 0;
    for (int d = 0; d < ax; d++) o->dims[k++] = c->in[0].dims[d];
    for (int d = 0; d < ix->rank; d++) o->dims[k++] = ix->dims[d];
    for (int d = ax + 1; d < r; d++) o->dims[k++] = c->in[0].dims[d];
    return ST_OK;
}

bool st_view_gather_rule(const void *state, int out, const st_view *in, st_view *res)
{
    const st_gather_state *s = state;
    (void)out;
    if (!s->scalar) return false;
    *res = *in;
    st_view_select(res, s->axis, s->index);
    return true;
}

/* ---- Concat ---- */

st_status st_infer_concat(st_infer *c)
{
    int first = -1;
    for (int k = 0; k < c->n_in; k++)
        if (c->in[k].present) {
            first = k;
            break;
        }
    if (first < 0) return st_infer_error(c, ST_ERR_MODEL, "has no inputs");
    int r = c->in[first].rank, ax;
    if (r < 1) return st_infer_error(c, ST_ERR_SHAPE, "inputs must have rank >= 1");
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", c->opset < 4 ? 1 : INT64_MAX), r, &ax));
    st_concat_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->axis = ax;
    st_tinfo *o = &c->out[0];
    *o = c->in[first];
    o->data = NULL;
    o->dims[ax] = 0;
    for (int k = 0; k < c->n_in; k++) {
        const st_tinfo *t = &c->in[k];
        if (!t->present) continue;
        if (t->dtype != o->dtype) return st_infer_error(c, ST_ERR_DTYPE, "input %d is %s, input %d is %s", k, st_dtype_name(t->dtype), first, st_dtype_name(o->dtype));
        if (t->rank != r) return st_infer_error(c, ST_ERR_SHAPE, "input %d has rank %d, input %d has %d", k, t->rank, first, r);
        for (int d = 0; d < r; d++)
            if (d != ax && t->dims[d] != o->dims[d])
                return st_infer_error(c, ST_ERR_SHAPE, "input %d has dim %d = %lld, expected %lld", k, d, (long long)t->dims[d], (long long)o->dims[d]);
        o->dims[ax] += t->dims[ax];
    }
    return ST_OK;
}

/* Concat reads the inputs not already in place and writes only their
 * slots; a placed input's slot belongs to its producer. */
int st_footprint_concat(const void *state, int n_in, int n_out, const st_view *views, const bool *skip, st_footprint *fp)
{
    const st_concat_state *s = state;
    int n = 0;
    int64_t start = 0;
    (void)n_out;
    for (int k = 0; k < n_in; k++) {
        const st_view *in = &views[k];
        if (!in->storage) continue; /* omitted optional input */
        int64_t size = in->sizes[s->axis];
        if (!(skip && skip[k])) {
            st_view slot = views[n_in];
            st_view_slice(&slot, s->axis, start, 1, size);
            fp[n].operand = k;
            fp[n].write = false;
            st_view_extent(in, &fp[n].lo, &fp[n].hi);
            n++;
            fp[n].operand = n_in;
            fp[n].write = true;
            st_view_extent(&slot, &fp[n].lo, &fp[n].hi);
            n++;
        }
        start += size;
    }
    return n;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

#define VIEW_OP(name, min, rule, view) {name, "", min, 0, rule, view, NULL}
const st_op_def st_ops_shape[] = {
    {"Shape", "", 1, ST_OP_SHAPE_ONLY, st_infer_shape, NULL, NULL},
    {"Size", "", 1, ST_OP_SHAPE_ONLY, st_infer_size, NULL, NULL},
    VIEW_OP("Reshape", 1, st_infer_reshape, st_view_reshape_rule),
    VIEW_OP("Flatten", 1, st_infer_flatten, st_view_reshape_rule),
    VIEW_OP("Squeeze", 1, st_infer_squeeze, st_view_reshape_rule),
    VIEW_OP("Unsqueeze", 1, st_infer_unsqueeze, st_view_reshape_rule),
    VIEW_OP("Identity", 1, st_infer_identity, st_view_identity_rule),
    VIEW_OP("Transpose", 1, st_infer_transpose, st_view_transpose_rule),
    VIEW_OP("Slice", 1, st_infer_slice, st_view_slice_rule),
    VIEW_OP("Split", 2, st_infer_split, st_view_split_rule),
    {"Gather", "", 1, 0, st_infer_gather, st_view_gather_rule, NULL},
    {"Concat", "", 1, ST_OP_CONCAT, st_infer_concat, NULL, st_footprint_concat},
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
