/*
 * elementwise.c — shape rules of the elementwise ops: unary maps, binary
 * ops with numpy broadcasting, variadic Sum/Max/Min/Mean, Where, Clip and
 * Cast.  Kernels: backends/cpu/k_elementwise.c (casts to and from strings:
 * k_string.c).
 */
#include <string.h>

#include "ops/elementwise.h"
#include "ops/op.h"
#include "ops/ops.h"

static const st_dtype BOOLS[] = {ST_BOOL, 0};

typedef struct unary_row {
    const char *name;
    st_unary code;
    uint32_t types;
    float alpha, beta, gamma;   /* attribute defaults */
} unary_row;

#define UNARY_ROW(name, code, types, a, b, g) {#name, ST_U_##code, types, a, b, g},
static const unary_row UNARY[] = {ST_UNARY_OPS(UNARY_ROW)};

st_status st_infer_unary(st_infer *c)
{
    const unary_row *row = NULL;
    for (size_t i = 0; i < sizeof UNARY / sizeof *UNARY; i++)
        if (strcmp(UNARY[i].name, c->node->op_type) == 0) row = &UNARY[i];
    if (!row) return st_infer_error(c, ST_ERR_INTERNAL, "not a unary op");
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input, has %d", c->n_in);
    ST_TRY(st_infer_dtype_mask(c, 0, row->types));
    st_ew_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->code = row->code;
    s->alpha = st_attr_float(c->node, "alpha", row->alpha);
    s->beta = st_attr_float(c->node, "beta", row->beta);
    s->gamma = st_attr_float(c->node, "gamma", row->gamma);
    if (row->code == ST_U_GELU && strcmp(st_attr_string(c->node, "approximate", "none"), "tanh") == 0)
        s->code = ST_U_GELU_TANH;
    if (row->code == ST_U_ISINF) {
        s->detect_pos = (int)st_attr_int(c->node, "detect_positive", 1);
        s->detect_neg = (int)st_attr_int(c->node, "detect_negative", 1);
    }
    c->out[0] = c->in[0];
    c->out[0].data = NULL;
    if (row->code == ST_U_ISNAN || row->code == ST_U_ISINF) c->out[0].dtype = ST_BOOL;
    return ST_OK;
}

typedef struct binary_row {
    const char *name;
    st_binary code;
    uint32_t types;
    bool to_bool;
} binary_row;

#define BINARY_ROW(name, code, types, to_bool) {#name, ST_B_##code, types, to_bool},
static const binary_row BINARY[] = {ST_BINARY_OPS(BINARY_ROW)};

/* Before opset 7 (ONNX's changelog: Add-7 "now supports multidirectional
 * broadcasting"), binary ops broadcast B to A's shape only:
 *   - without broadcast=1, A and B have one shape;
 *   - with it, B is a scalar, or its dims line up with A's from dim `axis`
 *     (by default the trailing ones), each equal or 1 (PyTorch exported
 *     1-dim expansion, test_operator_add_size1_broadcast);
 *   - PRelu (1 and 6) takes a slope of one element, X's shape, or one
 *     value per channel (dim 1; PyTorch's PReLU(num_parameters=C)).
 * The output has A's shape; B's alignment goes to the kernels as
 * trailing unit dims (st_ew_state.b_units). */
static st_status legacy_broadcast(st_infer *c, st_ew_state *s, bool to_bool)
{
    const st_tinfo *a = &c->in[0], *b = &c->in[1];
    bool prelu = s->code == ST_B_PRELU, same = a->rank == b->rank;
    for (int d = 0; same && d < a->rank; d++) same = a->dims[d] == b->dims[d];
    int64_t nb = st_numel(b->rank, b->dims);
    if (same || (nb == 1 && b->rank <= a->rank && (prelu || st_attr_int(c->node, "broadcast", 0)))) {
        s->b_units = 0;
    } else if (prelu) {
        if (b->rank != 1 || a->rank < 2 || b->dims[0] != a->dims[1])
            return st_infer_error(c, ST_ERR_SHAPE, "before opset 7 the slope has 1 element, X's shape, or one per channel "
                                  "(%lld), not %lld", (long long)(a->rank >= 2 ? a->dims[1] : 1), (long long)nb);
        s->b_units = a->rank - 2;
    } else if (!st_attr_int(c->node, "broadcast", 0)) {
        return st_infer_error(c, ST_ERR_SHAPE, "before opset 7 A and B must have one shape unless broadcast=1 "
                              "(ranks %d and %d)", a->rank, b->rank);
    } else {
        if (b->rank > a->rank)
            return st_infer_error(c, ST_ERR_SHAPE, "B has rank %d, more than A's %d (before opset 7 B broadcasts to A)",
                                  b->rank, a->rank);
        int64_t axis = st_attr_int(c->node, "axis", a->rank - b->rank);
        if (axis < 0 || axis > a->rank - b->rank)
            return st_infer_error(c, ST_ERR_MODEL, "axis %lld leaves B's %d dims outside A's %d", (long long)axis, b->rank,
                                  a->rank);
        for (int d = 0; d < b->rank; d++)
            if (b->dims[d] != 1 && b->dims[d] != a->dims[axis + d])
                return st_infer_error(c, ST_ERR_SHAPE, "B's dim %d is %lld, A's dim %lld is %lld", d, (long long)b->dims[d],
                                      (long long)(axis + d), (long long)a->dims[axis + d]);
        s->b_units = a->rank - (int)axis - b->rank;
    }
    c->out[0] = *a;
    c->out[0].data = NULL;
    if (to_bool) c->out[0].dtype = ST_BOOL;
    return ST_OK;
}

