/*
 * session.h — sessions, and the tracker that lets tensors wait for the
 * commands that touch their bytes (rule 4).
 *
 * The tracker outlives its session when tensors still hold it: after the
 * session has waited for everything, its dag is NULL and waits are free.
 */
#ifndef ST_SESSION_H
#define ST_SESSION_H

#include <pthread.h>
#include <stdatomic.h>

#include "runtime/backend.h"
#include "runtime/dag.h"

typedef struct st_tracker {
    atomic_int refs;
    pthread_mutex_t mu;
    st_exec *exec;
    const st_dag *dag;        /* the run in flight, or NULL */
    /* Serial of the plan whose layout the arena holds (the last run's), 0
     * while a run is being set up or after one failed.  A tensor of
     * another plan would read bytes that now hold other values, so its
     * reads and writes are refused rather than returning garbage. */
    uint64_t plan;
    pthread_t runner;         /* the thread that made the last run */
} st_tracker;

void st_tracker_release(st_tracker *t);
/* Waits for the commands of the run in flight whose footprints overlap
 * bytes [lo, hi) of s: writers for a read, readers and writers for a
 * write.  Returns a kernel failure of the run, if any. */
st_status st_tracker_wait_range(st_tracker *t, const st_storage *s, int64_t lo, int64_t hi, bool for_write);
/* The same with t->mu already held by the caller. */
st_status st_tracker_wait_range_locked(st_tracker *t, const st_storage *s, int64_t lo, int64_t hi, bool for_write);

struct st_tensor {
    st_view view;             /* retains view.storage */
    st_dtype model_dtype;     /* what the user sees */
    st_tracker *tracker;      /* NULL for tensors no command writes */
    uint64_t plan;            /* with a tracker: the plan this is a view of */
    pthread_t owner;          /* the thread that asked for it */
};

st_status st_tensor_new(const st_view *v, st_dtype model_dtype, st_tracker *tracker, st_tensor **out);

#endif
