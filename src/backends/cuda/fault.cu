/*
 * fault.cu — a kernel launch that fails, for tests (core/fault.h).
 *
 * When a test asks the executor to fail a command's launch, the executor
 * makes this launch in place of the command's kernels: more threads per
 * block than any device allows, which the runtime refuses at launch with
 * cudaErrorInvalidConfiguration.  The executor's own cudaGetLastError()
 * check then finds the failure as it would find any refused launch; the
 * error is not sticky, so the context stays usable.
 */
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_internal.h"

__global__ void st_cuda_never_runs(void) {}

extern "C" void st_cuda_fault_launch(void *stream)
{
    st_cuda_never_runs<<<1, 1 << 16, 0, (cudaStream_t)stream>>>();
}
