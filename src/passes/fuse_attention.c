/*
 * fuse_attention.c — an exported scaled dot-product attention becomes one
 * FusedAttention command (ops/linalg.h), for backends that declare
 * ST_CAP_ATTENTION (f32 chains: the CPU and OpenCL) or ST_CAP_ATTENTION_F16
 * (f16 chains: none yet; CUDA's kernels, f32 and f16, fuse with
 * STRATA_ATTENTION_FUSION=1); passes/pipeline.c asks the session
 * backend's table.  A node the device's kernel refuses goes to the CPU's
 * (f32 only).  STRATA_NO_ATTENTION_FUSION=1 (any value) turns
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
 * next node alone and not a graph output, one dtype throughout (f32, or
 * f16 in a plan lowered by --precision f16 where the backend's kernel
 * takes it: passes/pipeline.c says which; an additive mask may stay f32), Q, KT and V of
 * one rank >= 2 with the same leading dims (no broadcasting between them),
 * each step's output of the scores' shape.  Anything else runs as written.
 * Runs after passes/fuse.c and before placement, once per plan, so a new
 * sequence length is matched again on its own shapes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "graph/model.h"
#include "ops/linalg.h"
#include "ops/norm.h"
#include "passes/passes.h"
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
static bool is_dt(const st_plan *p, int v, st_dtype dt) { return v >= 0 && p->values[v].t.dtype == dt; }

/* The value of a constant one-element v (f32, or f16 in a lowered plan),
 * or NAN. */
