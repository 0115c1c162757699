/*
 * reduce.c — shape rules of the reduce family: ReduceSum, ReduceMean,
 * ReduceMax, ReduceMin (also of bool from opset 20), ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare;
 * ArgMax and ArgMin; TopK; CumSum.
 * Kernels: backends/cpu/k_reduce.c.
 *
 * The reduced axes arrive as the `axes` attribute before opset 13
 * (ReduceSum) or 18 (the others), and as an optional constant input from
 * then on, together with noop_with_empty_axes.  No axes means every axis;
 * with noop_with_empty_axes it means none, and the kernel then reduces
 * each element on its own (ReduceSumSquare squares it, as ONNX's
 * reference does).
 */
#include <string.h>

#include "ops/ops.h"
#include "ops/reduce.h"

static const st_dtype NUMERIC[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_I16, ST_I32, ST_I64,
                                   ST_U8,  ST_U16, ST_U32,  ST_U64, 0};

typedef struct reduce_row {
    const char *name;
    st_reduce_kind kind;
    int axes_input_opset;       /* from this opset on, axes is an input */
} reduce_row;

static const reduce_row REDUCE[] = {
    {"ReduceSum", ST_R_SUM, 13},
    {"ReduceMean", ST_R_MEAN, 18},
    {"ReduceMax", ST_R_MAX, 18},
    {"ReduceMin", ST_R_MIN, 18},
    {"ReduceProd", ST_R_PROD, 18},
    {"ReduceL1", ST_R_L1, 18},
    {"ReduceL2", ST_R_L2, 18},
    {"ReduceLogSum", ST_R_LOG_SUM, 18},
    {"ReduceLogSumExp", ST_R_LOG_SUM_EXP, 18},
    {"ReduceSumSquare", ST_R_SUM_SQUARE, 18},
};

/* Output dims of a reduction over mask. */
static void reduced_shape(const st_tinfo *x, uint32_t mask, bool keepdims, st_tinfo *y)
{
    y->rank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!(mask >> d & 1)) y->dims[y->rank++] = x->dims[d];
        else if (keepdims) y->dims[y->rank++] = 1;
    }
}

static st_status infer_reduce(st_infer *c)
{
    const reduce_row *row = NULL;
    for (size_t i = 0; i < sizeof REDUCE / sizeof *REDUCE; i++)
        if (strcmp(REDUCE[i].name, c->node->op_type) == 0) row = &REDUCE[i];
    if (!row) return st_infer_error(c, ST_ERR_INTERNAL, "not a reduce op");
    if (c->n_in < 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "needs the data input");
    const st_tinfo *x = &c->in[0];
    /* opset 20 defines ReduceMax and ReduceMin of bool (any, all) */
    bool bool_ok = c->opset >= 20 && (row->kind == ST_R_MAX || row->kind == ST_R_MIN);
    if (!(bool_ok && x->dtype == ST_BOOL)) ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    int64_t axes[ST_MAX_RANK];
    int na = 0;
    bool have_axes = false, noop = false;
    if (c->opset >= row->axes_input_opset) {
        /* an exporter that kept the old attribute would otherwise get every
         * axis reduced */
        if (st_node_attr(c->node, "axes"))
            return st_infer_error(c, ST_ERR_MODEL, "has an axes attribute, which opset %d replaced with the axes input",
                                  row->axes_input_opset);
        noop = st_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
        if (c->n_in > 1 && c->in[1].present) {
            ST_TRY(st_infer_const_ints(c, 1, axes, ST_MAX_RANK, &na));
            have_axes = na > 0;
        }
    } else {
        if (c->n_in > 1) return st_infer_error(c, ST_ERR_MODEL, "takes axes as an attribute before opset %d", row->axes_input_opset);
        const int64_t *a = st_attr_ints(c->node, "axes", &na);
        if (na > ST_MAX_RANK) return st_infer_error(c, ST_ERR_MODEL, "axes has %d values", na);
        if (a) memcpy(axes, a, (size_t)na * sizeof *a);
        have_axes = a != NULL && na > 0;
    }
    st_reduce_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->kind = row->kind;
    s->keepdims = st_attr_int(c->node, "keepdims", 1) != 0;
    if (!have_axes) {
        s->mask = noop ? 0 : (uint32_t)((1u << x->rank) - 1);
    } else {
        for (int i = 0; i < na; i++) {
            int a;
            if (x->rank == 0) return st_infer_error(c, ST_ERR_SHAPE, "axes given for a scalar input");
            ST_TRY(st_infer_axis(c, axes[i], x->rank, &a));
            if (s->mask >> a & 1) return st_infer_error(c, ST_ERR_MODEL, "axis %d is listed twice in axes", a);
            s->mask |= 1u << a;
        }
    }
    c->out[0].dtype = x->dtype;
    reduced_shape(x, s->mask, s->keepdims, &c->out[0]);
    return ST_OK;
}

