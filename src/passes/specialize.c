/*
 * specialize.c — concrete shapes, constant folding and dead-node removal.
 *
 * Owns: plan->values[].t (dtype, shape, constant data), .kind for CONST,
 * INPUT and ROOT, .last_use, and plan->nodes[].kind DEAD/FOLDED/EXEC and
 * .state.  Invariants afterwards: every live value has a concrete shape;
 * a node is FOLDED exactly when all its inputs are constant (or it reads
 * only shapes) and it is deterministic; the shape sub-graphs that exporters
 * emit for chunk/split (Shape -> Gather -> Div -> Slice) therefore fold
 * to constants here.  With a lower precision, computed f32 values and the
 * f32 constants that commands read are stored in that precision, while
 * folding itself runs on the model's own dtypes, so shape arithmetic done
 * in float is never rounded to bf16.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "plan/plan.h"

static bool needs_fold(const st_plan *p, const st_node *n)
{
    if (n->op->flags & ST_OP_NO_FOLD) return false;
    if (n->op->flags & ST_OP_SHAPE_ONLY) return true;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && p->values[n->in[k]].kind != ST_PV_CONST) return false;
    return true;
}

/* Marks the nodes and values the graph outputs depend on.  False when
 * out of memory (running every node instead would run dead nodes a plan
 * otherwise never runs, and could fail on them). */
static bool liveness(st_plan *p, const st_graph *g, bool *live_node)
{
    bool *live_val = calloc((size_t)g->n_values + 1, sizeof *live_val);
    if (!live_val) return false;
    for (int i = 0; i < g->n_outputs; i++) live_val[g->outputs[i]] = true;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const st_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && live_val[n->out[k]]) live_node[i] = true;
        if (!live_node[i]) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) live_val[n->in[k]] = true;
        for (int k = 0; k < n->n_implicit; k++) live_val[n->implicit[k]] = true;
    }
    (void)p;
    free(live_val);
    return true;
}

static st_status check_outputs(const st_node *n, const st_infer *c)
{
    for (int k = 0; k < n->n_out; k++) {
        const st_tinfo *t = &c->out[k];
        if (!t->present) continue;
        if (!st_dtype_valid(t->dtype)) {
            /* rules take an output's dtype from input 0; a node without one
             * is a malformed model (ops with no inputs set a dtype) */
            if (n->n_in == 0 || n->in[0] < 0)
                return st_error(ST_ERR_MODEL, "node '%s' (%s): input 0 is missing", n->name, n->op_type);
            /* a node may list more outputs than its op has, or an optional
             * output that strata does not compute */
            if (k > 0)
                return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): output %d is not produced (the op has fewer "
                                "outputs, or strata does not compute that optional one)", n->name, n->op_type, k);
            return st_error(ST_ERR_INTERNAL, "node '%s' (%s): shape rule left output %d without a dtype", n->name,
                            n->op_type, k);
        }
        if (t->rank < 0 || t->rank > ST_MAX_RANK)
            return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): output %d has rank %d (maximum %d)", n->name,
                            n->op_type, k, t->rank, ST_MAX_RANK);
        uint64_t bytes = st_dtype_size(t->dtype);
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d] < 0)
                return st_error(ST_ERR_SHAPE, "node '%s' (%s): output %d has negative dim %lld", n->name,
                                n->op_type, k, (long long)t->dims[d]);
            if (t->dims[d] && bytes > (1ull << 46) / (uint64_t)t->dims[d])
                return st_error(ST_ERR_NOMEM, "node '%s' (%s): output %d is larger than 64 TiB", n->name,
                                n->op_type, k);
            bytes *= (uint64_t)t->dims[d];
        }
    }
    return ST_OK;
}

/* Normalisation parameters (a BatchNormalization's scale, bias, mean and
 * variance; a LayerNormalization's or InstanceNormalization's scale and
 * bias) are not activations: they stay f32 under a lower precision.  A
 * running variance beyond f16's range (PP-OCRv4 det has one) would become
 * infinite, and bf16 would round every parameter to 3 digits. */
