/*
 * quantize_vec.h — the vector loops of DynamicQuantizeLinear (and of any
 * f32 -> u8 quantization): a range reduction and a quantize, AVX-512 where
 * the CPU has it (checked once), else scalar code that gives the same bits.
 *
 * Both follow k_misc_quant.c's scalar definitions exactly: min/max skip
 * NaN and start from the caller's values; quantize is x / scale in f32
 * (a true division, not a multiply by the reciprocal), rounded to nearest
 * even, NaN to the zero point, saturated to [0, 255].
 */
#ifndef ST_CPU_QUANTIZE_VEC_H
#define ST_CPU_QUANTIZE_VEC_H

#include <stdint.h>

/* *mn = min(*mn, x[i]), *mx = max(*mx, x[i]) over i < n, NaNs skipped. */
void st_minmax_f32(const float *x, int64_t n, float *mn, float *mx);

/* y[i] = saturate_u8(round_even(x[i] / scale) + zp), NaN to zp. */
void st_quantize_u8_f32(const float *x, int64_t n, float scale, int32_t zp, uint8_t *y);

#endif
