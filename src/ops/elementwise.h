/*
 * elementwise.h — the unary, binary and variadic elementwise ops: their
 * codes and the parameters the shape rules pass to the kernels.
 */
#ifndef ST_OPS_ELEMENTWISE_H
#define ST_OPS_ELEMENTWISE_H

#include <stdint.h>

#include "ops/codes.h"

/* The codes, numbered by their order in ops/codes.h (which OpenCL C reads
 * too). */
#define ST_U_ENUM_(name) ST_U_##name,
#define ST_B_ENUM_(name) ST_B_##name,
typedef enum st_unary { ST_UNARY_CODES(ST_U_ENUM_) } st_unary;
typedef enum st_binary { ST_BINARY_CODES(ST_B_ENUM_) } st_binary;
#undef ST_U_ENUM_
#undef ST_B_ENUM_

/* The ONNX ops of the family, once: the op rows (ops/elementwise.c) and
 * every backend's kernel table are expanded from these lists.
 * Unary: X(name, code, types, alpha, beta, gamma), with the ONNX type
 * constraint as an ST_DT mask and the attributes' defaults. */
#define ST_UNARY_OPS(X)                                                                               \
    X(Relu, RELU, ST_DT_SIGNED, 0, 0, 0)                                                              \
    X(Sigmoid, SIGMOID, ST_DT_ALL_FLOATS, 0, 0, 0)                                                    \
    X(Tanh, TANH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Exp, EXP, ST_DT_ALL_FLOATS, 0, 0, 0)                                                            \
    X(Log, LOG, ST_DT_ALL_FLOATS, 0, 0, 0)                                                            \
    X(Sqrt, SQRT, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Neg, NEG, ST_DT_SIGNED, 0, 0, 0)                                                                \
    X(Abs, ABS, ST_DT_NUMERIC, 0, 0, 0)                                                               \
    X(Reciprocal, RECIPROCAL, ST_DT_ALL_FLOATS, 0, 0, 0)                                              \
    X(Floor, FLOOR, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(Ceil, CEIL, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Round, ROUND, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(Erf, ERF, ST_DT_ALL_FLOATS, 0, 0, 0)                                                            \
    X(Sin, SIN, ST_DT_ALL_FLOATS, 0, 0, 0)                                                            \
    X(Cos, COS, ST_DT_ALL_FLOATS, 0, 0, 0)                                                            \
    X(Tan, TAN, ST_DT_ALL_FLOATS, 0, 0, 0)                                                            \
    X(Asin, ASIN, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Acos, ACOS, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Atan, ATAN, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Sinh, SINH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Cosh, COSH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Asinh, ASINH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(Acosh, ACOSH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(Atanh, ATANH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(Sign, SIGN, ST_DT_NUMERIC, 0, 0, 0)                                                             \
    X(LeakyRelu, LEAKY_RELU, ST_DT_ALL_FLOATS, 0.01f, 0, 0)                                           \
    X(HardSigmoid, HARD_SIGMOID, ST_DT_ALL_FLOATS, 0.2f, 0.5f, 0)                                     \
    X(HardSwish, HARD_SWISH, ST_DT_ALL_FLOATS, 0, 0, 0)                                               \
    X(Elu, ELU, ST_DT_ALL_FLOATS, 1.0f, 0, 0)                                                         \
    X(Selu, SELU, ST_DT_ALL_FLOATS, 1.67326319217681884765625f, 0, 1.05070102214813232421875f)        \
    X(Celu, CELU, ST_DT_ALL_FLOATS, 1.0f, 0, 0)                                                       \
    X(Softplus, SOFTPLUS, ST_DT_ALL_FLOATS, 0, 0, 0)                                                  \
    X(Softsign, SOFTSIGN, ST_DT_ALL_FLOATS, 0, 0, 0)                                                  \
    X(ThresholdedRelu, THRESHOLDED_RELU, ST_DT_ALL_FLOATS, 1.0f, 0, 0)                                \
    X(Mish, MISH, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Gelu, GELU, ST_DT_ALL_FLOATS, 0, 0, 0)                                                          \
    X(Not, NOT, ST_DT(ST_BOOL), 0, 0, 0)                                                              \
    X(IsNaN, ISNAN, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(IsInf, ISINF, ST_DT_ALL_FLOATS, 0, 0, 0)                                                        \
    X(BitwiseNot, BITWISE_NOT, ST_DT_INTS, 0, 0, 0)

/* Binary: X(name, code, types, to_bool); Equal takes every dtype. */
#define ST_BINARY_OPS(X)                                                                              \
    X(Add, ADD, ST_DT_NUMERIC, false)                                                                 \
    X(Sub, SUB, ST_DT_NUMERIC, false)                                                                 \
    X(Mul, MUL, ST_DT_NUMERIC, false)                                                                 \
    X(Div, DIV, ST_DT_NUMERIC, false)                                                                 \
    X(Pow, POW, ST_DT_NUMERIC, false)                                                                 \
    X(Mod, MOD, ST_DT_NUMERIC, false)                                                                 \
    X(Equal, EQUAL, ST_DT_ALL, true)                                                                  \
    X(Less, LESS, ST_DT_NUMERIC, true)                                                                \
    X(Greater, GREATER, ST_DT_NUMERIC, true)                                                          \
    X(LessOrEqual, LESS_EQUAL, ST_DT_NUMERIC, true)                                                   \
    X(GreaterOrEqual, GREATER_EQUAL, ST_DT_NUMERIC, true)                                             \
    X(And, AND, ST_DT(ST_BOOL), true)                                                                 \
    X(Or, OR, ST_DT(ST_BOOL), true)                                                                   \
    X(Xor, XOR, ST_DT(ST_BOOL), true)                                                                 \
    X(BitShift, SHIFT_LEFT, ST_DT_NUMERIC, false)                                                     \
    X(PRelu, PRELU, ST_DT_SIGNED, false)                                                              \
    X(BitwiseAnd, BITWISE_AND, ST_DT_INTS, false)                                                     \
    X(BitwiseOr, BITWISE_OR, ST_DT_INTS, false)                                                       \
    X(BitwiseXor, BITWISE_XOR, ST_DT_INTS, false)

/* Variadic: X(name, code, types). */
#define ST_VARIADIC_OPS(X)                                                                            \
    X(Sum, ADD, ST_DT_NUMERIC) X(Max, MAX, ST_DT_NUMERIC) X(Min, MIN, ST_DT_NUMERIC)                  \
    X(Mean, MEAN, ST_DT_ALL_FLOATS)

typedef struct st_ew_state {
    int code;           /* st_unary or st_binary */
    float alpha, beta, gamma;
    int fmod;           /* Mod: C fmod instead of the divisor's sign */
    int detect_pos, detect_neg; /* IsInf */
    int n_inputs;       /* variadic ops: the divisor of Mean */
    /* Binary ops before opset 7 line B's dims up with A's from the
     * `axis` attribute (PRelu's slope from the channel dim), not from the
     * right: kernels see B with this many size-1 dims appended, which
     * numpy's right-aligned broadcasting then puts in place. */
    int b_units;
} st_ew_state;

/* Appends the b_units size-1 dims to the layout of a binary op's input 1
 * (an st_operand's or st_view's rank, sizes and strides). */
static inline void st_ew_legacy_b(const st_ew_state *s, int *rank, int64_t *sizes, int64_t *strides)
{
    for (int i = 0; i < s->b_units; i++, (*rank)++) {
        sizes[*rank] = 1;
        strides[*rank] = 1;
    }
}

/* An activation applied by another op's kernel before it stores its
 * output (passes/fuse.c), so the value is rounded to a lower precision
 * once, and written once. */
typedef struct st_epilogue {
    int act;            /* st_unary code + 1; 0: none */
    float alpha, beta;
} st_epilogue;

#endif
