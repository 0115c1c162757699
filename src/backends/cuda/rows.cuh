/*
 * rows.cuh — what the CUDA kernels of the reduce, norm, pooling, linalg
 * and conv families share beyond common.cuh:
 *   - st_rowlay and the block reductions (row_reduce.cuh, which has no
 *     kernels: a file that needs only those includes it alone);
 *   - st_pack: a strided copy of any element size into packed memory (a
 *     region of the workspace), for library calls that cannot take an
 *     operand's strides.  It and ew_rows.cuh's st_ewr_copy launch
 *     template kernels, so every file that includes this header carries
 *     its own copy of them (and of ew_rows.cuh's row kernels) in its
 *     cubin.
 */
#ifndef ST_CUDA_ROWS_CUH
#define ST_CUDA_ROWS_CUH

#include "backends/cuda/ew_rows.cuh"
#include "backends/cuda/row_reduce.cuh"

/* ---- packing ---- */

template <typename T>
__global__ void st_pack_kernel(st_walk w, const T *src, T *dst)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        dst[off[0]] = src[off[1]];
    }
}

/* Copies src (any strides) into dst with the strides dst gives, same
 * dtype; enqueued on s. */
static inline st_status st_pack(cudaStream_t s, const st_operand *dst, const st_operand *src)
{
    if (st_ewr_copy(s, dst->rank, dst->sizes, dst->data, dst->strides, src->data, src->strides, st_dtype_size(src->dtype)))
        return ST_OK;
    st_walk w = st_walk2(dst->rank, dst->sizes, dst->strides, src->strides);
    if (w.n == 0) return ST_OK;
    unsigned blocks = st_blocks(w.n, 256);
    switch (st_dtype_size(src->dtype)) {
    case 1: st_pack_kernel<uint8_t><<<blocks, 256, 0, s>>>(w, (const uint8_t *)src->data, (uint8_t *)dst->data); break;
    case 2: st_pack_kernel<uint16_t><<<blocks, 256, 0, s>>>(w, (const uint16_t *)src->data, (uint16_t *)dst->data); break;
    case 4: st_pack_kernel<uint32_t><<<blocks, 256, 0, s>>>(w, (const uint32_t *)src->data, (uint32_t *)dst->data); break;
    case 8: st_pack_kernel<uint64_t><<<blocks, 256, 0, s>>>(w, (const uint64_t *)src->data, (uint64_t *)dst->data); break;
    default: return st_error(ST_ERR_INTERNAL, "cuda: packing %zu-byte elements", st_dtype_size(src->dtype));
    }
    return ST_OK;
}

/* src's shape packed row-major at dst (device memory). */
static inline st_operand st_packed_like(const st_operand *src, void *dst)
{
    st_operand p = *src;
    p.data = dst;
    st_strides_contiguous(p.rank, p.sizes, p.strides);
    return p;
}

/* ST_OK, or ST_ERR_BACKEND naming the CUDA call that failed. */
static inline st_status st_cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return ST_OK;
    return st_error(ST_ERR_BACKEND, "cuda: %s: %s", what, cudaGetErrorString(e));
}

/* Bytes rounded up to the 256-byte alignment library buffers like. */
static inline size_t st_align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* The largest power of two (up to 256) dividing an address or byte count. */
static inline unsigned st_alignment(uint64_t v)
{
    unsigned a = 256;
    while (a > 1 && v % a) a >>= 1;
    return a;
}

#endif
