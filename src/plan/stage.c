/*
 * stage.c — staged plans: a graph that must run part of itself before the
 * rest can be planned.
 *
 * Planning needs some values as data: an If's condition, a Loop's trip
 * count, the boxes NonMaxSuppression keeps (its output's shape), the
 * shape a Reshape is given.  When the graph computes such a value from
 * the data (an If on a score, a trip count from a tensor's contents), no
 * plan for the whole graph exists before a run.  Specialization then
 * stops at the first node that needs it (the cut, passes/specialize.c)
 * and st_plan_split divides the graph there:
 *   - this plan keeps the nodes before the cut; what the rest reads of
 *     their results (and of the graph's inputs) become its outputs, so no
 *     pass fuses them away;
 *   - next_g, a derived graph, keeps the nodes from the cut on; those
 *     results are its inputs, except the ones this plan folded to
 *     constants (shape arithmetic), which it receives as constants.
 * The session (exec/session.c) runs this plan, waits, reads those outputs
 * to the host and plans next_g as a model of its own, whose inputs now
 * hold the data the cut needed: specialization takes them as values
 * (ST_STAGE_VALUE_MAX) and the If folds, the Loop unrolls, the NMS runs
 * at plan time.  next_g may be cut again; every stage runs at least one
 * node, so the chain ends.
 *
 * A stage waits for the one before it (the host reads the data), so a
 * staged run is synchronous up to its last stage, and what crosses a cut
 * goes through the host once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/derive.h"
#include "plan/plan.h"

/* need[v]: whether the nodes from `cut` on (the live ones) read v, or v
 * is a graph output. */
static void needed_after(const st_graph *g, int cut, bool *need)
{
    for (int i = 0; i < g->n_outputs; i++) need[g->outputs[i]] = true;
    for (int i = g->n_nodes - 1; i >= cut; i--) {
        const st_node *n = &g->nodes[i];
        bool live = false;
        for (int k = 0; k < n->n_out && !live; k++) live = n->out[k] >= 0 && need[n->out[k]];
        if (!live) continue;
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int u = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
            if (u >= 0) need[u] = true;
        }
    }
}

/* Makes value v of b a constant holding what the plan folded it to. */
static st_status make_const(st_graph *b, int v, const st_pvalue *pv)
{
    st_const *c = st_graph_own(b, calloc(1, sizeof *c));
    if (!c) return st_error(ST_ERR_NOMEM, "out of memory splitting the plan");
    c->dtype = pv->t.dtype;
    c->rank = pv->t.rank;
    memcpy(c->dims, pv->t.dims, sizeof c->dims);
    c->bytes = (uint64_t)st_numel(pv->t.rank, pv->t.dims) * st_dtype_size(pv->t.dtype);
    c->data = st_graph_own(b, malloc(c->bytes ? c->bytes : 1));
    if (!c->data) return st_error(ST_ERR_NOMEM, "out of memory splitting the plan");
    if (c->bytes) memcpy(c->data, pv->t.data, c->bytes);
    st_value *bv = &b->values[v];
    bv->init = c;
    bv->is_input = false;
    bv->producer = -1;
    bv->dtype = c->dtype;
    bv->rank = c->rank;
    memcpy(bv->dims, c->dims, sizeof bv->dims);
    return ST_OK;
}

st_status st_plan_split(st_plan *p)
{
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    int cut = p->cut;
    const st_node *cn = &g->nodes[cut];
    snprintf(p->cut_note, sizeof p->cut_note, "node '%s' (%s) needs the data of '%s'; the next stage is planned on "
             "this one's results", cn->name, cn->op_type, g->values[p->cut_value].name);
    /* a sequence or optional is structure, not bytes: the next stage makes
     * the lists, and their tensors cross (passes/sequence.c) */
    cut = st_sequence_defer(g, cut);

    bool *need = calloc((size_t)g->n_values + 1, sizeof *need);
    int *cross = malloc(((size_t)g->n_values + 1) * sizeof *cross);
    int *outs = malloc(((size_t)g->n_values + 1) * sizeof *outs);
    st_graph *b = need && cross && outs ? st_graph_derive(g) : NULL;
    if (!b) {
        free(need);
        free(cross);
        free(outs);
        return st_error(ST_ERR_NOMEM, "out of memory splitting the plan");
    }
    needed_after(g, cut, need);
    st_status s = ST_OK;
    int n_cross = 0;
    for (int v = 0; v < g->n_values && s == ST_OK; v++) {
        const st_value *gv = &g->values[v];
        b->values[v].is_input = false;
        if (!need[v] || gv->init) continue;
        bool early = gv->is_input || (gv->producer >= 0 && gv->producer < cut);
        if (!early) continue;
        const st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_CONST) {
            s = make_const(b, v, pv);
            continue;
        }
        if (pv->kind == ST_PV_STRUCT || st_sequence_node(g, v)) {
            s = st_error(ST_ERR_UNSUPPORTED, "the sequence or optional '%s' would cross a stage of the plan as bytes",
                         gv->name);
            continue;
        }
        /* computed before the cut, or a graph input the rest reads: an
         * input of the next stage, of the type and shape it has here */
        st_value *bv = &b->values[v];
        bv->is_input = true;
        bv->is_output = gv->is_output;
        bv->producer = -1;
        bv->dtype = pv->model_dtype;
        bv->rank = pv->t.rank;
        memcpy(bv->dims, pv->t.dims, sizeof bv->dims);
        memset(bv->dim_names, 0, sizeof bv->dim_names);
        cross[n_cross++] = v;
    }
    free(need);
    if (s != ST_OK) {
        free(cross);
        free(outs);
        st_graph_free(b);
        return s;
    }
    /* the next stage: nodes from the cut on, fed by what crosses */
    free(b->inputs);
    b->inputs = cross;
    b->n_inputs = n_cross;
    st_graph_drop_front(b, cut);
    /* this one: the nodes before the cut, whose outputs are what crosses */
    for (int i = 0; i < g->n_outputs; i++) g->values[g->outputs[i]].is_output = false;
    memcpy(outs, cross, (size_t)n_cross * sizeof *outs);
    for (int i = 0; i < n_cross; i++) g->values[outs[i]].is_output = true;
    free(g->outputs);
    g->outputs = outs;
    g->n_outputs = n_cross;
    st_graph_drop_back(g, cut);
    p->next_g = b;
    return ST_OK;
}
