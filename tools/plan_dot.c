/*
 * plan_dot.c — `strata inspect --plan --dot FILE`: a plan and its hazard
 * DAG as a Graphviz graph, one cluster per stage.
 *
 * What is drawn, and why each is there:
 *   - a box per command: its number, op, node name and device (colour by
 *     device; transfers of a mixed plan yellow), and the bytes it writes
 *     (storage [lo..hi)), so reused and shared memory can be read off;
 *   - the DAG's edges, solid, labelled with the hazards that made each
 *     (RAW, WAR, WAW or several, and the storage): these are the only
 *     ordering the executors see;
 *   - the nodes that run no command, dashed: pure views (a slice, a split,
 *     a reshape) and Concats whose inputs were all written in place, with
 *     dotted data-flow edges from what they view to what reads them, so a
 *     view's bytes can be followed from writer to reader;
 *   - a producer that writes straight into a Concat's output says so in
 *     its box, and the Concat how many of its inputs were in place;
 *   - graph inputs and outputs as notes, joined by dotted data flow.
 * Dotted edges are data flow only; ordering is the solid ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/dag.h"
#include "graph/model.h"
#include "plan/plan.h"
#include "tool.h"

/* s inside a double-quoted dot string: quotes and backslashes escaped. */
static void dot_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
}

/* A colour per backend, by its number in the registry: the CPU blue, the
 * next green, orange, ... (transfers yellow). */
static const char *fill_of(const char *device, bool transfer)
{
    static const char *const PALETTE[] = {"#dbeafe", "#dcfce7", "#ffedd5", "#f3e8ff", "#fce7f3", "#e0f2fe"};
    if (transfer) return "#fef3c7";
    st_backend_kind kind = ST_BACKEND_CPU;
    if (st_backend_find(device, &kind) != ST_OK) kind = ST_BACKEND_CPU;
    return PALETTE[(int)kind % (int)(sizeof PALETTE / sizeof *PALETTE)];
}

static const char *label_of(const st_dag *d, int s)
{
    return s >= 0 && s < d->n_storages && d->storages[s] ? d->storages[s]->label : "?";
}

/* What a value's bytes come from: a command, a view node, a graph input
 * (kind 'c', 'v', 'i' and the index), or nothing drawn (a constant). */
static char source_of(const st_plan *p, int v, int *at)
{
    const st_pvalue *pv = &p->values[v];
    if (pv->kind == ST_PV_INPUT) {
        *at = v;
        return 'i';
    }
    if (pv->kind != ST_PV_ROOT && pv->kind != ST_PV_VIEW) return 0;
    int n = pv->producer >= 0 ? pv->producer : p->g->values[v].producer;
    if (n < 0) return 0;
    const st_pnode *pn = &p->nodes[n];
    if (pn->kind == ST_PN_EXEC && pn->cmd >= 0) {
        *at = pn->cmd;
        return 'c';
    }
    if (pn->kind == ST_PN_VIEW) {
        *at = n;
        return 'v';
    }
    return 0;
}

static void print_source(FILE *f, int stage, char kind, int at)
{
    fprintf(f, "s%d_%c%d", stage, kind, at);
}

static void print_extent(FILE *f, const st_pvalue *pv)
{
    int64_t lo, hi;
    st_view_extent(&pv->view, &lo, &hi);
    fprintf(f, "\\n%s [%lld..%lld)", pv->view.storage ? pv->view.storage->label : "?", (long long)lo, (long long)hi);
}