static bool is_norm_param(const st_node *n, int k)
{
    if (n->domain[0] || k == 0) return false;
    return !strcmp(n->op_type, "BatchNormalization") || !strcmp(n->op_type, "LayerNormalization") ||
           !strcmp(n->op_type, "InstanceNormalization");
}

static st_status lower_precision(st_plan *p, const st_graph *g)
{
    if (p->precision == ST_F32) return ST_OK;
    /* Constants that a command reads as data are converted once, here. */
    bool *low = calloc((size_t)p->n_values + 1, sizeof *low);
    if (!low) return st_error(ST_ERR_NOMEM, "out of memory planning");
    for (int i = 0; i < g->n_nodes; i++)
        if (p->nodes[i].kind == ST_PN_EXEC)
            for (int k = 0; k < g->nodes[i].n_in; k++)
                if (g->nodes[i].in[k] >= 0 && !is_norm_param(&g->nodes[i], k)) low[g->nodes[i].in[k]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_EXEC) continue;
        const st_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || !low[v] || st_plan_keeps_f32(p, v)) continue;
            st_pvalue *pv = &p->values[v];
            if (pv->kind != ST_PV_CONST || pv->t.dtype != ST_F32) continue;
            int64_t numel = st_numel(pv->t.rank, pv->t.dims);
            void *d = st_plan_alloc(p, (uint64_t)numel * 2);
            if (!d) {
                free(low);
                return st_error(ST_ERR_NOMEM, "out of memory converting constant '%s'", g->values[v].name);
            }
            st_convert(p->precision, d, ST_F32, pv->t.data, (size_t)numel);
            pv->t.data = d;
            pv->t.dtype = p->precision;
        }
    }
    free(low);
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        if ((pv->kind == ST_PV_INPUT || pv->kind == ST_PV_ROOT) && pv->t.dtype == ST_F32 && !st_plan_keeps_f32(p, v))
            pv->t.dtype = p->precision;
    }
    return ST_OK;
}

/* Marks the graph inputs whose values value v is computed from, so the
 * plan can treat them as known and key the plan cache on them: a Reshape
 * whose shape, or a Resize whose scales, arrive as graph inputs; an If on
 * a flag input.  Taken are v itself when it is an input (at most
 * ST_VALUE_INPUT_MAX elements, or ST_STAGE_VALUE_MAX in a later stage,
 * whose inputs the stage before computed), and small integer or bool
 * inputs it is computed from.  A float input that v is computed from is
 * data: v is then left to a stage cut (plan/stage.c), which runs the
 * nodes before and reads v, instead of folding the whole computation on
 * the host for each new input.  Returns how many inputs were newly
 * marked. */
static int mark_value_inputs(st_plan *p, const st_graph *g, int v)
{
    int marked = 0;
    int *stack = malloc(((size_t)g->n_values + 1) * sizeof *stack);
    bool *seen = calloc((size_t)g->n_values + 1, sizeof *seen);
    if (!stack || !seen) {
        free(stack);
        free(seen);
        return 0;
    }
    int top = 0;
    stack[top++] = v;
    seen[v] = true;
    while (top) {
        int x = stack[--top];
        const st_value *gv = &g->values[x];
        if (gv->is_input) {
            for (int i = 0; i < g->n_inputs; i++) {
                if (g->inputs[i] != x || p->value_inputs[i] || !p->in_data || !p->in_data[i]) continue;
                int64_t n = st_numel(p->in_rank[i], p->in_dims[i]);
                bool take = x == v ? n <= (p->model->parent ? ST_STAGE_VALUE_MAX : ST_VALUE_INPUT_MAX)
                                   : n <= ST_VALUE_INPUT_MAX && !st_dtype_is_float(gv->dtype);
                if (take) {
                    p->value_inputs[i] = true;
                    marked++;
                }
            }
            continue;
        }
        if (gv->producer < 0) continue;
        const st_node *n = &g->nodes[gv->producer];
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int u = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
            if (u >= 0 && !seen[u]) {
                seen[u] = true;
                stack[top++] = u;
            }
        }
    }
    free(stack);
    free(seen);
    return marked;
}

