/*
 * cuda_exec.c — runs a hazard DAG on CUDA streams.
 *
 * Each command is assigned a stream: it continues the stream of a
 * predecessor whose command was the last one on that stream (a chain stays
 * on one stream and needs no event), otherwise it starts on the stream
 * that has been idle longest.  Every edge between two streams becomes an
 * event recorded after the producer and waited on before the consumer, so
 * independent branches run concurrently and nothing else orders commands
 * (the DAG is the only source of ordering, as on the CPU).
 *
 * Repeated runs of one plan replay a CUDA graph: the first run of a plan
 * runs directly (kernels make their cuDNN descriptors and choose
 * algorithms then), the second is captured across all streams (fork and
 * join through events) and instantiated, and later runs launch the graph.
 * A new input shape is a new plan, so it is captured anew.
 *
 * A mixed plan's host commands (plan/place.c) run as host functions on
 * their stream (cudaLaunchHostFunc): the stream order and the events
 * around them are the DAG's, as for any command, and a captured graph
 * keeps them as host nodes.  The function runs the CPU kernel on the
 * host arena (pinned, cuda.c) through runtime/host.h; a failure is recorded
 * and reported by the next wait.  Transfers between the device and the
 * host arena are cudaMemcpyAsync on the stream (st_cuda_transfer).
 *
 * A profiled session (st_session_options.profile) times every command
 * with a pair of CUDA events recorded around its launch on its stream, and
 * a host command with the host clock in its host function.  A captured
 * graph cannot be timed node by node, so a profiled session never captures
 * or replays one: every run is enqueued directly, which costs the launch
 * overhead a graph saves.  Event times are read once the run is complete
 * (exec_collect), relative to an event recorded before the run's first
 * command, and moved to the host clock with one offset per run
 * (runtime/profile.h).
 *
 * A while loop whose body is one device-only plan (session/loop.c) can run
 * as one graph: a conditional WHILE node whose body graph is the body's
 * DAG, captured like any run, between the copies that carry each
 * iteration's results into the next one's inputs and a kernel that sets
 * the node's condition (exec_loop, k_loop.cu).  The host then waits once
 * for the whole loop instead of once per iteration.  STRATA_CUDA_COND=0
 * (or STRATA_CUDA_GRAPHS=0, or profiling) leaves loops to the host.
 *
 * The walk over the DAG (its order, the cancel and deadline check before
 * each command, the first failure, a host command's run) is the shared
 * driver's (runtime/drive.h); this file keeps the stream assignment, the
 * enqueue and host-node callbacks, graph capture and replay, and waits.
 *
 * Host access (rule 4): commands that touch the bytes of a graph input or
 * output record a host-visible event (an external event record, so it is
 * recorded on graph replay too); st_tensor_read waits on the events of
 * exactly the commands overlapping its range.
 */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/cuda_ctx.h"
#include "backends/cuda/cuda_internal.h"
#include "core/fault.h"
#include "core/status.h"
#include "runtime/dag.h"
#include "runtime/host.h"
#include "runtime/profile.h"
#include "runtime/runctl.h"
#include "runtime/schedule.h"
#include "runtime/drive.h"

#define ST_CUDA_STREAMS 4

struct cuda_exec;

/* What a host command's host function needs. */
typedef struct host_call {
    struct cuda_exec *e;
    const st_dag *dag;
    int c;
} host_call;

typedef struct dag_state {
    const st_dag *dag;
    host_call *calls;            /* per command; used by host commands */
    int *stream_of;
    unsigned char *cross;        /* has a successor on another stream */
    unsigned char *host;         /* touches bytes the host can read or write */
    st_kernel_fn *fn;            /* each command's kernel, resolved once */
    cudaEvent_t *dep;            /* per command, for cross-stream edges */
    cudaEvent_t *done;           /* per command with host[c], for host waits */
    st_cuda_slot *slots;
    cudaGraphExec_t graph;
    int runs;
    /* a while loop on this body (exec_loop): its graph, and what it was
     * built for (the addresses it copies between) */
    cudaGraphExec_t loop_graph;
    uintptr_t *loop_sig;
    int loop_nsig;
    char *loop_refused;          /* why the graph for loop_sig could not be built */
    /* profiled sessions: events around each command, and one before the
     * run's first command that the others are measured from */
    cudaEvent_t *t_start, *t_end, t_base;
    unsigned char *t_rec;        /* the command's pair was recorded in the latest run */
} dag_state;

typedef struct cuda_exec {
    st_exec base;
    st_cuda_device *cb;
    int n_streams;
    cudaStream_t streams[ST_CUDA_STREAMS];
    cudnnHandle_t dnn[ST_CUDA_STREAMS];
    void *workspace[ST_CUDA_STREAMS];
    cublasLtHandle_t lt;
    cudaEvent_t fork, join[ST_CUDA_STREAMS], run_done;
    cudaEvent_t uploads;      /* the transfer stream's work before a run */
    cudaEvent_t t_sync;       /* profiling: the clock offset's marker (exec_collect) */
    st_host *host;               /* CPU threads for host commands */
    pthread_mutex_t hmu;         /* host_err: written by host functions */
    st_status host_err;
    char host_msg[1024];
    dag_state *states;
    int n_states, cap_states;
    dag_state *cur;
    int *error_word;             /* mapped pinned memory: a kernel's data error */
    int *error_word_dev;
    bool use_graphs, tf32;
    bool use_cond;               /* while loops as conditional graphs (STRATA_CUDA_COND) */
    st_cuda_loop_ctl *loop_ctl;  /* device: a loop's state (k_loop.cu) */
    st_cuda_loop_ctl *loop_host; /* pinned: what is written there and read back */
    int *loop_stop, *loop_stop_dev; /* mapped pinned: the host asks a loop to stop */
    void *loop_scratch;          /* device: carried values in transit, when they overlap */
    size_t loop_scratch_bytes;
    st_drive drive;              /* runtime/drive.h: the schedule, the run's cancel and
                                    deadline, its first failure */
} cuda_exec;

