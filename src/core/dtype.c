/* dtype.c — element sizes, names and conversions (see dtype.h). */
#include "core/dtype.h"

#include <math.h>
#include <string.h>

size_t st_dtype_size(st_dtype t)
{
    switch (t) {
    case ST_F32: case ST_I32: case ST_U32: return 4;
    case ST_F64: case ST_I64: case ST_U64: return 8;
    case ST_F16: case ST_BF16: case ST_I16: case ST_U16: return 2;
    case ST_I8: case ST_U8: case ST_BOOL: return 1;
    case ST_STRING: return sizeof(char *); /* a pointer to its bytes (core/strings.h) */
    default: return 0;
    }
}

const char *st_dtype_name(st_dtype t)
{
    switch (t) {
    case ST_F32: return "float32";
    case ST_U8: return "uint8";
    case ST_I8: return "int8";
    case ST_U16: return "uint16";
    case ST_I16: return "int16";
    case ST_I32: return "int32";
    case ST_I64: return "int64";
    case ST_STRING: return "string";
    case ST_BOOL: return "bool";
    case ST_F16: return "float16";
    case ST_F64: return "float64";
    case ST_U32: return "uint32";
    case ST_U64: return "uint64";
    case ST_BF16: return "bfloat16";
    default: return "undefined";
    }
}

bool st_dtype_valid(st_dtype t) { return st_dtype_size(t) != 0; }

bool st_dtype_is_float(st_dtype t)
{
    return t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F64;
}

bool st_dtype_is_int(st_dtype t)
{
    switch (t) {
    case ST_I8: case ST_U8: case ST_I16: case ST_U16: case ST_I32: case ST_U32:
    case ST_I64: case ST_U64: return true;
    default: return false;
    }
}

bool st_dtype_is_signed(st_dtype t)
{
    return t == ST_I8 || t == ST_I16 || t == ST_I32 || t == ST_I64 || st_dtype_is_float(t);
}

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t st_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float st_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t st_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);         /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);        /* overflow -> inf */
    if (a < 0x38800000u) {                                          /* subnormal or zero */
        /* Add 0.5 in f32 so the hardware rounds the mantissa for us:
         * the result's low bits are the f16 subnormal, rounded to even. */
        float r = bits_f32(a) + 0.5f;
        return (uint16_t)(sign | (f32_bits(r) - 0x3f000000u));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xc8000fffu + mant_odd; /* rebias exponent (-112 << 23) and round to even */
    return (uint16_t)(sign | (a >> 13));
}

float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        /* subnormal: value = mant * 2^-24, exact in f32 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

double st_load_f64(st_dtype t, const void *p)
{
    switch (t) {
    case ST_F32: return *(const float *)p;
    case ST_F64: return *(const double *)p;
    case ST_F16: return st_f16_to_f32(*(const uint16_t *)p);
    case ST_BF16: return st_bf16_to_f32(*(const uint16_t *)p);
    case ST_I8: return *(const int8_t *)p;
    case ST_U8: return *(const uint8_t *)p;
    case ST_I16: return *(const int16_t *)p;
    case ST_U16: return *(const uint16_t *)p;
    case ST_I32: return *(const int32_t *)p;
    case ST_U32: return *(const uint32_t *)p;
    case ST_I64: return (double)*(const int64_t *)p;
    case ST_U64: return (double)*(const uint64_t *)p;
    case ST_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0.0;
    }
}

int64_t st_load_i64(st_dtype t, const void *p)
{
    switch (t) {
    case ST_I8: return *(const int8_t *)p;
    case ST_U8: return *(const uint8_t *)p;
    case ST_I16: return *(const int16_t *)p;
    case ST_U16: return *(const uint16_t *)p;
    case ST_I32: return *(const int32_t *)p;
    case ST_U32: return *(const uint32_t *)p;
    case ST_I64: return *(const int64_t *)p;
    case ST_U64: return (int64_t)*(const uint64_t *)p;
    case ST_BOOL: return *(const uint8_t *)p ? 1 : 0;
    default: {
        double d = st_load_f64(t, p);
        /* Out-of-range and NaN casts are undefined in C; clamp them. */
        if (d != d) return 0;
        if (d >= 9.2233720368547758e18) return INT64_MAX;
        if (d <= -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)d;
    }
    }
}

/* Float to integer: truncate toward zero, wrapping the way a C cast through
 * int64 does for in-range values; out-of-range values are clamped first so
 * the conversion is defined. */
static int64_t f64_to_i64(double d)
{
    if (d != d) return 0;
    if (d >= 9.2233720368547758e18) return INT64_MAX;
    if (d <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)d;
}

/* Rounding twice (f64 -> f32 -> f16) can go wrong: 1 + 2^-11 + 2^-40 rounds
 * to the f32 1 + 2^-11, a tie for f16, which then goes to even, down,
 * although the value is above the tie.  Rounding to f32 "to odd" first
 * (truncate, then set the last bit if anything was lost) keeps that
 * information, and f32 has enough extra bits for the second rounding to f16
 * or bf16 to be the correctly rounded result. */
