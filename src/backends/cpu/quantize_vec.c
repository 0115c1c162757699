/*
 * quantize_vec.c — see quantize_vec.h.
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/quantize_vec.h"

#define ST_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool fast;

static void probe(void)
{
    const char *off = getenv("STRATA_CPU_NO_AVX512");
    fast = !(off && *off && strcmp(off, "0") != 0) && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
}

static inline __mmask16 mask_of(int64_t left) { return (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1); }

/* min(x, acc) with x first: a NaN x or a tie keeps acc, as `if (v < mn)`
 * does.  Four accumulators each way hide the latency; min and max are
 * exact, so the order of the final combination does not matter. */
ST_AVX512 static void minmax512(const float *x, int64_t n, float *mn, float *mx)
{
    __m512 lo[4], hi[4];
    for (int v = 0; v < 4; v++) {
        lo[v] = _mm512_set1_ps(*mn);
        hi[v] = _mm512_set1_ps(*mx);
    }
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int v = 0; v < 4; v++) {
            __m512 a = _mm512_loadu_ps(x + i + 16 * v);
            lo[v] = _mm512_min_ps(a, lo[v]);
            hi[v] = _mm512_max_ps(a, hi[v]);
        }
    for (; i < n; i += 16) {
        /* masked-off lanes load acc's own values: they change nothing */
        __mmask16 m = mask_of(n - i);
        __m512 a = _mm512_mask_loadu_ps(lo[0], m, x + i), b = _mm512_mask_loadu_ps(hi[0], m, x + i);
        lo[0] = _mm512_min_ps(a, lo[0]);
        hi[0] = _mm512_max_ps(b, hi[0]);
    }
    float l[16], h[16];
    _mm512_storeu_ps(l, _mm512_min_ps(_mm512_min_ps(lo[0], lo[1]), _mm512_min_ps(lo[2], lo[3])));
    _mm512_storeu_ps(h, _mm512_max_ps(_mm512_max_ps(hi[0], hi[1]), _mm512_max_ps(hi[2], hi[3])));
    for (int v = 0; v < 16; v++) {
        if (l[v] < *mn) *mn = l[v];
        if (h[v] > *mx) *mx = h[v];
    }
}

void st_minmax_f32(const float *x, int64_t n, float *mn, float *mx)
{
    pthread_once(&once, probe);
    if (fast) {
        minmax512(x, n, mn, mx);
        return;
    }
    float a = *mn, b = *mx;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < a) a = x[i];
        if (x[i] > b) b = x[i];
    }
    *mn = a;
    *mx = b;
}

ST_AVX512 static void quantize512(const float *x, int64_t n, float scale, int32_t zp, uint8_t *y)
{
    const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps((float)(0 - zp)), hi = _mm512_set1_ps((float)(255 - zp));
    const __m512i z = _mm512_set1_epi32(zp);
    int64_t i = 0;
    /* full vectors with plain loads and stores: masked byte stores cost
     * several times more on some cores (AMD Zen) */
    for (; i + 16 <= n; i += 16) {
        __m512 f = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
        f = _mm512_roundscale_ps(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        f = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(f, f, _CMP_ORD_Q), f);
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), z)));
    }
    if (i < n) {
        __mmask16 m = mask_of(n - i);
        __m512 f = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), s);
        f = _mm512_roundscale_ps(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        f = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(f, f, _CMP_ORD_Q), f);
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), z)));
    }
}

void st_quantize_u8_f32(const float *x, int64_t n, float scale, int32_t zp, uint8_t *y)
{
    pthread_once(&once, probe);
    if (fast) {
        quantize512(x, n, scale, zp, y);
        return;
    }
    float lo = (float)(0 - zp), hi = (float)(255 - zp);
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] / scale;
        float r = isnan(v) ? 0.0f : rintf(v);
        r = r < lo ? lo : r > hi ? hi : r;
        y[i] = (uint8_t)((int32_t)r + zp);
    }
}
