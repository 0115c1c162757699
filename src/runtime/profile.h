/*
 * profile.h — the trace of a session's runs (st_session_options.profile):
 * when and where every command ran, written as Chrome-trace JSON, which
 * Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * Owns: the per-stage timing buffers of the run in flight (st_prof_run),
 * which executors fill; the session's trace, formatted run by run; the
 * writer, which replaces the file atomically.
 *
 * One clock: every time is the host's CLOCK_MONOTONIC in nanoseconds.
 * The CPU executor reads it around each command on the worker thread.
 * Device executors time commands with device timestamps (OpenCL profiling
 * events, CUDA event pairs) and convert them once the run is complete
 * (the `collect` entry of st_exec_vt) with one offset per submitted DAG:
 * they bracket a marker that completes at once between two host clock
 * reads h0 and h1 and take the device time d of the marker as host time
 * (h0 + h1) / 2.  The conversion is then off by at most (h1 - h0) / 2
 * (plus the device timer's resolution), which the run records as
 * sync_error_ns, and it ignores drift between the two clocks over one
 * run (parts per million: nanoseconds over a run of milliseconds).
 *
 * A run lasts from st_session_run's entry until its last command ends;
 * the calling thread's own work in it (planning, binding and uploading
 * inputs, enqueueing, reading a stage's results) is timed too, as slices
 * of the "session" thread, so the slices of a run account for its time.
 */
#ifndef ST_EXEC_PROFILE_H
#define ST_EXEC_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "strata.h"

struct st_dag;
struct st_exec;

/* Where a command ran: a lane is a kind and an index within it, and
 * becomes a thread (tid) of the trace. */
typedef enum st_prof_lane_kind {
    ST_LANE_SESSION = 0,  /* the thread in st_session_run */
    ST_LANE_WORKER,       /* a CPU worker thread of the executor's pool */
    ST_LANE_STREAM,       /* a CUDA stream */
    ST_LANE_QUEUE,        /* an OpenCL command queue */
    ST_LANE_HOST,         /* a device executor's host commands (mixed plans) */
    ST_LANE_TRANSFER,     /* a mixed plan's copies between device and host */
    ST_LANE_RUNS,         /* the writer's: one slice per run */
    ST_LANE_KINDS
} st_prof_lane_kind;

#define ST_PROF_LANE(kind, index) ((int)(kind) * 4096 + (index))

/* The command times of one submitted DAG: filled by the executor (t0 and
 * t1 on the host clock, ns), read after the run is complete.  Each command
 * is written by one thread at most, so no lock is needed; t1 < 0 marks a
 * command that did not run (skipped after a failure). */
/* A CPU worker's time on loop chunks of a command another worker runs
 * (its st_parallel_for): the worker is not idle then. */
typedef struct st_prof_help {
    int cmd;
    int lane;
    int64_t t0, t1;
} st_prof_help;

typedef struct st_prof_run {
    int n;
    int64_t *t0, *t1;
    int *lane;
    int64_t sync_error_ns;    /* the device clock's conversion bound; 0 on the host */
    st_prof_help *help;       /* st_prof_add_help; one writer at a time (the CPU pool's lock) */
    int n_help, cap_help;
} st_prof_run;

/* The host clock (CLOCK_MONOTONIC), ns. */
int64_t st_prof_now(void);

static inline void st_prof_mark(st_prof_run *r, int cmd, int64_t t0, int64_t t1, int lane)
{
    r->t0[cmd] = t0;
    r->t1[cmd] = t1;
    r->lane[cmd] = lane;
}

/* Records help (st_prof_help); dropped if memory runs out. */
void st_prof_add_help(st_prof_run *r, int cmd, int lane, int64_t t0, int64_t t1);

typedef struct st_profile st_profile;

/* A trace to be written to path.  Fails with ST_ERR_IO, naming the path,
 * when it could not be written there: an empty path, a directory, a
 * directory that does not exist or is not writable.  device names the
 * session's backend ("cpu", "cuda", "opencl") for the commands it runs. */
st_status st_profile_create(const char *path, const char *device, st_profile **out);
void st_profile_free(st_profile *p);
/* The path, as the profile keeps it. */
const char *st_profile_path(const st_profile *p);

/* A run starts now (st_session_run's entry). */
void st_profile_run_begin(st_profile *p);
/* The timing buffer for the next stage of the run, to hand to the
 * executor; dag must live until st_profile_run_end. */
st_status st_profile_stage(st_profile *p, const struct st_dag *dag, st_prof_run **out);
/* Work of the session's own thread in the run, [t0, t1]: a static name. */
void st_profile_span(st_profile *p, const char *what, int64_t t0, int64_t t1);
/* The run failed: st_profile_run_end will leave it out. */
void st_profile_run_failed(st_profile *p);
/* The run in flight, once complete (the caller waited for every
 * command): collects device timestamps through e's vtable and formats its
 * events, or leaves the run out when ok is false.  An error here (a device
 * that could not be read) is kept and returned by st_profile_write. */
void st_profile_run_end(st_profile *p, struct st_exec *e, bool ok);
/* Writes the runs formatted so far to the path, through a temporary file
 * beside it that is renamed over it, so the path never holds a partial
 * trace; then starts a new trace. */
st_status st_profile_write(st_profile *p);

#endif
