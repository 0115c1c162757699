/*
 * ready.h — readiness: which commands of a running DAG may start, for an
 * executor that runs commands itself as they become ready (the CPU's
 * workers) rather than queuing the whole DAG on a device.
 *
 * It keeps, per command, how many predecessors are not yet complete; a
 * command whose count reaches zero is ready.  st_ready_next hands out
 * ready commands in program order, or with ST_SCHEDULE_RANDOM in a seeded
 * random order; nothing else orders commands, so a missing DAG edge lets
 * a conflicting pair run in either order, which is what the random
 * schedule exists to expose.  With the random schedule a finished command
 * is often "completed late": its successors are released only some steps
 * later, in random order, the way a GPU may retire work long after it was
 * issued.
 *
 * With sanitize on, a command that starts while a running command touches
 * conflicting bytes is a hard error (a run-time check of the property the
 * static check in dag.c proves).  A cancelled run, or one past its
 * deadline, or one that failed, starts nothing more: the rest is handed
 * out as skipped, still in DAG order, so that waiters wake.
 *
 * Not thread-safe: the executor holds its own lock around every call.
 */
#ifndef ST_RUNTIME_READY_H
#define ST_RUNTIME_READY_H

#include <stdbool.h>

#include "runtime/drive.h"

enum { ST_CMD_WAITING = 0, ST_CMD_READY, ST_CMD_RUNNING, ST_CMD_SKIPPED, ST_CMD_EXECUTED, ST_CMD_COMPLETE };

typedef struct st_ready {
    st_drive drive;            /* the schedule, the run's cancel, its failure */
    bool sanitize;
    bool serial;               /* one command at a time */
    int *remaining;            /* predecessors not complete, per command */
    unsigned char *state;      /* ST_CMD_*, per command */
    int *ready, n_ready;
    int *late, n_late;         /* executed, successors not yet released */
    int *running, n_running;   /* sanitize: the commands running */
    int n_active, n_executed;
    int cap;
} st_ready;

void st_ready_init(st_ready *r, const st_session_options *o);
void st_ready_free(st_ready *r);
/* Begins a run of dag: every command waiting, the sources ready. */
st_status st_ready_start(st_ready *r, const st_dag *dag, const struct st_run_ctl *ctl);
/* The next command to start, if one may start now; false if none.  *c is
 * to be run unless r->state[*c] is ST_CMD_SKIPPED (then only retired with
 * st_ready_done). */
bool st_ready_next(st_ready *r, int *c);
/* Command c has executed: releases its successors (now or, random, later). */
void st_ready_done(st_ready *r, int c);
/* Whether command c has executed; whether the whole run has. */
static inline bool st_ready_executed(const st_ready *r, int c) { return r->state[c] >= ST_CMD_EXECUTED; }
static inline bool st_ready_finished(const st_ready *r)
{
    return !r->drive.dag || r->n_executed == r->drive.dag->n_cmds;
}

#endif
