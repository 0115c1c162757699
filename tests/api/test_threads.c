/*
 * test_threads.c — sessions and threads, on dynamic_mlp.onnx (two outputs,
 * a symbolic batch dim; y1 is an offset view of the light branch).
 *
 * usage: test_threads DIR   (DIR holds dynamic_mlp.onnx)
 *
 * 1. Many sessions of one model at once: 8 threads, each with its own
 *    session (1 or 2 worker threads), 50 runs each over batch sizes 1..10;
 *    every output must equal, bit for bit, the single-threaded run's.
 * 2. One session driven from two threads at once, against the contract in
 *    strata.h: every call either works or returns ST_ERR_BUSY (nothing
 *    else), and every output a thread reads after a run it completed is,
 *    bit for bit, one of the valid results for its shape (the other
 *    thread may have bound its own input or run again in between, so it
 *    need not be the thread's own).  Twelve batch sizes against a plan
 *    cache of eight make the threads evict each other's plans, and half
 *    the runs poison the arena (the sanitizer), so a read that raced a
 *    run would show as a mixed or NaN result.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata.h"

static atomic_int failures;
#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, st_last_error()); \
            atomic_fetch_add(&failures, 1);                                                      \
        }                                                                                        \
    } while (0)

enum { N_X = 3, MAX_ROWS = 12, IN = 64, OUT = 16 };

static const st_model *model;
static float xs[N_X][MAX_ROWS * IN];
/* refs[k][rows][o]: output o of input k's first `rows` rows, single-threaded */
static float *refs[N_X][MAX_ROWS + 1][2];
static const char *out_names[2] = {"y0", "y1"};

/* Reads output o (rows x 16); NULL on failure, *status says why. */
static float *read_out(st_session *s, int o, int64_t *rows, st_status *status)
{
    st_tensor *t = NULL;
    *status = st_session_output(s, out_names[o], &t);
    if (*status != ST_OK) return NULL;
    *rows = st_tensor_dim(t, 0);
    float *y = NULL;
    if (st_tensor_rank(t) != 2 || *rows < 1 || *rows > MAX_ROWS || st_tensor_dim(t, 1) != OUT) {
        fprintf(stderr, "output %s has an unexpected shape\n", out_names[o]);
        *status = ST_ERR_INTERNAL;
    } else {
        size_t n = (size_t)*rows * OUT;
        y = malloc(n * sizeof *y);
        for (size_t i = 0; i < n; i++) y[i] = -12345.0f; /* poison */
        *status = st_tensor_read(t, ST_F32, y, n * sizeof *y);
        if (*status != ST_OK) {
            free(y);
            y = NULL;
        }
    }
    st_tensor_free(t);
    return y;
}

static void make_refs(void)
{
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 1;
    st_session *s;
    CHECK(st_session_create(model, &o, &s) == ST_OK);
    for (int k = 0; k < N_X; k++)
        for (int rows = 1; rows <= MAX_ROWS; rows++) {
            int64_t dims[2] = {rows, IN};
            CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, dims, xs[k], (size_t)rows * IN * sizeof(float)) == ST_OK);
            CHECK(st_session_run(s) == ST_OK);
            for (int o = 0; o < 2; o++) {
                int64_t r;
                st_status st;
                refs[k][rows][o] = read_out(s, o, &r, &st);
                CHECK(refs[k][rows][o] && r == rows);
            }
        }
    st_session_free(s);
}

/* ---- 1. one session per thread ---- */

typedef struct own_worker {
    int id, runs, mismatches;
    st_status err;
} own_worker;

static void *own_main(void *arg)
{
    own_worker *w = arg;
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 1 + w->id % 2;
    o.sanitize = w->id % 3 == 0;
    st_session *s;
    if ((w->err = st_session_create(model, &o, &s)) != ST_OK) return NULL;
    uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    for (int it = 0; it < w->runs; it++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((r >> 33) % N_X), rows = 1 + (int)((r >> 40) % 10);
        int64_t dims[2] = {rows, IN};
        if ((w->err = st_session_set_input_checked(s, "x", ST_F32, 2, dims, xs[k], (size_t)rows * IN * sizeof(float))) != ST_OK)
            break;
        if ((w->err = st_session_run(s)) != ST_OK) break;
        for (int oi = 0; oi < 2; oi++) {
            int64_t got_rows;
            float *y = read_out(s, oi, &got_rows, &w->err);
            if (!y) break;
            if (got_rows != rows || memcmp(y, refs[k][rows][oi], (size_t)rows * OUT * sizeof *y) != 0) w->mismatches++;
            free(y);
        }
        if (w->err != ST_OK) break;
    }
    /* the message is per thread: print it here */
    if (w->err != ST_OK) fprintf(stderr, "thread %d: %s: %s\n", w->id, st_status_name(w->err), st_last_error());
    st_session_free(s);
    return NULL;
}

static void test_many_sessions(void)
{
    enum { THREADS = 8, RUNS = 50 };
    own_worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (own_worker){i, RUNS, 0, ST_OK};
        CHECK(pthread_create(&t[i], NULL, own_main, &w[i]) == 0);
    }
    int mismatches = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].err == ST_OK);
        mismatches += w[i].mismatches;
    }
    CHECK(mismatches == 0);
    printf("%d sessions on %d threads, %d runs each: %d outputs differ from the single-threaded run\n", THREADS,
           THREADS, RUNS, mismatches);
}

