/*
 * fuse_add_norm.c — a residual Add read only by a LayerNormalization
 * becomes one AddLayerNormalization (ai.strata, ops/norm.c), for backends
 * that declare ST_CAP_ADD_NORM (the CPU).
 *
 * Owns: the rewrite of
 *   S = Add(X, R)                     X, R and S of one shape, f32
 *   Y = LayerNormalization(S, Scale [, B])   with no Mean or InvStdDev output
 * into the LayerNormalization node, which then runs AddLayerNormalization
 * on (X, R, Scale [, B]); the Add becomes ST_PN_FUSED and S dead.  A
 * post-norm transformer block (nn.TransformerEncoderLayer's default,
 * LN(x + f(x))) has two per layer: each was a pass writing S and a pass
 * reading it back.  The kernel rounds the sum to f32 as the Add does, so
 * results keep their bits.
 *
 * Not handled: a sum that other nodes read too (the pre-norm form, where S
 * is also the next residual): the fused node would have to write S as a
 * second output, and a plan node can redirect only its output 0
 * (st_pnode.out0).  Such Adds run as written.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "passes/passes.h"
#include "plan/plan.h"

/* Node i runs the ai.onnx op `name` (after any rewrite). */
static bool runs(const st_plan *p, int i, const char *name)
{
    const st_op_def *op = st_plan_op(p, &p->g->nodes[i], i);
    return op && !op->domain[0] && !strcmp(op->name, name);
}

static bool is_f32(const st_plan *p, int v) { return v >= 0 && p->values[v].t.dtype == ST_F32; }

/* False only when out of memory. */
static bool fuse_at(st_plan *p, const int *count, const st_op_def *aln, int l)
{
    const st_graph *g = p->g;
    const st_node *ln = &g->nodes[l];
    const st_norm_state *ns = p->nodes[l].state;
    int n_in;
    const int *in = st_plan_in(p, ln, l, &n_in);
    if (!ns || ns->kind != ST_N_LAYER_NORM || ns->residual || p->nodes[l].op || p->nodes[l].out0 >= 0 || n_in < 2 ||
        ln->n_out < 1 || ln->out[0] < 0 || !is_f32(p, ln->out[0]))
        return true;
    for (int k = 1; k < ln->n_out; k++)
        if (ln->out[k] >= 0) return true; /* Mean, InvStdDev: not made by the fused kernel */
    int s = in[0];
    if (s < 0 || p->values[s].kind == ST_PV_CONST || st_plan_sole_reader(p, count, s) != l) return true;
    int a = p->values[s].producer;
    if (!st_plan_node_runs(p, a) || !runs(p, a, "Add") || p->nodes[a].out0 >= 0 || g->nodes[a].out[0] != s) return true;
    const st_ew_state *es = p->nodes[a].state;
    int a_n;
    const int *ain = st_plan_in(p, &g->nodes[a], a, &a_n);
    if (a_n != 2 || (es && es->b_units) || ain[0] < 0 || ain[1] < 0) return true;
    for (int k = 0; k < 2; k++)
        if (!is_f32(p, ain[k]) || !st_plan_same_shape(p, ain[k], s)) return true;
    if (!is_f32(p, s)) return true;
    int nn = n_in + 1;
    int *nin = malloc((size_t)nn * sizeof *nin);
    st_norm_state *st = malloc(sizeof *st);
    if (!nin || !st) {
        free(nin);
        free(st);
        return false;
    }
    *st = *ns;
    st->residual = true;
    nin[0] = ain[0];
    nin[1] = ain[1];
    for (int k = 1; k < n_in; k++) nin[k + 1] = in[k];
    free(p->nodes[l].state);
    p->nodes[l].state = st;
    p->nodes[l].op = aln;
    free(p->nodes[l].in);
    p->nodes[l].in = nin;
    p->nodes[l].n_in = nn;
    p->nodes[a].kind = ST_PN_FUSED;
    p->values[s].kind = ST_PV_DEAD;
    /* X and R are read later now: at the LayerNorm, not the Add */
    for (int k = 0; k < 2; k++)
        if (p->values[ain[k]].last_use < l) p->values[ain[k]].last_use = l;
    return true;
}

/* As in passes/fuse.c: a plan must not depend on how much memory was free
 * when it was made, so running out is an error. */
st_status st_pass_fuse_add_norm(st_plan *p)
{
    const st_graph *g = p->g;
    const st_op_def *aln = st_op_find("ai.strata", "AddLayerNormalization");
    if (!aln) return ST_OK;
    int *count = calloc((size_t)p->n_values + 1, sizeof *count);
    if (!count) return st_error(ST_ERR_NOMEM, "out of memory fusing residual Adds into LayerNormalization");
    st_plan_count_readers(p, count);
    for (int l = 0; l < g->n_nodes; l++) {
        if (!st_plan_node_runs(p, l) || !runs(p, l, "LayerNormalization")) continue;
        if (!fuse_at(p, count, aln, l)) {
            free(count);
            return st_error(ST_ERR_NOMEM, "out of memory fusing the residual Add into node '%s'", g->nodes[l].name);
        }
        if (p->nodes[l].op) st_plan_count_readers(p, count);
    }
    free(count);
    return ST_OK;
}
