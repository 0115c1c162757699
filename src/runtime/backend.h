/*
 * backend.h — the small vtable every device implements.
 *
 * A backend is a process-wide object per device: it allocates storages,
 * copies bytes between the host and storage ranges, and creates one
 * executor per session.  An executor runs a hazard DAG (runtime/dag.h): it
 * starts each command once its predecessors are done, and can wait for any
 * set of commands.  Everything about ordering is decided above the backend
 * by byte ranges; a backend only maps the DAG's edges onto its own
 * mechanism (a thread pool's counters, CUDA events, OpenCL event lists).
 */
#ifndef ST_BACKEND_H
#define ST_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/storage.h"
#include "ops/kernel.h"
#include "strata.h"

struct st_dag;
struct st_prof_run;
typedef struct st_exec st_exec;

typedef struct st_backend {
    st_backend_kind kind;
    const char *name;
    st_status (*storage_alloc)(struct st_backend *b, uint64_t size, const char *label, st_storage **out);
    /* Optional: a storage over host memory that someone else owns (the
     * plan's constants) without copying it.  NULL: allocate and write. */
    st_status (*storage_wrap)(struct st_backend *b, void *host, uint64_t size, const char *label,
                              st_storage **out);
    void (*storage_free)(struct st_backend *b, st_storage *s);
    /* Host <-> storage copies.  They do not wait for commands: the caller
     * (session/access.c) has already waited for the overlapping ones. */
    st_status (*write)(struct st_backend *b, st_storage *s, uint64_t off, const void *src, uint64_t n);
    st_status (*read)(struct st_backend *b, st_storage *s, uint64_t off, void *dst, uint64_t n);
    st_status (*fill)(struct st_backend *b, st_storage *s, uint64_t off, int byte, uint64_t n);
    st_status (*exec_create)(struct st_backend *b, const st_session_options *o, st_exec **out);
    /* The kernels this backend runs (ops/kernel.h), asked at plan time. */
    const st_kernel_table *kernels;
    /* Device backends: a transfer command of a mixed plan (plan/transfer.c),
     * run in the DAG like a kernel: k->views[0] is the source and views[1]
     * the destination, one of them in host memory, with the same layout;
     * it copies the bytes of the source's extent. */
    st_kernel_fn transfer;
    /* Optional: host memory that this device copies to and from fastest
     * (pinned), for a mixed plan's host arena; NULL: the CPU's. */
    st_status (*host_alloc)(struct st_backend *b, uint64_t size, const char *label, st_storage **out);
    /* The device's storages are host memory the host reaches by mapping,
     * without a copy (an OpenCL CPU device or integrated GPU): a mixed
     * plan then leaves every value where it is, and the executor maps the
     * byte ranges a host command touches around its CPU kernel instead of
     * running transfer commands (plan.h's st_plan_target.shared). */
    bool host_mapped;
} st_backend;

/* A while loop's remaining iterations for st_exec_vt.loop.  dag is the
 * body's, which has run once (the iteration before `next`) and whose
 * outputs hold that iteration's results.  Each device iteration first
 * copies from[k] to to[k] for every k (a carried output into its input's
 * slot, the condition into the condition input's), writes the iteration
 * number into iter (when the body reads it), runs the DAG, and stops
 * after an iteration whose condition output cond (a bool) is false, or
 * once `end` iterations have run in all, or when the run is cancelled.
 * The copies' views are contiguous with equal bytes; a source may overlap
 * other copies' destinations (a carried value passed on unchanged: then
 * staged is set), and every copy must read what the previous iteration
 * left.  The final carried
 * values are then in the body's outputs. */
