/*
 * session.c — the public session API: options, binding inputs, planning
 * per input-shape signature (cached), and submitting runs.
 *
 * Owns: the plan cache (each plan with its hazard DAG), the arena
 * storages (the main backend's, and a host arena for the nodes a mixed
 * plan runs on the CPU), the executor and its tracker.
 * A run waits for the previous run before it touches the arena, so only
 * one DAG is ever in flight per session; within it, host accesses wait by
 * byte range (session/access.c).  A session is used by one thread at a time;
 * a second thread entering gets ST_ERR_BUSY.
 *
 * Profiling (st_session_options.profile, runtime/profile.h): each stage's
 * DAG is submitted with a timing buffer for the executor, the session
 * times its own work in the run, and a run is formatted into the trace
 * when the next run (or st_session_profile_write) has waited for it,
 * while its plans are still cached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/registry.h"
#include "passes/passes.h"
#include "core/status.h"
#include "core/strings.h"
#include "session/bind.h"
#include "session/bound.h"
#include "runtime/profile.h"
#include "runtime/runctl.h"
#include "session/session.h"
#include "graph/model.h"

#define ST_PLAN_CACHE 16
/* A staged plan's stages each take a cache entry; at most half of it, so
 * the entries a run is using are never the least recently used. */
#define ST_MAX_STAGES (ST_PLAN_CACHE / 2)
/* More threads than this is a mistake (a count of bytes, a negative
 * number cast), not a machine: each one is a real thread. */
#define ST_MAX_THREADS 1024
#define ST_STR_(x) #x
#define ST_STR(x) ST_STR_(x)

/* A plan and the DAG of its commands. */
typedef struct st_cached {
    st_plan *plan;
    st_dag *dag;
    uint64_t used;
    /* A staged plan (plan/stage.c): the model of the rest of the graph,
     * and its inputs, read from this plan's outputs after each run. */
    st_model *next;
    bound_input *next_bound;
    /* Entries the current run uses (its stages, a loop body's) are pinned,
     * by a number that grows with each pin, so that planning a later one
     * evicts none of them and a loop can unpin its iteration's alone. */
    uint64_t pin;
} st_cached;

static void forget_plan(st_session *s, st_cached *c);
static void free_cached(st_cached *c);
static st_status upload_and_submit(st_session *s, st_cached *c, const st_model *m, bound_input *bound, int64_t t_bind);
static st_status run_chain(st_session *s, const st_model *m, bound_input *bound, bool wait, const st_plan **last);

struct st_session {
    const st_model *model;
    st_session_options opt;
    st_backend *backend;
    st_backend *host;         /* the CPU: a mixed plan's host nodes */
    st_plan_target target;
    st_tracker *tracker;
    atomic_int busy;
    bound_input *bound;
    st_cached cache[ST_PLAN_CACHE];
    int n_cache;
    uint64_t clock;
    st_cached *cur;           /* plan of the last run */
    st_storage *arena;        /* the main backend's */
    st_storage *host_arena;   /* NULL until a mixed plan needs one */
    uint64_t arena_gen;       /* counts arena replacements */
    /* the serial of the last plan submitted into the arena: a staged plan's
     * stages and a loop's body share it, and each overwrites the others'
     * inputs, so an input is only left in place for the plan that ran last */
    uint64_t arena_plan;
    uint64_t plans_built;     /* for tests: a repeated shape must not plan again */
    /* the plans of the last run's stages, by serial (plan/stage.c) */
    uint64_t stage_serial[ST_MAX_STAGES];
    int n_stages;
    st_run_ctl ctl;           /* runs' numbers, cancel and deadline (runtime/runctl.h) */
    atomic_uint_fast64_t deadline_ns; /* st_session_set_deadline; 0: none */
    st_profile *prof;         /* NULL unless the options name a profile */
    uint64_t pins;            /* pin numbers handed out (st_cached.pin) */
    int loop_depth;           /* > 0 while a loop body runs (session/loop.c) */
    char loop_note[400];      /* how the last run's last while loop ran, for inspect */
};

void st_session_options_init(st_session_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = ST_BACKEND_CPU;
    o->precision = ST_F32;
    o->schedule = ST_SCHEDULE_DEFAULT;
    o->hazard_mode = ST_HAZARD_RANGES;
    const char *e = getenv("STRATA_SANITIZE");
    if (e && *e && strcmp(e, "0") != 0) o->sanitize = 1;
}

static bool enter(st_session *s)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&s->busy, &expected, 1)) {
        st_error(ST_ERR_BUSY, "session is being used by another thread");
        return false;
    }
    return true;
}

static void leave(st_session *s) { atomic_store(&s->busy, 0); }

/* Every other field in range: a value no backend, schedule or mode has
 * is the caller's mistake, not something to guess the meaning of. */
static st_status check_options(const st_session_options *o)
{
    const char *bad = NULL;
    long long v = 0;
    if ((int)o->backend < 0 || (int)o->backend >= st_backend_count())
        bad = "backend", v = o->backend;
    else if (o->threads < 0 || o->threads > ST_MAX_THREADS) bad = "threads", v = o->threads;
    else if (o->schedule != ST_SCHEDULE_DEFAULT && o->schedule != ST_SCHEDULE_RANDOM) bad = "schedule", v = o->schedule;
    else if (o->hazard_mode != ST_HAZARD_RANGES && o->hazard_mode != ST_HAZARD_STORAGE && o->hazard_mode != ST_HAZARD_BASE_POINTER &&
             o->hazard_mode != ST_HAZARD_EXTENTS)
        bad = "hazard_mode", v = o->hazard_mode;
    else if (o->device < 0) bad = "device", v = o->device;
    else if (o->sanitize != 0 && o->sanitize != 1) bad = "sanitize", v = o->sanitize;
    else if (o->serial != 0 && o->serial != 1) bad = "serial", v = o->serial;
    else if (o->no_fallback != 0 && o->no_fallback != 1) bad = "no_fallback", v = o->no_fallback;
    if (!bad) return ST_OK;
    return st_error(ST_ERR_INVALID_ARG, "st_session_create: options.%s = %lld is out of range%s", bad, v,
                    !strcmp(bad, "threads") ? " (0 to " ST_STR(ST_MAX_THREADS) ")" : "");
}

static uint64_t machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : (uint64_t)1 << 40;
}

