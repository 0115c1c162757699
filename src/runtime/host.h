/*
 * host.h — running a mixed plan's host commands from a device executor.
 *
 * In a mixed plan (plan/place.c) the nodes the device's table refuses run
 * on the CPU, with the CPU's kernels, on host memory: the host arena and
 * constants where they lie.  A device executor keeps its DAG order on the
 * device (CUDA runs a host command as a host function on its stream,
 * OpenCL behind a user event) and calls st_host_run when the command's
 * predecessors are done; transfer commands, which the DAG orders like any
 * other, have already brought the bytes it reads to the host (rule 4: a
 * host command waits for exactly the commands whose footprints its
 * ranges overlap, its DAG predecessors).
 */
#ifndef ST_EXEC_HOST_H
#define ST_EXEC_HOST_H

#include "runtime/dag.h"

typedef struct st_host st_host;

/* A pool of CPU threads for host commands (o->threads, or one per core). */
st_status st_host_create(const st_session_options *o, st_host **out);
void st_host_destroy(st_host *h);

/* Runs command c of d now, on the calling thread and h's pool.  On failure
 * the message (st_last_error) names the node. */
st_status st_host_run(st_host *h, const st_dag *d, int c);
/* The same with operand k's storage at base[k] in host memory where
 * base[k] is set (a device storage its executor has mapped), else at its
 * storage's host pointer. */
st_status st_host_run_at(st_host *h, const st_dag *d, int c, void *const *base);

#endif
