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
 *
 * Before that, a HardSwish that an exporter spelled out as
 *   Div(Mul(X, Clip(Add(X, 3), 0, 6)), 6)            (Paddle's export)
 * becomes one HardSwish node (the Div node, rewritten to read X): one pass
 * instead of four, and in f16 the product X * 6, which can exceed f16's
 * range where the result does not, is never stored.  Likewise the exact
 * GELU as PyTorch exports nn.GELU() before opset 20,
 *   Mul(Mul(X, Add(Erf(Div(X, sqrt 2)), 1)), 0.5)   (or X * (1 / sqrt 2))
 * becomes one Gelu node (the last Mul, rewritten): one pass over a
 * transformer's widest activation instead of five.  And a float Mul or
 * Div by exactly 1 that does not broadcast (PyTorch's attention export
 * multiplies its [heads, seq, seq] scores and mask by 1.0) becomes an
 * Identity, which the layout pass makes a view: x * 1 and x / 1 are x
 * in IEEE arithmetic (a signalling NaN would stay signalling).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "plan/plan.h"

typedef struct users {
    int *count;          /* readers among running nodes, per value */
} users;

bool st_plan_node_runs(const st_plan *p, int node) { return node >= 0 && p->nodes[node].kind == ST_PN_EXEC; }

/* The only running node reading value v (not a graph output), or -1;
 * count is st_plan_count_readers's. */
int st_plan_sole_reader(const st_plan *p, const int *count, int v)
{
    const st_graph *g = p->g;
    if (count[v] != 1 || g->values[v].is_output) return -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!st_plan_node_runs(p, i)) continue;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
        for (int k = 0; k < n_in; k++)
            if (in[k] == v) return i;
    }
    return -1;
}

/* The epilogue for a unary activation node, or false if it cannot be one
 * (plan.h; passes/fuse_matmul.c uses it too). */
bool st_plan_act_of(const st_plan *p, int a, st_epilogue *e)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[a];
    const st_ew_state *s = p->nodes[a].state;
    const char *op = st_plan_op(p, n, a)->name;
    static const char *FUSABLE[] = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip"};
    bool ok = false;
    for (size_t i = 0; i < sizeof FUSABLE / sizeof *FUSABLE; i++) ok |= strcmp(op, FUSABLE[i]) == 0;
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

/* The constant scalar value v holds, or NAN. */
static float const_scalar(const st_plan *p, int v)
{
    if (v < 0) return NAN;
    const st_pvalue *pv = &p->values[v];
    if (pv->kind != ST_PV_CONST || st_numel(pv->t.rank, pv->t.dims) != 1) return NAN;
    return (float)st_load_f64(pv->t.dtype, pv->t.data);
}

/* Whether v is a scalar constant holding `want` as its dtype stores it:
 * under --precision f16 or bf16 the exporter's f32 constants are already
 * rounded (sqrt 2 is 1.4140625 in f16), and a pattern must still match. */
static bool const_is(const st_plan *p, int v, float want)
{
    float got = const_scalar(p, v);
    if (got == want || isnan(got)) return got == want;
    uint8_t r[8];
    st_dtype t = p->values[v].t.dtype;
    if (st_dtype_size(t) > sizeof r) return false;
    st_convert(t, r, ST_F32, &want, 1);
    return got == (float)st_load_f64(t, r);
}

/* The node producing v, if it runs and has op type `op`. */
static int producer_is(const st_plan *p, const st_graph *g, int v, const char *op)
{
    if (v < 0 || g->values[v].is_output) return -1;
    int n = p->values[v].producer;
    if (!st_plan_node_runs(p, n) || strcmp(g->nodes[n].op_type, op) != 0 || g->nodes[n].domain[0]) return -1;
    return n;
}

bool st_plan_same_shape(const st_plan *p, int a, int b)
{
    const st_tinfo *x = &p->values[a].t, *y = &p->values[b].t;
    if (x->rank != y->rank) return false;
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] != y->dims[d]) return false;
    return true;
}