typedef struct st_exec_loop {
    const char *name;             /* the Loop node's, for messages */
    int n_copy;
    const st_view *from, *to;     /* [n_copy] */
    const st_view *iter;          /* the iteration number input (I64 or I32), or NULL */
    const st_view *cond;          /* the body's condition output (BOOL) */
    int64_t next;                 /* the first iteration the device runs (it runs it) */
    int64_t end;                  /* trip count: no iteration number reaches it */
    int64_t max;                  /* an iteration numbered max is an error */
    bool staged;                  /* a source overlaps another copy's destination:
                                     copy every source aside first, then in */
    /* results: iterations now run in all (the host's too), and whether
     * the next one would have been numbered max (the caller's error) */
    int64_t ran;
    bool over;
    const char *how;              /* how it ran, for inspect ("in one CUDA graph ...") */
} st_exec_loop;

typedef struct st_exec_vt {
    /* Starts every command of dag; returns once they are queued. */
    st_status (*submit)(st_exec *e, const struct st_dag *dag);
    /* Waits for the listed commands of the running dag (n < 0: all of them)
     * and returns the first kernel failure, if any. */
    st_status (*wait)(st_exec *e, const int *cmds, int n);
    void (*destroy)(st_exec *e);
    /* Optional: dag is about to be freed; drop what was cached for it (a
     * captured CUDA graph, per-command descriptors). */
    void (*forget)(st_exec *e, const struct st_dag *dag);
    /* How many commands of the last run may still run: 0 once nothing of
     * it is pending (what a cancelled run must leave; tests ask). */
    int (*pending)(st_exec *e);
    /* Optional, for executors that time commands on a device clock: once
     * the last run of dag is complete (and before dag runs again or is
     * forgotten), fills run's times of the commands timed on the device,
     * converted to the host clock (runtime/profile.h says how). */
    st_status (*collect)(st_exec *e, const struct st_dag *dag, struct st_prof_run *run);
    /* Optional, for executors that can repeat a DAG on the device until a
     * value it computes says stop (CUDA's conditional WHILE node): runs
     * the rest of a while loop (session/loop.c), see st_exec_loop.  Returns
     * ST_ERR_UNSUPPORTED, having run nothing, when it cannot take this
     * loop (the message says why); the caller then runs it on the host. */
    st_status (*loop)(st_exec *e, const struct st_dag *dag, struct st_exec_loop *l);
} st_exec_vt;

struct st_exec {
    const st_exec_vt *vt;
    st_backend *backend;
    /* The session's cancel and deadline state (runtime/runctl.h), set after
     * exec_create; executors take the run's part of it at submit. */
    const struct st_run_ctl *ctl;
    /* Profiling (runtime/profile.h): where the run being submitted records
     * its command times, set by the session before each submit; NULL when
     * the session is not profiled.  It stays valid until the run is done. */
    struct st_prof_run *prof;
};

/* A backend module: what each backend hands the registry
 * (backends/registry.c, one line per backend).  A built-in backend
 * defines its entry point `const st_backend_module *st_<name>_module(void)`
 * in the library; a loadable one (CUDA: libstrata_cuda.so, loaded on first
 * use) defines the same entry in its own shared object, with this header
 * in view so the compiler checks it, and the loader checks abi, so a
 * module of another build is refused, not run. */
#define ST_BACKEND_ABI 7
typedef struct st_backend_module {
    int abi;                                  /* ST_BACKEND_ABI of the build */
    const char *name;                         /* "cpu", "cuda", ...: what --backend, Python and
                                                 st_backend_find take; the registry's name */
    const st_kernel_table *kernels;           /* readable without a device */
    /* The device's backend, created on first use, or NULL with a message.
     * kind is the backend's number in the registry (st_backend_kind): it
     * goes into st_backend.kind, which keys its storages' address space. */
    st_backend *(*open)(st_backend_kind kind, int device);
} st_backend_module;

/* The type of a module's entry point, st_<name>_module: each backend
 * declares its entry with it (`st_backend_entry st_cuda_module;`), so the
 * compiler checks the definition against what the registry calls. */
typedef const st_backend_module *st_backend_entry(void);


#endif
