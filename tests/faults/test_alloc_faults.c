/*
 * test_alloc_faults.c — fails every allocation in turn (issue 18.1).
 *
 * usage: test_alloc_faults [--backend cpu|opencl|cuda] [--threads N] [--runs R]
 *                          [--stride K] [--offset O] [--timeout S] CASE...
 *        test_alloc_faults [--threads N] --count-warm R [--max-warm A] CASE...
 *
 * The second form fails nothing: it counts the allocations of R warm runs
 * (count_warm below).
 *
 * For each case (harness.h): a clean run gives the expected outputs; a
 * scenario, load the model, create a session, bind the inputs, then R
 * runs (2 by default) each read back and compared, then free everything,
 * is made twice unarmed (the first fills the process-wide caches, the
 * second counts T allocations: host ones through the --wrap'd allocators,
 * device ones through strata's fault hook).  Then, for N = 1..T (with
 * --stride K: N = O+1, O+1+K, ...), the scenario runs with allocation N
 * failing.  Each must end in one of two ways:
 *   - success: the failure was absorbed (a cache not grown), and every
 *     output is still exact;
 *   - ST_ERR_NOMEM from the first call that fails, with a one-line
 *     message about memory; and if a session exists by then, it is still
 *     usable: with nothing failing, it binds, runs and gives the exact
 *     outputs (the failed run left nothing behind that spoils the next).
 * Anything else is counted against the case and fails the test: another
 * status, a message that says nothing about memory, a wrong output, a
 * session that no longer works, an allocation of the iteration still live
 * after everything was freed (a leak, listed by call site), an iteration
 * that takes longer than --timeout seconds (a hang: the test stops
 * there), or a crash (the test dies, naming N and the step).
 *
 * Prints one summary line per case:
 *   case c2f: 754 allocations, 754 failed in turn: 731 ST_ERR_NOMEM, 23 absorbed; 0 crashes, 0 leaks, 0 hangs, 0 other
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "alloc_wrap.h"
#include "core/bigmem.h"
#include "harness.h"

/* LeakSanitizer's check, in an ASan build (weak: absent otherwise). */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));
void __asan_set_death_callback(void (*cb)(void)) __attribute__((weak));

enum step { S_LOAD, S_CREATE, S_BIND, S_RUN, S_READ, S_FREE, S_RECOVER, S_DONE };
static const char *const step_names[] = {"st_model_load", "st_session_create", "binding inputs", "st_session_run",
                                         "reading outputs", "freeing", "the run after the failure", "done"};

/* What the watchdog and the crash handler report. */
static const char *cur_case = "";
static atomic_long cur_n;
static atomic_int cur_step;
static atomic_int cur_run;
static _Atomic double step_started;
static double timeout_s = 120;

static void say_where(const char *what)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "\ntest_alloc_faults: %s in case %s with allocation %ld failing, during %s (run %d)\n",
                     what, cur_case, atomic_load(&cur_n), step_names[atomic_load(&cur_step)], atomic_load(&cur_run));
    if (n > 0) (void)!write(2, buf, (size_t)n);
}

static void on_crash(int sig)
{
    say_where(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGABRT ? "SIGABRT" : "a fatal signal");
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_asan_death(void) { say_where("an ASan report"); }

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        sleep(1);
        double t0 = atomic_load(&step_started);
        if (t0 > 0 && th_now() - t0 > timeout_s) {
            say_where("a hang (no progress within --timeout)");
            _exit(4);
        }
    }
    return NULL;
}

static void enter_step(int step)
{
    atomic_store(&cur_step, step);
    atomic_store(&step_started, th_now());
}

typedef struct outcome {
    int step;               /* of the first failure, or S_DONE */
    st_status status;
    char msg[1100];
    bool wrong;             /* an output differed */
    bool recovered;         /* after a failure: the session ran exactly */
    bool had_session;
} outcome;

typedef struct config {
    st_session_options opt;
    int runs;
} config;

/* A message says what failed when it speaks of memory. */
static bool names_memory(const char *m)
{
    return strcasestr(m, "memory") || strcasestr(m, "alloc");
}