static st_status infer_argminmax(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    const st_tinfo *x = &c->in[0];
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    st_reduce_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->kind = strcmp(c->node->op_type, "ArgMax") == 0 ? ST_R_MAX : ST_R_MIN;
    s->keepdims = st_attr_int(c->node, "keepdims", 1) != 0;
    s->select_last = st_attr_int(c->node, "select_last_index", 0) != 0;
    if (x->rank == 0) return st_infer_error(c, ST_ERR_SHAPE, "input is a scalar; it needs an axis");
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), x->rank, &s->axis));
    if (x->dims[s->axis] == 0) return st_infer_error(c, ST_ERR_SHAPE, "axis %d is empty: no index to return", s->axis);
    s->mask = 1u << s->axis;
    c->out[0].dtype = ST_I64;
    reduced_shape(x, s->mask, s->keepdims, &c->out[0]);
    return ST_OK;
}

static st_status infer_topk(st_infer *c)
{
    if (c->n_in < 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "needs X");
    if (c->n_out != 2) return st_infer_error(c, ST_ERR_MODEL, "has %d outputs; it has Values and Indices", c->n_out);
    const st_tinfo *x = &c->in[0];
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    st_reduce_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    if (c->opset >= 10) {
        int64_t kv[1];
        int n;
        ST_TRY(st_infer_const_ints(c, 1, kv, 1, &n));
        if (n != 1) return st_infer_error(c, ST_ERR_SHAPE, "K must hold one value");
        s->k = kv[0];
    } else {
        if (!st_node_attr(c->node, "k")) return st_infer_error(c, ST_ERR_MODEL, "needs the k attribute before opset 10");
        s->k = st_attr_int(c->node, "k", 0);
    }
    s->largest = c->opset < 11 || st_attr_int(c->node, "largest", 1) != 0;
    if (x->rank == 0) return st_infer_error(c, ST_ERR_SHAPE, "X is a scalar");
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", -1), x->rank, &s->axis));
    if (s->k < 0 || s->k > x->dims[s->axis])
        return st_infer_error(c, ST_ERR_SHAPE, "K = %lld, but axis %d has %lld elements", (long long)s->k, s->axis,
                              (long long)x->dims[s->axis]);
    /* sorted=0 leaves the order to the implementation: sorted output is one */
    for (int i = 0; i < 2; i++) {
        c->out[i].rank = x->rank;
        memcpy(c->out[i].dims, x->dims, sizeof x->dims);
        c->out[i].dims[s->axis] = s->k;
    }
    c->out[0].dtype = x->dtype;
    c->out[1].dtype = ST_I64;
    return ST_OK;
}

static st_status infer_cumsum(st_infer *c)
{
    if (c->n_in != 2 || !c->in[0].present || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "expects x and axis");
    const st_tinfo *x = &c->in[0];
    static const st_dtype AXIS_TYPES[] = {ST_I32, ST_I64, 0};
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    ST_TRY(st_infer_dtype(c, 1, AXIS_TYPES));
    if (st_numel(c->in[1].rank, c->in[1].dims) != 1) return st_infer_error(c, ST_ERR_SHAPE, "axis must be a scalar");
    if (x->rank == 0) return st_infer_error(c, ST_ERR_SHAPE, "x is a scalar");
    st_reduce_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->exclusive = st_attr_int(c->node, "exclusive", 0) != 0;
    s->reverse = st_attr_int(c->node, "reverse", 0) != 0;
    /* the axis does not shape the output, so the kernel reads it at run
     * time; a constant one is checked here already */
    s->axis = -1;
    if (c->in[1].data) {
        int64_t a[1];
        int n;
        ST_TRY(st_infer_const_ints(c, 1, a, 1, &n));
        ST_TRY(st_infer_axis(c, a[0], x->rank, &s->axis));
    }
    c->out[0] = *x;
    c->out[0].data = NULL;
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

/* designated: rows stay valid as backends add kernel slots (NULL: none) */
#define REDUCE_OP(op_name, rule) {.name = op_name, .domain = "", .min_opset = 1, .infer = rule, .types = ST_DT_NUMERIC}
const st_op_def st_ops_reduce[] = {
    REDUCE_OP("ReduceSum", infer_reduce),
    REDUCE_OP("ReduceMean", infer_reduce),
    {.name = "ReduceMax", .domain = "", .min_opset = 1, .infer = infer_reduce, .types = ST_DT_NUMERIC | ST_DT(ST_BOOL)},
    {.name = "ReduceMin", .domain = "", .min_opset = 1, .infer = infer_reduce, .types = ST_DT_NUMERIC | ST_DT(ST_BOOL)},
    REDUCE_OP("ReduceProd", infer_reduce),
    REDUCE_OP("ReduceL1", infer_reduce),
    REDUCE_OP("ReduceL2", infer_reduce),
    REDUCE_OP("ReduceLogSum", infer_reduce),
    REDUCE_OP("ReduceLogSumExp", infer_reduce),
    REDUCE_OP("ReduceSumSquare", infer_reduce),
    REDUCE_OP("ArgMax", infer_argminmax),
    REDUCE_OP("ArgMin", infer_argminmax),
    REDUCE_OP("TopK", infer_topk),
    REDUCE_OP("CumSum", infer_cumsum),
    {.name = NULL}
};