/* count[v]: how many input slots of running nodes read value v. */
void st_plan_count_readers(const st_plan *p, int *count)
{
    const st_graph *g = p->g;
    memset(count, 0, (size_t)p->n_values * sizeof *count);
    for (int i = 0; i < g->n_nodes; i++) {
        if (!st_plan_node_runs(p, i)) continue;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
        for (int k = 0; k < n_in; k++)
            if (in[k] >= 0) count[in[k]]++;
    }
}

/* Div(Mul(X, Clip(Add(X, 3), 0, 6)), 6) -> HardSwish(X), on node `div`.
 * False only when out of memory. */
static bool rewrite_hardswish(st_plan *p, const st_graph *g, const users *u, int div)
{
    const st_node *dn = &g->nodes[div];
    if (dn->n_in != 2 || dn->out[0] < 0 || const_scalar(p, dn->in[1]) != 6.0f) return true;
    int m = dn->in[0], mul = producer_is(p, g, m, "Mul");
    if (mul < 0 || u->count[m] != 1) return true;
    const st_node *mn = &g->nodes[mul];
    for (int side = 0; side < 2; side++) {
        int x = mn->in[side], c = mn->in[1 - side], clip = producer_is(p, g, c, "Clip");
        if (clip < 0 || u->count[c] != 1) continue;
        const st_ew_state *cs = p->nodes[clip].state;
        const st_node *cn = &g->nodes[clip];
        float lo = cs->alpha, hi = cs->beta;
        if (cn->n_in > 1 && cn->in[1] >= 0) lo = const_scalar(p, cn->in[1]);
        if (cn->n_in > 2 && cn->in[2] >= 0) hi = const_scalar(p, cn->in[2]);
        if (lo != 0.0f || hi != 6.0f) continue;
        int a = cn->in[0], add = producer_is(p, g, a, "Add");
        if (add < 0 || u->count[a] != 1) continue;
        const st_node *an = &g->nodes[add];
        if (!((an->in[0] == x && const_scalar(p, an->in[1]) == 3.0f) || (an->in[1] == x && const_scalar(p, an->in[0]) == 3.0f)))
            continue;
        if (!st_plan_same_shape(p, x, dn->out[0]) || !st_dtype_is_float(p->values[x].t.dtype)) continue;
        const st_op_def *hs = st_op_find("", "HardSwish");
        int *in = malloc(sizeof *in);
        st_ew_state *st = calloc(1, sizeof *st);
        if (!hs || !in || !st) {
            free(in);
            free(st);
            return hs == NULL;
        }
        st->code = ST_U_HARD_SWISH;
        in[0] = x;
        free(p->nodes[div].state);
        p->nodes[div].state = st;
        p->nodes[div].op = hs;
        p->nodes[div].in = in;
        p->nodes[div].n_in = 1;
        int gone[3] = {add, clip, mul};
        for (int k = 0; k < 3; k++) {
            p->nodes[gone[k]].kind = ST_PN_FUSED;
            p->values[g->nodes[gone[k]].out[0]].kind = ST_PV_DEAD;
        }
        if (p->values[x].last_use < div) p->values[x].last_use = div;
        return true;
    }
    return true;
}

/* The other input of binary node n when one of its two inputs is v, or -1. */
static int other_input(const st_node *n, int v)
{
    if (n->n_in != 2) return -1;
    return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : -1;
}

/* The constant scalar operand of binary node n (either side), NAN if none;
 * *var gets the other operand. */
static float scalar_operand(const st_plan *p, const st_node *n, int *var)
{
    *var = -1;
    if (n->n_in != 2) return NAN;
    for (int side = 0; side < 2; side++) {
        float c = const_scalar(p, n->in[side]);
        if (!isnan(c)) {
            *var = n->in[1 - side];
            return c;
        }
    }
    return NAN;
}