static void fail_at(outcome *o, int step, st_status r)
{
    o->step = step;
    o->status = r;
    snprintf(o->msg, sizeof o->msg, "%s", st_last_error());
}

/* The scenario; allocation n fails (0: none).  Disarms before the
 * recovery run, which must be clean. */
static void scenario(const th_case *c, const config *cfg, th_outputs *out, long n, long epoch, outcome *o)
{
    memset(o, 0, sizeof *o);
    o->step = S_DONE;
    st_model *m = NULL;
    st_session *s = NULL;
    st_status r;
    atomic_store(&cur_run, 0);
    aw_arm(n, epoch);
    enter_step(S_LOAD);
    if ((r = st_model_load(c->model, &m)) != ST_OK) {
        fail_at(o, S_LOAD, r);
        goto end;
    }
    enter_step(S_CREATE);
    if ((r = st_session_create(m, &cfg->opt, &s)) != ST_OK) {
        fail_at(o, S_CREATE, r);
        goto end;
    }
    enter_step(S_BIND);
    if ((r = th_bind(s, c)) != ST_OK) {
        fail_at(o, S_BIND, r);
        goto end;
    }
    for (int k = 0; k < cfg->runs; k++) {
        atomic_store(&cur_run, k + 1);
        enter_step(S_RUN);
        if ((r = st_session_run(s)) != ST_OK) {
            fail_at(o, S_RUN, r);
            goto end;
        }
        enter_step(S_READ);
        if ((r = th_read(s, c, out)) != ST_OK) {
            fail_at(o, S_READ, r);
            goto end;
        }
        if (th_compare(c, out) >= 0) o->wrong = true;
    }
end:
    o->had_session = s != NULL;
    if (o->step != S_DONE) {
        aw_disarm();
        if (s) { /* the same session, nothing failing: it must still work */
            enter_step(S_RECOVER);
            o->recovered = th_bind(s, c) == ST_OK && st_session_run(s) == ST_OK && th_read(s, c, out) == ST_OK &&
                           th_compare(c, out) < 0;
            if (!o->recovered) fprintf(stderr, "    the session after the failure: %s\n", st_last_error());
        }
    }
    /* freeing stays armed on the path without a failure, so an allocation
     * in a free path is swept too */
    enter_step(S_FREE);
    st_session_free(s);
    st_model_free(m);
    aw_disarm();
    atomic_store(&step_started, 0.0);
}

static void describe(void *site, const char *what, char *out, size_t cap)
{
    if (what && *what) snprintf(out, cap, "%s '%s'", aw_hit_was_map() ? "host mapping" : "device allocation", what);
    else aw_describe(site, out, cap);
}

typedef struct tally {
    long total, swept, nomem, absorbed, leaks, other;
} tally;

