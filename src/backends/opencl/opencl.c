/*
 * opencl.c — the OpenCL backend: choosing a device, storages, and host <->
 * storage copies.
 *
 * Device choice: the devices of every platform form one list, GPUs first
 * (in platform order), then every other device; session option `device`
 * indexes it, so device 0 is the first GPU, else the first device of any
 * type.  STRATA_OPENCL_PLATFORM=P keeps only platform P's devices, and
 * STRATA_OPENCL_DEVICE=D picks device D of that (unsorted) list.
 *
 * Rule 1: each storage is exactly one cl_mem.  Views are never given
 * buffers of their own (no clCreateSubBuffer anywhere in strata except
 * `strata probe`, which makes one on purpose to measure the hazard):
 * kernels take (cl_mem, element offset) plus strides.
 *
 * Rule 2: a cl_mem is a handle, not an address, so each storage also gets
 * a range in a synthetic, process-wide OpenCL address space (disjoint
 * ranges with a guard gap, handed out in allocation order) and that range
 * goes into the address index: st_storage_resolve(b->kind,
 * s->addr + off) gives (s, off) for any off inside the storage.  Code that
 * holds a (cl_mem, offset) pair instead uses st_cl_resolve, which also
 * accepts a sub-buffer someone else made over a storage (it follows
 * CL_MEM_ASSOCIATED_MEMOBJECT and adds CL_MEM_OFFSET), and lands on the
 * same index entry.
 *
 * Host-unified devices (a CPU device such as PoCL, an integrated GPU:
 * CL_DEVICE_HOST_UNIFIED_MEMORY) get their storages with
 * CL_MEM_ALLOC_HOST_PTR, the flag their drivers map without copying, and
 * the backend says host_mapped (runtime/backend.h): a mixed plan's CPU
 * nodes then work on the storages in place, the executor mapping exactly
 * the byte ranges each one touches (cl_exec.c), where a discrete device
 * gets transfer commands that copy through a host arena.
 * STRATA_OPENCL_NO_ZERO_COPY=1 keeps the copy path on any device (for
 * comparison; the storages stay host-allocated).
 *
 * Host copies use a separate in-order transfer queue and block until the
 * bytes have moved.  They do not wait for commands: the caller
 * (session/access.c, session/session.c) has already waited for the commands
 * whose footprints overlap the range.  Commands that are still running
 * touch other bytes of the same cl_mem; OpenCL leaves concurrent use of
 * one buffer from two queues to the implementation, and every driver
 * strata runs on keeps disjoint byte ranges independent.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/fault.h"
#include "core/status.h"
#include "ops/op.h"

#define ST_CL_MAX_DEVICES 16
#define ST_CL_ADDR_BASE ((uint64_t)1 << 44)
#define ST_CL_ADDR_GAP ((uint64_t)1 << 16)

typedef struct st_cl_mem_entry {
    cl_mem mem;
    st_storage *storage;
} st_cl_mem_entry;

static st_cl_device *devices[ST_CL_MAX_DEVICES];
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
/* the next free address of the synthetic OpenCL address space (rule 2) */
static _Atomic uint64_t next_addr = ST_CL_ADDR_BASE;
static st_backend_kind cl_kind = ST_BACKEND_OPENCL; /* the registry's number, set by open */

const char *st_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) \
    case x: return #x;
        E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
        E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
        E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
        E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
        E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE)
        E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
        E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
        E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
        E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
        E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION)
        E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
        E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
        E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
        E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
        E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
        E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL driver installed)";
    }
    return "CL_UNKNOWN_ERROR";
}

st_status st_cl_check(cl_int err, const char *what)
{
    if (err == CL_SUCCESS) return ST_OK;
    st_status code = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ? ST_ERR_NOMEM : ST_ERR_BACKEND;
    return st_error(code, "opencl: %s: %s (%d)", what, st_cl_error_name(err), (int)err);
}

static st_cl_device *cd(st_backend *b) { return (st_cl_device *)b; }

/* ---- the cl_mem registry (st_cl_resolve) ---- */

static int mem_find(const st_cl_device *d, cl_mem m, bool *found)
{
    int lo = 0, hi = d->n_mems;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((uintptr_t)d->mems[mid].mem < (uintptr_t)m) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < d->n_mems && d->mems[lo].mem == m;
    return lo;
}

