/*
 * profile.c — the trace buffer and its Chrome-trace JSON writer (profile.h).
 *
 * A run's events are formatted when the run is complete, while its DAGs
 * (and the plans whose names and storages they point at) are still
 * cached; the trace then holds text only, so a plan evicted later costs
 * it nothing.  What the JSON holds, per run:
 *   - one complete slice ("ph": "X") per command that ran: the node's
 *     name, its op, device, command number, stage, the bytes it reads and
 *     writes and their ranges (storage label, [lo..hi)) from its
 *     footprints, and the predecessor that finished last (the edge the
 *     command waited for) with the hazard that made that edge;
 *   - per DAG edge between two commands that ran, a flow ("s" bound to
 *     the producer's slice, "f" with "bp": "e" bound to the consumer's),
 *     named after the hazard (RAW, WAR, WAW);
 *   - the session thread's own work (plan, bind and upload, submit, stage
 *     results), and one slice for the whole run on a "runs" thread;
 *   - a CPU worker's time on loop chunks of a command another worker runs
 *     (category "help", args.helps_command), so a worker that looks idle
 *     between its own commands shows what it did;
 *   - in "otherData", each run's wall span, so a reader can check what the
 *     slices account for.
 * Threads are lanes (profile.h).  Slices on one thread must not overlap
 * for a viewer to draw them; commands of one OpenCL out-of-order queue
 * can, so such a lane is split into "overlap" sub-threads, first fit.
 */
#include "runtime/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/backend.h"
#include "core/status.h"
#include "runtime/dag.h"

#define SUBLANES 16           /* overlap sub-threads per lane */
#define PID_HOST 1
#define PID_DEVICE 2

