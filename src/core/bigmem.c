/* bigmem.c — session-lifetime blocks, large ones mapped (see bigmem.h). */
#include "core/bigmem.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/fault.h"

/* A header before each block: how it was made, and the mapping's length.
 * 64 bytes keep the block 64-byte aligned (a mapping starts on a page). */
enum { HEAD = 64 };

typedef struct head {
    size_t mapped; /* the mapping's bytes, 0 for a malloc'd block */
} head;

static atomic_long live;

long st_big_live(void) { return atomic_load_explicit(&live, memory_order_relaxed); }

void *st_big_alloc(size_t bytes, const char *what)
{
    if (bytes > SIZE_MAX - HEAD - 65536) return NULL;
    size_t total = (HEAD + bytes + 63) / 64 * 64;
    void *base;
    size_t mapped = 0;
    if (bytes >= ST_BIG_MIN) {
        long page = sysconf(_SC_PAGESIZE);
        size_t pg = page > 0 ? (size_t)page : 4096;
        mapped = (total + pg - 1) / pg * pg;
        if (st_fault_hit(ST_FAULT_HOST_MAP, what ? what : "", mapped)) return NULL;
        base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) return NULL;
    } else {
        base = aligned_alloc(64, total);
        if (!base) return NULL;
    }
    ((head *)base)->mapped = mapped;
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return (char *)base + HEAD;
}

void st_big_free(void *p)
{
    if (!p) return;
    void *base = (char *)p - HEAD;
    size_t mapped = ((head *)base)->mapped;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    if (mapped) munmap(base, mapped);
    else free(base);
}
