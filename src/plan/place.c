/*
 * place.c — which device runs each node, with which kernel, and the final
 * layout that goes with it.
 *
 * Owns: nodes[].device and .kernel, and the order in which layout passes
 * run (st_plan_layout).  Each node that runs goes to the session's backend
 * when that backend's kernel table takes it, else to the CPU (the "host"),
 * unless the session is strict: then a refused node is an error that names
 * it and says why.  A table is asked with the node's real dtypes, ranks,
 * strides, attributes and constant inputs (ops/kernel.h), so the layout
 * must exist first, and the layout depends on placement in turn: a
 * producer writes into its Concat's output only when both run on the same
 * device (passes/concat.c).  So:
 *   1. lay the plan out without concat placement, ask the tables;
 *   2. undo that layout, place concats device by device, lay out again;
 *   3. ask again with the final strides.  A node that now refuses (a
 *      kernel that cannot write a strided slot) turns concat placement
 *      off and the plan is laid out once more; a node that refuses even
 *      then moves to the host, and placement starts over.
 * Folding (passes/specialize.c) ran every constant node on the host
 * already; only nodes that run as commands are placed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/model.h"
#include "plan/plan.h"

/* Nodes that may run: commands, and view ops that a later layout may turn
 * back into copies. */
static bool placed_node(const st_plan *p, int i)
{
    return p->nodes[i].kind == ST_PN_EXEC || p->nodes[i].kind == ST_PN_VIEW;
}

void st_plan_knode(const st_plan *p, int i, int device, st_view *views, const void **data, st_knode *out)
{
    const st_node *n = &p->g->nodes[i];
    int n_in;
    const int *in = st_plan_in(p, n, i, &n_in);
    for (int k = 0; k < n_in + n->n_out; k++) {
        int v = k < n_in ? in[k] : st_plan_out(p, n, i, k - n_in);
        memset(&views[k], 0, sizeof views[k]);
        views[k].rank = -1;
        if (k < n_in) data[k] = NULL;
        if (v < 0) continue;
        const st_pvalue *pv = &p->values[v];
        if (pv->resolved) views[k] = pv->view;
        else st_view_init(&views[k], pv->t.dtype, pv->t.rank, pv->t.dims);
        views[k].storage = NULL;
        if (k < n_in && pv->kind == ST_PV_CONST) data[k] = pv->t.data;
    }
    out->node = n;
    out->op = st_plan_op(p, n, i);
    out->state = p->nodes[i].state;
    out->n_in = n_in;
    out->n_out = n->n_out;
    out->views = views;
    out->data = data;
    out->skip = p->nodes[i].skip;
    out->device = device == ST_DEV_MAIN ? p->target.main_device : p->target.host_device;
}

int st_plan_value_device(const st_plan *p, int v)
{
    for (int depth = 0; v >= 0 && depth <= p->n_values; depth++) {
        const st_pvalue *pv = &p->values[v];
        switch (pv->kind) {
        case ST_PV_CONST: return -1;
        case ST_PV_INPUT: return ST_DEV_MAIN;
        case ST_PV_ROOT:
            /* a shared plan's host nodes write main's memory in place */
            if (p->target.shared) return ST_DEV_MAIN;
            return pv->producer >= 0 ? p->nodes[pv->producer].device : ST_DEV_MAIN;
        case ST_PV_VIEW: v = pv->base; break;
        default: return pv->producer >= 0 ? p->nodes[pv->producer].device : ST_DEV_MAIN;
        }
    }
    return ST_DEV_MAIN;
}

/* Whether STRATA_FORCE_CPU (a comma-separated list of op types) names
 * op: a test's way to keep a mixed plan mixed as the GPU tables grow
 * (tests/models' mixed cases list the ops they route to the CPU). */
static bool forced_to_cpu(const char *op)
{
    const char *list = getenv("STRATA_FORCE_CPU");
    size_t n = strlen(op);
    for (const char *q = list; q && *q;) {
        const char *e = strchr(q, ',');
        size_t k = e ? (size_t)(e - q) : strlen(q);
        if (k == n && !strncmp(q, op, n)) return true;
        q = e ? e + 1 : NULL;
    }
    return false;
}

