/*
 * test_dtype.c — f16 / bf16 conversions and st_convert (src/core/dtype.h).
 *
 * The reference rounding here is deliberately slow and obvious: it decodes
 * candidate bit patterns of the target format to their exact values,
 * binary-searches the two neighbours of x, and picks the nearer one (the
 * even one on a tie), overflowing to infinity the way IEEE 754 does: as if
 * the format had one more binade, whose first value is then infinity.
 * Every value involved (f32, f16, bf16, f64, any int64/uint64) is exact in
 * long double's 64-bit significand, and so are the two differences
 * compared (Sterbenz: the neighbours are within a factor of two of x).
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"

_Static_assert(LDBL_MANT_DIG >= 64, "the reference needs an exact 64-bit significand");

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ---- the reference: binary floating-point formats described by numbers ---- */

typedef struct fmt {
    const char *name;
    int mant;          /* stored mantissa bits */
    int exp;           /* exponent bits */
} fmt;

static const fmt F16 = {"f16", 10, 5}, BF16 = {"bf16", 7, 8}, F32 = {"f32", 23, 8}, F64 = {"f64", 52, 11};

static uint64_t fmt_inf(fmt f) { return (((uint64_t)1 << f.exp) - 1) << f.mant; }
static int fmt_bias(fmt f) { return (1 << (f.exp - 1)) - 1; }

/* Exact value of a non-negative finite pattern; the +inf pattern decodes
 * to 2^(emax+1), the first value of the binade the format lacks. */
static long double fmt_value(fmt f, uint64_t bits)
{
    uint64_t e = bits >> f.mant, m = bits & (((uint64_t)1 << f.mant) - 1);
    int bias = fmt_bias(f);
    if (e == 0) return ldexpl((long double)m, 1 - bias - f.mant);
    return ldexpl((long double)(m + ((uint64_t)1 << f.mant)), (int)e - bias - f.mant);
}

/* Bits of x rounded to nearest, ties to even.  x must not be NaN: the
 * callers handle NaN themselves. */
static uint64_t ref_round(fmt f, long double x)
{
    uint64_t sign = (uint64_t)1 << (f.mant + f.exp);
    uint64_t s = signbit(x) ? sign : 0;
    long double a = fabsl(x);
    uint64_t inf = fmt_inf(f);
    if (isinf(a)) return s | inf;
    /* largest finite pattern p with value(p) <= a */
    uint64_t lo = 0, hi = inf - 1;
    if (fmt_value(f, hi) <= a) {
        lo = hi;
    } else {
        while (hi - lo > 1) { /* invariant: value(lo) <= a < value(hi) */
            uint64_t mid = lo + (hi - lo) / 2;
            if (fmt_value(f, mid) <= a) lo = mid;
            else hi = mid;
        }
    }
    long double below = a - fmt_value(f, lo), above = fmt_value(f, lo + 1) - a;
    uint64_t r;
    if (below < above) r = lo;
    else if (above < below) r = lo + 1;
    else r = (lo & 1) ? lo + 1 : lo;
    return s | r;
}

static long double f16_value(uint16_t h)
{
    long double v;
    if ((h & 0x7c00) == 0x7c00) v = (h & 0x3ff) ? NAN : INFINITY;
    else v = fmt_value(F16, h & 0x7fff);
    return (h & 0x8000) ? -v : v;
}

static long double bf16_value(uint16_t b)
{
    long double v;
    if ((b & 0x7f80) == 0x7f80) v = (b & 0x7f) ? NAN : INFINITY;
    else v = fmt_value(BF16, b & 0x7fff);
    return (b & 0x8000) ? -v : v;
}

static bool f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

/* ---- decoding: every f16 and bf16 pattern ---- */