static float const_scalar(const st_plan *p, int v)
{
    if (v < 0) return NAN;
    const st_pvalue *pv = &p->values[v];
    if (pv->kind != ST_PV_CONST || st_numel(pv->t.rank, pv->t.dims) != 1) return NAN;
    if (pv->t.dtype == ST_F16) return st_f16_to_f32(*(const uint16_t *)pv->t.data);
    return pv->t.dtype == ST_F32 ? *(const float *)pv->t.data : NAN;
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

/* The factor c of a Mul(v, c) or Mul(c, v) node n by a constant scalar,
 * setting *v; NAN when n is not one. */
static float mul_factor(const st_plan *p, int n, int *v)
{
    int n_in;
    const int *in = st_plan_in(p, &p->g->nodes[n], n, &n_in);
    if (!runs(p, n, "Mul") || p->nodes[n].op || n_in != 2) return NAN;
    for (int side = 0; side < 2; side++) {
        float c = const_scalar(p, in[1 - side]);
        if (!isnan(c)) {
            *v = in[side];
            return c;
        }
    }
    return NAN;
}

/* PyTorch's scaled_dot_product_attention exports its scale split in two,
 * sqrt(scale) on Q and on K^T before the product: two elementwise passes
 * over Q and K a layer (24 launches in ViT-S).  When both operands of the
 * scores' MatMul are such Muls read by it alone, they fold into the
 * fused node's scale (the product of the two).  The sum is then scaled
 * once in f32 instead of each operand being rounded after its Mul. */
static void split_scale(const st_plan *p, const int *count, int scores, match *m)
{
    int mq = sole_producer(p, count, m->q, scores), mk = sole_producer(p, count, m->kt, scores), q = -1, kt = -1;
    if (mq < 0 || mk < 0 || mq == mk || m->n_chain + 2 > MAX_CHAIN) return;
    float a = mul_factor(p, mq, &q), b = mul_factor(p, mk, &kt);
    if (isnan(a) || isnan(b) || !st_plan_same_shape(p, q, m->q) || !st_plan_same_shape(p, kt, m->kt)) return;
    if (p->values[q].t.dtype != p->values[m->q].t.dtype || p->values[kt].t.dtype != p->values[m->kt].t.dtype) return;
    m->s.scale_kind = ST_ATT_SCALE_MUL;
    m->s.scale = a * b;
    m->q = q;
    m->kt = kt;
    /* the scores' MatMul stays last: absorb_layouts reads it as Q's and K's reader */
    m->chain[m->n_chain + 1] = m->chain[m->n_chain - 1];
    m->chain[m->n_chain - 1] = mq;
    m->chain[m->n_chain] = mk;
    m->n_chain += 2;
}

/* Whether MatMul node y ends an attention chain of one of the dtypes
 * (ST_DT bits) asked for; fills *m. */
static bool match_at(const st_plan *p, const int *count, int y, uint32_t dtypes, match *m)
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
    st_dtype dt = p->values[pv].t.dtype;
    if (!(dtypes & ST_DT(dt))) return false;
    if (!ns || ns->kind != ST_N_SOFTMAX || r < 2 || ns->mask != (uint32_t)1 << (r - 1)) return false;
    m->chain[m->n_chain++] = sm;
    /* walk up from the softmax's input to the scores' MatMul */
    int x = g->nodes[sm].in[0], scores = -1;
    bool scaled = false;
    for (;;) {
        if (!is_dt(p, x, dt) || !st_plan_same_shape(p, x, pv)) return false;
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
            /* the kernels read an f32 mask, or one of the chain's dtype */
            if (side < 0 || !(is_f32(p, in[1 - side]) || is_dt(p, in[1 - side], dt))) return false;
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
    if (!scaled) split_scale(p, count, scores, m);
    int ids[3] = {m->q, m->kt, m->v};
    for (int k = 0; k < 3; k++)
        if (!is_dt(p, ids[k], dt) || p->values[ids[k]].t.rank != r) return false;
    const st_tinfo *q = &p->values[m->q].t, *kt = &p->values[m->kt].t, *v = &p->values[m->v].t, *o = &p->values[out].t;
    for (int d = 0; d < r - 2; d++)
        if (kt->dims[d] != q->dims[d] || v->dims[d] != q->dims[d] || o->dims[d] != q->dims[d]) return false;
    if (kt->dims[r - 2] != q->dims[r - 1] || v->dims[r - 2] != kt->dims[r - 1] || !is_dt(p, out, dt)) return false;
    /* the mask broadcasts into the scores (each step kept their shape) */
    if (m->mask >= 0) {
        const st_tinfo *mt = &p->values[m->mask].t, *st = &p->values[pv].t;
        if (mt->rank > r) return false;
        for (int d = 0; d < mt->rank; d++)
            if (mt->dims[d] != 1 && mt->dims[d] != st->dims[r - mt->rank + d]) return false;
    }
    return true;
}

/* ---- the layout ops around the attention, taken in as strides ----
 *
 * nn.MultiheadAttention exports its heads as
 *   S [T, B, H*dh] (a slice of the QKV projection's output)
 *     -> Reshape [T, B*H, dh] -> Transpose (1, 0, 2) or, for K, (1, 2, 0)
 * and its output as
 *   Y [B*H, T, dv] -> Transpose (1, 0, 2) -> Reshape [T*B, H*dv] or [T, B, H*dv]
 * The Reshapes merge B with H of a tensor whose B stride is not H times
 * its H stride, so they cannot be views (passes/views.c): each ran as a
 * copy, four per layer.  Seen from S and from the Reshape's output, though,
 * the attention's operands are [B, H, rows, cols] strided views: the
 * FusedAttention node reads S and writes the Reshape's output directly,
 * with st_att_layout's split and permutation (ops/linalg.h) in its state.
 * Q's scale (Div(Q, sqrt dh) in that export) comes in the same way. */

#define MAX_TAKEN 6

typedef struct absorbed {
    int value;                     /* what the fused node reads or writes instead */
    st_att_layout lay;
    int nodes[MAX_TAKEN];          /* the nodes taken in */
    int n_nodes;
} absorbed;

/* The running node that makes v, when v is no graph output and every
 * running reader of v but `reader` makes only values nobody reads (the
 * export's Transpose of K whose output only a Shape read, folded away);
 * those readers go into a->nodes.  Else -1. */
static int producer_for(const st_plan *p, const int *count, int v, int reader, absorbed *a)
{
    const st_graph *g = p->g;
    if (v < 0 || p->values[v].kind == ST_PV_CONST || g->values[v].is_output) return -1;
    int n = p->values[v].producer;
    if (!st_plan_node_runs(p, n) || p->nodes[n].out0 >= 0 || g->nodes[n].out[0] != v) return -1;
    int seen = 0;
    for (int i = 0; i < g->n_nodes && seen < count[v]; i++) {
        if (!st_plan_node_runs(p, i)) continue;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
        bool reads = false;
        for (int k = 0; k < n_in; k++) reads |= in[k] == v;
        if (!reads) continue;
        seen++;
        if (i == reader) continue;
        for (int k = 0; k < g->nodes[i].n_out; k++) {
            int o = st_plan_out(p, &g->nodes[i], i, k);
            if (o >= 0 && (count[o] > 0 || g->values[o].is_output)) return -1;
        }
        if (a->n_nodes >= MAX_TAKEN - 3) return -1; /* room for the Transpose, the Reshape and a scale */
        a->nodes[a->n_nodes++] = i;
    }
    return n;
}

/* Input x ([B*H, rows, cols], read by `reader`) as Transpose(Reshape(S)),
 * S [T, B, H*c]; *heads is H when already known (0: not yet). */
static bool absorb_input(const st_plan *p, const int *count, int x, int reader, int64_t *heads, absorbed *a)
{
    const st_graph *g = p->g;
    int t = sole_producer(p, count, x, reader);
    if (t < 0 || !runs(p, t, "Transpose") || p->nodes[t].op) return false;
    int n_in, n_perm;
    int rv = st_plan_in(p, &g->nodes[t], t, &n_in)[0];
    const int64_t *perm = st_attr_ints(&g->nodes[t], "perm", &n_perm);
    if (!perm || n_perm != 3 || perm[0] != 1) return false;
    a->n_nodes = 0;
    int rs = producer_for(p, count, rv, t, a);
    if (rs < 0 || !runs(p, rs, "Reshape") || p->nodes[rs].op) return false;
    int sv = st_plan_in(p, &g->nodes[rs], rs, &n_in)[0];
    if (sv < 0 || !is_f32(p, sv) || p->values[sv].kind == ST_PV_CONST) return false;
    const st_tinfo *S = &p->values[sv].t, *R = &p->values[rv].t;
    if (S->rank != 3 || R->rank != 3 || S->dims[1] <= 0 || R->dims[2] <= 0) return false;
    if (R->dims[0] != S->dims[0] || R->dims[1] % S->dims[1]) return false;
    int64_t h = R->dims[1] / S->dims[1];
    if (R->dims[2] * h != S->dims[2] || (*heads && *heads != h)) return false;
    *heads = h;
    /* S as [T, B, H, c], then R's dims (0: T, 1: (B, H), 2: c) permuted */
    static const int8_t of_r[3] = {0, -1, 3};
    a->value = sv;
    a->lay.n = 4;
    const int8_t from[4] = {0, 1, 2, 2};
    const int64_t size[4] = {S->dims[0], S->dims[1], h, R->dims[2]};
    const int8_t perm4[4] = {1, 2, of_r[perm[1]], of_r[perm[2]]};
    for (int k = 0; k < 4; k++) {
        a->lay.from[k] = from[k];
        a->lay.size[k] = size[k];
        a->lay.perm[k] = perm4[k];
    }
    a->nodes[a->n_nodes++] = t;
    a->nodes[a->n_nodes++] = rs;
    return true;
}

/* The output y [B*H, T, dv] as read by Transpose (1, 0, 2) alone, whose
 * output the Reshape alone reads, to Z [T*B, H*dv] or [T, B, H*dv]. */
static bool absorb_output(const st_plan *p, const int *count, int y, int64_t heads, absorbed *a)
{
    const st_graph *g = p->g;
    int t = st_plan_sole_reader(p, count, y);
    if (t < 0 || !runs(p, t, "Transpose") || p->nodes[t].op || p->nodes[t].out0 >= 0) return false;
    int n_perm, n_in;
    const int64_t *perm = st_attr_ints(&g->nodes[t], "perm", &n_perm);
    if (!perm || n_perm != 3 || perm[0] != 1 || perm[1] != 0 || perm[2] != 2) return false;
    int tv = g->nodes[t].out[0];
    int rs = tv >= 0 ? st_plan_sole_reader(p, count, tv) : -1;
    if (rs < 0 || !runs(p, rs, "Reshape") || p->nodes[rs].op || p->nodes[rs].out0 >= 0) return false;
    if (st_plan_in(p, &g->nodes[rs], rs, &n_in)[0] != tv) return false;
    int z = g->nodes[rs].out[0];
    if (z < 0 || !is_f32(p, z)) return false;
    const st_tinfo *Y = &p->values[y].t, *Z = &p->values[z].t;
    if (Y->rank != 3 || heads <= 0 || Y->dims[0] % heads) return false;
    int64_t b = Y->dims[0] / heads, tq = Y->dims[1], dv = Y->dims[2];
    int8_t from[4];
    if (Z->rank == 2 && Z->dims[0] == tq * b && Z->dims[1] == heads * dv) {
        const int8_t f[4] = {0, 0, 1, 1};
        memcpy(from, f, sizeof from);
    } else if (Z->rank == 3 && Z->dims[0] == tq && Z->dims[1] == b && Z->dims[2] == heads * dv) {
        const int8_t f[4] = {0, 1, 2, 2};
        memcpy(from, f, sizeof from);
    } else {
        return false;
    }
    /* Z as [T, B, H, dv]; the kernel's [B, H, T, dv] */
    const int64_t size[4] = {tq, b, heads, dv};
    const int8_t perm4[4] = {1, 2, 0, 3};
    a->value = z;
    a->lay.n = 4;
    for (int k = 0; k < 4; k++) {
        a->lay.from[k] = from[k];
        a->lay.size[k] = size[k];
        a->lay.perm[k] = perm4[k];
    }
    a->nodes[0] = t;
    a->nodes[1] = rs;
    a->n_nodes = 2;
    return true;
}

/* An operand of rank 3 left as it is, its [B*H] dim split into [B, H]
 * (b_h 1, 1 for a dim of 1 that broadcasts). */
static void split_lead(const st_tinfo *t, int64_t heads, st_att_layout *l)
{
    bool one = t->dims[0] == 1;
    const int8_t from[4] = {0, 0, 1, 2};
    const int64_t size[4] = {one ? 1 : t->dims[0] / heads, one ? 1 : heads, t->dims[1], t->dims[2]};
    l->n = 4;
    for (int k = 0; k < 4; k++) {
        l->from[k] = from[k];
        l->size[k] = size[k];
        l->perm[k] = (int8_t)k;
    }
}

/* Takes the layout ops around match m (ending at MatMul y) in where they
 * fit; then m's inputs, the node's output and the state say so.  Done
 * only for the rank-3 [B*H, T, d] form, and only when at least one Reshape
 * goes (else the layouts would change nothing). */
static void absorb_layouts(const st_plan *p, const int *count, int y, match *m, absorbed *taken, int *n_taken, int *out)
{
    const st_graph *g = p->g;
    *n_taken = 0;
    *out = -1;
    int r = p->values[m->q].t.rank;
    if (r != 3) return;
    int64_t heads = 0;
    /* Q, possibly scaled by a constant first */
    int qx = m->q, qreader = m->chain[m->n_chain - 1], qscale = -1;
    int qn = sole_producer(p, count, qx, qreader);
    st_attention_state s = m->s;
    if (qn >= 0 && (runs(p, qn, "Div") || runs(p, qn, "Mul")) && !p->nodes[qn].op) {
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[qn], qn, &n_in);
        bool div = runs(p, qn, "Div");
        int side = div ? 0 : !isnan(const_scalar(p, in[1])) ? 0 : 1;
        float c = n_in == 2 ? const_scalar(p, in[1 - side]) : NAN;
        if (!isnan(c) && st_plan_same_shape(p, in[side], qx) && is_f32(p, in[side])) {
            s.q_scale_kind = div ? ST_ATT_SCALE_DIV : ST_ATT_SCALE_MUL;
            s.q_scale = c;
            qscale = qn;
            qreader = qn;
            qx = in[side];
        }
    }
    absorbed in[3] = {{0}};
    bool got[3];
    int ids[3] = {qx, m->kt, m->v}, readers[3] = {qreader, m->chain[m->n_chain - 1], y};
    for (int k = 0; k < 3; k++) got[k] = absorb_input(p, count, ids[k], readers[k], &heads, &in[k]);
    /* a later operand may have fixed heads that an earlier one missed;
     * they agree or that one was refused */
    if (!got[0] && !got[1] && !got[2]) return;
    absorbed o = {0};
    bool got_o = absorb_output(p, count, g->nodes[y].out[0], heads, &o);
    for (int k = 0; k < 3; k++) {
        if (got[k]) {
            taken[(*n_taken)++] = in[k];
            s.lay[k] = in[k].lay;
        } else {
            split_lead(&p->values[ids[k]].t, heads, &s.lay[k]);
        }
    }
    if (got_o) {
        taken[(*n_taken)++] = o;
        s.lay[ST_ATT_OUT] = o.lay;
        *out = o.value;
    } else {
        split_lead(&p->values[g->nodes[y].out[0]].t, heads, &s.lay[ST_ATT_OUT]);
    }
    if (m->mask >= 0) {
        const st_tinfo *mt = &p->values[m->mask].t;
        /* a mask of the scores' rank splits its lead dim too; a shorter
         * one broadcasts from the right as it is */
        if (mt->rank == 3) split_lead(mt, heads, &s.lay[ST_ATT_MASK]);
    }
    if (!got[0] && qscale >= 0) {
        /* Q's own chain stayed: leave its scale to its node */
        s.q_scale_kind = ST_ATT_SCALE_NONE;
        s.q_scale = 0;
    } else if (qscale >= 0) {
        taken[0].nodes[taken[0].n_nodes++] = qscale;
    }
    m->q = got[0] ? in[0].value : m->q;
    if (got[1]) m->kt = in[1].value;
    if (got[2]) m->v = in[2].value;
    m->s = s;
}