st_status st_infer_binary(st_infer *c)
{
    const binary_row *row = NULL;
    for (size_t i = 0; i < sizeof BINARY / sizeof *BINARY; i++)
        if (strcmp(BINARY[i].name, c->node->op_type) == 0) row = &BINARY[i];
    if (!row) return st_infer_error(c, ST_ERR_INTERNAL, "not a binary op");
    if (c->n_in != 2 || !c->in[0].present || !c->in[1].present)
        return st_infer_error(c, ST_ERR_MODEL, "expects 2 inputs, has %d", c->n_in);
    if (row->types) ST_TRY(st_infer_dtype_mask(c, 0, row->types));
    /* Pow may raise to an exponent of another type; every other op needs equal types */
    if (row->code != ST_B_POW && c->in[0].dtype != c->in[1].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "inputs have different dtypes (%s and %s)", st_dtype_name(c->in[0].dtype),
                              st_dtype_name(c->in[1].dtype));
    st_ew_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->code = row->code;
    s->fmod = (int)st_attr_int(c->node, "fmod", 0);
    if (row->code == ST_B_MOD && !s->fmod && st_dtype_is_float(c->in[0].dtype))
        return st_infer_error(c, ST_ERR_MODEL, "Mod of floats needs fmod=1");
    if (row->code == ST_B_SHIFT_LEFT) {
        const char *dir = st_attr_string(c->node, "direction", "");
        if (strcmp(dir, "RIGHT") == 0) s->code = ST_B_SHIFT_RIGHT;
        else if (strcmp(dir, "LEFT") != 0) return st_infer_error(c, ST_ERR_MODEL, "direction must be LEFT or RIGHT");
    }
    if (c->opset < 7) return legacy_broadcast(c, s, row->to_bool);
    const st_tinfo *ins[2] = {&c->in[0], &c->in[1]};
    ST_TRY(st_infer_broadcast(c, 2, ins, &c->out[0]));
    c->out[0].dtype = row->to_bool ? ST_BOOL : c->in[0].dtype;
    return ST_OK;
}

st_status st_infer_variadic(st_infer *c)
{
    const char *op = c->node->op_type;
    int code = strcmp(op, "Sum") == 0 ? ST_B_ADD : strcmp(op, "Max") == 0 ? ST_B_MAX : strcmp(op, "Min") == 0 ? ST_B_MIN : ST_B_MEAN;
    if (c->n_in < 1) return st_infer_error(c, ST_ERR_MODEL, "needs at least one input");
    const st_tinfo *ins[c->n_in];
    for (int i = 0; i < c->n_in; i++) {
        if (!c->in[i].present) return st_infer_error(c, ST_ERR_MODEL, "input %d is missing", i);
        if (c->in[i].dtype != c->in[0].dtype) return st_infer_error(c, ST_ERR_DTYPE, "inputs have different dtypes");
        ins[i] = &c->in[i];
        /* broadcasting arrived in opset 8 (Sum-8, Max-8, ...) */
        bool same = c->in[i].rank == c->in[0].rank;
        for (int d = 0; same && d < c->in[0].rank; d++) same = c->in[i].dims[d] == c->in[0].dims[d];
        if (c->opset < 8 && !same)
            return st_infer_error(c, ST_ERR_SHAPE, "input %d's shape differs from input 0's; before opset 8 they must be equal", i);
    }
    ST_TRY(st_infer_dtype_mask(c, 0, code == ST_B_MEAN ? ST_DT_ALL_FLOATS : ST_DT_NUMERIC));
    st_ew_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->code = code;
    s->n_inputs = c->n_in;
    ST_TRY(st_infer_broadcast(c, c->n_in, ins, &c->out[0]));
    c->out[0].dtype = c->in[0].dtype;
    return ST_OK;
}

