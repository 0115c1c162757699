// common.glsl — what every shader shares: the element type of its
// variant (T: float, or float16_t with -DST_F16, computing in float), the
// output type (TY: T, or with -DST_B8 strata's bool, one byte an element,
// through 8-bit storage, so no invocation touches a byte of another's),
// the parameter block at binding 0 (ints; floats by their bits), strided
// operand descriptors (st_td: offset, rank, sizes[8], strides[8] in
// elements, as vk_internal.h's ST_VK_TD), the 1-D work-item index of
// st_vk_grid1, the activations of codes.h, and C's fmod.
#extension GL_GOOGLE_include_directive : enable
#ifdef ST_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#define T float16_t
#else
#define T float
#endif
#ifdef ST_B8
#extension GL_EXT_shader_8bit_storage : require
#define TY uint8_t
#define TY_OF(r) uint8_t((r) != 0.0 ? 1u : 0u)
#else
#define TY T
#define TY_OF(r) T(r)
#endif
#include "codes.h"

layout(std430, set = 0, binding = 0) readonly buffer Params { int p[]; };

float pf(int i) { return intBitsToFloat(p[i]); }

// The element offset of the lin-th element (row-major over the
// descriptor's own sizes) of the operand described at p[b].
int td_index(int b, int lin)
{
    int rank = p[b + 1];
    int idx = p[b];
    for (int d = rank - 1; d >= 0; d--) {
        int n = p[b + 2 + d];
        int q = lin / n;
        idx += (lin - q * n) * p[b + 10 + d];
        lin = q;
    }
    return idx;
}

int gid1()
{
    return int(gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x);
}

float st_erf(float x)
{
    // Abramowitz and Stegun 7.1.26 is 1.5e-7 absolute; a finer rational
    // form keeps f32 results within the tests' 1e-5.
    float a = abs(x);
    float t = 1.0 / (1.0 + 0.5 * a);
    float y = 1.0 - t * exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
              t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
              t * (-0.82215223 + t * 0.17087277)))))))));
    return x < 0.0 ? -y : y;
}

float st_tanh(float x)
{
    // tanh through exp of a negative argument: no overflow to inf/inf
    float e = exp(-2.0 * abs(x));
    float t = (1.0 - e) / (1.0 + e);
    return x < 0.0 ? -t : t;
}

float st_sigmoid(float x)
{
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    float e = exp(x);
    return e / (1.0 + e);
}

float st_softplus(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

// NaN and infinity from the bits: a compiler may assume no NaNs in
// isnan() (fast-math), never in integer compares
bool st_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool st_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }

// a / b correctly rounded, as C and the references divide: Vulkan lets a
// float division be 2.5 ULP off, and NVIDIA's driver is (on an H200 the
// ONNX test dynamicquantizelinear_expanded came out one step off, 25 for
// 26, where x / scale lands next to a rounding boundary).  One residual
// step, exact through fma, corrects the quotient.
float st_div(float a, float b)
{
    precise float q = a / b;
    if (isinf(q) || isnan(q) || q == 0.0) return q;
    precise float r = fma(-q, b, a);
    return fma(r, 1.0 / b, q);
}

// C's fmod: exact, as C's is, where GLSL's mod (x - y * floor(x / y))
// rounds the quotient (for 7 and 0.1f it gives 0, fmod 0.0999999).  Long
// division in binary: each step takes off the largest |b| * 2^k that is
// <= r, which Sterbenz's lemma makes exact (r / 2 < |b| * 2^k <= r), and
// k falls each step, so it ends within the exponent range (< 280 steps).
float st_fmod(float a, float b)
{
    float r = abs(a), d = abs(b);
    if (st_isnan(a) || st_isnan(b) || st_isinf(a) || d == 0.0) return uintBitsToFloat(0x7fc00000u);
    if (r < d) return a; // b infinite included
    int ed, er;
    frexp(d, ed);
    while (r >= d) {
        frexp(r, er);
        float s = ldexp(d, er - ed);
        if (s > r) s = ldexp(d, er - ed - 1);
        r -= s;
    }
    return a < 0.0 ? -r : r;
}

float st_act(int code, float x, float a, float b, float g)
{
    switch (code) {
    case VK_U_NONE: return x;
    case VK_U_IDENTITY: return x;
    case VK_U_RELU: return max(x, 0.0);
    case VK_U_SIGMOID: return st_sigmoid(x);
    case VK_U_TANH: return st_tanh(x);
    case VK_U_EXP: return exp(x);
    case VK_U_LOG: return log(x);
    case VK_U_SQRT: return sqrt(x);
    case VK_U_NEG: return -x;
    case VK_U_ABS: return abs(x);
    case VK_U_RECIPROCAL: return 1.0 / x;
    case VK_U_FLOOR: return floor(x);
    case VK_U_CEIL: return ceil(x);
    case VK_U_ROUND: return roundEven(x);
    case VK_U_ERF: return st_erf(x);
    case VK_U_SIN: return sin(x);
    case VK_U_COS: return cos(x);
    case VK_U_LEAKY_RELU: return x >= 0.0 ? x : a * x;
    case VK_U_HARD_SIGMOID: return clamp(a * x + b, 0.0, 1.0);
    case VK_U_HARD_SWISH: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);
    case VK_U_ELU: return x >= 0.0 ? x : a * (exp(x) - 1.0);
    case VK_U_SELU: return x > 0.0 ? g * x : g * (a * exp(x) - a);
    case VK_U_SOFTPLUS: return st_softplus(x);
    case VK_U_SOFTSIGN: return x / (1.0 + abs(x));
    case VK_U_SILU: return x * st_sigmoid(x);
    case VK_U_GELU: return 0.5 * x * (1.0 + st_erf(x * 0.70710678118654752));
    case VK_U_GELU_TANH: return 0.5 * x * (1.0 + st_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case VK_U_CLIP: return min(max(x, a), b);
    case VK_U_MISH: return x * st_tanh(st_softplus(x));
    case VK_U_SIGN: return sign(x);
    case VK_U_TAN: return tan(x);
    // through atan(y, x): lavapipe's asin and acos are about 2e-4 off
    case VK_U_ASIN: return abs(x) > 1.0 ? asin(x) : atan(x, sqrt((1.0 - x) * (1.0 + x)));
    case VK_U_ACOS: return abs(x) > 1.0 ? acos(x) : atan(sqrt((1.0 - x) * (1.0 + x)), x);
    case VK_U_ATAN: return atan(x);
    case VK_U_SINH: return sinh(x);
    case VK_U_COSH: return cosh(x);
    case VK_U_ASINH: return asinh(x);
    case VK_U_ACOSH: return acosh(x);
    case VK_U_ATANH: return atanh(x);
    case VK_U_CELU: return max(x, 0.0) + min(0.0, a * (exp(x / a) - 1.0));
    case VK_U_THRESHOLDED_RELU: return x > a ? x : 0.0;
    // tests, to bool (unary.comp's _b8 variant); IsInf: a, b say whether
    // +inf, -inf count
    case VK_U_ISNAN: return st_isnan(x) ? 1.0 : 0.0;
    case VK_U_ISINF: return st_isinf(x) && (x > 0.0 ? a != 0.0 : b != 0.0) ? 1.0 : 0.0;
    }
    return x;
}