static void stage_dot(FILE *f, const st_plan *p, const st_dag *d, int stage, bool staged)
{
    const st_graph *g = p->g;
    const char *main = p->target.main->backend, *host = p->target.host->backend;
    fprintf(f, "  subgraph cluster_s%d {\n    label=\"", stage);
    if (staged) fprintf(f, "stage %d: ", stage + 1);
    fprintf(f, "%d commands, %d DAG edges", d->n_cmds, d->n_edges);
    if (p->cut_note[0]) {
        fprintf(f, "; stops where ");
        dot_text(f, p->cut_note);
    }
    fprintf(f, "\";\n    style=rounded; color=\"#9ca3af\";\n");
    /* commands */
    for (int c = 0; c < d->n_cmds; c++) {
        const st_cmd *cmd = &d->cmds[c];
        bool transfer = cmd->node < 0;
        const char *dev = cmd->device == ST_DEV_HOST ? host : main;
        fprintf(f, "    s%d_c%d [shape=box, style=\"rounded,filled\", fillcolor=\"%s\", label=\"#%d ", stage, c,
                fill_of(dev, transfer), c);
        dot_text(f, cmd->op->name);
        fprintf(f, " @%s\\n", dev);
        dot_text(f, cmd->gnode->name);
        for (int k = cmd->fp_first; k < cmd->fp_first + cmd->n_fp; k++)
            if (d->fps[k].write) {
                fprintf(f, "\\nwrites ");
                dot_text(f, label_of(d, d->fps[k].storage));
                fprintf(f, " [%lld..%lld)", (long long)d->fps[k].lo, (long long)d->fps[k].hi);
            }
        if (!transfer) {
            const st_pnode *pn = &p->nodes[cmd->node];
            if (pn->n_placed) fprintf(f, "\\n%d of %d inputs written in place", pn->n_placed, cmd->n_in);
            for (int k = 0; k < cmd->n_out; k++) {
                int v = st_plan_out(p, cmd->gnode, cmd->node, k);
                if (v >= 0 && p->values[v].concat >= 0) {
                    fprintf(f, "\\nin place in Concat ");
                    dot_text(f, g->nodes[p->values[v].concat].name);
                }
            }
        }
        fprintf(f, "\"];\n");
    }
    /* nodes that run no command */
    for (int i = 0; i < p->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_VIEW) continue;
        const st_node *n = &g->nodes[i];
        fprintf(f, "    s%d_v%d [shape=box, style=\"rounded,dashed\", label=\"", stage, i);
        dot_text(f, n->op_type);
        fprintf(f, p->nodes[i].n_placed ? " (all inputs in place)\\n" : " (view)\\n");
        dot_text(f, n->name);
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && p->values[n->out[k]].kind != ST_PV_DEAD) print_extent(f, &p->values[n->out[k]]);
        fprintf(f, "\"];\n");
    }
    /* graph inputs and outputs */
    for (int i = 0; i < g->n_inputs + p->n_slots - p->n_inputs; i++) {
        /* then the tensors that sequence and optional inputs hold */
        int v = i < g->n_inputs ? g->inputs[i] : p->slot_value[i - g->n_inputs];
        if (p->values[v].kind != ST_PV_INPUT) continue;
        fprintf(f, "    s%d_i%d [shape=note, label=\"input ", stage, v);
        dot_text(f, g->values[v].name);
        print_extent(f, &p->values[v]);
        fprintf(f, "\"];\n");
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i], at;
        fprintf(f, "    s%d_o%d [shape=note, label=\"output ", stage, i);
        dot_text(f, g->values[v].name);
        if (p->values[v].kind == ST_PV_ROOT || p->values[v].kind == ST_PV_VIEW) print_extent(f, &p->values[v]);
        fprintf(f, "\"];\n");
        char k = source_of(p, v, &at);
        if (k) {
            fprintf(f, "    ");
            print_source(f, stage, k, at);
            fprintf(f, " -> s%d_o%d [style=dotted, color=\"#6b7280\"];\n", stage, i);
        }
    }
    fprintf(f, "  }\n");
    /* the DAG's edges */
    for (int c = 0; c < d->n_cmds; c++) {
        const st_cmd *cmd = &d->cmds[c];
        for (int e = 0; e < cmd->n_pred; e++) {
            int pr = d->preds[cmd->pred_first + e];
            st_fp shared;
            int kinds = st_dag_edge_hazards(d, pr, c, &shared);
            fprintf(f, "  s%d_c%d -> s%d_c%d [label=\"%s", stage, pr, stage, c, st_dag_hazard_name(kinds));
            if (kinds) {
                fputc(' ', f);
                dot_text(f, label_of(d, shared.storage));
            }
            fprintf(f, "\"];\n");
        }
    }
    /* data flow through views, and from inputs: what a view node or a
     * command reads that is a view's or an input's bytes */
    for (int i = 0; i < p->n_nodes; i++) {
        const st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_VIEW && !(pn->kind == ST_PN_EXEC && pn->cmd >= 0)) continue;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
        for (int k = 0; k < n_in; k++) {
            int at;
            if (in[k] < 0) continue;
            char kind = source_of(p, in[k], &at);
            /* command to command is a DAG edge already */
            if (!kind || (kind == 'c' && pn->kind == ST_PN_EXEC)) continue;
            fprintf(f, "  ");
            print_source(f, stage, kind, at);
            if (pn->kind == ST_PN_VIEW) fprintf(f, " -> s%d_v%d", stage, i);
            else fprintf(f, " -> s%d_c%d", stage, pn->cmd);
            fprintf(f, " [style=dotted, color=\"#6b7280\"];\n");
        }
    }
}

bool st_session_stage(const st_session *s, int k, const st_plan **plan, const st_dag **dag);

int tool_plan_dot(const tool_opts *o, const st_session *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return tool_fail("out of memory writing '%s'", o->dot);
    const st_plan *p, *p2;
    const st_dag *d;
    bool staged = st_session_stage(s, 1, &p2, &d);
    fprintf(f, "digraph strata_plan {\n  graph [fontname=\"Helvetica\", fontsize=11, labelloc=t, label=\"");
    dot_text(f, o->model);
    fprintf(f, ": plan and hazard DAG (solid: DAG edges, the only ordering; dotted: data flow through views; "
               "dashed: no command)\"];\n  node [fontname=\"Helvetica\", fontsize=9];\n"
               "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#374151\"];\n");
    for (int k = 0; st_session_stage(s, k, &p, &d); k++) stage_dot(f, p, d, k, staged);
    fprintf(f, "}\n");
    if (fclose(f) != 0 || !text) {
        free(text);
        return tool_fail("out of memory writing '%s'", o->dot);
    }
    /* the whole graph is in memory: a failed write leaves no partial file */
    FILE *out = fopen(o->dot, "w");
    if (!out) {
        free(text);
        return tool_fail("cannot write '%s': %s", o->dot, strerror(errno));
    }
    size_t put = fwrite(text, 1, len, out);
    int bad = fclose(out) != 0 || put != len;
    free(text);
    if (bad) {
        unlink(o->dot);
        return tool_fail("cannot write '%s'", o->dot);
    }
    return 0;
}
