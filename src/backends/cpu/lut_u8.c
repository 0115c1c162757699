/*
 * lut_u8.c — see lut_u8.h.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/lut_u8.h"

#define ST_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool fast;

static void probe(void)
{
    const char *off = getenv("STRATA_CPU_NO_AVX512");
    fast = !(off && *off && strcmp(off, "0") != 0) && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
}

/* vpermi2b indexes 128 bytes (two registers) with an index's low 7 bits:
 * one lookup in each half of the table, then the index's top bit picks.
 * The last partial vector loads masked (masked loads cost what plain ones
 * do) and goes out through a bounce buffer, as byte-masked stores run
 * several times slower on AMD Zen. */
ST_VBMI static void lut_vbmi(const uint8_t *table, const uint8_t *x, uint8_t *y, int64_t n)
{
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
    const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i v = _mm512_loadu_si512(x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
    if (i < n) {
        __mmask64 mk = (__mmask64)-1 >> (64 - (n - i));
        __m512i v = _mm512_maskz_loadu_epi8(mk, x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
        uint8_t out[64];
        _mm512_storeu_si512(out, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
        memcpy(y + i, out, (size_t)(n - i));
    }
}

void st_lut_u8(const uint8_t table[256], const uint8_t *x, uint8_t *y, int64_t n)
{
    pthread_once(&once, probe);
    if (fast) {
        lut_vbmi(table, x, y, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) y[i] = table[x[i]];
}
