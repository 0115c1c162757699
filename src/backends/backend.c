/* backend.c — finding the backend for a kind (CPU always; GPUs when built). */
#include "backends/backend.h"

#include "core/status.h"

#ifdef ST_HAVE_CUDA
st_backend *st_cuda_backend(int device);
#endif
#ifdef ST_HAVE_OPENCL
st_backend *st_opencl_backend(int device);
#endif

st_backend *st_backend_get(st_backend_kind kind, int device)
{
    switch (kind) {
    case ST_BACKEND_CPU: return st_cpu_backend();
    case ST_BACKEND_CUDA:
#ifdef ST_HAVE_CUDA
        return st_cuda_backend(device);
#else
        st_error(ST_ERR_UNSUPPORTED, "backend 'cuda' is not built into this strata (configure with -DSTRATA_CUDA=ON)");
        return NULL;
#endif
    case ST_BACKEND_OPENCL:
#ifdef ST_HAVE_OPENCL
        return st_opencl_backend(device);
#else
        st_error(ST_ERR_UNSUPPORTED, "backend 'opencl' is not built into this strata (configure with -DSTRATA_OPENCL=ON)");
        return NULL;
#endif
    }
    (void)device;
    st_error(ST_ERR_INVALID_ARG, "unknown backend %d", (int)kind);
    return NULL;
}