static void mem_add(st_cl_device *d, cl_mem m, st_storage *s)
{
    pthread_mutex_lock(&d->mem_lock);
    if (d->n_mems == d->cap_mems) {
        int cap = d->cap_mems ? d->cap_mems * 2 : 32;
        st_cl_mem_entry *v = realloc(d->mems, (size_t)cap * sizeof *v);
        if (!v) { /* the registry is a resolver for foreign handles; losing an entry is not fatal */
            pthread_mutex_unlock(&d->mem_lock);
            return;
        }
        d->mems = v;
        d->cap_mems = cap;
    }
    bool found;
    int i = mem_find(d, m, &found);
    memmove(d->mems + i + 1, d->mems + i, (size_t)(d->n_mems - i) * sizeof *d->mems);
    d->mems[i] = (st_cl_mem_entry){m, s};
    d->n_mems++;
    pthread_mutex_unlock(&d->mem_lock);
}

static void mem_remove(st_cl_device *d, cl_mem m)
{
    pthread_mutex_lock(&d->mem_lock);
    bool found;
    int i = mem_find(d, m, &found);
    if (found) {
        memmove(d->mems + i, d->mems + i + 1, (size_t)(d->n_mems - i - 1) * sizeof *d->mems);
        d->n_mems--;
    }
    pthread_mutex_unlock(&d->mem_lock);
}

st_storage *st_cl_resolve(st_backend *b, cl_mem m, uint64_t off, uint64_t *storage_off)
{
    st_cl_device *d = cd(b);
    /* a sub-buffer: its parent at its origin (followed to the root) */
    for (int depth = 0; m && depth < 8; depth++) {
        cl_mem parent = NULL;
        size_t origin = 0;
        if (clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) != CL_SUCCESS || !parent) break;
        if (clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof origin, &origin, NULL) != CL_SUCCESS) return NULL;
        off += origin;
        m = parent;
    }
    pthread_mutex_lock(&d->mem_lock);
    bool found;
    int i = mem_find(d, m, &found);
    st_storage *s = found ? d->mems[i].storage : NULL;
    pthread_mutex_unlock(&d->mem_lock);
    if (!s) return NULL;
    /* the same answer the address index gives (rule 2) */
    return st_storage_resolve(s->backend->kind, s->addr + off, storage_off);
}

/* ---- storages ---- */

static void storage_free(st_backend *b, st_storage *s)
{
    st_storage_index_remove(s);
    if (s->dev) {
        mem_remove(cd(b), (cl_mem)s->dev);
        clReleaseMemObject((cl_mem)s->dev);
    }
    free(s);
}

static st_status storage_alloc(st_backend *b, uint64_t size, const char *label, st_storage **out)
{
    st_cl_device *d = cd(b);
    st_storage *s = calloc(1, sizeof *s);
    if (!s) return st_error(ST_ERR_NOMEM, "out of memory allocating storage '%s'", label);
    cl_mem m = NULL;
    if (size) {
        cl_int err = CL_SUCCESS;
        /* a test's injected failure takes the driver's own out-of-memory path */
        if (st_fault_hit(ST_FAULT_DEVICE_ALLOC, label, size)) err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        else m = clCreateBuffer(d->context, CL_MEM_READ_WRITE | (d->unified ? CL_MEM_ALLOC_HOST_PTR : 0), (size_t)size,
                                NULL, &err);
        if (err != CL_SUCCESS) {
            free(s);
            bool nomem = err == CL_INVALID_BUFFER_SIZE || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                         err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES;
            return st_error(nomem ? ST_ERR_NOMEM : ST_ERR_BACKEND,
                            "opencl: cannot allocate %llu bytes for %s on '%s': %s (%d)", (unsigned long long)size,
                            label, d->name, st_cl_error_name(err), (int)err);
        }
    }
    atomic_init(&s->refs, 1);
    s->backend = b;
    s->free_fn = storage_free;
    s->space = b->kind;
    s->size = size;
    s->dev = m;
    s->addr = atomic_fetch_add(&next_addr, (size + ST_CL_ADDR_GAP - 1) / ST_CL_ADDR_GAP * ST_CL_ADDR_GAP + ST_CL_ADDR_GAP);
    snprintf(s->label, sizeof s->label, "%s", label);
    st_storage_index_add(s);
    if (m) mem_add(d, m, s);
    *out = s;
    return ST_OK;
}

