/*
 * fuse_attention.c — an exported scaled dot-product attention becomes one
 * FusedAttention command (ops/linalg.h), for backends that declare
 * ST_CAP_ATTENTION (the CPU and OpenCL: plan.c asks the session backend's
 * table; CUDA has the kernel but fuses only with STRATA_ATTENTION_FUSION=1;
 * a node the device's kernel refuses goes to the CPU's, which every plan
 * has).  STRATA_NO_ATTENTION_FUSION=1 (any value) turns
 * the pass off, to time or check the unfused graph.
 *
 * Owns: the rewrite of the chain
 *   S = MatMul(Q, KT)                        Q [..., Tq, dh], KT [..., dh, Tk]
 *   S = Mul(S, c) | Mul(c, S) | Div(S, c)    optional, c a constant scalar
 *   S = Add(S, M) | Add(M, S)                optional: an additive mask that
 *     | Where(C, f, S) | Where(C, S, f)        broadcasts into S, or a bool one
 *                                              choosing a constant scalar f
 *   P = Softmax(S) over the last axis
 *   Y = MatMul(P, V)                         V [..., Tk, dv]
 * with Identity nodes anywhere in between (passes/fuse.c makes PyTorch's
 * x * 1.0 one), into the last MatMul, which then runs FusedAttention on
 * (Q, KT, V [, M or C]); the other nodes of the chain become ST_PN_FUSED
 * and the values between them dead.  This is what nn.MultiheadAttention
 * exports (scale on Q before the MatMul, so none here; the padding mask
 * added) and what a hand-written GPT block exports (scores times
 * 1/sqrt(dh), then a causal mask through Where).
 *
 * Only an exact match is rewritten: every value in between read by the
 * next node alone and not a graph output, f32 throughout, Q, KT and V of
 * one rank >= 2 with the same leading dims (no broadcasting between them),
 * each step's output of the scores' shape.  Anything else runs as written.
 * Runs after passes/fuse.c and before placement, once per plan, so a new
 * sequence length is matched again on its own shapes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/linalg.h"
#include "ops/norm.h"
#include "plan/plan.h"

/* Node i runs the ai.onnx op `name` (after any rewrite). */
static bool runs(const st_plan *p, int i, const char *name)
{
    const st_op_def *op = st_plan_op(p, &p->g->nodes[i], i);
    return op && !op->domain[0] && !strcmp(op->name, name);
}

/* The running node that makes v, when v is read by `reader` alone, is no
 * graph output and is the node's only output as planned; else -1. */
static int sole_producer(const st_plan *p, const int *count, int v, int reader)
{
    if (v < 0 || p->values[v].kind == ST_PV_CONST || st_plan_sole_reader(p, count, v) != reader) return -1;
    int n = p->values[v].producer;
    if (!st_plan_node_runs(p, n) || p->nodes[n].out0 >= 0 || p->g->nodes[n].out[0] != v) return -1;
    return n;
}

static bool is_f32(const st_plan *p, int v) { return v >= 0 && p->values[v].t.dtype == ST_F32; }

/* The f32 value of a constant one-element v, or NAN. */
static float const_scalar(const st_plan *p, int v)
{
    if (v < 0) return NAN;
    const st_pvalue *pv = &p->values[v];
    if (pv->kind != ST_PV_CONST || pv->t.dtype != ST_F32 || st_numel(pv->t.rank, pv->t.dims) != 1) return NAN;
    return *(const float *)pv->t.data;
}

#define MAX_CHAIN 16

/* Whether v, read by `reader` alone, is made by a MatMul through Identity
 * and Mul/Div nodes only (the scores side of a mask's Add). */
static bool leads_to_matmul(const st_plan *p, const int *count, int v, int reader)
{
    for (int steps = 0; steps < MAX_CHAIN; steps++) {
        int n = sole_producer(p, count, v, reader);
        if (n < 0) return false;
        if (runs(p, n, "MatMul")) return true;
        if (!runs(p, n, "Identity") && !runs(p, n, "Mul") && !runs(p, n, "Div")) return false;
        int n_in;
        const int *in = st_plan_in(p, &p->g->nodes[n], n, &n_in);
        v = n_in == 2 && !isnan(const_scalar(p, in[0])) ? in[1] : in[0];
        reader = n;
    }
    return false;
}

typedef struct match {
    int q, kt, v, mask;            /* inputs of the fused node (mask -1: none) */
    st_attention_state s;
    int chain[MAX_CHAIN];          /* the nodes absorbed */
    int n_chain;
} match;

