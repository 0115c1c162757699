/* cuda_handle_growth.c — host memory (malloc in use) left per create/destroy
 * of each thing a strata CUDA session makes: why the CUDA executor pools its
 * cuDNN handles (cuda_internal.h).  Build here, run on the GPU machine:
 *   gcc -O1 -o cuda_handle_growth bench/gpu/cuda_handle_growth.c -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64 -lcudart -lcudnn -lcublasLt
 * (H200, cuDNN 9, 2026-12-02: cudnnCreate/Destroy x4 +306-316 KB an
 * iteration; everything else 0 once warm.) */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <cublasLt.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
static double inuse(void) { struct mallinfo2 m = mallinfo2(); return (double)m.uordblks / 1048576.0; }
int main(void)
{
    cudaFree(0);
    const int N = 300;
    for (int what = 0; what < 6; what++) {
        for (int warm = 0; warm < 2; warm++) {
            double a = inuse();
            for (int i = 0; i < N; i++) {
                if (what == 0) { cudnnHandle_t h[4]; for (int k = 0; k < 4; k++) cudnnCreate(&h[k]); for (int k = 0; k < 4; k++) cudnnDestroy(h[k]); }
                if (what == 1) { cublasLtHandle_t h; cublasLtCreate(&h); cublasLtDestroy(h); }
                if (what == 2) { cudaStream_t s[4]; for (int k = 0; k < 4; k++) cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking); for (int k = 0; k < 4; k++) cudaStreamDestroy(s[k]); }
                if (what == 3) { cudaEvent_t e[64]; for (int k = 0; k < 64; k++) cudaEventCreateWithFlags(&e[k], cudaEventDisableTiming); for (int k = 0; k < 64; k++) cudaEventDestroy(e[k]); }
                if (what == 4) { void *p; cudaMalloc(&p, 64 << 20); cudaFree(p); void *q; cudaHostAlloc(&q, 4, cudaHostAllocMapped); cudaFreeHost(q); }
                if (what == 5) { cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); void *p; cudaMalloc(&p, 1 << 20);
                    cudaGraph_t g; cudaGraphExec_t x; cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
                    for (int k = 0; k < 50; k++) cudaMemsetAsync(p, k, 1 << 20, s);
                    cudaStreamEndCapture(s, &g); cudaGraphInstantiate(&x, g, 0); cudaGraphDestroy(g); cudaGraphLaunch(x, s); cudaStreamSynchronize(s);
                    cudaGraphExecDestroy(x); cudaFree(p); cudaStreamDestroy(s); }
            }
            const char *nm[] = {"cudnnCreate/Destroy x4", "cublasLtCreate/Destroy", "cudaStream x4", "cudaEvent x64", "cudaMalloc 64M + cudaHostAlloc", "graph capture/instantiate/exec destroy"};
            printf("%-40s %s: in use %+.1f KB per iteration (%d)\n", nm[what], warm ? "second" : "first ", (inuse() - a) * 1024.0 / N, N);
        }
    }
    return 0;
}
