/*
 * cuda.c — the CUDA backend: devices, storages, and host <-> device copies.
 *
 * One backend object per device, created on first use and kept for the
 * process (storages that outlive their session still need it).  Each
 * storage is one cudaMalloc: a session holds a few large ones (its arena,
 * a plan's constants), never one per tensor per run.  Every storage is
 * entered in the address index (rule 2), so a raw device pointer anywhere
 * inside one resolves to (storage, offset).
 *
 * Host copies go through pinned staging chunks on a transfer stream.  An
 * upload is asynchronous: the call returns once the bytes are in a pinned
 * chunk and their copy is queued (the caller's buffer is free again), and
 * each run's commands start after every upload queued before it
 * (cuda_exec.c waits on the transfer stream at submit).  A download
 * returns when the bytes have arrived.  Copies on the one transfer stream
 * run in order, so a read after a write sees it.  The caller
 * (session/access.c, session/session.c) has already waited for the commands
 * whose footprints overlap the range.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/backend.h"
#include "backends/cuda/cuda_internal.h"
#include "core/fault.h"
#include "core/status.h"
#include "backends/cuda/cuda_ctx.h"
#include "ops/op.h"

#define ST_CUDA_MAX_DEVICES 16
#define ST_STAGING_SLOTS 4
#define ST_STAGING_SLOT_BYTES ((size_t)8 << 20)

static st_cuda_device *devices[ST_CUDA_MAX_DEVICES];
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t capture_lock = PTHREAD_RWLOCK_INITIALIZER;

void st_cuda_capture_lock(void) { pthread_rwlock_rdlock(&capture_lock); }
void st_cuda_capture_unlock(void) { pthread_rwlock_unlock(&capture_lock); }
void st_cuda_exclusive_lock(void) { pthread_rwlock_wrlock(&capture_lock); }
void st_cuda_exclusive_unlock(void) { pthread_rwlock_unlock(&capture_lock); }

st_status st_cuda_check(int err, const char *what)
{
    if (err == cudaSuccess) return ST_OK;
    /* out of memory is the caller's to handle (a smaller model, a lower
     * limit), not a broken device: it gets its own code wherever it arises */
    st_status code = err == cudaErrorMemoryAllocation ? ST_ERR_NOMEM : ST_ERR_BACKEND;
    return st_error(code, "cuda: %s: %s", what, cudaGetErrorString((cudaError_t)err));
}

static st_cuda_device *cb(st_backend *b) { return (st_cuda_device *)b; }

static void storage_free(st_backend *b, st_storage *s)
{
    st_storage_index_remove(s);
    cudaSetDevice(cb(b)->device);
    st_cuda_exclusive_lock();
    if (s->dev) cudaFree(s->dev);
    st_cuda_exclusive_unlock();
    free(s);
}

static st_status storage_alloc(st_backend *b, uint64_t size, const char *label, st_storage **out)
{
    st_cuda_device *c = cb(b);
    ST_TRY(st_cuda_check(cudaSetDevice(c->device), "cudaSetDevice"));
    st_storage *s = calloc(1, sizeof *s);
    if (!s) return st_error(ST_ERR_NOMEM, "out of memory allocating storage '%s'", label);
    void *p = NULL;
    if (size) {
        /* a test's injected failure takes the driver's own out-of-memory path */
        st_cuda_exclusive_lock();
        cudaError_t e = st_fault_hit(ST_FAULT_DEVICE_ALLOC, label, size) ? cudaErrorMemoryAllocation : cudaMalloc(&p, size);
        st_cuda_exclusive_unlock();
        if (e != cudaSuccess) {
            free(s);
            cudaGetLastError(); /* clear the sticky-free error state */
            return st_error(ST_ERR_NOMEM, "cuda: cannot allocate %llu bytes for %s on device %d: %s",
                            (unsigned long long)size, label, c->device, cudaGetErrorString(e));
        }
    }
    atomic_init(&s->refs, 1);
    s->backend = b;
    s->free_fn = storage_free;
    s->space = b->kind;
    s->size = size;
    s->dev = p;
    s->addr = (uintptr_t)p;
    snprintf(s->label, sizeof s->label, "%s", label);
    st_storage_index_add(s);
    *out = s;
    return ST_OK;
}

/* Copies through the pinned chunks in turn; the lock serialises users of
 * the chunks.  Uploads do not wait for their copies (see above). */
