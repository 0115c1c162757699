/*
 * fuse.c — activations folded into the op that feeds them.
 *
 * Owns: nodes[].out0 and the ST_PN_FUSED kind, the producing op's
 * epilogue, and values[].producer of the moved output.  A Conv whose
 * output X is read only by an activation becomes one command that writes
 * the activation's output Y directly: X is never stored (one write instead
 * of two, and with --precision bf16 one rounding instead of two or three).
 * Patterns:
 *   Conv -> Relu | Sigmoid | Tanh | LeakyRelu | HardSigmoid | HardSwish | Clip
 *   Conv -> Sigmoid, Mul(X, Sigmoid(X))          (SiLU, as PyTorch exports it)
 * Legality: X (and the Sigmoid's output) have no reader outside the
 * pattern and are not graph outputs; the activation's other inputs are
 * constants; the activation runs as a command.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "plan/plan.h"

typedef struct users {
    int *count;          /* readers among running nodes, per value */
} users;

static bool is_exec(const st_plan *p, int node) { return node >= 0 && p->nodes[node].kind == ST_PN_EXEC; }

/* The only running node reading value v, or -1. */
static int sole_reader(const st_plan *p, const st_graph *g, const users *u, int v)
{
    if (u->count[v] != 1 || g->values[v].is_output) return -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!is_exec(p, i)) continue;
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] == v) return i;
    }
    return -1;
}

/* The epilogue for a unary activation node, or false if it cannot be one. */
static bool act_of(const st_plan *p, const st_graph *g, int a, st_epilogue *e)
{
    const st_node *n = &g->nodes[a];
    const st_ew_state *s = p->nodes[a].state;
    static const char *FUSABLE[] = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip"};
    bool ok = false;
    for (size_t i = 0; i < sizeof FUSABLE / sizeof *FUSABLE; i++) ok |= strcmp(n->op_type, FUSABLE[i]) == 0;
    if (!ok || !s) return false;
    e->act = s->code + 1;
    e->alpha = s->alpha;
    e->beta = s->beta;
    if (s->code == ST_U_CLIP) {
        /* bounds given as inputs must be constants */
        for (int k = 1; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0) continue;
            const st_pvalue *pv = &p->values[v];
            if (pv->kind != ST_PV_CONST) return false;
            float b = st_load_f32(pv->t.dtype, pv->t.data);
            if (k == 1) e->alpha = b;
            else e->beta = b;
        }
    }
    return true;
}

/* The conv's command now writes `out`; the values in between are never stored. */
static void absorb(st_plan *p, const st_graph *g, int conv, int out, st_epilogue e, const int *fused, int n_fused)
{
    st_conv_state *cs = p->nodes[conv].state;
    cs->epi = e;
    p->values[g->nodes[conv].out[0]].kind = ST_PV_DEAD;
    p->nodes[conv].out0 = out;
    p->values[out].producer = conv;
    for (int i = 0; i < n_fused; i++) {
        p->nodes[fused[i]].kind = ST_PN_FUSED;
        int v = g->nodes[fused[i]].out[0];
        if (v != out) p->values[v].kind = ST_PV_DEAD;
    }
}

void st_pass_fuse(st_plan *p)
{
    const st_graph *g = p->model->g;
    users u = {calloc((size_t)p->n_values + 1, sizeof(int))};
    if (!u.count) return; /* fusion is an optimisation */
    for (int i = 0; i < g->n_nodes; i++) {
        if (!is_exec(p, i)) continue;
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] >= 0) u.count[g->nodes[i].in[k]]++;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        if (!is_exec(p, i) || strcmp(n->op_type, "Conv") != 0 || n->domain[0] || n->out[0] < 0) continue;
        int x = n->out[0];
        /* the f64 kernel is a reference loop without an epilogue */
        if (g->values[x].is_output || p->values[x].t.dtype == ST_F64) continue;
        st_epilogue e = {0};
        int a = sole_reader(p, g, &u, x);
        if (a >= 0 && act_of(p, g, a, &e) && g->nodes[a].out[0] >= 0) {
            absorb(p, g, i, g->nodes[a].out[0], e, &a, 1);
            continue;
        }
        /* SiLU: X read by exactly a Sigmoid and a Mul(X, Sigmoid(X)) */
        if (u.count[x] != 2) continue;
        int sig = -1, mul = -1;
        for (int j = i + 1; j < g->n_nodes; j++) {
            if (!is_exec(p, j)) continue;
            const st_node *c = &g->nodes[j];
            bool reads = false;
            for (int k = 0; k < c->n_in; k++) reads |= c->in[k] == x;
            if (!reads) continue;
            if (!strcmp(c->op_type, "Sigmoid") && !c->domain[0]) sig = j;
            else if (!strcmp(c->op_type, "Mul") && !c->domain[0]) mul = j;
        }
        if (sig < 0 || mul < 0) continue;
        int s_out = g->nodes[sig].out[0];
        const st_node *m = &g->nodes[mul];
        if (s_out < 0 || sole_reader(p, g, &u, s_out) != mul || m->n_in != 2 || m->out[0] < 0) continue;
        if (!((m->in[0] == x && m->in[1] == s_out) || (m->in[1] == x && m->in[0] == s_out))) continue;
        /* Mul's broadcasting is trivial here: both operands have X's shape */
        e.act = ST_U_SILU + 1;
        int fused[2] = {sig, mul};
        absorb(p, g, i, m->out[0], e, fused, 2);
    }
    free(u.count);
}