/* ---- 2. one session, two threads ---- */

typedef struct shared_worker {
    st_session *s;
    pthread_barrier_t *start;   /* both threads begin together */
    int id, iters;
    double deadline;            /* CLOCK_MONOTONIC seconds: stop trying then */
    int completed, busy, invalid, other_errors;
} shared_worker;

static bool is_valid(const float *y, int64_t rows, int o)
{
    for (int k = 0; k < N_X; k++)
        if (memcmp(y, refs[k][rows][o], (size_t)rows * OUT * sizeof *y) == 0) return true;
    return false;
}

/* Counts one call's status; false: stop this iteration. */
static bool note(shared_worker *w, st_status r)
{
    if (r == ST_OK) return true;
    if (r == ST_ERR_BUSY) w->busy++;
    else {
        fprintf(stderr, "thread %d: unexpected %s: %s\n", w->id, st_status_name(r), st_last_error());
        w->other_errors++;
    }
    return false;
}

/* Each thread tries until it has completed `iters` runs (bind, run, read
 * both outputs) or its deadline passes, yielding after ST_ERR_BUSY, so the
 * two threads really do interleave.  Neither is promised progress while
 * the other runs: a run in between spoils the other's iteration, and under
 * TSan the two can spoil each other for a long time.  What the contract
 * promises is checked instead: no call fails except with ST_ERR_BUSY, no
 * output read is a mix of runs, and afterwards the session works
 * (solo_runs). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void iterate(shared_worker *w);

static void *shared_main(void *arg)
{
    shared_worker *w = arg;
    pthread_barrier_wait(w->start);
    iterate(w);
    return NULL;
}

static void solo_runs(shared_worker *w) { iterate(w); }

static void iterate(shared_worker *w)
{
    uint64_t r = 0xda942042e4dd58b5ull * (uint64_t)(w->id + 7);
    for (int attempt = 0; w->completed < w->iters && now_s() < w->deadline; attempt++) {
        if (attempt) sched_yield();
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((r >> 33) % N_X), rows = 1 + (int)((r >> 40) % MAX_ROWS);
        int64_t dims[2] = {rows, IN};
        if (!note(w, st_session_set_input_checked(w->s, "x", ST_F32, 2, dims, xs[k], (size_t)rows * IN * sizeof(float)))) continue;
        if (!note(w, st_session_run(w->s))) continue;
        bool ok = true;
        for (int o = 0; o < 2 && ok; o++) {
            int64_t got_rows;
            st_status st;
            float *y = read_out(w->s, o, &got_rows, &st);
            ok = note(w, st);
            if (y && !is_valid(y, got_rows, o)) {
                fprintf(stderr, "thread %d: output %s (%lld rows) is not a valid result\n", w->id, out_names[o],
                        (long long)got_rows);
                w->invalid++;
            }
            free(y);
        }
        if (ok) w->completed++;
    }
}

static void test_one_session(bool sanitize)
{
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 2;
    o.sanitize = sanitize;
    st_session *s;
    CHECK(st_session_create(model, &o, &s) == ST_OK);
    shared_worker w[2];
    pthread_t t[2];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    double deadline = now_s() + 20.0;
    for (int i = 0; i < 2; i++) {
        w[i] = (shared_worker){s, &start, i, 200, deadline, 0, 0, 0, 0};
        CHECK(pthread_create(&t[i], NULL, shared_main, &w[i]) == 0);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    /* then one thread alone: every iteration must complete */
    shared_worker solo = {s, NULL, 2, 20, now_s() + 120.0, 0, 0, 0, 0};
    solo_runs(&solo);
    CHECK(solo.completed == solo.iters && solo.busy == 0);
    st_session_free(s);
    CHECK(w[0].invalid + w[1].invalid == 0);
    CHECK(w[0].other_errors + w[1].other_errors == 0);
    CHECK(w[0].invalid + w[1].invalid + solo.invalid == 0 && solo.other_errors == 0);
    printf("one session%s, two threads, up to %d runs each in 20 s: %d and %d completed, %d and %d ST_ERR_BUSY, "
           "%d invalid results; then %d of %d runs alone\n",
           sanitize ? " (sanitizer on)" : "", w[0].iters, w[0].completed, w[1].completed, w[0].busy, w[1].busy,
           w[0].invalid + w[1].invalid, solo.completed, solo.iters);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_threads DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/dynamic_mlp.onnx", argv[1]);
    st_model *m;
    if (st_model_load(path, &m) != ST_OK) {
        fprintf(stderr, "test_threads: %s\n", st_last_error());
        return 2;
    }
    model = m;
    uint64_t r = 12345;
    for (int k = 0; k < N_X; k++)
        for (int i = 0; i < MAX_ROWS * IN; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            xs[k][i] = (float)((double)(r >> 11) * 0x1p-53 * 2 - 1);
        }
    make_refs();
    test_many_sessions();
    test_one_session(false);
    test_one_session(true);
    for (int k = 0; k < N_X; k++)
        for (int rows = 0; rows <= MAX_ROWS; rows++)
            for (int o = 0; o < 2; o++) free(refs[k][rows][o]);
    st_model_free(m);
    int f = atomic_load(&failures);
    printf("%s\n", f ? "FAIL" : "PASS");
    return f ? 1 : 0;
}
