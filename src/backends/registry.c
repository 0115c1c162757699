/*
 * registry.c — the backends, one registration line each, and finding one
 * by kind or name.
 *
 * A backend's kind (strata.h's st_backend_kind) is its index in `slots`:
 * the C API numbered cpu, cuda and opencl 0, 1 and 2, so they keep those
 * places and a new backend goes at the end.  Everything that lists
 * backends (the command line, the ops matrix, plan_dot, Python through
 * st_backend_name, the address index) enumerates this table.
 *
 * A built-in backend names its entry point.  A loadable one (CUDA:
 * libstrata_cuda.so) names its file instead; it is loaded on first
 * request, so a program that never asks for CUDA never maps the CUDA
 * libraries (they cost a CPU-only process ~170 MB of resident memory just
 * by loading).  The file is looked for beside the library (libstrata.so's
 * directory, found with dladdr, or the program's own when it links strata
 * statically), then in the installed library directory relative to the
 * program (bin/../lib, where cmake --install puts it), then on the
 * library path; STRATA_<NAME>_MODULE (STRATA_CUDA_MODULE) names it
 * explicitly.  Its one entry point is st_<name>_module.  The module links
 * libstrata.so, so it calls back into the library that loaded it, or into
 * a static program's copy when the program exports it (-rdynamic).
 */
#include "backends/registry.h"

#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

st_backend_entry st_cpu_module;
#ifdef ST_HAVE_OPENCL
st_backend_entry st_opencl_module;
#define ST_OPENCL_ENTRY st_opencl_module
#else
#define ST_OPENCL_ENTRY NULL /* not built: its lookups say so */
#endif
#ifdef ST_HAVE_VULKAN
const st_backend_module *st_vulkan_module(void);
#define ST_VULKAN_ENTRY st_vulkan_module
#else
#define ST_VULKAN_ENTRY NULL
#endif

typedef struct st_backend_slot {
    const char *name;
    st_backend_entry *entry;                 /* built in; NULL: loadable or not built */
    const char *file;                        /* loadable: the shared object's file name */
} st_backend_slot;

/* ---- the registry: one line per backend, in st_backend_kind order ---- */
static const st_backend_slot slots[] = {
    {"cpu", st_cpu_module, NULL},
    {"cuda", NULL, "libstrata_cuda.so"},
    {"opencl", ST_OPENCL_ENTRY, NULL},
    {"vulkan", ST_VULKAN_ENTRY, NULL},
};

#define N_SLOTS ((int)(sizeof slots / sizeof *slots))

/* what loading each loadable slot found, once */
static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
static const st_backend_module *loaded[N_SLOTS];
static char load_error[N_SLOTS][512];

#ifndef ST_BIN_TO_LIBDIR
#define ST_BIN_TO_LIBDIR "../lib"
#endif

int st_backend_count(void) { return N_SLOTS; }

const char *st_backend_name(st_backend_kind kind)
{
    return (int)kind >= 0 && (int)kind < N_SLOTS ? slots[kind].name : NULL;
}

st_status st_backend_find(const char *name, st_backend_kind *out)
{
    char known[256] = "";
    for (int i = 0; i < N_SLOTS; i++) {
        if (name && !strcmp(name, slots[i].name)) {
            *out = (st_backend_kind)i;
            return ST_OK;
        }
        size_t n = strlen(known);
        snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", slots[i].name);
    }
    return st_error(ST_ERR_INVALID_ARG, "unknown backend '%s' (one of: %s)", name ? name : "(null)", known);
}

/* dlopens file in dir's directory joined with rel.  A module that is there
 * but does not load (a library it needs is missing) ends the search with
 * that reason, the one the user needs. */