static void test_exhaustive_f16(void)
{
    long bad_decode = 0, bad_round_trip = 0, bad_nan = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = st_f16_to_f32((uint16_t)h);
        long double want = f16_value((uint16_t)h);
        if (f16_is_nan((uint16_t)h)) {
            if (!isnan(f) || !!signbit(f) != !!(h & 0x8000)) bad_nan++;
            uint16_t back = st_f32_to_f16(f);
            /* NaN stays NaN, and keeps its sign */
            if (!f16_is_nan(back) || (back & 0x8000) != (h & 0x8000)) bad_nan++;
            continue;
        }
        if ((long double)f != want || !!signbit(f) != !!(h & 0x8000)) {
            bad_decode++;
            CHECKF(0, "f16 0x%04x decodes to %a, expected %La", h, f, want);
        }
        uint16_t back = st_f32_to_f16(f);
        if (back != h) {
            bad_round_trip++;
            CHECKF(0, "f16 0x%04x -> f32 %a -> f16 0x%04x", h, f, back);
        }
    }
    CHECKF(bad_decode == 0, "%ld f16 patterns decode wrongly", bad_decode);
    CHECKF(bad_round_trip == 0, "%ld f16 patterns do not round-trip through f32", bad_round_trip);
    CHECKF(bad_nan == 0, "%ld f16 NaN patterns are not NaN after a round trip", bad_nan);
}

static void test_exhaustive_bf16(void)
{
    long bad_decode = 0, bad_round_trip = 0, bad_nan = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float f = st_bf16_to_f32((uint16_t)b);
        long double want = bf16_value((uint16_t)b);
        if (bf16_is_nan((uint16_t)b)) {
            if (!isnan(f) || !!signbit(f) != !!(b & 0x8000)) bad_nan++;
            uint16_t back = st_f32_to_bf16(f);
            if (!bf16_is_nan(back) || (back & 0x8000) != (b & 0x8000)) bad_nan++;
            continue;
        }
        if ((long double)f != want || !!signbit(f) != !!(b & 0x8000)) {
            bad_decode++;
            CHECKF(0, "bf16 0x%04x decodes to %a, expected %La", b, f, want);
        }
        /* bf16 is the top half of an f32: decoding is a shift */
        CHECK(f32_bits(f) == (uint32_t)b << 16);
        uint16_t back = st_f32_to_bf16(f);
        if (back != b) {
            bad_round_trip++;
            CHECKF(0, "bf16 0x%04x -> f32 %a -> bf16 0x%04x", b, f, back);
        }
    }
    CHECKF(bad_decode == 0, "%ld bf16 patterns decode wrongly", bad_decode);
    CHECKF(bad_round_trip == 0, "%ld bf16 patterns do not round-trip through f32", bad_round_trip);
    CHECKF(bad_nan == 0, "%ld bf16 NaN patterns are not NaN after a round trip", bad_nan);
}

/* ---- encoding: named cases ---- */

static void expect_f16(float x, uint16_t want)
{
    uint16_t got = st_f32_to_f16(x);
    CHECKF(got == want, "st_f32_to_f16(%a) = 0x%04x, expected 0x%04x", x, got, want);
}

static void expect_bf16(float x, uint16_t want)
{
    uint16_t got = st_f32_to_bf16(x);
    CHECKF(got == want, "st_f32_to_bf16(%a) = 0x%04x, expected 0x%04x", x, got, want);
}

