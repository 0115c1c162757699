/* pool.c — worker threads serving loop chunks and DAG tasks (see pool.h). */
#include "runtime/pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/scratch.h"
#include "core/status.h"

typedef struct job {
    void (*fn)(void *arg, int64_t i);
    void *arg;
    int64_t n, next, finished;
    struct job *link;
    int owner;                 /* the starting worker, with an observer set */
    /* A chunk that fails says why with st_error, whose message is the
     * thread's own; the first message a worker's chunk sets is carried
     * back to the thread that started the loop, which reports it. */
    char msg[ST_ERROR_MAX];
} job;

struct st_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* workers, and a loop's owner waiting for its chunks */
    pthread_cond_t waiter_cv;  /* threads outside the pool waiting on a run (st_pool_wait) */
    /* Bumped, under mu, whenever work or a finished loop appears, so that
     * a worker spinning without the lock sees that it should look again. */
    atomic_uint gen;
    int64_t spin_ns;           /* how long an idle worker spins before sleeping */
    int sleepers;              /* workers and owners inside pthread_cond_wait on cv */
    int threads;
    pthread_t *tids;
    bool stop;
    job *jobs;                 /* loops with chunks left, newest first */
    st_task_source src;
    bool has_src;
    st_pool_observer observe;
    void *observe_ctx;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Tells workers there is something to look at: spinning ones see gen
 * change; sleeping ones need the futex wake, which a spinning one does
 * not (on a VM the wake is an interrupt to another vCPU and costs more
 * than most chunks). Called with mu held. */
static void wake_workers(st_pool *p)
{
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    if (p->sleepers > 0) pthread_cond_broadcast(&p->cv);
}

/* Waits on cv with mu held, as pthread_cond_wait does, but spins first:
 * a worker between two kernels' parallel loops usually gets the next
 * loop within microseconds, and sleeping costs a futex wait, a wake from
 * the other thread and two context switches each time (27% of a
 * transformer encoder's time on this 2-vCPU VM).  The spin is bounded,
 * so an idle pool still sleeps.  Returns with mu held; like
 * pthread_cond_wait it may return with nothing new, so callers loop. */
static void idle_wait(st_pool *p)
{
    if (p->spin_ns > 0) {
        unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed);
        pthread_mutex_unlock(&p->mu);
        int64_t t0 = now_ns();
        bool changed = false;
        for (int k = 1;; k++) {
            if (atomic_load_explicit(&p->gen, memory_order_acquire) != g) {
                changed = true;
                break;
            }
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            if ((k & 63) == 0 && now_ns() - t0 > p->spin_ns) break;
        }
        pthread_mutex_lock(&p->mu);
        if (changed || atomic_load_explicit(&p->gen, memory_order_relaxed) != g) return;
    }
    p->sleepers++;
    pthread_cond_wait(&p->cv, &p->mu);
    p->sleepers--;
}

static job *open_job(st_pool *p)
{
    for (job *j = p->jobs; j; j = j->link)
        if (j->next < j->n) return j;
    return NULL;
}

static void run_chunk(st_pool *p, job *j, bool worker)
{
    int64_t i = j->next++;
    pthread_mutex_unlock(&p->mu);
    if (worker) st_error_clear();
    j->fn(j->arg, i);
    pthread_mutex_lock(&p->mu);
    if (worker && !j->msg[0] && st_last_error()[0]) snprintf(j->msg, sizeof j->msg, "%s", st_last_error());
    if (++j->finished == j->n) wake_workers(p);
}

static void *worker(void *arg)
{
    st_pool *p = arg;
    /* the kernels' scratch this worker keeps across runs (scratch.h),
     * freed when it exits with its pool */
    st_scratch_cache cache;
    st_scratch_attach(&cache);
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        job *j = open_job(p);
        if (j && p->observe) { /* helping another thread's loop: tell the profile */
            int64_t t0 = now_ns();
            int owner = j->owner;
            do run_chunk(p, j, true);
            while (open_job(p) == j);
            if (p->observe) p->observe(p->observe_ctx, st_pool_self(p), owner, t0, now_ns());
            continue;
        }
        if (j) {
            run_chunk(p, j, true);
            continue;
        }
        int task;
        if (p->has_src && p->src.next(p->src.ctx, &task)) {
            st_task_source src = p->src;
            pthread_mutex_unlock(&p->mu);
            src.run(src.ctx, task);
            pthread_mutex_lock(&p->mu);
            src.done(src.ctx, task);
            continue;
        }
        idle_wait(p);
    }
    pthread_mutex_unlock(&p->mu);
    st_scratch_detach(&cache);
    return NULL;
}

