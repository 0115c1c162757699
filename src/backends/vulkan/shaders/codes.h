/*
 * codes.h — the activation codes the shaders switch on (common.glsl's
 * st_act) and binary.comp's operators, shared by the C side
 * (k_elementwise.c maps strata's st_unary and st_binary codes to these)
 * and GLSL.  Plain preprocessor only: glslc reads it too.
 */
#ifndef ST_VK_CODES_H
#define ST_VK_CODES_H

#define VK_U_NONE 0
#define VK_U_RELU 1
#define VK_U_SIGMOID 2
#define VK_U_TANH 3
#define VK_U_EXP 4
#define VK_U_LOG 5
#define VK_U_SQRT 6
#define VK_U_NEG 7
#define VK_U_ABS 8
#define VK_U_RECIPROCAL 9
#define VK_U_FLOOR 10
#define VK_U_CEIL 11
#define VK_U_ROUND 12
#define VK_U_ERF 13
#define VK_U_SIN 14
#define VK_U_COS 15
#define VK_U_LEAKY_RELU 16
#define VK_U_HARD_SIGMOID 17
#define VK_U_HARD_SWISH 18
#define VK_U_ELU 19
#define VK_U_SOFTPLUS 20
#define VK_U_SILU 21
#define VK_U_GELU 22
#define VK_U_GELU_TANH 23
#define VK_U_CLIP 24
#define VK_U_MISH 25
#define VK_U_SIGN 26
#define VK_U_SOFTSIGN 27
#define VK_U_SELU 28
#define VK_U_IDENTITY 29
#define VK_U_TAN 30
#define VK_U_ASIN 31
#define VK_U_ACOS 32
#define VK_U_ATAN 33
#define VK_U_SINH 34
#define VK_U_COSH 35
#define VK_U_ASINH 36
#define VK_U_ACOSH 37
#define VK_U_ATANH 38
#define VK_U_CELU 39
#define VK_U_THRESHOLDED_RELU 40
#define VK_U_ISNAN 41
#define VK_U_ISINF 42

#define VK_B_ADD 0
#define VK_B_SUB 1
#define VK_B_MUL 2
#define VK_B_DIV 3
#define VK_B_MAX 4
#define VK_B_MIN 5
#define VK_B_POW 6
#define VK_B_PRELU 7
#define VK_B_MOD 8
#define VK_B_MEAN_LAST 9
#define VK_B_EQUAL 10
#define VK_B_LESS 11
#define VK_B_GREATER 12
#define VK_B_LESS_EQUAL 13
#define VK_B_GREATER_EQUAL 14

#endif
