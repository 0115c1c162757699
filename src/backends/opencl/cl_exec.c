/*
 * cl_exec.c — runs a hazard DAG on one OpenCL command queue.
 *
 * Every command is enqueued with the events of its DAG predecessors as
 * its wait list and yields exactly one event: its kernel's, the last of a
 * chain when it enqueues a sequence, or a marker that joins independent
 * parts (or stands in for a command that had nothing to do).  The queue is
 * out-of-order where the device supports it, and then those wait lists are
 * the only ordering there is, as on the CPU executor: a missing DAG edge
 * would let the device run a conflicting pair in either order.
 *
 * The queue is in-order where the device has no out-of-order queues, and
 * where the driver is known to break with one: PoCL (3.1 and 5.0: a reference
 * count bug in its cache of compiled kernels aborts the process when two
 * launches of one kernel with different grid sizes run at once).
 * STRATA_OPENCL_OUT_OF_ORDER=1 forces the out-of-order queue anyway,
 * STRATA_OPENCL_IN_ORDER=1 forbids it everywhere.  On an in-order queue
 * the enqueue order is the execution order, so a random schedule (below)
 * really runs the commands in a random topological order.
 *
 * Commands are enqueued in program order, or with ST_SCHEDULE_RANDOM in a
 * seeded random topological order, behind a user event (the "gate") that
 * opens only when the whole DAG is enqueued: then the device sees every
 * command at once and an out-of-order queue may start any ready one.
 *
 * Host access (rule 4): wait() takes a list of commands and calls
 * clWaitForEvents on exactly their events; n < 0 waits for the whole run.
 * A command whose event ends in an error status is reported by the node's
 * name.  Per-command state that kernels cache (device tables) lives in
 * slots kept per DAG until the plan is forgotten.
 *
 * A mixed plan's host commands (plan/place.c) run on the executor's host
 * thread, in enqueue order: each stands in the DAG as a user event that
 * the thread completes once the command's predecessors' events are
 * complete and its CPU kernel has run (runtime/host.h), so device successors
 * wait on it like on any event.  The thread waits only for earlier
 * commands, which are flushed to the device first, so it never waits for
 * itself.  Transfers between the device and the host arena are read and
 * write commands on the queue (st_cl_transfer).  On a host-unified device
 * (opencl.c: PoCL, integrated GPUs) a plan has no transfers: its host
 * commands work on the device's storages in place, and the host thread
 * maps exactly the byte ranges each one touches around its CPU kernel
 * (host_mapped_run says how that is ordered).
 *
 * Cancelling (runtime/runctl.h): a device cannot take back commands it was
 * given, so on a CPU device (PoCL), where a run can take seconds, a long
 * DAG is queued in segments of ST_CL_SEGMENT commands, two ahead of the
 * device: the host thread queues segment k + 2 once segment k is done,
 * unless the run was cancelled or passed its deadline, and then the run
 * ends after at most the two segments already queued.  GPUs get the
 * whole DAG at once (a run takes milliseconds there, and refilling the
 * queue from a thread could leave the device idle between segments);
 * STRATA_OPENCL_WINDOW=N sets the segment length anywhere, 0 queues every
 * run at once.  A random schedule is queued whole (it opens its gate only
 * once every command is on the device).
 *
 * A profiled session (st_session_options.profile) gets a queue with
 * CL_QUEUE_PROFILING_ENABLE (only then: it costs the driver time stamps).
 * A command's slice runs from its first event's start (or the latest end
 * of the device commands it waits for, when later) to its last event's
 * end, read once the run is complete (exec_collect) and moved to
 * the host clock with one offset per run (runtime/profile.h); host commands
 * are timed with the host clock on the host thread.
 *
 * STRATA_OPENCL_PROFILE=1 turns on queue profiling and prints, after each
 * whole-run wait, the device time per op type (2: and per command), and
 * how host commands reached their bytes (ranges mapped in place, bytes
 * copied by transfers), a diagnostic on stderr.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/fault.h"
#include "core/status.h"
#include "runtime/dag.h"
#include "runtime/host.h"
#include "runtime/profile.h"
#include "runtime/runctl.h"
#include "runtime/schedule.h"
#include "runtime/drive.h"

typedef struct dag_state {
    const st_dag *dag;
    cl_event *events;          /* per command, of the latest run */
    cl_event *first;           /* profiled sessions: each command's first event */
    bool profiled;             /* the latest run's profile was printed */
    st_cl_slot *slots;
} dag_state;

/* The segment length on a CPU device (see the header). */
#define ST_CL_SEGMENT 16

/* A host command waiting for the host thread, or a segment to queue. */
typedef struct host_job {
    int feed;                  /* >= 0: queue segment feed of the run, not a host command */
    int c;
    const st_dag *dag;
    cl_event done;             /* the user event that stands for it */
    cl_uint n_wait;
    cl_event *wait;            /* its predecessors' events, retained */
    st_run_ref run;            /* a cancelled run runs no more host commands */
    dag_state *st;             /* a segment's: the run's state */
} host_job;

typedef struct cl_exec {
    st_exec base;
    st_cl_device *dev;
    /* the host thread and its queue of host commands (one run at a time) */
    st_host *host;
    int threads;               /* the session's, for the host pool */
    pthread_t host_thread;
    bool host_started, host_stop;
    pthread_mutex_t hmu;
    pthread_cond_t hcv;
    host_job *jobs;
    int n_jobs, next_job, cap_jobs;
    st_status host_err;
    char host_msg[1024];
    cl_command_queue queue;
    bool out_of_order;
    st_drive drive;              /* runtime/drive.h: the schedule, the run's cancel, its failure */
    bool timed;                  /* a profiled session: the queue keeps time stamps */
    int profile;                 /* STRATA_OPENCL_PROFILE: 1 per op type, 2 also per command */
    cl_kernel kernels[ST_CLK_COUNT];
    dag_state *states;
    int n_states, cap_states;
    dag_state *cur;
    cl_event *wait_buf;
    int cap_cmds, cap_wait;
    /* queuing in segments (see the header): window commands a segment, 0
     * for all at once; pos[c] is command c's place in the enqueue order,
     * fed how many of them are queued, feeding whether more may come
     * (both under hmu) */
    int window;
    int *pos;
    int fed;
    bool feeding;
    /* zero copy (see the header): the host thread's queue for mapping,
     * and what the latest run moved, for STRATA_OPENCL_PROFILE and tests */
    cl_command_queue mapq;
    _Atomic uint64_t n_mapped_cmds, n_maps, mapped_bytes, n_copies, copied_bytes;
} cl_exec;

/* ---- what kernels call (cl_internal.h) ---- */

void st_cl_release_mem(void *mem)
{
    if (mem) clReleaseMemObject((cl_mem)mem);
}

