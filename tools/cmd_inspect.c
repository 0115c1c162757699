/*
 * cmd_inspect.c — `strata inspect`: a model's inputs, outputs, opsets, op
 * histogram and parameter count; with --plan, the plan for the given (or
 * random) inputs: every value's storage, offset, sizes and strides, which
 * nodes run and which are pure views, which concats were placed, and the
 * peak arena beside the sum of every intermediate, and in a mixed plan
 * each node's device and every transfer; with --dot, the same plan and its
 * hazard DAG as Graphviz (plan_dot.c).  With --ops, no model: the op x
 * backend x dtype matrix (ops_matrix.c).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/dag.h"
#include "graph/model.h"
#include "passes/passes.h"
#include "plan/plan.h"
#include "tool.h"

const st_plan *st_session_plan(const st_session *s);
const st_dag *st_session_dag(const st_session *s);
bool st_session_stage(const st_session *s, int k, const st_plan **plan, const st_dag **dag);
const char *st_session_loop_note(const st_session *s);

static void print_shape(FILE *f, const st_value *v, bool json)
{
    fputc('[', f);
    for (int d = 0; d < v->rank; d++) {
        if (d) fputs(", ", f);
        if (v->dims[d] >= 0) fprintf(f, "%lld", (long long)v->dims[d]);
        else if (v->dim_names[d] && json) tool_json_string(f, v->dim_names[d]);
        else if (v->dim_names[d]) fputs(v->dim_names[d], f);
        else fputs(json ? "null" : "?", f);
    }
    fputc(']', f);
}

/* What a graph input or output holds, for people and for JSON. */
static const char *KIND_TEXT[] = {"", "sequence of ", "optional ", "optional sequence of "};
static const char *KIND_JSON[] = {"tensor", "sequence", "optional", "optional_sequence"};

static void print_ints(FILE *f, int n, const int64_t *v)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
    fputc(']', f);
}

typedef struct op_count {
    const char *name;
    int n;
} op_count;

static int by_count(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    if (x->n != y->n) return y->n - x->n;
    return strcmp(x->name, y->name);
}