static st_status transfer(st_backend *b, st_storage *s, uint64_t off, void *host, uint64_t n, bool to_device)
{
    st_cuda_device *c = cb(b);
    if (off > s->size || n > s->size - off)
        return st_error(ST_ERR_INTERNAL, "cuda: copy of %llu bytes at %llu outside storage '%s' (%llu bytes)",
                        (unsigned long long)n, (unsigned long long)off, s->label, (unsigned long long)s->size);
    if (!n) return ST_OK;
    st_status r = ST_OK;
    cudaStream_t cs = (cudaStream_t)c->copy_stream;
    pthread_mutex_lock(&c->staging_lock);
    cudaSetDevice(c->device);
    for (uint64_t done = 0; done < n && r == ST_OK; done += ST_STAGING_SLOT_BYTES) {
        size_t len = n - done < ST_STAGING_SLOT_BYTES ? (size_t)(n - done) : ST_STAGING_SLOT_BYTES;
        char *d = (char *)s->dev + off + done;
        int slot = c->next_slot;
        c->next_slot = (slot + 1) % ST_STAGING_SLOTS;
        char *chunk = (char *)c->staging + (size_t)slot * ST_STAGING_SLOT_BYTES;
        cudaEvent_t free_ev = (cudaEvent_t)c->slot_free[slot];
        /* the chunk's previous copy must have read it */
        r = st_cuda_check(cudaEventSynchronize(free_ev), "waiting for a staging chunk");
        if (r != ST_OK) break;
        if (to_device) {
            memcpy(chunk, (char *)host + done, len);
            r = st_cuda_check(cudaMemcpyAsync(d, chunk, len, cudaMemcpyHostToDevice, cs), "cudaMemcpyAsync to device");
            if (r == ST_OK) r = st_cuda_check(cudaEventRecord(free_ev, cs), "cudaEventRecord");
        } else {
            r = st_cuda_check(cudaMemcpyAsync(chunk, d, len, cudaMemcpyDeviceToHost, cs), "cudaMemcpyAsync to host");
            if (r == ST_OK) r = st_cuda_check(cudaEventRecord(free_ev, cs), "cudaEventRecord");
            if (r == ST_OK) r = st_cuda_check(cudaEventSynchronize(free_ev), "copy to host");
            if (r == ST_OK) memcpy((char *)host + done, chunk, len);
        }
    }
    pthread_mutex_unlock(&c->staging_lock);
    return r;
}

static st_status cuda_write(st_backend *b, st_storage *s, uint64_t off, const void *src, uint64_t n)
{
    return transfer(b, s, off, (void *)src, n, true);
}

static st_status cuda_read(st_backend *b, st_storage *s, uint64_t off, void *dst, uint64_t n)
{
    return transfer(b, s, off, dst, n, false);
}

static st_status cuda_fill(st_backend *b, st_storage *s, uint64_t off, int byte, uint64_t n)
{
    st_cuda_device *c = cb(b);
    if (off > s->size || n > s->size - off) return st_error(ST_ERR_INTERNAL, "cuda: fill outside storage '%s'", s->label);
    if (!n) return ST_OK;
    cudaSetDevice(c->device);
    ST_TRY(st_cuda_check(cudaMemsetAsync((char *)s->dev + off, byte, n, c->copy_stream), "cudaMemsetAsync"));
    return st_cuda_check(cudaStreamSynchronize(c->copy_stream), "fill");
}

/* One event per staging chunk, recorded once so that the first wait on
 * it returns at once. */
static bool make_slot_events(st_cuda_device *c)
{
    for (int i = 0; i < ST_STAGING_SLOTS; i++) {
        cudaEvent_t ev;
        if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) return false;
        c->slot_free[i] = ev;
        if (cudaEventRecord(ev, (cudaStream_t)c->copy_stream) != cudaSuccess) return false;
    }
    return true;
}

/* ---- pinned host memory: a mixed plan's host arena ---- */

/* Host commands of a mixed plan read and write the host arena, and
 * transfers copy between it and the device.  Pinned memory lets those
 * copies run asynchronously on the stream (and be captured into a CUDA
 * graph); the storage's host pointer is what the CPU kernels see. */
static void pinned_free(st_backend *b, st_storage *s)
{
    (void)b;
    st_storage_index_remove(s);
    st_cuda_exclusive_lock();
    if (s->host) cudaFreeHost(s->host);
    st_cuda_exclusive_unlock();
    free(s);
}

static st_status pinned_copy(st_storage *s, uint64_t off, uint64_t n, const char *what)
{
    if (off > s->size || n > s->size - off)
        return st_error(ST_ERR_INTERNAL, "cuda: %s of %llu bytes at %llu outside storage '%s' (%llu bytes)", what,
                        (unsigned long long)n, (unsigned long long)off, s->label, (unsigned long long)s->size);
    return ST_OK;
}

static st_status pinned_write(st_backend *b, st_storage *s, uint64_t off, const void *src, uint64_t n)
{
    (void)b;
    ST_TRY(pinned_copy(s, off, n, "write"));
    if (n) memcpy((char *)s->host + off, src, n);
    return ST_OK;
}