st_status st_cl_kernel(st_cl_ctx *c, st_clk id, cl_kernel *out)
{
    if (!c->kernels[id]) {
        cl_program p;
        ST_TRY(st_cl_program(c->dev, &p));
        cl_int err;
        c->kernels[id] = clCreateKernel(p, st_clk_names[id], &err);
        if (err != CL_SUCCESS) {
            c->kernels[id] = NULL;
            char what[96];
            snprintf(what, sizeof what, "clCreateKernel(%s)", st_clk_names[id]);
            return st_cl_check(err, what);
        }
    }
    *out = c->kernels[id];
    return ST_OK;
}

st_status st_cl_set_args(cl_kernel k, st_clk id, int n, const st_cl_arg *args)
{
    for (int i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].p);
        if (err != CL_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "clSetKernelArg(%s, %d)", st_clk_names[id], i);
            return st_cl_check(err, what);
        }
    }
    return ST_OK;
}

static st_status push_tail(st_cl_ctx *c, cl_event ev, bool chain)
{
    if (c->timed && !c->first) {
        c->first = ev;
        clRetainEvent(ev);
    }
    if (chain) {
        for (int i = 0; i < c->n_tails; i++) clReleaseEvent(c->tails[i]);
        c->n_tails = 0;
    }
    if (c->n_tails == c->cap_tails) {
        int cap = c->cap_tails ? c->cap_tails * 2 : 8;
        cl_event *t = realloc(c->tails, (size_t)cap * sizeof *t);
        if (!t) {
            clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
            return st_error(ST_ERR_NOMEM, "out of memory");
        }
        c->tails = t;
        c->cap_tails = cap;
    }
    c->tails[c->n_tails++] = ev;
    return ST_OK;
}

/* The wait list of the next enqueue: the command's earlier work when
 * chaining (it already waited for the predecessors), else the
 * predecessors. */
static void wait_list(const st_cl_ctx *c, bool chain, const cl_event **w, cl_uint *n)
{
    if (chain && c->n_tails) {
        *w = c->tails;
        *n = (cl_uint)c->n_tails;
    } else {
        *w = c->n_wait ? c->wait : NULL;
        *n = c->n_wait;
    }
}

/* A work-group of ST_CL_WG work-items for a launch that names none: a
 * fixed set of shapes, not whatever the driver picks per global size
 * (PoCL compiles, and caches, one binary per kernel and work-group shape,
 * and its cache of loaded binaries misbehaves past 128 of them). */
#define ST_CL_WG 64

static void pick_local(cl_uint dims, size_t *global, size_t *local)
{
    local[0] = ST_CL_WG;
    local[1] = local[2] = 1;
    if (dims >= 2) {
        size_t l0 = 1;
        while (l0 < ST_CL_WG && l0 < global[0]) l0 *= 2;
        local[0] = l0;
        local[1] = ST_CL_WG / l0;
    }
    for (cl_uint d = 0; d < dims; d++) global[d] = (global[d] + local[d] - 1) / local[d] * local[d];
}

st_status st_cl_run(st_cl_ctx *c, cl_kernel k, st_clk id, cl_uint dims, const size_t *global, const size_t *local,
                    bool chain)
{
    for (cl_uint d = 0; d < dims; d++)
        if (global[d] == 0) return ST_OK; /* nothing to do */
    size_t g[3] = {global[0], dims > 1 ? global[1] : 1, dims > 2 ? global[2] : 1}, l[3];
    if (!local) {
        pick_local(dims, g, l); /* the kernel ignores the work-items past its shape */
        local = l;
    }
    const cl_event *w;
    cl_uint nw;
    wait_list(c, chain, &w, &nw);
    cl_event ev = NULL;
    /* a test's injected failure is the enqueue's own answer */
    cl_int err = st_fault_hit(ST_FAULT_CL_RESOURCES, st_clk_names[id], 0)
                     ? CL_OUT_OF_RESOURCES
                     : clEnqueueNDRangeKernel(c->queue, k, dims, NULL, g, local, nw, w, &ev);
    if (err != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", st_clk_names[id]);
        return st_cl_check(err, what);
    }
    return push_tail(c, ev, chain);
}

st_status st_cl_dtype_ok(const st_cl_ctx *c, st_dtype dt, const char *what)
{
    if (dt == ST_F64 && !c->dev->fp64)
        return st_error(ST_ERR_UNSUPPORTED, "%s: float64 needs cl_khr_fp64, which '%s' lacks", what, c->dev->name);
    if (dt == ST_STRING || !st_dtype_valid(dt)) return st_error(ST_ERR_UNSUPPORTED, "%s: dtype %s", what, st_dtype_name(dt));
    return ST_OK;
}

/* ---- transfers (a mixed plan's copies, plan/transfer.c) ---- */

st_status st_cl_transfer(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_view *src = &k->views[0], *dst = &k->views[1];
    int64_t lo, hi;
    st_view_extent(src, &lo, &hi);
    if (hi <= lo) return ST_OK;
    int64_t dlo = dst->offset - (src->offset - lo);
    size_t n = (size_t)(hi - lo);
    const cl_event *w;
    cl_uint nw;
    wait_list(c, true, &w, &nw);
    cl_event ev = NULL;
    cl_int err;
    if (src->storage->dev && !dst->storage->dev)
        err = clEnqueueReadBuffer(c->queue, (cl_mem)src->storage->dev, CL_FALSE, (size_t)lo, n,
                                  (char *)dst->storage->host + dlo, nw, w, &ev);
    else if (!src->storage->dev && dst->storage->dev)
        err = clEnqueueWriteBuffer(c->queue, (cl_mem)dst->storage->dev, CL_FALSE, (size_t)dlo, n,
                                   (const char *)src->storage->host + lo, nw, w, &ev);
    else
        return st_error(ST_ERR_INTERNAL, "opencl: a transfer between two %s storages",
                        src->storage->dev ? "device" : "host");
    ST_TRY(st_cl_check(err, "transfer"));
    return push_tail(c, ev, true);
}

/* ---- the host thread ---- */

/* clWaitForEvents one event at a time: PoCL 3.1 can wait forever for
 * several events when one of them has failed (a device fault passed on to
 * its dependants), where a wait for that one alone returns
 * CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, as the standard says a
 * wait for several should. */
static cl_int wait_events(cl_uint n, const cl_event *ev)
{
    cl_int result = CL_SUCCESS;
    for (cl_uint i = 0; i < n; i++) {
        cl_int r = clWaitForEvents(1, &ev[i]);
        if (r != CL_SUCCESS && result == CL_SUCCESS) result = r;
    }
    return result;
}

/* What the driver's callbacks work on (runtime/drive.h). */
typedef struct cl_walk {
    cl_exec *e;
    dag_state *st;
    cl_event gate;             /* the random schedule's, or NULL */
} cl_walk;

static const st_drive_ops cl_drive_ops;
static st_status queue_feed(cl_exec *e, dag_state *st, int k);

