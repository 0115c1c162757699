/*
 * kernels.h — the CPU kernels, one per op family file (k_<family>.c).
 * Every kernel takes strided inputs and writes strided outputs (rule 5).
 */
#ifndef ST_CPU_KERNELS_H
#define ST_CPU_KERNELS_H

#include "backends/cpu/pool.h"
#include "ops/op.h"
#include "ops/elementwise.h"
#include "ops/ops.h"

/* Strides of x broadcast to y's shape (right-aligned, 0 on size-1 dims). */
void st_broadcast_strides(const st_operand *x, const st_operand *y, int64_t *strides);

/* k_elementwise.c */
/* Applies a fused activation to n floats in place. */
void st_epilogue_f32(const st_epilogue *e, float *x, int64_t n);
st_status st_cpu_unary(const st_kctx *k);
st_status st_cpu_binary(const st_kctx *k);
st_status st_cpu_variadic(const st_kctx *k);
st_status st_cpu_where(const st_kctx *k);
st_status st_cpu_clip(const st_kctx *k);
st_status st_cpu_cast(const st_kctx *k);

/* k_shape.c */
st_status st_cpu_view_copy(const st_kctx *k);
st_status st_cpu_concat(const st_kctx *k);
st_status st_cpu_gather(const st_kctx *k);
st_status st_cpu_shape(const st_kctx *k);
st_status st_cpu_size(const st_kctx *k);

/* k_linalg.c */
st_status st_cpu_matmul(const st_kctx *k);
st_status st_cpu_gemm(const st_kctx *k);

/* k_conv.c */
st_status st_cpu_conv(const st_kctx *k);
st_status st_cpu_pool(const st_kctx *k);

#endif
