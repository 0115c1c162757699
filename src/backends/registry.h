/*
 * registry.h — finding a backend by kind (backends/registry.c, one line
 * per backend).  Above the backends: the session, the tools and the
 * tests ask here; the runtime below never does (it is handed a backend).
 */
#ifndef ST_BACKENDS_REGISTRY_H
#define ST_BACKENDS_REGISTRY_H

#include "runtime/backend.h"

/* The registry (backends/registry.c): a backend's kind is its index there;
 * st_backend_count() (strata.h) counts them, those this build lacks too. */
/* The module of kind, loading it if it is loadable; NULL with a message
 * when kind is out of range, not built, or its module does not load. */
const st_backend_module *st_backend_module_of(st_backend_kind kind);

/* The backend for kind, created on first use.  NULL with an error message
 * when the kind is not built in or has no device. */
st_backend *st_backend_get(st_backend_kind kind, int device);
/* The kernel table of kind, without opening a device (for `strata inspect
 * --ops` and tests); NULL with a message when it is not built. */
const st_kernel_table *st_backend_kernels(st_backend_kind kind);

/* The CPU backend: kind ST_BACKEND_CPU, the host's address space. */
st_backend *st_cpu_backend(void);

#endif
