/*
 * cvt_half.c — see cvt_half.h.  The AVX-512 forms run 16 elements a
 * vector with a masked tail; the CPU is checked once.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/cvt_half.h"

#define ST_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c")))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool fast;

static void probe(void)
{
    const char *off = getenv("STRATA_CPU_NO_AVX512");
    fast = !(off && *off && strcmp(off, "0") != 0) && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq"); /* every AVX-512 CPU has F16C (and clang 14 cannot ask) */
}

static bool use_vec(void)
{
    pthread_once(&once, probe);
    return fast;
}

static inline __mmask16 mask_of(int64_t left) { return (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1); }

/* Loads and stores of 16 elements, masked only for a last partial vector:
 * masked stores run several times slower on some cores (AMD Zen). */
#define LOAD16_U16(m, p) ((m) == 0xffff ? _mm256_loadu_si256((const __m256i *)(p)) : _mm256_maskz_loadu_epi16(m, p))
#define STORE16_U16(p, m, v)                                 \
    do {                                                     \
        if ((m) == 0xffff) _mm256_storeu_si256((__m256i *)(p), v); \
        else _mm256_mask_storeu_epi16(p, m, v);              \
    } while (0)
#define LOAD16_32(m, p) ((m) == 0xffff ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(m, p))
#define STORE16_32(p, m, v)                                  \
    do {                                                     \
        if ((m) == 0xffff) _mm512_storeu_si512(p, v);       \
        else _mm512_mask_storeu_epi32(p, m, v);              \
    } while (0)

ST_AVX512 static void f16_to_f32_512(float *dst, const uint16_t *src, int64_t n)
{
    const __m512i e = _mm512_set1_epi32(0x7c00), mant = _mm512_set1_epi32(0x3ff);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mask_of(n - i);
        __m256i h = LOAD16_U16(m, src + i);
        __m512 f = _mm512_cvtph_ps(h);
        /* NaN (exponent all ones, mantissa non-zero): st_convert keeps the
         * payload as is, where vcvtph2ps sets the quiet bit */
        __m512i w = _mm512_cvtepu16_epi32(h);
        __mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(w, e), e) &
                        _mm512_test_epi32_mask(w, mant);
        if (nan) {
            __m512i bits = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x8000)), 16),
                                           _mm512_or_si512(_mm512_set1_epi32(0x7f800000), _mm512_slli_epi32(_mm512_and_si512(w, mant), 13)));
            f = _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
        }
        STORE16_32(dst + i, m, _mm512_castps_si512(f));
    }
}

ST_AVX512 static void f32_to_f16_512(uint16_t *dst, const float *src, int64_t n)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mask_of(n - i);
        __m512 f = _mm512_castsi512_ps(LOAD16_32(m, src + i));
        __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        /* NaN: st_convert writes sign | 0x7e00, vcvtps2ph keeps payload bits */
        __m512i u = _mm512_castps_si512(f);
        __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
        if (nan) {
            __m256i q = _mm512_cvtepi32_epi16(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)),
                                                               _mm512_set1_epi32(0x7e00)));
            h = _mm256_mask_mov_epi16(h, nan, q);
        }
        STORE16_U16(dst + i, m, h);
    }
}

ST_AVX512 static void bf16_to_f32_512(float *dst, const uint16_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mask_of(n - i);
        __m512i w = _mm512_cvtepu16_epi32(LOAD16_U16(m, src + i));
        STORE16_32(dst + i, m, _mm512_slli_epi32(w, 16));
    }
}

ST_AVX512 static void f32_to_bf16_512(uint16_t *dst, const float *src, int64_t n)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mask_of(n - i);
        __m512i u = LOAD16_32(m, src + i);
        /* round to nearest even on the bits: u + 0x7fff + (bit 16 of u) */
        __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
        r = _mm512_srli_epi32(r, 16);
        __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf);
        r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
        STORE16_U16(dst + i, m, _mm512_cvtepi32_epi16(r));
    }
}

ST_AVX512 static void i32_to_f32_512(float *dst, const int32_t *src, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = mask_of(n - i);
        STORE16_32(dst + i, m, _mm512_castps_si512(_mm512_cvtepi32_ps(LOAD16_32(m, src + i))));
    }
}

