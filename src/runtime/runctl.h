/*
 * runctl.h — cancelling a run and its deadline, as executors see them.
 *
 * A session numbers its runs (1, 2, ...).  st_session_cancel records the
 * number of the latest run, and a run is cancelled when the number it was
 * given is the one recorded: a cancel never reaches a run started after
 * it, and needs no lock, so it can come from any thread at any time.  A
 * deadline is an absolute CLOCK_MONOTONIC time fixed when the run starts.
 *
 * Executors ask st_run_check before each command they start (the CPU's
 * workers, a device executor's enqueue loop, and the host commands of a
 * mixed plan): a cancelled run or one past its deadline starts nothing
 * more, and its waits report ST_ERR_CANCELLED or ST_ERR_TIMEOUT.  A
 * command already running, or already queued on a device, completes: a
 * device cannot take back what it was given, so the wait still waits for
 * it, and nothing of the run is pending once the wait returns.
 */
#ifndef ST_EXEC_RUNCTL_H
#define ST_EXEC_RUNCTL_H

#include <stdatomic.h>
#include <stdint.h>

#include "strata.h"

typedef struct st_run_ctl {
    atomic_uint_fast64_t run;      /* the latest run's number */
    atomic_uint_fast64_t cancel;   /* the number of the run cancelled */
    atomic_uint_fast64_t deadline; /* the latest run's deadline (ns, CLOCK_MONOTONIC); 0: none */
} st_run_ctl;

/* What an executor keeps of the run it was given. */
typedef struct st_run_ref {
    const st_run_ctl *ctl;         /* NULL: nothing can stop the run */
    uint64_t run;
    uint64_t deadline;
} st_run_ref;

/* The run being submitted now (call at submit). */
st_run_ref st_run_current(const st_run_ctl *ctl);
/* ST_OK while the run may go on; else ST_ERR_CANCELLED or ST_ERR_TIMEOUT
 * with a message that says what stopped it before what: node (and its
 * op) about to start, or, for NULL, the run's submission. */
st_status st_run_check(const st_run_ref *r, const char *node, const char *op);
/* The same, with where the run stopped said by the caller ("before
 * iteration 3 of Loop 'x'"); where is only read when the run stops. */
st_status st_run_check_at(const st_run_ref *r, const char *where);
uint64_t st_run_now_ns(void);

#endif
