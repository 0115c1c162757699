/*
 * lut_u8.h — y[i] = table[x[i]] over bytes: the one-byte-in quantized ops
 * (QLinearConcat's requantization, QLinearSigmoid/LeakyRelu/Lookup) map
 * their rows through a 256-entry table.  AVX-512 VBMI looks up 64 bytes
 * per step (two vpermi2b over the table's halves, blended on each index's
 * top bit) where the CPU has it (checked once), else a scalar loop; both
 * give the same bytes, as a table lookup has only one answer.
 */
#ifndef ST_CPU_LUT_U8_H
#define ST_CPU_LUT_U8_H

#include <stdint.h>

/* y[i] = table[x[i]], i < n; x and y contiguous (they may be the same). */
void st_lut_u8(const uint8_t table[256], const uint8_t *x, uint8_t *y, int64_t n);

#endif
