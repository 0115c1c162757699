/*
 * backend.c — finding the backend for a kind.  The CPU is built in.  The
 * CUDA backend is a module (libstrata_cuda.so) loaded on first request, so
 * a program that never asks for CUDA never maps the CUDA libraries (they
 * cost a CPU-only process ~170 MB of resident memory just by loading).
 * The module is looked for beside the library (libstrata.so's directory,
 * found with dladdr, or the program's own when it links strata
 * statically), then in the installed library directory relative to the
 * program (bin/../lib, where cmake --install puts it), then on the library
 * path; STRATA_CUDA_MODULE names it explicitly.  The module links
 * libstrata.so, so it calls back into the library that loaded it, or into
 * a static program's copy when the program exports it (-rdynamic).
 */
#include "backends/backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
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
#ifdef ST_HAVE_VULKAN
#include "backends/vulkan/kernels.h"
st_backend *st_vulkan_backend(int device);
#endif

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
static const st_backend_module *cuda_module;
static char cuda_error[512];

#ifndef ST_BIN_TO_LIBDIR
#define ST_BIN_TO_LIBDIR "../lib"
#endif

/* dlopens libstrata_cuda.so in file's directory joined with rel.  A module
 * that is there but does not load (a CUDA library missing) ends the search
 * with that reason, the one the user needs. */
static void *load_beside(const char *file, const char *rel, bool *found)
{
    char path[PATH_MAX + 64];
    const char *slash = strrchr(file, '/');
    if (*found || !slash) return NULL;
    snprintf(path, sizeof path, "%.*s/%slibstrata_cuda.so", (int)(slash - file), file, rel);
    if (access(path, F_OK) != 0) return NULL;
    *found = true;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void load_cuda(void)
{
    char exe[PATH_MAX];
    const char *env = getenv("STRATA_CUDA_MODULE");
    void *h = NULL;
    if (env && *env) {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    } else {
        bool found = false;
        Dl_info lib;
        /* any object of the library names the file it was loaded from */
        if (dladdr(&module_lock, &lib) && lib.dli_fname) h = load_beside(lib.dli_fname, "", &found);
        /* a program is named by its argv[0], which may lack a directory */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            if (!h) h = load_beside(exe, "", &found);
            if (!h) h = load_beside(exe, ST_BIN_TO_LIBDIR "/", &found);
        }
        if (!h && !found) h = dlopen("libstrata_cuda.so", RTLD_NOW | RTLD_LOCAL);
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
    case ST_BACKEND_VULKAN:
#ifdef ST_HAVE_VULKAN
        return &st_vk_kernel_table;
#else
        st_error(ST_ERR_UNSUPPORTED, "backend 'vulkan' is not built into this strata");
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
    case ST_BACKEND_VULKAN:
#ifdef ST_HAVE_VULKAN
        return st_vulkan_backend(device);
#else
        st_error(ST_ERR_UNSUPPORTED, "backend 'vulkan' is not built into this strata (configure with -DSTRATA_VULKAN=ON)");
        return NULL;
#endif
    }
    (void)device;
    st_error(ST_ERR_INVALID_ARG, "unknown backend %d", (int)kind);
    return NULL;
}