st_pool *st_pool_create(int threads)
{
    st_pool *p = NULL;
    return st_pool_start(threads, &p) == ST_OK ? p : NULL;
}

st_status st_pool_start(int threads, st_pool **out)
{
    *out = NULL;
    st_pool *p = calloc(1, sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory creating a pool of %d threads", threads);
    if (threads < 1) threads = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->waiter_cv, NULL);
    atomic_init(&p->gen, 0);
    /* One worker has nobody to wait for, so it never spins.
     * STRATA_CPU_SPIN_US sets the spin (0: sleep at once). */
    p->spin_ns = threads > 1 ? 50 * 1000 : 0;
    const char *spin = getenv("STRATA_CPU_SPIN_US");
    if (spin && *spin && threads > 1) p->spin_ns = (int64_t)(atof(spin) * 1000.0);
    p->tids = calloc((size_t)threads, sizeof *p->tids);
    if (!p->tids) {
        st_pool_destroy(p);
        return st_error(ST_ERR_NOMEM, "out of memory creating a pool of %d threads", threads);
    }
    int err = 0;
    for (int i = 0; i < threads; i++) {
        if ((err = pthread_create(&p->tids[i], NULL, worker, p)) != 0) break;
        p->threads++;
    }
    /* fewer threads than asked still run everything; none cannot */
    if (p->threads == 0) {
        st_pool_destroy(p);
        return st_error(err == EAGAIN ? ST_ERR_NOMEM : ST_ERR_BACKEND, "cannot start a worker thread: %s", strerror(err));
    }
    *out = p;
    return ST_OK;
}

void st_pool_destroy(st_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->threads; i++) pthread_join(p->tids[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->waiter_cv);
    free(p->tids);
    free(p);
}

int st_pool_threads(const st_pool *p) { return p ? p->threads : 1; }

/* tids[] is written before any task reaches a worker (st_pool_set_source
 * takes the lock after st_pool_create returns), so reading it here is
 * ordered after the writes. */
int st_pool_self(const st_pool *p)
{
    pthread_t me = pthread_self();
    for (int i = 0; p && i < p->threads; i++)
        if (pthread_equal(p->tids[i], me)) return i;
    return -1;
}

void st_pool_set_source(st_pool *p, const st_task_source *src)
{
    pthread_mutex_lock(&p->mu);
    p->has_src = src != NULL;
    if (src) p->src = *src;
    pthread_mutex_unlock(&p->mu);
}

void st_pool_set_observer(st_pool *p, st_pool_observer fn, void *ctx)
{
    pthread_mutex_lock(&p->mu);
    p->observe = fn;
    p->observe_ctx = ctx;
    pthread_mutex_unlock(&p->mu);
}

void st_pool_lock(st_pool *p) { pthread_mutex_lock(&p->mu); }
void st_pool_unlock(st_pool *p) { pthread_mutex_unlock(&p->mu); }
void st_pool_broadcast(st_pool *p) { wake_workers(p); }
void st_pool_notify(st_pool *p) { pthread_cond_broadcast(&p->waiter_cv); }
/* A thread outside the pool (the one that submitted a run) sleeps at
 * once: spinning it would take a core from the workers. */
void st_pool_wait(st_pool *p) { pthread_cond_wait(&p->waiter_cv, &p->mu); }

void st_parallel_for(st_pool *p, int64_t n, void (*fn)(void *arg, int64_t i), void *arg)
{
    if (n <= 0) return;
    if (!p || p->threads <= 1 || n == 1) {
        for (int64_t i = 0; i < n; i++) fn(arg, i);
        return;
    }
    job j = {fn, arg, n, 0, 0, NULL, -1, ""};
    st_error_clear(); /* a message after the loop is a chunk's */
    pthread_mutex_lock(&p->mu);
    if (p->observe) j.owner = st_pool_self(p);
    j.link = p->jobs;
    p->jobs = &j;
    wake_workers(p);
    while (j.next < j.n) run_chunk(p, &j, false);
    while (j.finished < j.n) idle_wait(p);
    job **pp = &p->jobs;
    while (*pp != &j) pp = &(*pp)->link;
    *pp = j.link;
    pthread_mutex_unlock(&p->mu);
    if (j.msg[0] && !st_last_error()[0]) st_error(ST_OK, "%s", j.msg);
}
