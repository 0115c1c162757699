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
 * The session (session/session.c) runs this plan, waits, reads those outputs
 * to the host and plans next_g as a model of its own, whose inputs now
 * hold the data the cut needed: specialization takes them as values
 * (ST_STAGE_VALUE_MAX) and the If folds, the Loop unrolls, the NMS runs
 * at plan time.  next_g may be cut again; every stage runs at least one
 * node, so the chain ends.
 *
 * A stage waits for the one before it (the host reads the data), so a
 * staged run is synchronous up to its last stage, and what crosses a cut
 * goes through the host once.
 *
 * A Loop whose body computes its own condition (a while loop) cannot be
 * unrolled before it runs, however much is known.  The cut then falls on
 * the Loop itself: this plan runs what comes before it, p->loop describes
 * the Loop for the session, which runs the body as a model of its own one
 * iteration at a time (session/loop.c, each iteration planned like any model
 * and cached by shape), and next_g, the rest after the Loop, takes the
 * Loop's results as inputs.  When work precedes the Loop, the first cut
 * is an ordinary one before it, and the next stage starts with the Loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/derive.h"
#include "graph/model.h"
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

void st_loop_free(st_loop *l)
{
    if (!l) return;
    st_model_release(l->body);
    free((char *)l->name);
    free(l->init);
    free(l->outer);
    free(l->out);
    free(l);
}

static st_status loop_split(st_plan *p);