static void test_f16_cases(void)
{
    expect_f16(0.0f, 0x0000);
    expect_f16(-0.0f, 0x8000);
    expect_f16(1.0f, 0x3c00);
    expect_f16(-2.0f, 0xc000);
    expect_f16(65504.0f, 0x7bff);                     /* largest finite */
    expect_f16(nextafterf(65520.0f, 0.0f), 0x7bff);  /* just below the overflow tie */
    expect_f16(65520.0f, 0x7c00);                     /* tie: 65504 is odd, so up to inf */
    expect_f16(-65520.0f, 0xfc00);
    expect_f16(1e6f, 0x7c00);
    expect_f16(FLT_MAX, 0x7c00);
    expect_f16(-FLT_MAX, 0xfc00);
    expect_f16(INFINITY, 0x7c00);
    expect_f16(-INFINITY, 0xfc00);
    /* ties to even in the normal range */
    expect_f16(1.0f + 0x1p-11f, 0x3c00);              /* 1 + half ulp: down to even */
    expect_f16(1.0f + 3 * 0x1p-11f, 0x3c02);          /* 1 + 1.5 ulp: up to even */
    expect_f16(nextafterf(1.0f + 0x1p-11f, 2.0f), 0x3c01);
    expect_f16(nextafterf(1.0f + 3 * 0x1p-11f, 0.0f), 0x3c01);
    expect_f16(2048.0f + 1.0f, 0x6800);               /* 2049: tie between 2048 and 2050 */
    expect_f16(2048.0f + 3.0f, 0x6802);
    /* subnormals: the ulp is 2^-24 */
    expect_f16(0x1p-14f, 0x0400);                     /* smallest normal */
    expect_f16(0x1p-24f, 0x0001);                     /* smallest subnormal */
    expect_f16(0x1p-25f, 0x0000);                     /* tie: down to even zero */
    expect_f16(nextafterf(0x1p-25f, 1.0f), 0x0001);
    expect_f16(-0x1p-25f, 0x8000);                    /* rounds to a negative zero */
    expect_f16(3 * 0x1p-25f, 0x0002);                 /* 1.5 ulp: up to even */
    expect_f16(5 * 0x1p-25f, 0x0002);                 /* 2.5 ulp: down to even */
    expect_f16(0x3ff * 0x1p-24f, 0x03ff);             /* largest subnormal */
    expect_f16(0x3ffp-24f + 0x1p-25f, 0x0400);        /* tie: up into the normals */
    expect_f16(0x1p-149f, 0x0000);                    /* f32 subnormal */
    expect_f16(-0x1p-149f, 0x8000);
    expect_f16(0x1p-30f, 0x0000);
    /* NaN stays NaN: a quiet NaN, a signalling NaN whose payload is only in
     * the low bits (a plain shift would turn it into an infinity), and a
     * negative NaN */
    uint16_t n1 = st_f32_to_f16(bits_f32(0x7fc00000u));
    uint16_t n2 = st_f32_to_f16(bits_f32(0x7f800001u));
    uint16_t n3 = st_f32_to_f16(bits_f32(0xff800001u));
    CHECKF(f16_is_nan(n1), "0x%04x", n1);
    CHECKF(f16_is_nan(n2), "0x%04x", n2);
    CHECKF(f16_is_nan(n3) && (n3 & 0x8000), "0x%04x", n3);
}

static void test_bf16_cases(void)
{
    expect_bf16(0.0f, 0x0000);
    expect_bf16(-0.0f, 0x8000);
    expect_bf16(1.0f, 0x3f80);
    expect_bf16(bits_f32(0x3f808000u), 0x3f80);       /* tie: down to even */
    expect_bf16(bits_f32(0x3f818000u), 0x3f82);       /* tie: up to even */
    expect_bf16(bits_f32(0x3f808001u), 0x3f81);
    expect_bf16(bits_f32(0x3f807fffu), 0x3f80);
    expect_bf16(bits_f32(0x7f7f7fffu), 0x7f7f);       /* stays the largest finite */
    expect_bf16(bits_f32(0x7f7f8000u), 0x7f80);       /* tie, odd: overflows to inf */
    expect_bf16(FLT_MAX, 0x7f80);
    expect_bf16(-FLT_MAX, 0xff80);
    expect_bf16(INFINITY, 0x7f80);
    expect_bf16(-INFINITY, 0xff80);
    expect_bf16(bits_f32(0x00008000u), 0x0000);       /* subnormal tie: down to even zero */
    expect_bf16(bits_f32(0x80008000u), 0x8000);
    expect_bf16(bits_f32(0x00018000u), 0x0002);
    expect_bf16(bits_f32(0x00008001u), 0x0001);
    expect_bf16(bits_f32(0x007fffffu), 0x0080);       /* largest f32 subnormal rounds up to normal */
    uint16_t n1 = st_f32_to_bf16(bits_f32(0x7fc00000u));
    uint16_t n2 = st_f32_to_bf16(bits_f32(0x7f800001u));
    uint16_t n3 = st_f32_to_bf16(bits_f32(0xff800001u));
    uint16_t n4 = st_f32_to_bf16(bits_f32(0x7fffffffu)); /* rounding must not carry a NaN into the sign */
    CHECKF(bf16_is_nan(n1), "0x%04x", n1);
    CHECKF(bf16_is_nan(n2), "0x%04x", n2);
    CHECKF(bf16_is_nan(n3) && (n3 & 0x8000), "0x%04x", n3);
    CHECKF(bf16_is_nan(n4) && !(n4 & 0x8000), "0x%04x", n4);
}

