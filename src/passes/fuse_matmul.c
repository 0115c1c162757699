/*
 * fuse_matmul.c — for a backend whose MatMul and Gemm kernels take a
 * per-column bias and an activation (ST_CAP_MATMUL_EPI: the CPU's), the
 * bias Add and the activation after a linear layer folded into the
 * product's epilogue.
 *
 * Owns: st_matmul_state's bias, n_bias and act, nodes[].out0, the
 * ST_PN_FUSED kind of the absorbed nodes and values[].producer of the
 * moved output, as passes/fuse.c does for a Conv's activation.  Runs after
 * passes/fuse.c (which makes PyTorch's decomposed GELU one Gelu node) and
 * passes/fuse_attention.c (whose MatMuls become FusedAttention first).
 *
 * PyTorch exports nn.Linear on a [batch, seq, d] input as MatMul(X, W^T)
 * followed by Add(b, .): a full pass over the output to add d numbers per
 * row, and in a transformer's feed-forward block another pass for the
 * GELU.  The chain starting at the product's output Y becomes
 *   y[.., j] = act(y[.., j] + bias[j])
 * applied per output tile before its one store.  Absorbed, while the value
 * has a sole running reader and is not a graph output:
 *   after a MatMul: Add(Y, c) or Add(c, Y), c a constant f32 whose only
 *   dim above 1 is the last, of Y's last size (or a scalar), the Add
 *   keeping Y's shape;
 *   then (or after a Gemm) one activation: those passes/fuse.c folds into
 *   a Conv, or Gelu (exact or tanh).
 * f32 products, and f16 and bf16 ones where the backend asks for them
 * (ST_CAP_MATMUL_EPI_LP: CUDA, where cuBLASLt adds the bias in its
 * epilogue, before the one rounding to 16 bits, where the separate Add
 * rounded the product first).  The bias is kept as f32 numbers: a
 * lowered constant's 16-bit values convert exactly.  On the CPU the bias
 * add is one f32 add of the finished sum and the activation the one the
 * separate op runs (the CPU's vector GELU, or its scalar loop for an
 * activation without a vector form), so f32 results keep their bits.
 * Only plans whose main backend declares the capability get these
 * fields; the other tables' MatMul and Gemm refuse a node that has them.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "passes/passes.h"
#include "plan/plan.h"

/* Node i runs the ai.onnx op `name` (after any rewrite). */
static bool runs(const st_plan *p, int i, const char *name)
{
    const st_op_def *op = st_plan_op(p, &p->g->nodes[i], i);
    return op && !op->domain[0] && !strcmp(op->name, name);
}

/* Value v's planned dtype is one the pass fuses for. */
static bool fusable(const st_plan *p, int v, uint32_t dts) { return v >= 0 && (ST_DT(p->values[v].t.dtype) & dts) != 0; }

/* Node a (an Add reading y) adds a per-column constant to y, of y's
 * shape: the constant's n values go to bias (bias NULL: only check).
 * False when it does not. */
static bool bias_of(const st_plan *p, int a, int y, float *bias, int64_t n, uint32_t dts)
{
    const st_graph *g = p->g;
    const st_node *an = &g->nodes[a];
    int n_in;
    const int *in = st_plan_in(p, an, a, &n_in);
    const st_ew_state *s = p->nodes[a].state;
    if (!runs(p, a, "Add") || n_in != 2 || in[0] == in[1] || (s && s->b_units) || an->n_out < 1) return false;
    int side = in[0] == y ? 0 : in[1] == y ? 1 : -1, c = side < 0 ? -1 : in[1 - side], out = an->out[0];
    if (c < 0 || out < 0 || !fusable(p, out, dts) || p->values[out].t.dtype != p->values[y].t.dtype ||
        !st_plan_same_shape(p, out, y))
        return false;
    const st_pvalue *pc = &p->values[c];
    const st_tinfo *yt = &p->values[y].t;
    /* the constant in the product's dtype (lowered with it), or f32 */
    if (pc->kind != ST_PV_CONST || !pc->t.data || (pc->t.dtype != ST_F32 && pc->t.dtype != yt->dtype) || pc->t.rank > yt->rank)
        return false;
    int64_t numel = st_numel(pc->t.rank, pc->t.dims);
    for (int d = 0; d + 1 < pc->t.rank; d++)
        if (pc->t.dims[d] != 1) return false;
    if (numel != 1 && numel != n) return false;
    if (!bias) return true;
    float first;
    st_convert(ST_F32, numel == 1 ? &first : bias, pc->t.dtype, pc->t.data, (size_t)numel);
    for (int64_t j = 0; numel == 1 && j < n; j++) bias[j] = first;
    return true;
}

