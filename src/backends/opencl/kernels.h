/*
 * kernels.h — the OpenCL kernels the op table rows name (`.opencl =
 * ST_OPENCL(st_cl_xxx)`).  Only declarations, no OpenCL types: the op
 * families include it whether or not the backend is built in (the
 * ST_OPENCL macro leaves the slot NULL when it is not).
 *
 * Each is `st_status st_cl_<op>(const st_kctx *k)`: k->views are the
 * operands (a view's storage->dev is its cl_mem, view.offset its byte
 * offset: rule 1, no sub-buffers), k->dev the command's st_cl_ctx
 * (opencl/cl_ctx.h).  A kernel only enqueues work; it never waits.
 */
#ifndef ST_CL_KERNELS_H
#define ST_CL_KERNELS_H

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
st_status st_cl_norm(const st_kctx *k);
st_status st_cl_reduce(const st_kctx *k);

#endif