/* ---- encoding: against the reference ---- */

static long f16_mismatches, bf16_mismatches;

static void compare_f16(float x)
{
    uint16_t got = st_f32_to_f16(x);
    if (isnan(x)) {
        if (!f16_is_nan(got)) {
            f16_mismatches++;
            CHECKF(0, "st_f32_to_f16(NaN 0x%08x) = 0x%04x, not a NaN", f32_bits(x), got);
        }
        return;
    }
    uint16_t want = (uint16_t)ref_round(F16, x);
    if (got != want) {
        f16_mismatches++;
        CHECKF(0, "st_f32_to_f16(%a = 0x%08x) = 0x%04x, reference 0x%04x", x, f32_bits(x), got, want);
    }
}

static void compare_bf16(float x)
{
    uint16_t got = st_f32_to_bf16(x);
    if (isnan(x)) {
        if (!bf16_is_nan(got)) {
            bf16_mismatches++;
            CHECKF(0, "st_f32_to_bf16(NaN 0x%08x) = 0x%04x, not a NaN", f32_bits(x), got);
        }
        return;
    }
    uint16_t want = (uint16_t)ref_round(BF16, x);
    if (got != want) {
        bf16_mismatches++;
        CHECKF(0, "st_f32_to_bf16(%a = 0x%08x) = 0x%04x, reference 0x%04x", x, f32_bits(x), got, want);
    }
}

static void test_against_reference(void)
{
    test_rng r = {0x5eed0001};
    /* any f32 bit pattern */
    for (int i = 0; i < 400000; i++) {
        float x = bits_f32(rng_u32(&r));
        compare_f16(x);
        compare_bf16(x);
    }
    /* f32s whose exponent is in or near the f16 range, where rounding is
     * interesting (2^-26 .. 2^17) */
    for (int i = 0; i < 400000; i++) {
        uint32_t u = rng_u32(&r);
        uint32_t e = (uint32_t)rng_range(&r, 127 - 26, 127 + 17);
        u = (u & 0x807fffffu) | e << 23;
        compare_f16(bits_f32(u));
        compare_bf16(bits_f32(u));
    }
    /* Near-halfway cases, exhaustively: the midpoint between every pair of
     * neighbouring f16 (and bf16) values, and the f32 either side of it.
     * Midpoints are exact in f32: they need one bit more than the format. */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        long double mid = (fmt_value(F16, h) + fmt_value(F16, h + 1)) / 2;
        float m = (float)mid;
        CHECK((long double)m == mid);
        float xs[3] = {m, nextafterf(m, 0.0f), nextafterf(m, INFINITY)};
        for (int k = 0; k < 3; k++) {
            compare_f16(xs[k]);
            compare_f16(-xs[k]);
        }
    }
    for (uint32_t b = 0; b < 0x7f80; b++) {
        long double mid = (fmt_value(BF16, b) + fmt_value(BF16, b + 1)) / 2;
        float m = (float)mid; /* the last midpoint, past FLT_MAX, is not exact: that is fine */
        float xs[3] = {m, nextafterf(m, 0.0f), nextafterf(m, INFINITY)};
        for (int k = 0; k < 3; k++) {
            compare_bf16(xs[k]);
            compare_bf16(-xs[k]);
        }
    }
    CHECKF(f16_mismatches == 0, "%ld f32 -> f16 conversions differ from the reference", f16_mismatches);
    CHECKF(bf16_mismatches == 0, "%ld f32 -> bf16 conversions differ from the reference", bf16_mismatches);
}

