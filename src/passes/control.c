/*
 * control.c — If, Loop and Scan expanded at plan time.
 *
 * Owns: plan->g when it derives it (graph/derive.h), and the rewrite of a
 * control node into the nodes of its body.  Specialization (specialize.c)
 * calls st_control_expand when it reaches a control node; once the node's
 * behaviour is known from what is known at plan time, the node is replaced
 * in the plan's own copy of the graph and specialization starts again:
 *   - If whose condition is a constant (or folds from the input shapes, or
 *     from a small graph input the plan is then keyed on): the chosen
 *     branch's nodes, and an Identity from each branch output to the If's
 *     output, so the branch writes where the If's readers read (a pure
 *     view when the layout allows);
 *   - Loop whose trip count is known and whose condition stays true (no
 *     condition, or the body passes its condition through, or returns a
 *     constant true): one copy of the body per iteration, the loop-carried
 *     values threaded from each copy to the next (the planner then reuses
 *     their bytes, alternating between slots as their lives allow), and
 *     each scan output an Unsqueeze per iteration feeding one Concat, which
 *     concat placement fills in place;
 *   - Scan over a sequence length known from the shapes: the same, each
 *     iteration reading its slice of every scan input through a Gather of
 *     a constant index (a view); opset 8's form with a batch axis runs one
 *     such Scan per batch entry, stacked back along the batch axis;
 *   - SequenceMap over a sequence, whose length a plan knows
 *     (passes/sequence.c): one copy of the body per element, reading the
 *     elements at its position, each output a list of the copies'.
 * Nested control nodes expand in their turn, on the next pass.  A Loop
 * whose body computes its condition (a while loop), or a counted loop
 * whose copies would pass ST_MAX_EXPANDED_NODES, is not expanded:
 * st_control_runtime_loop says so, and the plan is cut there for the
 * session to run the body one iteration at a time (plan/stage.c,
 * session/loop.c).  A condition or trip count computed from the data cuts the
 * plan too, and the next stage is planned with its value known.
 *
 * Names of copied values and nodes are prefixed with the control node's
 * name and the iteration ("Loop_3/2/Add_1"), so messages and `strata
 * inspect --plan` say which copy a node is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/derive.h"
#include "graph/model.h"
#include "passes/passes.h"
#include "plan/plan.h"

/* An expansion may not make the graph larger than this. */
#define ST_MAX_EXPANDED_NODES 200000

bool st_control_op(const st_node *n)
{
    return !n->domain[0] && (!strcmp(n->op_type, "If") || !strcmp(n->op_type, "Loop") || !strcmp(n->op_type, "Scan") ||
                             !strcmp(n->op_type, "SequenceMap"));
}

/* The value id in g that subgraph reference src of node n stands for: n's
 * implicit inputs, mapped through implicit_src when n was copied from a
 * subgraph. */
int st_control_outer_value(const st_node *n, int src)
{
    if (!n->implicit_src) return src;
    for (int k = 0; k < n->n_implicit; k++)
        if (n->implicit_src[k] == src) return n->implicit[k];
    return -1;
}

/* A copy of a body into the plan's graph. */
typedef struct inst {
    st_graph *g;
    const st_graph *b;
    int *map;                 /* body value id -> g value id */
    const char *prefix;       /* "Loop_3/2" */
} inst;

static st_status inst_begin(inst *x, st_graph *g, const st_graph *b, const st_node *owner, const char *prefix)
{
    x->g = g;
    x->b = b;
    x->prefix = prefix;
    x->map = malloc(((size_t)b->n_values + 1) * sizeof *x->map);
    if (!x->map) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", owner->name);
    for (int v = 0; v < b->n_values; v++) x->map[v] = -1;
    for (int k = 0; k < b->n_outer; k++) {
        int v = st_control_outer_value(owner, b->outer_src[k]);
        if (v < 0)
            return st_error(ST_ERR_INTERNAL, "node '%s': subgraph reference '%s' has no value", owner->name,
                            b->values[b->outer[k]].name);
        x->map[b->outer[k]] = v;
    }
    /* the body's constants: values of g that borrow the body's data */
    for (int v = 0; v < b->n_values; v++) {
        if (!b->values[v].init || x->map[v] >= 0) continue;
        char name[320];
        snprintf(name, sizeof name, "%s/%s", prefix, b->values[v].name);
        int nv = st_graph_add_value(g, name);
        if (nv < 0) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", owner->name);
        st_value *d = &g->values[nv];
        const st_value *s = &b->values[v];
        d->init = s->init;
        d->dtype = s->dtype;
        d->rank = s->rank;
        memcpy(d->dims, s->dims, sizeof d->dims);
        x->map[v] = nv;
    }
    return ST_OK;
}

static void inst_end(inst *x) { free(x->map); }

static int *own_ids(st_graph *g, int n)
{
    (void)g;
    return calloc((size_t)n + 1, sizeof(int));
}

/* Copies the body's nodes into g->nodes[at ..); its formal inputs must be
 * mapped already.  Returns the next free slot. */