static void timing_free(dag_state *st)
{
    for (int c = 0; st->t_start && st->t_end && c < st->dag->n_cmds; c++) {
        if (st->t_start[c]) cudaEventDestroy(st->t_start[c]);
        if (st->t_end[c]) cudaEventDestroy(st->t_end[c]);
    }
    if (st->t_base) cudaEventDestroy(st->t_base);
    free(st->t_start);
    free(st->t_end);
    free(st->t_rec);
    st->t_start = st->t_end = NULL;
    st->t_base = NULL;
    st->t_rec = NULL;
}

static void state_free(dag_state *st)
{
    if (!st->dag) return;
    for (int c = 0; c < st->dag->n_cmds; c++) {
        if (st->dep && st->dep[c]) cudaEventDestroy(st->dep[c]);
        if (st->done && st->done[c]) cudaEventDestroy(st->done[c]);
        if (st->slots && st->slots[c].release) st->slots[c].release(st->slots[c].data);
    }
    timing_free(st);
    if (st->graph) cudaGraphExecDestroy(st->graph);
    if (st->loop_graph) cudaGraphExecDestroy(st->loop_graph);
    free(st->loop_sig);
    free(st->loop_refused);
    free(st->stream_of);
    free(st->calls);
    free(st->fn);
    free(st->cross);
    free(st->host);
    free(st->dep);
    free(st->done);
    free(st->slots);
    memset(st, 0, sizeof *st);
}

static st_status state_new(cuda_exec *e, const st_dag *d, dag_state **out)
{
    if (e->n_states == e->cap_states) {
        int cap = e->cap_states ? e->cap_states * 2 : 8;
        dag_state *s = realloc(e->states, (size_t)cap * sizeof *s);
        if (!s) return st_error(ST_ERR_NOMEM, "out of memory in the CUDA executor");
        memset(s + e->cap_states, 0, (size_t)(cap - e->cap_states) * sizeof *s);
        e->states = s;
        e->cap_states = cap;
    }
    dag_state *st = &e->states[e->n_states];
    int n = d->n_cmds > 0 ? d->n_cmds : 1;
    st->dag = d;
    st->stream_of = calloc((size_t)n, sizeof *st->stream_of);
    st->cross = calloc((size_t)n, 1);
    st->host = calloc((size_t)n, 1);
    st->dep = calloc((size_t)n, sizeof *st->dep);
    st->done = calloc((size_t)n, sizeof *st->done);
    st->slots = calloc((size_t)n, sizeof *st->slots);
    st->fn = calloc((size_t)n, sizeof *st->fn);
    st->calls = calloc((size_t)n, sizeof *st->calls);
    if (!st->stream_of || !st->cross || !st->host || !st->dep || !st->done || !st->slots || !st->fn || !st->calls) {
        state_free(st);
        return st_error(ST_ERR_NOMEM, "out of memory in the CUDA executor");
    }
    /* streams: continue a predecessor's chain, else the longest-idle stream */
    int last_on[ST_CUDA_STREAMS];
    for (int s = 0; s < e->n_streams; s++) last_on[s] = -1 - s;
    for (int c = 0; c < d->n_cmds; c++) {
        const st_cmd *cmd = &d->cmds[c];
        int pick = -1;
        if (e->drive.sched.random) {
            pick = st_sched_below(&e->drive.sched, e->n_streams);
        } else {
            for (int k = 0; k < cmd->n_pred && pick < 0; k++) {
                int p = d->preds[cmd->pred_first + k];
                if (last_on[st->stream_of[p]] == p) pick = st->stream_of[p];
            }
            if (pick < 0) {
                pick = 0;
                for (int s = 1; s < e->n_streams; s++)
                    if (last_on[s] < last_on[pick]) pick = s;
            }
        }
        st->stream_of[c] = pick;
        last_on[pick] = c;
    }
    /* each command's kernel, chosen at plan time; a transfer's is ours */
    for (int c = 0; c < d->n_cmds; c++) {
        st->fn[c] = d->cmds[c].run ? d->cmds[c].run : st_cuda_transfer;
        st->calls[c] = (host_call){e, d, c};
    }
    /* the bytes of graph inputs and outputs are the only ones the host
     * can reach (st_tensor_read/write), so only their users need events */
    for (int c = 0; c < d->n_cmds; c++) st->host[c] = st_dag_touches_host(d, c);
    st_status r = ST_OK;
    for (int c = 0; c < d->n_cmds && r == ST_OK; c++) {
        const st_cmd *cmd = &d->cmds[c];
        for (int k = 0; k < cmd->n_pred; k++) {
            int p = d->preds[cmd->pred_first + k];
            if (st->stream_of[p] != st->stream_of[c]) st->cross[p] = 1;
        }
    }
    for (int c = 0; c < d->n_cmds && r == ST_OK; c++) {
        if (st->cross[c]) r = st_cuda_check(cudaEventCreateWithFlags(&st->dep[c], cudaEventDisableTiming), "cudaEventCreate");
        if (r == ST_OK && st->host[c])
            r = st_cuda_check(cudaEventCreateWithFlags(&st->done[c], cudaEventDisableTiming), "cudaEventCreate");
    }
    if (r != ST_OK) {
        state_free(st);
        return r;
    }
    e->n_states++;
    *out = st;
    return ST_OK;
}

/* A host command, on the stream's host-function thread.  It makes no CUDA
 * call (the CPU kernels make none). */
static void CUDART_CB host_fn(void *arg)
{
    host_call *h = arg;
    /* the run's cancel and deadline, the CPU kernel, its profile mark */
    st_status r = st_drive_host(h->e->host, &h->e->drive.run, h->e->base.prof, h->dag, h->c);
    if (r == ST_OK) return;
    pthread_mutex_lock(&h->e->hmu);
    if (h->e->host_err == ST_OK) {
        h->e->host_err = r;
        snprintf(h->e->host_msg, sizeof h->e->host_msg, "%s", st_last_error());
    }
    pthread_mutex_unlock(&h->e->hmu);
}

/* A mixed plan's transfer: the bytes of the source view's extent, to the
 * same layout on the other side (pinned host memory and device memory
 * share the unified address space, so cudaMemcpyDefault finds the way). */
