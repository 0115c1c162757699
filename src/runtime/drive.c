/* drive.c — the DAG driver every executor shares (drive.h). */
#include "runtime/drive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/profile.h"

void st_drive_init(st_drive *dr, const st_session_options *o)
{
    memset(dr, 0, sizeof *dr);
    st_sched_init(&dr->sched, o);
}

void st_drive_free(st_drive *dr)
{
    free(dr->order);
    free(dr->scratch);
    dr->order = dr->scratch = NULL;
    dr->cap = 0;
}

st_status st_drive_order(st_drive *dr, const st_dag *dag)
{
    int n = dag->n_cmds > 0 ? dag->n_cmds : 1;
    if (n > dr->cap) {
        int *o = realloc(dr->order, (size_t)n * sizeof *o);
        if (o) dr->order = o;
        int *s = realloc(dr->scratch, 2 * (size_t)n * sizeof *s);
        if (s) dr->scratch = s;
        if (!o || !s) return st_error(ST_ERR_NOMEM, "out of memory starting a run");
        dr->cap = n;
    }
    dr->dag = dag;
    st_sched_order(&dr->sched, dag, dr->order, dr->scratch);
    return ST_OK;
}

st_status st_drive_start(st_drive *dr, const st_dag *dag, const st_run_ctl *ctl)
{
    dr->run = st_run_current(ctl);
    dr->err = ST_OK;
    dr->errmsg[0] = 0;
    return st_drive_order(dr, dag);
}

void st_drive_fail(st_drive *dr, st_status s, const st_cmd *cmd)
{
    if (dr->err != ST_OK || s == ST_OK) return;
    dr->err = s;
    if (cmd) snprintf(dr->errmsg, sizeof dr->errmsg, "node '%s' (%s): %s", cmd->gnode->name, cmd->op->name, st_last_error());
    else snprintf(dr->errmsg, sizeof dr->errmsg, "%s", st_last_error());
}

st_status st_drive_status(const st_drive *dr)
{
    if (dr->err != ST_OK) st_error(dr->err, "%s", dr->errmsg);
    return dr->err;
}

st_status st_drive_kernel_status(st_status raw)
{
    if (raw == ST_ERR_UNSUPPORTED)
        return st_error_prefix(ST_ERR_INTERNAL, "the kernel refused at run time a node its accepts took: ");
    return raw;
}

st_status st_drive_one(const st_dag *d, int c, const st_drive_ops *ops, void *ctx)
{
    const st_cmd *cmd = &d->cmds[c];
    st_status r = cmd->device == ST_DEV_HOST ? ops->host(ctx, c) : ops->enqueue(ctx, c);
    if (r != ST_OK) st_error_prefix(r, "node '%s' (%s): ", cmd->gnode->name, cmd->op->name);
    return r;
}

st_status st_drive_walk(st_drive *dr, int lo, int hi, bool check, const st_drive_ops *ops, void *ctx, int *done)
{
    const st_dag *d = dr->dag;
    int n = 0;
    st_status r = dr->err;
    for (int i = lo; i < hi && r == ST_OK; i++) {
        int c = dr->order[i];
        const st_cmd *cmd = &d->cmds[c];
        /* a cancelled run, or one past its deadline, queues nothing more */
        if (check && (r = st_run_check(&dr->run, cmd->gnode->name, cmd->op->name)) != ST_OK) {
            st_drive_fail(dr, r, NULL);
            break;
        }
        r = st_drive_one(d, c, ops, ctx);
        if (r != ST_OK) st_drive_fail(dr, r, NULL);
        else n++;
    }
    if (done) *done = n;
    return r;
}

st_status st_drive_host(st_host *h, const st_run_ref *run, st_prof_run *prof, const st_dag *d, int c)
{
    return st_drive_host_at(h, run, prof, d, c, NULL);
}

st_status st_drive_host_at(st_host *h, const st_run_ref *run, st_prof_run *prof, const st_dag *d, int c, void *const *base)
{
    const st_cmd *cmd = &d->cmds[c];
    int64_t t0 = prof ? st_prof_now() : 0;
    /* a cancelled run, or one past its deadline, runs no more host commands */
    st_status r = st_run_check(run, cmd->gnode->name, cmd->op->name);
    if (r == ST_OK) r = st_host_run_at(h, d, c, base);
    if (prof && r == ST_OK) st_prof_mark(prof, c, t0, st_prof_now(), ST_PROF_LANE(ST_LANE_HOST, 0));
    return r;
}
