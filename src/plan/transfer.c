/*
 * transfer.c — the copies a mixed plan makes between devices.
 *
 * Owns: plan->transfers.  A node on one device that reads a value whose
 * bytes lie on the other (st_plan_value_device) reads a copy of them
 * there instead: one transfer per (value, device), made just before the
 * first node that needs it and kept until the last one has read it.  So
 * a run of consecutive host nodes shares one copy in for what they take
 * from the device and one copy out for what a device node takes back, and
 * what they make and read among themselves never leaves the host.
 * Constants need no transfer: a host node reads a constant where it lies
 * in host memory (values[].host_view, plan/plan.c).  A shared plan
 * (st_plan_target.shared: main's memory is the host's, mapped without a
 * copy) needs none at all: its values all live on main, and the executor
 * maps the ranges a host node touches around its kernel.
 *
 * The copy keeps the value's layout over its own bytes: the view's extent
 * [lo, hi) is copied as it is (a strided view brings the gaps along, which
 * no reader looks at), so the copy's view is the value's view moved to
 * the copy's buffer.  Its buffer is placed with the others
 * (plan/plan.c), and the transfer is a command with a footprint on both
 * storages (runtime/dag.c): the DAG orders it after the writers of the bytes
 * it reads and before the readers of the bytes it writes, like any other
 * command, and the sanitizer checks it the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/model.h"
#include "plan/plan.h"

static const char *device_name(const st_plan *p, int d)
{
    return d == ST_DEV_MAIN ? p->target.main->backend : p->target.host->backend;
}

const st_transfer *st_plan_transfer_of(const st_plan *p, int v, int d)
{
    for (int t = 0; t < p->n_transfers; t++)
        if (p->transfers[t].value == v && p->transfers[t].to == d) return &p->transfers[t];
    return NULL;
}

st_status st_plan_transfers(st_plan *p)
{
    const st_graph *g = p->g;
    /* a shared plan's host nodes map main's bytes in place: nothing to copy */
    if (!p->target.mixed || p->target.shared) return ST_OK;
    int cap = 0;
    for (int i = 0; i < p->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_EXEC) continue;
        int n_in;
        st_plan_in(p, &g->nodes[i], i, &n_in);
        cap += n_in;
    }
    p->transfers = calloc((size_t)cap + 1, sizeof *p->transfers);
    if (!p->transfers) return st_error(ST_ERR_NOMEM, "out of memory planning transfers");
    for (int i = 0; i < p->n_nodes; i++) {
        const st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_EXEC) continue;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
        for (int k = 0; k < n_in; k++) {
            int v = in[k];
            if (v < 0) continue;
            int home = st_plan_value_device(p, v);
            if (home < 0 || home == pn->device) continue;
            st_transfer *t = (st_transfer *)st_plan_transfer_of(p, v, pn->device);
            if (t) {
                t->last = i;
                continue;
            }
            t = &p->transfers[p->n_transfers++];
            t->value = v;
            t->to = pn->device;
            t->first = t->last = i;
            t->buffer = -1;
            t->cmd = -1;
            /* the copy's layout: the value's, over bytes of its own */
            int64_t lo, hi;
            t->view = p->values[v].view;
            st_view_extent(&t->view, &lo, &hi);
            t->view.offset -= lo;
            t->view.storage = NULL;
            snprintf(t->name, sizeof t->name, "%s@%s", g->values[v].name, device_name(p, t->to));
            t->node.name = t->name;
            t->node.op_type = "Transfer";
            t->node.domain = "strata";
        }
    }
    return ST_OK;
}