static st_status inst_nodes(inst *x, int at, int *next)
{
    st_graph *g = x->g;
    const st_graph *b = x->b;
    for (int i = 0; i < b->n_nodes; i++) {
        const st_node *bn = &b->nodes[i];
        st_node *dn = &g->nodes[at + i];
        *dn = *bn;
        dn->name = st_graph_strf(g, "%s/%s", x->prefix, bn->name);
        dn->in = own_ids(g, bn->n_in);
        dn->out = own_ids(g, bn->n_out);
        dn->implicit = own_ids(g, bn->n_implicit);
        dn->implicit_src = own_ids(g, bn->n_implicit);
        if (!dn->name || !dn->in || !dn->out || !dn->implicit || !dn->implicit_src)
            return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x->prefix);
        for (int k = 0; k < bn->n_in; k++) {
            int v = bn->in[k];
            dn->in[k] = v < 0 ? -1 : x->map[v];
            if (v >= 0 && dn->in[k] < 0)
                return st_error(ST_ERR_MODEL, "node '%s': input '%s' of the subgraph has no value", dn->name,
                                b->values[v].name);
        }
        for (int k = 0; k < bn->n_implicit; k++) {
            dn->implicit[k] = x->map[bn->implicit[k]];
            dn->implicit_src[k] = bn->implicit[k];
        }
        for (int k = 0; k < bn->n_out; k++) {
            int v = bn->out[k];
            if (v < 0) {
                dn->out[k] = -1;
                continue;
            }
            char name[320];
            snprintf(name, sizeof name, "%s/%s", x->prefix, b->values[v].name);
            int nv = st_graph_add_value(g, name);
            if (nv < 0) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x->prefix);
            const st_value *s = &b->values[v];
            g->values[nv].dtype = s->dtype;
            g->values[nv].rank = s->rank;
            memcpy(g->values[nv].dims, s->dims, sizeof s->dims);
            x->map[v] = nv;
            dn->out[k] = nv;
        }
    }
    *next = at + b->n_nodes;
    return ST_OK;
}

/* ---- nodes that expansion writes ---- */

/* A node of op name at slot at, with n_in inputs and one output. */
static st_status new_node(st_graph *g, int at, const char *op, const char *name, int opset, const int *in, int n_in,
                          int out, const st_attr *attr)
{
    st_node *n = &g->nodes[at];
    memset(n, 0, sizeof *n);
    n->name = st_graph_strf(g, "%s", name);
    n->op_type = (char *)op;
    n->domain = (char *)"";
    n->opset = opset;
    n->op = st_op_find("", op);
    n->n_in = n_in;
    n->n_out = 1;
    n->in = own_ids(g, n_in);
    n->out = own_ids(g, 1);
    n->implicit = own_ids(g, 0);
    if (!n->name || !n->in || !n->out || !n->implicit || !n->op)
        return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", name);
    memcpy(n->in, in, (size_t)n_in * sizeof *in);
    n->out[0] = out;
    if (attr) {
        st_attr *a = st_graph_own(g, calloc(1, sizeof *a));
        if (!a) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", name);
        *a = *attr;
        n->attrs = a;
        n->n_attrs = 1;
    }
    return ST_OK;
}

static st_attr int_attr(const char *name, int64_t v)
{
    st_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)name;
    a.type = ST_ATTR_INT;
    a.i = v;
    return a;
}

/* Concat of Unsqueeze(slice_k, axis) for k in order (reversed when rev):
 * the stacked scan output, written into value out.  Writes 1 + n nodes
 * from slot at. */
static st_status stack_slices(st_graph *g, int at, const char *prefix, const int *slices, int n, int64_t axis, bool rev,
                              int out, int opset, int *next)
{
    int64_t one = 1;
    int ax = st_graph_add_const(g, "axes", ST_I64, 1, &one, &axis);
    int *parts = malloc(((size_t)n + 1) * sizeof *parts);
    if (ax < 0 || !parts) {
        free(parts);
        return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", prefix);
    }
    st_status s = ST_OK;
    for (int k = 0; k < n && s == ST_OK; k++) {
        char name[320];
        snprintf(name, sizeof name, "%s/stack_%d", prefix, k);
        parts[k] = st_graph_add_value(g, name);
        int src[2] = {slices[rev ? n - 1 - k : k], ax};
        s = parts[k] < 0 ? st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", prefix)
                         : new_node(g, at + k, "Unsqueeze", name, opset > 13 ? opset : 13, src, 2, parts[k], NULL);
    }
    if (s == ST_OK) {
        char name[320];
        snprintf(name, sizeof name, "%s/stack", prefix);
        st_attr a = int_attr("axis", axis);
        s = new_node(g, at + n, "Concat", name, opset, parts, n, out, &a);
    }
    free(parts);
    *next = at + n + 1;
    return s;
}

/* An Identity from src to dst at slot at. */
static st_status alias(st_graph *g, int at, const char *prefix, int src, int dst, int opset)
{
    char name[320];
    snprintf(name, sizeof name, "%s/out_%s", prefix, g->values[dst].name);
    return new_node(g, at, "Identity", name, opset, &src, 1, dst, NULL);
}


/* A constant input's value as an int64 (a scalar or one element), or
 * false when the input is not a known constant. */
static bool const_int(const st_plan *p, int v, int64_t *out)
{
    if (v < 0) return false;
    const st_pvalue *pv = &p->values[v];
    if (pv->kind != ST_PV_CONST || !pv->t.data || st_numel(pv->t.rank, pv->t.dims) != 1) return false;
    *out = st_dtype_is_float(pv->t.dtype) ? (int64_t)st_load_f64(pv->t.dtype, pv->t.data)
                                         : st_load_i64(pv->t.dtype, pv->t.data);
    return true;
}

static st_status too_big(const st_node *n, int64_t iterations, int64_t per)
{
    return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): %lld iterations of a body of %lld nodes would expand the graph to "
                    "more than %d nodes", n->name, n->op_type, (long long)iterations, (long long)per, ST_MAX_EXPANDED_NODES);
}

