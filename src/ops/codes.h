/*
 * codes.h — the unary and binary op codes, listed once.
 *
 * Every backend switches on these numbers: the CPU and CUDA kernels
 * through ops/elementwise.h's enums, the OpenCL C kernels through the same
 * lists (cmake/embed_opencl.cmake puts this file first in the OpenCL
 * program), so no backend can number them differently.  Plain
 * preprocessor only: OpenCL C reads this file too.
 *
 * The order is the numbering (of the index family's modes, below, too).  A code with no ONNX op of its own
 * (GELU_TANH, CLIP, SILU) is what a shape rule or a fusion pass selects.
 */
#ifndef ST_OPS_CODES_H
#define ST_OPS_CODES_H

#define ST_UNARY_CODES(X)                                                                              \
    X(RELU) X(SIGMOID) X(TANH) X(EXP) X(LOG) X(SQRT) X(NEG) X(ABS) X(RECIPROCAL) X(FLOOR) X(CEIL)      \
    X(ROUND) X(ERF) X(SIN) X(COS) X(TAN) X(ASIN) X(ACOS) X(ATAN) X(SINH) X(COSH) X(ASINH) X(ACOSH)    \
    X(ATANH) X(SIGN) X(LEAKY_RELU) X(HARD_SIGMOID) X(HARD_SWISH) X(ELU) X(SELU) X(CELU) X(SOFTPLUS)  \
    X(SOFTSIGN) X(THRESHOLDED_RELU) X(MISH) X(GELU) X(GELU_TANH) X(NOT) X(ISNAN) X(ISINF) X(CLIP)     \
    X(SILU) X(BITWISE_NOT)

#define ST_BINARY_CODES(X)                                                                             \
    X(ADD) X(SUB) X(MUL) X(DIV) X(POW) X(MOD) X(MAX) X(MIN) X(MEAN) X(EQUAL) X(LESS) X(GREATER)        \
    X(LESS_EQUAL) X(GREATER_EQUAL) X(AND) X(OR) X(XOR) X(SHIFT_LEFT) X(SHIFT_RIGHT) X(PRELU)         \
    X(BITWISE_AND) X(BITWISE_OR) X(BITWISE_XOR)

/* The index family's modes (ops/index.h's st_pad_mode and
 * st_scatter_red, ops/index_math.h's rules): Pad's fill, and the
 * reduction ScatterElements and ScatterND apply to a written element. */
#define ST_PAD_MODES(X) X(CONSTANT) X(REFLECT) X(EDGE) X(WRAP)
#define ST_SCATTER_REDS(X) X(NONE) X(ADD) X(MUL) X(MAX) X(MIN)

#endif