st_status st_plan_split(st_plan *p)
{
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    int cut = p->cut;
    const st_node *cn = &g->nodes[cut];
    if (p->cut_loop) {
        bool work = false;
        for (int k = 0; k < cut; k++) work |= p->nodes[k].kind == ST_PN_EXEC;
        if (!work) return loop_split(p);
        snprintf(p->cut_note, sizeof p->cut_note, "node '%s' (Loop) computes its condition in its body; it runs one "
                 "iteration at a time after this stage", cn->name);
    } else {
        snprintf(p->cut_note, sizeof p->cut_note, "node '%s' (%s) needs the data of '%s'; the next stage is planned on "
                 "this one's results", cn->name, cn->op_type, g->values[p->cut_value].name);
    }
    /* a sequence or optional is structure, not bytes: the next stage makes
     * the lists, and their tensors cross (passes/sequence.c) */
    cut = p->target.passes->sequence_defer(g, cut);

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
        if (pv->kind == ST_PV_STRUCT || p->target.passes->sequence_node(g, v)) {
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

/* ---- a loop stage ---- */

/* The body of Loop node n as a model: its inputs the iteration number,
 * the condition, the carried values, then the values it reads from
 * outside (outer[], ids of the stage's graph), typed as the plan has them. */
static st_status body_model(const st_plan *p, const st_node *n, const st_graph *b, const int *outer, st_model **out)
{
    st_graph *bg = st_graph_derive(b);
    int *ins = malloc(((size_t)b->n_inputs + (size_t)b->n_outer + 1) * sizeof *ins);
    if (!bg || !ins) {
        st_graph_free(bg);
        free(ins);
        return st_error(ST_ERR_NOMEM, "out of memory planning Loop '%s'", n->name);
    }
    int k = 0;
    for (int i = 0; i < b->n_inputs; i++) ins[k++] = b->inputs[i];
    for (int i = 0; i < b->n_outer; i++) ins[k++] = b->outer[i];
    free(bg->inputs);
    bg->inputs = ins;
    bg->n_inputs = k;
    for (int i = 0; i < k; i++) {
        st_value *v = &bg->values[ins[i]];
        v->is_input = true;
        v->init = NULL;
        v->producer = -1;
        memset(v->dim_names, 0, sizeof v->dim_names);
        if (i >= b->n_inputs) { /* an outer value: what the plan made of it */
            const st_pvalue *pv = &p->values[outer[i - b->n_inputs]];
            v->dtype = pv->model_dtype;
            v->rank = pv->t.rank;
            memcpy(v->dims, pv->t.dims, sizeof v->dims);
        } else if (i < 2) { /* the iteration number and the condition */
            v->dtype = i == 0 ? ST_I64 : ST_BOOL;
            v->rank = 0;
        } else { /* a carried value may change shape between iterations */
            v->dtype = p->values[n->in[i]].model_dtype;
            v->rank = -1;
        }
    }
    bg->outer = bg->outer_src = NULL;
    bg->n_outer = 0;
    bg->depth = 0;
    return st_model_stage(p->model, bg, out);
}

static st_status loop_split(st_plan *p)
{
    st_graph *g = p->own_g;
    int cut = p->cut;
    const st_node *n = &g->nodes[cut];
    const st_graph *b = st_attr_graph(n, "body");
    int n_carried = n->n_in - 2, n_scan = n->n_out - n_carried;
    snprintf(p->cut_note, sizeof p->cut_note, "node '%s' (Loop) computes its condition in its body: the body runs one "
             "iteration at a time, then the next stage is planned on the Loop's results", n->name);
    st_loop *l = calloc(1, sizeof *l);
    bool *need = calloc((size_t)g->n_values + 1, sizeof *need);
    bool *out_of_p = calloc((size_t)g->n_values + 1, sizeof *out_of_p);
    int *cross = malloc(((size_t)g->n_values + 1) * sizeof *cross);
    int *outs = malloc(((size_t)g->n_values + 1) * sizeof *outs);
    st_graph *c = NULL;
    st_status s = ST_OK;
    if (l) {
        l->name = strdup(n->name);
        l->init = malloc(((size_t)n_carried + 1) * sizeof *l->init);
        l->outer = malloc(((size_t)b->n_outer + 1) * sizeof *l->outer);
        l->out = malloc(((size_t)n->n_out + 1) * sizeof *l->out);
    }
    if (!l || !l->name || !l->init || !l->outer || !l->out || !need || !out_of_p || !cross || !outs ||
        !(c = st_graph_derive(g)))
        s = st_error(ST_ERR_NOMEM, "out of memory splitting the plan at Loop '%s'", n->name);
    if (s == ST_OK) {
        l->m = n->in[0];
        l->cond = n->in[1];
        l->n_carried = n_carried;
        l->n_scan = n_scan;
        l->n_outer = b->n_outer;
        for (int j = 0; j < n_carried; j++) l->init[j] = n->in[2 + j];
        for (int j = 0; j < n->n_out; j++) l->out[j] = n->out[j];
        for (int k = 0; k < b->n_outer && s == ST_OK; k++) {
            l->outer[k] = p->target.passes->outer_value(n, b->outer_src[k]);
            if (l->outer[k] < 0)
                s = st_error(ST_ERR_INTERNAL, "Loop '%s': outer value '%s' of the body has no value", n->name,
                             b->values[b->outer[k]].name);
        }
    }
    /* the session carries tensors between iterations (session/loop.c); a
     * sequence's length and its elements' shapes are plan-time structure
     * (passes/sequence.c), which a loop that decides at run time when to
     * stop cannot give each iteration's plan */
    for (int k = 0; k < b->n_inputs + b->n_outputs + b->n_outer && s == ST_OK; k++) {
        int v = k < b->n_inputs ? b->inputs[k]
                : k < b->n_inputs + b->n_outputs ? b->outputs[k - b->n_inputs]
                                                 : b->outer[k - b->n_inputs - b->n_outputs];
        if (b->values[v].kind != ST_KIND_TENSOR)
            s = st_error(ST_ERR_UNSUPPORTED, "Loop '%s' computes its condition in its body (or is too long to unroll) "
                         "and its body's '%s' is a sequence or optional: such a loop runs one iteration at a time, "
                         "which carries tensors only", n->name, b->values[v].name);
    }
    if (s == ST_OK) s = body_model(p, n, b, l->outer, &l->body);
    /* what the rest reads: the Loop's results (the session fills them),
     * constants (handed over as constants) and this plan's values */
    int n_cross = 0, n_outs = 0;
    if (s == ST_OK) {
        needed_after(g, cut + 1, need);
        for (int v = 0; v < g->n_values && s == ST_OK; v++) {
            const st_value *gv = &g->values[v];
            c->values[v].is_input = false;
            if (!need[v] || gv->init) continue;
            bool early = gv->is_input || (gv->producer >= 0 && gv->producer <= cut);
            if (!early) continue;
            const st_pvalue *pv = &p->values[v];
            bool from_loop = gv->producer == cut;
            if (!from_loop && pv->kind == ST_PV_CONST) {
                s = make_const(c, v, pv);
                continue;
            }
            if (!from_loop && (pv->kind == ST_PV_STRUCT || p->target.passes->sequence_node(g, v))) {
                s = st_error(ST_ERR_UNSUPPORTED, "the sequence or optional '%s' would cross Loop '%s' as bytes",
                             gv->name, n->name);
                continue;
            }
            st_value *cv = &c->values[v];
            cv->is_input = true;
            cv->producer = -1;
            memset(cv->dim_names, 0, sizeof cv->dim_names);
            if (from_loop) { /* type known, shape once the loop has run */
                cv->rank = -1;
            } else {
                cv->dtype = pv->model_dtype;
                cv->rank = pv->t.rank;
                memcpy(cv->dims, pv->t.dims, sizeof cv->dims);
                out_of_p[v] = true;
            }
            cross[n_cross++] = v;
        }
        /* what the loop reads, when this plan computes it */
        int reads[3];
        for (int k = 0; k < 2; k++) reads[k] = n->in[k];
        for (int k = 0; k < 2 + n_carried + b->n_outer; k++) {
            int v = k < 2 ? reads[k] : k < 2 + n_carried ? l->init[k - 2] : l->outer[k - 2 - n_carried];
            if (v >= 0 && p->values[v].kind != ST_PV_CONST && !g->values[v].init) out_of_p[v] = true;
        }
        for (int v = 0; v < g->n_values; v++)
            if (out_of_p[v]) outs[n_outs++] = v;
    }
    free(need);
    free(out_of_p);
    if (s != ST_OK) {
        st_loop_free(l);
        st_graph_free(c);
        free(cross);
        free(outs);
        return s;
    }
    free(c->inputs);
    c->inputs = cross;
    c->n_inputs = n_cross;
    st_graph_drop_front(c, cut + 1);
    for (int i = 0; i < g->n_outputs; i++) g->values[g->outputs[i]].is_output = false;
    for (int i = 0; i < n_outs; i++) g->values[outs[i]].is_output = true;
    free(g->outputs);
    g->outputs = outs;
    g->n_outputs = n_outs;
    st_graph_drop_back(g, cut);
    p->next_g = c;
    p->loop = l;
    return ST_OK;
}