static st_status range_ok(const st_storage *s, uint64_t off, uint64_t n, const char *what)
{
    if (off > s->size || n > s->size - off)
        return st_error(ST_ERR_INTERNAL, "opencl: %s of %llu bytes at %llu outside storage '%s' (%llu bytes)", what,
                        (unsigned long long)n, (unsigned long long)off, s->label, (unsigned long long)s->size);
    return ST_OK;
}

static st_status cl_write(st_backend *b, st_storage *s, uint64_t off, const void *src, uint64_t n)
{
    st_cl_device *d = cd(b);
    ST_TRY(range_ok(s, off, n, "write"));
    if (!n) return ST_OK;
    pthread_mutex_lock(&d->transfer_lock);
    cl_int err = clEnqueueWriteBuffer(d->transfer, (cl_mem)s->dev, CL_TRUE, (size_t)off, (size_t)n, src, 0, NULL, NULL);
    pthread_mutex_unlock(&d->transfer_lock);
    return st_cl_check(err, "clEnqueueWriteBuffer");
}

static st_status cl_read(st_backend *b, st_storage *s, uint64_t off, void *dst, uint64_t n)
{
    st_cl_device *d = cd(b);
    ST_TRY(range_ok(s, off, n, "read"));
    if (!n) return ST_OK;
    pthread_mutex_lock(&d->transfer_lock);
    cl_int err = clEnqueueReadBuffer(d->transfer, (cl_mem)s->dev, CL_TRUE, (size_t)off, (size_t)n, dst, 0, NULL, NULL);
    pthread_mutex_unlock(&d->transfer_lock);
    return st_cl_check(err, "clEnqueueReadBuffer");
}

static st_status cl_fill(st_backend *b, st_storage *s, uint64_t off, int byte, uint64_t n)
{
    st_cl_device *d = cd(b);
    ST_TRY(range_ok(s, off, n, "fill"));
    if (!n) return ST_OK;
    cl_uchar pattern = (cl_uchar)byte;
    pthread_mutex_lock(&d->transfer_lock);
    cl_event ev = NULL;
    cl_int err = clEnqueueFillBuffer(d->transfer, (cl_mem)s->dev, &pattern, 1, (size_t)off, (size_t)n, 0, NULL, &ev);
    if (err == CL_SUCCESS) err = clWaitForEvents(1, &ev);
    if (ev) clReleaseEvent(ev);
    pthread_mutex_unlock(&d->transfer_lock);
    return st_cl_check(err, "clEnqueueFillBuffer");
}

/* ---- devices ---- */

typedef struct cand {
    cl_platform_id platform;
    cl_device_id device;
    bool gpu;
} cand;

static bool env_index(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return false;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1000) return false;
    *out = (int)x;
    return true;
}

/* The device list in choice order (see the header).  Returns the count. */
static int list_devices(cand *out, int max, char *why, size_t cap)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        snprintf(why, cap, "no OpenCL platform (clGetPlatformIDs: %s)", err != CL_SUCCESS ? st_cl_error_name(err) : "0 platforms");
        return 0;
    }
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    clGetPlatformIDs(np, plats, NULL);
    int want_p = -1, want_d = -1;
    bool has_p = env_index("STRATA_OPENCL_PLATFORM", &want_p), has_d = env_index("STRATA_OPENCL_DEVICE", &want_d);
    if (has_p && want_p >= (int)np) {
        snprintf(why, cap, "STRATA_OPENCL_PLATFORM=%d, but there are %u platforms", want_p, np);
        return 0;
    }
    cand all[64];
    int n = 0;
    for (cl_uint p = 0; p < np; p++) {
        if (has_p && (int)p != want_p) continue;
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id devs[32];
        if (nd > 32) nd = 32;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint i = 0; i < nd && n < 64; i++) {
            cl_device_type t = 0;
            clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof t, &t, NULL);
            all[n++] = (cand){plats[p], devs[i], (t & CL_DEVICE_TYPE_GPU) != 0};
        }
    }
    if (n == 0) {
        snprintf(why, cap, "no OpenCL device%s", has_p ? " on the chosen platform" : "");
        return 0;
    }
    if (has_d) {
        if (want_d >= n) {
            snprintf(why, cap, "STRATA_OPENCL_DEVICE=%d, but there are %d devices", want_d, n);
            return 0;
        }
        out[0] = all[want_d];
        return 1;
    }
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n && k < max; i++)
            if (all[i].gpu == (pass == 0)) out[k++] = all[i];
    return k;
}

