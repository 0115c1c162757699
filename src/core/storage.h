/*
 * storage.h — one allocation on one device, and the index that resolves
 * any address inside an allocation back to it.
 *
 * Rule 1 (docs/architecture.md): each allocation is exactly one st_storage, and a
 * tensor is a view {storage, byte offset, dtype, sizes, strides}.  No
 * second handle is ever made over the same memory.  Rule 2: code that
 * holds a raw address resolves it to (storage, offset) through an index of
 * address *ranges* (st_storage_resolve), never by looking up a base
 * address.
 *
 * Storages are reference counted.  A view that outlives its session keeps
 * its storage, and the storage keeps its backend, alive.
 */
#ifndef ST_STORAGE_H
#define ST_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata.h"

struct st_backend;

#ifdef __cplusplus
/* CUDA kernel files (C++) see the struct but never touch the count; an
 * atomic_int has the layout of an int */
typedef int st_refcount;
#else
#include <stdatomic.h>
typedef atomic_int st_refcount;
#endif

typedef struct st_storage {
    st_refcount refs;
    struct st_backend *backend;   /* who allocated it */
    /* Frees it once the last reference goes (its backend's storage_free):
     * the storage carries it, so core calls no backend. */
    void (*free_fn)(struct st_backend *b, struct st_storage *s);
    int space;                    /* the address space the index files it under: the
                                     allocating backend's kind (host memory: ST_BACKEND_CPU) */
    uint64_t size;                /* bytes */
    void *host;                   /* host-addressable base, or NULL on a device */
    void *dev;                    /* device handle (CUDA pointer, cl_mem), or NULL */
    uintptr_t addr;               /* the base address in the backend's address space */
    bool borrowed;                /* memory belongs to someone else (a model's weights) */
    char label[48];               /* "arena", "input 'x'", for messages */
} st_storage;

void st_storage_retain(st_storage *s);
void st_storage_release(st_storage *s);

/* The address index (rule 2).  Backends register each allocation, under
 * s->space; there is one index per address space, made on first use. */
void st_storage_index_add(st_storage *s);
void st_storage_index_remove(st_storage *s);
/* Finds the storage whose range [addr, addr + size) holds p, in the address
 * space of backend kind.  Returns NULL if none does. */
st_storage *st_storage_resolve(st_backend_kind kind, uintptr_t p, uint64_t *offset);

/* Bytes held per address space, now and at most (st_memory_usage in
 * strata.h reads them).  The index counts every storage it files but a
 * borrowed one (memory strata did not allocate); a backend notes its
 * other allocations (a CUDA executor's workspaces) with a delta. */
void st_memory_note(int space, int64_t delta);

#endif
