/*
 * fastmath.h — f32 row math in forms compilers vectorise: exp(x) for
 * x <= 0, and the max and min of a packed row.
 *
 * GCC does not vectorise a float compare-and-select (it might raise an FP
 * exception the scalar code would not), nor a float max reduction unless
 * NaN and signed zeros are waived; so the range checks and the max/min
 * below compare bit patterns as integers, which it does vectorise.
 *
 * Softmax, LogSoftmax and ReduceLogSumExp only ever exponentiate x - max,
 * which is <= 0, and libm's expf is a call per element that no loop can
 * vectorise.  This is the textbook reduction x = n*ln2 + r, |r| <= ln2/2
 * (ln2 split in two so n*ln2 is exact), e^r by its Taylor series to r^7
 * (truncation below 1.5e-8 relative), and 2^n built in the exponent bits.
 * Error is within 2 ulp of the exact value; below -87 (where e^x is
 * under the smallest normal float) the result is 0; NaN stays NaN; x > 0
 * is outside the domain and gives 1.  It is
 * branch-free and deterministic: the same x gives the same bits on any
 * thread.
 */
#ifndef ST_CPU_FASTMATH_H
#define ST_CPU_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float st_exp_neg_f32(float x)
{
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    const uint32_t minus_0 = 0x80000000u, minus_87 = 0xC2AE0000u;
    /* The range checks compare bit patterns as integers (for x <= 0 they
     * order like -x).  x > 0 and positive NaNs
     * are computed as -0, x below -87 (with -inf, negative NaNs) as -87,
     * so the float-to-int conversion below is always defined. */
    uint32_t ix, cx;
    memcpy(&ix, &x, sizeof ix);
    cx = ix < minus_0 ? minus_0 : ix;
    cx = cx > minus_87 ? minus_87 : cx;
    float xc;
    memcpy(&xc, &cx, sizeof xc);
    float n = (xc * log2e + round_magic) - round_magic;
    float r = xc - n * ln2_hi;
    r = r - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float scale, y;
    memcpy(&scale, &bits, sizeof scale);
    y = p * scale;
    uint32_t iy;
    memcpy(&iy, &y, sizeof iy);
    /* masks, not selects: a select after float math is not if-converted */
    uint32_t keep = 0u - (uint32_t)(ix <= minus_87);               /* underflow: +0 */
    uint32_t nan = 0u - (uint32_t)((ix & 0x7fffffffu) > 0x7f800000u); /* NaN stays NaN */
    iy = ((iy & keep) & ~nan) | (ix & nan);
    memcpy(&y, &iy, sizeof y);
    return y;
}

/* A float's bits as an unsigned key that orders like the float: positive
 * floats get the top bit set, negative ones are inverted. */
static inline uint32_t st_f32_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u ^ ((0u - (u >> 31)) | 0x80000000u);
}