/* The kernel for node i on device d, or NULL with why filled. */
static const st_kernel *ask(const st_plan *p, int i, int d, char *why, size_t len)
{
    const st_node *n = &p->g->nodes[i];
    if (d == ST_DEV_MAIN && p->target.mixed && forced_to_cpu(st_plan_op(p, n, i)->name)) {
        snprintf(why, len, "STRATA_FORCE_CPU names %s", st_plan_op(p, n, i)->name);
        return NULL;
    }
    int n_in;
    st_plan_in(p, n, i, &n_in);
    int nio = n_in + n->n_out;
    st_view views[nio > 0 ? nio : 1];
    const void *data[n_in > 0 ? n_in : 1];
    st_knode kn;
    st_plan_knode(p, i, d, views, data, &kn);
    return st_kernel_find(d == ST_DEV_MAIN ? p->target.main : p->target.host, &kn, why, len);
}

/* Places node i: main if its table takes it, else the host. */
static st_status place_node(st_plan *p, int i, bool main_ok)
{
    const st_node *n = &p->g->nodes[i];
    st_pnode *pn = &p->nodes[i];
    char why[320] = "", why_host[320] = "";
    if (main_ok) {
        pn->kernel = ask(p, i, ST_DEV_MAIN, why, sizeof why);
        if (pn->kernel) {
            pn->device = ST_DEV_MAIN;
            return ST_OK;
        }
    }
    const char *op = st_plan_op(p, n, i)->name;
    if (!p->target.mixed)
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): %s", n->name, op, why);
    if (p->target.strict)
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s) cannot run on backend '%s' and fallback to the CPU is off: %s",
                        n->name, op, p->target.main->backend, why[0] ? why : "its kernel refuses it once laid out");
    pn->kernel = ask(p, i, ST_DEV_HOST, why_host, sizeof why_host);
    if (!pn->kernel)
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): %s; %s", n->name, op, why[0] ? why : "refused", why_host);
    pn->device = ST_DEV_HOST;
    return ST_OK;
}

/* Asks again with the layout as it stands; the first node whose kernel no
 * longer takes it, or -1. */
static int first_refusal(st_plan *p)
{
    char why[320];
    for (int i = 0; i < p->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_EXEC) continue;
        const st_kernel *k = ask(p, i, p->nodes[i].device, why, sizeof why);
        if (!k) return i;
        p->nodes[i].kernel = k; /* the same entry, or an earlier one that takes the final strides */
    }
    return -1;
}

st_status st_plan_place(st_plan *p)
{
    bool *forced = calloc((size_t)p->n_nodes + 1, sizeof *forced);
    if (!forced) return st_error(ST_ERR_NOMEM, "out of memory placing nodes");
    st_status s = ST_OK;
    bool concats = true;
    /* each round either ends or forces one more node to the host, or turns
     * concat placement off: at most n_nodes + 1 rounds */
    for (int round = 0; round <= p->n_nodes + 1 && s == ST_OK; round++) {
        p->target.passes->layout_reset(p);
        s = p->target.passes->layout(p);
        for (int i = 0; i < p->n_nodes && s == ST_OK; i++)
            if (placed_node(p, i)) s = place_node(p, i, !forced[i]);
        if (s != ST_OK) break;
        p->target.passes->layout_reset(p);
        if (concats) p->target.passes->place_concats(p);
        s = p->target.passes->layout(p);
        if (s != ST_OK) break;
        int bad = first_refusal(p);
        if (bad < 0) break;
        if (concats) {
            concats = false;
            continue;
        }
        if (!p->target.mixed || p->target.strict || p->nodes[bad].device == ST_DEV_HOST) {
            char why[320];
            ask(p, bad, p->nodes[bad].device, why, sizeof why);
            s = st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): %s", p->g->nodes[bad].name,
                         st_plan_op(p, &p->g->nodes[bad], bad)->name, why);
            break;
        }
        forced[bad] = true;
        concats = true;
    }
    free(forced);
    return s;
}

st_status st_plan_prepare(st_plan *p)
{
    for (int i = 0; i < p->n_nodes; i++) {
        st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_EXEC || !pn->kernel || !pn->kernel->prepare) continue;
        const st_node *n = &p->g->nodes[i];
        int n_in;
        st_plan_in(p, n, i, &n_in);
        int nio = n_in + n->n_out;
        st_view views[nio > 0 ? nio : 1];
        const void *data[n_in > 0 ? n_in : 1];
        st_knode kn;
        st_plan_knode(p, i, pn->device, views, data, &kn);
        st_status s = pn->kernel->prepare(&kn, &pn->priv);
        if (s != ST_OK) return st_error_prefix(s, "node '%s' (%s): ", n->name, kn.op->name);
        pn->prepared = true;
    }
    return ST_OK;
}