st_status st_cuda_transfer(const st_kctx *k)
{
    const st_view *src = &k->views[0], *dst = &k->views[1];
    int64_t lo, hi;
    st_view_extent(src, &lo, &hi);
    if (hi <= lo) return ST_OK;
    int64_t dlo = dst->offset - (src->offset - lo);
    const char *sp = (const char *)(src->storage->dev ? src->storage->dev : src->storage->host) + lo;
    char *dp = (char *)(dst->storage->dev ? dst->storage->dev : dst->storage->host) + dlo;
    const st_cuda_ctx *ctx = k->dev;
    return st_cuda_check(cudaMemcpyAsync(dp, sp, (size_t)(hi - lo), cudaMemcpyDefault, (cudaStream_t)ctx->stream), "transfer");
}

/* A profiled session's timing events for st (made on its first run). */
static st_status timing_events(dag_state *st)
{
    if (st->t_start) return ST_OK;
    int n = st->dag->n_cmds > 0 ? st->dag->n_cmds : 1;
    st->t_start = calloc((size_t)n, sizeof *st->t_start);
    st->t_end = calloc((size_t)n, sizeof *st->t_end);
    st->t_rec = calloc((size_t)n, 1);
    st_status r = !st->t_start || !st->t_end || !st->t_rec ? st_error(ST_ERR_NOMEM, "out of memory in the CUDA executor")
                  : st_cuda_check(cudaEventCreate(&st->t_base), "cudaEventCreate");
    for (int c = 0; c < st->dag->n_cmds && r == ST_OK; c++) {
        if (st->dag->cmds[c].device == ST_DEV_HOST) continue; /* timed on the host */
        r = st_cuda_check(cudaEventCreate(&st->t_start[c]), "cudaEventCreate");
        if (r == ST_OK) r = st_cuda_check(cudaEventCreate(&st->t_end[c]), "cudaEventCreate");
    }
    if (r != ST_OK) timing_free(st); /* all or nothing: enqueue trusts t_start */
    return r;
}

/* What the driver's callbacks work on (runtime/drive.h). */
typedef struct cuda_walk {
    cuda_exec *e;
    dag_state *st;
    bool capturing, cond_body, timed;
} cuda_walk;

/* Command c's stream waits for its predecessors on other streams. */
static int wait_preds(const cuda_walk *w, int c)
{
    const st_dag *d = w->st->dag;
    const st_cmd *cmd = &d->cmds[c];
    int s = w->st->stream_of[c];
    for (int k = 0; k < cmd->n_pred; k++) {
        int p = d->preds[cmd->pred_first + k];
        if (w->st->stream_of[p] != s) cudaStreamWaitEvent(w->e->streams[s], w->st->dep[p], 0);
    }
    return s;
}

/* After command c on stream s: the event its successors on other streams
 * wait for, and the host-visible one (not inside a conditional body). */
static void record_after(const cuda_walk *w, int c, int s)
{
    if (w->st->cross[c]) cudaEventRecord(w->st->dep[c], w->e->streams[s]);
    if (w->st->host[c] && !w->cond_body)
        cudaEventRecordWithFlags(w->st->done[c], w->e->streams[s], w->capturing ? cudaEventRecordExternal : cudaEventRecordDefault);
}

/* The driver's host-node callback: a host function on c's stream. */
static st_status walk_host(void *arg, int c)
{
    cuda_walk *w = arg;
    int s = wait_preds(w, c);
    ST_TRY(st_cuda_check(cudaLaunchHostFunc(w->e->streams[s], host_fn, &w->st->calls[c]), "cudaLaunchHostFunc"));
    record_after(w, c, s);
    return ST_OK;
}

/* The driver's enqueue callback: c's kernel (or transfer) on its stream. */
static st_status walk_enqueue(void *arg, int c)
{
    cuda_walk *w = arg;
    cuda_exec *e = w->e;
    dag_state *st = w->st;
    const st_cmd *cmd = &st->dag->cmds[c];
    int s = wait_preds(w, c);
    st_operand ops_buf[64];
    int nops = cmd->n_in + cmd->n_out;
    st_operand *ops = nops <= 64 ? ops_buf : malloc((size_t)nops * sizeof *ops);
    if (!ops) return st_error(ST_ERR_NOMEM, "out of memory");
    /* device memory, or a transfer's pinned host side */
    for (int k = 0; k < nops; k++) {
        const st_storage *sv = cmd->views[k].storage;
        ops[k] = st_operand_of(&cmd->views[k], sv ? (sv->dev ? sv->dev : sv->host) : NULL);
    }
    st_cuda_ctx ctx = {e->streams[s], e->lt, e->dnn[s], e->workspace[s], ST_CUDA_WORKSPACE, &st->slots[c], w->capturing,
                       e->tf32, e->cb->sm_count, e->error_word_dev, c};
    st_kctx k = {cmd->gnode, cmd->state, cmd->n_in, cmd->n_out, ops, ops + cmd->n_in, cmd->skip, NULL, cmd->views, &ctx, cmd->priv};
    if (w->timed) cudaEventRecord(st->t_start[c], e->streams[s]);
    st_status r;
    if (st_fault_hit(ST_FAULT_LAUNCH, cmd->gnode->name, 0)) { /* a test's: the launch is refused */
        st_cuda_fault_launch(e->streams[s]);
        r = ST_OK;
    } else {
        r = st->fn[c](&k);
    }
    if (w->timed && r == ST_OK) {
        cudaEventRecord(st->t_end[c], e->streams[s]);
        st->t_rec[c] = 1;
    }
    r = st_drive_kernel_status(r);
    if (ops != ops_buf) free(ops);
    /* while capturing too: a refused launch invalidates the capture,
     * and the next library call would report that instead of the launch */
    if (r == ST_OK) r = st_cuda_check(cudaGetLastError(), "kernel launch");
    if (r != ST_OK) return r;
    record_after(w, c, s);
    return ST_OK;
}

static const st_drive_ops cuda_drive_ops = {walk_enqueue, walk_host};

/* Enqueues every command (directly, or into a capture) through the shared
 * driver, in the schedule's order: a random schedule enqueues in a random
 * topological order too (a command's predecessors are always enqueued,
 * and their events recorded, before it).  cond_body: the capture is a
 * conditional node's body, which may hold no event record nodes, so the
 * host-visible events are left out (the loop's caller waits for the whole
 * graph instead).  A failure is the driver's (e->drive.err). */