void st_cvt_f16_to_f32(float *dst, const uint16_t *src, int64_t n)
{
    if (use_vec()) f16_to_f32_512(dst, src, n);
    else st_convert(ST_F32, dst, ST_F16, src, (size_t)n);
}

void st_cvt_f32_to_f16(uint16_t *dst, const float *src, int64_t n)
{
    if (use_vec()) f32_to_f16_512(dst, src, n);
    else st_convert(ST_F16, dst, ST_F32, src, (size_t)n);
}

void st_cvt_bf16_to_f32(float *dst, const uint16_t *src, int64_t n)
{
    if (use_vec()) bf16_to_f32_512(dst, src, n);
    else st_convert(ST_F32, dst, ST_BF16, src, (size_t)n);
}

void st_cvt_f32_to_bf16(uint16_t *dst, const float *src, int64_t n)
{
    if (use_vec()) f32_to_bf16_512(dst, src, n);
    else st_convert(ST_BF16, dst, ST_F32, src, (size_t)n);
}

void st_cvt_i32_to_f32(float *dst, const int32_t *src, int64_t n)
{
    if (use_vec()) i32_to_f32_512(dst, src, n);
    else st_convert(ST_F32, dst, ST_I32, src, (size_t)n);
}

void st_cvt_row_to_f32(float *dst, st_dtype t, const void *src, int64_t step, int64_t n)
{
    if (n <= 0) return;
    if (t == ST_F32) {
        const float *s = src;
        if (step == 1) memcpy(dst, s, (size_t)n * sizeof *dst);
        else
            for (int64_t i = 0; i < n; i++) dst[i] = s[i * step];
    } else if (t == ST_F16 && step == 1) {
        st_cvt_f16_to_f32(dst, src, n);
    } else if (t == ST_BF16 && step == 1) {
        st_cvt_bf16_to_f32(dst, src, n);
    } else {
        size_t es = st_dtype_size(t);
        for (int64_t i = 0; i < n; i++) dst[i] = st_load_f32(t, (const char *)src + i * step * (int64_t)es);
    }
}

void st_cvt_row_from_f32(st_dtype t, void *dst, int64_t step, const float *src, int64_t n)
{
    if (n <= 0) return;
    if (t == ST_F32) {
        float *d = dst;
        if (step == 1) memmove(d, src, (size_t)n * sizeof *d);
        else
            for (int64_t i = 0; i < n; i++) d[i * step] = src[i];
    } else if (t == ST_F16 && step == 1) {
        st_cvt_f32_to_f16(dst, src, n);
    } else if (t == ST_BF16 && step == 1) {
        st_cvt_f32_to_bf16(dst, src, n);
    } else {
        size_t es = st_dtype_size(t);
        for (int64_t i = 0; i < n; i++) st_store_f32(t, (char *)dst + i * step * (int64_t)es, src[i]);
    }
}

static void f16_f32(void *d, const void *s, int64_t n) { st_cvt_f16_to_f32(d, s, n); }
static void f32_f16(void *d, const void *s, int64_t n) { st_cvt_f32_to_f16(d, s, n); }
static void bf16_f32(void *d, const void *s, int64_t n) { st_cvt_bf16_to_f32(d, s, n); }
static void f32_bf16(void *d, const void *s, int64_t n) { st_cvt_f32_to_bf16(d, s, n); }
static void i32_f32(void *d, const void *s, int64_t n) { st_cvt_i32_to_f32(d, s, n); }

st_cvt_fn st_cvt_vec(st_dtype dst_t, st_dtype src_t)
{
    if (dst_t == ST_F32 && src_t == ST_F16) return f16_f32;
    if (dst_t == ST_F16 && src_t == ST_F32) return f32_f16;
    if (dst_t == ST_F32 && src_t == ST_BF16) return bf16_f32;
    if (dst_t == ST_BF16 && src_t == ST_F32) return f32_bf16;
    if (dst_t == ST_F32 && src_t == ST_I32) return i32_f32;
    return NULL;
}
