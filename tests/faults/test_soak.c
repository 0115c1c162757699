/*
 * test_soak.c — many sessions of mixed models on many threads for a long
 * time, every output checked, memory and file descriptors watched
 * (issue 18.3).
 *
 * usage: test_soak [--threads T] [--sessions S] [--runs R] [--backend B]
 *                  [--sample-ms M] [--warmup F] [--max-rss-slope KIB]
 *                  [--max-in-use-growth MIB] [--churn N] [--seed X]
 *                  [--samples FILE.csv] CASE...
 *
 * T threads (8) each own S sessions (4); session j of thread t runs case
 * (t * S + j) mod the number of cases, so every case has sessions on
 * several threads at once, all sharing one loaded model per case.  Each
 * session has a random schedule of its own seed (ready commands in random
 * order, completions released late) and 1 or 2 worker threads.  A thread
 * makes S * R runs (R = 2000), each on one of its sessions picked at
 * random: bind the inputs, run, read every output and compare it, bit for
 * bit, with the case's clean run (harness.h).  Before about one run in N
 * (--churn or STRATA_SOAK_CHURN, 200; 0: never) the session is replaced
 * by a new one with a new seed and the same worker count, so creating
 * and freeing sessions is soaked too.
 *
 * The main thread samples the process's resident memory (RSS), malloc's
 * own figures (mallinfo2: bytes handed out and not freed, "in use", less
 * what the workers keep as scratch, runtime/scratch.h; and bytes
 * taken from the system, "held") and the open file descriptors every
 * M ms (100) with the number of runs done.  At 8 checkpoints, an eighth
 * of the runs apart, every thread stops with no run in flight and the
 * main thread takes a sample at rest.  The test passes with
 *   - no wrong output and no failed call;
 *   - the same open descriptors in every sample after the warm-up (the
 *     first --warmup of the runs, 0.25) and at rest halfway and at the end;
 *   - malloc's bytes in use at rest grown by less than --max-in-use-growth
 *     MiB (1) from halfway to the end (a leak of anything per run or per
 *     session shows there, exact to the byte);
 *   - the least-squares line through RSS at rest at the checkpoints after
 *     the warm-up rising by less than --max-rss-slope KiB per 1,000 runs
 *     (256).  The slope's standard error and the checkpoints' spread
 *     about the line are printed with it.
 * Lines through every sample (RSS, in use, held) are printed too, not
 * judged: between checkpoints RSS dips while a replaced session is
 * rebuilt (its mapped blocks given back, core/bigmem.h, and touched anew)
 * and in use swings with the runs in flight.  Nothing is trimmed
 * (malloc_trim): what is measured is what an embedder would see.
 * tests/faults/README.md has the figures and where the bounds come from.
 */
#include <dirent.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/scratch.h"
#include "harness.h"

typedef struct soak_case {
    th_case c;
    st_model *model;
    atomic_long runs;
} soak_case;

static soak_case *cases;
static int n_cases;
static int n_threads = 8, n_sessions = 4, n_runs = 2000, churn = 200;
static st_session_options base_opt;
static uint64_t seed0 = 18;
static atomic_long runs_done, wrong, failed, churned;
/* every thread stops at each checkpoint, an eighth of its runs apart
 * (cp_in: it is there; cp_out: the quiet sample is taken), and holds its
 * sessions until all runs are done (all_done), so the quiet samples see
 * every session alive and idle */
enum { N_CP = 8 };
static pthread_barrier_t cp_in, cp_out, all_done;

/* A thread's run number at which checkpoint c (1 .. N_CP - 1) is taken. */
static long cp_at(int c) { return (long)n_sessions * n_runs * c / N_CP; }

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
    int threads; /* drawn for the slot's first session, kept by its replacements */
} slot;

