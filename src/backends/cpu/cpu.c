/*
 * cpu.c — the CPU backend: host storages and an executor that runs the
 * hazard DAG on a thread pool.
 *
 * The executor runs the hazard DAG through the shared driver's readiness
 * (runtime/ready.h: the schedule, late completion, the sanitizer, the
 * run's cancel and deadline): workers take ready commands and run them
 * concurrently with each other and with the loop chunks of running
 * kernels.  What is the CPU's own is the pool glue and the kernel call.
 *
 * A profiled session (runtime/profile.h) hands each run a buffer; the worker
 * that runs a command reads the host clock before and after it and
 * records both with its own number as the lane.  The pool reports a
 * worker's time on another command's loop chunks too (st_pool_observer),
 * which is recorded as help for the command that worker is running.
 *
 * STRATA_CPU_PROFILE=1 in the environment makes the executor time every
 * command and print, when it is destroyed, the total per op type (wall
 * time of the kernel calls; run with --inter-op off so they do not
 * overlap); STRATA_CPU_PROFILE=nodes, the total per node.  bench/RESULTS.md's per-op breakdowns come from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/registry.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "runtime/pool.h"
#include "core/status.h"
#include "core/bigmem.h"
#include "runtime/dag.h"
#include "runtime/profile.h"
#include "runtime/runctl.h"
#include "runtime/schedule.h"
#include "runtime/ready.h"

#define ST_CPU_ALIGN 64

/* ---- storages ---- */

static void cpu_storage_free(st_backend *b, st_storage *s)
{
    (void)b;
    st_storage_index_remove(s);
    if (!s->borrowed) st_big_free(s->host);
    free(s);
}

static st_status cpu_storage_new(st_backend *b, void *host, uint64_t size, bool borrowed, const char *label,
                                 st_storage **out)
{
    st_storage *s = calloc(1, sizeof *s);
    if (!s) return st_error(ST_ERR_NOMEM, "out of memory allocating storage '%s'", label);
    atomic_init(&s->refs, 1);
    s->backend = b;
    s->free_fn = cpu_storage_free;
    s->space = b->kind;
    s->size = size;
    s->host = host;
    s->addr = (uintptr_t)host;
    s->borrowed = borrowed;
    snprintf(s->label, sizeof s->label, "%s", label);
    st_storage_index_add(s);
    *out = s;
    return ST_OK;
}

static st_status cpu_storage_alloc(st_backend *b, uint64_t size, const char *label, st_storage **out)
{
    /* a session's storage lives as long as the session: a large one is
     * mapped on its own, so destroying the session gives its pages back
     * (core/bigmem.h says why not malloc) */
    uint64_t rounded = (size + ST_CPU_ALIGN - 1) / ST_CPU_ALIGN * ST_CPU_ALIGN;
    void *host = rounded <= SIZE_MAX - ST_CPU_ALIGN ? st_big_alloc(rounded ? (size_t)rounded : ST_CPU_ALIGN, label) : NULL;
    if (!host) return st_error(ST_ERR_NOMEM, "cannot allocate %llu bytes for %s", (unsigned long long)size, label);
    st_status s = cpu_storage_new(b, host, size, false, label, out);
    if (s != ST_OK) st_big_free(host);
    return s;
}

static st_status cpu_storage_wrap(st_backend *b, void *host, uint64_t size, const char *label, st_storage **out)
{
    return cpu_storage_new(b, host, size, true, label, out);
}

static st_status cpu_write(st_backend *b, st_storage *s, uint64_t off, const void *src, uint64_t n)
{
    (void)b;
    if (off > s->size || n > s->size - off)
        return st_error(ST_ERR_INTERNAL, "write of %llu bytes at %llu outside storage '%s' (%llu bytes)",
                        (unsigned long long)n, (unsigned long long)off, s->label, (unsigned long long)s->size);
    if (n) memcpy((char *)s->host + off, src, n);
    return ST_OK;
}

static st_status cpu_read(st_backend *b, st_storage *s, uint64_t off, void *dst, uint64_t n)
{
    (void)b;
    if (off > s->size || n > s->size - off)
        return st_error(ST_ERR_INTERNAL, "read of %llu bytes at %llu outside storage '%s' (%llu bytes)",
                        (unsigned long long)n, (unsigned long long)off, s->label, (unsigned long long)s->size);
    if (n) memcpy(dst, (char *)s->host + off, n);
    return ST_OK;
}