static void enqueue(cuda_exec *e, dag_state *st, bool capturing, bool cond_body)
{
    const st_dag *d = st->dag;
    /* profiling: never inside a capture (exec_submit captures none then) */
    bool timed = e->base.prof && st->t_start && !capturing;
    if (timed) {
        memset(st->t_rec, 0, (size_t)d->n_cmds);
        cudaEventRecord(st->t_base, e->streams[0]); /* before the fork: before every command */
    }
    if (capturing || e->n_streams > 1) {
        /* other streams start after whatever stream 0 has before the run */
        cudaEventRecord(e->fork, e->streams[0]);
        for (int s = 1; s < e->n_streams; s++) cudaStreamWaitEvent(e->streams[s], e->fork, 0);
    }
    st_status r = st_drive_order(&e->drive, d);
    if (r != ST_OK) st_drive_fail(&e->drive, r, NULL);
    /* a cancelled run, or one past its deadline, queues nothing more
     * (not while capturing: a graph is every command, cancelled or not) */
    cuda_walk w = {e, st, capturing, cond_body, timed};
    if (r == ST_OK) st_drive_walk(&e->drive, 0, d->n_cmds, !capturing, &cuda_drive_ops, &w, NULL);
    if (capturing || e->n_streams > 1)
        for (int s = 1; s < e->n_streams; s++) {
            cudaEventRecord(e->join[s], e->streams[s]);
            cudaStreamWaitEvent(e->streams[0], e->join[s], 0);
        }
}

static st_status exec_submit(st_exec *base, const st_dag *d)
{
    cuda_exec *e = (cuda_exec *)base;
    cudaSetDevice(e->cb->device);
    e->drive.err = ST_OK;
    e->drive.errmsg[0] = 0;
    pthread_mutex_lock(&e->hmu);
    e->host_err = ST_OK;
    pthread_mutex_unlock(&e->hmu);
    dag_state *st = NULL;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) st = &e->states[i];
    if (!st) ST_TRY(state_new(e, d, &st));
    e->cur = st;
    e->drive.run = st_run_current(base->ctl);
    bool timed = e->base.prof != NULL;
    if (timed) ST_TRY(timing_events(st));
    /* the runtime's last error is per thread and outlives the call that
     * set it: one a library call on this thread already handled (a failed
     * allocation it retried smaller, say) would be blamed on this run's
     * first launch */
    cudaGetLastError();
    *e->error_word = 0; /* the previous run is done: nothing writes it now */
    /* uploads are asynchronous on the device's transfer stream (cuda.c):
     * the run starts after every one queued so far (inputs, constants) */
    ST_TRY(st_cuda_check(cudaEventRecord(e->uploads, (cudaStream_t)e->cb->copy_stream), "cudaEventRecord"));
    ST_TRY(st_cuda_check(cudaStreamWaitEvent(e->streams[0], e->uploads, 0), "cudaStreamWaitEvent"));
    if (st->graph && !timed) {
        ST_TRY(st_cuda_check(cudaGraphLaunch(st->graph, e->streams[0]), "cudaGraphLaunch"));
    } else if (e->use_graphs && st->runs >= 1 && !timed) {
        cudaGraph_t g = NULL;
        st_cuda_capture_lock();
        st_status r = st_cuda_check(cudaStreamBeginCapture(e->streams[0], cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
        if (r != ST_OK) {
            st_cuda_capture_unlock();
            return r;
        }
        enqueue(e, st, true, false);
        r = st_cuda_check(cudaStreamEndCapture(e->streams[0], &g), "cudaStreamEndCapture");
        st_cuda_capture_unlock();
        if (e->drive.err != ST_OK || r != ST_OK) {
            /* an invalidated capture leaves its error as the thread's last
             * one; clear it so the next run starts clean */
            if (g) cudaGraphDestroy(g);
            cudaGetLastError();
            if (e->drive.err == ST_OK) return r;
            st_error(e->drive.err, "%s", e->drive.errmsg);
            return e->drive.err;
        }
        if (r == ST_OK) r = st_cuda_check(cudaGraphInstantiate(&st->graph, g, 0), "cudaGraphInstantiate");
        if (g) cudaGraphDestroy(g);
        if (r == ST_OK) r = st_cuda_check(cudaGraphLaunch(st->graph, e->streams[0]), "cudaGraphLaunch");
        if (r != ST_OK) return r;
    } else {
        enqueue(e, st, false, false);
        if (e->drive.err != ST_OK) {
            /* leave nothing half-enqueued running */
            for (int i = 0; i < e->n_streams; i++) cudaStreamSynchronize(e->streams[i]);
            cudaGetLastError();
            st_error(e->drive.err, "%s", e->drive.errmsg);
            return e->drive.err;
        }
    }
    st->runs++;
    return st_cuda_check(cudaEventRecord(e->run_done, e->streams[0]), "cudaEventRecord");
}

static st_status exec_wait(st_exec *base, const int *cmds, int n)
{
    cuda_exec *e = (cuda_exec *)base;
    dag_state *st = e->cur;
    if (!st) return ST_OK;
    cudaSetDevice(e->cb->device);
    st_status r = ST_OK;
    bool all = n < 0;
    for (int i = 0; i < n && r == ST_OK && !all; i++) {
        int c = cmds[i];
        if (st->host[c]) r = st_cuda_check(cudaEventSynchronize(st->done[c]), "waiting for a command");
        else all = true;
    }
    if (all && r == ST_OK) r = st_cuda_check(cudaEventSynchronize(e->run_done), "waiting for the run");
    if (r == ST_OK && e->drive.err != ST_OK) r = st_error(e->drive.err, "%s", e->drive.errmsg);
    if (r == ST_OK) {
        pthread_mutex_lock(&e->hmu);
        if (e->host_err != ST_OK) r = st_error(e->host_err, "%s", e->host_msg);
        pthread_mutex_unlock(&e->hmu);
    }
    int bad = *(volatile int *)e->error_word;
    if (r == ST_OK && bad > 0 && bad <= st->dag->n_cmds) {
        const st_cmd *cmd = &st->dag->cmds[bad - 1];
        r = st_error(ST_ERR_SHAPE, "node '%s' (%s): an index is out of range (found on the device)", cmd->gnode->name,
                     cmd->op->name);
    }
    return r;
}

/* The device times of d's last run (complete) into run, on the host
 * clock.  Each command's events are measured from the run's base event;
 * the base is placed on the host clock through a marker recorded on the
 * idle stream between two host clock reads (runtime/profile.h). */
static st_status exec_collect(st_exec *base, const st_dag *d, st_prof_run *run)
{
    cuda_exec *e = (cuda_exec *)base;
    dag_state *st = NULL;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) st = &e->states[i];
    if (!st || !st->t_start) return ST_OK;
    cudaSetDevice(e->cb->device);
    if (!e->t_sync) ST_TRY(st_cuda_check(cudaEventCreate(&e->t_sync), "cudaEventCreate"));
    /* the marker's time lies between the host clock reads around its
     * record and synchronize; the tightest of a few tries is kept */
    int64_t base_ns = 0, width = -1;
    for (int k = 0; k < 4 && (width < 0 || width > 20000); k++) {
        int64_t h0 = st_prof_now();
        ST_TRY(st_cuda_check(cudaEventRecord(e->t_sync, e->streams[0]), "cudaEventRecord"));
        ST_TRY(st_cuda_check(cudaEventSynchronize(e->t_sync), "cudaEventSynchronize"));
        int64_t h1 = st_prof_now();
        float to_sync = 0;
        ST_TRY(st_cuda_check(cudaEventElapsedTime(&to_sync, st->t_base, e->t_sync), "cudaEventElapsedTime"));
        if (width < 0 || h1 - h0 < width) {
            width = h1 - h0;
            base_ns = h0 + width / 2 - (int64_t)((double)to_sync * 1e6);
        }
    }
    /* cudaEventElapsedTime resolves about half a microsecond */
    run->sync_error_ns = width / 2 + 1000;
    for (int c = 0; c < d->n_cmds; c++) {
        if (!st->t_rec[c]) continue;
        float a = 0, b = 0;
        ST_TRY(st_cuda_check(cudaEventElapsedTime(&a, st->t_base, st->t_start[c]), "cudaEventElapsedTime"));
        ST_TRY(st_cuda_check(cudaEventElapsedTime(&b, st->t_base, st->t_end[c]), "cudaEventElapsedTime"));
        int s = st->stream_of[c];
        st_prof_mark(run, c, base_ns + (int64_t)((double)a * 1e6), base_ns + (int64_t)((double)b * 1e6),
                     ST_PROF_LANE(d->cmds[c].run ? ST_LANE_STREAM : ST_LANE_TRANSFER, s));
    }
    return ST_OK;
}