static void *load_beside(const char *dir, const char *rel, const char *file, bool *found)
{
    char path[PATH_MAX + 128];
    const char *slash = strrchr(dir, '/');
    if (*found || !slash) return NULL;
    snprintf(path, sizeof path, "%.*s/%s%s", (int)(slash - dir), dir, rel, file);
    if (access(path, F_OK) != 0) return NULL;
    *found = true;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void load_module(int i)
{
    const st_backend_slot *sl = &slots[i];
    char env_name[64], entry_name[96], exe[PATH_MAX];
    int n = snprintf(env_name, sizeof env_name, "STRATA_%s_MODULE", sl->name);
    for (int k = 7; k < n && k < (int)sizeof env_name; k++) env_name[k] = (char)toupper((unsigned char)env_name[k]);
    const char *env = getenv(env_name);
    void *h = NULL;
    if (env && *env) {
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    } else {
        bool found = false;
        Dl_info lib;
        /* any object of the library names the file it was loaded from */
        if (dladdr(&module_lock, &lib) && lib.dli_fname) h = load_beside(lib.dli_fname, "", sl->file, &found);
        /* a program is named by its argv[0], which may lack a directory */
        ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (len > 0) {
            exe[len] = 0;
            if (!h) h = load_beside(exe, "", sl->file, &found);
            if (!h) h = load_beside(exe, ST_BIN_TO_LIBDIR "/", sl->file, &found);
        }
        if (!h && !found) h = dlopen(sl->file, RTLD_NOW | RTLD_LOCAL);
    }
    char *err = load_error[i];
    if (!h) {
        const char *e = dlerror();
        snprintf(err, sizeof load_error[i], "backend '%s' is not available: cannot load %s (%s)", sl->name, sl->file,
                 e ? e : "not found");
        return;
    }
    /* the one name looked up: the entry point backend.h declares */
    snprintf(entry_name, sizeof entry_name, "st_%s_module", sl->name);
    st_backend_entry *entry = (st_backend_entry *)dlsym(h, entry_name);
    const st_backend_module *m = entry ? entry() : NULL;
    if (!m) snprintf(err, sizeof load_error[i], "backend '%s': %s has no entry point %s", sl->name, sl->file, entry_name);
    else if (m->abi != ST_BACKEND_ABI)
        snprintf(err, sizeof load_error[i], "backend '%s': %s is of another build (ABI %d, this is %d)", sl->name, sl->file,
                 m->abi, ST_BACKEND_ABI);
    else loaded[i] = m;
}

const st_backend_module *st_backend_module_of(st_backend_kind kind)
{
    int i = (int)kind;
    if (i < 0 || i >= N_SLOTS) {
        st_error(ST_ERR_INVALID_ARG, "unknown backend %d (this strata has %d)", i, N_SLOTS);
        return NULL;
    }
    if (slots[i].entry) return slots[i].entry();
    if (!slots[i].file) {
        char upper[32];
        snprintf(upper, sizeof upper, "%s", slots[i].name);
        for (char *c = upper; *c; c++) *c = (char)toupper((unsigned char)*c);
        st_error(ST_ERR_UNSUPPORTED, "backend '%s' is not built into this strata (configure with -DSTRATA_%s=ON)",
                 slots[i].name, upper);
        return NULL;
    }
    pthread_mutex_lock(&module_lock);
    if (!loaded[i] && !load_error[i][0]) load_module(i);
    const st_backend_module *m = loaded[i];
    pthread_mutex_unlock(&module_lock);
    if (!m) st_error(ST_ERR_UNSUPPORTED, "%s", load_error[i]);
    return m;
}

int st_backend_available(st_backend_kind kind) { return st_backend_module_of(kind) != NULL; }

const st_kernel_table *st_backend_kernels(st_backend_kind kind)
{
    const st_backend_module *m = st_backend_module_of(kind);
    return m ? m->kernels : NULL;
}

st_backend *st_backend_get(st_backend_kind kind, int device)
{
    const st_backend_module *m = st_backend_module_of(kind);
    return m ? m->open(kind, device) : NULL;
}