/* st_load_f32 / st_store_f32 are the inline forms kernels use: they must
 * agree with the functions above. */
static void test_load_store(void)
{
    test_rng r = {0x5eed0002};
    for (int i = 0; i < 20000; i++) {
        float x = bits_f32(rng_u32(&r));
        uint16_t h, b;
        st_store_f32(ST_F16, &h, x);
        st_store_f32(ST_BF16, &b, x);
        CHECK(h == st_f32_to_f16(x));
        CHECK(b == st_f32_to_bf16(x));
        float fh = st_load_f32(ST_F16, &h), fb = st_load_f32(ST_BF16, &b);
        CHECK(f32_bits(fh) == f32_bits(st_f16_to_f32(h)));
        CHECK(f32_bits(fb) == f32_bits(st_bf16_to_f32(b)));
    }
}

/* ---- st_convert between every pair of dtypes ---- */

static const st_dtype ALL[] = {ST_F32, ST_U8, ST_I8, ST_U16, ST_I16, ST_I32, ST_I64,
                               ST_BOOL, ST_F16, ST_F64, ST_U32, ST_U64, ST_BF16};
#define N_ALL ((int)(sizeof ALL / sizeof *ALL))

static bool is_float(st_dtype t) { return t == ST_F32 || t == ST_F64 || t == ST_F16 || t == ST_BF16; }

static fmt fmt_of(st_dtype t)
{
    switch (t) {
    case ST_F16: return F16;
    case ST_BF16: return BF16;
    case ST_F32: return F32;
    default: return F64;
    }
}

static int int_bits(st_dtype t) { return (int)st_dtype_size(t) * 8; }
static bool int_signed(st_dtype t) { return t == ST_I8 || t == ST_I16 || t == ST_I32 || t == ST_I64; }

/* A source element, known exactly: its value as a long double (NaN and
 * infinities included) and, for integers, its 64-bit pattern. */
typedef struct exact {
    long double v;
    uint64_t bits; /* two's complement, for integer sources */
    bool is_int;
} exact;

static exact read_exact(st_dtype t, const void *p)
{
    exact e = {0, 0, false};
    switch (t) {
    case ST_F32: e.v = *(const float *)p; break;
    case ST_F64: e.v = *(const double *)p; break;
    case ST_F16: e.v = f16_value(*(const uint16_t *)p); break;
    case ST_BF16: e.v = bf16_value(*(const uint16_t *)p); break;
    case ST_BOOL: e.is_int = true; e.bits = *(const uint8_t *)p != 0; break;
    case ST_I8: e.is_int = true; e.bits = (uint64_t)(int64_t)*(const int8_t *)p; break;
    case ST_I16: e.is_int = true; e.bits = (uint64_t)(int64_t)*(const int16_t *)p; break;
    case ST_I32: e.is_int = true; e.bits = (uint64_t)(int64_t)*(const int32_t *)p; break;
    case ST_I64: e.is_int = true; e.bits = (uint64_t)*(const int64_t *)p; break;
    case ST_U8: e.is_int = true; e.bits = *(const uint8_t *)p; break;
    case ST_U16: e.is_int = true; e.bits = *(const uint16_t *)p; break;
    case ST_U32: e.is_int = true; e.bits = *(const uint32_t *)p; break;
    case ST_U64: e.is_int = true; e.bits = *(const uint64_t *)p; break;
    default: break;
    }
    if (e.is_int) {
        bool neg = int_signed(t) && (int64_t)e.bits < 0;
        e.v = neg ? -(long double)(-e.bits) : (long double)e.bits;
    }
    return e;
}