st_status st_infer_where(st_infer *c)
{
    if (c->n_in != 3) return st_infer_error(c, ST_ERR_MODEL, "expects 3 inputs, has %d", c->n_in);
    ST_TRY(st_infer_dtype(c, 0, BOOLS));
    if (c->in[1].dtype != c->in[2].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "X and Y have different dtypes (%s and %s)", st_dtype_name(c->in[1].dtype),
                              st_dtype_name(c->in[2].dtype));
    const st_tinfo *ins[3] = {&c->in[0], &c->in[1], &c->in[2]};
    ST_TRY(st_infer_broadcast(c, 3, ins, &c->out[0]));
    c->out[0].dtype = c->in[1].dtype;
    return ST_OK;
}

st_status st_infer_clip(st_infer *c)
{
    if (c->n_in < 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "needs an input");
    ST_TRY(st_infer_dtype_mask(c, 0, ST_DT_NUMERIC));
    st_ew_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->code = ST_U_CLIP;
    /* before opset 11 the bounds are attributes; after, optional inputs read at run time */
    s->alpha = st_attr_float(c->node, "min", -3.402823466e38f);
    s->beta = st_attr_float(c->node, "max", 3.402823466e38f);
    for (int k = 1; k < c->n_in; k++) {
        if (!c->in[k].present) continue;
        if (c->in[k].dtype != c->in[0].dtype) return st_infer_error(c, ST_ERR_DTYPE, "bound %d has another dtype", k);
        if (st_numel(c->in[k].rank, c->in[k].dims) != 1) return st_infer_error(c, ST_ERR_SHAPE, "bound %d is not a scalar", k);
    }
    c->out[0] = c->in[0];
    c->out[0].data = NULL;
    return ST_OK;
}

/* Cast's `to` before opset 6 is a string, the name of a TensorProto
 * DataType ("FLOAT", "INT64"); -1 for a name that is none. */
static int64_t legacy_cast_to(const char *name)
{
    static const char *const NAMES[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                        "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                        "COMPLEX128", "BFLOAT16"};
    for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++)
        if (strcmp(name, NAMES[i]) == 0) return (int64_t)i;
    return -1;
}

/* The ONNX names of the element types strata does not hold, so that a
 * refusal says which one a model asked for. */
static const char *onnx_type_name(int64_t t)
{
    switch (t) {
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: return "an unknown type";
    }
}

/* Cast-19 and CastLike-19 add float8 types and `saturate`, which only
 * decides how those round; Cast-21 adds int4 and uint4.  strata holds
 * none of them, so a cast to one is refused by name (and a model's
 * tensors of them are refused when it loads). */
st_status st_infer_cast(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    int64_t to = st_attr_int(c->node, "to", 0);
    const st_attr *a = st_node_attr(c->node, "to");
    if (c->opset < 6 && a && a->type == ST_ATTR_STRING && (to = legacy_cast_to(a->s)) < 0)
        return st_infer_error(c, ST_ERR_MODEL, "'to' is '%s', not a TensorProto data type", a->s);
    if (!st_dtype_valid((st_dtype)to))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "cast to %s (ONNX data type %lld) is not supported", onnx_type_name(to),
                              (long long)to);
    c->out[0] = c->in[0];
    c->out[0].data = NULL;
    c->out[0].dtype = (st_dtype)to;
    return ST_OK;
}

st_status st_infer_cast_like(st_infer *c)
{
    if (c->n_in != 2) return st_infer_error(c, ST_ERR_MODEL, "expects 2 inputs");
    c->out[0] = c->in[0];
    c->out[0].data = NULL;
    c->out[0].dtype = c->in[1].dtype;
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

#define ELEMENTWISE(name, rule, t) {name, "", 1, 0, rule, NULL, NULL, .types = t}
#define UNARY_OP(name, code, types, a, b, g) ELEMENTWISE(#name, st_infer_unary, types),
#define BINARY_OP(name, code, types, to_bool) ELEMENTWISE(#name, st_infer_binary, types),
#define VARIADIC_OP(name, code, types) ELEMENTWISE(#name, st_infer_variadic, types),
const st_op_def st_ops_elementwise[] = {
    ST_UNARY_OPS(UNARY_OP)
    ST_BINARY_OPS(BINARY_OP)
    ST_VARIADIC_OPS(VARIADIC_OP)
    {"Where", "", 1, 0, st_infer_where, NULL, NULL, .types = ST_DT_ALL, .t_operand = 1},
    ELEMENTWISE("Clip", st_infer_clip, ST_DT_NUMERIC),
    ELEMENTWISE("Cast", st_infer_cast, ST_DT_ALL | ST_DT(ST_STRING)),
    ELEMENTWISE("CastLike", st_infer_cast_like, ST_DT_ALL | ST_DT(ST_STRING)),
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
