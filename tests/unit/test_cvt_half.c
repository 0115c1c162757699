/*
 * test_cvt_half.c — the vector conversions (src/backends/common/cvt_half.h)
 * give exactly st_convert's bits.
 *
 * Every f16 and every bf16 bit pattern to f32; to f16 and bf16, every f32
 * that is an f16 or bf16 value, its neighbours one ulp away, the f32s on
 * and beside every rounding midpoint between two 16-bit neighbours (ties
 * both ways), every 61st f32 bit pattern (70 million: subnormals, NaN
 * payloads, overflow), and int32 -> f32 around the points where f32 stops
 * being exact.  Lengths and offsets off the vector width exercise the
 * masked tails.  CTest runs it as is and with STRATA_CPU_NO_AVX512=1.
 */
#include <stdlib.h>

#include "backends/common/cvt_half.h"
#include "check.h"

#define CHUNK 4093 /* prime: tails of every length mod 16 */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Converts f32 values to dst_t through st_cvt_vec and st_convert, in
 * chunks at varying offsets, and counts the differing results. */
static long to16(const float *x, int64_t n, st_dtype t, uint16_t *got, uint16_t *want)
{
    st_cvt_fn fn = st_cvt_vec(t, ST_F32);
    long bad = 0;
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK, o = i % 7;
        fn(got + o, x + i, m);
        st_convert(t, want, ST_F32, x + i, (size_t)m);
        for (int64_t j = 0; j < m; j++)
            if (got[o + j] != want[j] && bad++ < 5)
                CHECKF(false, "%s: f32 %08x gives %04x, st_convert %04x", st_dtype_name(t), f32_bits(x[i + j]), got[o + j],
                       want[j]);
    }
    return bad;
}

static void from16(st_dtype t)
{
    uint16_t *h = malloc(65536 * sizeof *h);
    float *got = malloc((65536 + 16) * sizeof *got), *want = malloc(65536 * sizeof *want);
    if (!h || !got || !want) {
        CHECK(!"out of memory");
        return;
    }
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    st_cvt_fn fn = st_cvt_vec(ST_F32, t);
    st_convert(ST_F32, want, t, h, 65536);
    long bad = 0;
    for (int64_t i = 0; i < 65536; i += CHUNK) {
        int64_t m = 65536 - i < CHUNK ? 65536 - i : CHUNK, o = i % 5;
        fn(got + o, h + i, m);
        for (int64_t j = 0; j < m; j++)
            if (f32_bits(got[o + j]) != f32_bits(want[i + j]) && bad++ < 5)
                CHECKF(false, "%s %04x gives f32 %08x, st_convert %08x", st_dtype_name(t), (unsigned)(i + j),
                       f32_bits(got[o + j]), f32_bits(want[i + j]));
    }
    CHECKF(bad == 0, "%s -> f32: %ld of 65536 patterns differ", st_dtype_name(t), bad);
    free(h), free(got), free(want);
}

/* f32s on and around the 16-bit values of t and the midpoints between
 * neighbours (each 16-bit pattern's value, +-1 ulp, the midpoint to the
 * next pattern and +-1 ulp of it). */
static void to16_boundaries(st_dtype t)
{
    int64_t n = 65536 * 6;
    float *x = malloc((size_t)n * sizeof *x);
    uint16_t *got = malloc((size_t)(n + 16) * sizeof *got), *want = malloc(CHUNK * sizeof *want);
    if (!x || !got || !want) {
        CHECK(!"out of memory");
        return;
    }
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t a = (uint16_t)i, b = (uint16_t)(i + 1);
        float fa, fb;
        st_convert(ST_F32, &fa, t, &a, 1);
        st_convert(ST_F32, &fb, t, &b, 1);
        uint32_t ua = f32_bits(fa), ub = f32_bits(fb);
        /* the midpoint of two same-sign finite neighbours is the mean of their bits */
        uint32_t mid = (uint32_t)(((uint64_t)ua + ub) / 2);
        float *p = x + 6 * (int64_t)i;
        p[0] = fa;
        p[1] = bits_f32(ua + 1);
        p[2] = bits_f32(ua - 1);
        p[3] = bits_f32(mid);
        p[4] = bits_f32(mid + 1);
        p[5] = bits_f32(mid - 1);
    }
    long bad = to16(x, n, t, got, want);
    CHECKF(bad == 0, "f32 -> %s at the boundaries: %ld differ", st_dtype_name(t), bad);
    free(x), free(got), free(want);
}