/* Waits for this executor's own streams: not cudaDeviceSynchronize, which
 * would wait for (and, mid-capture, break) other sessions' work too. */
static void sync_streams(cuda_exec *e)
{
    for (int s = 0; s < e->n_streams; s++)
        if (e->streams[s]) cudaStreamSynchronize(e->streams[s]);
}

static void exec_forget(st_exec *base, const st_dag *d)
{
    cuda_exec *e = (cuda_exec *)base;
    cudaSetDevice(e->cb->device);
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) {
            sync_streams(e);
            if (e->cur == &e->states[i]) e->cur = NULL;
            st_cuda_exclusive_lock(); /* the kernels' caches cudaFree */
            state_free(&e->states[i]);
            st_cuda_exclusive_unlock();
            e->states[i] = e->states[--e->n_states];
            memset(&e->states[e->n_states], 0, sizeof e->states[0]);
            if (e->cur == &e->states[e->n_states]) e->cur = &e->states[i];
            return;
        }
}

/* exec_destroy with the exclusive lock held (st_cuda_exec_create's
 * failure path holds it already). */
static void destroy_locked(cuda_exec *e)
{
    sync_streams(e);
    for (int i = 0; i < e->n_states; i++) state_free(&e->states[i]);
    free(e->states);
    for (int s = 0; s < e->n_streams; s++) {
        if (e->dnn[s] && e->cb->n_dnn_pool < (int)(sizeof e->cb->dnn_pool / sizeof e->cb->dnn_pool[0]))
            e->cb->dnn_pool[e->cb->n_dnn_pool++] = e->dnn[s]; /* reused by the next executor */
        else if (e->dnn[s])
            cudnnDestroy(e->dnn[s]);
        if (e->workspace[s]) {
            cudaFree(e->workspace[s]);
            st_memory_note(ST_BACKEND_CUDA, -(int64_t)ST_CUDA_WORKSPACE);
        }
        if (e->join[s]) cudaEventDestroy(e->join[s]);
        if (e->streams[s]) cudaStreamDestroy(e->streams[s]);
    }
    if (e->fork) cudaEventDestroy(e->fork);
    if (e->run_done) cudaEventDestroy(e->run_done);
    if (e->uploads) cudaEventDestroy(e->uploads);
    if (e->t_sync) cudaEventDestroy(e->t_sync);
    if (e->lt) cublasLtDestroy(e->lt);
    if (e->error_word) cudaFreeHost(e->error_word);
    if (e->loop_ctl) cudaFree(e->loop_ctl);
    if (e->loop_host) cudaFreeHost(e->loop_host);
    if (e->loop_stop) cudaFreeHost(e->loop_stop);
    if (e->loop_scratch) {
        cudaFree(e->loop_scratch);
        st_memory_note(ST_BACKEND_CUDA, -(int64_t)e->loop_scratch_bytes);
    }
    st_host_destroy(e->host);
    pthread_mutex_destroy(&e->hmu);
    st_drive_free(&e->drive);
    free(e);
}

static void exec_destroy(st_exec *base)
{
    cuda_exec *e = (cuda_exec *)base;
    cudaSetDevice(e->cb->device);
    st_cuda_exclusive_lock();
    destroy_locked(e);
    st_cuda_exclusive_unlock();
}