static st_status pinned_read(st_backend *b, st_storage *s, uint64_t off, void *dst, uint64_t n)
{
    (void)b;
    ST_TRY(pinned_copy(s, off, n, "read"));
    if (n) memcpy(dst, (char *)s->host + off, n);
    return ST_OK;
}

static st_status pinned_fill(st_backend *b, st_storage *s, uint64_t off, int byte, uint64_t n)
{
    (void)b;
    ST_TRY(pinned_copy(s, off, n, "fill"));
    if (n) memset((char *)s->host + off, byte, n);
    return ST_OK;
}

/* Pinned storages belong to this backend object: it frees them.  It lives
 * in the host address space (ST_BACKEND_CPU), as the CPU's storages do. */
static st_backend pinned_backend = {
    .kind = ST_BACKEND_CPU,
    .name = "cuda-pinned",
    .storage_free = pinned_free,
    .write = pinned_write,
    .read = pinned_read,
    .fill = pinned_fill,
};

static st_status host_alloc(st_backend *b, uint64_t size, const char *label, st_storage **out)
{
    st_cuda_device *c = cb(b);
    ST_TRY(st_cuda_check(cudaSetDevice(c->device), "cudaSetDevice"));
    st_storage *s = calloc(1, sizeof *s);
    if (!s) return st_error(ST_ERR_NOMEM, "out of memory allocating storage '%s'", label);
    void *p = NULL;
    st_cuda_exclusive_lock();
    bool failed = size && (st_fault_hit(ST_FAULT_DEVICE_ALLOC, label, size) || cudaMallocHost(&p, size) != cudaSuccess);
    st_cuda_exclusive_unlock();
    if (failed) {
        free(s);
        cudaGetLastError();
        return st_error(ST_ERR_NOMEM, "cuda: cannot allocate %llu bytes of pinned host memory for %s", (unsigned long long)size,
                        label);
    }
    atomic_init(&s->refs, 1);
    s->backend = &pinned_backend;
    s->free_fn = pinned_free;
    s->space = ST_BACKEND_CPU; /* host memory */
    s->size = size;
    s->host = p;
    s->addr = (uintptr_t)p;
    snprintf(s->label, sizeof s->label, "%s", label);
    st_storage_index_add(s);
    *out = s;
    return ST_OK;
}

static st_backend_kind cuda_kind = ST_BACKEND_CUDA; /* the registry's number, set by open */

static st_backend *st_cuda_backend(st_backend_kind kind, int device)
{
    if (device < 0 || device >= ST_CUDA_MAX_DEVICES) {
        st_error(ST_ERR_INVALID_ARG, "cuda: device %d is out of range", device);
        return NULL;
    }
    pthread_mutex_lock(&devices_lock);
    cuda_kind = kind;
    st_cuda_device *c = devices[device];
    if (!c) {
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess || count == 0) {
            st_error(ST_ERR_BACKEND, "cuda: no CUDA device available (%s)",
                     e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports 0 devices");
            cudaGetLastError();
        } else if (device >= count) {
            st_error(ST_ERR_INVALID_ARG, "cuda: device %d requested, %d present", device, count);
        } else {
            c = calloc(1, sizeof *c);
            st_cuda_exclusive_lock();
            bool made = c && cudaSetDevice(device) == cudaSuccess && cudaStreamCreateWithFlags((cudaStream_t *)&c->copy_stream, cudaStreamNonBlocking) == cudaSuccess &&
                cudaMallocHost(&c->staging, ST_STAGING_SLOTS * ST_STAGING_SLOT_BYTES) == cudaSuccess &&
                make_slot_events(c);
            st_cuda_exclusive_unlock();
            if (made) {
                c->base.kind = cuda_kind;
                c->base.name = "cuda";
                c->base.storage_alloc = storage_alloc;
                c->base.storage_free = storage_free;
                c->base.write = cuda_write;
                c->base.read = cuda_read;
                c->base.fill = cuda_fill;
                c->base.exec_create = st_cuda_exec_create;
                c->base.kernels = &st_cuda_kernel_table;
                c->base.transfer = st_cuda_transfer;
                c->base.host_alloc = host_alloc;
                c->device = device;
                pthread_mutex_init(&c->staging_lock, NULL);
                cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, device);
                devices[device] = c;
            } else {
                st_error(ST_ERR_BACKEND, "cuda: cannot initialise device %d: %s", device, cudaGetErrorString(cudaGetLastError()));
                free(c);
                c = NULL;
            }
        }
    }
    pthread_mutex_unlock(&devices_lock);
    return c ? &c->base : NULL;
}

/* The module's one entry point, of the type runtime/backend.h declares. */
st_backend_entry st_cuda_module;
static const st_backend_module module = {ST_BACKEND_ABI, "cuda", &st_cuda_kernel_table, st_cuda_backend};

const st_backend_module *st_cuda_module(void) { return &module; }
