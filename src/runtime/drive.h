/*
 * drive.h — the one DAG driver under every executor.
 *
 * An executor maps the hazard DAG's edges onto its own mechanism (a
 * thread pool's counters, CUDA streams and events, OpenCL event lists);
 * everything else about driving a run is here, written once:
 *
 *  - the order commands are started in: program order, or with
 *    ST_SCHEDULE_RANDOM a seeded random topological order
 *    (schedule.h), kept in st_drive.order;
 *  - for executors that hand commands to a device queue (CUDA, OpenCL):
 *    the walk over that order (st_drive_walk), which checks the run's
 *    cancel and deadline (runctl.h) before each command and sends it to
 *    the executor's host-node or enqueue callback (a kernel, or a mixed
 *    plan's transfer: cmd->run NULL);
 *  - for executors that run ready commands themselves (the CPU):
 *    readiness (ready.h);
 *  - a host command's run: the cancel check, the CPU kernel (host.h) and
 *    its time on the profile's host lane (st_drive_host);
 *  - the run's first failure, recorded once with the node's name
 *    (st_drive_fail), and what a kernel's refusal at run time means
 *    (st_drive_kernel_status).
 */
#ifndef ST_RUNTIME_DRIVE_H
#define ST_RUNTIME_DRIVE_H

#include <stdbool.h>

#include "runtime/dag.h"
#include "runtime/host.h"
#include "runtime/runctl.h"
#include "runtime/schedule.h"

struct st_prof_run;

/* What an executor that queues commands on a device does per command. */
typedef struct st_drive_ops {
    /* Queue command c (a kernel, or a transfer when cmd->run is NULL)
     * behind its DAG predecessors, which are all queued already. */
    st_status (*enqueue)(void *ctx, int c);
    /* Queue host command c (cmd->device == ST_DEV_HOST) the same way; the
     * executor's thread later calls st_drive_host for it. */
    st_status (*host)(void *ctx, int c);
} st_drive_ops;

typedef struct st_drive {
    st_sched sched;            /* the session's schedule */
    const st_dag *dag;         /* the run being driven */
    st_run_ref run;            /* its cancel and deadline */
    int *order, *scratch;      /* the start order (st_drive_start), and room to compute it */
    int cap;
    st_status err;             /* the run's first failure, and its message */
    char errmsg[1024];
} st_drive;

void st_drive_init(st_drive *dr, const st_session_options *o);
void st_drive_free(st_drive *dr);

/* Begins a run of dag under ctl's cancel and deadline: clears the failure
 * and computes the start order. */
st_status st_drive_start(st_drive *dr, const st_dag *dag, const struct st_run_ctl *ctl);

/* Computes dag's start order alone (a fresh random one each time), for an
 * executor that enqueues one DAG several times in a run (CUDA's capture
 * of a loop body); st_drive_start does it for a run. */
st_status st_drive_order(st_drive *dr, const st_dag *dag);

/* Queues order[lo, hi) through ops, checking the run's cancel and
 * deadline first when check (not while a CUDA graph is captured: a graph
 * is every command).  Stops at the first failure, records it
 * (st_drive_fail) and returns it; *done counts the commands queued. */
st_status st_drive_walk(st_drive *dr, int lo, int hi, bool check, const st_drive_ops *ops, void *ctx, int *done);

/* Queues command c of d through ops (host or enqueue, by where it runs)
 * without a check; a failure's message is prefixed with the node's name.
 * For a thread that queues part of a run on its own (OpenCL's segments). */
st_status st_drive_one(const st_dag *d, int c, const st_drive_ops *ops, void *ctx);

/* Records s as the run's failure unless one is recorded; cmd, when
 * given, names the node before st_last_error()'s message. */
void st_drive_fail(st_drive *dr, st_status s, const st_cmd *cmd);
/* The recorded failure, with its message set again (st_error), or ST_OK. */
st_status st_drive_status(const st_drive *dr);

/* A kernel's status: a kernel that refuses at run time (ST_ERR_UNSUPPORTED)
 * a node its accepts took is a bug of ours, said so. */
st_status st_drive_kernel_status(st_status raw);

/* Runs host command c of d on the calling thread: the run's cancel and
 * deadline first, then its CPU kernel on h, timed on prof's host lane
 * when prof is given.  The message names the node on failure. */
st_status st_drive_host(st_host *h, const st_run_ref *run, struct st_prof_run *prof, const st_dag *d, int c);
/* The same with operands at base[k] where set (st_host_run_at): an
 * executor that maps device storages into host memory. */
st_status st_drive_host_at(st_host *h, const st_run_ref *run, struct st_prof_run *prof, const st_dag *d, int c,
                           void *const *base);

#endif