static bool sweep(const th_case *c, const config *cfg, long stride, long offset, tally *t)
{
    memset(t, 0, sizeof *t);
    cur_case = c->label;
    th_outputs out;
    if (!th_outputs_alloc(c, &out)) return false;
    outcome o;
    /* epochs go on across cases: epoch 0 is what the test itself holds */
    static long epoch = 1;
    /* the first scenario fills process-wide caches (the OpenCL program,
     * the storage index's capacity); the second counts */
    for (int k = 0; k < 2; k++) {
        scenario(c, cfg, &out, 0, epoch++, &o);
        t->total = aw_disarm();
        if (o.step != S_DONE || o.wrong) {
            fprintf(stderr, "case %s: the scenario fails with nothing injected (%s: %s)\n", c->label, step_names[o.step],
                    o.msg);
            th_outputs_free(c, &out);
            return false;
        }
    }
    /* blocks strata maps itself are not in the wrapper's table: counted */
    long big_base = st_big_live();
    long before = aw_live(epoch - 1, false);
    if (before) {
        fprintf(stderr, "case %s: %ld allocations of a clean scenario are still live after it:\n", c->label, before);
        aw_live(epoch - 1, true);
        t->leaks++;
    }
    /* a few past the count: a run may allocate a little more than another */
    long last = t->total + 8;
    double t0 = th_now();
    for (long n = offset + 1; n <= last; n += stride, epoch++) {
        atomic_store(&cur_n, n);
        scenario(c, cfg, &out, n, epoch, &o);
        void *site;
        const char *what;
        bool hit = aw_hit(&site, &what);
        if (!hit && o.step == S_DONE) continue; /* past the end of this iteration's sequence */
        t->swept++;
        /* naming the call site runs addr2line: only when it is printed */
        char where[512] = "";
        bool verbose = getenv("STRATA_FAULTS_VERBOSE") != NULL;
#define WHERE (where[0] ? where : (describe(site, what, where, sizeof where), where))
        bool bad = false;
        if (o.step == S_DONE) {
            if (o.wrong) {
                fprintf(stderr, "case %s, allocation %ld (%s) failed: the runs went on but gave wrong outputs\n", c->label, n, WHERE);
                bad = true;
            } else {
                t->absorbed++;
            }
        } else if (o.status != ST_ERR_NOMEM || !names_memory(o.msg) || strchr(o.msg, '\n') || !hit) {
            fprintf(stderr, "case %s, allocation %ld (%s) failed: %s gave %s, not a clean ST_ERR_NOMEM: %s\n", c->label, n,
                    hit ? WHERE : "none was made", step_names[o.step], st_status_name(o.status), o.msg);
            bad = true;
        } else if (o.had_session && !o.recovered) {
            fprintf(stderr, "case %s, allocation %ld (%s) failed in %s (%s); the session did not run exactly afterwards\n",
                    c->label, n, WHERE, step_names[o.step], o.msg);
            bad = true;
        } else {
            t->nomem++;
        }
        if (o.wrong && o.step != S_DONE) {
            fprintf(stderr, "case %s, allocation %ld (%s): a run before the failure gave wrong outputs\n", c->label, n, WHERE);
            bad = true;
        }
        long big_left = st_big_live() - big_base;
        if (big_left) {
            fprintf(stderr, "case %s, allocation %ld (%s) failed in %s: %ld mapped blocks (core/bigmem.h) not freed\n",
                    c->label, n, WHERE, step_names[o.step], big_left);
            t->leaks++;
            big_base = st_big_live();
        }
        long leaked = aw_live(epoch, false);
        if (leaked) {
            fprintf(stderr, "case %s, allocation %ld (%s) failed in %s: %ld allocations leaked:\n", c->label, n, WHERE,
                    step_names[o.step], leaked);
            aw_live(epoch, true);
            t->leaks++;
        }
        if (bad) t->other++;
        if (verbose)
            printf("  %ld %s: %s%s%s\n", n, WHERE, o.step == S_DONE ? "absorbed" : step_names[o.step], o.step == S_DONE ? "" : ": ",
                   o.step == S_DONE ? "" : o.msg);
    }
    th_outputs_free(c, &out);
    aw_arm(0, 0); /* what follows (the next case's set-up) is the test's */
    aw_disarm();
    printf("case %s: %ld allocations, %ld failed in turn%s: %ld ST_ERR_NOMEM, %ld absorbed; 0 crashes, %ld leaks, 0 hangs, %ld other (%.1f s)\n",
           c->label, t->total, t->swept, stride > 1 ? " (a subset)" : "", t->nomem, t->absorbed, t->leaks, t->other,
           th_now() - t0);
    fflush(stdout);
    return t->leaks == 0 && t->other == 0;
}

/* --count-warm N: no failures; how many allocations a warm session makes
 * per run (bind the inputs, run, read the outputs), after ten runs that
 * warm it up, by call site.  A warm session reuses its plan's memory and
 * its workers' scratch (runtime/scratch.h), so it should make none
 * beyond what the caller's calls themselves need; more than --max-warm
 * per run fails the test. */
