/*
 * scalar_math.h — the scalar math of every unary and binary elementwise
 * op, written once for every backend.
 *
 * The same text compiles as C (the CPU's kernels, backends/cpu/
 * k_elementwise.c), as CUDA (backends/cuda/common.cuh's st_unary_f and
 * st_binary_f) and as OpenCL C (cmake/embed_opencl.cmake puts it in the
 * program after ops/codes.h and common.cl; activation.cl and
 * elementwise.cl call it), so an op's formula cannot drift between
 * backends: the kernel sweep (tests/kernels) then only has to find
 * differences of the math libraries, not of the formulas.  It keeps to
 * the subset the three languages share: plain functions, the
 * preprocessor, C casts, no headers in OpenCL.
 *
 * Each float op is one function per type, st_sm_<op>_f32 and _f64,
 * defined from one template (ST_SM_DEFINE) that takes the type, the way
 * to name a libm function for it (expf or exp; OpenCL C overloads exp)
 * and the way to write a constant (0.5f or 0.5); st_sm_unary_<t> and
 * st_sm_binary_<t> dispatch on the codes of ops/codes.h; integers have
 * st_sm_unary_i64 and st_sm_binary_i64 (64-bit two's complement).  The CPU's
 * loops call the per-op functions (the compiler vectorises them once
 * inlined); where the CPU has a faster SIMD form of its own (fastmath.h's
 * tanh and erf, vmath.h's activations), that form stays and
 * tests/unit/test_scalar_math.c holds it to these functions.
 *
 * Clamps are written as compare-and-select, not fmax/fmin: they
 * vectorise without -ffast-math, and a NaN input gives NaN on every
 * backend (fmin(1, NaN) would be 1).
 */
#ifndef ST_OPS_SCALAR_MATH_H
#define ST_OPS_SCALAR_MATH_H

#if defined(__OPENCL_VERSION__)
#define ST_SM_FN inline
#define ST_SM_F32(name) name
/* the op codes as C and CUDA name them (elementwise.h's enums) */
#define ST_SM_U_(name) ST_U_##name,
#define ST_SM_B_(name) ST_B_##name,
enum st_sm_unary { ST_UNARY_CODES(ST_SM_U_) };
enum st_sm_binary { ST_BINARY_CODES(ST_SM_B_) };
#undef ST_SM_U_
#undef ST_SM_B_
#elif defined(__CUDACC__)
#include "ops/elementwise.h"
#define ST_SM_FN static __device__ __forceinline__
#define ST_SM_F32(name) name##f
#else
#include <math.h>

#include "ops/elementwise.h"
#define ST_SM_FN static inline
#define ST_SM_F32(name) name##f
#endif
#define ST_SM_F64(name) name
#define ST_SM_K32(c) c##f
#define ST_SM_K64(c) c

/* IsInf's flags: which signs it detects */
#define ST_SM_INF_POS 1
#define ST_SM_INF_NEG 2

/* ST_SM_DEFINE(S, T, F, K, SPLUS): the functions for type T with suffix
 * S; F(name) names T's libm function, K(c) writes a constant of type T;
 * SPLUS: where Softplus turns into the identity (log1p(exp(x)) equals x
 * in T from there on). */