int64_t st_prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- a growing text buffer ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static bool sb_room(sbuf *b, size_t more)
{
    if (b->oom) return false;
    if (b->n + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + more + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void sb_printf(sbuf *b, const char *fmt, ...) ST_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sb_room(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (!sb_room(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* The length of the valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* s as a JSON string.  Names come from the model file, so anything that
 * is not valid UTF-8 becomes U+FFFD rather than making the JSON invalid. */
static void sb_json(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *u = (const unsigned char *)s; *u;) {
        if (*u == '"' || *u == '\\') {
            char e[2] = {'\\', (char)*u++};
            sb_put(b, e, 2);
        } else if (*u < 0x20) {
            sb_printf(b, "\\u%04x", *u++);
        } else if (*u < 0x80) {
            sb_put(b, (const char *)u++, 1);
        } else {
            int n = utf8_len(u);
            if (n) sb_put(b, (const char *)u, (size_t)n);
            else sb_put(b, "\\ufffd", 6);
            u += n ? n : 1;
        }
    }
    sb_put(b, "\"", 1);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void sb_us(sbuf *b, int64_t ns)
{
    if (ns < 0) {
        sb_put(b, "-", 1);
        ns = -ns;
    }
    sb_printf(b, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

/* ---- the profile ---- */

typedef struct stage_rec {
    const st_dag *dag;
    st_prof_run run;
    int cap;
} stage_rec;

typedef struct span_rec {
    const char *what;
    int64_t t0, t1;
} span_rec;

struct st_profile {
    char *path;
    const char *device;
    sbuf events;              /* formatted events, each after ",\n" */
    sbuf runs;                /* the runs' entries of otherData */
    int n_runs;
    long n_slices, n_flows;
    long next_flow;
    bool have_origin;
    int64_t origin;           /* the first run's start: ts 0 */
    int *tids;                /* threads used, for their names */
    int n_tids, cap_tids;
    /* the run in flight */
    bool in_run, failed;
    int64_t run_begin;
    stage_rec *stages;
    int n_stages, cap_stages;
    span_rec *spans;
    int n_spans, cap_spans;
    /* a failure collecting a run, reported by the next write */
    st_status err;
    char errmsg[512];
};

static int lane_kind(int lane) { return lane / 4096; }
static int lane_index(int lane) { return lane % 4096; }

static int pid_of(int lane)
{
    int k = lane_kind(lane);
    return k == ST_LANE_STREAM || k == ST_LANE_QUEUE || k == ST_LANE_TRANSFER ? PID_DEVICE : PID_HOST;
}

static void note_tid(st_profile *p, int tid)
{
    for (int i = 0; i < p->n_tids; i++)
        if (p->tids[i] == tid) return;
    if (p->n_tids == p->cap_tids) {
        int cap = p->cap_tids ? 2 * p->cap_tids : 32;
        int *t = realloc(p->tids, (size_t)cap * sizeof *t);
        if (!t) {
            p->events.oom = true;
            return;
        }
        p->tids = t;
        p->cap_tids = cap;
    }
    p->tids[p->n_tids++] = tid;
}

const char *st_profile_path(const st_profile *p) { return p->path; }

st_status st_profile_create(const char *path, const char *device, st_profile **out)
{
    *out = NULL;
    if (!path || !*path) return st_error(ST_ERR_IO, "profile: the path is empty");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return st_error(ST_ERR_IO, "profile '%s': is a directory", path);
    /* the file is made beside the path and renamed to it (st_profile_write),
     * so its directory must exist and take new files */
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &sb) != 0)
        return st_error(ST_ERR_IO, "profile '%s': directory '%s' does not exist", path, dir);
    if (!S_ISDIR(sb.st_mode)) return st_error(ST_ERR_IO, "profile '%s': '%s' is not a directory", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return st_error(ST_ERR_IO, "profile '%s': directory '%s' is not writable (%s)", path, dir, strerror(errno));
    st_profile *p = calloc(1, sizeof *p);
    char *copy = strdup(path);
    if (!p || !copy) {
        free(p);
        free(copy);
        return st_error(ST_ERR_NOMEM, "out of memory starting a profile");
    }
    p->path = copy;
    p->device = device;
    *out = p;
    return ST_OK;
}

void st_prof_add_help(st_prof_run *r, int cmd, int lane, int64_t t0, int64_t t1)
{
    if (cmd < 0 || cmd >= r->n) return;
    if (r->n_help == r->cap_help) {
        int cap = r->cap_help ? 2 * r->cap_help : 256;
        st_prof_help *h = realloc(r->help, (size_t)cap * sizeof *h);
        if (!h) return;
        r->help = h;
        r->cap_help = cap;
    }
    r->help[r->n_help++] = (st_prof_help){cmd, lane, t0, t1};
}

static void reset_trace(st_profile *p)
{
    p->events.n = p->runs.n = 0;
    p->events.oom = p->runs.oom = false;
    p->n_runs = 0;
    p->n_slices = p->n_flows = 0;
    p->have_origin = false;
    p->n_tids = 0;
}

void st_profile_free(st_profile *p)
{
    if (!p) return;
    for (int k = 0; k < p->cap_stages; k++) {
        free(p->stages[k].run.t0);
        free(p->stages[k].run.t1);
        free(p->stages[k].run.lane);
        free(p->stages[k].run.help);
    }
    free(p->stages);
    free(p->spans);
    free(p->tids);
    free(p->events.p);
    free(p->runs.p);
    free(p->path);
    free(p);
}

void st_profile_run_begin(st_profile *p)
{
    p->in_run = true;
    p->failed = false;
    p->n_stages = p->n_spans = 0;
    p->run_begin = st_prof_now();
}

st_status st_profile_stage(st_profile *p, const st_dag *dag, st_prof_run **out)
{
    if (p->n_stages == p->cap_stages) {
        int cap = p->cap_stages ? 2 * p->cap_stages : 4;
        stage_rec *s = realloc(p->stages, (size_t)cap * sizeof *s);
        if (!s) return st_error(ST_ERR_NOMEM, "out of memory profiling a run");
        memset(s + p->cap_stages, 0, (size_t)(cap - p->cap_stages) * sizeof *s);
        p->stages = s;
        p->cap_stages = cap;
    }
    stage_rec *sr = &p->stages[p->n_stages];
    int n = dag->n_cmds > 0 ? dag->n_cmds : 1;
    if (n > sr->cap) {
        int64_t *t0 = realloc(sr->run.t0, (size_t)n * sizeof *t0);
        if (t0) sr->run.t0 = t0;
        int64_t *t1 = realloc(sr->run.t1, (size_t)n * sizeof *t1);
        if (t1) sr->run.t1 = t1;
        int *lane = realloc(sr->run.lane, (size_t)n * sizeof *lane);
        if (lane) sr->run.lane = lane;
        if (!t0 || !t1 || !lane) return st_error(ST_ERR_NOMEM, "out of memory profiling a run");
        sr->cap = n;
    }
    sr->dag = dag;
    sr->run.n = dag->n_cmds;
    sr->run.sync_error_ns = 0;
    sr->run.n_help = 0;
    for (int c = 0; c < dag->n_cmds; c++) sr->run.t1[c] = -1;
    p->n_stages++;
    *out = &sr->run;
    return ST_OK;
}

void st_profile_span(st_profile *p, const char *what, int64_t t0, int64_t t1)
{
    if (!p->in_run) return;
    if (p->n_spans == p->cap_spans) {
        int cap = p->cap_spans ? 2 * p->cap_spans : 16;
        span_rec *s = realloc(p->spans, (size_t)cap * sizeof *s);
        if (!s) return; /* a span less; the run's commands are all there */
        p->spans = s;
        p->cap_spans = cap;
    }
    p->spans[p->n_spans++] = (span_rec){what, t0, t1};
}

void st_profile_run_failed(st_profile *p) { p->failed = true; }

/* ---- formatting a run ---- */

static const char *storage_label(const st_dag *d, int s)
{
    return s >= 0 && s < d->n_storages && d->storages[s] ? d->storages[s]->label : "?";
}

static void put_range(sbuf *b, const st_dag *d, int storage, int64_t lo, int64_t hi)
{
    char r[128];
    snprintf(r, sizeof r, "%s[%lld..%lld)", storage_label(d, storage), (long long)lo, (long long)hi);
    sb_json(b, r);
}

static int64_t end_of(const st_prof_run *r, int c)
{
    return r->t1[c] > r->t0[c] ? r->t1[c] : r->t0[c] + 1; /* a viewer needs dur > 0 to bind flows */
}

typedef struct by_start {
    int64_t t0;
    int c;
} by_start;

static int cmp_start(const void *a, const void *b)
{
    const by_start *x = a, *y = b;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return x->c - y->c;
}

/* tid[c] for every command that ran: its lane's thread, or an overlap
 * sub-thread of it where it overlaps an earlier command of that lane. */
static bool assign_tids(const st_prof_run *r, int *tid)
{
    by_start *order = malloc(((size_t)r->n + 1) * sizeof *order);
    int *lanes = malloc(((size_t)r->n + 1) * sizeof *lanes);
    int64_t (*ends)[SUBLANES] = malloc(((size_t)r->n + 1) * sizeof *ends);
    if (!order || !lanes || !ends) {
        free(order);
        free(lanes);
        free(ends);
        return false;
    }
    int n = 0, n_lanes = 0;
    for (int c = 0; c < r->n; c++)
        if (r->t1[c] >= 0) order[n++] = (by_start){r->t0[c], c};
    qsort(order, (size_t)n, sizeof *order, cmp_start);
    for (int i = 0; i < n; i++) {
        int c = order[i].c, l = 0;
        while (l < n_lanes && lanes[l] != r->lane[c]) l++;
        if (l == n_lanes) {
            lanes[n_lanes++] = r->lane[c];
            for (int s = 0; s < SUBLANES; s++) ends[l][s] = INT64_MIN;
        }
        int sub = 0;
        while (sub < SUBLANES - 1 && ends[l][sub] > r->t0[c]) sub++;
        ends[l][sub] = end_of(r, c);
        tid[c] = r->lane[c] * SUBLANES + sub;
    }
    free(order);
    free(lanes);
    free(ends);
    return true;
}

static void put_event_head(st_profile *p, const char *ph, const char *name, const char *cat, int tid, int64_t ts)
{
    sbuf *b = &p->events;
    sb_printf(b, ",\n{\"ph\":\"%s\",\"name\":", ph);
    sb_json(b, name);
    sb_printf(b, ",\"cat\":");
    sb_json(b, cat);
    sb_printf(b, ",\"pid\":%d,\"tid\":%d,\"ts\":", pid_of(tid / SUBLANES), tid);
    sb_us(b, ts - p->origin);
    note_tid(p, tid);
}

static void format_stage(st_profile *p, int k, const stage_rec *sr, int64_t *run_end, int *timed)
{
    const st_dag *d = sr->dag;
    const st_prof_run *r = &sr->run;
    sbuf *b = &p->events;
    int *tid = malloc(((size_t)r->n + 1) * sizeof *tid);
    if (!tid || !assign_tids(r, tid)) {
        free(tid);
        b->oom = true;
        return;
    }
    for (int c = 0; c < d->n_cmds; c++) {
        if (r->t1[c] < 0) continue;
        const st_cmd *cmd = &d->cmds[c];
        int64_t t0 = r->t0[c], t1 = end_of(r, c);
        if (t1 > *run_end) *run_end = t1;
        (*timed)++;
        put_event_head(p, "X", cmd->gnode->name, cmd->op->name, tid[c], t0);
        sb_printf(b, ",\"dur\":");
        sb_us(b, t1 - t0);
        sb_printf(b, ",\"args\":{\"op\":");
        sb_json(b, cmd->op->name);
        sb_printf(b, ",\"device\":\"%s\"", cmd->device == ST_DEV_HOST ? "cpu" : p->device);
        if (!cmd->run && cmd->n_in + cmd->n_out >= 2)
            sb_printf(b, ",\"copy\":\"%s\"", cmd->views[0].storage && cmd->views[0].storage->dev ? "device to host" : "host to device");
        sb_printf(b, ",\"command\":%d,\"stage\":%d,\"run\":%d", c, k, p->n_runs);
        int64_t rd = 0, wr = 0;
        for (int f = cmd->fp_first; f < cmd->fp_first + cmd->n_fp; f++) {
            if (d->fps[f].write) wr += d->fps[f].hi - d->fps[f].lo;
            else rd += d->fps[f].hi - d->fps[f].lo;
        }
        sb_printf(b, ",\"bytes_read\":%lld,\"bytes_written\":%lld", (long long)rd, (long long)wr);
        for (int w = 0; w < 2; w++) {
            sb_printf(b, ",\"%s\":[", w ? "writes" : "reads");
            bool first = true;
            for (int f = cmd->fp_first; f < cmd->fp_first + cmd->n_fp; f++) {
                if (d->fps[f].write != (w == 1)) continue;
                if (!first) sb_put(b, ",", 1);
                first = false;
                put_range(b, d, d->fps[f].storage, d->fps[f].lo, d->fps[f].hi);
            }
            sb_put(b, "]", 1);
        }
        /* the edge this command waited for: the predecessor that ended last */
        int last = -1;
        for (int e = 0; e < cmd->n_pred; e++) {
            int pr = d->preds[cmd->pred_first + e];
            if (r->t1[pr] >= 0 && (last < 0 || end_of(r, pr) > end_of(r, last))) last = pr;
        }
        sb_printf(b, ",\"predecessors\":%d", cmd->n_pred);
        if (last >= 0) {
            st_fp fp;
            int kinds = st_dag_edge_hazards(d, last, c, &fp);
            sb_printf(b, ",\"waited_for\":");
            sb_json(b, d->cmds[last].gnode->name);
            sb_printf(b, ",\"waited_for_command\":%d", last);
            sb_printf(b, ",\"edge\":\"%s\"", st_dag_hazard_name(kinds));
            if (kinds) {
                sb_printf(b, ",\"edge_bytes\":");
                put_range(b, d, fp.storage, fp.lo, fp.hi);
            }
            sb_printf(b, ",\"start_after_edge_us\":");
            sb_us(b, t0 - end_of(r, last));
        }
        sb_put(b, "}}", 2);
        p->n_slices++;
    }
    /* loop chunks run for another worker's command: on the helper's own
     * thread, between its commands, so never overlapping them */
    for (int i = 0; i < r->n_help; i++) {
        const st_prof_help *h = &r->help[i];
        if (h->t1 <= h->t0 || r->t1[h->cmd] < 0) continue;
        const st_cmd *cmd = &d->cmds[h->cmd];
        put_event_head(p, "X", cmd->gnode->name, "help", h->lane * SUBLANES, h->t0);
        sb_printf(b, ",\"dur\":");
        sb_us(b, h->t1 - h->t0);
        sb_printf(b, ",\"args\":{\"op\":");
        sb_json(b, cmd->op->name);
        sb_printf(b, ",\"helps_command\":%d,\"stage\":%d,\"run\":%d}}", h->cmd, k, p->n_runs);
        if (h->t1 > *run_end) *run_end = h->t1;
        p->n_slices++;
    }
    /* the DAG's edges between commands that ran, as flows bound to the
     * producer's slice (at its last nanosecond) and the consumer's (at
     * its start) */
    for (int c = 0; c < d->n_cmds; c++) {
        if (r->t1[c] < 0) continue;
        const st_cmd *cmd = &d->cmds[c];
        for (int e = 0; e < cmd->n_pred; e++) {
            int pr = d->preds[cmd->pred_first + e];
            if (r->t1[pr] < 0) continue;
            const char *kind = st_dag_hazard_name(st_dag_edge_hazards(d, pr, c, NULL));
            long id = ++p->next_flow;
            put_event_head(p, "s", kind, "dag", tid[pr], end_of(r, pr) - 1);
            sb_printf(b, ",\"id\":%ld}", id);
            put_event_head(p, "f", kind, "dag", tid[c], r->t0[c]);
            sb_printf(b, ",\"bp\":\"e\",\"id\":%ld}", id);
            p->n_flows++;
        }
    }
    free(tid);
}

void st_profile_run_end(st_profile *p, st_exec *e, bool ok)
{
    if (!p->in_run) return;
    p->in_run = false;
    if (!ok || p->failed) return;
    for (int k = 0; k < p->n_stages; k++) {
        if (!e || !e->vt->collect) break;
        st_status r = e->vt->collect(e, p->stages[k].dag, &p->stages[k].run);
        if (r != ST_OK) {
            if (p->err == ST_OK) {
                p->err = r;
                snprintf(p->errmsg, sizeof p->errmsg, "profile: run %d could not be timed: %s", p->n_runs, st_last_error());
            }
            return;
        }
    }
    if (!p->have_origin) {
        p->origin = p->run_begin;
        p->have_origin = true;
    }
    int64_t end = p->run_begin, sync = 0;
    int timed = 0;
    for (int k = 0; k < p->n_stages; k++) {
        format_stage(p, k, &p->stages[k], &end, &timed);
        if (p->stages[k].run.sync_error_ns > sync) sync = p->stages[k].run.sync_error_ns;
    }
    int session = ST_PROF_LANE(ST_LANE_SESSION, 0) * SUBLANES;
    for (int i = 0; i < p->n_spans; i++) {
        const span_rec *s = &p->spans[i];
        int64_t t1 = s->t1 > s->t0 ? s->t1 : s->t0 + 1;
        if (t1 > end) end = t1;
        put_event_head(p, "X", s->what, "session", session, s->t0);
        sb_printf(&p->events, ",\"dur\":");
        sb_us(&p->events, t1 - s->t0);
        sb_printf(&p->events, ",\"args\":{\"run\":%d}}", p->n_runs);
        p->n_slices++;
    }
    char name[32];
    snprintf(name, sizeof name, "run %d", p->n_runs);
    put_event_head(p, "X", name, "run", ST_PROF_LANE(ST_LANE_RUNS, 0) * SUBLANES, p->run_begin);
    sb_printf(&p->events, ",\"dur\":");
    sb_us(&p->events, end - p->run_begin);
    sb_printf(&p->events, ",\"args\":{\"stages\":%d,\"commands\":%d}}", p->n_stages, timed);
    p->n_slices++;
    sb_printf(&p->runs, "%s\n  {\"run\":%d,\"begin_us\":", p->n_runs ? "," : "", p->n_runs);
    sb_us(&p->runs, p->run_begin - p->origin);
    sb_printf(&p->runs, ",\"end_us\":");
    sb_us(&p->runs, end - p->origin);
    sb_printf(&p->runs, ",\"wall_us\":");
    sb_us(&p->runs, end - p->run_begin);
    sb_printf(&p->runs, ",\"stages\":%d,\"commands\":%d,\"stage_commands\":[", p->n_stages, timed);
    for (int k = 0; k < p->n_stages; k++) sb_printf(&p->runs, "%s%d", k ? "," : "", p->stages[k].dag->n_cmds);
    sb_printf(&p->runs, "],\"sync_error_us\":");
    sb_us(&p->runs, sync);
    sb_put(&p->runs, "}", 1);
    p->n_runs++;
}

/* ---- writing ---- */

static void thread_name(char *out, size_t cap, const char *device, int tid)
{
    int lane = tid / SUBLANES, sub = tid % SUBLANES, i = lane_index(lane);
    int n;
    switch (lane_kind(lane)) {
    case ST_LANE_SESSION: n = snprintf(out, cap, "session (plan, upload, submit)"); break;
    case ST_LANE_WORKER: n = snprintf(out, cap, "cpu worker %d", i); break;
    case ST_LANE_STREAM: n = snprintf(out, cap, "cuda stream %d", i); break;
    case ST_LANE_QUEUE: n = snprintf(out, cap, "%s queue %d", device, i); break;
    case ST_LANE_HOST: n = snprintf(out, cap, "host commands (cpu kernels)"); break;
    case ST_LANE_TRANSFER: n = snprintf(out, cap, "%s transfers %d", device, i); break;
    default: n = snprintf(out, cap, "runs"); break;
    }
    if (sub && n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, " (overlap %d)", sub);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static st_status write_all(FILE *f, const st_profile *p, const sbuf *head)
{
    fwrite(head->p, 1, head->n, f);
    if (p->events.n) fwrite(p->events.p, 1, p->events.n, f);
    fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"producer\":\"strata %s\",\"device\":\"%s\","
               "\"clock\":\"CLOCK_MONOTONIC; ts in microseconds from the first run's start\",\"origin_ns\":%lld,"
               "\"runs_count\":%d,\"slices\":%ld,\"flows\":%ld,\"runs\":[",
            st_version(), p->device, (long long)p->origin, p->n_runs, p->n_slices, p->n_flows);
    if (p->runs.n) fwrite(p->runs.p, 1, p->runs.n, f);
    fprintf(f, "\n]}}\n");
    return ferror(f) ? ST_ERR_IO : ST_OK;
}

st_status st_profile_write(st_profile *p)
{
    if (p->err != ST_OK) {
        st_status e = p->err;
        p->err = ST_OK;
        reset_trace(p);
        return st_error(e, "%s", p->errmsg);
    }
    if (p->events.oom || p->runs.oom) {
        reset_trace(p);
        return st_error(ST_ERR_NOMEM, "profile '%s': out of memory holding the trace", p->path);
    }
    /* the metadata events: a name for each process and thread used */
    sbuf head = {0};
    sb_printf(&head, "{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                     "\"args\":{\"name\":\"strata host\"}}",
              PID_HOST);
    qsort(p->tids, (size_t)p->n_tids, sizeof *p->tids, cmp_int);
    bool device = false;
    for (int i = 0; i < p->n_tids; i++) device |= pid_of(p->tids[i] / SUBLANES) == PID_DEVICE;
    if (device)
        sb_printf(&head, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"strata %s device\"}}",
                  PID_DEVICE, p->device);
    for (int i = 0; i < p->n_tids; i++) {
        char name[96];
        thread_name(name, sizeof name, p->device, p->tids[i]);
        sb_printf(&head, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
                  pid_of(p->tids[i] / SUBLANES), p->tids[i]);
        sb_json(&head, name);
        sb_put(&head, "}}", 2);
        sb_printf(&head, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                  pid_of(p->tids[i] / SUBLANES), p->tids[i], p->tids[i]);
    }
    if (head.oom) {
        free(head.p);
        return st_error(ST_ERR_NOMEM, "profile '%s': out of memory writing the trace", p->path);
    }
    /* a new file beside the path (the umask applies), renamed over it once
     * complete: a reader never sees half a trace, and a failure leaves
     * whatever was at the path before */
    char tmp[4200];
    int fd = -1;
    for (int k = 0; k < 100 && fd < 0; k++) {
        snprintf(tmp, sizeof tmp, "%s.%ld.%d.tmp", p->path, (long)getpid(), k);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        free(head.p);
        return st_error(ST_ERR_IO, "profile '%s': cannot create '%s': %s", p->path, tmp, strerror(errno));
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        free(head.p);
        return st_error(ST_ERR_IO, "profile '%s': %s", p->path, strerror(errno));
    }
    errno = 0;
    st_status r = write_all(f, p, &head);
    int saved = errno;
    if (fclose(f) != 0 && r == ST_OK) {
        r = ST_ERR_IO;
        saved = errno;
    }
    free(head.p);
    if (r == ST_OK && rename(tmp, p->path) != 0) {
        r = ST_ERR_IO;
        saved = errno;
    }
    if (r != ST_OK) {
        unlink(tmp);
        return st_error(ST_ERR_IO, "profile '%s': cannot write: %s", p->path, saved ? strerror(saved) : "write error");
    }
    reset_trace(p);
    return ST_OK;
}
