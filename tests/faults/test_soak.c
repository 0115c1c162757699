/*
 * test_soak.c — many sessions of mixed models on many threads for a long
 * time, every output checked, memory and file descriptors watched
 * (issue 18.3).
 *
 * usage: test_soak [--threads T] [--sessions S] [--runs R] [--backend B]
 *                  [--sample-ms M] [--max-rss-growth MIB] [--seed X] CASE...
 *
 * T threads (8) each own S sessions (4); session j of thread t runs case
 * (t * S + j) mod the number of cases, so every case has sessions on
 * several threads at once, all sharing one loaded model per case.  Each
 * session has a random schedule of its own seed (ready commands in random
 * order, completions released late) and 1 or 2 worker threads.  A thread
 * makes S * R runs (R = 2000), each on one of its sessions picked at
 * random: bind the inputs, run, read every output and compare it, bit for
 * bit, with the case's clean run (harness.h).  About one run in 200
 * replaces its session by a new one with a new seed, so creating and
 * freeing sessions is soaked too.
 *
 * The main thread samples the process's resident memory and its open
 * file descriptors every M ms (100) with the number of runs done.  At the
 * end a least-squares line through the samples of the second half of the
 * runs (the first half is warm-up: allocator pools, plan caches, thread
 * stacks) gives the slope, in KiB and descriptors per 1000 runs, and the
 * growth it implies over that half.  The test passes with no wrong
 * output, no failed call, an RSS growth below --max-rss-growth MiB (4:
 * the noise of malloc's arenas on the development machine, several
 * times what a run allocates) and no growth in descriptors.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

typedef struct soak_case {
    th_case c;
    st_model *model;
    atomic_long runs;
} soak_case;

static soak_case *cases;
static int n_cases;
static int n_threads = 8, n_sessions = 4, n_runs = 2000;
static st_session_options base_opt;
static uint64_t seed0 = 18;
static atomic_long runs_done, wrong, failed, churned;
/* every thread holds its sessions until all runs are done, so the last
 * samples see the steady state, not threads that finished early freeing
 * theirs */
static pthread_barrier_t all_done;

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

typedef struct slot {
    soak_case *sc;
    st_session *s;
    th_outputs out;
} slot;

static bool open_session(slot *sl, uint64_t *rng)
{
    st_session_options o = base_opt;
    o.schedule = ST_SCHEDULE_RANDOM;
    o.seed = next_rand(rng);
    o.threads = 1 + (int)(next_rand(rng) % 2);
    sl->s = NULL;
    if (st_session_create(sl->sc->model, &o, &sl->s) != ST_OK || th_bind(sl->s, &sl->sc->c) != ST_OK) {
        fprintf(stderr, "soak: creating a session of %s: %s\n", sl->sc->c.label, st_last_error());
        st_session_free(sl->s);
        sl->s = NULL;
        return false;
    }
    return true;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t rng = seed0 * 0x9e3779b97f4a7c15ull + (uint64_t)t + 1;
    slot *slots = calloc((size_t)n_sessions, sizeof *slots);
    for (int j = 0; j < n_sessions; j++) {
        slots[j].sc = &cases[(t * n_sessions + j) % n_cases];
        if (!th_outputs_alloc(&slots[j].sc->c, &slots[j].out) || !open_session(&slots[j], &rng)) atomic_fetch_add(&failed, 1);
    }
    for (long k = 0; k < (long)n_sessions * n_runs; k++) {
        slot *sl = &slots[next_rand(&rng) % (uint64_t)n_sessions];
        if (!sl->s) {
            atomic_fetch_add(&failed, 1);
            continue;
        }
        const th_case *c = &sl->sc->c;
        st_status r = th_bind(sl->s, c);
        if (r == ST_OK) r = st_session_run(sl->s);
        if (r == ST_OK) r = th_read(sl->s, c, &sl->out);
        if (r != ST_OK) {
            if (atomic_fetch_add(&failed, 1) < 10) fprintf(stderr, "soak: %s: %s\n", c->label, st_last_error());
        } else {
            int bad = th_compare(c, &sl->out);
            if (bad >= 0 && atomic_fetch_add(&wrong, 1) < 10)
                fprintf(stderr, "soak: %s: output '%s' differs from the clean run's\n", c->label, c->want[bad].name);
        }
        atomic_fetch_add(&sl->sc->runs, 1);
        atomic_fetch_add(&runs_done, 1);
        if (next_rand(&rng) % 200 == 0) { /* a new session in its place */
            st_session_free(sl->s);
            atomic_fetch_add(&churned, 1);
            if (!open_session(sl, &rng)) atomic_fetch_add(&failed, 1);
        }
    }
    pthread_barrier_wait(&all_done);
    for (int j = 0; j < n_sessions; j++) {
        st_session_free(slots[j].s);
        th_outputs_free(&slots[j].sc->c, &slots[j].out);
    }
    free(slots);
    return NULL;
}

static double rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1024.0;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory itself */
}

typedef struct sample {
    double runs, rss, fds;
} sample;

