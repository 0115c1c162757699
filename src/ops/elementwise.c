/*
 * elementwise.c — shape rules of the elementwise ops: unary maps, binary
 * ops with numpy broadcasting, variadic Sum/Max/Min/Mean, Where, Clip and
 * Cast.  Kernels: backends/cpu/k_elementwise.c.
 */
#include <string.h>

#include "ops/elementwise.h"
#include "ops/op.h"
#include "backends/cpu/kernels.h"
#include "backends/opencl/kernels.h"
#include "ops/ops.h"

static const st_dtype FLOATS[] = {ST_F32, ST_F16, ST_BF16, ST_F64, 0};
static const st_dtype SIGNED_NUM[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_I16, ST_I32, ST_I64, 0};
static const st_dtype NUMERIC[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_I16, ST_I32, ST_I64,
                                   ST_U8,  ST_U16, ST_U32,  ST_U64, 0};
static const st_dtype BOOLS[] = {ST_BOOL, 0};

typedef struct unary_row {
    const char *name;
    st_unary code;
    const st_dtype *types;
    float alpha, beta, gamma;   /* attribute defaults */
} unary_row;

static const unary_row UNARY[] = {
    {"Relu", ST_U_RELU, SIGNED_NUM, 0, 0, 0},
    {"Sigmoid", ST_U_SIGMOID, FLOATS, 0, 0, 0},
    {"Tanh", ST_U_TANH, FLOATS, 0, 0, 0},
    {"Exp", ST_U_EXP, FLOATS, 0, 0, 0},
    {"Log", ST_U_LOG, FLOATS, 0, 0, 0},
    {"Sqrt", ST_U_SQRT, FLOATS, 0, 0, 0},
    {"Neg", ST_U_NEG, SIGNED_NUM, 0, 0, 0},
    {"Abs", ST_U_ABS, NUMERIC, 0, 0, 0},
    {"Reciprocal", ST_U_RECIPROCAL, FLOATS, 0, 0, 0},
    {"Floor", ST_U_FLOOR, FLOATS, 0, 0, 0},
    {"Ceil", ST_U_CEIL, FLOATS, 0, 0, 0},
    {"Round", ST_U_ROUND, FLOATS, 0, 0, 0},
    {"Erf", ST_U_ERF, FLOATS, 0, 0, 0},
    {"Sin", ST_U_SIN, FLOATS, 0, 0, 0},
    {"Cos", ST_U_COS, FLOATS, 0, 0, 0},
    {"Tan", ST_U_TAN, FLOATS, 0, 0, 0},
    {"Asin", ST_U_ASIN, FLOATS, 0, 0, 0},
    {"Acos", ST_U_ACOS, FLOATS, 0, 0, 0},
    {"Atan", ST_U_ATAN, FLOATS, 0, 0, 0},
    {"Sinh", ST_U_SINH, FLOATS, 0, 0, 0},
    {"Cosh", ST_U_COSH, FLOATS, 0, 0, 0},
    {"Asinh", ST_U_ASINH, FLOATS, 0, 0, 0},
    {"Acosh", ST_U_ACOSH, FLOATS, 0, 0, 0},
    {"Atanh", ST_U_ATANH, FLOATS, 0, 0, 0},
    {"Sign", ST_U_SIGN, NUMERIC, 0, 0, 0},
    {"LeakyRelu", ST_U_LEAKY_RELU, FLOATS, 0.01f, 0, 0},
    {"HardSigmoid", ST_U_HARD_SIGMOID, FLOATS, 0.2f, 0.5f, 0},
    {"HardSwish", ST_U_HARD_SWISH, FLOATS, 0, 0, 0},
    {"Elu", ST_U_ELU, FLOATS, 1.0f, 0, 0},
    {"Selu", ST_U_SELU, FLOATS, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
    {"Celu", ST_U_CELU, FLOATS, 1.0f, 0, 0},
    {"Softplus", ST_U_SOFTPLUS, FLOATS, 0, 0, 0},
    {"Softsign", ST_U_SOFTSIGN, FLOATS, 0, 0, 0},
    {"ThresholdedRelu", ST_U_THRESHOLDED_RELU, FLOATS, 1.0f, 0, 0},
    {"Mish", ST_U_MISH, FLOATS, 0, 0, 0},
    {"Gelu", ST_U_GELU, FLOATS, 0, 0, 0},
    {"Not", ST_U_NOT, BOOLS, 0, 0, 0},
    {"IsNaN", ST_U_ISNAN, FLOATS, 0, 0, 0},
    {"IsInf", ST_U_ISINF, FLOATS, 0, 0, 0},
};

st_status st_infer_unary(st_infer *c)
{
    const unary_row *row = NULL;
    for (size_t i = 0; i < sizeof UNARY / sizeof *UNARY; i++)
        if (strcmp(UNARY[i].name, c->node->op_type) == 0) row = &UNARY[i];
    if (!row) return st_infer_error(c, ST_ERR_INTERNAL, "not a unary op");
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input, has %d", c->n_in);
    ST_TRY(st_infer_dtype(c, 0, row->types));
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
    const st_dtype *types;
    bool to_bool;
} binary_row;

static const binary_row BINARY[] = {
    {"Add", ST_B_ADD, NUMERIC, false},
    {"Sub", ST_B_SUB, NUMERIC, false},
    {"Mul", ST_B_MUL, NUMERIC, false},
    {"Div", ST_B_DIV, NUMERIC, false},
    {"Pow", ST_B_POW, NUMERIC, false},
    {"Mod", ST_B_MOD, NUMERIC, false},
    {"Equal", ST_B_EQUAL, NULL, true},
    {"Less", ST_B_LESS, NUMERIC, true},
    {"Greater", ST_B_GREATER, NUMERIC, true},
    {"LessOrEqual", ST_B_LESS_EQUAL, NUMERIC, true},
    {"GreaterOrEqual", ST_B_GREATER_EQUAL, NUMERIC, true},
    {"And", ST_B_AND, BOOLS, true},
    {"Or", ST_B_OR, BOOLS, true},
    {"Xor", ST_B_XOR, BOOLS, true},
    {"BitShift", ST_B_SHIFT_LEFT, NUMERIC, false},
    {"PRelu", ST_B_PRELU, SIGNED_NUM, false},
};

st_status st_infer_binary(st_infer *c)
{
    const binary_row *row = NULL;
    for (size_t i = 0; i < sizeof BINARY / sizeof *BINARY; i++)
        if (strcmp(BINARY[i].name, c->node->op_type) == 0) row = &BINARY[i];
    if (!row) return st_infer_error(c, ST_ERR_INTERNAL, "not a binary op");
    if (c->n_in != 2 || !c->in[0].present || !c->in[1].present)
        return st_infer_error(c, ST_ERR_MODEL, "expects 2 inputs, has %d", c->n_in);
    if (row->types) ST_TRY(st_infer_dtype(c, 0, row->types));
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
    if (row->code == ST_B_PRELU && c->opset < 7) return st_infer_error(c, ST_ERR_UNSUPPORTED, "PRelu before opset 7");
    if (c->opset < 7 && st_node_attr(c->node, "broadcast"))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "legacy broadcast attribute (opset < 7)");
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
    }
    ST_TRY(st_infer_dtype(c, 0, code == ST_B_MEAN ? FLOATS : NUMERIC));
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
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
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