/* Records the run's first failure seen on the host thread. */
static void host_fail(cl_exec *e, st_status r)
{
    pthread_mutex_lock(&e->hmu);
    if (e->host_err == ST_OK) {
        e->host_err = r;
        snprintf(e->host_msg, sizeof e->host_msg, "%s", st_last_error());
    }
    pthread_mutex_unlock(&e->hmu);
}

/* Queues segment job->feed once the segment two before it is done (the
 * job's wait list), unless the run has failed, was cancelled or passed
 * its deadline; then queues the job for the segment after it. */
static void feed(cl_exec *e, const host_job *job, bool failed)
{
    dag_state *st = job->st;
    const st_dag *d = st->dag;
    int lo = job->feed * e->window, hi = lo + e->window < d->n_cmds ? lo + e->window : d->n_cmds;
    st_status r = ST_OK;
    if (job->n_wait && wait_events(job->n_wait, job->wait) != CL_SUCCESS)
        r = st_error(ST_ERR_BACKEND, "opencl: the run stopped before node '%s' (%s): a command before it failed on the device",
                     d->cmds[e->drive.order[lo]].gnode->name, d->cmds[e->drive.order[lo]].op->name);
    for (cl_uint i = 0; i < job->n_wait; i++) clReleaseEvent(job->wait[i]);
    free(job->wait);
    if (r == ST_OK && failed) r = ST_ERR_BACKEND; /* reported already */
    if (r == ST_OK) r = st_run_check(&job->run, d->cmds[e->drive.order[lo]].gnode->name, d->cmds[e->drive.order[lo]].op->name);
    cl_walk w = {e, st, NULL};
    for (int i = lo; i < hi && r == ST_OK; i++) {
        r = st_drive_one(d, e->drive.order[i], &cl_drive_ops, &w);
        pthread_mutex_lock(&e->hmu);
        if (r == ST_OK) e->fed = i + 1;
        pthread_cond_broadcast(&e->hcv);
        pthread_mutex_unlock(&e->hmu);
    }
    if (r == ST_OK) r = st_cl_check(clFlush(e->queue), "clFlush");
    if (r == ST_OK && hi < d->n_cmds) r = queue_feed(e, st, job->feed + 1);
    if (r != ST_OK) {
        if (!failed) host_fail(e, r);
        pthread_mutex_lock(&e->hmu);
        e->feeding = false;
        pthread_cond_broadcast(&e->hcv);
        pthread_mutex_unlock(&e->hmu);
    } else if (hi == d->n_cmds) {
        pthread_mutex_lock(&e->hmu);
        e->feeding = false;
        pthread_cond_broadcast(&e->hcv);
        pthread_mutex_unlock(&e->hmu);
    }
}

/* ---- zero copy: a host command on mapped storages ---- */

/* One byte range of one storage that a host command maps: the union of
 * its operands' extents there that overlap. */
typedef struct map_range {
    st_storage *s;
    int64_t lo, hi;
    bool read;          /* an input lies in it */
    bool partial;       /* an output in it may leave bytes unwritten */
    void *ptr;
} map_range;

static int map_range_cmp(const void *a, const void *b)
{
    const map_range *x = a, *y = b;
    if (x->s != y->s) return (uintptr_t)x->s < (uintptr_t)y->s ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Runs host command job->c with its operands on device storages mapped
 * into host memory: a plan whose backend is host_mapped gives host nodes
 * the device's own bytes (plan.h's target.shared), so there are no
 * transfer commands to bring them over.  Each storage is mapped over
 * exactly the bytes the command's operands span (rule 4: what it
 * touches), an input's range for reading, an output's for writing: with
 * CL_MAP_WRITE_INVALIDATE_REGION only where outputs alone cover it and
 * each is packed (a kernel writes every element of a packed output, but
 * not the gaps of a strided one, nor a Concat's inputs already in place),
 * else CL_MAP_READ | CL_MAP_WRITE.  Overlapping operands (in place, a
 * Concat's placed inputs) share one mapping: OpenCL leaves overlapping
 * maps for writing undefined.
 *
 * Ordering: the host thread has waited for the command's DAG
 * predecessors' events (the writers of what it reads, the readers and
 * writers of what it overwrites), so the maps wait for nothing; they go
 * on a queue of their own, since the executor's in-order queue may hold
 * successors that wait for this command's user event, behind which a map
 * would deadlock.  The unmaps are complete (clFinish) before the user
 * event is, so a successor sees the bytes written.  Commands running
 * meanwhile touch other bytes of the same cl_mem, the assumption the
 * transfer queue's copies already make (opencl.c). */
static st_status host_mapped_run(cl_exec *e, const host_job *job)
{
    const st_cmd *cmd = &job->dag->cmds[job->c];
    int nops = cmd->n_in + cmd->n_out, n = 0;
    map_range rbuf[16];
    void *bbuf[32];
    map_range *rg = nops <= 16 ? rbuf : malloc((size_t)nops * sizeof *rg);
    void **base = nops <= 32 ? bbuf : malloc((size_t)nops * sizeof *base);
    if (!rg || !base) {
        if (rg != rbuf) free(rg);
        if (base != bbuf) free(base);
        return st_error(ST_ERR_NOMEM, "node '%s' (%s): out of memory mapping its operands", cmd->gnode->name, cmd->op->name);
    }
    bool skips = false;
    for (int k = 0; cmd->skip && k < cmd->n_in; k++) skips |= cmd->skip[k];
    for (int k = 0; k < nops; k++) {
        base[k] = NULL;
        const st_view *v = &cmd->views[k];
        if (!v->storage || !v->storage->dev || v->storage->host || v->rank < 0) continue;
        int64_t lo, hi;
        st_view_extent(v, &lo, &hi);
        if (hi <= lo) continue;
        bool out = k >= cmd->n_in;
        rg[n++] = (map_range){v->storage, lo, hi, !out, out && (skips || !st_view_is_contiguous(v)), NULL};
    }
    if (n == 0) {
        if (rg != rbuf) free(rg);
        if (base != bbuf) free(base);
        return st_drive_host(e->host, &job->run, e->base.prof, job->dag, job->c);
    }
    qsort(rg, (size_t)n, sizeof *rg, map_range_cmp);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && rg[m - 1].s == rg[i].s && rg[i].lo < rg[m - 1].hi) {
            map_range *u = &rg[m - 1];
            if (rg[i].hi > u->hi) u->hi = rg[i].hi;
            u->read |= rg[i].read;
            u->partial |= rg[i].partial;
        } else {
            rg[m++] = rg[i];
        }
    }
    st_status r = ST_OK;
    cl_int err = CL_SUCCESS;
    if (!e->mapq) {
        e->mapq = clCreateCommandQueue(e->dev->context, e->dev->device, 0, &err);
        if (err != CL_SUCCESS) e->mapq = NULL;
        r = st_cl_check(err, "clCreateCommandQueue (host command maps)");
    }
    int mapped = 0;
    uint64_t bytes = 0;
    for (; mapped < m && r == ST_OK; mapped++) {
        map_range *u = &rg[mapped];
        bool writes = u->partial || !u->read; /* an output lies in it */
        for (int k = cmd->n_in; k < nops && !writes; k++) {
            const st_view *v = &cmd->views[k];
            int64_t lo, hi;
            if (v->storage != u->s || v->rank < 0) continue;
            st_view_extent(v, &lo, &hi);
            writes = hi > lo && lo < u->hi && u->lo < hi;
        }
        cl_map_flags flags = !writes ? CL_MAP_READ
                             : !u->read && !u->partial ? CL_MAP_WRITE_INVALIDATE_REGION
                                                        : CL_MAP_READ | CL_MAP_WRITE;
        u->ptr = clEnqueueMapBuffer(e->mapq, (cl_mem)u->s->dev, CL_TRUE, flags, (size_t)u->lo, (size_t)(u->hi - u->lo), 0,
                                    NULL, NULL, &err);
        if (err != CL_SUCCESS) {
            r = st_error_prefix(st_cl_check(err, "clEnqueueMapBuffer"), "node '%s' (%s): mapping bytes [%lld, %lld) of '%s': ",
                                cmd->gnode->name, cmd->op->name, (long long)u->lo, (long long)u->hi, u->s->label);
            break;
        }
        bytes += (uint64_t)(u->hi - u->lo);
    }
    if (r == ST_OK) {
        for (int k = 0; k < nops; k++) {
            const st_view *v = &cmd->views[k];
            if (!v->storage || !v->storage->dev || v->storage->host || v->rank < 0) continue;
            int64_t lo, hi;
            st_view_extent(v, &lo, &hi);
            for (int i = 0; i < m && hi > lo; i++)
                if (rg[i].s == v->storage && rg[i].lo <= lo && hi <= rg[i].hi) {
                    /* the storage's byte 0 as the operand's base (st_operand_of adds the offset) */
                    base[k] = (char *)rg[i].ptr - rg[i].lo;
                    break;
                }
        }
        r = st_drive_host_at(e->host, &job->run, e->base.prof, job->dag, job->c, base);
    }
    for (int i = 0; i < mapped; i++) {
        cl_int u = clEnqueueUnmapMemObject(e->mapq, (cl_mem)rg[i].s->dev, rg[i].ptr, 0, NULL, NULL);
        if (u != CL_SUCCESS && r == ST_OK) r = st_cl_check(u, "clEnqueueUnmapMemObject");
    }
    if (e->mapq) {
        cl_int f = clFinish(e->mapq);
        if (f != CL_SUCCESS && r == ST_OK) r = st_cl_check(f, "clFinish (host command unmaps)");
    }
    atomic_fetch_add(&e->n_mapped_cmds, 1);
    atomic_fetch_add(&e->n_maps, (uint64_t)mapped);
    atomic_fetch_add(&e->mapped_bytes, bytes);
    if (rg != rbuf) free(rg);
    if (base != bbuf) free(base);
    return r;
}