static void to16_sweep(void)
{
    int64_t n = ((int64_t)1 << 32) / 61 + 1;
    float *x = malloc(CHUNK * 16 * sizeof *x);
    uint16_t *got = malloc((CHUNK * 16 + 16) * sizeof *got), *want = malloc(CHUNK * sizeof *want);
    if (!x || !got || !want) {
        CHECK(!"out of memory");
        return;
    }
    long bad16 = 0, badb = 0;
    for (int64_t i = 0; i < n; i += CHUNK * 16) {
        int64_t m = n - i < CHUNK * 16 ? n - i : CHUNK * 16;
        for (int64_t j = 0; j < m; j++) x[j] = bits_f32((uint32_t)((i + j) * 61));
        bad16 += to16(x, m, ST_F16, got, want);
        badb += to16(x, m, ST_BF16, got, want);
    }
    CHECKF(bad16 == 0, "f32 -> f16 sweep: %ld differ", bad16);
    CHECKF(badb == 0, "f32 -> bf16 sweep: %ld differ", badb);
    free(x), free(got), free(want);
}

static void from_i32(void)
{
    enum { N = 40000 };
    int32_t *x = malloc(N * sizeof *x);
    float *got = malloc((N + 16) * sizeof *got), *want = malloc(N * sizeof *want);
    if (!x || !got || !want) {
        CHECK(!"out of memory");
        return;
    }
    test_rng rng = {99};
    for (int i = 0; i < N; i++) {
        int64_t v;
        switch (i % 4) {
        case 0: v = (int64_t)(int32_t)rng_u32(&rng); break;
        case 1: v = ((int64_t)1 << (i % 31)) + rng_range(&rng, -3, 3); break;   /* around powers of 2 */
        case 2: v = -(((int64_t)1 << (i % 31)) + rng_range(&rng, -3, 3)); break;
        default: v = i % 8 == 3 ? INT32_MIN + rng_range(&rng, 0, 300) : INT32_MAX - rng_range(&rng, 0, 300); break;
        }
        if (v > INT32_MAX) v = INT32_MAX;
        if (v < INT32_MIN) v = INT32_MIN;
        x[i] = (int32_t)v;
    }
    st_cvt_vec(ST_F32, ST_I32)(got + 3, x, N);
    st_convert(ST_F32, want, ST_I32, x, N);
    long bad = 0;
    for (int i = 0; i < N; i++)
        if (f32_bits(got[3 + i]) != f32_bits(want[i]) && bad++ < 5) CHECKF(false, "i32 %d", x[i]);
    CHECKF(bad == 0, "i32 -> f32: %ld differ", bad);
    free(x), free(got), free(want);
}

int main(void)
{
    CHECK(st_cvt_vec(ST_F32, ST_F16) && st_cvt_vec(ST_F16, ST_F32) && st_cvt_vec(ST_F32, ST_BF16) &&
          st_cvt_vec(ST_BF16, ST_F32) && st_cvt_vec(ST_F32, ST_I32));
    CHECK(st_cvt_vec(ST_F64, ST_F16) == NULL);
    from16(ST_F16);
    from16(ST_BF16);
    to16_boundaries(ST_F16);
    to16_boundaries(ST_BF16);
    to16_sweep();
    from_i32();
    return check_exit("test_cvt_half");
}