st_status st_session_create(const st_model *m, const st_session_options *o, st_session **out)
{
    if (!m || !out) return st_error(ST_ERR_INVALID_ARG, "st_session_create: NULL argument");
    *out = NULL;
    st_session_options opt;
    if (o) opt = *o;
    else st_session_options_init(&opt);
    if (!opt.precision) opt.precision = ST_F32;
    if (opt.precision != ST_F32 && opt.precision != ST_F16 && opt.precision != ST_BF16)
        return st_error(ST_ERR_INVALID_ARG, "precision must be float32, float16 or bfloat16, not %s",
                        st_dtype_name(opt.precision));
    ST_TRY(check_options(&opt));
    if (!opt.memory_limit) opt.memory_limit = machine_memory();
    const char *e = getenv("STRATA_SANITIZE");
    if (e && *e && strcmp(e, "0") != 0) opt.sanitize = 1;

    /* refuse unsupported ops now, not at the first run */
    const st_graph *g = m->g;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].op)
            return st_error(ST_ERR_UNSUPPORTED, "node '%s': unsupported op '%s' (domain '%s', opset %d)",
                            g->nodes[i].name, g->nodes[i].op_type,
                            g->nodes[i].domain[0] ? g->nodes[i].domain : "ai.onnx", g->nodes[i].opset);
    st_backend *b = st_backend_get(opt.backend, opt.device);
    if (!b) return opt.backend == ST_BACKEND_CPU ? ST_ERR_INTERNAL : ST_ERR_UNSUPPORTED;
    st_backend *cpu = st_backend_get(ST_BACKEND_CPU, 0);
    /* a profile that could not be written is refused now, before a run */
    st_profile *prof = NULL;
    if (opt.profile) {
        ST_TRY(st_profile_create(opt.profile, b->name, &prof));
        opt.profile = st_profile_path(prof); /* the caller's string may go */
    }

    st_session *s = calloc(1, sizeof *s);
    st_tracker *t = calloc(1, sizeof *t);
    bound_input *bound = calloc((size_t)g->n_inputs + 1, sizeof *bound);
    if (!s || !t || !bound) {
        free(s);
        free(t);
        free(bound);
        st_profile_free(prof);
        return st_error(ST_ERR_NOMEM, "out of memory creating a session");
    }
    s->model = m;
    s->opt = opt;
    s->backend = b;
    s->host = cpu;
    s->target.main = b->kernels;
    s->target.main_device = b;
    s->target.host = cpu->kernels;
    s->target.host_device = cpu;
    s->target.mixed = b != cpu;
    s->target.strict = opt.no_fallback != 0;
    s->target.shared = s->target.mixed && b->host_mapped;
    s->target.passes = &st_passes; /* passes/pipeline.c */
    s->bound = bound;
    s->prof = prof;
    atomic_init(&s->busy, 0);
    atomic_init(&s->ctl.run, 0);
    atomic_init(&s->ctl.cancel, 0);
    atomic_init(&s->ctl.deadline, 0);
    atomic_init(&s->deadline_ns, 0);
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->mu, NULL);
    s->tracker = t;
    st_status r = b->exec_create(b, &opt, &t->exec);
    if (r == ST_OK) t->exec->ctl = &s->ctl;
    if (r == ST_OK) r = b->storage_alloc(b, 0, "arena", &s->arena);
    /* a mixed plan's host arena starts empty too, so that plans bind to it
     * and follow it when it grows (rebind_arena) */
    if (r == ST_OK && s->target.mixed)
        r = b->host_alloc ? b->host_alloc(b, 0, "host arena", &s->host_arena)
                          : cpu->storage_alloc(cpu, 0, "host arena", &s->host_arena);
    if (r != ST_OK) {
        if (t->exec) t->exec->vt->destroy(t->exec);
        st_tracker_release(t);
        st_storage_release(s->arena);
        st_profile_free(prof);
        free(bound);
        free(s);
        return r;
    }
    st_model_retain(m);
    *out = s;
    return ST_OK;
}

void st_session_free(st_session *s)
{
    if (!s) return;
    st_tracker *t = s->tracker;
    pthread_mutex_lock(&t->mu);
    t->exec->vt->wait(t->exec, NULL, -1);
    t->dag = NULL;
    for (int i = 0; i < s->n_cache; i++) forget_plan(s, &s->cache[i]);
    t->exec->vt->destroy(t->exec);
    t->exec = NULL;
    pthread_mutex_unlock(&t->mu);
    st_tracker_release(t);
    for (int i = 0; i < s->n_cache; i++) free_cached(&s->cache[i]);
    st_storage_release(s->arena);
    st_storage_release(s->host_arena);
    st_bound_free(s->bound, s->model->g->n_inputs);
    st_model_release(s->model);
    st_profile_free(s->prof); /* runs not written with st_session_profile_write are dropped */
    free(s);
}

static int input_index(const st_session *s, const char *name)
{
    const st_graph *g = s->model->g;
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->values[g->inputs[i]].name, name) == 0) return i;
    return -1;
}

/* Checks a tensor against what input v declares (for a sequence or
 * optional, its element) and copies it into b: numbers converted to v's
 * dtype or, with dtype ST_STRING, an array of C strings copied with their
 * characters (core/strings.h); name says which input (and element) in
 * messages.  The caller is inside the session. */
static st_status bind_tensor(const st_value *v, bound_input *b, const char *name, st_dtype dtype, int rank,
                             const int64_t *dims, const void *data)
{
    if (!st_dtype_valid(dtype)) return st_error(ST_ERR_DTYPE, "input '%s': invalid dtype %d", name, (int)dtype);
    if (v->dtype == ST_STRING && dtype != ST_STRING)
        return st_error(ST_ERR_DTYPE, "input '%s' holds strings: set it with st_session_set_input_strings", name);
    if (dtype != v->dtype && !(st_dtype_is_float(dtype) && st_dtype_is_float(v->dtype)))
        return st_error(ST_ERR_DTYPE, "input '%s': expected %s, got %s", name, st_dtype_name(v->dtype),
                        st_dtype_name(dtype));
    if (rank < 0 || rank > ST_MAX_RANK)
        return st_error(ST_ERR_SHAPE, "input '%s': rank %d is outside 0..%d", name, rank, ST_MAX_RANK);
    if (v->rank >= 0 && rank != v->rank)
        return st_error(ST_ERR_SHAPE, "input '%s': expected rank %d, got %d", name, v->rank, rank);
    uint64_t numel = 1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) return st_error(ST_ERR_SHAPE, "input '%s': dim %d is negative (%lld)", name, d, (long long)dims[d]);
        if (v->rank >= 0 && v->dims[d] >= 0 && dims[d] != v->dims[d])
            return st_error(ST_ERR_SHAPE, "input '%s': dim %d must be %lld, got %lld", name, d, (long long)v->dims[d],
                            (long long)dims[d]);
        if (dims[d] && numel > (1ull << 40) / (uint64_t)dims[d])
            return st_error(ST_ERR_NOMEM, "input '%s': shape is too large", name);
        numel *= (uint64_t)dims[d];
    }
    if (numel && !data) return st_error(ST_ERR_INVALID_ARG, "input '%s': data is NULL", name);
    size_t bytes = (size_t)numel * st_dtype_size(v->dtype), need = st_values_bytes(v->dtype, (size_t)numel, data);
    if (need + 1 > b->cap) {
        void *d = realloc(b->data, need + 1);
        if (!d) return st_error(ST_ERR_NOMEM, "input '%s': out of memory (%zu bytes)", name, need);
        b->data = d;
        b->cap = need + 1;
    }
    if (v->dtype == ST_STRING) st_values_copy(ST_STRING, b->data, (size_t)numel, data);
    else st_convert(v->dtype, b->data, dtype, data, (size_t)numel);
    b->set = true;
    b->uploaded = false;
    b->dtype = v->dtype;
    b->rank = rank;
    if (rank) memcpy(b->dims, dims, (size_t)rank * sizeof *dims); /* a scalar's dims may be NULL */
    b->bytes = bytes;
    return ST_OK;
}