/* Streams with work not done (CUDA cannot count the commands on them). */
static int exec_pending(st_exec *base)
{
    cuda_exec *e = (cuda_exec *)base;
    cudaSetDevice(e->cb->device);
    int n = 0;
    for (int s = 0; s < e->n_streams; s++) n += cudaStreamQuery(e->streams[s]) == cudaErrorNotReady;
    return n;
}

/* ST_ERR_UNSUPPORTED: exec_loop cannot take this loop, for reason why. */
static st_status no_loop(const st_exec_loop *l, const char *why)
{
    return st_error(ST_ERR_UNSUPPORTED, "Loop '%s' stays on the host: %s", l->name, why);
}

static char *view_addr(const st_view *v) { return (char *)v->storage->dev + v->offset; }
static size_t view_bytes(const st_view *v) { return (size_t)st_view_numel(v) * st_dtype_size(v->dtype); }

/* The copies at the start of an iteration, enqueued on stream.  When a
 * source overlaps another copy's destination (a carried value passed on
 * unchanged is a view of its input's slot), every source first goes to
 * scratch, so that no copy reads what another one already overwrote. */
static void loop_copies(cudaStream_t stream, const st_exec_loop *l, char *scratch)
{
    char *at = scratch;
    for (int k = 0; k < l->n_copy; k++) {
        const char *src = view_addr(&l->from[k]);
        char *dst = scratch ? at : view_addr(&l->to[k]);
        size_t n = view_bytes(&l->from[k]);
        if (src != dst && n) cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream);
        at += (n + 255) & ~(size_t)255;
    }
    at = scratch;
    for (int k = 0; scratch && k < l->n_copy; k++) {
        size_t n = view_bytes(&l->to[k]);
        if (n) cudaMemcpyAsync(view_addr(&l->to[k]), at, n, cudaMemcpyDeviceToDevice, stream);
        at += (n + 255) & ~(size_t)255;
    }
}

/* Builds the loop's graph: one conditional WHILE node whose body is the
 * copies, st_cuda_loop_begin, the body's DAG (captured as for a replayed
 * run, across the streams) and st_cuda_loop_end. */
static st_status loop_build(cuda_exec *e, dag_state *st, const st_exec_loop *l, char *scratch, cudaGraphExec_t *out)
{
    cudaGraph_t g = NULL, body = NULL;
    cudaGraphConditionalHandle h;
    cudaGraphNode_t node;
    char why[400];
    const char *step = "cudaGraphCreate";
    cudaError_t ce = cudaGraphCreate(&g, 0);
    /* the condition starts true at each launch: the host launches the loop
     * only when the next iteration is to run */
    if (ce == cudaSuccess) {
        step = "cudaGraphConditionalHandleCreate";
        ce = cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault);
    }
    struct cudaGraphNodeParams cp;
    memset(&cp, 0, sizeof cp);
    if (ce == cudaSuccess) {
        cp.type = cudaGraphNodeTypeConditional;
        cp.conditional.handle = h;
        cp.conditional.type = cudaGraphCondTypeWhile;
        cp.conditional.size = 1;
        step = "cudaGraphAddNode (a conditional WHILE node)";
        ce = cudaGraphAddNode(&node, g, NULL, NULL, 0, &cp);
    }
    /* captures hold the process-wide capture lock shared (cuda_ctx.h) */
    bool locked = ce == cudaSuccess;
    if (locked) st_cuda_capture_lock();
    if (ce == cudaSuccess) {
        body = cp.conditional.phGraph_out[0];
        step = "cudaStreamBeginCaptureToGraph";
        ce = cudaStreamBeginCaptureToGraph(e->streams[0], body, NULL, NULL, 0, cudaStreamCaptureModeThreadLocal);
    }
    if (ce == cudaSuccess) {
        cudaGraph_t captured = NULL;
        const st_view *iter = l->iter;
        loop_copies(e->streams[0], l, scratch);
        int le = st_cuda_loop_begin(e->streams[0], e->loop_ctl, iter ? view_addr(iter) : NULL,
                                    iter ? (int)st_dtype_size(iter->dtype) : 0);
        e->drive.err = ST_OK;
        if (le == cudaSuccess) enqueue(e, st, true, true);
        if (le == cudaSuccess && e->drive.err == ST_OK)
            le = st_cuda_loop_end(e->streams[0], (unsigned long long)h, e->loop_ctl, view_addr(l->cond), e->loop_stop_dev);
        step = "cudaStreamEndCapture";
        ce = cudaStreamEndCapture(e->streams[0], &captured);
        st_cuda_capture_unlock();
        locked = false;
        if (ce == cudaSuccess && le != cudaSuccess) {
            ce = (cudaError_t)le;
            step = "a loop control kernel's launch";
        }
        if (ce == cudaSuccess && e->drive.err != ST_OK) {
            snprintf(why, sizeof why, "capturing its body into a conditional node failed (%s)", e->drive.errmsg);
            e->drive.err = ST_OK;
            cudaGetLastError();
            cudaGraphDestroy(g);
            return no_loop(l, why);
        }
    }
    if (locked) st_cuda_capture_unlock();
    if (ce == cudaSuccess) {
        step = "cudaGraphInstantiate";
        ce = cudaGraphInstantiate(out, g, 0);
    }
    if (g) cudaGraphDestroy(g);
    if (ce == cudaSuccess) return ST_OK;
    cudaGetLastError(); /* the failure is not the next call's */
    snprintf(why, sizeof why, "%s failed (%s), so its body cannot run in a conditional graph", step,
             cudaGetErrorString(ce));
    return no_loop(l, why);
}

