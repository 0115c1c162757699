/*
 * kernels.h — the CPU kernels and the kernel table they make up.
 *
 * Each family file k_<family>.c ends with its table entries
 * (st_cpu_k_<family>[], ops/kernel.h); table.c lists the families.  Every
 * kernel takes strided inputs and writes strided outputs (rule 5).
 */
#ifndef ST_CPU_KERNELS_H
#define ST_CPU_KERNELS_H

#include "runtime/pool.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "ops/elementwise.h"
#include "ops/ops.h"

/* The whole table (table.c). */
extern const st_kernel_table st_cpu_kernel_table;

/* The families' entries, each ending with a NULL op. */
extern const st_kernel st_cpu_k_elementwise[], st_cpu_k_shape[], st_cpu_k_linalg[], st_cpu_k_conv[],
    st_cpu_k_pool[], st_cpu_k_conv_transpose[], st_cpu_k_col2im[], st_cpu_k_deform_conv[], st_cpu_k_resize[],
    st_cpu_k_reduce[], st_cpu_k_norm[], st_cpu_k_index_copy[],
    st_cpu_k_index_gather[], st_cpu_k_nms[], st_cpu_k_einsum[], st_cpu_k_misc[], st_cpu_k_misc_rnn[],
    st_cpu_k_misc_quant[], st_cpu_k_misc_sample[], st_cpu_k_misc_signal[], st_cpu_k_string[],
    st_cpu_k_text[], st_cpu_k_qlinear[], st_cpu_k_attention[];

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