/* Input name, a tensor or an optional tensor, bound to what the caller
 * gives (bind_tensor). */
static st_status bind_input(st_session *s, const char *name, st_dtype dtype, int rank, const int64_t *dims,
                            const void *data)
{
    if (!s || !name || (rank > 0 && !dims)) return st_error(ST_ERR_INVALID_ARG, "st_session_set_input: NULL argument");
    int i = input_index(s, name);
    if (i < 0) return st_error(ST_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    const st_value *v = &s->model->g->values[s->model->g->inputs[i]];
    if (v->kind == ST_KIND_SEQUENCE || v->kind == ST_KIND_OPTIONAL_SEQUENCE)
        return st_error(ST_ERR_INVALID_ARG, "input '%s' is %s sequence of tensors: bind it with "
                        "st_session_set_input_sequence and st_session_set_input_element", name,
                        v->kind == ST_KIND_SEQUENCE ? "a" : "an optional");
    if (!enter(s)) return ST_ERR_BUSY;
    bound_input *b = &s->bound[i];
    st_status r = bind_tensor(v, b, name, dtype, rank, dims, data);
    if (r == ST_OK) b->absent = false; /* an optional input holds it */
    leave(s);
    return r;
}

st_status st_session_set_input(st_session *s, const char *name, st_dtype dtype, int rank, const int64_t *dims,
                               const void *data)
{
    if (dtype == ST_STRING)
        return st_error(ST_ERR_DTYPE, "input '%s': strings are set with st_session_set_input_strings", name ? name : "");
    return bind_input(s, name, dtype, rank, dims, data);
}

/* Strings, like st_session_set_input_checked, are counted against dims
 * before one is read. */
st_status st_session_set_input_strings(st_session *s, const char *name, int rank, const int64_t *dims,
                                       const char *const *strs, size_t count)
{
    if (!s || !name || (rank > 0 && !dims) || (count && !strs))
        return st_error(ST_ERR_INVALID_ARG, "st_session_set_input_strings: NULL argument");
    if (rank < 0 || rank > ST_MAX_RANK)
        return st_error(ST_ERR_SHAPE, "input '%s': rank %d is outside 0..%d", name, rank, ST_MAX_RANK);
    uint64_t numel = 1;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) return st_error(ST_ERR_SHAPE, "input '%s': dim %d is negative (%lld)", name, d, (long long)dims[d]);
        numel = dims[d] && numel > UINT64_MAX / (uint64_t)dims[d] ? UINT64_MAX : numel * (uint64_t)dims[d];
    }
    if (numel != count)
        return st_error(ST_ERR_SHAPE, "input '%s': dims hold %llu strings, but %zu were given", name,
                        (unsigned long long)numel, count);
    for (size_t k = 0; k < count; k++)
        if (!strs[k]) return st_error(ST_ERR_INVALID_ARG, "input '%s': string %zu is NULL", name, k);
    int i = input_index(s, name);
    if (i >= 0 && s->model->g->values[s->model->g->inputs[i]].dtype != ST_STRING)
        return st_error(ST_ERR_DTYPE, "input '%s' is %s, not strings", name,
                        st_dtype_name(s->model->g->values[s->model->g->inputs[i]].dtype));
    return bind_input(s, name, ST_STRING, rank, dims, strs);
}

/* The buffer-size check of st_session_set_input_checked and
 * st_session_set_input_element (strata.h): wrong dims would make the copy
 * read past the caller's buffer, so they are refused against the byte
 * count before a byte is read. */
static st_status check_bytes(const char *name, st_dtype dtype, int rank, const int64_t *dims, size_t bytes)
{
    if (!st_dtype_valid(dtype)) return st_error(ST_ERR_DTYPE, "input '%s': invalid dtype %d", name, (int)dtype);
    if (rank < 0 || rank > ST_MAX_RANK)
        return st_error(ST_ERR_SHAPE, "input '%s': rank %d is outside 0..%d", name, rank, ST_MAX_RANK);
    char shape[ST_MAX_RANK * 22 + 3];
    int len = snprintf(shape, sizeof shape, "[");
    uint64_t need = st_dtype_size(dtype);
    bool overflow = false, empty = false;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) return st_error(ST_ERR_SHAPE, "input '%s': dim %d is negative (%lld)", name, d, (long long)dims[d]);
        if (dims[d] && need > UINT64_MAX / (uint64_t)dims[d]) overflow = true;
        else need *= (uint64_t)dims[d];
        empty |= dims[d] == 0;
        len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%lld", d ? ", " : "", (long long)dims[d]);
    }
    snprintf(shape + len, sizeof shape - (size_t)len, "]");
    if (empty) need = 0, overflow = false; /* a zero dim: no bytes, however big the others */
    if (overflow)
        return st_error(ST_ERR_SHAPE, "input '%s': dims %s of %s need more than 2^64 bytes, but the buffer has %zu", name,
                        shape, st_dtype_name(dtype), bytes);
    if (need != bytes)
        return st_error(ST_ERR_SHAPE, "input '%s': dims %s of %s need %llu bytes, but the buffer has %zu", name, shape,
                        st_dtype_name(dtype), (unsigned long long)need, bytes);
    return ST_OK;
}

st_status st_session_set_input_checked(st_session *s, const char *name, st_dtype dtype, int rank, const int64_t *dims,
                                       const void *data, size_t bytes)
{
    if (!s || !name || (rank > 0 && !dims))
        return st_error(ST_ERR_INVALID_ARG, "st_session_set_input_checked: NULL argument");
    ST_TRY(check_bytes(name, dtype, rank, dims, bytes));
    return st_session_set_input(s, name, dtype, rank, dims, data);
}

/* ---- sequence and optional inputs (passes/sequence.c) ---- */

/* Input name, which must be of one of the kinds in mask (bits of
 * st_value_kind); fn names the call in messages. */