static void *host_main(void *arg)
{
    cl_exec *e = arg;
    pthread_mutex_lock(&e->hmu);
    for (;;) {
        if (e->next_job == e->n_jobs) {
            if (e->host_stop) break;
            pthread_cond_wait(&e->hcv, &e->hmu);
            continue;
        }
        host_job job = e->jobs[e->next_job];
        bool failed = e->host_err != ST_OK;
        pthread_mutex_unlock(&e->hmu);
        if (job.feed >= 0) {
            feed(e, &job, failed);
            pthread_mutex_lock(&e->hmu);
            e->next_job++;
            pthread_cond_broadcast(&e->hcv);
            continue;
        }
        st_status r = ST_OK;
        if (job.n_wait && wait_events(job.n_wait, job.wait) != CL_SUCCESS)
            r = st_error(ST_ERR_BACKEND, "node '%s' (%s): a command it waits for failed on the device",
                         job.dag->cmds[job.c].gnode->name, job.dag->cmds[job.c].op->name);
        if (r == ST_OK && !failed) r = host_mapped_run(e, &job);
        /* the event completes and the job counts as done in one step
         * under the lock: a caller whose wait on the event returned, or
         * host_drain's, must not then find the job still pending
         * (exec_pending; a cancelled run's check).  No callback of ours
         * takes hmu, so setting the status under it cannot deadlock. */
        pthread_mutex_lock(&e->hmu);
        if (r != ST_OK && e->host_err == ST_OK) {
            e->host_err = r;
            snprintf(e->host_msg, sizeof e->host_msg, "%s", st_last_error());
        }
        clSetUserEventStatus(job.done, CL_COMPLETE);
        e->next_job++;
        pthread_cond_broadcast(&e->hcv);
        pthread_mutex_unlock(&e->hmu);
        clReleaseEvent(job.done);
        for (cl_uint i = 0; i < job.n_wait; i++) clReleaseEvent(job.wait[i]);
        free(job.wait);
        pthread_mutex_lock(&e->hmu);
    }
    pthread_mutex_unlock(&e->hmu);
    return NULL;
}

/* Waits until the host thread has run every host command queued. */
static void host_drain(cl_exec *e)
{
    if (!e->host_started) return;
    pthread_mutex_lock(&e->hmu);
    while (e->next_job < e->n_jobs) pthread_cond_wait(&e->hcv, &e->hmu);
    pthread_mutex_unlock(&e->hmu);
}

static st_status host_start(cl_exec *e)
{
    if (!e->host_started) {
        int err = pthread_create(&e->host_thread, NULL, host_main, e);
        if (err != 0)
            return st_error(err == EAGAIN ? ST_ERR_NOMEM : ST_ERR_BACKEND, "opencl: cannot start the host command thread: %s",
                            strerror(err));
        e->host_started = true;
    }
    return ST_OK;
}

/* Queues the job that queues segment k, behind segment k - 2's events. */
static st_status queue_feed(cl_exec *e, dag_state *st, int k)
{
    ST_TRY(host_start(e));
    host_job job = {k, -1, st->dag, NULL, 0, NULL, e->drive.run, st};
    int lo = (k - 2) * e->window, hi = lo + e->window;
    job.wait = malloc((size_t)e->window * sizeof *job.wait);
    if (!job.wait) return st_error(ST_ERR_NOMEM, "out of memory queuing a run in segments");
    for (int i = lo; i < hi; i++) {
        cl_event ev = st->events[e->drive.order[i]];
        if (!ev) continue;
        clRetainEvent(ev);
        job.wait[job.n_wait++] = ev;
    }
    pthread_mutex_lock(&e->hmu);
    e->jobs[e->n_jobs++] = job;
    pthread_cond_broadcast(&e->hcv);
    pthread_mutex_unlock(&e->hmu);
    return ST_OK;
}

/* Queues host command c behind the events in wait[0..nw); its event is a
 * user event the host thread completes. */
