/*
 * bigmem.h — host memory that lives as long as a session: its storages
 * and its kernels' prepared weights.
 *
 * A block of ST_BIG_MIN bytes or more is mapped from the system on its
 * own (mmap) and unmapped when freed; a smaller one is malloc'd.  Why not
 * malloc for all: glibc raises its mmap threshold to the size of each
 * mmapped block freed (up to 32 MiB), so after the first session is
 * destroyed the next sessions' storages and packed weights come from the
 * arenas' heaps instead, and creating and destroying sessions on several
 * threads (each thread with its own arena) leaves those heaps fragmented
 * and held: RSS grew some 40 MiB per 5,000 runs in the soak with one
 * session in 200 replaced, while malloc's bytes in use stayed flat
 * (tests/faults/README.md).  Mapping these blocks ourselves gives their
 * pages back when the session goes, whatever malloc's thresholds are, and
 * changes no process-wide malloc setting.  A session's runs allocate
 * none of these, so the cost (a system call and fresh zeroed pages) is
 * paid at session creation only.
 *
 * Every block is 64-byte aligned and freed with st_big_free (not free).
 * A mapping calls the fault hook (core/fault.h, ST_FAULT_HOST_MAP) so the
 * allocation-failure tests fail it too, and st_big_live counts the blocks
 * not freed, for their leak check.
 */
#ifndef ST_BIGMEM_H
#define ST_BIGMEM_H

#include <stddef.h>

#define ST_BIG_MIN ((size_t)128 << 10)

/* NULL when out of memory; what names the block for the fault hook. */
void *st_big_alloc(size_t bytes, const char *what);
void st_big_free(void *p);
/* Blocks allocated and not yet freed (mapped or not), over the process. */
long st_big_live(void);

#endif