static int model_summary(const tool_opts *o, const st_model *m)
{
    const st_graph *g = m->g;
    op_count *hist = calloc((size_t)g->n_nodes + 1, sizeof *hist);
    if (!hist) return tool_fail("out of memory");
    int nh = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        int k = 0;
        while (k < nh && strcmp(hist[k].name, g->nodes[i].op_type)) k++;
        if (k == nh) hist[nh++].name = g->nodes[i].op_type;
        hist[k].n++;
    }
    qsort(hist, (size_t)nh, sizeof *hist, by_count);
    int64_t params = 0;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].init && g->values[v].producer < 0 && !g->values[v].is_input) params += st_const_numel(g->values[v].init);
    /* Constant nodes become constants too; the parameter count is the
     * initializers and constants a model carries */
    FILE *f = stdout;
    if (o->json) {
        fprintf(f, "{\"model\": ");
        tool_json_string(f, o->model);
        fprintf(f, ", \"ir_version\": %lld, \"producer\": ", (long long)g->ir_version);
        tool_json_string(f, g->producer_name ? g->producer_name : "");
        fprintf(f, ", \"opsets\": {");
        for (int i = 0; i < g->n_opsets; i++) {
            fprintf(f, "%s", i ? ", " : "");
            tool_json_string(f, g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx");
            fprintf(f, ": %lld", (long long)g->opsets[i].version);
        }
        fprintf(f, "}, \"inputs\": [");
        for (int i = 0; i < g->n_inputs; i++) {
            const st_value *v = &g->values[g->inputs[i]];
            fprintf(f, "%s{\"name\": ", i ? ", " : "");
            tool_json_string(f, v->name);
            fprintf(f, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": ", KIND_JSON[v->kind], st_dtype_name(v->dtype));
            if (v->rank >= 0) print_shape(f, v, true);
            else fputs("null", f);
            fputc('}', f);
        }
        fprintf(f, "], \"outputs\": [");
        for (int i = 0; i < g->n_outputs; i++) {
            const st_value *v = &g->values[g->outputs[i]];
            fprintf(f, "%s{\"name\": ", i ? ", " : "");
            tool_json_string(f, v->name);
            fprintf(f, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": ", KIND_JSON[v->kind], st_dtype_name(v->dtype));
            if (v->rank >= 0) print_shape(f, v, true);
            else fputs("null", f);
            fputc('}', f);
        }
        fprintf(f, "], \"nodes\": %d, \"ops\": {", g->n_nodes);
        for (int i = 0; i < nh; i++) {
            fprintf(f, "%s", i ? ", " : "");
            tool_json_string(f, hist[i].name);
            fprintf(f, ": %d", hist[i].n);
        }
        fprintf(f, "}, \"unsupported\": [");
        int nu = 0;
        for (int i = 0; i < nh; i++) {
            bool sup = false;
            for (int k = 0; k < g->n_nodes; k++)
                if (!strcmp(g->nodes[k].op_type, hist[i].name) && g->nodes[k].op) sup = true;
            if (!sup) {
                fprintf(f, "%s", nu++ ? ", " : "");
                tool_json_string(f, hist[i].name);
            }
        }
        fprintf(f, "], \"parameters\": %lld}\n", (long long)params);
    } else {
        fprintf(f, "model: %s\nir_version: %lld  producer: %s\nopsets:", o->model, (long long)g->ir_version,
                g->producer_name && *g->producer_name ? g->producer_name : "?");
        for (int i = 0; i < g->n_opsets; i++)
            fprintf(f, " %s=%lld", g->opsets[i].domain[0] ? g->opsets[i].domain : "ai.onnx", (long long)g->opsets[i].version);
        fprintf(f, "\ninputs:\n");
        for (int i = 0; i < g->n_inputs; i++) {
            const st_value *v = &g->values[g->inputs[i]];
            fprintf(f, "  %s: %s%s ", v->name, KIND_TEXT[v->kind], st_dtype_name(v->dtype));
            if (v->rank >= 0) print_shape(f, v, false);
            else fputs("(shape unknown)", f);
            fputc('\n', f);
        }
        fprintf(f, "outputs:\n");
        for (int i = 0; i < g->n_outputs; i++) {
            const st_value *v = &g->values[g->outputs[i]];
            fprintf(f, "  %s: %s%s ", v->name, KIND_TEXT[v->kind], st_dtype_name(v->dtype));
            if (v->rank >= 0) print_shape(f, v, false);
            else fputs("(shape unknown)", f);
            fputc('\n', f);
        }
        fprintf(f, "nodes: %d\nops:\n", g->n_nodes);
        for (int i = 0; i < nh; i++) {
            bool sup = false;
            for (int k = 0; k < g->n_nodes; k++)
                if (!strcmp(g->nodes[k].op_type, hist[i].name) && g->nodes[k].op) sup = true;
            fprintf(f, "  %-24s %d%s\n", hist[i].name, hist[i].n, sup ? "" : "  (unsupported)");
        }
        fprintf(f, "parameters: %lld\n", (long long)params);
    }
    free(hist);
    return 0;
}

static const char *VKIND[] = {"dead", "const", "input", "root", "view", "list"};
static const char *NKIND[] = {"dead", "folded", "view", "exec", "fused"};

static const char *device_of(const st_plan *p, int d)
{
    return d == ST_DEV_HOST ? p->target.host->backend : p->target.main->backend;
}

static int64_t transfer_bytes(const st_transfer *t)
{
    int64_t lo, hi;
    st_view_extent(&t->view, &lo, &hi);
    return hi - lo;
}

/* How much the DAG lets run at once: the command pairs it orders (a path
 * between them) and its longest chain of commands.  Commands are numbered
 * in a topological order, so one pass over ancestor bitsets does it. */
static bool dag_order(const st_dag *d, long long *ordered, int *chain)
{
    int n = d->n_cmds;
    size_t words = ((size_t)n + 63) / 64;
    uint64_t *anc = calloc((size_t)n * words + 1, sizeof *anc);
    int *depth = calloc((size_t)n + 1, sizeof *depth);
    if (!anc || !depth) {
        free(anc);
        free(depth);
        return false;
    }
    *ordered = 0;
    *chain = 0;
    for (int c = 0; c < n; c++) {
        uint64_t *a = anc + (size_t)c * words;
        depth[c] = 1;
        for (int k = 0; k < d->cmds[c].n_pred; k++) {
            int q = d->preds[d->cmds[c].pred_first + k];
            const uint64_t *b = anc + (size_t)q * words;
            for (size_t w = 0; w < words; w++) a[w] |= b[w];
            a[q / 64] |= (uint64_t)1 << (q % 64);
            if (depth[q] + 1 > depth[c]) depth[c] = depth[q] + 1;
        }
        for (size_t w = 0; w < words; w++) *ordered += __builtin_popcountll(a[w]);
        if (depth[c] > *chain) *chain = depth[c];
    }
    free(anc);
    free(depth);
    return true;
}

