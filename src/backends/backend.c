/*
 * backend.c — finding the backend for a kind.  The CPU is built in.  The
 * CUDA backend is a module (libstrata_cuda.so) loaded on first request, so
 * a program that never asks for CUDA never maps the CUDA libraries (they
 * cost a CPU-only process ~170 MB of resident memory just by loading).
 * The module is looked for beside the running executable, then on the
 * library path; STRATA_CUDA_MODULE names it explicitly.
 */
#include "backends/backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

#include "backends/cpu/kernels.h"
#ifdef ST_HAVE_OPENCL
#include "backends/opencl/kernels.h"
st_backend *st_opencl_backend(int device);
#endif

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
static const st_backend_module *cuda_module;
static char cuda_error[512];

static void load_cuda(void)
{
    char path[PATH_MAX + 32];
    const char *env = getenv("STRATA_CUDA_MODULE");
    void *h = NULL;
    if (env && *env) {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, PATH_MAX);
        if (n > 0) {
            path[n] = 0;
            char *slash = strrchr(path, '/');
            if (slash) {
                strcpy(slash + 1, "libstrata_cuda.so");
                h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            }
        }
        if (!h) h = dlopen("libstrata_cuda.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        const char *e = dlerror();
        snprintf(cuda_error, sizeof cuda_error, "backend 'cuda' is not available: cannot load libstrata_cuda.so (%s)",
                 e ? e : "not found");
        return;
    }
    /* the one name looked up: the entry point backend.h declares */
    const st_backend_module *(*entry)(void) = (const st_backend_module *(*)(void))dlsym(h, "st_cuda_module");
    const st_backend_module *m = entry ? entry() : NULL;
    if (!m) snprintf(cuda_error, sizeof cuda_error, "backend 'cuda': libstrata_cuda.so has no entry point");
    else if (m->abi != ST_BACKEND_ABI)
        snprintf(cuda_error, sizeof cuda_error, "backend 'cuda': libstrata_cuda.so is of another build (ABI %d, this is %d)",
                 m->abi, ST_BACKEND_ABI);
    else cuda_module = m;
}

static const st_backend_module *cuda(void)
{
    pthread_mutex_lock(&module_lock);
    if (!cuda_module && !cuda_error[0]) load_cuda();
    const st_backend_module *m = cuda_module;
    pthread_mutex_unlock(&module_lock);
    if (!m) st_error(ST_ERR_UNSUPPORTED, "%s", cuda_error);
    return m;
}

const st_kernel_table *st_backend_kernels(st_backend_kind kind)
{
    switch (kind) {
    case ST_BACKEND_CPU: return &st_cpu_kernel_table;
    case ST_BACKEND_CUDA: {
        const st_backend_module *m = cuda();
        return m ? m->kernels : NULL;
    }
    case ST_BACKEND_OPENCL:
#ifdef ST_HAVE_OPENCL
        return &st_cl_kernel_table;
#else
        st_error(ST_ERR_UNSUPPORTED, "backend 'opencl' is not built into this strata");
        return NULL;
#endif
    }
    st_error(ST_ERR_INVALID_ARG, "unknown backend %d", (int)kind);
    return NULL;
}

st_backend *st_backend_get(st_backend_kind kind, int device)
{
    switch (kind) {
    case ST_BACKEND_CPU: return st_cpu_backend();
    case ST_BACKEND_CUDA: {
        const st_backend_module *m = cuda();
        return m ? m->open(device) : NULL;
    }
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
