/*
 * test_cancel.c — st_session_cancel from another thread, and per-run
 * deadlines (issue 18.4).
 *
 * usage: test_cancel [--backend cpu|opencl|cuda] [--threads N] [--runs R]
 *                    [--expect-cancels] CASE
 *
 * On one session of the case (harness.h), in order:
 *   1. a cancel before any run, and one after a run completed, change
 *      nothing: the next runs are exact;
 *   2. a deadline of 1 ns: the run stops with ST_ERR_TIMEOUT (from
 *      st_session_run or its wait), a message about the deadline, nothing
 *      of it pending afterwards, and reading an output refuses too; with
 *      the deadline removed the next run is exact;
 *   3. a deadline of a tenth of a clean run: ST_ERR_TIMEOUT, or, where the
 *      whole run was queued on a device before the deadline passed, an
 *      exact result; nothing pending; the next run exact;
 *   4. R runs, each cancelled by another thread after a delay between 0
 *      and 1.2 clean run times (run n's in the n-th of R equal slices of
 *      that range, at a random place in it), counted from just before
 *      st_session_run (a while loop runs inside it), while this thread
 *      runs and waits: each ends exact or ST_ERR_CANCELLED (from
 *      st_session_run or the wait), with nothing pending after the wait, and after each cancelled run a run without a cancel is exact.
 *      With --expect-cancels, at least a quarter of them must have been
 *      cancelled (so the test shows that a cancel takes effect, not only
 *      that it is harmless).
 * "Nothing pending" asks the executor (st_session_pending, internal):
 * every command of the run has completed or was never started, on the
 * host thread of a mixed plan too.  Exits 77 when the backend has no
 * device.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static int failures;
#define CHECK(cond, ...) TH_CHECK(failures, cond, __VA_ARGS__)

static th_case cs;
static th_outputs out;

/* A run that must be exact. */
static void exact_run(st_session *s, const char *when)
{
    st_status r = st_session_run(s);
    if (r == ST_OK) r = th_read(s, &cs, &out);
    CHECK(r == ST_OK, "%s: the run failed", when);
    if (r == ST_OK) CHECK(th_compare(&cs, &out) < 0, "%s: an output differs from the clean run's", when);
}

/* After a stopped run: nothing of it pending, and reading refuses. */
static void check_stopped(st_session *s, st_status want, const char *when)
{
    CHECK(st_session_pending(s) == 0, "%s: %d commands still pending after the wait", when, st_session_pending(s));
    CHECK(st_session_wait(s) == want || st_session_wait(s) == ST_OK, "%s: a second wait gives %s", when,
          st_status_name(st_session_wait(s)));
}

typedef struct canceller {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    st_session *s;
    long delay_ns;       /* -1: idle */
    long fired;          /* cancels made */
    bool stop;
} canceller;