static int plan_summary(const tool_opts *o, const st_plan *p, const st_dag *dag)
{
    const st_graph *g = p->g;
    FILE *f = stdout;
    int n_exec = 0, n_view = 0, n_fold = 0, n_placed_concat = 0;
    for (int i = 0; i < p->n_nodes; i++) {
        n_exec += p->nodes[i].kind == ST_PN_EXEC;
        n_view += p->nodes[i].kind == ST_PN_VIEW;
        n_fold += p->nodes[i].kind == ST_PN_FOLDED;
        n_placed_concat += p->nodes[i].n_placed > 0;
    }
    if (o->json) {
        fprintf(f, "{\"model\": ");
        tool_json_string(f, o->model);
        fprintf(f, ", \"precision\": \"%s\", \"precision_policy\": \"%s\", \"kept_f32_nodes\": %d, \"precision_casts\": %d",
                st_dtype_name(p->precision), p->precision == ST_F32 ? "none" : p->precision_strict ? "strict" : "mixed",
                p->n_kept_nodes, p->n_precision_casts);
        fprintf(f, ", \"arena_bytes\": %llu, \"naive_bytes\": %llu, \"constant_bytes\": %llu,",
                (unsigned long long)p->arena_bytes, (unsigned long long)p->naive_bytes,
                (unsigned long long)p->const_bytes);
        fprintf(f, " \"host_arena_bytes\": %llu, \"backend\": \"%s\",", (unsigned long long)p->host_arena_bytes,
                p->target.main->backend);
        fprintf(f, " \"commands\": %d, \"edges\": %d, \"edges_before_reduction\": %d,", dag ? dag->n_cmds : 0,
                dag ? dag->n_edges : 0, dag ? dag->n_edges_found : 0);
        fprintf(f, "\n \"transfers\": [");
        for (int t = 0; t < p->n_transfers; t++) {
            const st_transfer *tr = &p->transfers[t];
            fprintf(f, "%s\n  {\"value\": ", t ? "," : "");
            tool_json_string(f, g->values[tr->value].name);
            fprintf(f, ", \"from\": \"%s\", \"to\": \"%s\", \"command\": %d, \"bytes\": %lld, \"before\": ",
                    device_of(p, 1 - tr->to), device_of(p, tr->to), tr->cmd, (long long)transfer_bytes(tr));
            tool_json_string(f, g->nodes[tr->first].name);
            fputc('}', f);
        }
        fprintf(f, "],");
        fprintf(f, "\n \"values\": [");
        bool first = true;
        for (int v = 0; v < p->n_values; v++) {
            const st_pvalue *pv = &p->values[v];
            if (pv->kind == ST_PV_DEAD) continue;
            fprintf(f, "%s\n  {\"name\": ", first ? "" : ",");
            first = false;
            tool_json_string(f, g->values[v].name);
            fprintf(f, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"storage\": %d, \"offset\": %lld, \"sizes\": ", VKIND[pv->kind],
                    st_dtype_name(pv->t.dtype), pv->storage, (long long)pv->view.offset);
            print_ints(f, pv->t.rank, pv->t.dims);
            fprintf(f, ", \"strides\": ");
            print_ints(f, pv->view.rank, pv->view.strides);
            fprintf(f, ", \"is_view\": %s", pv->kind == ST_PV_VIEW ? "true" : "false");
            /* a root laid out NHWC for its backend (passes/channels_last.c) */
            if (pv->kind == ST_PV_ROOT && st_view_is_channels_last(&pv->view)) fprintf(f, ", \"channels_last\": true");
            if (pv->kind == ST_PV_VIEW) {
                fprintf(f, ", \"view_of\": ");
                tool_json_string(f, g->values[pv->base].name);
            }
            if (pv->concat >= 0) {
                fprintf(f, ", \"in_place_in\": ");
                tool_json_string(f, g->nodes[pv->concat].name);
            }
            const st_node *l = pv->kind == ST_PV_STRUCT ? st_sequence_node(g, v) : NULL;
            if (l) { /* a sequence's elements, or what an optional holds */
                fprintf(f, ", \"elements\": [");
                for (int k = 0; k < l->n_in; k++) {
                    fprintf(f, "%s", k ? ", " : "");
                    tool_json_string(f, g->values[l->in[k]].name);
                }
                fputc(']', f);
            }
            fputc('}', f);
        }
        fprintf(f, "],\n \"nodes\": [");
        for (int i = 0; i < p->n_nodes; i++) {
            const st_pnode *pn = &p->nodes[i];
            fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
            tool_json_string(f, g->nodes[i].name);
            fprintf(f, ", \"op\": ");
            tool_json_string(f, g->nodes[i].op_type);
            fprintf(f, ", \"kind\": \"%s\"", NKIND[pn->kind]);
            if (pn->kind == ST_PN_EXEC) fprintf(f, ", \"command\": %d, \"device\": \"%s\"", pn->cmd, device_of(p, pn->device));
            /* the dtype its command writes: under a lower precision, f32
             * marks a node the mixed-precision policy keeps (docs/precision.md) */
            int wv = pn->out0 >= 0 ? pn->out0 : g->nodes[i].n_out > 0 ? g->nodes[i].out[0] : -1;
            if (pn->kind == ST_PN_EXEC && wv >= 0) fprintf(f, ", \"dtype\": \"%s\"", st_dtype_name(p->values[wv].t.dtype));
            if (pn->out0 >= 0) {
                fprintf(f, ", \"writes\": ");
                tool_json_string(f, g->values[pn->out0].name);
            }
            if (pn->n_placed) {
                fprintf(f, ", \"inputs_in_place\": [");
                int c = 0;
                for (int k = 0; k < g->nodes[i].n_in; k++)
                    if (pn->skip[k]) {
                        fprintf(f, "%s", c++ ? ", " : "");
                        tool_json_string(f, g->values[g->nodes[i].in[k]].name);
                    }
                fprintf(f, "], \"all_in_place\": %s", pn->kind == ST_PN_VIEW ? "true" : "false");
            }
            fputc('}', f);
        }
        fprintf(f, "],\n \"concats_in_place\": [");
        int c = 0;
        for (int i = 0; i < p->n_nodes; i++)
            if (p->nodes[i].n_placed) {
                fprintf(f, "%s", c++ ? ", " : "");
                tool_json_string(f, g->nodes[i].name);
            }
        fprintf(f, "]}\n");
    } else {
        fprintf(f, "plan for %s (precision %s", o->model, st_dtype_name(p->precision));
        if (p->precision != ST_F32)
            fprintf(f, ", policy %s: %d nodes kept f32, %d casts", p->precision_strict ? "strict" : "mixed", p->n_kept_nodes,
                    p->n_precision_casts);
        fprintf(f, ")\n");
        fprintf(f, "nodes: %d run as commands, %d pure views, %d folded; %d concats with inputs written in place\n", n_exec,
                n_view, n_fold, n_placed_concat);
        fprintf(f, "arena: %llu bytes peak, %llu bytes if nothing were reused (%.1f%%)\n", (unsigned long long)p->arena_bytes,
                (unsigned long long)p->naive_bytes, p->naive_bytes ? 100.0 * (double)p->arena_bytes / (double)p->naive_bytes : 100.0);
        if (p->target.mixed) {
            int on_host = 0;
            for (int i = 0; i < p->n_nodes; i++) on_host += p->nodes[i].kind == ST_PN_EXEC && p->nodes[i].device == ST_DEV_HOST;
            fprintf(f, "devices: %d commands on %s, %d on %s (fallback); %d transfers; host arena %llu bytes%s\n",
                    n_exec - on_host, p->target.main->backend, on_host, p->target.host->backend, p->n_transfers,
                    (unsigned long long)p->host_arena_bytes,
                    p->target.shared ? "; zero-copy: host nodes map the device's memory in place" : "");
        }
        long long ordered;
        int chain;
        if (dag) {
            fprintf(f, "hazard DAG: %d commands, %d edges (%d before transitive reduction)", dag->n_cmds, dag->n_edges,
                    dag->n_edges_found);
            /* out of memory fails rather than print a shorter line */
            if (!dag_order(dag, &ordered, &chain)) {
                fputc('\n', f);
                return tool_fail("out of memory");
            }
            fprintf(f, "; %lld of %lld command pairs ordered, longest chain %d", ordered,
                    (long long)dag->n_cmds * (dag->n_cmds - 1) / 2, chain);
            fputc('\n', f);
        }
        int t = 0;
        for (int i = 0; i < p->n_nodes; i++) {
            const st_pnode *pn = &p->nodes[i];
            for (; t < p->n_transfers && p->transfers[t].first <= i; t++)
                fprintf(f, "  xfer   %-14s %s  %s -> %s, %lld bytes\n", "Transfer", p->transfers[t].name,
                        device_of(p, 1 - p->transfers[t].to), device_of(p, p->transfers[t].to),
                        (long long)transfer_bytes(&p->transfers[t]));
            if (pn->kind == ST_PN_FOLDED && g->nodes[i].n_out == 1 && st_sequence_node(g, g->nodes[i].out[0])) {
                /* a sequence or optional: which values it lists (passes/sequence.c) */
                const st_node *l = &g->nodes[i];
                fprintf(f, "  list   %-14s %s\n         -> %s: [", l->op_type, l->name, g->values[l->out[0]].name);
                for (int k = 0; k < l->n_in; k++) fprintf(f, "%s%s", k ? ", " : "", g->values[l->in[k]].name);
                fprintf(f, "]\n");
                continue;
            }
            if (pn->kind == ST_PN_DEAD || pn->kind == ST_PN_FOLDED) continue;
            fprintf(f, "  %-6s %-14s %s", NKIND[pn->kind], g->nodes[i].op_type, g->nodes[i].name);
            if (p->target.mixed && pn->kind == ST_PN_EXEC) fprintf(f, "  @%s", device_of(p, pn->device));
            if (pn->n_placed) fprintf(f, "  [%d inputs in place]", pn->n_placed);
            fputc('\n', f);
            if (pn->kind == ST_PN_FUSED) continue;
            for (int k = 0; k < g->nodes[i].n_out; k++) {
                int v = st_plan_out(p, &g->nodes[i], i, k);
                if (v < 0) continue;
                const st_pvalue *pv = &p->values[v];
                fprintf(f, "         -> %s %s sizes ", g->values[v].name, st_dtype_name(pv->t.dtype));
                print_ints(f, pv->t.rank, pv->t.dims);
                fprintf(f, " strides ");
                print_ints(f, pv->view.rank, pv->view.strides);
                fprintf(f, " storage %d offset %lld%s%s\n", pv->storage, (long long)pv->view.offset,
                        pv->kind == ST_PV_VIEW ? " view of " : "", pv->kind == ST_PV_VIEW ? g->values[pv->base].name : "");
            }
        }
    }
    return 0;
}

