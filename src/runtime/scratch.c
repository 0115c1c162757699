/* scratch.c — per-worker scratch blocks kept across runs (see scratch.h). */
#include "runtime/scratch.h"

#include "core/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each block is preceded by a header naming its cache and slot (NULL for
 * a block outside any cache), so st_scratch_give needs nothing else and
 * works from any thread.  64 bytes keep the block 64-byte aligned. */
enum { ST_SCRATCH_HEAD = 64 };

typedef struct head {
    st_scratch_cache *owner;
    int slot;
} head;

static _Thread_local st_scratch_cache *tls_cache;
static atomic_size_t kept;

/* What a kept block of cap bytes takes from malloc: the small ones only,
 * the large ones being mapped (core/bigmem.h). */
static size_t from_malloc(size_t cap) { return ST_SCRATCH_HEAD + cap < ST_BIG_MIN ? ST_SCRATCH_HEAD + cap : 0; }

size_t st_scratch_kept(void) { return atomic_load_explicit(&kept, memory_order_relaxed); }

void st_scratch_attach(st_scratch_cache *c)
{
    memset(c, 0, sizeof *c);
    tls_cache = c;
}

void st_scratch_detach(st_scratch_cache *c)
{
    if (tls_cache == c) tls_cache = NULL;
    for (int i = 0; i < ST_SCRATCH_SLOTS; i++) {
        if (c->slot[i].base) atomic_fetch_sub_explicit(&kept, from_malloc(c->slot[i].cap), memory_order_relaxed);
        st_big_free(c->slot[i].base);
        c->slot[i].base = NULL;
        c->slot[i].cap = 0;
    }
}

static void *block(void *base, st_scratch_cache *owner, int slot)
{
    head *h = base;
    h->owner = owner;
    h->slot = slot;
    return (char *)base + ST_SCRATCH_HEAD;
}

/* An uncached block: freed by st_scratch_give. */
static void *one_off(size_t bytes)
{
    void *base = aligned_alloc(ST_SCRATCH_HEAD, ST_SCRATCH_HEAD + bytes);
    return base ? block(base, NULL, -1) : NULL;
}

void *st_scratch_take(size_t bytes)
{
    bytes = (bytes + 63) / 64 * 64;
    if (!bytes) bytes = 64;
    st_scratch_cache *c = tls_cache;
    if (!c || bytes > ST_SCRATCH_MAX_KEPT) return one_off(bytes);
    /* the smallest free block that fits; else an empty slot, else the
     * largest free block too small, which grows */
    int fit = -1, empty = -1, grow = -1;
    for (int i = 0; i < ST_SCRATCH_SLOTS; i++) {
        st_scratch_slot *s = &c->slot[i];
        if (atomic_load_explicit(&s->busy, memory_order_acquire)) continue;
        if (!s->base) {
            if (empty < 0) empty = i;
        } else if (s->cap >= bytes) {
            if (fit < 0 || s->cap < c->slot[fit].cap) fit = i;
        } else if (grow < 0 || s->cap > c->slot[grow].cap) {
            grow = i;
        }
    }
    if (fit >= 0) {
        atomic_store_explicit(&c->slot[fit].busy, true, memory_order_relaxed);
        return (char *)c->slot[fit].base + ST_SCRATCH_HEAD;
    }
    int i = empty >= 0 ? empty : grow;
    if (i < 0) return one_off(bytes); /* every block is in use */
    /* a grown block gets some room (1/8, in 4 KiB pages), so sizes that
     * creep up between layers do not regrow it at every layer */
    size_t cap = bytes + bytes / 8;
    cap = (cap + 4095) / 4096 * 4096;
    /* a kept block lives as long as its worker: a large one is mapped on
     * its own (core/bigmem.h), so a session's end gives it back */
    void *base = st_big_alloc(ST_SCRATCH_HEAD + cap, "CPU kernel scratch");
    if (!base) return NULL; /* the slot keeps its old block */
    st_scratch_slot *s = &c->slot[i];
    if (s->base) atomic_fetch_sub_explicit(&kept, from_malloc(s->cap), memory_order_relaxed);
    atomic_fetch_add_explicit(&kept, from_malloc(cap), memory_order_relaxed);
    st_big_free(s->base);
    s->base = base;
    s->cap = cap;
    atomic_store_explicit(&s->busy, true, memory_order_relaxed);
    return block(base, c, i);
}

void st_scratch_give(void *p)
{
    if (!p) return;
    void *base = (char *)p - ST_SCRATCH_HEAD;
    head *h = base;
    if (!h->owner) {
        free(base);
        return;
    }
    /* release: what the kernel wrote is done before another take reuses it */
    atomic_store_explicit(&h->owner->slot[h->slot].busy, false, memory_order_release);
}