/* Node i needs value v as data and no input can supply it: when nodes
 * before i compute it, the plan stops there (a stage cut). */
static bool stage_cut(st_plan *p, const st_graph *g, int i, int v)
{
    int pr = g->values[v].producer;
    if (pr < 0 || pr >= i) return false;
    p->cut = i;
    p->cut_value = v;
    return true;
}

/* Strings never enter an arena (core/strings.h), so node i, when it reads
 * or makes them, is folded: its inputs must be known at plan time.  One
 * that is not yet is computed from small graph inputs (plan again with
 * their values known) or by nodes before it (the plan stops there, and
 * the rest is planned on their results, plan/stage.c), or is refused. */
static st_status strings_at_plan_time(st_plan *p, const st_graph *g, int i, const st_tinfo *out)
{
    const st_node *n = &g->nodes[i];
    bool strings = false;
    for (int k = 0; k < n->n_out; k++) strings |= out[k].present && out[k].dtype == ST_STRING;
    for (int k = 0; k < n->n_in; k++) strings |= n->in[k] >= 0 && p->values[n->in[k]].t.dtype == ST_STRING;
    if (!strings || needs_fold(p, n)) return ST_OK;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0 || p->values[v].kind == ST_PV_CONST) continue;
        if ((p->needs_values = mark_value_inputs(p, g, v))) return st_error(ST_ERR_SHAPE, "replan with input values");
        if (stage_cut(p, g, i, v)) return st_error(ST_ERR_SHAPE, "stage cut");
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): strings are handled while planning, but input %d ('%s') is "
                        "known only when the model runs", n->name, n->op_type, k, g->values[v].name);
    }
    return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): strings are handled while planning, and %s is not evaluated then",
                    n->name, n->op_type, n->op_type);
}