int st_cmd_inspect(int argc, char **argv)
{
    /* --ops takes no model: the matrix of the kernel tables */
    bool ops = false, json = false;
    for (int i = 1; i < argc; i++) {
        ops |= !strcmp(argv[i], "--ops");
        json |= !strcmp(argv[i], "--json");
    }
    if (ops) {
        for (int i = 1; i < argc; i++)
            if (strcmp(argv[i], "--ops") && strcmp(argv[i], "--json"))
                return tool_fail("inspect --ops takes only --json, not '%s'", argv[i]);
        return tool_ops_matrix(json);
    }
    tool_opts o;
    if (tool_parse(argc, argv, &o)) return 1;
    if (o.dot && !o.plan) return tool_fail("inspect: --dot draws the plan, so it needs --plan");
    st_model *m;
    if (st_model_load(o.model, &m) != ST_OK) return tool_fail_st("");
    int rc;
    if (!o.plan) {
        rc = model_summary(&o, m);
    } else {
        st_session *s;
        if (tool_session_create(m, &o.so, &s) != ST_OK) {
            st_model_free(m);
            return tool_fail_st(o.model);
        }
        o.quiet = true;
        rc = tool_bind_inputs(&o, m, s);
        if (!rc && (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK)) rc = tool_fail_st(o.model);
        /* a staged plan (plan/stage.c): each stage's plan in turn (as
         * a JSON array of plans) */
        const st_plan *p, *p2;
        const st_dag *dag;
        bool staged = st_session_stage(s, 1, &p2, &dag);
        if (staged && o.json) printf("[");
        for (int k = 0; !rc && st_session_stage(s, k, &p, &dag); k++) {
            if (staged && o.json && k) printf(",\n");
            if (staged && !o.json)
                printf("%sstage %d: %s%s\n", k ? "\n" : "", k + 1, p->cut_note[0] ? "stops where " : "the rest",
                       p->cut_note[0] ? p->cut_note : "");
            rc = plan_summary(&o, p, dag);
            /* a while loop: how it ran (session/loop.c), the host's way or the device's */
            const char *note = st_session_loop_note(s);
            char own[160];
            if (p->loop) snprintf(own, sizeof own, "Loop '%.120s':", p->loop->name);
            if (!rc && !o.json && p->loop && strncmp(note, own, strlen(own)) == 0) printf("ran: %s\n", note);
        }
        if (staged && o.json) printf("]\n");
        if (!rc && o.dot) rc = tool_plan_dot(&o, s);
        st_session_free(s);
    }
    st_model_free(m);
    return rc;
}
