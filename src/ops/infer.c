/* infer.c — helpers shared by the shape rules (see op.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

st_status st_infer_error(const st_infer *c, st_status code, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_error(code, "node '%s' (%s): %s", c->node->name, c->node->op_type, msg);
}

st_status st_infer_axis(const st_infer *c, int64_t axis, int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank > 0 ? rank : 1))
        return st_infer_error(c, ST_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis, rank);
    *out = (int)a;
    return ST_OK;
}

st_status st_infer_broadcast(const st_infer *c, int n, const st_tinfo *const *ins, st_tinfo *out)
{
    int rank = 0;
    for (int i = 0; i < n; i++)
        if (ins[i]->rank > rank) rank = ins[i]->rank;
    out->rank = rank;
    for (int d = 0; d < rank; d++) {
        int64_t dim = 1;
        for (int i = 0; i < n; i++) {
            int k = d - (rank - ins[i]->rank);
            if (k < 0) continue;
            int64_t x = ins[i]->dims[k];
            if (x == dim || x == 1) continue;
            if (dim != 1)
                return st_infer_error(c, ST_ERR_SHAPE, "input shapes do not broadcast: dim %d is %lld in one input and %lld in another",
                                      d, (long long)dim, (long long)x);
            dim = x;
        }
        out->dims[d] = dim;
    }
    return ST_OK;
}

st_status st_infer_need_const(const st_infer *c, int input)
{
    if (input >= c->n_in || !c->in[input].present)
        return st_infer_error(c, ST_ERR_MODEL, "input %d is required", input);
    if (!c->in[input].data) {
        if (c->missing_const) *c->missing_const = input;
        return st_infer_error(c, ST_ERR_UNSUPPORTED,
                              "input %d must be a constant (or computable from input shapes) for strata to plan this node",
                              input);
    }
    return ST_OK;
}

st_status st_infer_const_ints(const st_infer *c, int input, int64_t *vals, int max, int *count)
{
    ST_TRY(st_infer_need_const(c, input));
    const st_tinfo *t = &c->in[input];
    if (t->dtype != ST_I64 && t->dtype != ST_I32)
        return st_infer_error(c, ST_ERR_DTYPE, "input %d must be int64 or int32, not %s", input, st_dtype_name(t->dtype));
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->dims[d];
    if (n > max) return st_infer_error(c, ST_ERR_SHAPE, "input %d has %lld values, at most %d allowed", input, (long long)n, max);
    for (int64_t i = 0; i < n; i++)
        vals[i] = t->dtype == ST_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
    *count = (int)n;
    return ST_OK;
}

st_status st_infer_dtype(const st_infer *c, int input, const st_dtype *allowed)
{
    st_dtype t = c->in[input].dtype;
    for (const st_dtype *a = allowed; *a; a++)
        if (*a == t) return ST_OK;
    return st_infer_error(c, ST_ERR_DTYPE, "input %d has dtype %s, which this op does not take", input, st_dtype_name(t));
}

st_status st_infer_dtype_mask(const st_infer *c, int input, uint32_t allowed)
{
    st_dtype t = c->in[input].dtype;
    if ((unsigned)t < 32 && (allowed >> t & 1)) return ST_OK;
    return st_infer_error(c, ST_ERR_DTYPE, "input %d has dtype %s, which this op does not take", input, st_dtype_name(t));
}

void *st_infer_state(st_infer *c, size_t size)
{
    free(c->state);
    c->state = calloc(1, size ? size : 1);
    return c->state;
}

st_status st_infer_window_attrs(const st_infer *c, int n, int64_t *s, int64_t *d, int64_t *pb, int64_t *pe)
{
    static const char *const names[2] = {"strides", "dilations"};
    int64_t *dst[2] = {s, d};
    int cnt;
    const int64_t *a;
    for (int k = 0; k < 2; k++) {
        if (!(a = st_attr_ints(c->node, names[k], &cnt))) continue;
        if (cnt != n) return st_infer_error(c, ST_ERR_MODEL, "%s has %d values for %d spatial dims", names[k], cnt, n);
        memcpy(dst[k], a, (size_t)n * sizeof *a);
    }
    if ((a = st_attr_ints(c->node, "pads", &cnt))) {
        if (cnt != 2 * n) return st_infer_error(c, ST_ERR_MODEL, "pads has %d values for %d spatial dims", cnt, n);
        memcpy(pb, a, (size_t)n * sizeof *a);
        memcpy(pe, a + n, (size_t)n * sizeof *a);
    }
    return ST_OK;
}