#define ST_SM_DEFINE(S, T, F, K, SPLUS)                                                                         \
    ST_SM_FN T st_sm_relu_##S(T x) { return x > K(0.0) ? x : K(0.0); }                                          \
    ST_SM_FN T st_sm_sigmoid_##S(T x) { return K(1.0) / (K(1.0) + F(exp)(-x)); }                                \
    ST_SM_FN T st_sm_silu_##S(T x) { return x / (K(1.0) + F(exp)(-x)); }                                        \
    ST_SM_FN T st_sm_tanh_##S(T x) { return F(tanh)(x); }                                                       \
    ST_SM_FN T st_sm_exp_##S(T x) { return F(exp)(x); }                                                         \
    ST_SM_FN T st_sm_log_##S(T x) { return F(log)(x); }                                                         \
    ST_SM_FN T st_sm_sqrt_##S(T x) { return F(sqrt)(x); }                                                       \
    ST_SM_FN T st_sm_neg_##S(T x) { return -x; }                                                                \
    ST_SM_FN T st_sm_abs_##S(T x) { return F(fabs)(x); }                                                        \
    ST_SM_FN T st_sm_reciprocal_##S(T x) { return K(1.0) / x; }                                                 \
    ST_SM_FN T st_sm_floor_##S(T x) { return F(floor)(x); }                                                     \
    ST_SM_FN T st_sm_ceil_##S(T x) { return F(ceil)(x); }                                                       \
    /* ties to even: the default rounding mode */                                                               \
    ST_SM_FN T st_sm_round_##S(T x) { return F(rint)(x); }                                                      \
    ST_SM_FN T st_sm_erf_##S(T x) { return F(erf)(x); }                                                         \
    ST_SM_FN T st_sm_sin_##S(T x) { return F(sin)(x); }                                                         \
    ST_SM_FN T st_sm_cos_##S(T x) { return F(cos)(x); }                                                         \
    ST_SM_FN T st_sm_tan_##S(T x) { return F(tan)(x); }                                                         \
    ST_SM_FN T st_sm_asin_##S(T x) { return F(asin)(x); }                                                       \
    ST_SM_FN T st_sm_acos_##S(T x) { return F(acos)(x); }                                                       \
    ST_SM_FN T st_sm_atan_##S(T x) { return F(atan)(x); }                                                       \
    ST_SM_FN T st_sm_sinh_##S(T x) { return F(sinh)(x); }                                                       \
    ST_SM_FN T st_sm_cosh_##S(T x) { return F(cosh)(x); }                                                       \
    ST_SM_FN T st_sm_asinh_##S(T x) { return F(asinh)(x); }                                                     \
    ST_SM_FN T st_sm_acosh_##S(T x) { return F(acosh)(x); }                                                     \
    ST_SM_FN T st_sm_atanh_##S(T x) { return F(atanh)(x); }                                                     \
    ST_SM_FN T st_sm_sign_##S(T x) { return (T)((x > K(0.0)) - (x < K(0.0))); }                                 \
    ST_SM_FN T st_sm_leaky_relu_##S(T x, T a) { return x >= K(0.0) ? x : a * x; }                               \
    ST_SM_FN T st_sm_unit_clamp_##S(T t)                                                                        \
    {                                                                                                           \
        t = t > K(1.0) ? K(1.0) : t;                                                                            \
        return t < K(0.0) ? K(0.0) : t;                                                                         \
    }                                                                                                           \
    ST_SM_FN T st_sm_hard_sigmoid_##S(T x, T a, T b) { return st_sm_unit_clamp_##S(a * x + b); }                \
    ST_SM_FN T st_sm_hard_swish_##S(T x) { return x * st_sm_unit_clamp_##S(x / K(6.0) + K(0.5)); }              \
    ST_SM_FN T st_sm_elu_##S(T x, T a) { return x >= K(0.0) ? x : a * (F(exp)(x) - K(1.0)); }                   \
    ST_SM_FN T st_sm_selu_##S(T x, T a, T g) { return g * (x > K(0.0) ? x : a * (F(exp)(x) - K(1.0))); }        \
    ST_SM_FN T st_sm_celu_##S(T x, T a)                                                                         \
    {                                                                                                           \
        return F(fmax)(K(0.0), x) + F(fmin)(K(0.0), a * (F(exp)(x / a) - K(1.0)));                              \
    }                                                                                                           \
    ST_SM_FN T st_sm_softplus_##S(T x) { return x > SPLUS ? x : F(log1p)(F(exp)(x)); }                          \
    ST_SM_FN T st_sm_softsign_##S(T x) { return x / (K(1.0) + F(fabs)(x)); }                                    \
    ST_SM_FN T st_sm_thresholded_relu_##S(T x, T a) { return x > a ? x : K(0.0); }                              \
    ST_SM_FN T st_sm_mish_##S(T x) { return x * F(tanh)(st_sm_softplus_##S(x)); }                               \
    ST_SM_FN T st_sm_gelu_##S(T x) { return K(0.5) * x * (K(1.0) + F(erf)(x * K(0.70710678118654752))); }       \
    ST_SM_FN T st_sm_gelu_tanh_arg_##S(T x) { return K(0.79788456080286536) * (x + K(0.044715) * x * x * x); }  \
    ST_SM_FN T st_sm_gelu_tanh_##S(T x) { return K(0.5) * x * (K(1.0) + F(tanh)(st_sm_gelu_tanh_arg_##S(x))); } \
    ST_SM_FN T st_sm_isnan_##S(T x) { return isnan(x) ? K(1.0) : K(0.0); }                                      \
    ST_SM_FN T st_sm_isinf_##S(T x, int flags)                                                                  \
    {                                                                                                           \
        return (isinf(x) && ((x > K(0.0) && (flags & ST_SM_INF_POS)) || (x < K(0.0) && (flags & ST_SM_INF_NEG)))) \
                   ? K(1.0)                                                                                     \
                   : K(0.0);                                                                                    \
    }                                                                                                           \
    /* min then max, so max wins where min > max (newer ONNX says so), and a                                  \
     * NaN passes */                                                                                          \
    ST_SM_FN T st_sm_clip_##S(T x, T lo, T hi) { T t = x < lo ? lo : x; return t > hi ? hi : t; }               \
    ST_SM_FN T st_sm_not_##S(T x) { return x == K(0.0) ? K(1.0) : K(0.0); }                                     \
                                                                                                                \
    /* One unary op by code; a, b, g: alpha, beta, gamma; lo, hi: Clip's                                        \
     * bounds; flags: IsInf's.  BITWISE_NOT is an integer op: x itself. */                                      \
    ST_SM_FN T st_sm_unary_##S(int code, T x, T a, T b, T g, T lo, T hi, int flags)                             \
    {                                                                                                           \
        switch (code) {                                                                                         \
        case ST_U_RELU: return st_sm_relu_##S(x);                                                               \
        case ST_U_SIGMOID: return st_sm_sigmoid_##S(x);                                                         \
        case ST_U_SILU: return st_sm_silu_##S(x);                                                               \
        case ST_U_TANH: return st_sm_tanh_##S(x);                                                               \
        case ST_U_EXP: return st_sm_exp_##S(x);                                                                 \
        case ST_U_LOG: return st_sm_log_##S(x);                                                                 \
        case ST_U_SQRT: return st_sm_sqrt_##S(x);                                                               \
        case ST_U_NEG: return st_sm_neg_##S(x);                                                                 \
        case ST_U_ABS: return st_sm_abs_##S(x);                                                                 \
        case ST_U_RECIPROCAL: return st_sm_reciprocal_##S(x);                                                   \
        case ST_U_FLOOR: return st_sm_floor_##S(x);                                                             \
        case ST_U_CEIL: return st_sm_ceil_##S(x);                                                               \
        case ST_U_ROUND: return st_sm_round_##S(x);                                                             \
        case ST_U_ERF: return st_sm_erf_##S(x);                                                                 \
        case ST_U_SIN: return st_sm_sin_##S(x);                                                                 \
        case ST_U_COS: return st_sm_cos_##S(x);                                                                 \
        case ST_U_TAN: return st_sm_tan_##S(x);                                                                 \
        case ST_U_ASIN: return st_sm_asin_##S(x);                                                               \
        case ST_U_ACOS: return st_sm_acos_##S(x);                                                               \
        case ST_U_ATAN: return st_sm_atan_##S(x);                                                               \
        case ST_U_SINH: return st_sm_sinh_##S(x);                                                               \
        case ST_U_COSH: return st_sm_cosh_##S(x);                                                               \
        case ST_U_ASINH: return st_sm_asinh_##S(x);                                                             \
        case ST_U_ACOSH: return st_sm_acosh_##S(x);                                                             \
        case ST_U_ATANH: return st_sm_atanh_##S(x);                                                             \
        case ST_U_SIGN: return st_sm_sign_##S(x);                                                               \
        case ST_U_LEAKY_RELU: return st_sm_leaky_relu_##S(x, a);                                                \
        case ST_U_HARD_SIGMOID: return st_sm_hard_sigmoid_##S(x, a, b);                                         \
        case ST_U_HARD_SWISH: return st_sm_hard_swish_##S(x);                                                   \
        case ST_U_ELU: return st_sm_elu_##S(x, a);                                                              \
        case ST_U_SELU: return st_sm_selu_##S(x, a, g);                                                         \
        case ST_U_CELU: return st_sm_celu_##S(x, a);                                                            \
        case ST_U_SOFTPLUS: return st_sm_softplus_##S(x);                                                       \
        case ST_U_SOFTSIGN: return st_sm_softsign_##S(x);                                                       \
        case ST_U_THRESHOLDED_RELU: return st_sm_thresholded_relu_##S(x, a);                                    \
        case ST_U_MISH: return st_sm_mish_##S(x);                                                               \
        case ST_U_GELU: return st_sm_gelu_##S(x);                                                               \
        case ST_U_GELU_TANH: return st_sm_gelu_tanh_##S(x);                                                     \
        case ST_U_ISNAN: return st_sm_isnan_##S(x);                                                             \
        case ST_U_ISINF: return st_sm_isinf_##S(x, flags);                                                      \
        case ST_U_CLIP: return st_sm_clip_##S(x, lo, hi);                                                       \
        case ST_U_NOT: return st_sm_not_##S(x);                                                                 \
        default: return x;                                                                                      \
        }                                                                                                       \
    }                                                                                                           \
                                                                                                                \
    /* Mod: C's fmod (the dividend's sign) when fmod_mode, else the                                             \
     * divisor's sign; ONNX asks fmod for floats. */                                                            \
    ST_SM_FN T st_sm_mod_##S(T a, T b, int fmod_mode) { return fmod_mode ? F(fmod)(a, b) : a - F(floor)(a / b) * b; } \
    /* Max and Min: a NaN in either wins, as numpy's maximum */                                                 \
    ST_SM_FN T st_sm_max_##S(T a, T b) { return isnan(a) || a > b ? a : b; }                                    \
    ST_SM_FN T st_sm_min_##S(T a, T b) { return isnan(a) || a < b ? a : b; }                                    \
    ST_SM_FN T st_sm_prelu_##S(T a, T b) { return a >= K(0.0) ? a : a * b; }                                    \
                                                                                                                \
    /* One binary op by code (comparisons give 1 or 0).  Mean is a sum                                          \
     * here: the caller divides.  Shifts and bitwise ops are integer                                            \
     * ops: 0. */                                                                                               \
    ST_SM_FN T st_sm_binary_##S(int code, T a, T b, int fmod_mode)                                              \
    {                                                                                                           \
        switch (code) {                                                                                         \
        case ST_B_ADD:                                                                                          \
        case ST_B_MEAN: return a + b;                                                                           \
        case ST_B_SUB: return a - b;                                                                            \
        case ST_B_MUL: return a * b;                                                                            \
        case ST_B_DIV: return a / b;                                                                            \
        case ST_B_POW: return F(pow)(a, b);                                                                     \
        case ST_B_MOD: return st_sm_mod_##S(a, b, fmod_mode);                                                   \
        case ST_B_MAX: return st_sm_max_##S(a, b);                                                              \
        case ST_B_MIN: return st_sm_min_##S(a, b);                                                              \
        case ST_B_EQUAL: return a == b ? K(1.0) : K(0.0);                                                       \
        case ST_B_LESS: return a < b ? K(1.0) : K(0.0);                                                         \
        case ST_B_GREATER: return a > b ? K(1.0) : K(0.0);                                                      \
        case ST_B_LESS_EQUAL: return a <= b ? K(1.0) : K(0.0);                                                  \
        case ST_B_GREATER_EQUAL: return a >= b ? K(1.0) : K(0.0);                                               \
        case ST_B_AND: return (a != K(0.0)) && (b != K(0.0)) ? K(1.0) : K(0.0);                                 \
        case ST_B_OR: return (a != K(0.0)) || (b != K(0.0)) ? K(1.0) : K(0.0);                                  \
        case ST_B_XOR: return (a != K(0.0)) != (b != K(0.0)) ? K(1.0) : K(0.0);                                 \
        case ST_B_PRELU: return st_sm_prelu_##S(a, b);                                                          \
        default: return K(0.0);                                                                                 \
        }                                                                                                       \
    }