static void info_str(cl_device_id dev, cl_device_info what, char *out, size_t cap)
{
    out[0] = 0;
    if (clGetDeviceInfo(dev, what, cap, out, NULL) != CL_SUCCESS) out[0] = 0;
    out[cap - 1] = 0;
}

/* A whole number in [lo, hi] from env var name, or *out untouched when
 * unset; anything else is an error, so a mistyped A/B knob is never
 * silently the default. */
static st_status env_int(const char *name, int lo, int hi, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return ST_OK;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi)
        return st_error(ST_ERR_INVALID_ARG, "opencl: %s=%s: expected a whole number from %d to %d", name, v, lo, hi);
    *out = (int)x;
    return ST_OK;
}

/* STRATA_OPENCL_<what>_TILE and _SPLITK into f (cl_tiles.c). */
static st_status tiling_knobs(const char *what, st_cl_tiling *f)
{
    char name[64];
    f->tile = -1;
    f->splitk = 0;
    snprintf(name, sizeof name, "STRATA_OPENCL_%s_SPLITK", what);
    ST_TRY(env_int(name, 1, 64, &f->splitk));
    snprintf(name, sizeof name, "STRATA_OPENCL_%s_TILE", what);
    const char *tile = getenv(name);
    if (tile && *tile) {
        f->tile = st_tile_index(tile);
        if (f->tile < 0) return st_error(ST_ERR_INVALID_ARG, "opencl: %s=%s: expected %s", name, tile, ST_CL_TILE_NAMES);
    }
    return ST_OK;
}

/* The Conv kernel's choice and the tiled GEMMs' overrides (k_conv.c,
 * cl_tiles.c). */
static st_status conv_knobs(st_cl_device *d, const cand *c)
{
    const char *conv = getenv("STRATA_OPENCL_CONV");
    d->conv_tiled = c->gpu;
    if (conv && *conv) {
        if (strcmp(conv, "tiled") != 0 && strcmp(conv, "rows") != 0 && strcmp(conv, "gemm64") != 0)
            return st_error(ST_ERR_INVALID_ARG, "opencl: STRATA_OPENCL_CONV=%s: expected tiled, gemm64 or rows", conv);
        d->conv_tiled = strcmp(conv, "rows") != 0;
        d->conv_gemm64 = strcmp(conv, "gemm64") == 0;
    }
    cl_uint cus = 1;
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    d->cus = cus > 0 ? (int)cus : 1;
    /* work-groups resident per compute unit, in the tile model: 4 measured
     * best on an H200 (YOLOv8n b1 f16 2.70 ms against 3.28 with 2 and 3.78
     * with 1; f32 2.10 against 2.09 and 2.24; bench/RESULTS.md) */
    d->fill = 4;
    ST_TRY(env_int("STRATA_OPENCL_CUS", 1, 100000, &d->cus));
    ST_TRY(env_int("STRATA_OPENCL_FILL", 1, 64, &d->fill));
    ST_TRY(tiling_knobs("CONV", &d->conv_force));
    ST_TRY(tiling_knobs("GEMM", &d->gemm_force));
    const char *log = getenv("STRATA_OPENCL_TILE_LOG");
    d->tile_log = log && strcmp(log, "1") == 0;
    const char *gen = getenv("STRATA_OPENCL_CONV_GENERIC");
    d->conv_generic = gen && strcmp(gen, "1") == 0;
    return ST_OK;
}