static st_status exec_loop(st_exec *base, const st_dag *d, st_exec_loop *l)
{
    cuda_exec *e = (cuda_exec *)base;
    if (!e->use_cond) return no_loop(l, "STRATA_CUDA_COND=0");
    if (!e->use_graphs) return no_loop(l, "STRATA_CUDA_GRAPHS=0");
    if (e->base.prof) return no_loop(l, "a profiled session times each command, which a graph cannot");
    dag_state *st = NULL;
    for (int i = 0; i < e->n_states; i++)
        if (e->states[i].dag == d) st = &e->states[i];
    if (!st || st->runs < 1) return no_loop(l, "its body has not run directly yet (kernels set up on a first run)");
    for (int c = 0; c < d->n_cmds; c++)
        if (d->cmds[c].device == ST_DEV_HOST || !d->cmds[c].run)
            return no_loop(l, "its body runs commands on the host (a mixed plan), which a conditional graph cannot hold");
    if (!l->cond->storage->dev || (l->iter && !l->iter->storage->dev)) return no_loop(l, "a value is not in device memory");
    for (int k = 0; k < l->n_copy; k++)
        if (!l->from[k].storage->dev || !l->to[k].storage->dev || view_bytes(&l->from[k]) != view_bytes(&l->to[k]))
            return no_loop(l, "a carried value is not in device memory, or changes size");
    cudaSetDevice(e->cb->device);
    /* scratch for staged copies (a source overlaps another copy's destination) */
    size_t need = 0;
    for (int k = 0; k < l->n_copy; k++) need += (view_bytes(&l->from[k]) + 255) & ~(size_t)255;
    bool staged = l->staged;
    /* the runtime's last error is per thread: not this loop's */
    cudaGetLastError();
    /* allocations and frees break another thread's capture: exclusively */
    st_status r = ST_OK;
    if (!e->loop_ctl || (staged && need > e->loop_scratch_bytes)) {
        sync_streams(e); /* a cached loop graph may use the old scratch: it is rebuilt below */
        st_cuda_exclusive_lock();
        if (!e->loop_ctl) {
            r = st_cuda_check(cudaMalloc((void **)&e->loop_ctl, sizeof *e->loop_ctl), "cudaMalloc (loop state)");
            if (r == ST_OK)
                r = st_cuda_check(cudaHostAlloc((void **)&e->loop_host, sizeof *e->loop_host, cudaHostAllocDefault),
                                  "cudaHostAlloc (loop state)");
            if (r == ST_OK)
                r = st_cuda_check(cudaHostAlloc((void **)&e->loop_stop, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
            if (r == ST_OK)
                r = st_cuda_check(cudaHostGetDevicePointer((void **)&e->loop_stop_dev, e->loop_stop, 0),
                                  "cudaHostGetDevicePointer");
        }
        if (r == ST_OK && staged && need > e->loop_scratch_bytes) {
            if (e->loop_scratch) {
                cudaFree(e->loop_scratch);
                st_memory_note(ST_BACKEND_CUDA, -(int64_t)e->loop_scratch_bytes);
            }
            e->loop_scratch = NULL;
            e->loop_scratch_bytes = 0;
            r = st_cuda_check(cudaMalloc(&e->loop_scratch, need), "cudaMalloc (loop scratch)");
            if (r == ST_OK) {
                e->loop_scratch_bytes = need;
                st_memory_note(ST_BACKEND_CUDA, (int64_t)need);
            }
        }
        st_cuda_exclusive_unlock();
        if (r != ST_OK) {
            cudaGetLastError();
            return r;
        }
    }
    char *scratch = staged ? e->loop_scratch : NULL;
    /* what the graph was built for: rebuilt when an address moved */
    int nsig = 5 + 3 * l->n_copy;
    uintptr_t *sig = calloc((size_t)nsig, sizeof *sig);
    if (!sig) return st_error(ST_ERR_NOMEM, "out of memory in the CUDA executor");
    sig[0] = (uintptr_t)l->n_copy;
    sig[1] = (uintptr_t)scratch;
    sig[2] = l->iter ? (uintptr_t)view_addr(l->iter) : 0;
    sig[3] = l->iter ? st_dtype_size(l->iter->dtype) : 0;
    sig[4] = (uintptr_t)view_addr(l->cond);
    for (int k = 0; k < l->n_copy; k++) {
        sig[5 + 3 * k] = (uintptr_t)view_addr(&l->from[k]);
        sig[6 + 3 * k] = (uintptr_t)view_addr(&l->to[k]);
        sig[7 + 3 * k] = view_bytes(&l->from[k]);
    }
    bool same = st->loop_sig && st->loop_nsig == nsig && memcmp(st->loop_sig, sig, (size_t)nsig * sizeof *sig) == 0;
    if (same && st->loop_refused) { /* refused before: not captured again on every run */
        free(sig);
        return st_error(ST_ERR_UNSUPPORTED, "%s", st->loop_refused);
    }
    if (!same) {
        if (st->loop_graph) {
            st_cuda_exclusive_lock();
            cudaGraphExecDestroy(st->loop_graph);
            st_cuda_exclusive_unlock();
        }
        st->loop_graph = NULL;
        free(st->loop_refused);
        st->loop_refused = NULL;
        free(st->loop_sig);
        st->loop_sig = sig;
        st->loop_nsig = nsig;
        r = loop_build(e, st, l, scratch, &st->loop_graph);
        if (r != ST_OK) {
            st->loop_graph = NULL;
            st->loop_refused = strdup(st_last_error());
            return r;
        }
    } else {
        free(sig);
    }
    /* run it: the state in, the graph, the state out, then one wait */
    e->cur = st;
    e->drive.run = st_run_current(base->ctl);
    e->drive.err = ST_OK;
    *e->error_word = 0;
    *(volatile int *)e->loop_stop = 0;
    *e->loop_host = (st_cuda_loop_ctl){l->next, l->end, l->max, 0};
    cudaStream_t s0 = e->streams[0];
    ST_TRY(st_cuda_check(cudaEventRecord(e->uploads, (cudaStream_t)e->cb->copy_stream), "cudaEventRecord"));
    ST_TRY(st_cuda_check(cudaStreamWaitEvent(s0, e->uploads, 0), "cudaStreamWaitEvent"));
    ST_TRY(st_cuda_check(cudaMemcpyAsync(e->loop_ctl, e->loop_host, sizeof *e->loop_host, cudaMemcpyHostToDevice, s0),
                         "cudaMemcpyAsync (loop state)"));
    cudaError_t le = cudaGraphLaunch(st->loop_graph, s0);
    if (le != cudaSuccess) { /* refused at launch: nothing of the loop ran, the host takes it */
        cudaGetLastError();
        cudaStreamSynchronize(s0);
        char why[300];
        snprintf(why, sizeof why, "cudaGraphLaunch refused its conditional graph (%s)", cudaGetErrorString(le));
        r = no_loop(l, why);
        st_cuda_exclusive_lock();
        cudaGraphExecDestroy(st->loop_graph);
        st_cuda_exclusive_unlock();
        st->loop_graph = NULL;
        free(st->loop_refused);
        st->loop_refused = strdup(st_last_error());
        return r;
    }
    ST_TRY(st_cuda_check(cudaMemcpyAsync(e->loop_host, e->loop_ctl, sizeof *e->loop_host, cudaMemcpyDeviceToHost, s0),
                         "cudaMemcpyAsync (loop state)"));
    ST_TRY(st_cuda_check(cudaEventRecord(e->run_done, s0), "cudaEventRecord"));
    /* the one wait: a cancel or the deadline asks the device to stop
     * after the iteration it is in (the stop word) */
    char where[200];
    snprintf(where, sizeof where, "in Loop '%.120s' on the device", l->name);
    st_status stop = ST_OK;
    char stop_msg[ST_ERROR_MAX] = "";
    cudaError_t q;
    for (int spins = 0; (q = cudaEventQuery(e->run_done)) == cudaErrorNotReady; spins++) {
        if (stop == ST_OK && (stop = st_run_check_at(&e->drive.run, where)) != ST_OK) {
            *(volatile int *)e->loop_stop = 1;
            /* kept: st_error below would format the thread's message
             * buffer into itself, which printed an empty message */
            snprintf(stop_msg, sizeof stop_msg, "%s", st_last_error());
        }
        if (spins < 1000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
    ST_TRY(st_cuda_check(q, "waiting for the loop"));
    l->ran = e->loop_host->next;
    l->how = "on the device in one CUDA graph (a conditional WHILE node)";
    l->over = e->loop_host->over != 0;
    int bad = *(volatile int *)e->error_word;
    if (bad > 0 && bad <= d->n_cmds) {
        const st_cmd *cmd = &d->cmds[bad - 1];
        return st_error(ST_ERR_SHAPE, "node '%s' (%s): an index is out of range (found on the device)", cmd->gnode->name,
                        cmd->op->name);
    }
    if (stop != ST_OK) return st_error(stop, "%s", stop_msg);
    return ST_OK;
}

static const st_exec_vt cuda_exec_vt = {exec_submit, exec_wait, exec_destroy, exec_forget, exec_pending, exec_collect,
                                        exec_loop};

st_status st_cuda_exec_create(st_backend *b, const st_session_options *o, st_exec **out)
{
    st_cuda_device *cbk = (st_cuda_device *)b;
    cuda_exec *e = calloc(1, sizeof *e);
    if (!e) return st_error(ST_ERR_NOMEM, "out of memory creating the CUDA executor");
    e->base.vt = &cuda_exec_vt;
    e->base.backend = b;
    e->cb = cbk;
    pthread_mutex_init(&e->hmu, NULL);
    e->n_streams = ST_CUDA_STREAMS;
    st_drive_init(&e->drive, o);
    const char *g = getenv("STRATA_CUDA_GRAPHS"), *tf = getenv("STRATA_CUDA_TF32"), *cc = getenv("STRATA_CUDA_COND");
    e->use_graphs = !(g && strcmp(g, "0") == 0);
    e->use_cond = !(cc && strcmp(cc, "0") == 0);
    e->tf32 = tf && strcmp(tf, "1") == 0;
    st_status r = st_cuda_check(cudaSetDevice(cbk->device), "cudaSetDevice");
    st_cuda_exclusive_lock();
    for (int s = 0; s < e->n_streams && r == ST_OK; s++) {
        r = st_cuda_check(cudaStreamCreateWithFlags(&e->streams[s], cudaStreamNonBlocking), "cudaStreamCreate");
        if (r == ST_OK) r = st_cuda_check(cudaEventCreateWithFlags(&e->join[s], cudaEventDisableTiming), "cudaEventCreate");
        if (r == ST_OK && cbk->n_dnn_pool > 0)
            e->dnn[s] = (cudnnHandle_t)cbk->dnn_pool[--cbk->n_dnn_pool];
        else if (r == ST_OK && cudnnCreate(&e->dnn[s]) != CUDNN_STATUS_SUCCESS)
            r = st_error(ST_ERR_BACKEND, "cudnn: cannot create a handle");
        if (r == ST_OK) cudnnSetStream(e->dnn[s], e->streams[s]);
        if (r == ST_OK) r = st_cuda_check(cudaMalloc(&e->workspace[s], ST_CUDA_WORKSPACE), "cudaMalloc (workspace)");
        if (r == ST_OK) st_memory_note(ST_BACKEND_CUDA, (int64_t)ST_CUDA_WORKSPACE); /* st_memory_usage counts it */
    }
    if (r == ST_OK) r = st_cuda_check(cudaEventCreateWithFlags(&e->fork, cudaEventDisableTiming), "cudaEventCreate");
    if (r == ST_OK) r = st_cuda_check(cudaEventCreateWithFlags(&e->run_done, cudaEventDisableTiming), "cudaEventCreate");
    if (r == ST_OK) r = st_cuda_check(cudaEventCreateWithFlags(&e->uploads, cudaEventDisableTiming), "cudaEventCreate");
    if (r == ST_OK && cublasLtCreate(&e->lt) != CUBLAS_STATUS_SUCCESS) r = st_error(ST_ERR_BACKEND, "cublasLt: cannot create a handle");
    if (r == ST_OK) r = st_cuda_check(cudaHostAlloc((void **)&e->error_word, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
    if (r == ST_OK) r = st_cuda_check(cudaHostGetDevicePointer((void **)&e->error_word_dev, e->error_word, 0), "cudaHostGetDevicePointer");
    if (r == ST_OK) r = st_host_create(o, &e->host);
    if (r != ST_OK) {
        destroy_locked(e);
        st_cuda_exclusive_unlock();
        cudaGetLastError();
        return r;
    }
    st_cuda_exclusive_unlock();
    *out = &e->base;
    return ST_OK;
}