ST_SM_DEFINE(f32, float, ST_SM_F32, ST_SM_K32, 20.0f)
#if !defined(__OPENCL_VERSION__) || defined(ST_FP64)
ST_SM_DEFINE(f64, double, ST_SM_F64, ST_SM_K64, 30.0)
#endif

/* ---- integers: every integer dtype computes in 64-bit two's complement,
 * wrapping (unsigned arithmetic, so no signed overflow), x / 0 = 0 and
 * x % 0 = 0, truncating division; the store keeps the type's low bits. */
#if defined(__OPENCL_VERSION__)
typedef long st_sm_i64;
typedef ulong st_sm_u64;
#define ST_SM_I64_MIN LONG_MIN
#else
typedef int64_t st_sm_i64;
typedef uint64_t st_sm_u64;
#define ST_SM_I64_MIN INT64_MIN
#endif

ST_SM_FN st_sm_i64 st_sm_unary_i64(int code, st_sm_i64 x, st_sm_i64 lo, st_sm_i64 hi)
{
    switch (code) {
    case ST_U_RELU: return x > 0 ? x : 0;
    case ST_U_NEG: return (st_sm_i64)((st_sm_u64)0 - (st_sm_u64)x);
    case ST_U_ABS: return x < 0 ? (st_sm_i64)((st_sm_u64)0 - (st_sm_u64)x) : x;
    case ST_U_SIGN: return (x > 0) - (x < 0);
    case ST_U_CLIP: x = x < lo ? lo : x; return x > hi ? hi : x; /* max wins where min > max */
    case ST_U_NOT: return x == 0;
    case ST_U_BITWISE_NOT: return ~x;
    default: return x;
    }
}