st_status st_specialize(st_plan *p)
{
    const st_graph *g = p->g;
    bool *live = calloc((size_t)g->n_nodes + 1, sizeof *live);
    st_tinfo *tin = NULL, *tout = NULL;
    if (!live || !liveness(p, g, live)) {
        free(live);
        return st_error(ST_ERR_NOMEM, "out of memory planning");
    }

    /* Rules index inputs they expect (in[0], in[1], ...) before checking
     * how many a node has; room for 16 zeroed ones (not present) keeps a
     * node with too few inputs from reading past the array or another
     * node's leftovers. */
    int max_io = 16;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].n_in > max_io) max_io = g->nodes[i].n_in;
        if (g->nodes[i].n_out > max_io) max_io = g->nodes[i].n_out;
    }
    tin = calloc((size_t)max_io, sizeof *tin);
    tout = calloc((size_t)max_io, sizeof *tout);
    st_status s = ST_OK;
    if (!tin || !tout) s = st_error(ST_ERR_NOMEM, "out of memory planning");

    for (int i = 0; i < g->n_nodes && s == ST_OK; i++) {
        const st_node *n = &g->nodes[i];
        st_pnode *pn = &p->nodes[i];
        pn->cmd = -1;
        pn->out0 = -1;
        if (!live[i]) {
            pn->kind = ST_PN_DEAD;
            continue;
        }
        if (!n->op) {
            s = st_error(ST_ERR_UNSUPPORTED, "node '%s': unsupported op '%s' (domain '%s', opset %d)", n->name,
                         n->op_type, n->domain[0] ? n->domain : "ai.onnx", n->opset);
            break;
        }
        if (st_sequence_touches(p, n)) {
            /* a sequence or optional: structure, which the graph is
             * rewritten into (passes/sequence.c); a position it needs from
             * the data is asked for like a rule's constant below */
            int missing = -1;
            s = st_sequence_lower(p, i, &missing);
            if (s != ST_OK && missing >= 0) {
                p->needs_values = mark_value_inputs(p, g, missing);
                if (p->needs_values) s = st_error(ST_ERR_SHAPE, "replan with input values");
                else if (stage_cut(p, g, i, missing)) s = st_error(ST_ERR_SHAPE, "stage cut");
            }
            if (s != ST_OK || p->expanded) break;
            continue;
        }
        if (n->op->flags & ST_OP_CONTROL) {
            /* its condition or trip count may come from a small graph
             * input: plan again with that input's value known */
            int decide = !strcmp(n->op_type, "Scan") || !strcmp(n->op_type, "SequenceMap") ? -1 : 0;
            for (int k = 0; decide >= 0 && k <= (!strcmp(n->op_type, "Loop") ? 1 : 0) && k < n->n_in; k++) {
                int v = n->in[k];
                if (v < 0 || p->values[v].kind == ST_PV_CONST) continue;
                if ((p->needs_values = mark_value_inputs(p, g, v))) {
                    s = st_error(ST_ERR_SHAPE, "replan with input values");
                    break;
                }
                if (stage_cut(p, g, i, v)) {
                    s = st_error(ST_ERR_SHAPE, "stage cut");
                    break;
                }
            }
            if (s != ST_OK) break;
            if (st_control_runtime_loop(p, i)) { /* a while loop: the session runs it (plan/stage.c) */
                p->cut = i;
                p->cut_value = -1;
                p->cut_loop = true;
                s = st_error(ST_ERR_SHAPE, "stage cut");
                break;
            }
            /* the graph is rewritten: the caller plans it again */
            s = st_control_expand(p, i);
            if (s == ST_OK) p->expanded = true;
            break;
        }
        memset(tin, 0, (size_t)max_io * sizeof *tin);
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] < 0) continue;
            const st_pvalue *pv = &p->values[n->in[k]];
            tin[k] = pv->t;
            tin[k].present = true;
            if (pv->kind != ST_PV_CONST) tin[k].data = NULL;
        }
        memset(tout, 0, (size_t)max_io * sizeof *tout);
        for (int k = 0; k < n->n_out; k++) tout[k].present = n->out[k] >= 0;
        int missing = -1;
        st_infer c = {n, n->opset, n->n_in, n->n_out, tin, tout, NULL, &missing};
        s = n->op->infer(&c);
        pn->state = c.state;
        if (s != ST_OK && missing >= 0 && missing < n->n_in && n->in[missing] >= 0) {
            /* the rule needs data the graph computes from its inputs: ask
             * the caller to plan again with those inputs' values known */
            p->needs_values = mark_value_inputs(p, g, n->in[missing]);
            if (p->needs_values) s = st_error(ST_ERR_SHAPE, "replan with input values");
            else if (stage_cut(p, g, i, n->in[missing])) s = st_error(ST_ERR_SHAPE, "stage cut");
        }
        if (s == ST_OK) s = check_outputs(n, &c);
        if (s == ST_OK) s = strings_at_plan_time(p, g, i, tout);
        if (s != ST_OK) break;
        for (int k = 0; k < n->n_out; k++) {
            if (n->out[k] < 0) continue;
            st_pvalue *pv = &p->values[n->out[k]];
            pv->t = tout[k];
            pv->t.present = true;
            pv->t.data = NULL;
            pv->model_dtype = tout[k].dtype;
            pv->kind = ST_PV_ROOT;
        }
        if (needs_fold(p, n)) {
            s = st_fold_node(p, i);
            if (s != ST_OK) {
                s = st_error_prefix(s, "folding node '%s' (%s): ", n->name, n->op_type);
                break;
            }
            pn->kind = ST_PN_FOLDED;
            for (int k = 0; k < n->n_out; k++)
                if (n->out[k] >= 0) p->values[n->out[k]].kind = ST_PV_CONST;
        } else {
            pn->kind = ST_PN_EXEC;
        }
    }
    /* a graph just rewritten (control flow, sequences) is planned again:
     * it may have outgrown p->nodes, which the next pass resizes */
    if (s == ST_OK && !p->expanded) {
        for (int i = 0; i < g->n_nodes; i++) {
            if (p->nodes[i].kind != ST_PN_EXEC) continue;
            for (int k = 0; k < g->nodes[i].n_in; k++)
                if (g->nodes[i].in[k] >= 0) p->values[g->nodes[i].in[k]].last_use = i;
        }
        for (int i = 0; i < g->n_outputs; i++) p->values[g->outputs[i]].last_use = g->n_nodes;
        /* rewrites that plan again on their graph (plan.h) */
        s = st_pass_fuse_decomposed(p);
        if (s == ST_OK && !p->expanded) s = st_pass_precision(p);
        if (s == ST_OK && !p->expanded) s = lower_precision(p, g);
    }
    free(live);
    free(tin);
    free(tout);
    return s;
}

