/*
 * scratch.h — kernels' temporary memory, kept per worker thread across runs.
 *
 * A CPU kernel's loop chunk or task that needs temporary memory (a conv's
 * im2col staging, a GEMM's packed panels) takes it with st_scratch_take
 * and gives it back with st_scratch_give.  On a pool worker (pool.c) the
 * block comes from that worker's cache: a few blocks, each grown to the
 * largest size asked of it and kept until the worker exits, which is when
 * its pool is destroyed with its session or executor.  So a warm
 * session's runs take their scratch without calling malloc: with 8
 * threads and dozens of sessions, malloc and free of the same large
 * blocks on every run scatter free memory over glibc's per-thread arenas,
 * which keep it (RSS grew some 45 MiB over a 9,600-run soak with what
 * strata held flat; tests/faults/README.md).  On any other thread (the
 * caller's, plan-time folding) a block is allocated and freed each time,
 * as before.
 *
 * A kept block of ST_BIG_MIN bytes or more is mapped on its own
 * (core/bigmem.h): a session's end unmaps its workers' blocks, instead of
 * leaving them in malloc's arenas for the next session's workers to
 * fragment.
 *
 * A block is 64-byte aligned.  st_scratch_take returns NULL when out of
 * memory, with the cache as it was, so the kernel's ST_ERR_NOMEM path is
 * the one it had with malloc.  A block may be given back from another
 * thread than the one that took it.
 */
#ifndef ST_SCRATCH_H
#define ST_SCRATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Blocks a worker keeps: enough for what one chunk holds at once and a
 * loop nested in it (the conv's staging, its output tile and its packed
 * weights); a take beyond these, or larger than ST_SCRATCH_MAX_KEPT, is
 * plain malloc and free. */
enum { ST_SCRATCH_SLOTS = 8 };
#define ST_SCRATCH_MAX_KEPT ((size_t)64 << 20)

typedef struct st_scratch_slot {
    void *base;   /* the allocation; the block starts ST_SCRATCH_HEAD bytes in */
    size_t cap;   /* bytes usable after the header */
    atomic_bool busy;
} st_scratch_slot;

typedef struct st_scratch_cache {
    st_scratch_slot slot[ST_SCRATCH_SLOTS];
} st_scratch_cache;

/* For pool.c: a worker thread attaches its cache (zeroed, on its stack)
 * when it starts and detaches it, freeing every block, when it exits. */
void st_scratch_attach(st_scratch_cache *c);
void st_scratch_detach(st_scratch_cache *c);

void *st_scratch_take(size_t bytes);
void st_scratch_give(void *p);

/* Bytes of malloc's that the workers' caches keep now, over every pool:
 * the blocks under ST_BIG_MIN, the larger ones being mapped (for
 * tests/faults' soak, which judges malloc's bytes in use less these). */
size_t st_scratch_kept(void);

#endif
