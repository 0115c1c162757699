/*
 * cuda_ctx.h — what a CUDA kernel gets besides its operands, and the
 * helpers every .cu file shares.
 *
 * A kernel is `st_status st_cuda_<op>(const st_kctx *k)`: k->in[i].data and
 * k->out[i].data are device addresses (storage base + view offset, rule 1:
 * a view is bound as base pointer plus byte offset, never as a new
 * allocation), with strides in elements; k->dev is the st_cuda_ctx below.
 * A kernel only enqueues work on ctx->stream: it never synchronizes,
 * allocates device memory, or copies to the host, so a run can be
 * captured into a CUDA graph and replayed.  State that is expensive to
 * make (cuDNN descriptors and algorithm choices, device tables) goes in
 * the command's slot, made on the first (uncaptured) run and reused.
 */
#ifndef ST_CUDA_CTX_H
#define ST_CUDA_CTX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "ops/kernel.h"
#include "ops/op.h"

/* Device scratch per stream for cuBLASLt/cuDNN (and what accepts checks
 * against: a BatchNormalization folds its parameters into it). */
#define ST_CUDA_WORKSPACE ((size_t)64 << 20)

/* A command's cached state: data plus the function that frees it. */
typedef struct st_cuda_slot {
    void *data;
    void (*release)(void *data);
} st_cuda_slot;

typedef struct st_cuda_ctx {
    void *stream;            /* cudaStream_t */
    void *cublaslt;          /* cublasLtHandle_t, shared by the executor's streams */
    void *cudnn;             /* cudnnHandle_t of this stream */
    void *workspace;         /* device scratch for cuBLASLt/cuDNN, per stream */
    size_t workspace_bytes;
    st_cuda_slot *slot;      /* this command's cache */
    bool capturing;          /* inside graph capture: no new descriptors or algorithm searches */
    bool allow_tf32;         /* f32 GEMM/conv may use TF32 (default off) */
    int sm_count;
    /* A kernel that finds bad data (an index out of range) cannot fail the
     * run from the device: it stores cmd + 1 here (atomicCAS from 0) and
     * the executor reports it when the run is waited for. */
    int *dev_error;
    int cmd;
} st_cuda_ctx;

/* What CUDA kernels take: everything but float64. */
#define ST_CUDA_DT (ST_DT_ALL & ~ST_DT(ST_F64))

/* accepts: refuses a node with a float64 operand (table.c). */
bool st_cuda_accepts_no_f64(const st_knode *n, char *why, size_t len);

/* The families' table entries (cuda/table.c lists them). */
extern const st_kernel st_cuda_k_elementwise[], st_cuda_k_shape[], st_cuda_k_linalg[], st_cuda_k_conv[], st_cuda_k_norm[],
    st_cuda_k_reduce[], st_cuda_k_resize[], st_cuda_k_quant[], st_cuda_k_qint[], st_cuda_k_qlinear[],
    st_cuda_k_attention[], st_cuda_k_index[], st_cuda_k_rnn[], st_cuda_k_rownorm[], st_cuda_k_sample[];
extern const st_kernel_table st_cuda_kernel_table;

/* Kernels, one per op family (src/backends/cuda/k_<family>.cu). */
st_status st_cuda_unary(const st_kctx *k);
st_status st_cuda_binary(const st_kctx *k);
st_status st_cuda_variadic(const st_kctx *k);
st_status st_cuda_where(const st_kctx *k);
st_status st_cuda_clip(const st_kctx *k);
st_status st_cuda_cast(const st_kctx *k);
st_status st_cuda_view_copy(const st_kctx *k);
st_status st_cuda_concat(const st_kctx *k);
st_status st_cuda_gather(const st_kctx *k);
st_status st_cuda_matmul(const st_kctx *k);          /* k_linalg.cu */
st_status st_cuda_gemm(const st_kctx *k);
st_status st_cuda_conv(const st_kctx *k);            /* k_conv.cu */
st_status st_cuda_pool(const st_kctx *k);
st_status st_cuda_conv_transpose(const st_kctx *k);
st_status st_cuda_norm(const st_kctx *k);            /* k_norm.cu: Softmax ... LRN, BatchNormalization */
st_status st_cuda_reduce(const st_kctx *k);          /* k_reduce.cu */
st_status st_cuda_argminmax(const st_kctx *k);
st_status st_cuda_resize(const st_kctx *k);          /* k_resize.cu */

/* Stream capture and device-wide calls (cuda.c).  A call that synchronizes
 * the device or may (cudaFree, cudaFreeHost, cudaMalloc, cudaMallocHost,
 * cudaDeviceSynchronize, creating or destroying a cuDNN or cuBLASLt
 * handle or a stream) invalidates a capture that another thread has in
 * progress, and fails itself with "operation not permitted when stream is
 * capturing": with sessions on several threads, one freeing a session while
 * another captured its run broke both (the H200 soak, 2026-12-02).  So
 * captures hold this lock shared (they may overlap one another) and those
 * calls hold it exclusively.  Never take it exclusively while capturing. */
void st_cuda_capture_lock(void);
void st_cuda_capture_unlock(void);
void st_cuda_exclusive_lock(void);
void st_cuda_exclusive_unlock(void);

#ifdef __cplusplus
}
#endif
#endif
