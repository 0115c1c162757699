/*
 * norm.c — shape rules of the norm family: Softmax, LogSoftmax, Hardmax,
 * LayerNormalization, BatchNormalization (inference), InstanceNormalization,
 * LpNormalization, MeanVarianceNormalization, LRN and GroupNormalization
 * (opsets 18 and 21).  Each is an
 * operation on rows (see backends/common/rows.h): the rule sets which axes
 * one row spans and checks the parameters.  Kernel: backends/cpu/k_norm.c.
 *
 * Softmax, LogSoftmax and Hardmax changed at opset 13: before, the input
 * is coerced to 2-D at `axis` (default 1), so a row spans every axis from
 * `axis` on; from 13 a row is the single axis `axis` (default -1).
 */
#include <string.h>

#include "ops/norm.h"
#include "ops/ops.h"

static const st_dtype FLOATS[] = {ST_F32, ST_F16, ST_BF16, ST_F64, 0};

/* Bits [from, rank). */
static uint32_t axes_from(int from, int rank)
{
    uint32_t m = 0;
    for (int d = from; d < rank; d++) m |= 1u << d;
    return m;
}

static st_norm_state *new_state(st_infer *c, int kind)
{
    st_norm_state *s = st_infer_state(c, sizeof *s);
    if (s) s->kind = kind;
    return s;
}

/* The output is the input's shape and dtype. */
static void same_as_input(st_infer *c)
{
    c->out[0] = c->in[0];
    c->out[0].data = NULL;
}

static st_status need_x(st_infer *c, int min_rank)
{
    if (c->n_in < 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "needs an input");
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    if (c->in[0].rank < min_rank) return st_infer_error(c, ST_ERR_SHAPE, "input has rank %d, at least %d needed", c->in[0].rank, min_rank);
    return ST_OK;
}

static st_status infer_softmax(st_infer *c)
{
    const char *op = c->node->op_type;
    int kind = strcmp(op, "Softmax") == 0 ? ST_N_SOFTMAX : strcmp(op, "LogSoftmax") == 0 ? ST_N_LOG_SOFTMAX : ST_N_HARDMAX;
    ST_TRY(need_x(c, 0));
    const st_tinfo *x = &c->in[0];
    st_norm_state *s = new_state(c, kind);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    bool coerce_2d = c->opset < 13;
    int a;
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", coerce_2d ? 1 : -1), x->rank, &a));
    s->mask = coerce_2d ? axes_from(a, x->rank) : (uint32_t)1 << a;
    s->mask &= axes_from(0, x->rank);
    same_as_input(c);
    return ST_OK;
}

/* Parameter `input` must broadcast to x's dims [from, rank). */
static st_status check_trailing(st_infer *c, int input, int from)
{
    const st_tinfo *x = &c->in[0], *p = &c->in[input];
    int rr = x->rank - from;
    if (p->rank > rr) return st_infer_error(c, ST_ERR_SHAPE, "input %d has rank %d; the normalised shape has rank %d", input, p->rank, rr);
    for (int i = 0; i < p->rank; i++) {
        int64_t want = x->dims[from + rr - p->rank + i];
        if (p->dims[i] != want && p->dims[i] != 1)
            return st_infer_error(c, ST_ERR_SHAPE, "input %d dim %d is %lld, the normalised shape has %lld", input, i,
                                  (long long)p->dims[i], (long long)want);
    }
    ST_TRY(st_infer_dtype(c, input, FLOATS));
    return ST_OK;
}

static st_status infer_layer_norm(st_infer *c)
{
    ST_TRY(need_x(c, 1));
    const st_tinfo *x = &c->in[0];
    if (c->n_in < 2 || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "needs Scale");
    st_norm_state *s = new_state(c, ST_N_LAYER_NORM);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", -1), x->rank, &s->axis));
    s->epsilon = st_attr_float(c->node, "epsilon", 1e-5f);
    s->mask = axes_from(s->axis, x->rank);
    ST_TRY(check_trailing(c, 1, s->axis));
    if (c->n_in > 2 && c->in[2].present) ST_TRY(check_trailing(c, 2, s->axis));
    /* Mean and InvStdDev are stored in stash_type; the math runs in f32
     * (f64 for an f64 input) whatever it says */
    int64_t stash = st_attr_int(c->node, "stash_type", 1);
    if (stash != ST_F32 && stash != ST_F64 && stash != ST_F16 && stash != ST_BF16)
        return st_infer_error(c, ST_ERR_MODEL, "stash_type %lld is not a float type", (long long)stash);
    same_as_input(c);
    for (int i = 1; i < c->n_out && i < 3; i++) {
        if (!c->out[i].present) continue;
        c->out[i].dtype = (st_dtype)stash;
        c->out[i].rank = x->rank;
        for (int d = 0; d < x->rank; d++) c->out[i].dims[d] = d < s->axis ? x->dims[d] : 1;
    }
    return ST_OK;
}

