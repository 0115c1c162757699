/*
 * k_loop.cu — the two small kernels of a while loop run as one CUDA graph
 * (cuda_exec.c, exec_loop): the body graph sits in a conditional WHILE
 * node, and these kernels keep its count and decide, on the device, whether
 * the next iteration runs.
 *
 * The loop's state is one st_cuda_loop_ctl in device memory, written by the
 * host before the launch and read back after it:
 *   - loop_begin runs at the start of each iteration (after the carried
 *     values were copied into the body's inputs) and writes the iteration
 *     number into the body's iteration input, in its planned dtype;
 *   - loop_end runs after the body's last command and sets the WHILE
 *     node's condition: the body's condition output, and the trip count,
 *     and no cancel asked by the host (a word in mapped host memory, read
 *     once per iteration).  An iteration number at the limit is recorded
 *     as `over` and stops the loop: the host reports the error.
 * One thread each: the work is a handful of scalars, and the launch is a
 * graph node either way.
 */
#include <cuda_runtime.h>

#include "backends/cuda/cuda_internal.h"

__global__ void st_loop_begin(st_cuda_loop_ctl *c, void *iter, int iter_bytes)
{
    if (!iter) return;
    if (iter_bytes == 8) *(long long *)iter = c->next;
    else *(int *)iter = (int)c->next;
}

__global__ void st_loop_end(cudaGraphConditionalHandle h, st_cuda_loop_ctl *c, const unsigned char *cond,
                            const volatile int *stop)
{
    long long it = c->next + 1; /* the iteration that would run next */
    c->next = it;
    unsigned go = cond[0] != 0 && it < c->end && *stop == 0;
    if (go && it >= c->max) {
        c->over = 1;
        go = 0;
    }
    cudaGraphSetConditional(h, go);
}

extern "C" int st_cuda_loop_begin(void *stream, st_cuda_loop_ctl *c, void *iter, int iter_bytes)
{
    st_loop_begin<<<1, 1, 0, (cudaStream_t)stream>>>(c, iter, iter_bytes);
    return (int)cudaGetLastError();
}

extern "C" int st_cuda_loop_end(void *stream, unsigned long long handle, st_cuda_loop_ctl *c, const void *cond,
                                const int *stop)
{
    st_loop_end<<<1, 1, 0, (cudaStream_t)stream>>>((cudaGraphConditionalHandle)handle, c,
                                                   (const unsigned char *)cond, stop);
    return (int)cudaGetLastError();
}