static inline float st_f32_from_key(uint32_t k)
{
    uint32_t u = k ^ ((0u - (1u - (k >> 31))) | 0x80000000u);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The max of v[0..n) (-inf if n == 0); any NaN makes it NaN, as numpy's
 * max does.  A NaN's key is forced above every number's. */
static inline float st_max_f32(const float *v, int64_t n)
{
    uint32_t m = st_f32_key(-INFINITY);
    for (int64_t i = 0; i < n; i++) {
        uint32_t u, k = st_f32_key(v[i]);
        memcpy(&u, &v[i], sizeof u);
        uint32_t nan = 0u - (uint32_t)((u & 0x7fffffffu) > 0x7f800000u);
        k |= nan;
        m = k > m ? k : m;
    }
    return st_f32_from_key(m);
}

/* The min, NaN-propagating the same way (a NaN's key is 0). */
static inline float st_min_f32(const float *v, int64_t n)
{
    uint32_t m = st_f32_key(INFINITY);
    for (int64_t i = 0; i < n; i++) {
        uint32_t u, k = st_f32_key(v[i]);
        memcpy(&u, &v[i], sizeof u);
        uint32_t nan = 0u - (uint32_t)((u & 0x7fffffffu) > 0x7f800000u);
        k &= ~nan;
        m = k < m ? k : m;
    }
    return st_f32_from_key(m);
}

/* erf(x) in a form compilers vectorise (libm's erff is a call per
 * element; GELU as exported by PyTorch is an Erf on every activation of a
 * transformer's feed-forward layer).  |x| < 0.5: the Maclaurin series to
 * x^13 (the next term is under 4e-10 there, 1e-9 of erf(0.5)); beyond:
 * 1 - erfc(|x|) with erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), the
 * Chebyshev fit of Numerical Recipes' erfcc (fractional error under 1.2e-7
 * for every z); with the rounding of 1 - erfc, erf is within 5e-7 relative
 * of the exact value (measured over every float in [-10, 10]: worst 4.2e-7,
 * just past 0.5).  The sign of x is put back as bits.  NaN stays NaN, +-inf give +-1. */
static inline float st_erf_f32(float x)
{
    uint32_t ix;
    memcpy(&ix, &x, sizeof ix);
    uint32_t sign = ix & 0x80000000u, ia = ix & 0x7fffffffu;
    float z;
    memcpy(&z, &ia, sizeof z);
    float z2 = z * z;
    /* 2/sqrt(pi) (z - z^3/3 + z^5/10 - z^7/42 + z^9/216 - z^11/1320 + z^13/9360) */
    float q = 1.0f / 9360.0f;
    q = q * z2 - 1.0f / 1320.0f;
    q = q * z2 + 1.0f / 216.0f;
    q = q * z2 - 1.0f / 42.0f;
    q = q * z2 + 1.0f / 10.0f;
    q = q * z2 - 1.0f / 3.0f;
    q = q * z2 + 1.0f;
    float small = 1.12837916709551257f * z * q;
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    float large = 1.0f - t * st_exp_neg_f32(p - z2);
    uint32_t us, ul;
    memcpy(&us, &small, sizeof us);
    memcpy(&ul, &large, sizeof ul);
    uint32_t m = 0u - (uint32_t)(ia < 0x3f000000u); /* |x| < 0.5 */
    uint32_t r = ((us & m) | (ul & ~m)) | sign;
    float y;
    memcpy(&y, &r, sizeof y);
    return y;
}

/* tanh(x) in a form compilers vectorise (libm's tanhf is a call per
 * element: 54% of a GPT-style decoder whose GELU is the tanh form).
 * |x| < 0.25: the Maclaurin series to x^9 (the next term is under 1e-8
 * relative there); beyond: (1 - e) / (1 + e) with e = exp(-2|x|) <= 0.61,
 * so 1 - e loses nothing; the sign of x is put back as bits.  Within
 * 3e-7 relative (measured over every float in [-10, 10]: worst 1.9e-7,
 * just past 0.25).  NaN stays NaN,
 * +-inf give +-1. */
static inline float st_tanh_f32(float x)
{
    uint32_t ix;
    memcpy(&ix, &x, sizeof ix);
    uint32_t sign = ix & 0x80000000u, ia = ix & 0x7fffffffu;
    float z;
    memcpy(&z, &ia, sizeof z);
    float z2 = z * z;
    /* z - z^3/3 + 2z^5/15 - 17z^7/315 + 62z^9/2835 */
    float q = 62.0f / 2835.0f;
    q = q * z2 - 17.0f / 315.0f;
    q = q * z2 + 2.0f / 15.0f;
    q = q * z2 - 1.0f / 3.0f;
    float small = z + z * z2 * q;
    float e = st_exp_neg_f32(-2.0f * z);
    float large = (1.0f - e) / (1.0f + e);
    uint32_t us, ul;
    memcpy(&us, &small, sizeof us);
    memcpy(&ul, &large, sizeof ul);
    uint32_t m = 0u - (uint32_t)(ia < 0x3e800000u); /* |x| < 0.25 */
    uint32_t r = ((us & m) | (ul & ~m)) | sign;
    float y;
    memcpy(&y, &r, sizeof y);
    return y;
}

#endif