/* ---- If ---- */

/* The node being expanded as it was, with its implicit (outer-scope)
 * reads and their sources copied into memory the graph owns: the splice
 * frees the node's own arrays, and every instance of the body maps its
 * outer reads through these. */
static st_status owner_of(st_graph *g, const st_node *x, st_node *owner)
{
    int n = x->n_implicit;
    int *impl = st_graph_own(g, malloc(((size_t)n * 2 + 1) * sizeof *impl));
    if (!impl) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x->name);
    for (int k = 0; k < n; k++) {
        impl[k] = x->implicit[k];
        impl[n + k] = x->implicit_src ? x->implicit_src[k] : x->implicit[k];
    }
    *owner = *x;
    owner->implicit = impl;
    owner->implicit_src = impl + n;
    return ST_OK;
}

static st_status expand_if(st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    int64_t cond;
    if (!const_int(p, n->in[0], &cond))
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (If): its condition is computed from the data at run time; strata "
                        "runs an If whose condition is known when the input shapes are (or comes from a small graph input)",
                        n->name);
    const st_graph *b = st_attr_graph(n, cond ? "then_branch" : "else_branch");
    if (!b) return st_error(ST_ERR_MODEL, "node '%s' (If): no %s attribute", n->name, cond ? "then_branch" : "else_branch");
    if (b->n_outputs != n->n_out)
        return st_error(ST_ERR_MODEL, "node '%s' (If): the %s branch has %d outputs, the node %d", n->name,
                        cond ? "then" : "else", b->n_outputs, n->n_out);
    for (int j = 0; j < n->n_out; j++) {
        st_dtype want = n->out[j] >= 0 ? p->g->values[n->out[j]].dtype : ST_UNDEFINED, got = b->values[b->outputs[j]].dtype;
        if (want != ST_UNDEFINED && got != ST_UNDEFINED && want != got)
            return st_error(ST_ERR_MODEL, "node '%s' (If): output %d of the %s branch is %s, the If's output is %s", n->name,
                            j, cond ? "then" : "else", st_dtype_name(got), st_dtype_name(want));
    }
    if ((int64_t)p->g->n_nodes + b->n_nodes + n->n_out > ST_MAX_EXPANDED_NODES)
        return too_big(n, 1, b->n_nodes);
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    /* what the splice frees or moves, saved first */
    st_node x = g->nodes[i];
    int outs[x.n_out > 0 ? x.n_out : 1], n_alias = 0;
    for (int j = 0; j < x.n_out; j++) {
        outs[j] = x.out[j];
        n_alias += x.out[j] >= 0;
    }
    st_node owner;
    ST_TRY(owner_of(g, &x, &owner));
    const char *prefix = st_graph_strf(g, "%s", x.name);
    if (!prefix) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    inst in;
    st_status s = inst_begin(&in, g, b, &owner, prefix);
    if (s == ST_OK && !st_graph_splice(g, i, b->n_nodes + n_alias ? b->n_nodes + n_alias : 1))
        s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", prefix);
    int at = i;
    if (s == ST_OK) s = inst_nodes(&in, at, &at);
    for (int j = 0; j < x.n_out && s == ST_OK; j++) {
        if (outs[j] < 0) continue;
        s = alias(g, at++, prefix, in.map[b->outputs[j]], outs[j], x.opset);
    }
    if (s == ST_OK && at == i) s = st_error(ST_ERR_MODEL, "node '%s' (If): the branch has nothing to do", prefix);
    inst_end(&in);
    st_graph_relink(g);
    return s;
}

/* ---- Loop ---- */

/* Whether the body's condition output stays true whenever its input is:
 * it is the condition input passed through, or a constant true. */
static bool cond_stays_true(const st_graph *b)
{
    if (b->n_outputs < 1) return false;
    int c = b->outputs[0];
    for (int hops = 0; hops < 8; hops++) {
        if (b->n_inputs > 1 && c == b->inputs[1]) return true;
        const st_value *v = &b->values[c];
        if (v->init) {
            const st_const *k = v->init;
            return st_const_numel(k) == 1 && st_load_i64(k->dtype, k->data) != 0;
        }
        if (v->producer < 0) return false;
        const st_node *pn = &b->nodes[v->producer];
        if (strcmp(pn->op_type, "Identity") || pn->n_in != 1 || pn->in[0] < 0) return false;
        c = pn->in[0];
    }
    return false;
}