st_status st_pass_fuse_attention(st_plan *p, bool views, uint32_t dtypes)
{
    if (getenv("STRATA_NO_ATTENTION_FUSION")) return ST_OK;
    const st_graph *g = p->g;
    int *count = calloc((size_t)p->n_values + 1, sizeof *count);
    if (!count) return st_error(ST_ERR_NOMEM, "out of memory fusing attention");
    st_plan_count_readers(p, count);
    const st_op_def *fa = st_op_find("ai.strata", "FusedAttention");
    for (int y = 0; y < g->n_nodes && fa; y++) {
        match m;
        if (!st_plan_node_runs(p, y) || !match_at(p, count, y, dtypes, &m)) continue;
        absorbed taken[4];
        int n_taken, out;
        n_taken = 0;
        out = -1;
        /* only a kernel that takes layouts is given them (the CPU's; the
         * CUDA and OpenCL kernels read the operands as they are) */
        if (views && is_f32(p, m.q)) absorb_layouts(p, count, y, &m, taken, &n_taken, &out);
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
        for (int t = 0; t < n_taken; t++)
            for (int k = 0; k < taken[t].n_nodes; k++) {
                int n = taken[t].nodes[k];
                p->nodes[n].kind = ST_PN_FUSED;
                for (int o = 0; o < g->nodes[n].n_out; o++) {
                    int v = g->nodes[n].out[o];
                    if (v >= 0 && v != out) p->values[v].kind = ST_PV_DEAD;
                }
            }
        if (out >= 0) {
            /* the command writes the Reshape's output; its own is never stored */
            p->values[g->nodes[y].out[0]].kind = ST_PV_DEAD;
            p->nodes[y].out0 = out;
            p->values[out].producer = y;
        }
        st_plan_count_readers(p, count);
    }
    free(count);
    return ST_OK;
}