static void write_bits(st_dtype t, void *p, uint64_t bits)
{
    switch (st_dtype_size(t)) {
    case 1: *(uint8_t *)p = (uint8_t)bits; break;
    case 2: *(uint16_t *)p = (uint16_t)bits; break;
    case 4: *(uint32_t *)p = (uint32_t)bits; break;
    default: *(uint64_t *)p = bits; break;
    }
}

static uint64_t read_bits(st_dtype t, const void *p)
{
    switch (st_dtype_size(t)) {
    case 1: return *(const uint8_t *)p;
    case 2: return *(const uint16_t *)p;
    case 4: return *(const uint32_t *)p;
    default: return *(const uint64_t *)p;
    }
}

/* The expected bit pattern of src converted to dst; false when the
 * conversion is undefined (NaN, infinity or out of range, float to int). */
static bool expected_bits(st_dtype dst, exact e, uint64_t *out)
{
    if (dst == ST_BOOL) {
        /* x != 0, so 0.5 is true and NaN is true */
        *out = e.is_int ? e.bits != 0 : (isnan(e.v) || e.v != 0);
        return true;
    }
    if (is_float(dst)) {
        fmt f = fmt_of(dst);
        if (isnan(e.v)) {
            *out = fmt_inf(f) | ((uint64_t)1 << (f.mant - 1)); /* any NaN; compared loosely */
            return true;
        }
        *out = ref_round(f, e.v);
        return true;
    }
    int nb = int_bits(dst);
    uint64_t mask = nb == 64 ? ~(uint64_t)0 : (((uint64_t)1 << nb) - 1);
    if (e.is_int) { /* integers wrap modulo 2^bits */
        *out = e.bits & mask;
        return true;
    }
    if (isnan(e.v) || isinf(e.v)) return false;
    long double t = truncl(e.v); /* toward zero */
    long double lo = int_signed(dst) ? -ldexpl(1, nb - 1) : 0;
    long double hi = int_signed(dst) ? ldexpl(1, nb - 1) - 1 : ldexpl(1, nb) - 1;
    if (t < lo || t > hi) return false;
    uint64_t m = (uint64_t)fabsl(t);
    *out = (t < 0 ? (uint64_t)0 - m : m) & mask;
    return true;
}

static bool nan_bits(st_dtype t, uint64_t b)
{
    fmt f = fmt_of(t);
    uint64_t inf = fmt_inf(f), man = ((uint64_t)1 << f.mant) - 1;
    return (b & inf) == inf && (b & man);
}

#define CONV_N 3000