static st_status device_init(st_cl_device *d, const cand *c)
{
    d->platform = c->platform;
    d->device = c->device;
    d->is_gpu = c->gpu;
    info_str(c->device, CL_DEVICE_NAME, d->name, sizeof d->name);
    info_str(c->device, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    info_str(c->device, CL_DEVICE_VERSION, d->version, sizeof d->version);
    info_str(c->device, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    clGetPlatformInfo(c->platform, CL_PLATFORM_NAME, sizeof d->platform_name, d->platform_name, NULL);
    d->platform_name[sizeof d->platform_name - 1] = 0;
    size_t ext_len = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_len);
    char *ext = calloc(ext_len + 1, 1);
    if (ext) {
        clGetDeviceInfo(c->device, CL_DEVICE_EXTENSIONS, ext_len, ext, NULL);
        d->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
        d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
        free(ext);
    }
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    d->exact_div = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    cl_command_queue_properties qp = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
    d->out_of_order = (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
    /* PoCL keeps one loaded binary per (kernel, work-group size, widest
     * grid dim) but releases them by (kernel, work-group size) only: two
     * launches of one kernel with different grids running at once (an
     * out-of-order queue) trip its assertion `found->ref_count > 0`.  Seen
     * in 3.1 (Debian 12) and still in 5.0 (Ubuntu 24.04: a Conv feeding two
     * Sigmoids of different sizes aborted), so every PoCL gets in order. */
    char pver[128] = "";
    clGetPlatformInfo(c->platform, CL_PLATFORM_VERSION, sizeof pver, pver, NULL);
    pver[sizeof pver - 1] = 0;
    const char *pocl = strstr(pver, "PoCL ");
    d->ooo_unsafe = pocl != NULL;
    /* Host-unified memory (see the header): the device's own word for it,
     * CL_DEVICE_HOST_UNIFIED_MEMORY, which integrated GPUs and PoCL report,
     * or a CPU device (whose memory cannot be anything but the host's,
     * whatever a driver that leaves the query out says).  Not "any
     * non-GPU": an accelerator card is as discrete as a GPU. */
    cl_bool unified = CL_FALSE;
    cl_device_type type = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    d->unified = unified == CL_TRUE || (type & CL_DEVICE_TYPE_CPU) != 0;
    const char *nozc = getenv("STRATA_OPENCL_NO_ZERO_COPY");
    d->base.host_mapped = d->unified && !(nozc && strcmp(nozc, "1") == 0);
    ST_TRY(conv_knobs(d, c));
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg, &d->max_wg, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof d->addr_align, &d->addr_align, NULL);
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0};
    d->context = clCreateContext(props, 1, &c->device, NULL, NULL, &err);
    ST_TRY(st_cl_check(err, "clCreateContext"));
    d->transfer = clCreateCommandQueue(d->context, c->device, 0, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(d->context);
        return st_cl_check(err, "clCreateCommandQueue (transfers)");
    }
    pthread_mutex_init(&d->transfer_lock, NULL);
    pthread_mutex_init(&d->program_lock, NULL);
    pthread_mutex_init(&d->mem_lock, NULL);
    d->base.kind = cl_kind;
    d->base.name = "opencl";
    d->base.storage_alloc = storage_alloc;
    d->base.storage_free = storage_free;
    d->base.write = cl_write;
    d->base.read = cl_read;
    d->base.fill = cl_fill;
    d->base.exec_create = st_cl_exec_create;
    d->base.kernels = &st_cl_kernel_table;
    d->base.transfer = st_cl_transfer;
    return ST_OK;
}

static st_backend *st_opencl_backend(st_backend_kind kind, int device)
{
    if (device < 0 || device >= ST_CL_MAX_DEVICES) {
        st_error(ST_ERR_INVALID_ARG, "opencl: device %d is out of range", device);
        return NULL;
    }
    pthread_mutex_lock(&devices_lock);
    cl_kind = kind;
    st_cl_device *d = devices[device];
    if (!d) {
        cand list[ST_CL_MAX_DEVICES];
        char why[256] = "";
        int n = list_devices(list, ST_CL_MAX_DEVICES, why, sizeof why);
        if (n == 0) {
            st_error(ST_ERR_UNSUPPORTED, "opencl: %s", why);
        } else if (device >= n) {
            st_error(ST_ERR_INVALID_ARG, "opencl: device %d requested, %d present", device, n);
        } else {
            d = calloc(1, sizeof *d);
            if (!d) {
                st_error(ST_ERR_NOMEM, "out of memory");
            } else if (device_init(d, &list[device]) != ST_OK) {
                free(d);
                d = NULL;
            } else {
                d->ordinal = device;
                devices[device] = d;
            }
        }
    }
    pthread_mutex_unlock(&devices_lock);
    return d ? &d->base : NULL;
}

static const st_backend_module cl_module = {ST_BACKEND_ABI, "opencl", &st_cl_kernel_table, st_opencl_backend};

/* The registry's entry (backends/registry.c). */
st_backend_entry st_opencl_module;
const st_backend_module *st_opencl_module(void) { return &cl_module; }
