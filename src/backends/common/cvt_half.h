/*
 * cvt_half.h — vector conversions between f32 and the 16-bit floats (f16
 * with F16C / AVX-512 vcvtph2ps and vcvtps2ph, bf16 with integer
 * rounding), and int32 -> f32, for Cast and for kernels that keep
 * half-precision activations.
 *
 * Every routine gives the bits of the scalar st_convert (core/dtype.c):
 * round to nearest even, f16 subnormals exact, overflow to inf; the NaN
 * lanes, where the instructions quiet or keep a payload differently, are
 * patched to st_convert's NaNs (f32 -> f16: sign | 0x7e00; f16 -> f32: the
 * payload shifted, not quieted; f32 -> bf16: high half | 0x40).  bf16 uses
 * integer rounding rather than vcvtneps2bf16, which flushes subnormals.
 * Without AVX-512 (or with STRATA_CPU_NO_AVX512=1) they call st_convert.
 */
#ifndef ST_CPU_CVT_HALF_H
#define ST_CPU_CVT_HALF_H

#include <stdint.h>

#include "core/dtype.h"

void st_cvt_f16_to_f32(float *dst, const uint16_t *src, int64_t n);
void st_cvt_f32_to_f16(uint16_t *dst, const float *src, int64_t n);
void st_cvt_bf16_to_f32(float *dst, const uint16_t *src, int64_t n);
void st_cvt_f32_to_bf16(uint16_t *dst, const float *src, int64_t n);
void st_cvt_i32_to_f32(float *dst, const int32_t *src, int64_t n);

/* A row of n floats of dtype t (f32, f16 or bf16), element i at
 * src[i * step], into packed f32, and back: unit-stride f16 and bf16 rows
 * take the vector conversions above, f32 rows a copy; other steps convert
 * element by element.  For kernels that compute in f32 on rows they
 * stage (conv, pools, elementwise blocks). */
void st_cvt_row_to_f32(float *dst, st_dtype t, const void *src, int64_t step, int64_t n);
void st_cvt_row_from_f32(st_dtype t, void *dst, int64_t step, const float *src, int64_t n);

/* n packed elements of src_t to dst_t. */
typedef void (*st_cvt_fn)(void *dst, const void *src, int64_t n);

/* The vector routine for a pair of dtypes, or NULL when there is none. */
st_cvt_fn st_cvt_vec(st_dtype dst_t, st_dtype src_t);

#endif