static st_status enqueue_host(cl_exec *e, dag_state *st, int c, const cl_event *wait, cl_uint nw)
{
    if (!e->host) ST_TRY(st_host_create(&(st_session_options){.threads = e->threads}, &e->host));
    ST_TRY(host_start(e));
    cl_int err;
    cl_event u = clCreateUserEvent(e->dev->context, &err);
    ST_TRY(st_cl_check(err, "clCreateUserEvent"));
    host_job job = {-1, c, st->dag, u, nw, NULL, e->drive.run, st};
    if (nw) {
        job.wait = malloc(nw * sizeof *job.wait);
        if (!job.wait) {
            clSetUserEventStatus(u, CL_COMPLETE);
            clReleaseEvent(u);
            return st_error(ST_ERR_NOMEM, "out of memory");
        }
        for (cl_uint i = 0; i < nw; i++) {
            job.wait[i] = wait[i];
            clRetainEvent(wait[i]);
        }
    }
    /* the predecessors must reach the device before the thread waits */
    clFlush(e->queue);
    clRetainEvent(u);
    st->events[c] = u;
    pthread_mutex_lock(&e->hmu);
    e->jobs[e->n_jobs++] = job;
    pthread_cond_broadcast(&e->hcv);
    pthread_mutex_unlock(&e->hmu);
    return ST_OK;
}

/* ---- per-DAG state ---- */

static void state_free(dag_state *st)
{
    if (!st->dag) return;
    for (int c = 0; c < st->dag->n_cmds; c++) {
        if (st->events && st->events[c]) clReleaseEvent(st->events[c]);
        if (st->first && st->first[c]) clReleaseEvent(st->first[c]);
        if (st->slots && st->slots[c].release) st->slots[c].release(st->slots[c].data);
    }
    free(st->events);
    free(st->first);
    free(st->slots);
    memset(st, 0, sizeof *st);
}

static st_status state_get(cl_exec *e, const st_dag *d, dag_state **out)
{
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) {
            *out = &e->states[i];
            return ST_OK;
        }
    if (e->n_states == e->cap_states) {
        int cap = e->cap_states ? e->cap_states * 2 : 8;
        dag_state *s = realloc(e->states, (size_t)cap * sizeof *s);
        if (!s) return st_error(ST_ERR_NOMEM, "out of memory in the OpenCL executor");
        memset(s + e->cap_states, 0, (size_t)(cap - e->cap_states) * sizeof *s);
        if (e->cur) e->cur = s + (e->cur - e->states);
        e->states = s;
        e->cap_states = cap;
    }
    dag_state *st = &e->states[e->n_states];
    int n = d->n_cmds > 0 ? d->n_cmds : 1;
    st->dag = d;
    st->events = calloc((size_t)n, sizeof *st->events);
    st->slots = calloc((size_t)n, sizeof *st->slots);
    if (e->timed) st->first = calloc((size_t)n, sizeof *st->first);
    if (!st->events || !st->slots || (e->timed && !st->first)) {
        state_free(st);
        return st_error(ST_ERR_NOMEM, "out of memory in the OpenCL executor");
    }
    e->n_states++;
    *out = st;
    return ST_OK;
}

static st_status reserve(cl_exec *e, int n_cmds, int n_wait)
{
    if (n_cmds > e->cap_cmds) {
        int *ps = realloc(e->pos, (size_t)n_cmds * sizeof *ps);
        if (ps) e->pos = ps;
        if (!ps) return st_error(ST_ERR_NOMEM, "out of memory starting a run");
        e->cap_cmds = n_cmds;
    }
    if (n_wait > e->cap_wait) {
        cl_event *w = realloc(e->wait_buf, (size_t)n_wait * sizeof *w);
        if (!w) return st_error(ST_ERR_NOMEM, "out of memory starting a run");
        e->wait_buf = w;
        e->cap_wait = n_wait;
    }
    return ST_OK;
}

/* Command c's wait list in e->wait_buf: its predecessors' events (and
 * the gate for a command without any); returns its length. */
static cl_uint gather_wait(const cl_walk *w, int c)
{
    const st_dag *d = w->st->dag;
    const st_cmd *cmd = &d->cmds[c];
    cl_uint nw = 0;
    for (int k = 0; k < cmd->n_pred; k++) w->e->wait_buf[nw++] = w->st->events[d->preds[cmd->pred_first + k]];
    if (w->gate && !cmd->n_pred) w->e->wait_buf[nw++] = w->gate;
    return nw;
}

/* The driver's host-node callback: host command c behind its wait list. */
static st_status walk_host(void *ctx, int c)
{
    cl_walk *w = ctx;
    cl_uint nw = gather_wait(w, c);
    return enqueue_host(w->e, w->st, c, w->e->wait_buf, nw);
}

/* The driver's enqueue callback: command c (a kernel or a transfer); its
 * event goes to st->events[c]. */
static st_status walk_enqueue(void *arg, int c)
{
    cl_walk *w = arg;
    cl_exec *e = w->e;
    dag_state *st = w->st;
    const st_cmd *cmd = &st->dag->cmds[c];
    cl_uint nw = gather_wait(w, c);
    int nops = cmd->n_in + cmd->n_out;
    st_operand ops_buf[32];
    st_operand *ops = nops <= 32 ? ops_buf : malloc((size_t)nops * sizeof *ops);
    if (!ops) return st_error(ST_ERR_NOMEM, "out of memory");
    /* kernels bind views by (cl_mem, offset); the operands carry shapes
     * only (data is the cl_mem, never dereferenced on the host) */
    for (int k = 0; k < nops; k++) ops[k] = st_operand_of(&cmd->views[k], NULL);
    for (int k = 0; k < nops; k++)
        if (cmd->views[k].storage && cmd->views[k].storage->dev) ops[k].data = cmd->views[k].storage->dev;
    st_cl_ctx ctx = {e->dev, e->queue, e->kernels, nw ? e->wait_buf : NULL, nw, NULL, 0, 0, &st->slots[c],
                     e->base.prof && st->first, NULL};
    st_kctx k = {cmd->gnode, cmd->state, cmd->n_in, cmd->n_out, ops, ops + cmd->n_in, cmd->skip, NULL, cmd->views, &ctx, cmd->priv};
    st_status r = st_drive_kernel_status((cmd->run ? cmd->run : st_cl_transfer)(&k));
    if (r == ST_OK && !cmd->run) {
        int64_t lo, hi;
        st_view_extent(&cmd->views[0], &lo, &hi);
        atomic_fetch_add(&e->n_copies, 1);
        atomic_fetch_add(&e->copied_bytes, hi > lo ? (uint64_t)(hi - lo) : 0);
    }
    if (ops != ops_buf) free(ops);
    cl_event ev = NULL;
    if (r == ST_OK) {
        if (ctx.n_tails == 1) {
            ev = ctx.tails[0];
            ctx.n_tails = 0;
        } else {
            /* nothing enqueued (an empty tensor), or independent parts: one
             * marker stands for the command */
            const cl_event *w = ctx.n_tails ? ctx.tails : (nw ? e->wait_buf : NULL);
            cl_uint n = ctx.n_tails ? (cl_uint)ctx.n_tails : nw;
            r = st_cl_check(clEnqueueMarkerWithWaitList(e->queue, n, w, &ev), "clEnqueueMarkerWithWaitList");
        }
    }
    for (int i = 0; i < ctx.n_tails; i++) clReleaseEvent(ctx.tails[i]);
    free(ctx.tails);
    st->events[c] = ev;
    if (ctx.timed) { /* a command that enqueued nothing is timed by its marker */
        if (!ctx.first && ev) clRetainEvent(ev);
        st->first[c] = ctx.first ? ctx.first : ev;
    }
    return r;
}