static st_status cpu_fill(st_backend *b, st_storage *s, uint64_t off, int byte, uint64_t n)
{
    (void)b;
    if (off > s->size || n > s->size - off) return st_error(ST_ERR_INTERNAL, "fill outside storage '%s'", s->label);
    if (n) memset((char *)s->host + off, byte, n);
    return ST_OK;
}

/* ---- the executor ---- */

typedef struct cpu_exec {
    st_exec base;
    st_pool *pool;
    st_ready ready;             /* runtime/ready.h: which commands may start (under the pool lock) */
    int n_wait_list;            /* exec_wait calls waiting on a list of commands (under the pool lock) */
    int *current;               /* profiled: the command each worker runs (under the pool lock) */
    int n_workers;
    /* STRATA_CPU_PROFILE: milliseconds and calls per op type */
    bool profile, profile_nodes;
    int n_prof;
    struct {
        const char *op;
        double ms;
        long calls;
    } prof[1024];
} cpu_exec;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void prof_add(cpu_exec *e, const char *op, double ms)
{
    st_pool_lock(e->pool);
    int i = 0;
    while (i < e->n_prof && strcmp(e->prof[i].op, op) != 0) i++;
    if (i < (int)(sizeof e->prof / sizeof *e->prof)) {
        if (i == e->n_prof) {
            e->prof[i].op = op;
            e->prof[i].ms = 0;
            e->prof[i].calls = 0;
            e->n_prof++;
        }
        e->prof[i].ms += ms;
        e->prof[i].calls++;
    }
    st_pool_unlock(e->pool);
}