st_status st_infer_cast(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    int64_t to = st_attr_int(c->node, "to", 0);
    if (!st_dtype_valid((st_dtype)to))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "cast to dtype %lld is not supported", (long long)to);
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

/* kernel: the family kernel's suffix, st_cpu_<kernel> and st_cuda_<kernel> */
#define ELEMENTWISE(name, rule, kernel) {name, "", 1, 0, rule, NULL, NULL, st_cpu_##kernel, ST_CUDA(st_cuda_##kernel), .opencl = ST_OPENCL(st_cl_##kernel)}
const st_op_def st_ops_elementwise[] = {
    ELEMENTWISE("Relu", st_infer_unary, unary),
    ELEMENTWISE("Sigmoid", st_infer_unary, unary),
    ELEMENTWISE("Tanh", st_infer_unary, unary),
    ELEMENTWISE("Exp", st_infer_unary, unary),
    ELEMENTWISE("Log", st_infer_unary, unary),
    ELEMENTWISE("Sqrt", st_infer_unary, unary),
    ELEMENTWISE("Neg", st_infer_unary, unary),
    ELEMENTWISE("Abs", st_infer_unary, unary),
    ELEMENTWISE("Reciprocal", st_infer_unary, unary),
    ELEMENTWISE("Floor", st_infer_unary, unary),
    ELEMENTWISE("Ceil", st_infer_unary, unary),
    ELEMENTWISE("Round", st_infer_unary, unary),
    ELEMENTWISE("Erf", st_infer_unary, unary),
    ELEMENTWISE("Sin", st_infer_unary, unary),
    ELEMENTWISE("Cos", st_infer_unary, unary),
    ELEMENTWISE("Tan", st_infer_unary, unary),
    ELEMENTWISE("Asin", st_infer_unary, unary),
    ELEMENTWISE("Acos", st_infer_unary, unary),
    ELEMENTWISE("Atan", st_infer_unary, unary),
    ELEMENTWISE("Sinh", st_infer_unary, unary),
    ELEMENTWISE("Cosh", st_infer_unary, unary),
    ELEMENTWISE("Asinh", st_infer_unary, unary),
    ELEMENTWISE("Acosh", st_infer_unary, unary),
    ELEMENTWISE("Atanh", st_infer_unary, unary),
    ELEMENTWISE("Sign", st_infer_unary, unary),
    ELEMENTWISE("LeakyRelu", st_infer_unary, unary),
    ELEMENTWISE("HardSigmoid", st_infer_unary, unary),
    ELEMENTWISE("HardSwish", st_infer_unary, unary),
    ELEMENTWISE("Elu", st_infer_unary, unary),
    ELEMENTWISE("Selu", st_infer_unary, unary),
    ELEMENTWISE("Celu", st_infer_unary, unary),
    ELEMENTWISE("Softplus", st_infer_unary, unary),
    ELEMENTWISE("Softsign", st_infer_unary, unary),
    ELEMENTWISE("ThresholdedRelu", st_infer_unary, unary),
    ELEMENTWISE("Mish", st_infer_unary, unary),
    ELEMENTWISE("Gelu", st_infer_unary, unary),
    ELEMENTWISE("Not", st_infer_unary, unary),
    ELEMENTWISE("IsNaN", st_infer_unary, unary),
    ELEMENTWISE("IsInf", st_infer_unary, unary),
    ELEMENTWISE("Add", st_infer_binary, binary),
    ELEMENTWISE("Sub", st_infer_binary, binary),
    ELEMENTWISE("Mul", st_infer_binary, binary),
    ELEMENTWISE("Div", st_infer_binary, binary),
    ELEMENTWISE("Pow", st_infer_binary, binary),
    ELEMENTWISE("Mod", st_infer_binary, binary),
    ELEMENTWISE("Equal", st_infer_binary, binary),
    ELEMENTWISE("Less", st_infer_binary, binary),
    ELEMENTWISE("Greater", st_infer_binary, binary),
    ELEMENTWISE("LessOrEqual", st_infer_binary, binary),
    ELEMENTWISE("GreaterOrEqual", st_infer_binary, binary),
    ELEMENTWISE("And", st_infer_binary, binary),
    ELEMENTWISE("Or", st_infer_binary, binary),
    ELEMENTWISE("Xor", st_infer_binary, binary),
    ELEMENTWISE("BitShift", st_infer_binary, binary),
    ELEMENTWISE("PRelu", st_infer_binary, binary),
    ELEMENTWISE("Sum", st_infer_variadic, variadic),
    ELEMENTWISE("Max", st_infer_variadic, variadic),
    ELEMENTWISE("Min", st_infer_variadic, variadic),
    ELEMENTWISE("Mean", st_infer_variadic, variadic),
    ELEMENTWISE("Where", st_infer_where, where),
    ELEMENTWISE("Clip", st_infer_clip, clip),
    ELEMENTWISE("Cast", st_infer_cast, cast),
    ELEMENTWISE("CastLike", st_infer_cast_like, cast),
    {NULL, NULL, 0, 0, NULL, NULL, NULL, NULL}
};