/* Whether MatMul node y ends an attention chain; fills *m. */
static bool match_at(const st_plan *p, const int *count, int y, match *m)
{
    const st_graph *g = p->g;
    const st_node *yn = &g->nodes[y];
    if (!runs(p, y, "MatMul") || p->nodes[y].op || p->nodes[y].out0 >= 0 || yn->n_in != 2 || yn->out[0] < 0) return false;
    memset(m, 0, sizeof *m);
    m->mask = -1;
    int pv = yn->in[0], out = yn->out[0];
    m->v = yn->in[1];
    int sm = sole_producer(p, count, pv, y);
    if (sm < 0 || !runs(p, sm, "Softmax") || p->nodes[sm].op) return false;
    const st_norm_state *ns = p->nodes[sm].state;
    int r = p->values[pv].t.rank;
    if (!ns || ns->kind != ST_N_SOFTMAX || r < 2 || ns->mask != (uint32_t)1 << (r - 1)) return false;
    m->chain[m->n_chain++] = sm;
    /* walk up from the softmax's input to the scores' MatMul */
    int x = g->nodes[sm].in[0], scores = -1;
    bool scaled = false;
    for (;;) {
        if (!is_f32(p, x) || !st_plan_same_shape(p, x, pv)) return false;
        int n = sole_producer(p, count, x, m->n_chain ? m->chain[m->n_chain - 1] : sm);
        if (n < 0 || m->n_chain >= MAX_CHAIN) return false;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[n], n, &n_in);
        m->chain[m->n_chain++] = n;
        if (runs(p, n, "Identity") && n_in == 1) {
            x = in[0];
        } else if (runs(p, n, "MatMul") && !p->nodes[n].op && n_in == 2) {
            scores = n;
            break;
        } else if ((runs(p, n, "Mul") || runs(p, n, "Div")) && !p->nodes[n].op && n_in == 2 && !scaled) {
            bool div = runs(p, n, "Div");
            int side = div ? 0 : !isnan(const_scalar(p, in[1])) ? 0 : 1;
            float c = const_scalar(p, in[1 - side]);
            if (isnan(c)) return false;
            m->s.scale_kind = div ? ST_ATT_SCALE_DIV : ST_ATT_SCALE_MUL;
            m->s.scale = c;
            scaled = true;
            x = in[side];
        } else if (runs(p, n, "Add") && !p->nodes[n].op && n_in == 2 && !scaled && m->mask < 0 && in[0] != in[1]) {
            /* the side that continues the chain is the one that leads up
             * to a MatMul; a mask may itself be made by a node (an
             * Identity of PyTorch's mask * 1.0), so look, and refuse
             * when both do */
            int side = -1;
            for (int k = 0; k < 2; k++)
                if (leads_to_matmul(p, count, in[k], n)) side = side < 0 ? k : 2;
            if (side == 2) return false;
            if (side < 0 || !is_f32(p, in[1 - side])) return false;
            m->s.mask_kind = ST_ATT_MASK_ADD;
            m->mask = in[1 - side];
            x = in[side];
        } else if (runs(p, n, "Where") && !p->nodes[n].op && n_in == 3 && !scaled && m->mask < 0) {
            int c = in[0];
            int side = !isnan(const_scalar(p, in[1])) ? 2 : !isnan(const_scalar(p, in[2])) ? 1 : -1;
            if (side < 0 || c == in[side] || p->values[c].t.dtype != ST_BOOL || p->values[c].t.rank > r) return false;
            m->s.mask_kind = ST_ATT_MASK_WHERE;
            m->s.fill = const_scalar(p, in[3 - side]);
            m->s.fill_when = side == 2;   /* Where(C, f, S): f where C is true */
            m->mask = c;
            x = in[side];
        } else {
            return false;
        }
    }
    const st_node *sn = &g->nodes[scores];
    m->q = sn->in[0];
    m->kt = sn->in[1];
    int ids[3] = {m->q, m->kt, m->v};
    for (int k = 0; k < 3; k++)
        if (!is_f32(p, ids[k]) || p->values[ids[k]].t.rank != r) return false;
    const st_tinfo *q = &p->values[m->q].t, *kt = &p->values[m->kt].t, *v = &p->values[m->v].t, *o = &p->values[out].t;
    for (int d = 0; d < r - 2; d++)
        if (kt->dims[d] != q->dims[d] || v->dims[d] != q->dims[d] || o->dims[d] != q->dims[d]) return false;
    if (kt->dims[r - 2] != q->dims[r - 1] || v->dims[r - 2] != kt->dims[r - 1] || !is_f32(p, out)) return false;
    /* the mask broadcasts into the scores (each step kept their shape) */
    if (m->mask >= 0) {
        const st_tinfo *mt = &p->values[m->mask].t, *st = &p->values[pv].t;
        if (mt->rank > r) return false;
        for (int d = 0; d < mt->rank; d++)
            if (mt->dims[d] != 1 && mt->dims[d] != st->dims[r - mt->rank + d]) return false;
    }
    return true;
}

st_status st_pass_fuse_attention(st_plan *p)
{
    if (getenv("STRATA_NO_ATTENTION_FUSION")) return ST_OK;
    const st_graph *g = p->g;
    int *count = calloc((size_t)p->n_values + 1, sizeof *count);
    if (!count) return st_error(ST_ERR_NOMEM, "out of memory fusing attention");
    st_plan_count_readers(p, count);
    const st_op_def *fa = st_op_find("ai.strata", "FusedAttention");
    for (int y = 0; y < g->n_nodes && fa; y++) {
        match m;
        if (!st_plan_node_runs(p, y) || !match_at(p, count, y, &m)) continue;
        int n_in = m.mask >= 0 ? 4 : 3;
        int *in = malloc((size_t)n_in * sizeof *in);
        st_attention_state *s = malloc(sizeof *s);
        if (!in || !s) {
            free(in);
            free(s);
            free(count);
            /* unfused, the graph would round the same; but a plan must not
             * depend on how much memory was free when it was made */
            return st_error(ST_ERR_NOMEM, "out of memory fusing attention at node '%s'", g->nodes[y].name);
        }
        *s = m.s;
        in[0] = m.q;
        in[1] = m.kt;
        in[2] = m.v;
        if (m.mask >= 0) in[3] = m.mask;
        free(p->nodes[y].state);
        p->nodes[y].state = s;
        p->nodes[y].op = fa;
        free(p->nodes[y].in);
        p->nodes[y].in = in;
        p->nodes[y].n_in = n_in;
        for (int k = 0; k < n_in; k++)
            if (p->values[in[k]].last_use < y) p->values[in[k]].last_use = y;
        for (int k = 0; k < m.n_chain; k++) {
            p->nodes[m.chain[k]].kind = ST_PN_FUSED;
            p->values[g->nodes[m.chain[k]].out[0]].kind = ST_PV_DEAD;
        }
        st_plan_count_readers(p, count);
    }
    free(count);
    return ST_OK;
}