/* strata's AddLayerNormalization (ai.strata): LayerNormalization of
 * X + R over axes [axis, rank), inputs X, R (the same shape, f32), Scale
 * and an optional B; outputs Y and, optionally, the sum S.  The sum is
 * rounded to f32 before the normalisation, as Add then LayerNormalization
 * round it (passes/fuse_add_norm.c makes it of those two). */
static st_status infer_add_layer_norm(st_infer *c)
{
    if (c->n_in < 3 || !c->in[0].present || !c->in[1].present || !c->in[2].present)
        return st_infer_error(c, ST_ERR_MODEL, "expects X, R, Scale and an optional B");
    const st_tinfo *x = &c->in[0], *r = &c->in[1];
    for (int i = 0; i < 2; i++)
        if (c->in[i].dtype != ST_F32)
            return st_infer_error(c, ST_ERR_DTYPE, "input %d is %s; the kernel takes float32", i, st_dtype_name(c->in[i].dtype));
    if (x->rank < 1 || x->rank != r->rank) return st_infer_error(c, ST_ERR_SHAPE, "X and R must have one rank >= 1");
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != r->dims[d])
            return st_infer_error(c, ST_ERR_SHAPE, "X and R differ in dim %d (%lld and %lld)", d, (long long)x->dims[d],
                                  (long long)r->dims[d]);
    st_norm_state *s = new_state(c, ST_N_LAYER_NORM);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->residual = true;
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", -1), x->rank, &s->axis));
    s->epsilon = st_attr_float(c->node, "epsilon", 1e-5f);
    s->mask = axes_from(s->axis, x->rank);
    ST_TRY(check_trailing(c, 2, s->axis));
    if (c->n_in > 3 && c->in[3].present) ST_TRY(check_trailing(c, 3, s->axis));
    same_as_input(c);
    if (c->n_out > 1 && c->out[1].present) {
        c->out[1] = c->in[0];
        c->out[1].data = NULL;
    }
    return ST_OK;
}

/* A per-channel (or per-element of dims[1:]) parameter of count elements. */
static st_status check_param(st_infer *c, int input, int64_t count, const char *what)
{
    if (input >= c->n_in || !c->in[input].present) return st_infer_error(c, ST_ERR_MODEL, "needs %s (input %d)", what, input);
    ST_TRY(st_infer_dtype(c, input, FLOATS));
    if (st_numel(c->in[input].rank, c->in[input].dims) != count)
        return st_infer_error(c, ST_ERR_SHAPE, "%s has %lld elements, expected %lld", what,
                              (long long)st_numel(c->in[input].rank, c->in[input].dims), (long long)count);
    return ST_OK;
}

static st_status infer_batch_norm(st_infer *c)
{
    ST_TRY(need_x(c, 2));
    const st_tinfo *x = &c->in[0];
    if (c->opset >= 14 && st_attr_int(c->node, "training_mode", 0) != 0)
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
    /* before opset 7, is_test=0 normalises by the batch's statistics; an
     * absent is_test is read as inference, as ONNX's 6 -> 7 converter does */
    if (c->opset < 7 && st_node_attr(c->node, "is_test") && st_attr_int(c->node, "is_test", 0) == 0)
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "is_test=0 (training: batch statistics) is not supported (inference only)");
    for (int i = 1; i < c->n_out; i++)
        if (c->out[i].present)
            return st_infer_error(c, ST_ERR_UNSUPPORTED, "output %d (running or saved statistics) exists only in training, which is not supported", i);
    st_norm_state *s = new_state(c, ST_N_BATCH_NORM);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->epsilon = st_attr_float(c->node, "epsilon", 1e-5f);
    s->spatial = c->opset >= 9 || st_attr_int(c->node, "spatial", 1) != 0;
    int64_t count = s->spatial ? x->dims[1] : st_numel(x->rank - 1, x->dims + 1);
    static const char *const NAMES[] = {"scale", "B", "mean", "var"};
    for (int i = 1; i <= 4; i++) ST_TRY(check_param(c, i, count, NAMES[i - 1]));
    s->mask = s->spatial ? axes_from(2, x->rank) : 0;
    same_as_input(c);
    return ST_OK;
}

static st_status infer_instance_norm(st_infer *c)
{
    ST_TRY(need_x(c, 2));
    const st_tinfo *x = &c->in[0];
    st_norm_state *s = new_state(c, ST_N_INSTANCE_NORM);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->epsilon = st_attr_float(c->node, "epsilon", 1e-5f);
    ST_TRY(check_param(c, 1, x->dims[1], "scale"));
    ST_TRY(check_param(c, 2, x->dims[1], "B"));
    s->mask = axes_from(2, x->rank);
    same_as_input(c);
    return ST_OK;
}

static st_status infer_lp_norm(st_infer *c)
{
    ST_TRY(need_x(c, 1));
    st_norm_state *s = new_state(c, ST_N_LP_NORM);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    int a;
    ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", -1), c->in[0].rank, &a));
    int64_t p = st_attr_int(c->node, "p", 2);
    if (p != 1 && p != 2) return st_infer_error(c, ST_ERR_MODEL, "p is %lld; ONNX allows 1 or 2", (long long)p);
    s->p = (int)p;
    s->mask = 1u << a;
    same_as_input(c);
    return ST_OK;
}

