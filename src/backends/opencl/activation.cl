/*
 * activation.cl — the unary ops in f32, shared by the unary kernel
 * (elementwise.cl) and by the kernels that apply a fused activation before
 * storing (GEMM, Conv: st_epilogue).  Compiled right after common.cl.
 *
 * The codes are st_unary's, from the one list in ops/codes.h (embedded
 * first in the program), so the numbering is the host's by construction.
 */

#define U_ENUM_(name) U_##name,
enum st_unary_code { ST_UNARY_CODES(U_ENUM_) };

inline float softplus_f(float x) { return x > 20.0f ? x : log1p(exp(x)); }

/* One unary op in f32.  lo/hi: Clip's bounds (the epilogue passes its
 * alpha/beta there too, as the CPU's st_epilogue_f32 does). */
inline float unary_f(int code, float x, float a, float b, float g, float lo, float hi, int flags)
{
    switch (code) {
    case U_RELU: return x > 0.0f ? x : 0.0f;
    case U_SIGMOID: return 1.0f / (1.0f + exp(-x));
    case U_SILU: return x / (1.0f + exp(-x));
    case U_TANH: return tanh(x);
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_SQRT: return sqrt(x);
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_RECIPROCAL: return 1.0f / x;
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_ROUND: return rint(x); /* ties to even */
    case U_ERF: return erf(x);
    case U_SIN: return sin(x);
    case U_COS: return cos(x);
    case U_TAN: return tan(x);
    case U_ASIN: return asin(x);
    case U_ACOS: return acos(x);
    case U_ATAN: return atan(x);
    case U_SINH: return sinh(x);
    case U_COSH: return cosh(x);
    case U_ASINH: return asinh(x);
    case U_ACOSH: return acosh(x);
    case U_ATANH: return atanh(x);
    case U_SIGN: return (float)((x > 0.0f) - (x < 0.0f));
    case U_LEAKY_RELU: return x >= 0.0f ? x : a * x;
    case U_HARD_SIGMOID: return fmax(0.0f, fmin(1.0f, a * x + b));
    case U_HARD_SWISH: return x * fmax(0.0f, fmin(1.0f, x / 6.0f + 0.5f));
    case U_ELU: return x >= 0.0f ? x : a * (exp(x) - 1.0f);
    case U_SELU: return g * (x > 0.0f ? x : a * (exp(x) - 1.0f));
    case U_CELU: return fmax(0.0f, x) + fmin(0.0f, a * (exp(x / a) - 1.0f));
    case U_SOFTPLUS: return softplus_f(x);
    case U_SOFTSIGN: return x / (1.0f + fabs(x));
    case U_THRESHOLDED_RELU: return x > a ? x : 0.0f;
    case U_MISH: return x * tanh(softplus_f(x));
    case U_GELU: return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
    case U_GELU_TANH: return 0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case U_ISNAN: return isnan(x) ? 1.0f : 0.0f;
    case U_ISINF: return (isinf(x) && ((x > 0.0f && (flags & 1)) || (x < 0.0f && (flags & 2)))) ? 1.0f : 0.0f;
    case U_CLIP: return x < lo ? lo : x > hi ? hi : x;
    case U_NOT: return x == 0.0f ? 1.0f : 0.0f;
    }
    return x;
}

/* A fused activation (st_epilogue: act = code + 1, 0 for none). */
inline float act_f(int act, float x, float a, float b)
{
    return act ? unary_f(act - 1, x, a, b, 0.0f, a, b, 0) : x;
}

