/*
 * pool.h — the CPU thread pool: inter-op tasks and intra-op loops.
 *
 * Workers take two kinds of work: chunks of a parallel loop that some
 * kernel started (st_parallel_for), and tasks (commands of the running
 * DAG) from a task source.  A thread that starts a parallel loop runs its
 * chunks too and returns when all are done, so a kernel on one worker and
 * a kernel on another can each spread over whatever workers are idle.
 *
 * Determinism: a loop is split into chunks by the caller, independent of
 * the thread count, and each chunk owns its outputs, so results are
 * bit-identical whichever thread runs which chunk.
 */
#ifndef ST_POOL_H
#define ST_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "strata.h"

typedef struct st_pool st_pool;

typedef struct st_task_source {
    void *ctx;
    /* Called with the pool lock held: picks a task, or returns false. */
    bool (*next)(void *ctx, int *task);
    /* Called without the lock. */
    void (*run)(void *ctx, int task);
    /* Called with the lock held after run returns. */
    void (*done)(void *ctx, int task);
} st_task_source;

/* Starts up to threads workers (at least one); ST_ERR_NOMEM when there
 * is no memory for the pool or for a thread. */
st_status st_pool_start(int threads, st_pool **out);
/* The same, NULL on failure (the message is set). */
st_pool *st_pool_create(int threads);
void st_pool_destroy(st_pool *p);
int st_pool_threads(const st_pool *p);
/* The calling thread's number among p's workers (0 ..), or -1 when it is
 * not one of them (for a profile's thread ids). */
int st_pool_self(const st_pool *p);
void st_pool_set_source(st_pool *p, const st_task_source *src);

/* Optional, for profiles: called, with the lock held, after a worker
 * ran chunks of a loop another thread started, [t0, t1] on
 * CLOCK_MONOTONIC (ns): worker is the helper's number, owner the
 * starter's (-1: not a worker).  Consecutive chunks of one loop make one
 * call.  NULL: none (the default). */
typedef void (*st_pool_observer)(void *ctx, int worker, int owner, int64_t t0, int64_t t1);
void st_pool_set_observer(st_pool *p, st_pool_observer fn, void *ctx);

/* Lock for the task source's own state, and the signal it uses. */
void st_pool_lock(st_pool *p);
void st_pool_unlock(st_pool *p);
/* Wakes workers: there are new tasks.  Idle workers spin a short while
 * (STRATA_CPU_SPIN_US, default 50) before they sleep, so most of these
 * cost no system call. */
void st_pool_broadcast(st_pool *p);
/* Wakes the threads in st_pool_wait: tasks are done.  Kept apart from
 * the workers' wake so that a worker finishing a command does not wake
 * the submitting thread unless it waits for that. */
void st_pool_notify(st_pool *p);
/* Waits, with the lock held, for st_pool_notify (for threads outside
 * the pool). */
void st_pool_wait(st_pool *p);

/* Runs fn(arg, i) for i in [0, n).  Serial when p is NULL or has one
 * thread.  Returns when every i is done. */
void st_parallel_for(st_pool *p, int64_t n, void (*fn)(void *arg, int64_t i), void *arg);

#endif
