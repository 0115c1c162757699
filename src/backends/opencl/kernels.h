/*
 * kernels.h — the OpenCL kernels and the kernel table they make up.
 *
 * Each is `st_status st_cl_<op>(const st_kctx *k)`: k->views are the
 * operands (a view's storage->dev is its cl_mem, view.offset its byte
 * offset: rule 1, no sub-buffers), k->dev the command's st_cl_ctx
 * (opencl/cl_internal.h).  A kernel only enqueues work; it never waits.
 * Each family file k_<family>.c ends with its table entries
 * (st_cl_k_<family>[], ops/kernel.h); table.c lists the families.
 */
#ifndef ST_CL_KERNELS_H
#define ST_CL_KERNELS_H

#include "ops/kernel.h"
#include "ops/op.h"

st_status st_cl_unary(const st_kctx *k);
st_status st_cl_clip(const st_kctx *k);
st_status st_cl_binary(const st_kctx *k);
st_status st_cl_variadic(const st_kctx *k);
st_status st_cl_where(const st_kctx *k);
st_status st_cl_cast(const st_kctx *k);
st_status st_cl_view_copy(const st_kctx *k);
st_status st_cl_concat(const st_kctx *k);
st_status st_cl_matmul(const st_kctx *k);
st_status st_cl_gemm(const st_kctx *k);
st_status st_cl_conv(const st_kctx *k);
st_status st_cl_pool(const st_kctx *k);
st_status st_cl_conv_transpose(const st_kctx *k);
st_status st_cl_resize(const st_kctx *k);
st_status st_cl_pad(const st_kctx *k);
st_status st_cl_norm(const st_kctx *k);
st_status st_cl_reduce(const st_kctx *k);
/* A mixed plan's transfer between a cl_mem and host memory (cl_exec.c). */
st_status st_cl_transfer(const st_kctx *k);

extern const st_kernel st_cl_k_elementwise[], st_cl_k_shape[], st_cl_k_linalg[], st_cl_k_conv[], st_cl_k_resize[],
    st_cl_k_rows[], st_cl_k_quant[], st_cl_k_qint[], st_cl_k_qlinear[], st_cl_k_attention[], st_cl_k_pad[],
    st_cl_k_index[], st_cl_k_rnn[], st_cl_k_rownorm[], st_cl_k_sample[];
extern const st_kernel_table st_cl_kernel_table;

#endif