static st_status expand_loop(st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    const st_graph *b = st_attr_graph(n, "body");
    if (!b) return st_error(ST_ERR_MODEL, "node '%s' (Loop): no body attribute", n->name);
    int n_carried = n->n_in - 2;
    if (n_carried < 0) return st_error(ST_ERR_MODEL, "node '%s' (Loop): needs M and cond inputs (either may be empty)", n->name);
    int n_scan = n->n_out - n_carried;
    if (b->n_inputs != n_carried + 2 || b->n_outputs != n_carried + 1 + n_scan || n_scan < 0)
        return st_error(ST_ERR_MODEL, "node '%s' (Loop): the body has %d inputs and %d outputs; %d loop-carried values "
                        "need %d inputs and %d plus scan outputs", n->name, b->n_inputs, b->n_outputs, n_carried,
                        n_carried + 2, n_carried + 1);
    int64_t trips = -1, cond = 1;
    bool has_m = n->in[0] >= 0, has_cond = n->n_in > 1 && n->in[1] >= 0;
    if (has_m && !const_int(p, n->in[0], &trips))
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Loop): its trip count is computed from the data at run time; "
                        "strata runs a Loop whose trip count is known when the input shapes are", n->name);
    if (has_cond && !const_int(p, n->in[1], &cond))
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Loop): its condition is computed from the data at run time",
                        n->name);
    if (has_m && trips < 0) return st_error(ST_ERR_MODEL, "node '%s' (Loop): trip count %lld is negative", n->name, (long long)trips);
    if (!cond) trips = 0;
    else if (!cond_stays_true(b))
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Loop): the body computes its condition from the data; strata runs "
                        "a Loop whose condition stays true (a counted loop)", n->name);
    else if (!has_m)
        return st_error(ST_ERR_MODEL, "node '%s' (Loop): no trip count and a condition that never turns false: it would "
                        "not end", n->name);
    int64_t per = b->n_nodes + n_scan;
    if (trips > (ST_MAX_EXPANDED_NODES - p->g->n_nodes) / (per > 0 ? per : 1))
        return too_big(n, trips, per);
    /* zero iterations: each scan output is empty, [0, ...] with the
     * shape the body declares for it (the body never runs to say) */
    for (int j = 0; trips == 0 && j < n_scan; j++) {
        const st_value *bo = &b->values[b->outputs[1 + n_carried + j]];
        bool known = bo->dtype != ST_UNDEFINED && bo->rank >= 0 && bo->rank < ST_MAX_RANK;
        for (int d = 0; known && d < bo->rank; d++) known = bo->dims[d] >= 0;
        if (!known)
            return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Loop): zero iterations, and the body does not declare the "
                            "full shape of scan output %d (the body never runs to give it)", n->name, j);
    }
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    st_node x = g->nodes[i];
    int nio = x.n_in + x.n_out;
    int ins[x.n_in > 0 ? x.n_in : 1], outs[x.n_out > 0 ? x.n_out : 1];
    memcpy(ins, x.in, (size_t)x.n_in * sizeof *ins);
    memcpy(outs, x.out, (size_t)x.n_out * sizeof *outs);
    (void)nio;
    st_node owner;
    ST_TRY(owner_of(g, &x, &owner));
    int n_alias = 0;
    for (int j = 0; j < n_carried; j++) n_alias += outs[j] >= 0;
    int n_stack = 0;
    for (int j = 0; j < n_scan; j++) n_stack += outs[n_carried + j] >= 0 ? (int)trips + 1 : 0;
    int64_t total = trips * b->n_nodes + n_alias + n_stack;
    if (!st_graph_splice(g, i, total > 0 ? (int)total : 1)) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    int *carried = malloc(((size_t)n_carried + 1) * sizeof *carried);
    int *slices = malloc(((size_t)n_scan * (size_t)(trips > 0 ? trips : 1) + 1) * sizeof *slices);
    st_status s = carried && slices ? ST_OK : st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    for (int j = 0; j < n_carried && s == ST_OK; j++) carried[j] = ins[2 + j];
    int at = i;
    bool yes = true;
    int t_true = s == ST_OK ? st_graph_add_const(g, "true", ST_BOOL, 0, NULL, &yes) : -1;
    for (int64_t k = 0; k < trips && s == ST_OK; k++) {
        const char *prefix = st_graph_strf(g, "%s/%lld", x.name, (long long)k);
        int iter = st_graph_add_const(g, "iteration", ST_I64, 0, NULL, &k);
        if (!prefix || iter < 0 || t_true < 0) {
            s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
            break;
        }
        inst in;
        s = inst_begin(&in, g, b, &owner, prefix);
        if (s == ST_OK) {
            in.map[b->inputs[0]] = iter;
            in.map[b->inputs[1]] = t_true;
            for (int j = 0; j < n_carried; j++) in.map[b->inputs[2 + j]] = carried[j];
            s = inst_nodes(&in, at, &at);
        }
        for (int j = 0; j < n_carried && s == ST_OK; j++) carried[j] = in.map[b->outputs[1 + j]];
        for (int j = 0; j < n_scan && s == ST_OK; j++) slices[j * trips + k] = in.map[b->outputs[1 + n_carried + j]];
        inst_end(&in);
    }
    for (int j = 0; j < n_carried && s == ST_OK; j++)
        if (outs[j] >= 0) s = alias(g, at++, x.name, carried[j], outs[j], x.opset);
    for (int j = 0; j < n_scan && s == ST_OK; j++) {
        if (outs[n_carried + j] < 0) continue;
        if (trips == 0) {
            const st_value *bo = &b->values[b->outputs[1 + n_carried + j]];
            int64_t dims[ST_MAX_RANK] = {0};
            for (int d = 0; d < bo->rank; d++) dims[d + 1] = bo->dims[d];
            int e = st_graph_add_const(g, "empty", bo->dtype, bo->rank + 1, dims, NULL);
            s = e < 0 ? st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name)
                      : alias(g, at++, x.name, e, outs[n_carried + j], x.opset);
            continue;
        }
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/scan_%d", x.name, j);
        s = stack_slices(g, at, prefix, slices + j * trips, (int)trips, 0, false, outs[n_carried + j], x.opset, &at);
    }
    free(carried);
    free(slices);
    st_graph_relink(g);
    return s;
}

/* ---- Scan ---- */

