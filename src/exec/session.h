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

#include "backends/backend.h"
#include "exec/dag.h"

typedef struct st_tracker {
    atomic_int refs;
    pthread_mutex_t mu;
    st_exec *exec;
    const st_dag *dag;        /* the run in flight, or NULL */
} st_tracker;

void st_tracker_release(st_tracker *t);
/* Waits for the commands of the run in flight whose footprints overlap
 * bytes [lo, hi) of s: writers for a read, readers and writers for a
 * write.  Returns a kernel failure of the run, if any. */
st_status st_tracker_wait_range(st_tracker *t, const st_storage *s, int64_t lo, int64_t hi, bool for_write);

struct st_tensor {
    st_view view;             /* retains view.storage */
    st_dtype model_dtype;     /* what the user sees */
    st_tracker *tracker;      /* NULL for tensors no command writes */
};

st_status st_tensor_new(const st_view *v, st_dtype model_dtype, st_tracker *tracker, st_tensor **out);

#endif