/* Mul(Mul(X, Add(Erf(Div(X, sqrt 2)), 1)), 0.5) -> Gelu(X), on the last
 * Mul `mul` (Mul(X, 1 / sqrt 2) for the Div is taken too).  The constants
 * must be those values as f32 (the exporter writes them so); every value
 * in between has the one reader.  False only when out of memory. */
static bool rewrite_gelu(st_plan *p, const st_graph *g, const users *u, int mul)
{
    const st_node *mn = &g->nodes[mul];
    int m1v;
    if (mn->out[0] < 0 || scalar_operand(p, mn, &m1v) != 0.5f) return true;
    int m1 = producer_is(p, g, m1v, "Mul");
    if (m1 < 0 || u->count[m1v] != 1) return true;
    const st_node *n1 = &g->nodes[m1];
    for (int side = 0; side < 2; side++) {
        int x = n1->in[side], av = n1->in[1 - side], add = producer_is(p, g, av, "Add");
        if (add < 0 || u->count[av] != 1) continue;
        int ev;
        if (scalar_operand(p, &g->nodes[add], &ev) != 1.0f) continue;
        int erf = producer_is(p, g, ev, "Erf");
        if (erf < 0 || u->count[ev] != 1) continue;
        int dv = g->nodes[erf].in[0], div = producer_is(p, g, dv, "Div"), scale = producer_is(p, g, dv, "Mul");
        if (u->count[dv] != 1 || (div < 0 && scale < 0)) continue;
        int by = div >= 0 ? div : scale;
        const st_node *dn = &g->nodes[by];
        int cv = div >= 0 ? (dn->in[0] == x ? dn->in[1] : -1) : other_input(dn, x);
        if (cv < 0 || !const_is(p, cv, div >= 0 ? 1.41421356237309505f : 0.70710678118654752f)) continue;
        if (!st_plan_same_shape(p, x, mn->out[0]) || !st_dtype_is_float(p->values[x].t.dtype)) continue;
        const st_op_def *gelu = st_op_find("", "Gelu");
        int *in = malloc(sizeof *in);
        st_ew_state *st = calloc(1, sizeof *st);
        if (!gelu || !in || !st) {
            free(in);
            free(st);
            return gelu == NULL;
        }
        st->code = ST_U_GELU;
        in[0] = x;
        free(p->nodes[mul].state);
        p->nodes[mul].state = st;
        p->nodes[mul].op = gelu;
        p->nodes[mul].in = in;
        p->nodes[mul].n_in = 1;
        int gone[4] = {by, erf, add, m1};
        for (int k = 0; k < 4; k++) {
            p->nodes[gone[k]].kind = ST_PN_FUSED;
            p->values[g->nodes[gone[k]].out[0]].kind = ST_PV_DEAD;
        }
        if (p->values[x].last_use < mul) p->values[x].last_use = mul;
        return true;
    }
    return true;
}

/* Mul(X, 1), Mul(1, X) or Div(X, 1) -> Identity(X), on node i, when X is
 * float and has the output's shape.  False only when out of memory. */
static bool rewrite_unit(st_plan *p, const st_graph *g, int i)
{
    const st_node *n = &g->nodes[i];
    if (n->n_in != 2 || n->out[0] < 0 || g->values[n->out[0]].is_output) return true;
    bool div = !strcmp(n->op_type, "Div");
    int x = -1;
    for (int side = div ? 1 : 0; side < 2 && x < 0; side++) {
        int c = n->in[side];
        if (c < 0 || p->values[c].kind != ST_PV_CONST || st_numel(p->values[c].t.rank, p->values[c].t.dims) != 1 ||
            !st_dtype_is_float(p->values[c].t.dtype) || st_load_f64(p->values[c].t.dtype, p->values[c].t.data) != 1.0)
            continue;
        x = n->in[1 - side];
    }
    if (x < 0 || !st_plan_same_shape(p, x, n->out[0]) || !st_dtype_is_float(p->values[x].t.dtype) ||
        p->values[x].t.dtype != p->values[n->out[0]].t.dtype)
        return true;
    const st_op_def *id = st_op_find("", "Identity");
    int *in = malloc(sizeof *in);
    if (!id || !in) {
        free(in);
        return id == NULL;
    }
    in[0] = x;
    free(p->nodes[i].state);
    p->nodes[i].state = NULL;
    p->nodes[i].op = id;
    p->nodes[i].in = in;
    p->nodes[i].n_in = 1;
    if (p->values[x].last_use < i) p->values[x].last_use = i;
    return true;
}

