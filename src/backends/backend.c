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

#ifdef ST_HAVE_OPENCL
st_backend *st_opencl_backend(int device);
#endif

typedef st_backend *(*backend_entry)(int device);

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
static backend_entry cuda_entry;
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
    cuda_entry = (backend_entry)dlsym(h, "st_cuda_backend");
    if (!cuda_entry) snprintf(cuda_error, sizeof cuda_error, "backend 'cuda': libstrata_cuda.so has no entry point");
}

st_backend *st_backend_get(st_backend_kind kind, int device)
{
    switch (kind) {
    case ST_BACKEND_CPU: return st_cpu_backend();
    case ST_BACKEND_CUDA: {
        pthread_mutex_lock(&module_lock);
        if (!cuda_entry && !cuda_error[0]) load_cuda();
        backend_entry entry = cuda_entry;
        pthread_mutex_unlock(&module_lock);
        if (!entry) {
            st_error(ST_ERR_UNSUPPORTED, "%s", cuda_error);
            return NULL;
        }
        return entry(device);
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