static void prof_print(const cpu_exec *e)
{
    double total = 0;
    for (int i = 0; i < e->n_prof; i++) total += e->prof[i].ms;
    int order[sizeof e->prof / sizeof *e->prof];
    for (int i = 0; i < e->n_prof; i++) order[i] = i;
    for (int i = 1; i < e->n_prof; i++)
        for (int k = i; k > 0 && e->prof[order[k]].ms > e->prof[order[k - 1]].ms; k--) {
            int t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    fprintf(stderr, "strata cpu profile: %.1f ms in kernels\n", total);
    for (int i = 0; i < e->n_prof; i++) {
        int o = order[i];
        fprintf(stderr, "  %-22s %10.2f ms %5.1f%% %8ld calls\n", e->prof[o].op, e->prof[o].ms,
                total > 0 ? 100.0 * e->prof[o].ms / total : 0.0, e->prof[o].calls);
    }
}

/* st_task_source.next, under the pool lock: the next ready command. */
static bool exec_next(void *ctx, int *task)
{
    cpu_exec *e = ctx;
    if (!st_ready_next(&e->ready, task)) return false;
    if (e->current) { /* the worker asking runs it: for the help it gets (help_observed) */
        int w = st_pool_self(e->pool);
        if (w >= 0 && w < e->n_workers) e->current[w] = *task;
    }
    return true;
}

/* st_pool_observer: worker ran chunks of the loop of owner's command. */
static void help_observed(void *ctx, int worker, int owner, int64_t t0, int64_t t1)
{
    cpu_exec *e = ctx;
    if (!e->base.prof || !e->ready.drive.dag || worker < 0 || owner < 0 || owner >= e->n_workers) return;
    st_prof_add_help(e->base.prof, e->current[owner], ST_PROF_LANE(ST_LANE_WORKER, worker), t0, t1);
}

/* st_task_source.run, outside the lock: the CPU's "enqueue" runs the
 * kernel on the worker that took it. */
static void exec_run(void *ctx, int c)
{
    cpu_exec *e = ctx;
    const st_cmd *cmd = &e->ready.drive.dag->cmds[c];
    if (e->ready.state[c] == ST_CMD_SKIPPED) return; /* set under the lock before this call */
    st_operand ops[cmd->n_in + cmd->n_out > 0 ? cmd->n_in + cmd->n_out : 1];
    for (int k = 0; k < cmd->n_in + cmd->n_out; k++)
        ops[k] = st_operand_of(&cmd->views[k], cmd->views[k].storage ? cmd->views[k].storage->host : NULL);
    st_kctx k = {cmd->gnode, cmd->state, cmd->n_in, cmd->n_out, ops, ops + cmd->n_in, cmd->skip, e->pool, NULL, NULL, cmd->priv};
    double t0 = e->profile ? now_ms() : 0;
    st_prof_run *trace = e->base.prof;
    int64_t ns0 = trace ? st_prof_now() : 0;
    st_status raw = cmd->run(&k);
    if (trace) st_prof_mark(trace, c, ns0, st_prof_now(), ST_PROF_LANE(ST_LANE_WORKER, st_pool_self(e->pool)));
    if (e->profile) prof_add(e, e->profile_nodes ? cmd->gnode->name : cmd->op->name, now_ms() - t0);
    if (raw != ST_OK) {
        st_status s = st_drive_kernel_status(raw);
        st_pool_lock(e->pool);
        st_drive_fail(&e->ready.drive, s, cmd);
        st_pool_unlock(e->pool);
    }
}

/* st_task_source.done, under the pool lock. */
static void exec_done(void *ctx, int c)
{
    cpu_exec *e = ctx;
    st_ready_done(&e->ready, c);
    /* Wake other workers (there may be new work for them), and exec_wait
     * only when what it waits for may be done: a wake per command sent
     * the thread in exec_wait through a futex wake, two context switches
     * and back to sleep for each node (10% of a transformer encoder's CPU
     * time on one thread).  With one worker nobody else takes work. */
    if (st_pool_threads(e->pool) > 1) st_pool_broadcast(e->pool);
    if (e->n_wait_list > 0 || st_ready_finished(&e->ready)) st_pool_notify(e->pool);
}

static st_status exec_submit(st_exec *base, const st_dag *d)
{
    cpu_exec *e = (cpu_exec *)base;
    st_pool_lock(e->pool);
    st_status r = st_ready_start(&e->ready, d, base->ctl);
    if (r == ST_OK) st_pool_broadcast(e->pool);
    st_pool_unlock(e->pool);
    return r;
}

static st_status exec_wait(st_exec *base, const int *cmds, int n)
{
    cpu_exec *e = (cpu_exec *)base;
    st_pool_lock(e->pool);
    if (!e->ready.drive.dag) {
        st_pool_unlock(e->pool);
        return ST_OK;
    }
    if (n >= 0) e->n_wait_list++; /* exec_done wakes this wait after every command */
    for (;;) {
        bool pending = false;
        if (n < 0) pending = !st_ready_finished(&e->ready);
        else
            for (int i = 0; i < n && !pending; i++) pending = !st_ready_executed(&e->ready, cmds[i]);
        if (!pending) break;
        st_pool_wait(e->pool);
    }
    if (n >= 0) e->n_wait_list--;
    st_status s = st_drive_status(&e->ready.drive);
    st_pool_unlock(e->pool);
    return s;
}

static void exec_destroy(st_exec *base)
{
    cpu_exec *e = (cpu_exec *)base;
    exec_wait(base, NULL, -1);
    if (e->profile) prof_print(e);
    st_pool_destroy(e->pool);
    st_ready_free(&e->ready);
    free(e->current);
    free(e);
}

static int exec_pending(st_exec *base)
{
    cpu_exec *e = (cpu_exec *)base;
    st_pool_lock(e->pool);
    int n = e->ready.drive.dag ? e->ready.drive.dag->n_cmds - e->ready.n_executed : 0;
    st_pool_unlock(e->pool);
    return n;
}

static char *host_at(const st_view *v) { return (char *)v->storage->host + v->offset; }
static size_t view_bytes(const st_view *v) { return (size_t)st_view_numel(v) * st_dtype_size(v->dtype); }

/* The copies at the start of a loop iteration (st_exec_loop): when staged,
 * every source goes to scratch before any destination is written. */
static void loop_copies(const st_exec_loop *l, char *scratch)
{
    char *at = scratch;
    for (int k = 0; k < l->n_copy; k++) {
        size_t n = view_bytes(&l->from[k]);
        char *dst = scratch ? at : host_at(&l->to[k]);
        if (dst != host_at(&l->from[k])) memmove(dst, host_at(&l->from[k]), n);
        at += n;
    }
    at = scratch;
    for (int k = 0; scratch && k < l->n_copy; k++) {
        size_t n = view_bytes(&l->to[k]);
        memcpy(host_at(&l->to[k]), at, n);
        at += n;
    }
}

/* A test's stand-in for a device loop (STRATA_CPU_LOOP=1): runs the rest
 * of a while loop the way CUDA's conditional graph does (the spec's
 * copies, staged or not, the iteration number, the condition, the trip
 * count and the limit; one DAG run per iteration), so that session/loop.c's
 * spec and the results it reads back are tested where there is no GPU.
 * It saves nothing on a CPU, hence off by default. */
static st_status exec_loop(st_exec *base, const st_dag *d, st_exec_loop *l)
{
    const char *v = getenv("STRATA_CPU_LOOP");
    if (!v || strcmp(v, "1") != 0)
        return st_error(ST_ERR_UNSUPPORTED, "Loop '%s' stays on the host: the cpu backend has no loops on its device",
                        l->name);
    size_t need = 1;
    for (int k = 0; k < l->n_copy; k++) need += view_bytes(&l->from[k]);
    char *scratch = l->staged ? malloc(need) : NULL;
    if (l->staged && !scratch) return st_error(ST_ERR_NOMEM, "out of memory running Loop '%s'", l->name);
    st_run_ref run = st_run_current(base->ctl);
    char where[200];
    snprintf(where, sizeof where, "in Loop '%.120s' (the CPU's stand-in for a device loop)", l->name);
    st_status r = ST_OK;
    l->ran = l->next;
    l->over = false;
    l->how = "by the CPU's stand-in for a device loop (STRATA_CPU_LOOP=1), one DAG run per iteration";
    for (;;) {
        loop_copies(l, scratch);
        if (l->iter && l->iter->dtype == ST_I64) *(int64_t *)host_at(l->iter) = l->ran;
        else if (l->iter) *(int32_t *)host_at(l->iter) = (int32_t)l->ran;
        r = exec_submit(base, d);
        if (r == ST_OK) r = exec_wait(base, NULL, -1);
        if (r != ST_OK) break;
        l->ran++;
        bool go = *(const unsigned char *)host_at(l->cond) != 0 && l->ran < l->end;
        if (go && l->ran >= l->max) l->over = true;
        if (!go || l->over) break;
        if ((r = st_run_check_at(&run, where)) != ST_OK) break;
    }
    free(scratch);
    return r;
}

static const st_exec_vt cpu_exec_vt = {exec_submit, exec_wait, exec_destroy, NULL, exec_pending, NULL, exec_loop};

static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static st_status cpu_exec_create(st_backend *b, const st_session_options *o, st_exec **out)
{
    cpu_exec *e = calloc(1, sizeof *e);
    if (!e) return st_error(ST_ERR_NOMEM, "out of memory creating the CPU executor");
    e->base.vt = &cpu_exec_vt;
    e->base.backend = b;
    st_ready_init(&e->ready, o);
    const char *prof = getenv("STRATA_CPU_PROFILE");
    e->profile = prof && *prof && strcmp(prof, "0") != 0;
    e->profile_nodes = e->profile && !strcmp(prof, "nodes");
    st_status r = st_pool_start(o->threads > 0 ? o->threads : default_threads(), &e->pool);
    if (r != ST_OK) {
        free(e);
        return st_error_prefix(r, "the CPU executor: ");
    }
    st_task_source src = {e, exec_next, exec_run, exec_done};
    st_pool_set_source(e->pool, &src);
    if (o->profile) {
        e->n_workers = st_pool_threads(e->pool);
        e->current = malloc((size_t)e->n_workers * sizeof *e->current);
        if (!e->current) {
            exec_destroy(&e->base);
            return st_error(ST_ERR_NOMEM, "out of memory creating the CPU executor");
        }
        for (int w = 0; w < e->n_workers; w++) e->current[w] = -1;
        st_pool_set_observer(e->pool, help_observed, e);
    }
    *out = &e->base;
    return ST_OK;
}

static st_backend st_cpu = {
    .kind = ST_BACKEND_CPU,
    .name = "cpu",
    .storage_alloc = cpu_storage_alloc,
    .storage_wrap = cpu_storage_wrap,
    .storage_free = cpu_storage_free,
    .write = cpu_write,
    .read = cpu_read,
    .fill = cpu_fill,
    .exec_create = cpu_exec_create,
    .kernels = &st_cpu_kernel_table,
};

st_backend *st_cpu_backend(void) { return &st_cpu; }

/* The CPU is kind 0 (ST_BACKEND_CPU), the host's address space, always. */
static st_backend *cpu_open(st_backend_kind kind, int device)
{
    (void)kind;
    (void)device;
    return &st_cpu;
}

static const st_backend_module cpu_module = {ST_BACKEND_ABI, "cpu", &st_cpu_kernel_table, cpu_open};

/* The registry's entry (backends/registry.c). */
st_backend_entry st_cpu_module;
const st_backend_module *st_cpu_module(void) { return &cpu_module; }