/* A Gather of constant index idx along axis 0 of src into a new value. */
static st_status take(st_graph *g, int at, const char *name, int src, int64_t idx, int opset, int *out)
{
    int iv = st_graph_add_const(g, "index", ST_I64, 0, NULL, &idx);
    *out = st_graph_add_value(g, name);
    if (iv < 0 || *out < 0) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", name);
    int in[2] = {src, iv};
    st_attr a = int_attr("axis", 0);
    return new_node(g, at, "Gather", name, opset > 11 ? opset : 11, in, 2, *out, &a);
}

/* Opset 8's Scan: every input and output has a batch axis 0, the scan
 * inputs their sequence on axis 1, and sequence_lens (when given) must be
 * the full length for every batch entry: each batch entry is a Scan of
 * its own, stacked back along axis 0. */
static st_status expand_scan8(st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    const st_graph *b = st_attr_graph(n, "body");
    if (!b) return st_error(ST_ERR_MODEL, "node '%s' (Scan): no body attribute", n->name);
    int64_t m = st_attr_int(n, "num_scan_inputs", -1);
    int n_state = n->n_in - 1 - (int)m, n_scan_out = n->n_out - n_state;
    if (m < 1 || n_state < 0 || n_scan_out < 0 || b->n_inputs != n_state + m || b->n_outputs != n->n_out)
        return st_error(ST_ERR_MODEL, "node '%s' (Scan): %lld scan inputs of %d inputs, and a body of %d inputs and %d "
                        "outputs for %d outputs do not fit", n->name, (long long)m, n->n_in, b->n_inputs, b->n_outputs,
                        n->n_out);
    int cnt;
    const int64_t *dirs = st_attr_ints(n, "directions", &cnt);
    if (dirs && cnt != m) return st_error(ST_ERR_MODEL, "node '%s' (Scan): directions has %d values", n->name, cnt);
    const st_pvalue *x0 = &p->values[n->in[1 + n_state]];
    if (x0->t.rank < 2) return st_error(ST_ERR_SHAPE, "node '%s' (Scan): scan inputs need [batch, sequence, ...]", n->name);
    int64_t batch = x0->t.dims[0], len = x0->t.dims[1];
    for (int j = 0; j < m; j++) {
        const st_pvalue *pv = &p->values[n->in[1 + n_state + j]];
        if (pv->t.rank < 2 || pv->t.dims[0] != batch || pv->t.dims[1] != len)
            return st_error(ST_ERR_SHAPE, "node '%s' (Scan): scan input %d is not [%lld, %lld, ...]", n->name, j,
                            (long long)batch, (long long)len);
    }
    if (n->in[0] >= 0) {
        const st_pvalue *sl = &p->values[n->in[0]];
        if (sl->kind != ST_PV_CONST || !sl->t.data)
            return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Scan): sequence_lens computed at run time", n->name);
        for (int64_t k = 0; k < st_numel(sl->t.rank, sl->t.dims); k++)
            if (st_load_i64(sl->t.dtype, (const char *)sl->t.data + k * (int64_t)st_dtype_size(sl->t.dtype)) != len)
                return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Scan): sequences shorter than the scan inputs' length",
                                n->name);
    }
    int64_t per_batch = m + n_state + len * (m + b->n_nodes) + n_scan_out * (len + 1);
    int64_t total = batch * per_batch + (int64_t)(n_state + n_scan_out) * (batch + 1);
    if (batch * per_batch > ST_MAX_EXPANDED_NODES - p->g->n_nodes) return too_big(n, batch * len, b->n_nodes);
    if ((len == 0 || batch == 0) && n_scan_out > 0)
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Scan): an empty batch or sequence with scan outputs", n->name);
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    st_node x = g->nodes[i];
    int ins[x.n_in > 0 ? x.n_in : 1], outs[x.n_out > 0 ? x.n_out : 1];
    memcpy(ins, x.in, (size_t)x.n_in * sizeof *ins);
    memcpy(outs, x.out, (size_t)x.n_out * sizeof *outs);
    int64_t dir[m];
    for (int j = 0; j < m; j++) dir[j] = dirs ? dirs[j] : 0;
    st_node owner;
    ST_TRY(owner_of(g, &x, &owner));
    if (!st_graph_splice(g, i, (int)total)) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    int nb = (int)(batch > 0 ? batch : 1), nl = (int)(len > 0 ? len : 1);
    int *state = malloc(((size_t)n_state + 1) * sizeof *state), *seqs = malloc(((size_t)m + 1) * sizeof *seqs);
    int *fin = malloc(((size_t)n_state * nb + 1) * sizeof *fin);
    int *slices = malloc(((size_t)n_scan_out * nl + 1) * sizeof *slices);
    int *stacked = malloc(((size_t)n_scan_out * nb + 1) * sizeof *stacked);
    st_status s = state && seqs && fin && slices && stacked ? ST_OK : st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    int at = i;
    for (int64_t bi = 0; bi < batch && s == ST_OK; bi++) {
        char name[320];
        for (int j = 0; j < n_state && s == ST_OK; j++) {
            snprintf(name, sizeof name, "%s/b%lld/state_%d", x.name, (long long)bi, j);
            s = take(g, at++, name, ins[1 + j], bi, x.opset, &state[j]);
        }
        for (int j = 0; j < m && s == ST_OK; j++) {
            snprintf(name, sizeof name, "%s/b%lld/seq_%d", x.name, (long long)bi, j);
            s = take(g, at++, name, ins[1 + n_state + j], bi, x.opset, &seqs[j]);
        }
        for (int64_t t = 0; t < len && s == ST_OK; t++) {
            const char *prefix = st_graph_strf(g, "%s/b%lld/%lld", x.name, (long long)bi, (long long)t);
            if (!prefix) {
                s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
                break;
            }
            inst in;
            s = inst_begin(&in, g, b, &owner, prefix);
            for (int j = 0; j < n_state && s == ST_OK; j++) in.map[b->inputs[j]] = state[j];
            for (int j = 0; j < m && s == ST_OK; j++) {
                snprintf(name, sizeof name, "%s/slice_%d", prefix, j);
                int sv;
                s = take(g, at++, name, seqs[j], dir[j] ? len - 1 - t : t, x.opset, &sv);
                in.map[b->inputs[n_state + j]] = sv;
            }
            if (s == ST_OK) s = inst_nodes(&in, at, &at);
            for (int j = 0; j < n_state && s == ST_OK; j++) state[j] = in.map[b->outputs[j]];
            for (int j = 0; j < n_scan_out && s == ST_OK; j++) slices[j * len + t] = in.map[b->outputs[n_state + j]];
            inst_end(&in);
        }
        for (int j = 0; j < n_state && s == ST_OK; j++) fin[j * batch + bi] = state[j];
        for (int j = 0; j < n_scan_out && s == ST_OK; j++) {
            snprintf(name, sizeof name, "%s/b%lld/scan_%d", x.name, (long long)bi, j);
            stacked[j * batch + bi] = st_graph_add_value(g, name);
            if (stacked[j * batch + bi] < 0) s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
            else s = stack_slices(g, at, name, slices + j * len, (int)len, 0, false, stacked[j * batch + bi], x.opset, &at);
        }
    }
    /* back along the batch axis: unused outputs still get their nodes, which
     * dead-node removal drops (the slots were counted for them) */
    for (int j = 0; j < n_state && s == ST_OK; j++) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/state_out_%d", x.name, j);
        int dst = outs[j] >= 0 ? outs[j] : st_graph_add_value(g, prefix);
        s = dst < 0 ? st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name)
                    : stack_slices(g, at, prefix, fin + j * batch, (int)batch, 0, false, dst, x.opset, &at);
    }
    for (int j = 0; j < n_scan_out && s == ST_OK; j++) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/scan_out_%d", x.name, j);
        int dst = outs[n_state + j] >= 0 ? outs[n_state + j] : st_graph_add_value(g, prefix);
        s = dst < 0 ? st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name)
                    : stack_slices(g, at, prefix, stacked + j * batch, (int)batch, 0, false, dst, x.opset, &at);
    }
    free(state);
    free(seqs);
    free(fin);
    free(slices);
    free(stacked);
    st_graph_relink(g);
    return s;
}

