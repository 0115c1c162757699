/* cuda_internal.h — what the CUDA backend's C files share. */
#ifndef ST_CUDA_INTERNAL_H
#define ST_CUDA_INTERNAL_H

#include <pthread.h>

#include "runtime/backend.h"
#include "ops/op.h"

typedef struct st_cuda_device {
    st_backend base;
    int device;
    int sm_count;
    void *copy_stream;            /* cudaStream_t for host <-> device copies */
    /* Pinned host staging, ST_STAGING_SLOTS chunks used in turn; slot_free[i]
     * (a cudaEvent_t) is recorded when chunk i's last copy has run, so an
     * upload reuses a chunk only once the device has read it. */
    void *staging;
    void *slot_free[4];
    int next_slot;
    pthread_mutex_t staging_lock;
    /* cuDNN handles of destroyed executors, for the next ones: cuDNN 9
     * keeps about 77 KB of host memory per handle after cudnnDestroy (an
     * H200 run of 1,200 create/destroy pairs, 2026-12-02), so a process
     * that makes sessions all day would grow without bound.  Taken and
     * given back under st_cuda_exclusive_lock. */
    void *dnn_pool[32];
    int n_dnn_pool;
} st_cuda_device;

/* ST_OK, or ST_ERR_BACKEND with the CUDA error's text (err is a cudaError_t). */
st_status st_cuda_check(int err, const char *what);
st_status st_cuda_exec_create(st_backend *b, const st_session_options *o, st_exec **out);
/* A mixed plan's transfer between device and pinned host memory (cuda_exec.c). */
st_status st_cuda_transfer(const st_kctx *k);
/* A while loop on the device (k_loop.cu, cuda_exec.c's exec_loop): its
 * state in device memory. */
typedef struct st_cuda_loop_ctl {
    long long next;               /* the iteration running (then: run in all) */
    long long end, max;           /* trip count, and the limit (an error) */
    int over;                     /* the limit stopped it */
} st_cuda_loop_ctl;

#ifdef __cplusplus
extern "C" {
#endif
/* Launch on stream: writes c->next into the iteration input iter (8 or 4
 * bytes; NULL: none).  Returns a cudaError_t. */
int st_cuda_loop_begin(void *stream, st_cuda_loop_ctl *c, void *iter, int iter_bytes);
/* Launch on stream: counts the iteration and sets the WHILE node's
 * condition (handle, a cudaGraphConditionalHandle) from the bool at cond,
 * the trip count and the host's stop word.  Returns a cudaError_t. */
int st_cuda_loop_end(void *stream, unsigned long long handle, st_cuda_loop_ctl *c, const void *cond, const int *stop);
#ifdef __cplusplus
}
#endif

/* A strided batch of products run for another op's kernel (k_linalg.cu;
 * the Conv's patchify path in k_conv.cu): Y[i] = A[i] B for i < batch,
 * A m x k, B k x n (shared by the batch), Y m x n, each element (r, c) at
 * r * rs + c * cs (+ i * bs), in elements of dtype t.  The first ws_skip
 * bytes of the command's workspace hold the caller's data.  Caches its
 * cuBLASLt set-up in the command's slot, as MatMul does. */
typedef struct st_cuda_gemm_args {
    st_dtype t;
    int64_t batch, m, n, k;
    const void *a, *b;
    void *y;
    int64_t a_rs, a_cs, a_bs, b_rs, b_cs, y_rs, y_cs, y_bs;
    size_t ws_skip;
} st_cuda_gemm_args;
#ifdef __cplusplus
extern "C" {
#endif
st_status st_cuda_gemm_strided(const st_kctx *k, const st_cuda_gemm_args *g);
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* A launch the runtime refuses (fault.cu), for a test's injected failure. */
void st_cuda_fault_launch(void *stream);
#ifdef __cplusplus
}
#endif

#endif