/* What a folding kernel allocates beyond its outputs' elements (strings'
 * characters): plan memory, counted against the memory limit as folded
 * outputs are. */
static void *fold_alloc(void *ctx, uint64_t bytes)
{
    st_plan *p = ctx;
    if (p->memory_limit && (bytes > p->memory_limit || p->folded_bytes > p->memory_limit - bytes)) return NULL;
    p->folded_bytes += bytes;
    return st_plan_alloc(p, bytes);
}

st_status st_fold_node(st_plan *p, int node)
{
    const st_node *n = &p->g->nodes[node];
    int nio = n->n_in + n->n_out;
    st_operand ops[nio > 0 ? nio : 1];
    st_view views[nio > 0 ? nio : 1];
    const void *data[n->n_in > 0 ? n->n_in : 1];
    memset(ops, 0, sizeof ops);
    for (int k = 0; k < nio; k++) {
        memset(&views[k], 0, sizeof views[k]);
        views[k].rank = -1;
    }
    for (int k = 0; k < n->n_in; k++) {
        data[k] = NULL;
        if (n->in[k] < 0) continue;
        const st_pvalue *pv = &p->values[n->in[k]];
        st_view_init(&views[k], pv->t.dtype, pv->t.rank, pv->t.dims);
        /* shape-only ops see a shape without data */
        data[k] = pv->kind == ST_PV_CONST ? pv->t.data : NULL;
        ops[k] = st_operand_of(&views[k], (void *)data[k]);
    }
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        st_pvalue *pv = &p->values[n->out[k]];
        uint64_t bytes = (uint64_t)st_numel(pv->t.rank, pv->t.dims) * st_dtype_size(pv->t.dtype);
        if (p->memory_limit && (bytes > p->memory_limit || p->folded_bytes > p->memory_limit - bytes))
            return st_error(ST_ERR_NOMEM, "output %d needs %llu bytes at plan time, over the memory limit of %llu bytes",
                            k, (unsigned long long)bytes, (unsigned long long)p->memory_limit);
        p->folded_bytes += bytes;
        void *d = st_plan_alloc(p, bytes);
        if (!d) return st_error(ST_ERR_NOMEM, "out of memory (%llu bytes)", (unsigned long long)bytes);
        pv->t.data = d;
        st_view_init(&views[n->n_in + k], pv->t.dtype, pv->t.rank, pv->t.dims);
        ops[n->n_in + k] = st_operand_of(&views[n->n_in + k], d);
    }
    /* folding runs the CPU's kernel, whatever the session's backend */
    st_knode kn = {n, n->op, p->nodes[node].state, n->n_in, n->n_out, views, data, NULL, p->target.host_device};
    char why[256];
    const st_kernel *kern = st_kernel_find(p->target.host, &kn, why, sizeof why);
    if (!kern) return st_error(ST_ERR_UNSUPPORTED, "%s", why);
    void *priv = NULL;
    if (kern->prepare) ST_TRY(kern->prepare(&kn, &priv));
    st_kctx k = {n, p->nodes[node].state, n->n_in, n->n_out, ops, ops + n->n_in, NULL, NULL, NULL, NULL, priv,
                 fold_alloc, p};
    st_status r = kern->run(&k);
    if (kern->release) kern->release(priv);
    return r;
}
