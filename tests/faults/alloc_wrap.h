/*
 * alloc_wrap.h — allocation failure on demand, for test_alloc_faults.
 *
 * The test is linked with -Wl,--wrap=malloc (and calloc, realloc,
 * aligned_alloc, posix_memalign, strdup, strndup, free), so every one of
 * those calls in strata's objects, and in the test's, lands in
 * alloc_wrap.c.  While armed, each allocation gets the next number of one
 * sequence, device allocations included (through strata's fault hook,
 * core/fault.h), and number N fails as the real call would: NULL, or
 * ENOMEM from posix_memalign, or the driver's out-of-memory code.
 *
 * Every live allocation is kept in a table with the "epoch" it was made
 * in and the address it was made from, so that what an iteration leaves
 * behind can be listed by call site (a leak check per iteration, beside
 * LeakSanitizer's at exit in the ASan build).
 */
#ifndef ST_ALLOC_WRAP_H
#define ST_ALLOC_WRAP_H

#include <stdbool.h>
#include <stddef.h>

/* Starts numbering allocations from 1; allocation fail_at fails (0: none
 * fails, the sequence is only counted).  Allocations made from now on
 * belong to epoch. */
void aw_arm(long fail_at, long epoch);
/* Stops failing and numbering; returns how many allocations were made. */
long aw_disarm(void);
/* Whether the armed failure happened, and from where (a return address)
 * and what (a device allocation's label; "" for host memory). */
bool aw_hit(void **site, const char **what);
/* Live allocations made in epoch; with print, lists each with its site. */
long aw_live(long epoch, bool print);
/* Live allocations of every epoch, without scanning the table. */
long aw_live_total(void);
/* Describes a code address: "symbol+0xoff (module+0xoff)". */
void aw_describe(void *addr, char *out, size_t cap);
/* While on, armed allocations are also counted by call site (turning it
 * on or off clears the counts); print lists the top sites, counts
 * divided by per (a number of runs). */
void aw_sites(bool on);
void aw_sites_print(int top, long per);
/* Installs the device-allocation hook (core/fault.h) on the same sequence;
 * it numbers strata's own host mappings (core/bigmem.h) too. */
void aw_hook_devices(void);
/* Whether the armed failure was a host mapping (what: its label). */
bool aw_hit_was_map(void);

/* The test's own memory, outside the sequence. */
void *aw_malloc_untracked(size_t n);
void aw_free_untracked(void *p);

#endif