static const st_drive_ops cl_drive_ops = {walk_enqueue, walk_host};

static st_status exec_submit(st_exec *base, const st_dag *d)
{
    cl_exec *e = (cl_exec *)base;
    /* the run's failure cleared, its cancel and deadline, its order */
    ST_TRY(st_drive_start(&e->drive, d, base->ctl));
    dag_state *st = NULL;
    ST_TRY(state_get(e, d, &st));
    /* the previous run of this DAG is complete (the session waited) */
    for (int c = 0; c < d->n_cmds; c++) {
        if (st->events[c]) {
            clReleaseEvent(st->events[c]);
            st->events[c] = NULL;
        }
        if (st->first && st->first[c]) {
            clReleaseEvent(st->first[c]);
            st->first[c] = NULL;
        }
    }
    st->profiled = false;
    int max_wait = 1;
    for (int c = 0; c < d->n_cmds; c++)
        if (d->cmds[c].n_pred + 1 > max_wait) max_wait = d->cmds[c].n_pred + 1;
    ST_TRY(reserve(e, d->n_cmds > 0 ? d->n_cmds : 1, max_wait));
    /* the last run's host commands are done (the session waited) */
    pthread_mutex_lock(&e->hmu);
    /* a job per host command, and one per segment queued later */
    int need = d->n_cmds + (e->window ? d->n_cmds / e->window + 1 : 0);
    if (need > e->cap_jobs) {
        host_job *j = realloc(e->jobs, (size_t)need * sizeof *j);
        if (!j) {
            pthread_mutex_unlock(&e->hmu);
            return st_error(ST_ERR_NOMEM, "out of memory starting a run");
        }
        e->jobs = j;
        e->cap_jobs = need;
    }
    e->n_jobs = e->next_job = 0;
    e->host_err = ST_OK;
    atomic_store(&e->n_mapped_cmds, 0);
    atomic_store(&e->n_maps, 0);
    atomic_store(&e->mapped_bytes, 0);
    atomic_store(&e->n_copies, 0);
    atomic_store(&e->copied_bytes, 0);
    e->fed = 0;
    e->feeding = true;
    pthread_mutex_unlock(&e->hmu);
    e->cur = st;
    for (int i = 0; i < d->n_cmds; i++) e->pos[e->drive.order[i]] = i;
    /* the first two segments now, the rest from the host thread (a random
     * schedule's gate needs the whole DAG queued) */
    int now = e->window && !e->drive.sched.random && d->n_cmds > 2 * e->window ? 2 * e->window : d->n_cmds;
    cl_event gate = NULL;
    if (e->drive.sched.random) {
        cl_int err;
        gate = clCreateUserEvent(e->dev->context, &err);
        ST_TRY(st_cl_check(err, "clCreateUserEvent"));
    }
    /* the driver checks the run's cancel and deadline before each */
    cl_walk w = {e, st, gate};
    st_status r = st_drive_walk(&e->drive, 0, now, true, &cl_drive_ops, &w, NULL);
    pthread_mutex_lock(&e->hmu);
    e->fed = r == ST_OK ? now : 0;
    e->feeding = r == ST_OK && now < d->n_cmds;
    pthread_mutex_unlock(&e->hmu);
    /* the last thing this thread queues: from here the host thread does */
    if (r == ST_OK && now < d->n_cmds) {
        r = queue_feed(e, st, 2);
        if (r != ST_OK) {
            st_drive_fail(&e->drive, r, NULL);
            pthread_mutex_lock(&e->hmu);
            e->feeding = false;
            pthread_mutex_unlock(&e->hmu);
        }
    }
    if (gate) {
        clSetUserEventStatus(gate, CL_COMPLETE);
        clReleaseEvent(gate);
    }
    if (e->drive.err != ST_OK) {
        host_drain(e);
        clFinish(e->queue); /* leave nothing half-enqueued running */
        return st_drive_status(&e->drive);
    }
    return st_cl_check(clFlush(e->queue), "clFlush");
}