static st_status expand_scan(st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    if (n->opset < 9) return expand_scan8(p, i);
    const st_graph *b = st_attr_graph(n, "body");
    if (!b) return st_error(ST_ERR_MODEL, "node '%s' (Scan): no body attribute", n->name);
    int64_t m = st_attr_int(n, "num_scan_inputs", -1);
    int n_state = n->n_in - (int)m, n_scan_out = n->n_out - n_state;
    if (m < 1 || n_state < 0 || n_scan_out < 0 || b->n_inputs != n->n_in || b->n_outputs != n->n_out)
        return st_error(ST_ERR_MODEL, "node '%s' (Scan): %lld scan inputs of %d inputs, and a body of %d inputs and %d "
                        "outputs for %d outputs do not fit", n->name, (long long)m, n->n_in, b->n_inputs, b->n_outputs,
                        n->n_out);
    int cnt;
    const int64_t *in_axes = st_attr_ints(n, "scan_input_axes", &cnt);
    if (in_axes && cnt != m) return st_error(ST_ERR_MODEL, "node '%s' (Scan): scan_input_axes has %d values for %lld inputs", n->name, cnt, (long long)m);
    const int64_t *in_dirs = st_attr_ints(n, "scan_input_directions", &cnt);
    if (in_dirs && cnt != m) return st_error(ST_ERR_MODEL, "node '%s' (Scan): scan_input_directions has %d values", n->name, cnt);
    const int64_t *out_axes = st_attr_ints(n, "scan_output_axes", &cnt);
    if (out_axes && cnt != n_scan_out) return st_error(ST_ERR_MODEL, "node '%s' (Scan): scan_output_axes has %d values", n->name, cnt);
    const int64_t *out_dirs = st_attr_ints(n, "scan_output_directions", &cnt);
    if (out_dirs && cnt != n_scan_out) return st_error(ST_ERR_MODEL, "node '%s' (Scan): scan_output_directions has %d values", n->name, cnt);
    /* the sequence length: every scan input's extent along its axis */
    int64_t len = -1;
    for (int j = 0; j < m; j++) {
        const st_pvalue *pv = &p->values[n->in[n_state + j]];
        int64_t ax = in_axes ? in_axes[j] : 0;
        if (ax < 0) ax += pv->t.rank;
        if (ax < 0 || ax >= pv->t.rank)
            return st_error(ST_ERR_MODEL, "node '%s' (Scan): scan input %d has rank %d, no axis %lld", n->name, j, pv->t.rank,
                            (long long)(in_axes ? in_axes[j] : 0));
        if (len >= 0 && pv->t.dims[ax] != len)
            return st_error(ST_ERR_SHAPE, "node '%s' (Scan): scan inputs have lengths %lld and %lld", n->name, (long long)len,
                            (long long)pv->t.dims[ax]);
        len = pv->t.dims[ax];
    }
    int64_t per = b->n_nodes + m + n_scan_out;
    if (len > (ST_MAX_EXPANDED_NODES - p->g->n_nodes) / (per > 0 ? per : 1))
        return too_big(n, len, per);
    if (len == 0 && n_scan_out > 0)
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Scan): a sequence of length 0 with scan outputs", n->name);
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    st_node x = g->nodes[i];
    int ins[x.n_in > 0 ? x.n_in : 1], outs[x.n_out > 0 ? x.n_out : 1];
    memcpy(ins, x.in, (size_t)x.n_in * sizeof *ins);
    memcpy(outs, x.out, (size_t)x.n_out * sizeof *outs);
    int64_t ax_in[m], dir_in[m];
    for (int j = 0; j < m; j++) {
        ax_in[j] = in_axes ? in_axes[j] : 0;
        dir_in[j] = in_dirs ? in_dirs[j] : 0;
    }
    int64_t ax_out[n_scan_out > 0 ? n_scan_out : 1], dir_out[n_scan_out > 0 ? n_scan_out : 1];
    for (int j = 0; j < n_scan_out; j++) {
        ax_out[j] = out_axes ? out_axes[j] : 0;
        dir_out[j] = out_dirs ? out_dirs[j] : 0;
    }
    st_node owner;
    ST_TRY(owner_of(g, &x, &owner));
    int n_alias = 0, n_stack = 0;
    for (int j = 0; j < n_state; j++) n_alias += outs[j] >= 0;
    for (int j = 0; j < n_scan_out; j++) n_stack += outs[n_state + j] >= 0 ? (int)len + 1 : 0;
    int64_t total = len * (b->n_nodes + m) + n_alias + n_stack;
    if (!st_graph_splice(g, i, total > 0 ? (int)total : 1)) return st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    int *state = malloc(((size_t)n_state + 1) * sizeof *state);
    int *slices = malloc(((size_t)n_scan_out * (size_t)(len > 0 ? len : 1) + 1) * sizeof *slices);
    st_status s = state && slices ? ST_OK : st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    for (int j = 0; j < n_state && s == ST_OK; j++) state[j] = ins[j];
    int at = i;
    for (int64_t t = 0; t < len && s == ST_OK; t++) {
        const char *prefix = st_graph_strf(g, "%s/%lld", x.name, (long long)t);
        if (!prefix) {
            s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
            break;
        }
        inst in;
        s = inst_begin(&in, g, b, &owner, prefix);
        for (int j = 0; j < n_state && s == ST_OK; j++) in.map[b->inputs[j]] = state[j];
        /* each scan input's slice t: a Gather of a constant index, a view */
        for (int j = 0; j < m && s == ST_OK; j++) {
            int64_t idx = dir_in[j] ? len - 1 - t : t;
            char name[320];
            snprintf(name, sizeof name, "%s/slice_%d", prefix, j);
            int iv = st_graph_add_const(g, "index", ST_I64, 0, NULL, &idx);
            int sv = st_graph_add_value(g, name);
            if (iv < 0 || sv < 0) {
                s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
                break;
            }
            int src[2] = {ins[n_state + j], iv};
            st_attr a = int_attr("axis", ax_in[j]);
            s = new_node(g, at++, "Gather", name, x.opset > 11 ? x.opset : 11, src, 2, sv, &a);
            in.map[b->inputs[n_state + j]] = sv;
        }
        if (s == ST_OK) s = inst_nodes(&in, at, &at);
        for (int j = 0; j < n_state && s == ST_OK; j++) state[j] = in.map[b->outputs[j]];
        for (int j = 0; j < n_scan_out && s == ST_OK; j++) slices[j * len + t] = in.map[b->outputs[n_state + j]];
        inst_end(&in);
    }
    for (int j = 0; j < n_state && s == ST_OK; j++)
        if (outs[j] >= 0) s = alias(g, at++, x.name, state[j], outs[j], x.opset);
    for (int j = 0; j < n_scan_out && s == ST_OK; j++) {
        if (outs[n_state + j] < 0) continue;
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/scan_%d", x.name, j);
        s = stack_slices(g, at, prefix, slices + j * len, (int)len, ax_out[j], dir_out[j] != 0, outs[n_state + j], x.opset,
                         &at);
    }
    free(state);
    free(slices);
    st_graph_relink(g);
    return s;
}

