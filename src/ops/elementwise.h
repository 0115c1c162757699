/*
 * elementwise.h — the unary, binary and variadic elementwise ops: their
 * codes and the parameters the shape rules pass to the kernels.
 */
#ifndef ST_OPS_ELEMENTWISE_H
#define ST_OPS_ELEMENTWISE_H

typedef enum st_unary {
    ST_U_RELU, ST_U_SIGMOID, ST_U_TANH, ST_U_EXP, ST_U_LOG, ST_U_SQRT, ST_U_NEG, ST_U_ABS,
    ST_U_RECIPROCAL, ST_U_FLOOR, ST_U_CEIL, ST_U_ROUND, ST_U_ERF, ST_U_SIN, ST_U_COS, ST_U_TAN,
    ST_U_ASIN, ST_U_ACOS, ST_U_ATAN, ST_U_SINH, ST_U_COSH, ST_U_ASINH, ST_U_ACOSH, ST_U_ATANH,
    ST_U_SIGN, ST_U_LEAKY_RELU, ST_U_HARD_SIGMOID, ST_U_HARD_SWISH, ST_U_ELU, ST_U_SELU, ST_U_CELU,
    ST_U_SOFTPLUS, ST_U_SOFTSIGN, ST_U_THRESHOLDED_RELU, ST_U_MISH, ST_U_GELU, ST_U_GELU_TANH,
    ST_U_NOT, ST_U_ISNAN, ST_U_ISINF, ST_U_CLIP, ST_U_SILU
} st_unary;

typedef enum st_binary {
    ST_B_ADD, ST_B_SUB, ST_B_MUL, ST_B_DIV, ST_B_POW, ST_B_MOD, ST_B_MAX, ST_B_MIN, ST_B_MEAN,
    ST_B_EQUAL, ST_B_LESS, ST_B_GREATER, ST_B_LESS_EQUAL, ST_B_GREATER_EQUAL,
    ST_B_AND, ST_B_OR, ST_B_XOR, ST_B_SHIFT_LEFT, ST_B_SHIFT_RIGHT, ST_B_PRELU
} st_binary;

typedef struct st_ew_state {
    int code;           /* st_unary or st_binary */
    float alpha, beta, gamma;
    int fmod;           /* Mod: C fmod instead of the divisor's sign */
    int detect_pos, detect_neg; /* IsInf */
    int n_inputs;       /* variadic ops: the divisor of Mean */
} st_ew_state;

/* An activation applied by another op's kernel before it stores its
 * output (passes/fuse.c), so the value is rounded to a lower precision
 * once, and written once. */
typedef struct st_epilogue {
    int act;            /* st_unary code + 1; 0: none */
    float alpha, beta;
} st_epilogue;

#endif