static void *cancel_main(void *arg)
{
    canceller *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (k->delay_ns < 0 && !k->stop) pthread_cond_wait(&k->cv, &k->mu);
        if (k->stop) break;
        long ns = k->delay_ns;
        k->delay_ns = -1;
        pthread_mutex_unlock(&k->mu);
        struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
        nanosleep(&ts, NULL);
        st_session_cancel(k->s);
        pthread_mutex_lock(&k->mu);
        k->fired++;
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

int main(int argc, char **argv)
{
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 2;
    int runs = 20;
    bool expect_cancels = false;
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--expect-cancels")) {
            expect_cancels = true;
            continue;
        }
        if (i + 1 >= argc) return 2;
        if (!strcmp(argv[i], "--backend")) {
            if (!th_backend(argv[++i], &o.backend)) return 2;
        } else if (!strcmp(argv[i], "--threads")) o.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[++i]);
        else return 2;
    }
    if (i + 1 != argc) {
        fprintf(stderr, "usage: test_cancel [--backend B] [--threads N] [--runs R] [--expect-cancels] CASE\n");
        return 2;
    }
    if (!th_case_parse(&cs, argv[i])) return 1;
    if (!th_case_reference(&cs, o.backend)) {
        const char *m = st_last_error();
        if (o.backend != ST_BACKEND_CPU && (strstr(m, "no OpenCL") || strstr(m, "no CUDA device") || strstr(m, "not available"))) {
            printf("skipped: %s\n", m);
            return 77;
        }
        return 1;
    }
    if (!th_outputs_alloc(&cs, &out)) return 1;
    st_model *m = NULL;
    st_session *s = NULL;
    if (st_model_load(cs.model, &m) != ST_OK || st_session_create(m, &o, &s) != ST_OK || th_bind(s, &cs) != ST_OK) {
        fprintf(stderr, "%s\n", st_last_error());
        return 1;
    }

    /* 1. cancels that reach no run */
    CHECK(st_session_cancel(s) == ST_OK, "a cancel before any run");
    exact_run(s, "the first run, after a cancel made before it");
    CHECK(st_session_cancel(s) == ST_OK, "a cancel after a completed run");
    exact_run(s, "a run after a cancel of the completed one");
    double t_run = 1e9;
    for (int k = 0; k < 3; k++) {
        double t0 = th_now();
        exact_run(s, "a timed run");
        if (th_now() - t0 < t_run) t_run = th_now() - t0;
    }
    printf("%s on %s: a clean run takes %.2f ms\n", cs.label, o.backend == ST_BACKEND_CPU ? "cpu" : o.backend == ST_BACKEND_OPENCL ? "opencl" : "cuda",
           t_run * 1e3);

    /* 2. a deadline that passes before anything starts */
    CHECK(st_session_set_deadline(s, 1) == ST_OK, "setting a deadline");
    st_status r = st_session_run(s);
    if (r == ST_OK) r = st_session_wait(s);
    CHECK(r == ST_ERR_TIMEOUT && strstr(st_last_error(), "deadline"), "a 1 ns deadline gave %s", st_status_name(r));
    check_stopped(s, ST_ERR_TIMEOUT, "a 1 ns deadline");
    st_tensor *t = NULL;
    if (st_session_output(s, cs.want[0].name, &t) == ST_OK) {
        CHECK(st_tensor_read(t, cs.want[0].dtype, out.data[0], cs.want[0].bytes) != ST_OK, "reading an output of the stopped run");
        st_tensor_free(t);
    }
    CHECK(st_session_set_deadline(s, 0) == ST_OK, "removing the deadline");
    exact_run(s, "the run after a 1 ns deadline");

    /* 3. a deadline in the middle of the run */
    uint64_t dl = (uint64_t)(t_run * 1e9 / 10);
    st_session_set_deadline(s, dl ? dl : 1);
    double t0 = th_now();
    r = st_session_run(s);
    if (r == ST_OK) r = th_read(s, &cs, &out);
    double took = th_now() - t0;
    printf("deadline of %.2f ms: %s after %.2f ms\n", (double)dl * 1e-6, st_status_name(r), took * 1e3);
    if (r == ST_OK) CHECK(th_compare(&cs, &out) < 0, "a run that finished under a deadline gave other outputs");
    else CHECK(r == ST_ERR_TIMEOUT, "a run past its deadline gave %s", st_status_name(r));
    if (expect_cancels) CHECK(r == ST_ERR_TIMEOUT, "a deadline of a tenth of the run did not stop it");
    check_stopped(s, r, "a deadline mid-run");
    st_session_set_deadline(s, 0);
    exact_run(s, "the run after a deadline mid-run");

    /* 4. cancels from another thread at random moments */
    canceller k = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, s, -1, 0, false};
    pthread_t th;
    pthread_create(&th, NULL, cancel_main, &k);
    srand(18);
    int cancelled = 0, finished = 0;
    double worst = 0;
    for (int n = 0; n < runs; n++) {
        /* stratified: run n's delay falls in the n-th of `runs` equal
         * slices of [0, 1.2 t_run), at a random place in it */
        long delay = (long)(t_run * 1.2e9 * (n + (double)rand() / ((double)RAND_MAX + 1)) / runs);
        /* the delay counts from before st_session_run, which may itself
         * take most of the run (a while loop runs its iterations inside
         * it); a cancel that lands before the run has its number stops
         * the previous run, which is over: harmless */
        pthread_mutex_lock(&k.mu);
        k.delay_ns = delay;
        pthread_cond_signal(&k.cv);
        pthread_mutex_unlock(&k.mu);
        double c0 = th_now();
        r = st_session_run(s);
        /* half wait for the run, half read its outputs (which wait) */
        if (r == ST_OK) r = n % 2 ? st_session_wait(s) : th_read(s, &cs, &out);
        if (r == ST_OK && n % 2) r = th_read(s, &cs, &out);
        double after = th_now() - c0 - (double)delay * 1e-9;
        if (getenv("STRATA_CANCEL_VERBOSE"))
            printf("  run %d: cancel after %.2f ms: %s, %.2f ms later\n", n, (double)delay * 1e-6, st_status_name(r), after * 1e3);
        /* the cancel lands before the next run starts */
        pthread_mutex_lock(&k.mu);
        while (k.fired <= n) pthread_cond_wait(&k.cv, &k.mu);
        pthread_mutex_unlock(&k.mu);
        if (r == ST_OK) {
            finished++;
            CHECK(th_compare(&cs, &out) < 0, "run %d, not cancelled: an output differs", n);
        } else {
            CHECK(r == ST_ERR_CANCELLED && strstr(st_last_error(), "cancel"), "run %d gave %s", n, st_status_name(r));
            cancelled++;
            if (after > worst) worst = after;
            check_stopped(s, ST_ERR_CANCELLED, "a cancelled run");
            exact_run(s, "the run after a cancelled one");
        }
    }
    pthread_mutex_lock(&k.mu);
    k.stop = true;
    pthread_cond_signal(&k.cv);
    pthread_mutex_unlock(&k.mu);
    pthread_join(th, NULL);
    printf("%d runs cancelled at random moments: %d stopped (ST_ERR_CANCELLED), %d had finished; a cancelled run's wait "
           "returned at most %.2f ms after its cancel\n",
           runs, cancelled, finished, worst * 1e3);
    if (expect_cancels) CHECK(cancelled * 4 >= runs, "only %d of %d runs were stopped by their cancel", cancelled, runs);
    exact_run(s, "the last run");

    st_session_free(s);
    st_model_free(m);
    th_outputs_free(&cs, &out);
    th_case_free(&cs);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