/* The epilogue of activation node a, or false. */
static bool act_of(const st_plan *p, int a, st_epilogue *e)
{
    st_epilogue t = {0};
    if (st_plan_act_of(p, a, &t)) {
        *e = t;
        return true;
    }
    const st_ew_state *s = p->nodes[a].state;
    if (!runs(p, a, "Gelu") || !s || (s->code != ST_U_GELU && s->code != ST_U_GELU_TANH)) return false;
    memset(e, 0, sizeof *e);
    e->act = s->code + 1;
    return true;
}

/* Node a's output 0 becomes the product's; its inputs lose a reader. */
static void absorb(st_plan *p, int *count, int a)
{
    const st_graph *g = p->g;
    p->nodes[a].kind = ST_PN_FUSED;
    int n_in;
    const int *in = st_plan_in(p, &g->nodes[a], a, &n_in);
    for (int q = 0; q < n_in; q++)
        if (in[q] >= 0) count[in[q]]--;
}

/* False only when out of memory. */
static bool fuse_one(st_plan *p, int *count, int i, uint32_t dts)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[i];
    bool mm = runs(p, i, "MatMul");
    st_matmul_state *s = p->nodes[i].state;
    int x0 = n->n_out > 0 ? n->out[0] : -1;
    if (!s || s->bias || s->act.act || p->nodes[i].out0 >= 0 || x0 < 0 || g->values[x0].is_output || !fusable(p, x0, dts))
        return true;
    const st_tinfo *xt = &p->values[x0].t;
    /* a 1-D B (a matrix-vector product) has no column dim to bias */
    int n_in;
    const int *in = st_plan_in(p, n, i, &n_in);
    if (xt->rank < 1 || n_in < 2 || in[1] < 0 || p->values[in[1]].t.rank < 2) return true;
    int64_t cols = xt->dims[xt->rank - 1];
    int x = x0;
    float *bias = NULL;
    int a = st_plan_sole_reader(p, count, x);
    if (mm && a >= 0 && bias_of(p, a, x, NULL, cols, dts)) {
        /* the plan owns the copy (and frees it with itself) */
        bias = st_plan_alloc(p, (uint64_t)(cols > 0 ? cols : 1) * sizeof(float));
        if (!bias) return false;
        bias_of(p, a, x, bias, cols, dts);
        absorb(p, count, a);
        p->values[x].kind = ST_PV_DEAD;
        x = g->nodes[a].out[0];
        a = st_plan_sole_reader(p, count, x);
    }
    st_epilogue e = {0};
    if (a >= 0 && g->nodes[a].n_out >= 1 && g->nodes[a].out[0] >= 0 &&
        p->values[g->nodes[a].out[0]].t.dtype == p->values[x].t.dtype &&
        st_plan_same_shape(p, g->nodes[a].out[0], x) && act_of(p, a, &e)) {
        int n_ain;
        const int *ain = st_plan_in(p, &g->nodes[a], a, &n_ain);
        if (n_ain >= 1 && ain[0] == x) {
            absorb(p, count, a);
            p->values[x].kind = ST_PV_DEAD;
            x = g->nodes[a].out[0];
        } else {
            memset(&e, 0, sizeof e);
        }
    }
    if (x == x0) return true;
    s->bias = bias;
    s->n_bias = bias ? cols : 0;
    s->act = e;
    p->nodes[i].out0 = x;
    p->values[x].producer = i;
    return true;
}

/* As in passes/fuse.c: a plan must not depend on how much memory was free
 * when it was made, so running out is an error. */
st_status st_pass_fuse_matmul(st_plan *p, uint32_t dtypes)
{
    const st_graph *g = p->g;
    int *count = calloc((size_t)p->n_values + 1, sizeof *count);
    if (!count) return st_error(ST_ERR_NOMEM, "out of memory folding bias and activation into matrix products");
    st_plan_count_readers(p, count);
    for (int i = 0; i < g->n_nodes; i++) {
        if (!st_plan_node_runs(p, i) || !(runs(p, i, "MatMul") || runs(p, i, "Gemm"))) continue;
        if (!fuse_one(p, count, i, dtypes)) {
            free(count);
            return st_error(ST_ERR_NOMEM, "out of memory folding the bias of node '%s' into its product",
                            g->nodes[i].name);
        }
    }
    free(count);
    return ST_OK;
}