static bool count_warm(const th_case *c, const config *cfg, int runs, double max_per_run)
{
    th_outputs out;
    st_model *m = NULL;
    st_session *s = NULL;
    bool ok = false, counted = false;
    if (!th_outputs_alloc(c, &out)) return false;
    if (st_model_load(c->model, &m) != ST_OK || st_session_create(m, &cfg->opt, &s) != ST_OK) goto end;
    for (int k = 0; k < 10; k++)
        if (th_bind(s, c) != ST_OK || st_session_run(s) != ST_OK || th_read(s, c, &out) != ST_OK) goto end;
    aw_sites(true);
    aw_arm(0, 0);
    bool wrong = false;
    for (int k = 0; k < runs; k++) {
        if (th_bind(s, c) != ST_OK || st_session_run(s) != ST_OK || th_read(s, c, &out) != ST_OK) {
            aw_disarm();
            goto end;
        }
        wrong |= th_compare(c, &out) >= 0;
    }
    long n = aw_disarm();
    double per = (double)n / runs;
    ok = !wrong && per <= max_per_run;
    counted = true;
    printf("case %s: %d warm runs (%d threads), %ld allocations: %.2f per run (bound %.2f)%s\n", c->label, runs,
           cfg->opt.threads, n, per, max_per_run, wrong ? ", WRONG OUTPUTS" : "");
    aw_sites_print(12, runs);
    aw_sites(false);
end:
    if (!counted) fprintf(stderr, "case %s: %s\n", c->label, st_last_error());
    st_session_free(s);
    st_model_free(m);
    th_outputs_free(c, &out);
    return ok;
}

static int usage(void)
{
    fprintf(stderr, "usage: test_alloc_faults [--backend cpu|opencl|cuda] [--threads N] [--runs R] [--stride K] "
                    "[--offset O] [--timeout S] [--count-warm N [--max-warm A]] CASE...\n");
    return 2;
}

int main(int argc, char **argv)
{
    config cfg;
    st_session_options_init(&cfg.opt);
    cfg.opt.threads = 2;
    cfg.runs = 2;
    long stride = 1, offset = -1;
    int first = 1, warm_runs = 0;
    double max_warm = 1e9;
    for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
        const char *a = argv[first], *v = first + 1 < argc ? argv[first + 1] : NULL;
        if (!v) return usage();
        if (!strcmp(a, "--backend")) {
            if (!th_backend(v, &cfg.opt.backend)) return usage();
        } else if (!strcmp(a, "--threads")) cfg.opt.threads = atoi(v);
        else if (!strcmp(a, "--runs")) cfg.runs = atoi(v);
        else if (!strcmp(a, "--stride")) stride = atol(v);
        else if (!strcmp(a, "--offset")) offset = atol(v);
        else if (!strcmp(a, "--timeout")) timeout_s = atof(v);
        else if (!strcmp(a, "--count-warm")) warm_runs = atoi(v);
        else if (!strcmp(a, "--max-warm")) max_warm = atof(v);
        else return usage();
    }
    if (first >= argc || stride < 1) return usage();
    /* a subset starts somewhere in the first stride, the same place each time */
    if (offset < 0) offset = stride > 1 ? 1 + (stride / 3) % stride : 0;
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGABRT, on_crash);
    if (__asan_set_death_callback) __asan_set_death_callback(on_asan_death);
    pthread_t dog;
    pthread_create(&dog, NULL, watchdog, NULL);
    pthread_detach(dog);
    aw_hook_devices();

    int bad = 0;
    for (int i = first; i < argc; i++) {
        th_case c;
        if (!th_case_parse(&c, argv[i])) return 1;
        if (!th_case_reference(&c, cfg.opt.backend)) {
            /* no device of that kind: the test is skipped, as ctest is told */
            if (cfg.opt.backend != ST_BACKEND_CPU && strstr(st_last_error(), "no ")) {
                printf("skipped: %s\n", st_last_error());
                return 77;
            }
            return 1;
        }
        tally t;
        if (warm_runs > 0 ? !count_warm(&c, &cfg, warm_runs, max_warm) : !sweep(&c, &cfg, stride, offset, &t)) bad++;
        th_case_free(&c);
    }
    if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
        fprintf(stderr, "test_alloc_faults: LeakSanitizer found leaks\n");
        bad++;
    }
    return bad ? 1 : 0;
}