/* Source values for dtype t: edge cases first, then random ones. */
static int source_values(st_dtype t, test_rng *r, void *buf)
{
    int n = 0;
    char *p = buf;
    size_t es = st_dtype_size(t);
    if (is_float(t)) {
        static const double special[] = {
            0.0, -0.0, 0.5, -0.5, 0.9999, -0.9999, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 3.0,
            127.0, 127.75, -128.0, -128.75, 255.5, 256.0, 32767.5, -32768.5, 65504.0, 65519.0, 65520.0,
            65535.9, 2147483647.0, -2147483648.0, 4294967295.0, 1e10, -1e10, 1e19, 9.2233720368547e18,
            -9.2233720368547e18, 1.8446744073709e19, 3.4e38, 1e300, -1e300, 1e-300, 5e-324, 0x1p-24, 0x1p-25,
            0x1p-133, 0x1p-134, 0x1p-149, 0x1p-150,
            /* f64 that round wrongly when rounded to f32 first (double rounding) */
            1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11 - 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40, -(1.0 + 0x1p-8 + 0x1p-40),
            0x1p-25 + 0x1p-60, 65520.0 - 0x1p-30, 0x1.ffp127 + 0x1p90,
            INFINITY, -INFINITY, NAN, -NAN};
        for (size_t i = 0; i < sizeof special / sizeof *special; i++, n++) {
            if (t == ST_F64) *(double *)(p + n * es) = special[i];
            else st_store_f32(t, p + n * es, (float)special[i]); /* the nearest, where exact does not matter */
        }
        for (; n < CONV_N; n++) {
            double mag = ldexp((double)(rng_u64(r) >> 11) * 0x1p-53, (int)rng_range(r, -30, 70));
            if (rng_u64(r) & 1) mag = -mag;
            switch (rng_u64(r) % 3) {
            case 0: mag = trunc(mag); break;         /* an integer */
            case 1: mag = ldexp(trunc(ldexp(mag, 4)), -4); break;
            default: break;
            }
            if (t == ST_F64) *(double *)(p + n * es) = mag;
            else if (t == ST_F32) *(float *)(p + n * es) = (float)mag;
            else *(uint16_t *)(p + n * es) = (uint16_t)rng_u64(r); /* any pattern */
        }
        return n;
    }
    if (t == ST_BOOL) {
        for (; n < 64; n++) p[n] = (char)(n & 1);
        return n;
    }
    int nb = int_bits(t);
    uint64_t mask = nb == 64 ? ~(uint64_t)0 : (((uint64_t)1 << nb) - 1);
    static const uint64_t special[] = {
        0, 1, 2, 3, 127, 128, 255, 256, 32767, 32768, 65504, 65519, 65520, 65535, 65536,
        (1u << 24) + 1, (1u << 24) + 3, (1u << 24) + (1u << 16) + 1, /* i32 -> bf16: rounding via f32 goes wrong */
        2147483647u, 2147483648u, 4294967295u,
        ((uint64_t)1 << 53) + 1, ((uint64_t)1 << 60) + ((uint64_t)1 << 36) + 1, /* i64 -> f32 via f64 goes wrong */
        ((uint64_t)1 << 62) + ((uint64_t)1 << 54) + 1,
        ((uint64_t)1 << 63) + ((uint64_t)1 << 39) + 1, /* u64 -> f32 via f64 goes wrong */
        ((uint64_t)1 << 63) - 1, (uint64_t)1 << 63, ~(uint64_t)0, ~(uint64_t)0 - 1};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
        write_bits(t, p + n++ * es, special[i] & mask);
        write_bits(t, p + n++ * es, (0 - special[i]) & mask);
    }
    for (; n < CONV_N; n++) {
        uint64_t v = rng_u64(r);
        v >>= rng_range(r, 0, 63); /* every magnitude */
        if (rng_u64(r) & 1) v = 0 - v;
        write_bits(t, p + n * es, v & mask);
    }
    return n;
}