/* Fusion changes the bits of a result (an epilogue rounds once where
 * separate ops round twice), so a plan that could not fuse for want of
 * memory is an error, not a plan that gives other answers. */
static st_status fuse_nomem(void) { return st_error(ST_ERR_NOMEM, "out of memory fusing activations into their producers"); }

st_status st_pass_fuse(st_plan *p)
{
    const st_graph *g = p->g;
    users u = {calloc((size_t)p->n_values + 1, sizeof(int))};
    if (!u.count) return fuse_nomem();
    st_plan_count_readers(p, u.count);
    for (int i = 0; i < g->n_nodes; i++)
        if (st_plan_node_runs(p, i) && !strcmp(g->nodes[i].op_type, "Div") && !g->nodes[i].domain[0]) {
            if (!rewrite_hardswish(p, g, &u, i)) {
                free(u.count);
                return fuse_nomem();
            }
            if (p->nodes[i].op) st_plan_count_readers(p, u.count);
        }
    for (int i = 0; i < g->n_nodes; i++)
        if (st_plan_node_runs(p, i) && !p->nodes[i].op && !g->nodes[i].domain[0] &&
            (!strcmp(g->nodes[i].op_type, "Mul") || !strcmp(g->nodes[i].op_type, "Div")) && !rewrite_unit(p, g, i)) {
            free(u.count);
            return fuse_nomem();
        }
    st_plan_count_readers(p, u.count);
    for (int i = 0; i < g->n_nodes; i++)
        if (st_plan_node_runs(p, i) && !p->nodes[i].op && !strcmp(g->nodes[i].op_type, "Mul") && !g->nodes[i].domain[0]) {
            if (!rewrite_gelu(p, g, &u, i)) {
                free(u.count);
                return fuse_nomem();
            }
            if (p->nodes[i].op) st_plan_count_readers(p, u.count);
        }
    for (int i = 0; i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        if (!st_plan_node_runs(p, i) || strcmp(n->op_type, "Conv") != 0 || n->domain[0] || n->out[0] < 0) continue;
        int x = n->out[0];
        /* the f64 kernel is a reference loop without an epilogue */
        if (g->values[x].is_output || p->values[x].t.dtype == ST_F64) continue;
        st_epilogue e = {0};
        int a = st_plan_sole_reader(p, u.count, x);
        if (a >= 0 && st_plan_act_of(p, a, &e) && g->nodes[a].out[0] >= 0) {
            absorb(p, g, i, g->nodes[a].out[0], e, &a, 1);
            continue;
        }
        /* SiLU: X read by exactly a Sigmoid and a Mul(X, Sigmoid(X)) */
        if (u.count[x] != 2) continue;
        int sig = -1, mul = -1;
        for (int j = i + 1; j < g->n_nodes; j++) {
            if (!st_plan_node_runs(p, j)) continue;
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
        if (s_out < 0 || st_plan_sole_reader(p, u.count, s_out) != mul || m->n_in != 2 || m->out[0] < 0) continue;
        if (!((m->in[0] == x && m->in[1] == s_out) || (m->in[1] == x && m->in[0] == s_out))) continue;
        /* Mul's broadcasting is trivial here: both operands have X's shape */
        e.act = ST_U_SILU + 1;
        int fused[2] = {sig, mul};
        absorb(p, g, i, m->out[0], e, fused, 2);
    }
    free(u.count);
    return ST_OK;
}