/* base^e; a negative exponent gives 0 but for bases 1 and -1 */
ST_SM_FN st_sm_i64 st_sm_ipow(st_sm_i64 base, st_sm_i64 e)
{
    if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    st_sm_u64 r = 1, b = (st_sm_u64)base;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (st_sm_i64)r;
}

/* uns: the dtype is unsigned (its values zero-extended), for division,
 * remainder and order; fmod_mode: Mod takes the dividend's sign */
ST_SM_FN st_sm_i64 st_sm_binary_i64(int code, st_sm_i64 a, st_sm_i64 b, int fmod_mode, int uns)
{
    st_sm_u64 ua = (st_sm_u64)a, ub = (st_sm_u64)b;
    switch (code) {
    case ST_B_ADD:
    case ST_B_MEAN: return (st_sm_i64)(ua + ub);
    case ST_B_SUB: return (st_sm_i64)(ua - ub);
    case ST_B_MUL: return (st_sm_i64)(ua * ub);
    case ST_B_DIV:
        if (b == 0) return 0;
        if (uns) return (st_sm_i64)(ua / ub);
        if (a == ST_SM_I64_MIN && b == -1) return ST_SM_I64_MIN;
        return a / b;
    case ST_B_POW: return st_sm_ipow(a, b);
    case ST_B_MOD: {
        if (b == 0) return 0;
        if (uns) return (st_sm_i64)(ua % ub);
        if (a == ST_SM_I64_MIN && b == -1) return 0;
        st_sm_i64 r = a % b;
        if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    case ST_B_MAX: return uns ? (ua > ub ? a : b) : (a > b ? a : b);
    case ST_B_MIN: return uns ? (ua < ub ? a : b) : (a < b ? a : b);
    case ST_B_EQUAL: return a == b;
    case ST_B_LESS: return uns ? ua < ub : a < b;
    case ST_B_GREATER: return uns ? ua > ub : a > b;
    case ST_B_LESS_EQUAL: return uns ? ua <= ub : a <= b;
    case ST_B_GREATER_EQUAL: return uns ? ua >= ub : a >= b;
    case ST_B_AND: return a && b;
    case ST_B_OR: return a || b;
    case ST_B_XOR: return (a != 0) != (b != 0);
    case ST_B_SHIFT_LEFT: return ub >= 64 ? 0 : (st_sm_i64)(ua << ub);
    case ST_B_SHIFT_RIGHT: return ub >= 64 ? 0 : (st_sm_i64)(ua >> ub);
    case ST_B_PRELU: return a >= 0 ? a : (st_sm_i64)(ua * ub);
    /* on the sign- or zero-extended values: the low bits the store keeps
     * are those of the type's own operation */
    case ST_B_BITWISE_AND: return (st_sm_i64)(ua & ub);
    case ST_B_BITWISE_OR: return (st_sm_i64)(ua | ub);
    case ST_B_BITWISE_XOR: return (st_sm_i64)(ua ^ ub);
    default: return 0;
    }
}

#endif