/* ---- SequenceMap ---- */

/* SequenceMap: the body once per element of input 0, a sequence; each
 * later input is a sequence of the same length, whose element at the same
 * position the body reads, or a tensor, read whole by every copy.  Each
 * body output is gathered into a sequence: a list node over the copies'
 * outputs (passes/sequence.c).  The lists are known here because
 * specialization lowered every node before this one. */
static st_status expand_sequence_map(st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    const st_graph *b = st_attr_graph(n, "body");
    if (!b) return st_error(ST_ERR_MODEL, "node '%s' (SequenceMap): no body attribute", n->name);
    if (n->n_in < 1 || b->n_inputs != n->n_in || b->n_outputs != n->n_out)
        return st_error(ST_ERR_MODEL, "node '%s' (SequenceMap): the body has %d inputs and %d outputs for the node's %d "
                        "and %d", n->name, b->n_inputs, b->n_outputs, n->n_in, n->n_out);
    int len = -1;
    for (int k = 0; k < n->n_in; k++) {
        const st_node *l = n->in[k] >= 0 ? st_sequence_node(p->g, n->in[k]) : NULL;
        bool seq = l && !strcmp(l->op_type, "SequenceConstruct");
        if (n->in[k] < 0 || (l && !seq) || (k == 0 && !seq))
            return st_error(ST_ERR_MODEL, "node '%s' (SequenceMap): input %d is %s; input 0 is a sequence and the others "
                            "sequences or tensors", n->name, k, n->in[k] < 0 ? "missing" : l ? "an optional" : "a tensor");
        if (seq && len >= 0 && l->n_in != len)
            return st_error(ST_ERR_SHAPE, "node '%s' (SequenceMap): input %d has %d elements, input 0 has %d", n->name, k,
                            l->n_in, len);
        if (seq) len = l->n_in;
    }
    int64_t per = b->n_nodes;
    if (len > (ST_MAX_EXPANDED_NODES - p->g->n_nodes - n->n_out) / (per > 0 ? per : 1)) return too_big(n, len, per);
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    st_node x = g->nodes[i];
    int ins[x.n_in], outs[x.n_out > 0 ? x.n_out : 1];
    memcpy(ins, x.in, (size_t)x.n_in * sizeof *ins);
    memcpy(outs, x.out, (size_t)x.n_out * sizeof *outs);
    /* each input's elements (NULL: a tensor), copied: the splice frees them */
    int *elems[x.n_in];
    st_status s = ST_OK;
    for (int k = 0; k < x.n_in; k++) {
        const st_node *l = st_sequence_node(g, ins[k]);
        elems[k] = NULL;
        if (!l || s != ST_OK) continue;
        elems[k] = malloc(((size_t)len + 1) * sizeof *elems[k]);
        if (!elems[k]) s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
        else if (len) memcpy(elems[k], l->in, (size_t)len * sizeof *elems[k]);
    }
    st_node owner;
    if (s == ST_OK) s = owner_of(g, &x, &owner);
    int *got = malloc(((size_t)x.n_out * (size_t)(len > 0 ? len : 1) + 1) * sizeof *got);
    if (s == ST_OK && !got) s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    if (s == ST_OK && !st_graph_splice(g, i, len * b->n_nodes + x.n_out))
        s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
    int at = i;
    for (int t = 0; t < len && s == ST_OK; t++) {
        const char *prefix = st_graph_strf(g, "%s/%d", x.name, t);
        if (!prefix) {
            s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
            break;
        }
        inst in;
        s = inst_begin(&in, g, b, &owner, prefix);
        for (int k = 0; k < x.n_in && s == ST_OK; k++) in.map[b->inputs[k]] = elems[k] ? elems[k][t] : ins[k];
        if (s == ST_OK) s = inst_nodes(&in, at, &at);
        for (int j = 0; j < x.n_out && s == ST_OK; j++) got[j * len + t] = in.map[b->outputs[j]];
        inst_end(&in);
    }
    /* every output a list node (an unused one too: dead-node removal drops
     * it, and the slots were counted for it) */
    for (int j = 0; j < x.n_out && s == ST_OK; j++) {
        char name[320];
        snprintf(name, sizeof name, "%s/out_%d", x.name, j);
        int dst = outs[j] >= 0 ? outs[j] : st_graph_add_value(g, name);
        if (dst < 0) {
            s = st_error(ST_ERR_NOMEM, "out of memory expanding '%s'", x.name);
            break;
        }
        /* an empty sequence's element type: the one the body declares */
        if (g->values[dst].dtype == ST_UNDEFINED) g->values[dst].dtype = b->values[b->outputs[j]].dtype;
        s = new_node(g, at++, "SequenceConstruct", name, 17, got + (size_t)j * (size_t)len, len, dst, NULL);
    }
    for (int k = 0; k < x.n_in; k++) free(elems[k]);
    free(got);
    st_graph_relink(g);
    return s;
}

