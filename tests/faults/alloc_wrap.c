/* alloc_wrap.c — the --wrap'd allocators (alloc_wrap.h). */
#include "alloc_wrap.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/fault.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **out, size_t align, size_t n);
void __real_free(void *p);

/* ---- the sequence ---- */

static atomic_bool armed;
static atomic_long count;
static long fail_at;
static atomic_long epoch_now;
static atomic_bool hit;
static atomic_bool hit_map; /* the failed one was a host mapping, not a device allocation */
static void *hit_site;
static const char *hit_what;

void aw_arm(long n, long epoch)
{
    atomic_store(&hit, false);
    atomic_store(&hit_map, false);
    hit_site = NULL;
    hit_what = "";
    fail_at = n;
    atomic_store(&count, 0);
    atomic_store(&epoch_now, epoch);
    atomic_store(&armed, true);
}

long aw_disarm(void)
{
    atomic_store(&armed, false);
    return atomic_load(&count);
}

bool aw_hit(void **site, const char **what)
{
    if (site) *site = hit_site;
    if (what) *what = hit_what;
    return atomic_load(&hit);
}

/* ---- allocations counted by call site, while armed (aw_sites) ---- */

typedef struct site_count {
    void *site;
    long n;
} site_count;

enum { N_SITES = 256 };
static atomic_bool sites_on;
static site_count sites[N_SITES];
static int n_sites;
static long sites_lost;
static pthread_mutex_t sites_mu = PTHREAD_MUTEX_INITIALIZER;

static void count_site(void *site)
{
    pthread_mutex_lock(&sites_mu);
    int i = 0;
    while (i < n_sites && sites[i].site != site) i++;
    if (i < n_sites) sites[i].n++;
    else if (n_sites < N_SITES) sites[n_sites++] = (site_count){site, 1};
    else sites_lost++;
    pthread_mutex_unlock(&sites_mu);
}

void aw_sites(bool on)
{
    pthread_mutex_lock(&sites_mu);
    n_sites = 0;
    sites_lost = 0;
    pthread_mutex_unlock(&sites_mu);
    atomic_store(&sites_on, on);
}

static int by_count(const void *a, const void *b)
{
    long x = ((const site_count *)a)->n, y = ((const site_count *)b)->n;
    return x < y ? 1 : x > y ? -1 : 0;
}

void aw_sites_print(int top, long per)
{
    pthread_mutex_lock(&sites_mu);
    qsort(sites, (size_t)n_sites, sizeof *sites, by_count);
    for (int i = 0; i < n_sites && i < top; i++) {
        char where[512];
        aw_describe(sites[i].site, where, sizeof where);
        printf("    %8.2f per run  %s\n", (double)sites[i].n / (double)(per > 0 ? per : 1), where);
    }
    if (n_sites > top || sites_lost) printf("    (%d more sites)\n", n_sites - top > 0 ? n_sites - top : 0);
    pthread_mutex_unlock(&sites_mu);
}

/* Numbers one allocation; true when it is the one to fail. */
static bool next_fails(void *site, const char *what)
{
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return false;
    if (atomic_load_explicit(&sites_on, memory_order_relaxed)) count_site(site);
    long k = atomic_fetch_add(&count, 1) + 1;
    if (k != fail_at) return false;
    hit_site = site;
    hit_what = what;
    atomic_store(&hit, true);
    return true;
}

/* ---- live allocations: open addressing, linear probing ---- */

typedef struct slot {
    void *p;
    void *site;
    long epoch;
} slot;

#define TABLE_BITS 21
#define TABLE_SIZE ((size_t)1 << TABLE_BITS)
static slot *table;
static size_t n_live;
static bool table_full;
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (TABLE_SIZE - 1);
}

static void track(void *p, void *site, long epoch)
{
    if (!p) return;
    pthread_mutex_lock(&table_mu);
    if (!table) {
        void *t = mmap(NULL, TABLE_SIZE * sizeof *table, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        table = t == MAP_FAILED ? NULL : t;
    }
    if (table && n_live < TABLE_SIZE / 2) {
        size_t i = hash(p);
        while (table[i].p) i = (i + 1) & (TABLE_SIZE - 1);
        table[i] = (slot){p, site, epoch};
        n_live++;
    } else if (!table_full) {
        table_full = true;
        fprintf(stderr, "alloc_wrap: the live-allocation table is full; leak checks are off\n");
    }
    pthread_mutex_unlock(&table_mu);
}

/* Removes p; returns its epoch, or -1 when it was not tracked. */
static long untrack(void *p)
{
    long epoch = -1;
    if (!p) return epoch;
    pthread_mutex_lock(&table_mu);
    if (table) {
        size_t i = hash(p);
        while (table[i].p && table[i].p != p) i = (i + 1) & (TABLE_SIZE - 1);
        if (table[i].p) {
            epoch = table[i].epoch;
            n_live--;
            /* backward-shift deletion keeps every probe chain unbroken */
            size_t j = i;
            for (;;) {
                table[i].p = NULL;
                for (;;) {
                    j = (j + 1) & (TABLE_SIZE - 1);
                    if (!table[j].p) goto done;
                    size_t home = hash(table[j].p);
                    /* j's entry may move to i unless its home lies cyclically in (i, j] */
                    if (i <= j ? (i < home && home <= j) : (i < home || home <= j)) continue;
                    break;
                }
                table[i] = table[j];
                i = j;
            }
        }
    }
done:
    pthread_mutex_unlock(&table_mu);
    return epoch;
}

long aw_live(long epoch, bool print)
{
    long n = 0;
    pthread_mutex_lock(&table_mu);
    for (size_t i = 0; table && i < TABLE_SIZE; i++)
        if (table[i].p && table[i].epoch == epoch) {
            n++;
            if (print && n <= 20) {
                char where[512];
                aw_describe(table[i].site, where, sizeof where);
                fprintf(stderr, "    leaked %p, allocated from %s\n", table[i].p, where);
            }
        }
    pthread_mutex_unlock(&table_mu);
    return n;
}

long aw_live_total(void)
{
    pthread_mutex_lock(&table_mu);
    long n = (long)n_live;
    pthread_mutex_unlock(&table_mu);
    return n;
}

/* The function holding offset off of module, from its symbol table
 * (static functions are not in the dynamic one dladdr reads). */
static bool addr2line(const char *module, unsigned long off, char *fn, size_t cap)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "addr2line -f -e '%s' 0x%lx 2>/dev/null", module, off);
    FILE *f = popen(cmd, "r");
    if (!f) return false;
    bool ok = fgets(fn, (int)cap, f) && fn[0] != '?';
    pclose(f);
    if (ok) fn[strcspn(fn, "\n")] = 0;
    return ok;
}

