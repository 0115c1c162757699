/* ready.c — readiness of a running DAG's commands (ready.h). */
#include "runtime/ready.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

void st_ready_init(st_ready *r, const st_session_options *o)
{
    memset(r, 0, sizeof *r);
    st_drive_init(&r->drive, o);
    r->sanitize = o->sanitize != 0;
    r->serial = o->serial != 0;
}

void st_ready_free(st_ready *r)
{
    st_drive_free(&r->drive);
    free(r->remaining);
    free(r->state);
    free(r->ready);
    free(r->late);
    free(r->running);
    r->remaining = r->ready = r->late = r->running = NULL;
    r->state = NULL;
    r->cap = 0;
}

st_status st_ready_start(st_ready *r, const st_dag *d, const st_run_ctl *ctl)
{
    if (d->n_cmds > r->cap) {
        int cap = d->n_cmds;
        int *rm = realloc(r->remaining, (size_t)cap * sizeof *rm);
        if (rm) r->remaining = rm;
        unsigned char *st = realloc(r->state, (size_t)cap);
        if (st) r->state = st;
        int *rd = realloc(r->ready, (size_t)cap * sizeof *rd);
        if (rd) r->ready = rd;
        int *lt = realloc(r->late, (size_t)cap * sizeof *lt);
        if (lt) r->late = lt;
        int *rn = realloc(r->running, (size_t)cap * sizeof *rn);
        if (rn) r->running = rn;
        if (!rm || !st || !rd || !lt || !rn) return st_error(ST_ERR_NOMEM, "out of memory starting a run");
        r->cap = cap;
    }
    /* no start order needed: readiness is the order */
    r->drive.dag = d;
    r->drive.run = st_run_current(ctl);
    r->drive.err = ST_OK;
    r->drive.errmsg[0] = 0;
    r->n_ready = r->n_late = r->n_running = r->n_executed = r->n_active = 0;
    for (int c = 0; c < d->n_cmds; c++) {
        r->remaining[c] = d->cmds[c].n_pred;
        r->state[c] = ST_CMD_WAITING;
        if (d->cmds[c].n_pred == 0) {
            r->state[c] = ST_CMD_READY;
            r->ready[r->n_ready++] = c;
        }
    }
    return ST_OK;
}

static void release(st_ready *r, int c)
{
    const st_dag *d = r->drive.dag;
    const st_cmd *cmd = &d->cmds[c];
    r->state[c] = ST_CMD_COMPLETE;
    for (int k = 0; k < cmd->n_succ; k++) {
        int s = d->succs[cmd->succ_first + k];
        if (--r->remaining[s] == 0) {
            r->state[s] = ST_CMD_READY;
            r->ready[r->n_ready++] = s;
        }
    }
}

static void release_late(st_ready *r, int i)
{
    int c = r->late[i];
    r->late[i] = r->late[--r->n_late];
    release(r, c);
}

static bool fp_conflict(const st_dag *d, int a, int b)
{
    const st_cmd *ca = &d->cmds[a], *cb = &d->cmds[b];
    for (int i = ca->fp_first; i < ca->fp_first + ca->n_fp; i++)
        for (int j = cb->fp_first; j < cb->fp_first + cb->n_fp; j++) {
            const st_fp *x = &d->fps[i], *y = &d->fps[j];
            if (x->storage == y->storage && x->lo < y->hi && y->lo < x->hi && (x->write || y->write)) return true;
        }
    return false;
}

bool st_ready_next(st_ready *r, int *task)
{
    const st_dag *d = r->drive.dag;
    st_sched *sched = &r->drive.sched;
    if (!d) return false;
    /* release some late completions at random moments */
    while (r->n_late && (r->n_ready == 0 || st_sched_release_now(sched))) release_late(r, st_sched_below(sched, r->n_late));
    if (r->n_ready == 0 || (r->serial && r->n_active > 0)) return false;
    int pick = st_sched_pick(sched, r->ready, r->n_ready);
    int c = r->ready[pick];
    r->ready[pick] = r->ready[--r->n_ready];
    r->n_active++;
    /* a cancelled run, or one past its deadline, starts nothing more */
    if (r->drive.err == ST_OK) {
        st_status s = st_run_check(&r->drive.run, d->cmds[c].gnode->name, d->cmds[c].op->name);
        if (s != ST_OK) st_drive_fail(&r->drive, s, NULL);
    }
    /* after a failure the rest of the run is skipped, but still retired in
     * DAG order so waiters wake */
    r->state[c] = r->drive.err == ST_OK ? ST_CMD_RUNNING : ST_CMD_SKIPPED;
    if (r->sanitize) {
        for (int i = 0; i < r->n_running; i++)
            if (fp_conflict(d, r->running[i], c) && r->drive.err == ST_OK) {
                r->drive.err = ST_ERR_HAZARD;
                snprintf(r->drive.errmsg, sizeof r->drive.errmsg,
                         "sanitizer: command #%d '%s' started while conflicting command #%d '%s' was running", c,
                         d->cmds[c].gnode->name, r->running[i], d->cmds[r->running[i]].gnode->name);
            }
        r->running[r->n_running++] = c;
    }
    *task = c;
    return true;
}

void st_ready_done(st_ready *r, int c)
{
    r->state[c] = ST_CMD_EXECUTED;
    r->n_executed++;
    r->n_active--;
    if (r->sanitize)
        for (int i = 0; i < r->n_running; i++)
            if (r->running[i] == c) {
                r->running[i] = r->running[--r->n_running];
                break;
            }
    if (st_sched_hold(&r->drive.sched)) r->late[r->n_late++] = c;
    else release(r, c);
    if (r->n_late && r->n_executed == r->drive.dag->n_cmds)
        while (r->n_late) release_late(r, 0);
}