static st_status infer_mvn(st_infer *c)
{
    ST_TRY(need_x(c, 0));
    const st_tinfo *x = &c->in[0];
    st_norm_state *s = new_state(c, ST_N_MVN);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    int n;
    const int64_t *axes = st_attr_ints(c->node, "axes", &n);
    static const int64_t DEFAULT_AXES[] = {0, 2, 3};
    if (!axes) {
        axes = DEFAULT_AXES;
        n = 3;
    }
    for (int i = 0; i < n; i++) {
        int a;
        ST_TRY(st_infer_axis(c, axes[i], x->rank, &a));
        if (s->mask >> a & 1) return st_infer_error(c, ST_ERR_MODEL, "axis %d is listed twice in axes", a);
        s->mask |= 1u << a;
    }
    s->epsilon = 1e-9f; /* the constant of the ONNX function body: (X - mean) / (std + 1e-9) */
    same_as_input(c);
    return ST_OK;
}

static st_status infer_lrn(st_infer *c)
{
    ST_TRY(need_x(c, 2));
    st_norm_state *s = new_state(c, ST_N_LRN);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    if (!st_node_attr(c->node, "size")) return st_infer_error(c, ST_ERR_MODEL, "needs the size attribute");
    s->size = st_attr_int(c->node, "size", 1);
    if (s->size < 1) return st_infer_error(c, ST_ERR_MODEL, "size is %lld; it must be at least 1", (long long)s->size);
    s->alpha = st_attr_float(c->node, "alpha", 1e-4f);
    s->beta = st_attr_float(c->node, "beta", 0.75f);
    s->bias = st_attr_float(c->node, "bias", 1.0f);
    s->mask = 1u << 1;
    same_as_input(c);
    return ST_OK;
}

/* GroupNormalization: the mean and variance of each group of C / G
 * channels (over them and every spatial dim), then a scale and bias per
 * group (opset 18) or per channel (opset 21, which deprecated 18's).  A
 * row is a group; the kernel sees x as [N, G, C / G, spatial...].  The
 * first stage runs in f32 (f64 for f64 data) whatever stash_type says:
 * that changes rounding, not what is computed. */
static st_status infer_group_norm(st_infer *c)
{
    ST_TRY(need_x(c, 2));
    const st_tinfo *x = &c->in[0];
    st_norm_state *s = new_state(c, ST_N_GROUP_NORM);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    if (!st_node_attr(c->node, "num_groups")) return st_infer_error(c, ST_ERR_MODEL, "needs the num_groups attribute");
    s->size = st_attr_int(c->node, "num_groups", 0);
    if (s->size < 1 || x->dims[1] % s->size)
        return st_infer_error(c, ST_ERR_SHAPE, "num_groups %lld does not divide the %lld channels", (long long)s->size,
                              (long long)x->dims[1]);
    if (x->rank >= ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; at most %d is supported", x->rank, ST_MAX_RANK - 1);
    s->epsilon = st_attr_float(c->node, "epsilon", 1e-5f);
    s->per_group = c->opset < 21;
    int64_t count = s->per_group ? s->size : x->dims[1];
    ST_TRY(check_param(c, 1, count, s->per_group ? "scale (one per group before opset 21)" : "scale (one per channel)"));
    ST_TRY(check_param(c, 2, count, s->per_group ? "bias (one per group before opset 21)" : "bias (one per channel)"));
    int64_t stash = st_attr_int(c->node, "stash_type", 1);
    if (stash != ST_F32 && stash != ST_F64 && stash != ST_F16 && stash != ST_BF16)
        return st_infer_error(c, ST_ERR_MODEL, "stash_type %lld is not a float type", (long long)stash);
    s->mask = axes_from(2, x->rank + 1);   /* of the [N, G, C / G, ...] view */
    same_as_input(c);
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

/* designated: rows stay valid as backends add kernel slots (NULL: none) */
#define NORM_OP(op_name, rule) {.name = op_name, .domain = "", .min_opset = 1, .infer = rule, .types = ST_DT_ALL_FLOATS}
const st_op_def st_ops_norm[] = {
    NORM_OP("Softmax", infer_softmax),
    NORM_OP("LogSoftmax", infer_softmax),
    NORM_OP("Hardmax", infer_softmax),
    NORM_OP("LayerNormalization", infer_layer_norm),
    NORM_OP("BatchNormalization", infer_batch_norm),
    NORM_OP("InstanceNormalization", infer_instance_norm),
    NORM_OP("LpNormalization", infer_lp_norm),
    NORM_OP("MeanVarianceNormalization", infer_mvn),
    NORM_OP("LRN", infer_lrn),
    {.name = "GroupNormalization", .domain = "", .min_opset = 18, .infer = infer_group_norm, .types = ST_DT_ALL_FLOATS},
    {.name = "AddLayerNormalization", .domain = "ai.strata", .min_opset = 1, .infer = infer_add_layer_norm, .types = ST_DT(ST_F32)},
    {.name = NULL}
};