static st_status list_input(st_session *s, const char *name, unsigned mask, const char *fn, int *index)
{
    if (!s || !name) return st_error(ST_ERR_INVALID_ARG, "%s: NULL argument", fn);
    int i = input_index(s, name);
    if (i < 0) return st_error(ST_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    st_value_kind k = s->model->g->values[s->model->g->inputs[i]].kind;
    static const char *WHAT[] = {"a tensor", "a sequence", "an optional tensor", "an optional sequence"};
    if (!(mask & (1u << k)))
        return st_error(ST_ERR_INVALID_ARG, "%s: input '%s' is %s", fn, name, WHAT[k]);
    *index = i;
    return ST_OK;
}

st_status st_session_set_input_sequence(st_session *s, const char *name, int count)
{
    int i;
    ST_TRY(list_input(s, name, 1u << ST_KIND_SEQUENCE | 1u << ST_KIND_OPTIONAL_SEQUENCE, "st_session_set_input_sequence",
                      &i));
    if (count < 0 || count > ST_MAX_SEQUENCE)
        return st_error(ST_ERR_INVALID_ARG, "input '%s': a sequence of %d tensors (0 to %d)", name, count, ST_MAX_SEQUENCE);
    if (!enter(s)) return ST_ERR_BUSY;
    bound_input *b = &s->bound[i];
    if (count > b->cap_elems) {
        bound_input *e = realloc(b->elems, (size_t)count * sizeof *e);
        if (!e) {
            leave(s);
            return st_error(ST_ERR_NOMEM, "input '%s': out of memory for %d elements", name, count);
        }
        memset(e + b->cap_elems, 0, (size_t)(count - b->cap_elems) * sizeof *e);
        b->elems = e;
        b->cap_elems = count;
    }
    for (int k = 0; k < count; k++) b->elems[k].set = false;
    b->n_elems = count;
    b->absent = false;
    b->set = true;
    leave(s);
    return ST_OK;
}

st_status st_session_set_input_element(st_session *s, const char *name, int index, st_dtype dtype, int rank,
                                       const int64_t *dims, const void *data, size_t bytes)
{
    int i;
    ST_TRY(list_input(s, name, 1u << ST_KIND_SEQUENCE | 1u << ST_KIND_OPTIONAL_SEQUENCE, "st_session_set_input_element",
                      &i));
    if (rank > 0 && !dims) return st_error(ST_ERR_INVALID_ARG, "st_session_set_input_element: NULL dims");
    /* strings are values a plan is made for (plan.c), which a sequence's
     * elements are not */
    if (s->model->g->values[s->model->g->inputs[i]].dtype == ST_STRING || dtype == ST_STRING)
        return st_error(ST_ERR_UNSUPPORTED, "input '%s': sequences of strings are not supported", name);
    char what[300];
    snprintf(what, sizeof what, "%s[%d]", name, index);
    ST_TRY(check_bytes(what, dtype, rank, dims, bytes));
    if (!enter(s)) return ST_ERR_BUSY;
    bound_input *b = &s->bound[i];
    st_status r = ST_OK;
    if (!b->set || b->absent || b->n_elems < 0)
        r = st_error(ST_ERR_INVALID_ARG, "input '%s': give its length with st_session_set_input_sequence before its "
                     "elements", name);
    else if (index < 0 || index >= b->n_elems)
        r = st_error(ST_ERR_INVALID_ARG, "input '%s': element %d of a sequence of %d", name, index, b->n_elems);
    else
        r = bind_tensor(&s->model->g->values[s->model->g->inputs[i]], &b->elems[index], what, dtype, rank, dims, data);
    leave(s);
    return r;
}

st_status st_session_set_input_absent(st_session *s, const char *name)
{
    int i;
    ST_TRY(list_input(s, name, 1u << ST_KIND_OPTIONAL | 1u << ST_KIND_OPTIONAL_SEQUENCE, "st_session_set_input_absent",
                      &i));
    if (!enter(s)) return ST_ERR_BUSY;
    bound_input *b = &s->bound[i];
    b->set = true;
    b->absent = true;
    b->uploaded = false;
    b->rank = 0;
    b->bytes = 0;
    leave(s);
    return ST_OK;
}

/* The bindings in the order of a plan's input slots (plan/plan.h): one
 * per graph input of m (NULL for a sequence or optional one), then the
 * tensors that each sequence or optional input holds; in_elems per graph
 * input.  Returns the slot count, or -1 when out of memory. */
static int input_slots(const st_graph *g, bound_input *bound, bound_input ***slots, int **in_elems)
{
    int n = g->n_inputs;
    int *el = malloc(((size_t)g->n_inputs + 1) * sizeof *el);
    if (!el) return -1;
    for (int i = 0; i < g->n_inputs; i++) {
        st_value_kind k = g->values[g->inputs[i]].kind;
        const bound_input *b = &bound[i];
        el[i] = k == ST_KIND_TENSOR ? ST_IN_TENSOR : b->absent ? ST_IN_ABSENT : k == ST_KIND_OPTIONAL ? 1 : b->n_elems;
        if (el[i] > 0) n += el[i];
    }
    bound_input **sl = malloc(((size_t)n + 1) * sizeof *sl);
    if (!sl) {
        free(el);
        return -1;
    }
    int at = g->n_inputs;
    for (int i = 0; i < g->n_inputs; i++) {
        sl[i] = el[i] == ST_IN_TENSOR ? &bound[i] : NULL;
        if (el[i] > 0 && g->values[g->inputs[i]].kind == ST_KIND_OPTIONAL) sl[at++] = &bound[i];
        else
            for (int k = 0; k < el[i]; k++) sl[at++] = &bound[i].elems[k];
    }
    *slots = sl;
    *in_elems = el;
    return n;
}

/* Why input i of g cannot run as bound (not set, or an element missing),
 * or ST_OK. */
static st_status unbound(const st_graph *g, const bound_input *b, int i)
{
    const st_value *v = &g->values[g->inputs[i]];
    if (!b->set) {
        if (v->kind == ST_KIND_TENSOR) return st_error(ST_ERR_INVALID_ARG, "input '%s' was not set", v->name);
        if (v->kind == ST_KIND_SEQUENCE)
            return st_error(ST_ERR_INVALID_ARG, "input '%s' (a sequence) was not set: st_session_set_input_sequence and "
                            "st_session_set_input_element bind it", v->name);
        return st_error(ST_ERR_INVALID_ARG, "input '%s' (an optional) was not set: bind its value, or mark it empty with "
                        "st_session_set_input_absent", v->name);
    }
    if ((v->kind == ST_KIND_SEQUENCE || v->kind == ST_KIND_OPTIONAL_SEQUENCE) && !b->absent)
        for (int k = 0; k < b->n_elems; k++)
            if (!b->elems[k].set)
                return st_error(ST_ERR_INVALID_ARG, "input '%s': element %d of its %d was not set", v->name, k,
                                b->n_elems);
    return ST_OK;
}

/* Points a cached plan's views at the current arenas (storages 0 and 1). */
static void rebind_arena(st_session *s, st_cached *c)
{
    st_plan *p = c->plan;
    st_storage *now[2] = {s->arena, s->host_arena};
    for (int a = 0; a < 2; a++) {
        st_storage *old = p->storages[a];
        if (old == now[a]) continue;
        for (int v = 0; v < p->n_values; v++)
            if (p->values[v].view.storage == old) p->values[v].view.storage = now[a];
        for (int t = 0; t < p->n_transfers; t++)
            if (p->transfers[t].view.storage == old) p->transfers[t].view.storage = now[a];
        if (c->dag) {
            int nv = 0;
            for (int k = 0; k < c->dag->n_cmds; k++) nv += c->dag->cmds[k].n_in + c->dag->cmds[k].n_out;
            for (int i = 0; i < nv; i++)
                if (c->dag->view_pool[i].storage == old) c->dag->view_pool[i].storage = now[a];
        }
        st_storage_retain(now[a]);
        p->storages[a] = now[a];
        st_storage_release(old);
    }
}

/* The executor may cache per-plan state (a captured graph); drop it. */
static void forget_plan(st_session *s, st_cached *c)
{
    st_exec *e = s->tracker->exec;
    if (e && e->vt->forget && c->dag) e->vt->forget(e, c->dag);
}

/* Frees a cache entry (its executor state forgotten first). */
static void free_cached(st_cached *c)
{
    st_dag_free(c->dag);
    st_plan_free(c->plan);
    if (c->next) st_bound_free(c->next_bound, c->next->g->n_inputs);
    st_model_release(c->next);
}

/* The plan of model m (the session's, or a later stage's) for inputs
 * bound, from the cache or built. */
static st_status get_plan(st_session *s, const st_model *m, bound_input *bound, st_cached **out)
{
    const st_graph *g = m->g;
    bound_input **slots;
    int *in_elems;
    int n = input_slots(g, bound, &slots, &in_elems);
    if (n < 0) return st_error(ST_ERR_NOMEM, "out of memory planning");
    int *rank = malloc(((size_t)n + 1) * sizeof *rank);
    const void **data = malloc(((size_t)n + 1) * sizeof *data);
    int64_t (*dims)[ST_MAX_RANK] = calloc((size_t)n + 1, sizeof *dims);
    if (!rank || !data || !dims) {
        free(slots);
        free(in_elems);
        free(rank);
        free(data);
        free(dims);
        return st_error(ST_ERR_NOMEM, "out of memory planning");
    }
    for (int i = 0; i < n; i++) {
        rank[i] = slots[i] ? slots[i]->rank : 0;
        data[i] = slots[i] ? slots[i]->data : NULL;
        if (slots[i]) memcpy(dims[i], slots[i]->dims, sizeof dims[i]);
    }
    free(slots);
    st_cached *hit = NULL;
    for (int i = 0; i < s->n_cache && !hit; i++)
        if (s->cache[i].plan->model == m &&
            st_plan_matches(s->cache[i].plan, rank, (const int64_t(*)[ST_MAX_RANK])dims, data, in_elems))
            hit = &s->cache[i];
    st_plan *p = NULL;
    st_status r = ST_OK;
    if (!hit)
        r = st_plan_build(m, &s->target, &s->opt, rank, (const int64_t(*)[ST_MAX_RANK])dims, data, in_elems, &p);
    free(rank);
    free(data);
    free(dims);
    free(in_elems);
    if (hit) {
        hit->used = ++s->clock;
        *out = hit;
        return ST_OK;
    }
    if (r != ST_OK) return r;
    if (p->arena_bytes + p->host_arena_bytes > s->opt.memory_limit) {
        r = st_error(ST_ERR_NOMEM, "the plan needs %llu bytes of activations, over the memory limit of %llu bytes",
                     (unsigned long long)(p->arena_bytes + p->host_arena_bytes), (unsigned long long)s->opt.memory_limit);
        st_plan_free(p);
        return r;
    }
    st_dag *dag = NULL;
    r = st_plan_bind(p, s->backend, s->host, s->arena, s->host_arena);
    if (r == ST_OK) r = st_dag_build(p, s->opt.hazard_mode, &dag);
    if (r == ST_OK && s->opt.sanitize) r = st_dag_check(dag);
    st_model *next = NULL;
    bound_input *next_bound = NULL;
    if (r == ST_OK && p->next_g) {
        /* the rest of the graph, planned once this stage has run */
        r = st_model_stage(m, p->next_g, &next);
        p->next_g = NULL;
        if (r == ST_OK && !(next_bound = calloc((size_t)next->g->n_inputs + 1, sizeof *next_bound)))
            r = st_error(ST_ERR_NOMEM, "out of memory planning");
    }
    if (r == ST_OK && s->n_cache == ST_PLAN_CACHE) {
        bool free_entry = false;
        for (int i = 0; i < s->n_cache; i++) free_entry |= !s->cache[i].pin;
        if (!free_entry)
            r = st_error(ST_ERR_UNSUPPORTED, "this run uses all %d cached plans at once (stages, and loop bodies nested "
                         "too deep)", ST_PLAN_CACHE);
    }
    if (r != ST_OK) {
        free(next_bound);
        st_model_release(next);
        st_dag_free(dag);
        st_plan_free(p);
        return r;
    }
    if (s->n_cache == ST_PLAN_CACHE) { /* evict the least recently used that this run does not use */
        int lru = -1;
        for (int i = 0; i < s->n_cache; i++)
            if (!s->cache[i].pin && (lru < 0 || s->cache[i].used < s->cache[lru].used)) lru = i;
        forget_plan(s, &s->cache[lru]);
        free_cached(&s->cache[lru]);
        s->cache[lru] = s->cache[--s->n_cache];
        /* cur points into the array: follow the entry that moved */
        if (s->cur == &s->cache[lru]) s->cur = NULL;
        else if (s->cur == &s->cache[s->n_cache]) s->cur = &s->cache[lru];
    }
    p->serial = ++s->clock;
    s->plans_built++;
    st_cached *c = &s->cache[s->n_cache++];
    c->plan = p;
    c->dag = dag;
    c->used = s->clock;
    c->next = next;
    c->next_bound = next_bound;
    c->pin = 0;
    *out = c;
    return ST_OK;
}

/* After stage p ran: its outputs, read to the host, are the next stage's
 * inputs (plan/stage.c), and so are a loop stage's results (loop_out, the
 * Loop's outputs in order).  The caller waited for the run. */
static st_status stage_inputs(const st_plan *p, const st_model *next, bound_input *nb, const bound_input *loop_out)
{
    const st_graph *ng = next->g;
    for (int i = 0; i < ng->n_inputs; i++) {
        int v = ng->inputs[i], j = -1;
        const char *name = ng->values[v].name;
        for (int k = 0; p->loop && k < p->loop->n_carried + p->loop->n_scan && j < 0; k++)
            if (p->loop->out[k] == v) j = k;
        ST_TRY(j >= 0 ? st_bound_copy(&nb[i], &loop_out[j], name) : st_bound_read(p, v, name, &nb[i]));
    }
    return ST_OK;
}

/* Plans (or finds) and submits the plan of model m for inputs bound. */
static st_status submit_stage(st_session *s, const st_model *m, bound_input *bound, st_cached **out)
{
    st_tracker *t = s->tracker;
    st_cached *c = NULL;
    /* profiling: planning is a span of its own when a plan was built; a
     * plan found in the cache counts to binding */
    int64_t t_bind = s->prof ? st_prof_now() : 0;
    uint64_t built = s->plans_built;
    ST_TRY(get_plan(s, m, bound, &c));
    if (s->prof && s->plans_built != built) {
        int64_t t = st_prof_now();
        st_profile_span(s->prof, "plan", t_bind, t);
        t_bind = t;
    }
    st_plan *p = c->plan;
    if (p->arena_bytes > s->arena->size) {
        st_storage *a;
        ST_TRY(s->backend->storage_alloc(s->backend, p->arena_bytes, "arena", &a));
        st_storage_release(s->arena);
        s->arena = a;
        s->arena_gen++;
    }
    if (s->host_arena && p->host_arena_bytes > s->host_arena->size) {
        /* a device may offer host memory it copies to and from faster (pinned) */
        st_backend *b = s->backend, *cpu = s->host;
        st_storage *a;
        ST_TRY(b->host_alloc ? b->host_alloc(b, p->host_arena_bytes, "host arena", &a)
                             : cpu->storage_alloc(cpu, p->host_arena_bytes, "host arena", &a));
        st_storage_release(s->host_arena);
        s->host_arena = a;
    }
    rebind_arena(s, c);
    /* cancelled or late while planning: nothing has changed yet */
    st_run_ref ref = st_run_current(&s->ctl);
    ST_TRY(st_run_check(&ref, NULL, NULL));
    /* From the first byte the arena changes until the run is submitted,
     * hold the tracker's lock: a tensor read on another thread then sees
     * the last run's bytes or (waiting for its writers) this run's, never
     * poison or half-uploaded inputs (session/access.c). */
    pthread_mutex_lock(&t->mu);
    t->plan = 0;
    t->runner = pthread_self();
    st_status r = upload_and_submit(s, c, m, bound, t_bind);
    if (r == ST_OK) {
        t->dag = c->dag;
        t->plan = p->serial;
    }
    pthread_mutex_unlock(&t->mu);
    if (r == ST_OK) s->cur = c;
    if (r == ST_OK) c->pin = ++s->pins;
    *out = c;
    return r;
}

static st_status run_locked(st_session *s)
{
    const st_graph *g = s->model->g;
    for (int i = 0; i < g->n_inputs; i++) ST_TRY(unbound(g, &s->bound[i], i));
    st_tracker *t = s->tracker;
    /* one DAG in flight: the previous run must be done before the arena changes */
    pthread_mutex_lock(&t->mu);
    st_status r = t->exec->vt->wait(t->exec, NULL, -1);
    t->dag = NULL;
    /* from here the last run's outputs are not this run's: a run that
     * stops before it is submitted (a planning error, a cancel) must not
     * leave them readable as if they were; and a read of them on another
     * thread is told that this thread's run is why (ST_ERR_BUSY) */
    t->plan = 0;
    t->runner = pthread_self();
    /* the previous run's failure was reported by its own wait; its
     * profile is formatted now, before planning can evict its plans */
    if (s->prof) st_profile_run_end(s->prof, t->exec, r == ST_OK);
    pthread_mutex_unlock(&t->mu);
    if (s->prof) st_profile_run_begin(s->prof);
    s->n_stages = 0;
    s->loop_depth = 0;
    s->loop_note[0] = 0;
    r = run_chain(s, s->model, s->bound, false, NULL);
    for (int i = 0; i < s->n_cache; i++) s->cache[i].pin = 0;
    if (r != ST_OK && s->prof) st_profile_run_failed(s->prof); /* a failed run is left out of the trace */
    return r;
}

/* Plans and submits the stages of model m on inputs bound (the caller
 * waited for the last run).  A staged plan runs stage by stage: each
 * waits for the one before, whose results on the host are the next one's
 * inputs (plan/stage.c); a loop stage's Loop runs one iteration at a time
 * in between (session/loop.c).  The last stage is only submitted, unless
 * wait; *last (when asked) is its plan. */
static st_status run_chain(st_session *s, const st_model *m, bound_input *bound, bool wait, const st_plan **last)
{
    st_tracker *t = s->tracker;
    for (int stage = 0;; stage++) {
        if (stage == ST_MAX_STAGES)
            return st_error(ST_ERR_UNSUPPORTED, "the model needs more than %d stages (plans that wait for data the "
                            "model computes, plan/stage.c)", ST_MAX_STAGES);
        st_cached *c;
        ST_TRY(submit_stage(s, m, bound, &c));
        /* heap objects, which stay put when cache entries move */
        const st_plan *p = c->plan;
        st_model *next = c->next;
        bound_input *nb = c->next_bound;
        if (!s->loop_depth && s->n_stages < ST_MAX_STAGES) s->stage_serial[s->n_stages++] = p->serial;
        if (!next && !wait) return ST_OK;
        pthread_mutex_lock(&t->mu);
        st_status r = t->exec->vt->wait(t->exec, NULL, -1);
        pthread_mutex_unlock(&t->mu);
        ST_TRY(r);
        if (!next) {
            if (last) *last = p;
            return ST_OK;
        }
        int64_t t0 = s->prof ? st_prof_now() : 0;
        bound_input *loop_out = NULL;
        int n_out = p->loop ? p->loop->n_carried + p->loop->n_scan : 0;
        if (p->loop) {
            loop_out = calloc((size_t)n_out + 1, sizeof *loop_out);
            if (!loop_out) return st_error(ST_ERR_NOMEM, "out of memory running Loop '%s'", p->loop->name);
            s->loop_depth++;
            r = st_loop_run(s, p, loop_out);
            s->loop_depth--;
        }
        if (r == ST_OK) r = stage_inputs(p, next, nb, loop_out);
        st_bound_free(loop_out, n_out);
        ST_TRY(r);
        if (s->prof) st_profile_span(s->prof, "read stage results", t0, st_prof_now());
        m = next;
        bound = nb;
    }
}

st_status st_session_run_model(st_session *s, const st_model *m, bound_input *bound, const st_plan **last)
{
    *last = NULL;
    return run_chain(s, m, bound, true, last);
}

/* Unpins what was pinned after mark (session/loop.c, after an iteration's
 * results are read). */
void st_session_unpin_after(st_session *s, uint64_t mark)
{
    for (int i = 0; i < s->n_cache; i++)
        if (s->cache[i].pin > mark) s->cache[i].pin = 0;
}

uint64_t st_session_pin_mark(const st_session *s) { return s->pins; }

uint64_t st_session_memory_limit(const st_session *s) { return s->opt.memory_limit; }

st_run_ref st_session_run_ref(const st_session *s) { return st_run_current(&s->ctl); }

st_status st_session_loop_device(st_session *s, const st_plan *body, st_exec_loop *l)
{
    st_tracker *t = s->tracker;
    st_exec *e = t->exec;
    if (!e->vt->loop)
        return st_error(ST_ERR_UNSUPPORTED, "Loop '%s' stays on the host: the %s backend has no loops on its device",
                        l->name, s->backend->name);
    if (s->prof)
        return st_error(ST_ERR_UNSUPPORTED, "Loop '%s' stays on the host: a profiled session times each command",
                        l->name);
    const st_dag *d = NULL;
    for (int i = 0; i < s->n_cache && !d; i++)
        if (s->cache[i].plan == body) d = s->cache[i].dag;
    if (!d) return st_error(ST_ERR_INTERNAL, "Loop '%s': the body's plan is not in the session's cache", l->name);
    /* as a run: the arena is the loop's until it is done */
    pthread_mutex_lock(&t->mu);
    st_status r = e->vt->loop(e, d, l);
    pthread_mutex_unlock(&t->mu);
    return r;
}

void st_session_note_loop(st_session *s, const char *note)
{
    if (s->loop_depth == 1) snprintf(s->loop_note, sizeof s->loop_note, "%s", note);
}

/* For inspect: how the last run's (last, outermost) while loop ran, or "". */
const char *st_session_loop_note(const st_session *s) { return s ? s->loop_note : ""; }

/* Poisons the arena (sanitizer), uploads the inputs and submits p's DAG;
 * the caller holds the tracker's lock.  t_bind: when binding began, for
 * the profile. */
static st_status upload_and_submit(st_session *s, st_cached *c, const st_model *m, bound_input *bound, int64_t t_bind)
{
    const st_graph *g = m->g;
    st_tracker *t = s->tracker;
    st_plan *p = c->plan;
    st_status r;
    st_backend *b = s->backend;
    if (s->opt.sanitize) { /* poison: NaN in every float dtype, -1 in integers */
        ST_TRY(b->fill(b, s->arena, 0, 0xff, s->arena->size));
        if (s->host_arena && p->host_arena_bytes)
            ST_TRY(s->host_arena->backend->fill(s->host_arena->backend, s->host_arena, 0, 0xff, s->host_arena->size));
    }
    /* graph inputs, then the tensors that sequence and optional ones hold */
    bound_input **slots;
    int *in_elems;
    int n_slots = input_slots(g, bound, &slots, &in_elems);
    if (n_slots < 0) return st_error(ST_ERR_NOMEM, "out of memory uploading the inputs");
    free(in_elems);
    r = ST_OK;
    for (int i = 0; i < n_slots && r == ST_OK; i++) {
        bound_input *bi = slots[i];
        if (!bi) continue;
        int v = i < g->n_inputs ? g->inputs[i] : p->slot_value[i - g->n_inputs];
        const st_pvalue *pv = &p->values[v];
        if (pv->kind != ST_PV_INPUT || bi->bytes == 0) continue; /* value inputs are constants */
        /* unchanged since the last upload into this arena for this plan,
         * and no other plan ran in the arena since: nothing to copy (the
         * sanitizer's poison overwrote it, though) */
        if (bi->uploaded && bi->up_plan == p->serial && bi->up_arena == s->arena_gen && s->arena_plan == p->serial &&
            !s->opt.sanitize)
            continue;
        bi->uploaded = true;
        bi->up_plan = p->serial;
        bi->up_arena = s->arena_gen;
        if (pv->t.dtype == bi->dtype) {
            r = b->write(b, s->arena, (uint64_t)pv->view.offset, bi->data, bi->bytes);
        } else {
            size_t n = bi->bytes / st_dtype_size(bi->dtype);
            void *tmp = malloc(n * st_dtype_size(pv->t.dtype) + 1);
            if (!tmp) {
                r = st_error(ST_ERR_NOMEM, "out of memory converting input '%s'", p->g->values[v].name);
                break;
            }
            st_convert(pv->t.dtype, tmp, bi->dtype, bi->data, n);
            r = b->write(b, s->arena, (uint64_t)pv->view.offset, tmp, n * st_dtype_size(pv->t.dtype));
            free(tmp);
        }
    }
    s->arena_plan = p->serial;
    free(slots);
    ST_TRY(r);
    st_exec *e = t->exec;
    e->prof = NULL;
    if (!s->prof) return e->vt->submit(e, c->dag);
    ST_TRY(st_profile_stage(s->prof, c->dag, &e->prof));
    int64_t t_sub = st_prof_now();
    st_profile_span(s->prof, "bind and upload inputs", t_bind, t_sub);
    r = e->vt->submit(e, c->dag);
    st_profile_span(s->prof, "submit", t_sub, st_prof_now());
    return r;
}

st_status st_session_run(st_session *s)
{
    if (!s) return st_error(ST_ERR_INVALID_ARG, "st_session_run: NULL session");
    if (!enter(s)) return ST_ERR_BUSY;
    /* a new run: its deadline, then its number, which a cancel from now on takes */
    uint64_t dl = atomic_load(&s->deadline_ns), now = st_run_now_ns();
    atomic_store(&s->ctl.deadline, !dl ? 0 : dl > UINT64_MAX - now ? UINT64_MAX : now + dl);
    atomic_fetch_add(&s->ctl.run, 1);
    st_status r = run_locked(s);
    leave(s);
    return r;
}

st_status st_session_wait(st_session *s)
{
    if (!s) return st_error(ST_ERR_INVALID_ARG, "st_session_wait: NULL session");
    st_tracker *t = s->tracker;
    pthread_mutex_lock(&t->mu);
    st_status r = t->exec->vt->wait(t->exec, NULL, -1);
    pthread_mutex_unlock(&t->mu);
    return r;
}

st_status st_session_profile_write(st_session *s)
{
    if (!s) return st_error(ST_ERR_INVALID_ARG, "st_session_profile_write: NULL session");
    if (!s->prof)
        return st_error(ST_ERR_INVALID_ARG, "st_session_profile_write: the session has no profile "
                        "(st_session_options.profile was NULL when it was created)");
    if (!enter(s)) return ST_ERR_BUSY;
    st_tracker *t = s->tracker;
    pthread_mutex_lock(&t->mu);
    st_status r = t->exec->vt->wait(t->exec, NULL, -1);
    st_profile_run_end(s->prof, t->exec, r == ST_OK);
    pthread_mutex_unlock(&t->mu);
    r = st_profile_write(s->prof);
    leave(s);
    return r;
}

static st_status value_tensor(st_session *s, int v, st_tensor **out)
{
    const st_pvalue *pv = &s->cur->plan->values[v];
    if (pv->kind == ST_PV_STRUCT) {
        const st_node *l = st_sequence_node(s->cur->plan->g, v);
        return st_error(ST_ERR_INVALID_ARG, "'%s' is %s, not a tensor", s->cur->plan->g->values[v].name,
                        l && !strcmp(l->op_type, "Optional") ? "an optional" : "a sequence");
    }
    if (pv->kind == ST_PV_DEAD) /* a staged run's last stage does not read this input */
        return st_error(ST_ERR_INVALID_ARG, "'%s' is not held after the last stage of this run (plan/stage.c)",
                        s->model->g->values[v].name);
    if (pv->kind == ST_PV_CONST) {
        /* a constant output gets its own storage, so it outlives the plan
         * (strings with their characters) */
        st_backend *cpu = st_cpu_backend();
        size_t n = (size_t)st_numel(pv->t.rank, pv->t.dims);
        st_storage *st;
        ST_TRY(cpu->storage_alloc(cpu, st_values_bytes(pv->t.dtype, n, pv->t.data), "constant output", &st));
        st_values_copy(pv->t.dtype, st->host, n, pv->t.data);
        st_view view;
        st_view_init(&view, pv->t.dtype, pv->t.rank, pv->t.dims);
        view.storage = st;
        st_status r = st_tensor_new(&view, pv->model_dtype, NULL, out);
        st_storage_release(st);
        return r;
    }
    ST_TRY(st_tensor_new(&pv->view, pv->model_dtype, s->tracker, out));
    (*out)->plan = s->cur->plan->serial;
    (*out)->owner = pthread_self();
    return ST_OK;
}

static int output_index(const st_session *s, const char *name)
{
    const st_graph *g = s->model->g;
    for (int i = 0; i < g->n_outputs; i++)
        if (strcmp(g->values[g->outputs[i]].name, name) == 0) return g->outputs[i];
    return -1;
}

/* What output v of the last run holds (passes/sequence.c): a sequence's
 * tensors, or one tensor, or nothing (an empty optional).  The caller is
 * inside the session, after a run. */
typedef struct held {
    bool present, seq;
    int n;                    /* a sequence's length */
    const int *elems;         /* its tensors */
    int tensor;               /* or the one tensor */
} held;

static held output_holds(const st_session *s, int v)
{
    const st_graph *g = s->cur->plan->g;
    const st_node *l = st_sequence_node(g, v);
    held h = {true, false, 0, NULL, v};
    if (l && !strcmp(l->op_type, "Optional")) {
        h.present = l->n_in > 0 && l->in[0] >= 0;
        if (!h.present) return h;
        h.tensor = l->in[0];
        l = st_sequence_node(g, h.tensor);
    }
    if (l) {
        h.seq = true;
        h.n = l->n_in;
        h.elems = l->in;
    }
    return h;
}

/* Output name of the last run, entering the session: what it holds. */
static st_status output_enter(st_session *s, const char *name, const void *out, const char *fn, held *h)
{
    if (!s || !name || !out) return st_error(ST_ERR_INVALID_ARG, "%s: NULL argument", fn);
    int v = output_index(s, name);
    if (v < 0) return st_error(ST_ERR_INVALID_ARG, "the model has no output named '%s'", name);
    /* s->cur and its plan change under a run on another thread */
    if (!enter(s)) return ST_ERR_BUSY;
    if (!s->cur) {
        leave(s);
        return st_error(ST_ERR_INVALID_ARG, "%s: no run has been made yet", fn);
    }
    *h = output_holds(s, v);
    return ST_OK;
}

st_status st_session_output(st_session *s, const char *name, st_tensor **out)
{
    if (out) *out = NULL;
    held h;
    ST_TRY(output_enter(s, name, out, "st_session_output", &h));
    st_status r;
    if (!h.present)
        r = st_error(ST_ERR_INVALID_ARG, "output '%s' is an optional that holds no value in this run "
                     "(st_session_output_present tells)", name);
    else if (h.seq)
        r = st_error(ST_ERR_INVALID_ARG, "output '%s' is a sequence of %d tensor%s, not a tensor: read it with "
                     "st_session_output_length and st_session_output_element", name, h.n, h.n == 1 ? "" : "s");
    else
        r = value_tensor(s, h.tensor, out);
    leave(s);
    return r;
}

st_status st_session_output_present(st_session *s, const char *name, int *present)
{
    held h;
    ST_TRY(output_enter(s, name, present, "st_session_output_present", &h));
    *present = h.present;
    leave(s);
    return ST_OK;
}

/* The sequence that output name holds, or why it holds none. */
static st_status output_sequence(const char *name, const held *h)
{
    if (!h->present) return st_error(ST_ERR_INVALID_ARG, "output '%s' is an optional that holds no value in this run", name);
    if (!h->seq)
        return st_error(ST_ERR_INVALID_ARG, "output '%s' is a tensor, not a sequence: read it with st_session_output", name);
    return ST_OK;
}

st_status st_session_output_length(st_session *s, const char *name, int *length)
{
    held h;
    ST_TRY(output_enter(s, name, length, "st_session_output_length", &h));
    st_status r = output_sequence(name, &h);
    if (r == ST_OK) *length = h.n;
    leave(s);
    return r;
}

st_status st_session_output_element(st_session *s, const char *name, int index, st_tensor **out)
{
    if (out) *out = NULL;
    held h;
    ST_TRY(output_enter(s, name, out, "st_session_output_element", &h));
    st_status r = output_sequence(name, &h);
    if (r == ST_OK && (index < 0 || index >= h.n))
        r = st_error(ST_ERR_INVALID_ARG, "output '%s': element %d of a sequence of %d", name, index, h.n);
    if (r == ST_OK) r = value_tensor(s, h.elems[index], out);
    leave(s);
    return r;
}

st_status st_session_input(st_session *s, const char *name, st_tensor **out)
{
    if (!s || !name || !out) return st_error(ST_ERR_INVALID_ARG, "st_session_input: NULL argument");
    *out = NULL;
    int i = input_index(s, name);
    if (i < 0) return st_error(ST_ERR_INVALID_ARG, "the model has no input named '%s'", name);
    if (!enter(s)) return ST_ERR_BUSY;
    st_status r = s->cur ? value_tensor(s, s->model->g->inputs[i], out)
                         : st_error(ST_ERR_INVALID_ARG, "st_session_input: no run has been made yet");
    leave(s);
    return r;
}

/* No lock and no st_session_enter: a cancel must get through while
 * another thread is inside the session, waiting for the run it stops. */
st_status st_session_cancel(st_session *s)
{
    if (!s) return st_error(ST_ERR_INVALID_ARG, "st_session_cancel: NULL session");
    atomic_store(&s->ctl.cancel, atomic_load(&s->ctl.run));
    return ST_OK;
}

st_status st_session_set_deadline(st_session *s, uint64_t ns)
{
    if (!s) return st_error(ST_ERR_INVALID_ARG, "st_session_set_deadline: NULL session");
    atomic_store(&s->deadline_ns, ns);
    return ST_OK;
}

st_status st_session_set_precision_policy(st_session *s, st_precision_policy policy)
{
    if (!s) return st_error(ST_ERR_INVALID_ARG, "st_session_set_precision_policy: NULL session");
    if (policy != ST_PRECISION_MIXED && policy != ST_PRECISION_STRICT)
        return st_error(ST_ERR_INVALID_ARG, "st_session_set_precision_policy: policy %d is neither mixed (0) nor strict (1)",
                        (int)policy);
    if (!enter(s)) return ST_ERR_BUSY;
    st_status r = ST_OK;
    if (s->plans_built) r = st_error(ST_ERR_INVALID_ARG, "st_session_set_precision_policy: the session has planned a run "
                                     "already; set the policy before the first run");
    else s->target.precision_strict = policy == ST_PRECISION_STRICT;
    leave(s);
    return r;
}

/* For tests: how many commands of the last run may still run (0 once
 * nothing of it is pending; a cancelled run must leave none). */
int st_session_pending(st_session *s)
{
    if (!s) return 0;
    st_tracker *t = s->tracker;
    pthread_mutex_lock(&t->mu);
    int n = t->exec->vt->pending ? t->exec->vt->pending(t->exec) : 0;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* For tests: how many plans this session has built. */
uint64_t st_session_plans_built(const st_session *s) { return s ? s->plans_built : 0; }

/* For tools and tests that inspect the plan of the last run and its DAG. */
const st_plan *st_session_plan(const st_session *s) { return s && s->cur ? s->cur->plan : NULL; }
const st_dag *st_session_dag(const st_session *s) { return s && s->cur ? s->cur->dag : NULL; }

/* The plan and DAG of stage k of the last run (0 first; a run that was not
 * staged has one stage), or false. */
bool st_session_stage(const st_session *s, int k, const st_plan **plan, const st_dag **dag)
{
    if (!s || k < 0 || k >= s->n_stages) return false;
    for (int i = 0; i < s->n_cache; i++)
        if (s->cache[i].plan->serial == s->stage_serial[k]) {
            *plan = s->cache[i].plan;
            *dag = s->cache[i].dag;
            return true;
        }
    return false;
}
