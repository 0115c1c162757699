/*
 * qlinear.c — shape rules and rows of the quantized elementwise ops that
 * exported int8 models use (ONNX Runtime's com.microsoft domain):
 *   QLinearAdd, QLinearMul         A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp
 *   QLinearSigmoid                 X, X_scale, X_zp, Y_scale, Y_zp
 *   QLinearLeakyRelu               the same, attribute alpha
 *   QLinearGlobalAveragePool       the same, attribute channels_last
 *   QLinearConcat                  Y_scale, Y_zp, then (X, X_scale, X_zp) per input
 * and strata's QLinearLookup (domain "ai.strata"): Y[i] = table[X[i]], the
 * table 256 bytes indexed by X's stored byte.  Every scale and zero point
 * is one value (per tensor), as ONNX Runtime defines these ops; a zero
 * point may be omitted (0, and then the tensor is u8).
 */
#include <string.h>

#include "graph/graph.h"
#include "ops/ops.h"
#include "ops/qlinear.h"

static const st_dtype Q_TYPES[] = {ST_U8, ST_I8, 0};
static const st_dtype F_TYPES[] = {ST_F32, 0};

static bool has_in(const st_infer *c, int i) { return i < c->n_in && c->in[i].present; }

static st_status need_in(const st_infer *c, int i, const char *what)
{
    if (!has_in(c, i)) return st_infer_error(c, ST_ERR_MODEL, "needs input %d (%s)", i, what);
    return ST_OK;
}

/* Input s is a one-value f32 scale; input z (may be absent) a one-value
 * zero point of the type of input x. */
static st_status qparams(const st_infer *c, int x, int s, int z, const char *what)
{
    ST_TRY(need_in(c, s, what));
    ST_TRY(st_infer_dtype(c, s, F_TYPES));
    if (st_numel(c->in[s].rank, c->in[s].dims) != 1)
        return st_infer_error(c, ST_ERR_SHAPE, "input %d (%s) must hold one value: these ops are per tensor", s, what);
    if (!has_in(c, z)) return ST_OK;
    if (st_numel(c->in[z].rank, c->in[z].dims) != 1)
        return st_infer_error(c, ST_ERR_SHAPE, "input %d (a zero point) must hold one value: these ops are per tensor", z);
    if (x >= 0 && c->in[z].dtype != c->in[x].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "input %d (a zero point) is %s, its tensor is %s", z, st_dtype_name(c->in[z].dtype),
                              st_dtype_name(c->in[x].dtype));
    return ST_OK;
}

static void copy_shape(st_tinfo *o, st_dtype t, const st_tinfo *x)
{
    o->dtype = t;
    o->rank = x->rank;
    memcpy(o->dims, x->dims, sizeof o->dims);
}

/* The output type: the output zero point's, else the input's. */
static st_dtype out_type(const st_infer *c, int x, int z) { return has_in(c, z) ? c->in[z].dtype : c->in[x].dtype; }

static st_status infer_qbinary(st_infer *c)
{
    ST_TRY(need_in(c, 0, "A"));
    ST_TRY(need_in(c, 3, "B"));
    ST_TRY(st_infer_dtype(c, 0, Q_TYPES));
    ST_TRY(st_infer_dtype(c, 3, Q_TYPES));
    if (c->in[0].dtype != c->in[3].dtype) return st_infer_error(c, ST_ERR_DTYPE, "A and B have different types");
    ST_TRY(qparams(c, 0, 1, 2, "A_scale"));
    ST_TRY(qparams(c, 3, 4, 5, "B_scale"));
    ST_TRY(qparams(c, 0, 6, 7, "C_scale"));
    st_qbinary_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->op = strcmp(c->node->op_type, "QLinearMul") == 0 ? ST_QL_MUL : ST_QL_ADD;
    const st_tinfo *ins[2] = {&c->in[0], &c->in[3]};
    ST_TRY(st_infer_broadcast(c, 2, ins, &c->out[0]));
    c->out[0].dtype = out_type(c, 0, 7);
    return ST_OK;
}

static st_status infer_qunary(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(st_infer_dtype(c, 0, Q_TYPES));
    ST_TRY(qparams(c, 0, 1, 2, "X_scale"));
    ST_TRY(qparams(c, 0, 3, 4, "Y_scale"));
    st_qlut_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->kind = strcmp(c->node->op_type, "QLinearLeakyRelu") == 0 ? 1 : 0;
    s->alpha = st_attr_float(c->node, "alpha", 0.01f);
    copy_shape(&c->out[0], out_type(c, 0, 4), &c->in[0]);
    return ST_OK;
}