void aw_describe(void *addr, char *out, size_t cap)
{
    Dl_info info;
    if (addr && dladdr(addr, &info) && info.dli_fname) {
        const char *mod = strrchr(info.dli_fname, '/');
        mod = mod ? mod + 1 : info.dli_fname;
        /* a return address: the call is the byte before it */
        unsigned long off = (unsigned long)((char *)addr - (char *)info.dli_fbase);
        char fn[256];
        if (addr2line(info.dli_fname, off - 1, fn, sizeof fn)) snprintf(out, cap, "%s (%s+0x%lx)", fn, mod, off);
        else if (info.dli_sname)
            snprintf(out, cap, "%s+0x%lx (%s+0x%lx)", info.dli_sname, (unsigned long)((char *)addr - (char *)info.dli_saddr),
                     mod, off);
        else
            snprintf(out, cap, "%s+0x%lx", mod, off);
    } else {
        snprintf(out, cap, "%p", addr);
    }
}

/* ---- the wrappers ---- */

#define SITE __builtin_extract_return_addr(__builtin_return_address(0))

static void *do_malloc(size_t n, void *site)
{
    if (next_fails(site, "")) return NULL;
    void *p = __real_malloc(n);
    track(p, site, atomic_load(&epoch_now));
    return p;
}

void *__wrap_malloc(size_t n) { return do_malloc(n, SITE); }

void *__wrap_calloc(size_t n, size_t size)
{
    if (next_fails(SITE, "")) return NULL;
    void *p = __real_calloc(n, size);
    track(p, SITE, atomic_load(&epoch_now));
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    void *site = SITE;
    if (next_fails(site, "")) return NULL; /* the old block stays, as with a real failure */
    void *p = __real_realloc(old, n);
    if (p) {
        /* a block that grows keeps the epoch it was made in */
        long e = untrack(old);
        track(p, site, e >= 0 ? e : atomic_load(&epoch_now));
    }
    return p;
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    if (next_fails(SITE, "")) return NULL;
    void *p = __real_aligned_alloc(align, n);
    track(p, SITE, atomic_load(&epoch_now));
    return p;
}

int __wrap_posix_memalign(void **out, size_t align, size_t n)
{
    if (next_fails(SITE, "")) return ENOMEM;
    int r = __real_posix_memalign(out, align, n);
    if (r == 0) track(*out, SITE, atomic_load(&epoch_now));
    return r;
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = do_malloc(n, SITE);
    if (d) memcpy(d, s, n);
    return d;
}

char *__wrap_strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *d = do_malloc(n + 1, SITE);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

void __wrap_free(void *p)
{
    untrack(p);
    __real_free(p);
}

void *aw_malloc_untracked(size_t n) { return __real_malloc(n); }
void aw_free_untracked(void *p) { __real_free(p); }

/* ---- devices ---- */

static bool device_hook(st_fault_site site, const char *what, uint64_t bytes)
{
    /* a large block strata maps itself (core/bigmem.h) is on the sequence
     * too: it fails as the mmap would, and is named by its label */
    if (site == ST_FAULT_HOST_MAP) {
        bool fail = next_fails(NULL, what);
        /* STRATA_FAULTS_LIST_MAPS=1 prints each mapping's number, to fail
         * one alone with --offset N-1 (the subsets may miss them all) */
        static int list = -1;
        if (list < 0) list = getenv("STRATA_FAULTS_LIST_MAPS") != NULL;
        if (list && atomic_load(&armed))
            fprintf(stderr, "alloc_wrap: allocation %ld maps %llu bytes for '%s'\n", atomic_load(&count),
                    (unsigned long long)bytes, what);
        if (fail) atomic_store(&hit_map, true);
        return fail;
    }
    return site == ST_FAULT_DEVICE_ALLOC && next_fails(NULL, what);
}

bool aw_hit_was_map(void) { return atomic_load(&hit_map); }

void aw_hook_devices(void) { st_fault_set_hook(device_hook); }