static bool open_session(slot *sl, uint64_t *rng)
{
    st_session_options o = base_opt;
    o.schedule = ST_SCHEDULE_RANDOM;
    o.seed = next_rand(rng);
    /* a replacement keeps the worker count, so the sessions alive at each
     * checkpoint are the same set and RSS at rest is comparable */
    if (!sl->threads) sl->threads = 1 + (int)(next_rand(rng) % 2);
    o.threads = sl->threads;
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
    long runs = (long)n_sessions * n_runs;
    int next_cp = 1;
    for (long k = 0; k < runs; k++) {
        for (; next_cp < N_CP && k == cp_at(next_cp); next_cp++) {
            pthread_barrier_wait(&cp_in);
            pthread_barrier_wait(&cp_out);
        }
        slot *sl = &slots[next_rand(&rng) % (uint64_t)n_sessions];
        /* about one run in --churn (200) is on a new session in its
         * place: replaced before the run, so a session alive at a
         * checkpoint has run, and its memory has been touched */
        if (churn > 0 && next_rand(&rng) % (uint64_t)churn == 0) {
            st_session_free(sl->s);
            atomic_fetch_add(&churned, 1);
            if (!open_session(sl, &rng)) atomic_fetch_add(&failed, 1);
        }
        if (!sl->s) { /* counted as done, so the main thread's count ends */
            atomic_fetch_add(&failed, 1);
            atomic_fetch_add(&runs_done, 1);
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

/* What malloc has handed out and not had back (in_use), and what it holds
 * from the system (held: its arenas' heaps and its mmapped blocks), both
 * in KiB, over every arena.  RSS is held plus the rest of the process
 * (code, stacks, the models' weights if mapped) less held pages never
 * touched or given back with madvise; in_use growing is a leak, held (and
 * RSS) growing with in_use flat is free memory the arenas keep. */
static void malloc_kib(double *in_use, double *held)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    /* less the scratch the sessions' workers keep (runtime/scratch.h):
     * it depends on how many workers the sessions alive drew, 1 or 2 */
    *in_use = ((double)(mi.uordblks + mi.hblkhd) - (double)st_scratch_kept()) / 1024.0;
    *held = (double)(mi.arena + mi.hblkhd) / 1024.0;
#else
    *in_use = *held = NAN; /* no per-arena figures: RSS alone is judged */
#endif
}

typedef struct sample {
    double runs, rss, fds, in_use, held;
} sample;

enum { F_RSS, F_FDS, F_IN_USE, F_HELD };

static double field(const sample *s, int which)
{
    return which == F_RSS ? s->rss : which == F_FDS ? s->fds : which == F_IN_USE ? s->in_use : s->held;
}

/* The least-squares line of a field against runs over samples [lo, n):
 * its slope (per run), the slope's standard error, and the residuals'
 * standard deviation (the noise about the line, in the field's unit). */
typedef struct fit {
    double slope, se, sd;
} fit;

static fit line_fit(const sample *s, int lo, int n, int which)
{
    fit f = {0, 0, 0};
    double m = n - lo, mx = 0, my = 0, sxx = 0, sxy = 0, ssr = 0;
    if (m < 3) return f;
    for (int i = lo; i < n; i++) {
        mx += s[i].runs / m;
        my += field(&s[i], which) / m;
    }
    for (int i = lo; i < n; i++) {
        double dx = s[i].runs - mx, dy = field(&s[i], which) - my;
        sxx += dx * dx;
        sxy += dx * dy;
    }
    if (sxx <= 0) return f;
    f.slope = sxy / sxx;
    for (int i = lo; i < n; i++) {
        double r = field(&s[i], which) - my - f.slope * (s[i].runs - mx);
        ssr += r * r;
    }
    f.sd = sqrt(ssr / (m - 2));
    f.se = f.sd / sqrt(sxx);
    return f;
}

static void range(const sample *s, int lo, int n, int which, double *min, double *max)
{
    *min = INFINITY;
    *max = -INFINITY;
    for (int i = lo; i < n; i++) {
        *min = fmin(*min, field(&s[i], which));
        *max = fmax(*max, field(&s[i], which));
    }
}

/* A quiet sample: every thread waits halfway or at the end.  Nothing is
 * trimmed: a trim halfway would drop RSS and let the second half refault
 * it, a slope that is the trim's. */
typedef struct quiet {
    double runs, in_use, held, rss, fds;
} quiet;

static quiet quiet_sample(void)
{
    quiet q = {(double)atomic_load(&runs_done), 0, 0, rss_kib(), (double)open_fds()};
    malloc_kib(&q.in_use, &q.held);
    return q;
}

int main(int argc, char **argv)
{
    st_session_options_init(&base_opt);
    int sample_ms = 100, i = 1;
    /* the bounds: tests/faults/README.md says where they come from */
    double max_rss_slope = 256, max_in_use_mib = 1, warmup = 0.25;
    const char *samples_path = NULL;
    /* STRATA_SOAK_CHURN=N as --churn N (the H200 runs in bench/RESULTS.md
     * used it); --churn wins */
    const char *ch = getenv("STRATA_SOAK_CHURN");
    if (ch) churn = atoi(ch);
    for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--threads")) n_threads = atoi(v);
        else if (!strcmp(a, "--sessions")) n_sessions = atoi(v);
        else if (!strcmp(a, "--runs")) n_runs = atoi(v);
        else if (!strcmp(a, "--sample-ms")) sample_ms = atoi(v);
        else if (!strcmp(a, "--max-rss-slope")) max_rss_slope = atof(v);
        else if (!strcmp(a, "--warmup")) warmup = atof(v);
        else if (!strcmp(a, "--churn")) churn = atoi(v);
        else if (!strcmp(a, "--max-in-use-growth")) max_in_use_mib = atof(v);
        else if (!strcmp(a, "--seed")) seed0 = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--samples")) samples_path = v;
        else if (!strcmp(a, "--backend")) {
            if (!th_backend(v, &base_opt.backend)) return 2;
        } else {
            return 2;
        }
    }
    n_cases = argc - i;
    if (n_cases < 1 || n_threads < 1 || n_sessions < 1 || n_runs < 1 || !(warmup >= 0 && warmup < 0.9)) {
        fprintf(stderr, "usage: test_soak [--threads T] [--sessions S] [--runs R] [--backend B] [--sample-ms M] [--warmup F] "
                        "[--max-rss-slope KIB] [--max-in-use-growth MIB] [--seed X] [--samples FILE.csv] CASE...\n");
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
    quiet q[N_CP + 1] = {{0}};
    int next_cp = 1;
    double t0 = th_now();
    pthread_t *th = calloc((size_t)n_threads, sizeof *th);
    pthread_barrier_init(&cp_in, NULL, (unsigned)n_threads + 1);
    pthread_barrier_init(&cp_out, NULL, (unsigned)n_threads + 1);
    pthread_barrier_init(&all_done, NULL, (unsigned)n_threads + 1);
    for (int t = 0; t < n_threads; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (;;) {
        long done = atomic_load(&runs_done);
        if (next_cp < N_CP && done >= (long)n_threads * cp_at(next_cp)) {
            /* a checkpoint: every thread is there, so done is exact */
            pthread_barrier_wait(&cp_in);
            q[next_cp] = quiet_sample();
            if (n < cap) smp[n++] = (sample){q[next_cp].runs, q[next_cp].rss, q[next_cp].fds, q[next_cp].in_use, q[next_cp].held};
            pthread_barrier_wait(&cp_out);
            next_cp++;
            continue;
        }
        if (done >= total) break;
        if (n < cap) {
            sample *sm = &smp[n++];
            *sm = (sample){(double)done, rss_kib(), (double)open_fds(), 0, 0};
            malloc_kib(&sm->in_use, &sm->held);
        }
        struct timespec ts = {sample_ms / 1000, (long)(sample_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* the workers wait at all_done with their sessions alive: the end's
     * quiet sample, then they free them */
    q[N_CP] = quiet_sample();
    if (n < cap) smp[n++] = (sample){q[N_CP].runs, q[N_CP].rss, q[N_CP].fds, q[N_CP].in_use, q[N_CP].held};
    quiet mid = q[N_CP / 2], end = q[N_CP];
    pthread_barrier_wait(&all_done);
    for (int t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&cp_in);
    pthread_barrier_destroy(&cp_out);
    pthread_barrier_destroy(&all_done);
    double took = th_now() - t0;

    /* the fit: every sample after the warm-up (the first --warmup of the
     * runs, when sessions' plans, workers' scratch and malloc's arenas
     * reach their sizes) */
    double warm_runs = warmup * (double)total;
    int lo = 0;
    while (lo < n && smp[lo].runs < warm_runs) lo++;
    if (n - lo < 3) lo = n > 3 ? n - 3 : 0;
    double span = smp[n - 1].runs - smp[lo].runs;
    printf("soak: %d threads x %d sessions x %d runs = %ld runs in %.1f s (", n_threads, n_sessions, n_runs, total, took);
    for (int k = 0; k < n_cases; k++) printf("%s%s %ld", k ? ", " : "", cases[k].c.label, atomic_load(&cases[k].runs));
    printf("), %ld sessions replaced\n", atomic_load(&churned));
    printf("soak: %ld wrong outputs, %ld failed calls\n", atomic_load(&wrong), atomic_load(&failed));
    double in_use_mib = (end.in_use - mid.in_use) / 1024;
    printf("soak: at rest (every session alive, no run in flight), after %.0f runs and after %.0f:\n", mid.runs, end.runs);
    printf("soak:   malloc in use  %.3f -> %.3f MiB, %+.3f MiB (bound %.1f)\n", mid.in_use / 1024, end.in_use / 1024,
           in_use_mib, max_in_use_mib);
    printf("soak:   RSS %.1f -> %.1f MiB; malloc held %.1f -> %.1f MiB; open file descriptors %.0f -> %.0f\n", mid.rss / 1024,
           end.rss / 1024, mid.held / 1024, end.held / 1024, mid.fds, end.fds);
    printf("soak: lines fitted after the warm-up (%d samples, runs %.0f..%.0f; slope +- its standard error; sd: the "
           "samples about the line):\n", n - lo, smp[lo].runs, smp[n - 1].runs);
    static const char *const names[] = {"RSS", "fds", "malloc in use", "malloc held"};
    for (int w = F_RSS; w <= F_HELD; w++) {
        double lo_v, hi_v;
        fit f = line_fit(smp, lo, n, w);
        range(smp, lo, n, w, &lo_v, &hi_v);
        if (w == F_FDS) {
            printf("soak:   open file descriptors %.0f..%.0f, slope %+.3f per 1000 runs\n", lo_v, hi_v, f.slope * 1000);
            continue;
        }
        printf("soak:   %-13s %.1f..%.1f MiB, slope %+.1f +- %.1f KiB per 1000 runs (%+.2f MiB over the %.0f runs), sd %.2f MiB\n",
               names[w], lo_v / 1024, hi_v / 1024, f.slope * 1000, f.se * 1000, f.slope * span / 1024, span, f.sd / 1024);
    }
    /* the judged line: RSS at rest at the checkpoints after the warm-up
     * (between them RSS dips while a replaced session is rebuilt, its
     * pages given back and touched anew: noise the line through every
     * sample carries) */
    sample rest[N_CP];
    int n_rest = 0;
    for (int c = 1; c <= N_CP; c++)
        if (q[c].runs >= warm_runs) rest[n_rest++] = (sample){q[c].runs, q[c].rss, q[c].fds, q[c].in_use, q[c].held};
    fit rss_fit = line_fit(rest, 0, n_rest, F_RSS);
    printf("soak:   RSS at rest at the checkpoints (runs: MiB):");
    for (int c = 1; c <= N_CP; c++) printf(" %.0f: %.1f", q[c].runs, q[c].rss / 1024);
    printf("\n");
    printf("soak:   RSS at rest after the warm-up (%d checkpoints): slope %+.1f +- %.1f KiB per 1000 runs, sd %.2f MiB "
           "(bound %.1f): %s\n", n_rest, rss_fit.slope * 1000, rss_fit.se * 1000, rss_fit.sd / 1024, max_rss_slope,
           rss_fit.slope * 1000 < max_rss_slope ? "flat" : "GROWING");
    double fd_min, fd_max;
    range(smp, lo, n, F_FDS, &fd_min, &fd_max);
    if (samples_path) {
        FILE *f = fopen(samples_path, "w");
        if (f) {
            fprintf(f, "runs,rss_kib,fds,in_use_kib,held_kib\n");
            for (int k = 0; k < n; k++)
                fprintf(f, "%.0f,%.0f,%.0f,%.0f,%.0f\n", smp[k].runs, smp[k].rss, smp[k].fds, smp[k].in_use, smp[k].held);
            fclose(f);
        }
    }
    bool ok = atomic_load(&wrong) == 0 && atomic_load(&failed) == 0 && in_use_mib < max_in_use_mib &&
              rss_fit.slope * 1000 < max_rss_slope && fd_max - fd_min == 0 && end.fds == mid.fds;
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