/* Device time per op type of the finished run, on stderr. */
static void print_profile(cl_exec *e, const dag_state *st, bool verbose)
{
    const st_dag *d = st->dag;
    const char *names[64];
    double ms[64];
    int count[64], n = 0;
    double total = 0;
    for (int c = 0; c < d->n_cmds; c++) {
        cl_ulong t0 = 0, t1 = 0;
        if (!st->events[c] || clGetEventProfilingInfo(st->events[c], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
            clGetEventProfilingInfo(st->events[c], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
            continue;
        double t = (double)(t1 - t0) * 1e-6;
        const char *name = d->cmds[c].op->name;
        if (verbose) fprintf(stderr, "  #%-4d %-20s %10.3f ms  %s\n", c, name, t, d->cmds[c].gnode->name);
        int i = 0;
        while (i < n && strcmp(names[i], name) != 0) i++;
        if (i == n && n < 64) {
            names[n] = name;
            ms[n] = 0;
            count[n++] = 0;
        }
        if (i < n) {
            ms[i] += t;
            count[i]++;
        }
        total += t;
    }
    fprintf(stderr, "opencl profile: %d commands, %.3f ms of device time (each command's last event)\n", d->n_cmds, total);
    for (int i = 0; i < n; i++) fprintf(stderr, "  %-20s %5d  %10.3f ms\n", names[i], count[i], ms[i]);
    /* how the host commands' bytes moved: tests read this line */
    fprintf(stderr, "opencl host data: %llu host commands mapped %llu ranges, %llu bytes (zero-copy); %llu transfers copied %llu bytes\n",
            (unsigned long long)atomic_load(&e->n_mapped_cmds), (unsigned long long)atomic_load(&e->n_maps),
            (unsigned long long)atomic_load(&e->mapped_bytes), (unsigned long long)atomic_load(&e->n_copies),
            (unsigned long long)atomic_load(&e->copied_bytes));
}

static st_status event_status(cl_exec *e, const dag_state *st, int c)
{
    cl_int s = CL_COMPLETE;
    if (!st->events[c]) return ST_OK;
    clGetEventInfo(st->events[c], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (s >= 0) return ST_OK;
    const st_cmd *cmd = &st->dag->cmds[c];
    (void)e;
    return st_error(ST_ERR_BACKEND, "node '%s' (%s): the device failed the command: %s (%d)", cmd->gnode->name, cmd->op->name,
                    st_cl_error_name(s), (int)s);
}

/* The failure to report once some command failed: the first failed one
 * in enqueue order, whose predecessors all succeeded.  Its successors
 * fail too on drivers that pass a failure on (PoCL marks them -1), and
 * naming one of them would hide the cause. */
static st_status root_failure(cl_exec *e, const dag_state *st, st_status found)
{
    for (int i = 0; i < st->dag->n_cmds; i++) {
        st_status r = event_status(e, st, e->drive.order[i]);
        if (r != ST_OK) return r;
    }
    return found;
}

static st_status exec_wait(st_exec *base, const int *cmds, int n)
{
    cl_exec *e = (cl_exec *)base;
    dag_state *st = e->cur;
    if (!st) return ST_OK;
    st_status r = ST_OK;
    cl_event *evs = n > 0 ? malloc((size_t)n * sizeof *evs) : NULL;
    if (n < 0 || (n > 0 && !evs)) { /* all of it (also when there is no memory for the list) */
        host_drain(e); /* the host thread queues no more after this */
        r = st_cl_check(clFinish(e->queue), "clFinish");
        for (int c = 0; c < st->dag->n_cmds && r == ST_OK; c++) r = event_status(e, st, c);
        if (r != ST_OK) r = root_failure(e, st, r);
        if (r == ST_OK && e->profile && !st->profiled) {
            st->profiled = true;
            print_profile(e, st, e->profile > 1);
        }
    } else if (n > 0) {
        /* commands of a run queued in segments may not be on the queue yet
         * (the host thread writes their events before it counts them fed) */
        int last = -1;
        for (int i = 0; i < n; i++)
            if (e->pos[cmds[i]] > last) last = e->pos[cmds[i]];
        pthread_mutex_lock(&e->hmu);
        while (e->feeding && e->fed <= last) pthread_cond_wait(&e->hcv, &e->hmu);
        bool missing = e->fed <= last; /* the run stopped before queuing them */
        pthread_mutex_unlock(&e->hmu);
        cl_uint m = 0;
        for (int i = 0; i < n; i++)
            if (st->events[cmds[i]]) evs[m++] = st->events[cmds[i]];
        cl_int err = wait_events(m, evs);
        for (int i = 0; i < n && r == ST_OK; i++) r = event_status(e, st, cmds[i]);
        if (r == ST_OK && err != CL_SUCCESS) r = st_cl_check(err, "clWaitForEvents");
        if (r != ST_OK || missing) {
            /* the run failed or stopped: what it queued must be done before
             * its waits report that (nothing of it stays pending), and then
             * every event is there to find the cause in */
            host_drain(e);
            clFinish(e->queue);
        }
        if (r != ST_OK) r = root_failure(e, st, r);
        if (r == ST_OK && missing && e->drive.err == ST_OK) {
            pthread_mutex_lock(&e->hmu);
            r = st_error(e->host_err != ST_OK ? e->host_err : ST_ERR_INTERNAL, "%s",
                         e->host_err != ST_OK ? e->host_msg : "opencl: the run stopped before queuing the commands waited for");
            pthread_mutex_unlock(&e->hmu);
        }
    }
    free(evs);
    if (r == ST_OK) r = st_drive_status(&e->drive);
    if (r == ST_OK) {
        pthread_mutex_lock(&e->hmu);
        if (e->host_err != ST_OK) r = st_error(e->host_err, "%s", e->host_msg);
        pthread_mutex_unlock(&e->hmu);
    }
    return r;
}

/* host clock - device clock, from markers on the idle queue: a marker's
 * end lies between the host clock read before its enqueue and the one
 * after clFinish, and its queued time (the same device time base, by the
 * spec) between the reads around the enqueue call, which is tighter where
 * the driver is consistent.  The tightest of a few tries is kept; *err is
 * half its width (runtime/profile.h). */
static st_status clock_offset(cl_exec *e, int64_t *offset, int64_t *err)
{
    int64_t best_lo = 0, best_hi = -1;
    for (int k = 0; k < 4 && (best_hi < best_lo || best_hi - best_lo > 20000); k++) {
        cl_event mark = NULL;
        cl_ulong q = 0, end = 0;
        int64_t h0 = st_prof_now();
        st_status r = st_cl_check(clEnqueueMarkerWithWaitList(e->queue, 0, NULL, &mark), "clEnqueueMarkerWithWaitList");
        int64_t h1 = st_prof_now();
        if (r == ST_OK) r = st_cl_check(clFinish(e->queue), "clFinish");
        int64_t h2 = st_prof_now();
        if (r == ST_OK) r = st_cl_check(clGetEventProfilingInfo(mark, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL),
                                        "clGetEventProfilingInfo");
        if (r == ST_OK && clGetEventProfilingInfo(mark, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL) != CL_SUCCESS) q = 0;
        if (mark) clReleaseEvent(mark);
        ST_TRY(r);
        int64_t lo = h0 - (int64_t)end, hi = h2 - (int64_t)end;
        int64_t qlo = h0 - (int64_t)q, qhi = h1 - (int64_t)q;
        if (q && qlo <= hi && lo <= qhi) { /* consistent: the intersection */
            lo = lo > qlo ? lo : qlo;
            hi = hi < qhi ? hi : qhi;
        }
        if (best_hi < best_lo || hi - lo < best_hi - best_lo) {
            best_lo = lo;
            best_hi = hi;
        }
    }
    *offset = best_lo + (best_hi - best_lo) / 2;
    *err = (best_hi - best_lo) / 2 + 1;
    return ST_OK;
}

/* The device times of d's last run (complete) into run, on the host
 * clock (clock_offset). */
static st_status exec_collect(st_exec *base, const st_dag *d, st_prof_run *run)
{
    cl_exec *e = (cl_exec *)base;
    dag_state *st = NULL;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) st = &e->states[i];
    if (!st || !st->first) return ST_OK;
    int64_t offset;
    ST_TRY(clock_offset(e, &offset, &run->sync_error_ns));
    cl_ulong *t0 = calloc((size_t)d->n_cmds + 1, sizeof *t0), *t1 = calloc((size_t)d->n_cmds + 1, sizeof *t1);
    if (!t0 || !t1) {
        free(t0);
        free(t1);
        return st_error(ST_ERR_NOMEM, "opencl: out of memory reading the profile of %d commands", d->n_cmds);
    }
    for (int c = 0; c < d->n_cmds; c++) {
        const st_cmd *cmd = &d->cmds[c];
        if (cmd->device == ST_DEV_HOST || !st->first[c] || !st->events[c]) continue; /* host: timed on the host */
        if (clGetEventProfilingInfo(st->first[c], CL_PROFILING_COMMAND_START, sizeof t0[c], &t0[c], NULL) != CL_SUCCESS ||
            clGetEventProfilingInfo(st->events[c], CL_PROFILING_COMMAND_END, sizeof t1[c], &t1[c], NULL) != CL_SUCCESS) {
            free(t0);
            free(t1);
            return st_error(ST_ERR_BACKEND, "opencl: node '%s' (%s): no profiling times for its events", cmd->gnode->name,
                            cmd->op->name);
        }
    }
    for (int c = 0; c < d->n_cmds; c++) {
        const st_cmd *cmd = &d->cmds[c];
        if (!t1[c]) continue;
        /* A command cannot start before the device commands it waits for
         * end.  A driver that stamps START when it takes a command from an
         * out-of-order queue, before its waits are met, would otherwise
         * count the wait as the command's time (suspected on NVIDIA's
         * OpenCL: single nodes of a 2 ms H200 run averaging 1.2-2.2 ms). */
        cl_ulong start = t0[c];
        for (int k = 0; k < cmd->n_pred; k++) {
            int pc = d->preds[cmd->pred_first + k];
            if (t1[pc] > start && t1[pc] <= t1[c]) start = t1[pc];
        }
        st_prof_mark(run, c, (int64_t)start + offset, (int64_t)t1[c] + offset,
                     ST_PROF_LANE(cmd->run ? ST_LANE_QUEUE : ST_LANE_TRANSFER, 0));
    }
    free(t0);
    free(t1);
    return ST_OK;
}

static void exec_forget(st_exec *base, const st_dag *d)
{
    cl_exec *e = (cl_exec *)base;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) {
            host_drain(e);
            clFinish(e->queue);
            if (e->cur == &e->states[i]) e->cur = NULL;
            state_free(&e->states[i]);
            if (i != e->n_states - 1) {
                e->states[i] = e->states[e->n_states - 1];
                if (e->cur == &e->states[e->n_states - 1]) e->cur = &e->states[i];
            }
            e->n_states--;
            memset(&e->states[e->n_states], 0, sizeof e->states[0]);
            return;
        }
}

static void exec_destroy(st_exec *base)
{
    cl_exec *e = (cl_exec *)base;
    host_drain(e);
    if (e->queue) clFinish(e->queue);
    if (e->host_started) {
        pthread_mutex_lock(&e->hmu);
        e->host_stop = true;
        pthread_cond_broadcast(&e->hcv);
        pthread_mutex_unlock(&e->hmu);
        pthread_join(e->host_thread, NULL);
    }
    st_host_destroy(e->host);
    if (e->mapq) clReleaseCommandQueue(e->mapq);
    free(e->jobs);
    pthread_mutex_destroy(&e->hmu);
    pthread_cond_destroy(&e->hcv);
    for (int i = 0; i < e->n_states; i++) state_free(&e->states[i]);
    free(e->states);
    for (int k = 0; k < ST_CLK_COUNT; k++)
        if (e->kernels[k]) clReleaseKernel(e->kernels[k]);
    if (e->queue) clReleaseCommandQueue(e->queue);
    st_drive_free(&e->drive);
    free(e->pos);
    free(e->wait_buf);
    free(e);
}

/* Commands whose events have not reached CL_COMPLETE (or an error), and
 * host commands the host thread has not finished. */
static int exec_pending(st_exec *base)
{
    cl_exec *e = (cl_exec *)base;
    int n = 0;
    for (int c = 0; e->cur && c < e->cur->dag->n_cmds; c++) {
        cl_int s = CL_COMPLETE;
        if (e->cur->events[c] &&
            clGetEventInfo(e->cur->events[c], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) == CL_SUCCESS && s > CL_COMPLETE)
            n++;
    }
    pthread_mutex_lock(&e->hmu);
    n += e->n_jobs - e->next_job;
    pthread_mutex_unlock(&e->hmu);
    return n;
}

static const st_exec_vt cl_exec_vt = {exec_submit, exec_wait, exec_destroy, exec_forget, exec_pending, exec_collect, NULL};

st_status st_cl_exec_create(st_backend *b, const st_session_options *o, st_exec **out)
{
    st_cl_device *d = (st_cl_device *)b;
    cl_program p;
    ST_TRY(st_cl_program(d, &p)); /* fail at session creation, not at the first run */
    cl_exec *e = calloc(1, sizeof *e);
    if (!e) return st_error(ST_ERR_NOMEM, "out of memory creating the OpenCL executor");
    e->base.vt = &cl_exec_vt;
    e->base.backend = b;
    e->dev = d;
    pthread_mutex_init(&e->hmu, NULL);
    pthread_cond_init(&e->hcv, NULL);
    e->threads = o->threads;
    st_drive_init(&e->drive, o);
    const char *win = getenv("STRATA_OPENCL_WINDOW");
    e->window = win && *win ? atoi(win) : d->is_gpu ? 0 : ST_CL_SEGMENT;
    if (e->window < 0) e->window = 0;
    const char *io = getenv("STRATA_OPENCL_IN_ORDER"), *ooo = getenv("STRATA_OPENCL_OUT_OF_ORDER"),
               *prof = getenv("STRATA_OPENCL_PROFILE");
    e->out_of_order = d->out_of_order && !(io && strcmp(io, "1") == 0) &&
                      (!d->ooo_unsafe || (ooo && strcmp(ooo, "1") == 0));
    e->profile = prof ? atoi(prof) : 0;
    e->timed = o->profile != NULL;
    cl_command_queue_properties qp = e->profile || e->timed ? CL_QUEUE_PROFILING_ENABLE : 0;
    cl_int err;
    e->queue = clCreateCommandQueue(d->context, d->device, qp | (e->out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0), &err);
    if (err != CL_SUCCESS && e->out_of_order) { /* advertised but refused: in order still runs the DAG */
        e->out_of_order = false;
        e->queue = clCreateCommandQueue(d->context, d->device, qp, &err);
    }
    if (err != CL_SUCCESS) {
        e->queue = NULL;
        exec_destroy(&e->base);
        return st_cl_check(err, "clCreateCommandQueue");
    }
    /* Every kernel now, not at its first use: a driver may finish
     * compiling or loading a kernel when it is created (NVIDIA's took
     * milliseconds), and made inside a run between two launches of one
     * command, that time counted as the command's device time in a
     * profile (2.2 ms averaged over 6 runs for one f16 conv on an H200). */
    st_cl_ctx kc = {.dev = d, .kernels = e->kernels};
    for (int id = 0; id < ST_CLK_COUNT; id++) {
        cl_kernel kern;
        st_status s = st_cl_kernel(&kc, (st_clk)id, &kern);
        if (s != ST_OK) {
            exec_destroy(&e->base);
            return s;
        }
    }
    *out = &e->base;
    return ST_OK;
}