static st_status infer_qlookup(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(need_in(c, 1, "table"));
    ST_TRY(st_infer_dtype(c, 0, Q_TYPES));
    ST_TRY(st_infer_dtype(c, 1, Q_TYPES));
    if (c->in[1].rank != 1 || c->in[1].dims[0] != 256) return st_infer_error(c, ST_ERR_SHAPE, "the table must be 1-D with 256 entries");
    st_qlut_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->kind = 2;
    copy_shape(&c->out[0], c->in[1].dtype, &c->in[0]);
    return ST_OK;
}

static st_status infer_qgap(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(st_infer_dtype(c, 0, Q_TYPES));
    ST_TRY(qparams(c, 0, 1, 2, "x_scale"));
    ST_TRY(qparams(c, 0, 3, 4, "y_scale"));
    const st_tinfo *x = &c->in[0];
    if (x->rank < 3) return st_infer_error(c, ST_ERR_SHAPE, "X has rank %d, needs at least 3", x->rank);
    st_qgap_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->channels_last = st_attr_int(c->node, "channels_last", 0) != 0;
    copy_shape(&c->out[0], out_type(c, 0, 4), x);
    for (int d = 1; d < x->rank; d++)
        if (d != (s->channels_last ? x->rank - 1 : 1)) c->out[0].dims[d] = 1;
    return ST_OK;
}

static st_status infer_qconcat(st_infer *c)
{
    ST_TRY(qparams(c, -1, 0, 1, "Y_scale"));
    if (c->n_in < 5 || (c->n_in - 2) % 3 != 0)
        return st_infer_error(c, ST_ERR_MODEL, "has %d inputs; it takes Y_scale, Y_zero_point and triples (X, X_scale, X_zero_point)", c->n_in);
    ST_TRY(need_in(c, 2, "X"));
    ST_TRY(st_infer_dtype(c, 2, Q_TYPES));
    const st_tinfo *x0 = &c->in[2];
    st_qconcat_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 0), x0->rank, &s->axis));
    copy_shape(&c->out[0], out_type(c, 2, 1), x0);
    c->out[0].dims[s->axis] = 0;
    for (int i = 2; i < c->n_in; i += 3) {
        ST_TRY(need_in(c, i, "X"));
        const st_tinfo *x = &c->in[i];
        if (x->dtype != x0->dtype) return st_infer_error(c, ST_ERR_DTYPE, "input %d is %s, input 2 is %s", i, st_dtype_name(x->dtype), st_dtype_name(x0->dtype));
        if (x->rank != x0->rank) return st_infer_error(c, ST_ERR_SHAPE, "input %d has rank %d, input 2 has %d", i, x->rank, x0->rank);
        for (int d = 0; d < x->rank; d++)
            if (d != s->axis && x->dims[d] != x0->dims[d])
                return st_infer_error(c, ST_ERR_SHAPE, "input %d differs from input 2 in dim %d (%lld and %lld)", i, d, (long long)x->dims[d],
                                      (long long)x0->dims[d]);
        ST_TRY(qparams(c, i, i + 1, i + 2, "X_scale"));
        c->out[0].dims[s->axis] += x->dims[s->axis];
    }
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

#define Q_TYPES_MASK (ST_DT(ST_U8) | ST_DT(ST_I8))
#define MS_OP(op_name, rule) {.name = op_name, .domain = "com.microsoft", .min_opset = 1, .infer = rule, .types = Q_TYPES_MASK}
const st_op_def st_ops_qlinear[] = {
    MS_OP("QLinearAdd", infer_qbinary),
    MS_OP("QLinearMul", infer_qbinary),
    MS_OP("QLinearSigmoid", infer_qunary),
    MS_OP("QLinearLeakyRelu", infer_qunary),
    MS_OP("QLinearGlobalAveragePool", infer_qgap),
    {.name = "QLinearConcat", .domain = "com.microsoft", .min_opset = 1, .infer = infer_qconcat, .types = Q_TYPES_MASK, .t_operand = 2},
    {.name = "QLinearLookup", .domain = "ai.strata", .min_opset = 1, .infer = infer_qlookup, .types = Q_TYPES_MASK},
    {.name = NULL}
};
