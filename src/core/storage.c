/* storage.c — reference counting and the address-range index (rule 2). */
#include "core/storage.h"

#include "core/status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void st_storage_retain(st_storage *s) { atomic_fetch_add(&s->refs, 1); }

void st_storage_release(st_storage *s)
{
    if (!s) return;
    if (atomic_fetch_sub(&s->refs, 1) == 1) s->free_fn(s->backend, s);
}

/* A sorted array of live allocations per address space.  Lookups are
 * O(log n); additions and removals are O(n) memmoves, fine for the tens to
 * thousands of allocations a process holds (the arena keeps it small). */
typedef struct {
    st_storage **v;
    size_t n, cap;
} range_index;

/* one per address space (a backend's kind), grown as backends appear */
static range_index *st_index;
static int st_n_index;
static pthread_mutex_t st_index_lock = PTHREAD_MUTEX_INITIALIZER;

/* The index of space, under the lock; NULL when space is out of range
 * (make: grow to it; NULL then means out of memory). */
static range_index *index_of(int space, bool make)
{
    if (space < 0) return NULL;
    if (space >= st_n_index) {
        if (!make) return NULL;
        range_index *v = realloc(st_index, (size_t)(space + 1) * sizeof *v);
        if (!v) return NULL;
        memset(v + st_n_index, 0, (size_t)(space + 1 - st_n_index) * sizeof *v);
        st_index = v;
        st_n_index = space + 1;
    }
    return &st_index[space];
}

static size_t lower_bound(const range_index *ix, uintptr_t addr)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ix->v[mid]->addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ---- bytes held per address space ----
 * Plain atomics beside the index, not in it: the index may drop an entry
 * when it is out of memory, and the figures must not. */
#define ST_MEM_SPACES 16
static _Atomic uint64_t st_mem_live[ST_MEM_SPACES], st_mem_peak[ST_MEM_SPACES];

void st_memory_note(int space, int64_t delta)
{
    if (space < 0 || space >= ST_MEM_SPACES || !delta) return;
    uint64_t now = atomic_fetch_add(&st_mem_live[space], (uint64_t)delta) + (uint64_t)delta;
    uint64_t peak = atomic_load(&st_mem_peak[space]);
    while (delta > 0 && now > peak && !atomic_compare_exchange_weak(&st_mem_peak[space], &peak, now)) {
    }
}

st_status st_memory_usage(st_backend_kind kind, uint64_t *live, uint64_t *peak)
{
    if ((int)kind < 0 || (int)kind >= ST_MEM_SPACES)
        return st_error(ST_ERR_INVALID_ARG, "st_memory_usage: no backend kind %d", (int)kind);
    if (live) *live = atomic_load(&st_mem_live[kind]);
    if (peak) *peak = atomic_load(&st_mem_peak[kind]);
    return ST_OK;
}

void st_memory_reset_peak(st_backend_kind kind)
{
    if ((int)kind >= 0 && (int)kind < ST_MEM_SPACES) atomic_store(&st_mem_peak[kind], atomic_load(&st_mem_live[kind]));
}

void st_storage_index_add(st_storage *s)
{
    if (!s->borrowed) st_memory_note(s->space, (int64_t)s->size);
    pthread_mutex_lock(&st_index_lock);
    range_index *ix = index_of(s->space, true);
    if (!ix) { /* the index is a debugging aid; losing an entry is not fatal */
        pthread_mutex_unlock(&st_index_lock);
        return;
    }
    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 64;
        st_storage **v = realloc(ix->v, cap * sizeof *v);
        if (!v) { /* the index is a debugging aid; losing an entry is not fatal */
            pthread_mutex_unlock(&st_index_lock);
            return;
        }
        ix->v = v;
        ix->cap = cap;
    }
    size_t i = lower_bound(ix, s->addr);
    memmove(ix->v + i + 1, ix->v + i, (ix->n - i) * sizeof *ix->v);
    ix->v[i] = s;
    ix->n++;
    pthread_mutex_unlock(&st_index_lock);
}

void st_storage_index_remove(st_storage *s)
{
    if (!s->borrowed) st_memory_note(s->space, -(int64_t)s->size);
    pthread_mutex_lock(&st_index_lock);
    range_index *ix = index_of(s->space, false);
    for (size_t i = ix ? lower_bound(ix, s->addr) : 0; ix && i < ix->n && ix->v[i]->addr == s->addr; i++) {
        if (ix->v[i] == s) {
            memmove(ix->v + i, ix->v + i + 1, (ix->n - i - 1) * sizeof *ix->v);
            ix->n--;
            /* an empty index gives its array back: the process keeps
             * nothing once its last session is gone */
            if (!ix->n) {
                free(ix->v);
                ix->v = NULL;
                ix->cap = 0;
                /* and the per-space table once every space is empty */
                bool any = false;
                for (int k = 0; k < st_n_index; k++) any |= st_index[k].n > 0;
                if (!any) {
                    free(st_index);
                    st_index = NULL;
                    st_n_index = 0;
                }
            }
            break;
        }
    }
    pthread_mutex_unlock(&st_index_lock);
}

st_storage *st_storage_resolve(st_backend_kind kind, uintptr_t p, uint64_t *offset)
{
    st_storage *found = NULL;
    pthread_mutex_lock(&st_index_lock);
    range_index *ix = index_of((int)kind, false);
    /* the last allocation starting at or before p is the only candidate */
    size_t i = ix ? lower_bound(ix, p + 1) : 0;
    if (i > 0) {
        st_storage *s = ix->v[i - 1];
        if (p >= s->addr && p - s->addr < s->size) {
            found = s;
            if (offset) *offset = p - s->addr;
        }
    }
    pthread_mutex_unlock(&st_index_lock);
    return found;
}