static float f64_to_f32_odd(double d)
{
    float f = (float)d;
    if ((double)f == d || d != d) return f;
    uint32_t u = f32_bits(f);
    if (fabs((double)f) > fabs(d)) u--; /* it rounded away from zero: step back */
    return bits_f32(u | 1u);
}

/* The same for an integer of magnitude m: shifting right with the lost
 * bits ORed into the lowest one rounds to odd. */
static float u64_to_f32_odd(uint64_t m)
{
    int shift = 0;
    while (m >= (1u << 24)) {
        m = (m >> 1) | (m & 1u);
        shift++;
    }
    return ldexpf((float)m, shift);
}

/* An integer (sign and magnitude) as a float dtype, rounded once: going
 * through double first rounds 2^60 + 2^36 + 1 to a tie between two f32s. */
static void store_int_float(st_dtype t, void *p, bool neg, uint64_t m)
{
    switch (t) {
    case ST_F64: *(double *)p = neg ? -(double)m : (double)m; break;
    case ST_F32: *(float *)p = neg ? -(float)m : (float)m; break;
    case ST_F16:
    case ST_BF16: {
        float f = u64_to_f32_odd(m);
        st_store_f32(t, p, neg ? -f : f);
        break;
    }
    default: break; /* not a number (a string): nothing to store; handing it
                      * on to st_store_f32 looped f32 -> f64 -> i64 forever */
    }
}

void st_store_f64(st_dtype t, void *p, double v)
{
    switch (t) {
    case ST_F32: *(float *)p = (float)v; break;
    case ST_F64: *(double *)p = v; break;
    case ST_F16: *(uint16_t *)p = st_f32_to_f16(f64_to_f32_odd(v)); break;
    case ST_BF16: *(uint16_t *)p = st_f32_to_bf16(f64_to_f32_odd(v)); break;
    case ST_BOOL: *(uint8_t *)p = v != 0.0; break;
    case ST_U64:
        if (v >= 1.8446744073709552e19) *(uint64_t *)p = UINT64_MAX;
        else if (v > 0) *(uint64_t *)p = (uint64_t)v;
        else *(uint64_t *)p = (uint64_t)f64_to_i64(v);
        break;
    default: st_store_i64(t, p, f64_to_i64(v)); break;
    }
}

void st_store_i64(st_dtype t, void *p, int64_t v)
{
    switch (t) {
    case ST_I8: *(int8_t *)p = (int8_t)v; break;
    case ST_U8: *(uint8_t *)p = (uint8_t)v; break;
    case ST_I16: *(int16_t *)p = (int16_t)v; break;
    case ST_U16: *(uint16_t *)p = (uint16_t)v; break;
    case ST_I32: *(int32_t *)p = (int32_t)v; break;
    case ST_U32: *(uint32_t *)p = (uint32_t)v; break;
    case ST_I64: *(int64_t *)p = v; break;
    case ST_U64: *(uint64_t *)p = (uint64_t)v; break;
    case ST_BOOL: *(uint8_t *)p = v != 0; break;
    default: store_int_float(t, p, v < 0, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v); break;
    }
}

void st_convert(st_dtype dst_t, void *dst, st_dtype src_t, const void *src, size_t n)
{
    size_t ds = st_dtype_size(dst_t), ss = st_dtype_size(src_t);
    char *d = dst;
    const char *s = src;
    if (dst_t == src_t) {
        memmove(dst, src, n * ds);
        return;
    }
    if (dst_t == ST_F32 && (src_t == ST_F16 || src_t == ST_BF16)) {
        for (size_t i = 0; i < n; i++)
            ((float *)dst)[i] = src_t == ST_F16 ? st_f16_to_f32(((const uint16_t *)src)[i])
                                                : st_bf16_to_f32(((const uint16_t *)src)[i]);
        return;
    }
    if (src_t == ST_F32 && (dst_t == ST_F16 || dst_t == ST_BF16)) {
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)dst)[i] = dst_t == ST_F16 ? st_f32_to_f16(((const float *)src)[i])
                                                   : st_f32_to_bf16(((const float *)src)[i]);
        return;
    }
    bool int_path = !st_dtype_is_float(src_t) && !st_dtype_is_float(dst_t);
    bool int_to_float = !st_dtype_is_float(src_t) && st_dtype_is_float(dst_t);
    for (size_t i = 0; i < n; i++, d += ds, s += ss) {
        if (int_to_float && src_t == ST_U64) store_int_float(dst_t, d, false, *(const uint64_t *)s);
        else if (int_path || int_to_float) st_store_i64(dst_t, d, st_load_i64(src_t, s));
        else st_store_f64(dst_t, d, st_load_f64(src_t, s));
    }
}
