/*
 * gemm_s8_kern.h — internal to the int8 GEMM core (gemm_s8.c and
 * gemm_s8_vnni.c): the VNNI forms, which callers reach only through
 * st_gemm_s8_block / st_gemm_s8_colsums after st_gemm_s8_fast() said yes,
 * and the scalar epilogue both forms must agree with.
 */
#ifndef ST_CPU_GEMM_S8_KERN_H
#define ST_CPU_GEMM_S8_KERN_H

#include "backends/cpu/gemm_s8.h"

void st_s8_block_vnni(const uint8_t *a, bool a_unsigned, const st_s8_b *b, int64_t kq, int64_t m, int64_t n, void *c,
                      int64_t ldc, const st_s8_epi *e);
void st_s8_colsums_vnni(const st_s8_b *b, bool b_unsigned, int64_t kq, int64_t n, int32_t *sums);

/* The epilogue of element (i, j) with raw sum d, written to c. */
void st_s8_epi_scalar(const st_s8_epi *e, int64_t i, int64_t j, uint32_t d, void *c);

/* Bytes per element of an output type. */
size_t st_s8_out_size(st_s8_out o);

#endif
