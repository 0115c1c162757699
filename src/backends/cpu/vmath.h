/*
 * vmath.h — the GEMM epilogue's vector math on AVX-512 (2^t, sigmoid,
 * GELU and the fused activations), shared by the f32 kernels (gemm_avx512.c) and
 * the bf16 ones (gemm_bf16.c) so both apply the same epilogue bit for
 * bit.  Every function carries the AVX-512 target attribute and is static
 * inline: a caller compiled for a superset of these features (bf16)
 * inlines them, and callers run only after the CPU has been checked.
 */
#ifndef ST_CPU_VMATH_H
#define ST_CPU_VMATH_H

#include <immintrin.h>

#include "ops/elementwise.h"

#define ST_VMATH __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))


/* 2^t for t <= 126 (NaN passes): 2^n * 2^f with n = round(t), |f| <= 1/2,
 * 2^f by a degree-5 polynomial fitted to minimise the relative error on
 * [-1/2, 1/2] (below 8e-8, about 2e-7 in f32 arithmetic), and vscalefps
 * for 2^n, which flushes through denormals to 0 below 2^-149. */
ST_VMATH static inline __m512 v_exp2(__m512 t)
{
    __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_set1_ps(0.0013278163969516754f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.009675555862486362f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.055507078766822815f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24022118747234344f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931469440460205f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000001192092896f));
    return _mm512_scalef_ps(p, n);
}

/* 1 / (1 + e^-x) as 1 / (1 + 2^(-x log2 e)): the exponent is clamped at
 * 126 (x below about -87, where the result is 0 to f32 precision) so the
 * sum stays finite, then vrcp14ps and one Newton step.  Rounding x log2 e
 * costs at most about 1e-6 relative in e^-x for |x| < 20, a quarter of
 * that in the result; fourteen operations a vector, which matters in a
 * conv's epilogue after as few as 27 multiply-adds per output. */
ST_VMATH static inline __m512 v_sigmoid(__m512 x)
{
    /* min returns its second operand when either is NaN: NaN passes */
    __m512 t = _mm512_min_ps(_mm512_set1_ps(126.0f), _mm512_mul_ps(x, _mm512_set1_ps(-1.44269504088896341f)));
    __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), v_exp2(t));
    __m512 r = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
}

/* GELU, 0.5 x (1 + erf(x / sqrt 2)), with fastmath.h's erf (the same
 * series below 0.5 and the same erfc fit beyond) in fused multiply-adds,
 * 1 / (1 + z/2) by vrcp14ps and a Newton step, and e^y as 2^(y log2 e);
 * |x / sqrt 2| is clamped at 10 in the erfc branch (erf is 1 there in
 * f32) so that infinities give +-1, not NaN.  A NaN x stays NaN.  About
 * 40% faster than the scalar loop compiled without contraction (ISO C
 * rounds every product); within 2e-7 |x| of the exact GELU, as the
 * scalar form is (bench/RESULTS.md). */
ST_VMATH static inline __m512 v_gelu(__m512 x)
{
    __m512 u = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
    __m512 z = _mm512_abs_ps(u);
    __m512 z2 = _mm512_mul_ps(z, z);
    __m512 q = _mm512_set1_ps(1.0f / 9360.0f);
    q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(-1.0f / 1320.0f));
    q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(1.0f / 216.0f));
    q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(-1.0f / 42.0f));
    q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(1.0f / 10.0f));
    q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(-1.0f / 3.0f));
    q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(1.0f));
    __m512 small = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(1.12837916709551257f), z), q);
    /* min returns its second operand when either is NaN */
    __m512 zc = _mm512_min_ps(z, _mm512_set1_ps(10.0f));
    __m512 d = _mm512_fmadd_ps(zc, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f));
    __m512 r = _mm512_rcp14_ps(d);
    __m512 t = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    __m512 y = _mm512_fnmadd_ps(zc, zc, p);
    __m512 e = v_exp2(_mm512_mul_ps(y, _mm512_set1_ps(1.44269504088896341f)));
    __m512 large = _mm512_fnmadd_ps(t, e, _mm512_set1_ps(1.0f));
    __m512 ea = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(z, _mm512_set1_ps(0.5f), _CMP_LT_OQ), large, small);
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(u), _mm512_set1_epi32((int)0x80000000u));
    __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(ea), sign));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}

typedef struct vact {
    int code;          /* st_unary, or -1: none */
    __m512 a, b;
} vact;

ST_VMATH static inline vact vact_of(const st_epilogue *e)
{
    vact v;
    v.code = e && e->act ? e->act - 1 : -1;
    v.a = _mm512_set1_ps(e ? e->alpha : 0.0f);
    v.b = _mm512_set1_ps(e ? e->beta : 0.0f);
    return v;
}

ST_VMATH static inline __m512 v_act(const vact *v, __m512 x)
{
    switch (v->code) {
    case ST_U_RELU: return _mm512_max_ps(x, _mm512_setzero_ps());
    case ST_U_SIGMOID: return v_sigmoid(x);
    case ST_U_SILU: return _mm512_mul_ps(x, v_sigmoid(x));
    case ST_U_LEAKY_RELU:
        return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, v->a);
    case ST_U_HARD_SIGMOID:
        return _mm512_max_ps(_mm512_setzero_ps(), _mm512_min_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(v->a, x, v->b)));
    case ST_U_HARD_SWISH: {
        __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
        t = _mm512_max_ps(_mm512_setzero_ps(), _mm512_min_ps(_mm512_set1_ps(1.0f), t));
        return _mm512_mul_ps(x, t);
    }
    /* min/max return their second operand on a NaN: x goes second, so
     * a NaN stays NaN, as in the scalar Clip (ops/scalar_math.h) */
    case ST_U_CLIP: return _mm512_min_ps(v->b, _mm512_max_ps(v->a, x)); /* max wins where min > max; NaN passes */
    case ST_U_GELU: return v_gelu(x);
    default: return x;
    }
}

#endif