/* Least-squares slope of y against runs over samples [lo, n). */
static double slope(const sample *s, int lo, int n, int which)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, m = n - lo;
    for (int i = lo; i < n; i++) {
        double x = s[i].runs, y = which ? s[i].fds : s[i].rss;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    double den = m * sxx - sx * sx;
    return m > 1 && den > 0 ? (m * sxy - sx * sy) / den : 0;
}

int main(int argc, char **argv)
{
    st_session_options_init(&base_opt);
    int sample_ms = 100, i = 1;
    double max_growth_mib = 4;
    for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--threads")) n_threads = atoi(v);
        else if (!strcmp(a, "--sessions")) n_sessions = atoi(v);
        else if (!strcmp(a, "--runs")) n_runs = atoi(v);
        else if (!strcmp(a, "--sample-ms")) sample_ms = atoi(v);
        else if (!strcmp(a, "--max-rss-growth")) max_growth_mib = atof(v);
        else if (!strcmp(a, "--seed")) seed0 = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--backend")) {
            if (!th_backend(v, &base_opt.backend)) return 2;
        } else {
            return 2;
        }
    }
    n_cases = argc - i;
    if (n_cases < 1 || n_threads < 1 || n_sessions < 1 || n_runs < 1) {
        fprintf(stderr, "usage: test_soak [--threads T] [--sessions S] [--runs R] [--backend B] [--sample-ms M] "
                        "[--max-rss-growth MIB] [--seed X] CASE...\n");
        return 2;
    }
    cases = calloc((size_t)n_cases, sizeof *cases);
    for (int k = 0; k < n_cases; k++) {
        if (!th_case_parse(&cases[k].c, argv[i + k])) return 1;
        if (!th_case_reference(&cases[k].c, base_opt.backend)) {
            const char *m = st_last_error();
            if (base_opt.backend != ST_BACKEND_CPU && (strstr(m, "no OpenCL") || strstr(m, "no CUDA") || strstr(m, "not available"))) {
                printf("skipped: %s\n", m);
                return 77;
            }
            return 1;
        }
        if (st_model_load(cases[k].c.model, &cases[k].model) != ST_OK) {
            fprintf(stderr, "%s\n", st_last_error());
            return 1;
        }
    }
    long total = (long)n_threads * n_sessions * n_runs;
    int cap = 1 << 16, n = 0;
    sample *smp = calloc((size_t)cap, sizeof *smp);
    double t0 = th_now();
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    pthread_barrier_init(&all_done, NULL, (unsigned)n_threads + 1);
    for (int t = 0; t < n_threads; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (;;) {
        long done = atomic_load(&runs_done);
        if (n < cap) smp[n++] = (sample){(double)done, rss_kib(), (double)open_fds()};
        if (done >= total) break;
        struct timespec ts = {sample_ms / 1000, (long)(sample_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_barrier_wait(&all_done);
    for (int t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&all_done);
    double took = th_now() - t0;

    /* the second half of the runs */
    int lo = 0;
    while (lo < n && smp[lo].runs < total / 2.0) lo++;
    if (n - lo < 3) lo = n > 3 ? n - 3 : 0;
    double rss_slope = slope(smp, lo, n, 0), fd_slope = slope(smp, lo, n, 1);
    double span = smp[n - 1].runs - smp[lo].runs, growth_mib = rss_slope * span / 1024.0;
    double rss_min = INFINITY, rss_max = 0, fd_min = INFINITY, fd_max = 0;
    for (int k = lo; k < n; k++) {
        rss_min = fmin(rss_min, smp[k].rss);
        rss_max = fmax(rss_max, smp[k].rss);
        fd_min = fmin(fd_min, smp[k].fds);
        fd_max = fmax(fd_max, smp[k].fds);
    }
    printf("soak: %d threads x %d sessions x %d runs = %ld runs in %.1f s (", n_threads, n_sessions, n_runs, total, took);
    for (int k = 0; k < n_cases; k++) printf("%s%s %ld", k ? ", " : "", cases[k].c.label, atomic_load(&cases[k].runs));
    printf("), %ld sessions replaced\n", atomic_load(&churned));
    printf("soak: %ld wrong outputs, %ld failed calls\n", atomic_load(&wrong), atomic_load(&failed));
    printf("soak: RSS %.1f MiB at the start, %.1f MiB at the end; over the second half (%d samples, %.0f runs) "
           "%.1f..%.1f MiB, slope %+.2f KiB per 1000 runs, %+.2f MiB over the half (noise bound %.1f MiB)\n",
           smp[0].rss / 1024, smp[n - 1].rss / 1024, n - lo, span, rss_min / 1024, rss_max / 1024, rss_slope * 1000,
           growth_mib, max_growth_mib);
    printf("soak: open file descriptors %.0f..%.0f over the second half, slope %+.3f per 1000 runs\n", fd_min, fd_max,
           fd_slope * 1000);
    bool ok = atomic_load(&wrong) == 0 && atomic_load(&failed) == 0 && growth_mib < max_growth_mib && fd_max - fd_min == 0;
    for (int k = 0; k < n_cases; k++) {
        st_model_free(cases[k].model);
        th_case_free(&cases[k].c);
    }
    free(cases);
    free(smp);
    free(th);
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
