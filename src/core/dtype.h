/*
 * dtype.h — element types: sizes, names, and conversions.
 *
 * f16 and bf16 are stored as uint16_t bit patterns.  Conversion from f32
 * rounds to nearest, ties to even, and keeps NaN a NaN (a plain truncation
 * of a NaN's mantissa could make it an infinity).
 */
#ifndef ST_DTYPE_H
#define ST_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata.h"

bool st_dtype_valid(st_dtype t);          /* one strata can hold in memory (strings: core/strings.h) */
bool st_dtype_is_float(st_dtype t);       /* f16, bf16, f32, f64 */
bool st_dtype_is_int(st_dtype t);         /* signed or unsigned integers, not bool */
bool st_dtype_is_signed(st_dtype t);

uint16_t st_f32_to_f16(float f);
float st_f16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);
float st_bf16_to_f32(uint16_t b);

/* One element at p, widened.  Used by generic kernels and conversions. */
double st_load_f64(st_dtype t, const void *p);
int64_t st_load_i64(st_dtype t, const void *p);
void st_store_f64(st_dtype t, void *p, double v);
void st_store_i64(st_dtype t, void *p, int64_t v);

static inline float st_load_f32(st_dtype t, const void *p)
{
    switch (t) {
    case ST_F32: return *(const float *)p;
    case ST_F16: return st_f16_to_f32(*(const uint16_t *)p);
    case ST_BF16: return st_bf16_to_f32(*(const uint16_t *)p);
    default: return (float)st_load_f64(t, p);
    }
}

static inline void st_store_f32(st_dtype t, void *p, float v)
{
    switch (t) {
    case ST_F32: *(float *)p = v; break;
    case ST_F16: *(uint16_t *)p = st_f32_to_f16(v); break;
    case ST_BF16: *(uint16_t *)p = st_f32_to_bf16(v); break;
    default: st_store_f64(t, p, v); break;
    }
}

/* Converts n packed elements of numbers or bools.  Float to integer
 * truncates toward zero, as ONNX Cast does; to bool is (x != 0); to a
 * float dtype rounds once, to nearest even (never through an intermediate
 * type that rounds first).  Strings are not numbers: Cast's kernel
 * converts them (backends/cpu/k_string.c). */
void st_convert(st_dtype dst_t, void *dst, st_dtype src_t, const void *src, size_t n);

#endif