bool st_control_runtime_loop(const st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    if (strcmp(n->op_type, "Loop") || n->n_in < 2) return false;
    const st_graph *b = st_attr_graph(n, "body");
    int n_carried = n->n_in - 2, n_scan = n->n_out - n_carried;
    if (!b || n_scan < 0 || b->n_inputs != n_carried + 2 || b->n_outputs != n_carried + 1 + n_scan) return false;
    int64_t v;
    if (cond_stays_true(b)) {
        /* a counted loop unrolls, unless its copies would pass the
         * expansion limit: then it runs one iteration at a time too */
        int64_t per = b->n_nodes + n_scan, c = 1;
        if (n->in[1] >= 0 && (!const_int(p, n->in[1], &c) || !c)) return false;
        return n->in[0] >= 0 && const_int(p, n->in[0], &v) && v <= ST_MAX_LOOP_ITERATIONS &&
               v > (ST_MAX_EXPANDED_NODES - p->g->n_nodes) / (per > 0 ? per : 1);
    }
    /* a loop that runs no iteration expands to its initial values */
    if (n->in[0] >= 0 && const_int(p, n->in[0], &v) && v <= 0) return false;
    if (n->in[1] >= 0 && const_int(p, n->in[1], &v) && v == 0) return false;
    return true;
}

st_status st_control_expand(st_plan *p, int i)
{
    const st_node *n = &p->g->nodes[i];
    if (!strcmp(n->op_type, "If")) return expand_if(p, i);
    if (!strcmp(n->op_type, "Loop")) return expand_loop(p, i);
    if (!strcmp(n->op_type, "SequenceMap")) return expand_sequence_map(p, i);
    return expand_scan(p, i);
}
