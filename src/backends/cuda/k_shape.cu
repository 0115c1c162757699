/*
 * k_shape.cu — CUDA kernels that move bytes: the copy a view op makes when
 * its layout cannot be a pure view, Concat's copies of the inputs that are
 * not in place, and (listed here, run by k_index.cu's walk) Gather with an
 * index tensor.  The view rule used is the
 * op's own (the same function the planner and the CPU use).
 */
#include "backends/cuda/ew_rows.cuh"
extern "C" {
#include "ops/concat.h"
#include "ops/ops.h"
}

#define THREADS 256

template <typename T>
__global__ void copy_kernel(st_walk w, const T *src, T *dst)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        dst[off[0]] = src[off[1]];
    }
}

/* dst and src have the same sizes and dtype; any strides. */
static st_status strided_copy(cudaStream_t s, const st_operand *dst, const st_operand *src)
{
    if (st_ewr_copy(s, dst->rank, dst->sizes, dst->data, dst->strides, src->data, src->strides, st_dtype_size(dst->dtype)))
        return ST_OK;
    st_walk w = st_walk2(dst->rank, dst->sizes, dst->strides, src->strides);
    if (w.n == 0) return ST_OK;
    unsigned blocks = st_blocks(w.n, THREADS);
    switch (st_dtype_size(dst->dtype)) {
    case 1: copy_kernel<uint8_t><<<blocks, THREADS, 0, s>>>(w, (const uint8_t *)src->data, (uint8_t *)dst->data); break;
    case 2: copy_kernel<uint16_t><<<blocks, THREADS, 0, s>>>(w, (const uint16_t *)src->data, (uint16_t *)dst->data); break;
    case 4: copy_kernel<uint32_t><<<blocks, THREADS, 0, s>>>(w, (const uint32_t *)src->data, (uint32_t *)dst->data); break;
    case 8: copy_kernel<uint64_t><<<blocks, THREADS, 0, s>>>(w, (const uint64_t *)src->data, (uint64_t *)dst->data); break;
    default: return st_error(ST_ERR_INTERNAL, "copy of %zu-byte elements", st_dtype_size(dst->dtype));
    }
    return ST_OK;
}

static st_view view_of(const st_operand *o)
{
    st_view v;
    memset(&v, 0, sizeof v);
    v.dtype = o->dtype;
    v.rank = o->rank;
    memcpy(v.sizes, o->sizes, sizeof v.sizes);
    memcpy(v.strides, o->strides, sizeof v.strides);
    return v;
}

extern "C" st_status st_cuda_view_copy(const st_kctx *k)
{
    const st_operand *x = &k->in[0];
    for (int o = 0; o < k->n_out; o++) {
        const st_operand *y = &k->out[o];
        if (!y->data) continue;
        st_view in = view_of(x), res;
        if (k->node->op->view(k->state, o, &in, &res)) {
            st_operand src = st_operand_of(&res, x->data);
            ST_TRY(strided_copy(st_stream(k), y, &src));
            continue;
        }
        /* a reshape that mixes dims of a strided input: row-major order,
         * the output seen with the input's shape (outputs of copies are packed) */
        st_view yv = view_of(y);
        if (!st_view_reshape(&yv, x->rank, x->sizes)) return st_error(ST_ERR_INTERNAL, "reshape into a non-packed output");
        st_operand dst = st_operand_of(&yv, y->data);
        ST_TRY(strided_copy(st_stream(k), &dst, x));
    }
    return ST_OK;
}

extern "C" st_status st_cuda_concat(const st_kctx *k)
{
    int axis = ((const st_concat_state *)k->state)->axis;
    const st_operand *y = &k->out[0];
    int64_t start = 0;
    for (int i = 0; i < k->n_in; i++) {
        const st_operand *x = &k->in[i];
        if (!x->data && st_operand_numel(x) > 0) continue;
        int64_t len = x->sizes[axis];
        if (!(k->skip && k->skip[i]) && len > 0) {
            st_operand slot = *y;
            slot.sizes[axis] = len;
            slot.data = (char *)y->data + start * y->strides[axis] * (int64_t)st_dtype_size(y->dtype);
            ST_TRY(strided_copy(st_stream(k), &slot, x));
        }
        start += len;
    }
    return ST_OK;
}

/* Gather (st_cuda_gather) runs the index walk of k_index.cu, which
 * GatherElements shares (ops/lower_index.h). */

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

/* element copies of any dtype of 1, 2, 4 or 8 bytes */
#define VIEW_COPY(name) {name, "", ST_DT_ALL, st_cuda_view_copy, NULL, NULL, NULL}
extern "C" const st_kernel st_cuda_k_shape[] = {
    VIEW_COPY("Reshape"), VIEW_COPY("Flatten"), VIEW_COPY("Squeeze"), VIEW_COPY("Unsqueeze"),
    VIEW_COPY("Identity"), VIEW_COPY("Transpose"), VIEW_COPY("Slice"), VIEW_COPY("Split"),
    {"Gather", "", ST_DT_ALL, st_cuda_gather, NULL, NULL, NULL},
    {"Concat", "", ST_DT_ALL, st_cuda_concat, NULL, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
