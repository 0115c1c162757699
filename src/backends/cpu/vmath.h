/*
 * vmath.h — the GEMM epilogue's vector math on AVX-512 (2^t, sigmoid and
 * the fused activations), shared by the f32 kernels (gemm_avx512.c) and
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
    case ST_U_CLIP: return _mm512_min_ps(_mm512_max_ps(x, v->a), v->b);
    default: return x;
    }
}

#endif