static void test_convert_all_pairs(void)
{
    test_rng r = {0x5eed0003};
    static unsigned char src[CONV_N * 8], dst[CONV_N * 8 + 8];
    long bad_total = 0;
    for (int si = 0; si < N_ALL; si++) {
        st_dtype st = ALL[si];
        int n = source_values(st, &r, src);
        size_t ss = st_dtype_size(st);
        for (int di = 0; di < N_ALL; di++) {
            st_dtype dt = ALL[di];
            size_t ds = st_dtype_size(dt);
            memset(dst, 0xa5, sizeof dst);
            st_convert(dt, dst, st, src, (size_t)n);
            /* nothing written past the end */
            CHECKF(dst[(size_t)n * ds] == 0xa5, "%s -> %s wrote past the end", st_dtype_name(st), st_dtype_name(dt));
            long bad = 0;
            for (int i = 0; i < n; i++) {
                uint64_t got = read_bits(dt, dst + (size_t)i * ds), want;
                if (st == dt) { /* a copy, bit for bit (NaN payloads too) */
                    want = read_bits(st, src + (size_t)i * ss);
                } else {
                    exact e = read_exact(st, src + (size_t)i * ss);
                    if (!expected_bits(dt, e, &want)) continue;
                    if (is_float(dt) && isnan(e.v)) {
                        if (nan_bits(dt, got)) continue;
                    }
                }
                if (got != want) {
                    bad++;
                    CHECKF(0, "st_convert %s -> %s: element %d (bits 0x%llx, value %.21Lg) gave 0x%llx, expected 0x%llx",
                           st_dtype_name(st), st_dtype_name(dt), i,
                           (unsigned long long)read_bits(st, src + (size_t)i * ss),
                           read_exact(st, src + (size_t)i * ss).v, (unsigned long long)got, (unsigned long long)want);
                }
            }
            bad_total += bad;
        }
    }
    CHECKF(bad_total == 0, "%ld st_convert elements differ from the reference", bad_total);
}

/* The cases the header promises, spelled out. */
static void test_convert_named(void)
{
    float f[] = {2.9f, -2.9f, 0.5f, -0.5f, -0.0f, 0.0f, 127.99f, -128.99f};
    int8_t i8[8];
    st_convert(ST_I8, i8, ST_F32, f, 8);
    int8_t want_i8[] = {2, -2, 0, 0, 0, 0, 127, -128};
    CHECK(memcmp(i8, want_i8, 8) == 0);
    uint8_t b[8];
    st_convert(ST_BOOL, b, ST_F32, f, 8);
    uint8_t want_b[] = {1, 1, 1, 1, 0, 0, 1, 1};
    CHECK(memcmp(b, want_b, 8) == 0);
    float nan_in[1] = {NAN};
    st_convert(ST_BOOL, b, ST_F32, nan_in, 1);
    CHECK(b[0] == 1);
    double d[] = {1e19, 1.5, -0.9};
    uint64_t u[3];
    st_convert(ST_U64, u, ST_F64, d, 3);
    CHECK(u[0] == 10000000000000000000ull && u[1] == 1 && u[2] == 0);
    int32_t big[] = {256, 0, -1};
    st_convert(ST_BOOL, b, ST_I32, big, 3);
    CHECK(b[0] == 1 && b[1] == 0 && b[2] == 1); /* != 0, not the low byte */
    st_convert(ST_U8, b, ST_I32, big, 3);
    CHECK(b[0] == 0 && b[1] == 0 && b[2] == 255); /* integers wrap */
    uint8_t bools[] = {0, 1};
    float fb[2];
    st_convert(ST_F32, fb, ST_BOOL, bools, 2);
    CHECK(fb[0] == 0.0f && fb[1] == 1.0f);
    uint16_t h[2];
    st_convert(ST_F16, h, ST_BOOL, bools, 2);
    CHECK(h[0] == 0x0000 && h[1] == 0x3c00);
    /* f16 <-> bf16 goes through an exact f32 */
    uint16_t hb = 0x3c01, bb; /* 1 + 2^-10: bf16 keeps 7 bits, so 1 */
    st_convert(ST_BF16, &bb, ST_F16, &hb, 1);
    CHECK(bb == 0x3f80);
    /* n == 0 touches nothing */
    uint16_t untouched = 0x1234;
    st_convert(ST_F16, &untouched, ST_F64, d, 0);
    CHECK(untouched == 0x1234);
}

int main(void)
{
    test_exhaustive_f16();
    test_exhaustive_bf16();
    test_f16_cases();
    test_bf16_cases();
    test_against_reference();
    test_load_store();
    test_convert_named();
    test_convert_all_pairs();
    return check_exit("test_dtype");
}
