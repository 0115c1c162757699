/*
 * fuse_qdq.c — a QDQ model's float islands become integer kernels.
 *
 * Owns: the plan rewrites (st_plan_op, st_plan_in, out0) of the nodes
 * that a QDQ model brackets with DequantizeLinear (DQ) and QuantizeLinear
 * (Q), and the kinds of the Q/DQ nodes and float values they replace.
 * A QDQ model (ONNX Runtime's quantizer, `strata quantize`) stores
 * activations as 8-bit integers and writes every quantized op as
 * DQ -> float op -> Q; run as written, each op dequantizes its inputs to
 * f32 and quantizes its output again.  Here, for backends that declare
 * ST_CAP_QDQ (the CPU, CUDA, OpenCL), each such group runs as one integer
 * command (a group whose op the backend has no kernel for stays as
 * written: the plan's CPU fallback would move its integer tensors to the
 * CPU and back for that one op):
 *   DQ(x), DQ(w const) [, bias] -> Conv -> Q      QLinearConv (int8 GEMM; requantized
 *                                                 in its epilogue)
 *   DQ(a), DQ(b const or not) -> MatMul -> Q     QLinearMatMul
 *   DQ(a), DQ(w const) [, bias] -> Gemm -> Q      QLinearMatMul with an int32 bias per column
 *                                                 (input 8); alpha 1, beta 1 or no bias, A not
 *                                                 transposed (a classifier head), a transposed
 *                                                 W stored transposed at plan time
 *   DQ(a), DQ(b) -> Add | Mul -> Q                QLinearAdd | QLinearMul
 *   DQ(x) -> elementwise float ops -> Q          QLinearLookup: the chain is a function of
 *                                                 one byte, so a 256-entry table, computed
 *                                                 here by the CPU's own kernels (SiLU as
 *                                                 Sigmoid, Mul with its Q/DQ is one table)
 *   QLinearConv -> QLinearLookup                 the table in the conv's epilogue
 *   DQ(x) -> Resize(nearest) | Concat | a view op -> Q, one scale and zero
 *                                                 point throughout: the op on the bytes
 * Scales and zero points must be constants, activations per tensor,
 * weights per tensor or per output channel.  What matches nothing runs as
 * written (the DQ of a constant weight was folded to f32 at plan time).
 *
 * Out of memory: a fusion changes a result's bits (below), and a rewrite
 * that fails half-way (a Q node left reading a retyped value, a reader not
 * redirected) would compute garbage; so a failed allocation here fails the
 * plan with ST_ERR_NOMEM, as st_pass_fuse does, rather than running a plan
 * that is unfused, or worse, half fused.  Whatever matched nothing (no
 * kernel, an island whose table could not be computed for another reason)
 * still runs as written: that is decided before anything is rewritten.
 *
 * Exactness: Lookup, Add, Mul, Concat and the byte ops compute what the
 * Q/DQ nodes compute, step for step, so they give the same bytes.  The
 * int8 GEMMs (Conv, MatMul, Gemm) sum exactly in int32 and requantize with one f32 multiplier
 * (x_scale * w_scale / y_scale), as ONNX Runtime's QLinearConv does, where
 * the graph as written rounds the f32 conv's sum: a result may differ by
 * one step where the float sum lies near a rounding boundary.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/concat.h"
#include "ops/conv.h"
#include "ops/linalg.h"
#include "ops/misc.h"
#include "ops/qlinear.h"
#include "passes/passes.h"
#include "plan/plan.h"

typedef struct qparam {
    int codes;           /* the integer tensor */
    int scale, zp;       /* values; zp -1 when absent */
    int axis;            /* -1: per tensor */
    st_dtype type;       /* the integer type */
} qparam;

static bool is_exec(const st_plan *p, int i) { return i >= 0 && p->nodes[i].kind == ST_PN_EXEC; }

/* Node i is an ai.onnx `op` that fusion has not made another op. */
static bool is_op(const st_plan *p, int i, const char *op)
{
    const st_node *n = &p->g->nodes[i];
    return !p->nodes[i].op && !n->domain[0] && strcmp(n->op_type, op) == 0;
}

/* Node i's inputs as fusion left them (a reader of a redirected value
 * reads another). */
static const int *ins(const st_plan *p, int i, int *n) { return st_plan_in(p, &p->g->nodes[i], i, n); }

static bool is_const(const st_plan *p, int v) { return v >= 0 && p->values[v].kind == ST_PV_CONST && p->values[v].t.data; }
static bool is8(st_dtype t) { return t == ST_U8 || t == ST_I8; }
static int64_t numel(const st_plan *p, int v) { return st_numel(p->values[v].t.rank, p->values[v].t.dims); }
static float scale_at(const st_plan *p, int v, int64_t i)
{
    return st_load_f32(p->values[v].t.dtype, (const char *)p->values[v].t.data + i * (int64_t)st_dtype_size(p->values[v].t.dtype));
}
static int32_t zp_at(const st_plan *p, int v, int64_t i)
{
    if (v < 0) return 0;
    return (int32_t)st_load_i64(p->values[v].t.dtype, (const char *)p->values[v].t.data + i * (int64_t)st_dtype_size(p->values[v].t.dtype));
}

/* Q/DQ node i's parameters, when constant.  codes is the integer side. */
static bool params_of(const st_plan *p, int i, int codes, qparam *q)
{
    int n_in;
    const int *in = ins(p, i, &n_in);
    const st_quant_state *s = p->nodes[i].state;
    /* blocked scales (opset 21) are neither per tensor nor per channel */
    if (n_in < 2 || !is_const(p, in[1]) || !s || s->block > 0) return false;
    if (n_in > 2 && in[2] >= 0 && !is_const(p, in[2])) return false;
    if (p->values[in[1]].t.dtype != ST_F32) return false;
    q->codes = codes;
    q->scale = in[1];
    q->zp = n_in > 2 ? in[2] : -1;
    q->axis = s->axis;
    q->type = p->values[codes].t.dtype;
    return true;
}

/* Value v is made by a DequantizeLinear (running or folded) with constant
 * parameters. */
static bool dq_of(const st_plan *p, int v, qparam *q)
{
    if (v < 0) return false;
    int d = p->values[v].producer;
    if (d < 0 || (p->nodes[d].kind != ST_PN_EXEC && p->nodes[d].kind != ST_PN_FOLDED)) return false;
    if (!is_op(p, d, "DequantizeLinear") || p->g->nodes[d].out[0] != v || p->g->values[v].is_output) return false;
    int n_in;
    return params_of(p, d, ins(p, d, &n_in)[0], q);
}

/* The only reader of v is a per-tensor QuantizeLinear to 8 bits with
 * constant parameters: its node, else -1. */
static int q_after(const st_plan *p, const int *count, int v, qparam *q)
{
    int r = st_plan_sole_reader(p, count, v);
    int n_in;
    if (r < 0 || !is_op(p, r, "QuantizeLinear") || ins(p, r, &n_in)[0] != v || p->g->nodes[r].out[0] < 0) return -1;
    if (!params_of(p, r, p->g->nodes[r].out[0], q) || q->axis >= 0 || !is8(q->type)) return -1;
    return r;
}

static bool same_params(const st_plan *p, const qparam *a, const qparam *b)
{
    return a->axis < 0 && b->axis < 0 && a->type == b->type && scale_at(p, a->scale, 0) == scale_at(p, b->scale, 0) &&
           zp_at(p, a->zp, 0) == zp_at(p, b->zp, 0);
}

/* The session backend has a kernel for domain.op: else the group stays as
 * written (see the header). */
static bool backend_has(const st_plan *p, const char *domain, const char *op)
{
    const st_op_def *def = st_op_find(domain, op);
    return def && st_kernel_dtypes(p->target.main, def) != 0;
}

/* The one error of this pass: every fuse_* below returns false without a
 * rewrite when a node does not match, and false with *err set when an
 * allocation failed (the plan may then be half rewritten: the caller
 * drops it). */
static bool nomem(st_status *err, const char *what)
{
    *err = st_error(ST_ERR_NOMEM, "out of memory fusing a QDQ model's %s into an integer kernel", what);
    return false;
}

/* v, an input of node i, is read until at least i. */
static void reads(st_plan *p, int v, int i)
{
    if (v >= 0 && p->values[v].last_use < i) p->values[v].last_use = i;
}

/* Node i now runs `op` on in[0..n) with state s (NULL: keep its own). */
static bool rewrite(st_plan *p, int i, const char *domain, const char *op, const int *in, int n, void *s, st_status *err)
{
    const st_op_def *def = op ? st_op_find(domain, op) : NULL;
    int *copy = malloc((size_t)(n > 0 ? n : 1) * sizeof *copy);
    if ((op && !def) || !copy) {
        free(copy);
        free(s);
        /* every op named here is strata's own: one missing is a bug */
        if (op && !def) *err = st_error(ST_ERR_INTERNAL, "QDQ fusion: no op %s%s%s", domain, *domain ? "." : "", op);
        else nomem(err, p->g->nodes[i].op_type);
        return false;
    }
    memcpy(copy, in, (size_t)n * sizeof *copy);
    free(p->nodes[i].in);
    p->nodes[i].in = copy;
    p->nodes[i].n_in = n;
    if (def) p->nodes[i].op = def;
    if (s) {
        free(p->nodes[i].state);
        p->nodes[i].state = s;
    }
    for (int k = 0; k < n; k++) reads(p, in[k], i);
    return true;
}

/* Node i's command writes what Q node q wrote; q and i's own output go. */
static void take_output(st_plan *p, int i, int q)
{
    int y = p->g->nodes[q].out[0];
    p->values[st_plan_out(p, &p->g->nodes[i], i, 0)].kind = ST_PV_DEAD;
    p->nodes[i].out0 = y;
    p->values[y].producer = i;
    p->nodes[q].kind = ST_PN_FUSED;
}

/* ---- Conv, MatMul ---- */

/* The conv's bias as int32 in x_scale * w_scale[m] units: a DQ'd int32
 * tensor with exactly those scales, else the f32 bias requantized (the
 * value, read by this conv only, is retyped in place).  -1: none, -2:
 * cannot (with *err set: out of memory). */
static int conv_bias(st_plan *p, const int *count, int b, const qparam *x, const qparam *w, int64_t m, st_status *err)
{
    if (b < 0) return -1;
    float xs = scale_at(p, x->scale, 0);
    qparam bq;
    if (dq_of(p, b, &bq) && bq.type == ST_I32 && is_const(p, bq.codes) && numel(p, bq.codes) == m) {
        bool ok = true;
        for (int64_t i = 0; i < m && ok; i++) {
            float want = xs * scale_at(p, w->scale, w->axis < 0 ? 0 : i);
            ok = scale_at(p, bq.scale, bq.axis < 0 ? 0 : i) == want && zp_at(p, bq.zp, bq.axis < 0 ? 0 : i) == 0;
        }
        if (ok) return bq.codes;
    }
    st_pvalue *pv = &p->values[b];
    if (!is_const(p, b) || pv->t.dtype != ST_F32 || numel(p, b) != m || count[b] != 1 || p->g->values[b].is_output) return -2;
    int32_t *q = st_plan_alloc(p, (uint64_t)m * sizeof *q);
    if (!q) {
        nomem(err, "Conv bias");
        return -2;
    }
    for (int64_t i = 0; i < m; i++) {
        double v = rint((double)((const float *)pv->t.data)[i] / ((double)xs * scale_at(p, w->scale, w->axis < 0 ? 0 : i)));
        q[i] = v > 2147483647.0 ? INT32_MAX : v < -2147483648.0 ? INT32_MIN : (int32_t)v;
    }
    pv->t.dtype = ST_I32;
    pv->t.data = q;
    return b;
}

static bool fuse_conv(st_plan *p, const int *count, int i, st_status *err)
{
    const st_node *n = &p->g->nodes[i];
    int n_in;
    const int *in0 = ins(p, i, &n_in);
    if (!is_op(p, i, "Conv") || p->nodes[i].out0 >= 0 || n_in < 2 || n->out[0] < 0) return false;
    if (!backend_has(p, "", "QLinearConv")) return false;
    const st_conv_state *cs = p->nodes[i].state;
    if (!cs || cs->epi.act || st_conv_has_affine(cs)) return false;
    qparam x, w, y;
    if (!dq_of(p, in0[0], &x) || x.axis >= 0 || !is8(x.type)) return false;
    if (!dq_of(p, in0[1], &w) || !is_const(p, w.codes) || !is8(w.type) || w.axis > 0) return false;
    int q = q_after(p, count, n->out[0], &y);
    if (q < 0) return false;
    int64_t m = p->values[w.codes].t.dims[0];
    int bias = conv_bias(p, count, n_in > 2 ? in0[2] : -1, &x, &w, m, err);
    if (bias == -2) return false;
    /* (the bias may be retyped by now: past here, only fusing or failing) */
    st_qconv_state *s = calloc(1, sizeof *s);
    if (!s) return nomem(err, "Conv");
    s->qlinear = true;
    s->nsp = cs->nsp;
    for (int d = 0; d < cs->nsp; d++) {
        s->k[d] = cs->k[d];
        s->s[d] = cs->s[d];
        s->d[d] = cs->d[d];
        s->pb[d] = cs->pb[d];
    }
    s->group = cs->group;
    s->q_type = y.type;
    int in[9] = {x.codes, x.scale, x.zp, w.codes, w.scale, w.zp, y.scale, y.zp, bias};
    if (!rewrite(p, i, "", "QLinearConv", in, 9, s, err)) return false;
    take_output(p, i, q);
    return true;
}

static bool fuse_matmul(st_plan *p, const int *count, int i, st_status *err)
{
    const st_node *n = &p->g->nodes[i];
    int n_in;
    const int *in0 = ins(p, i, &n_in);
    if (!is_op(p, i, "MatMul") || p->nodes[i].out0 >= 0 || n->out[0] < 0 || n_in != 2) return false;
    if (!backend_has(p, "", "QLinearMatMul")) return false;
    qparam a, b, y;
    if (!dq_of(p, in0[0], &a) || a.axis >= 0 || !is8(a.type)) return false;
    if (!dq_of(p, in0[1], &b) || !is8(b.type)) return false;
    /* B per tensor, or per column: a 1-D scale along its last axis */
    int br = p->values[b.codes].t.rank;
    if (b.axis >= 0 && (br < 2 || b.axis != br - 1)) return false;
    int q = q_after(p, count, n->out[0], &y);
    if (q < 0) return false;
    st_qmatmul_state *s = calloc(1, sizeof *s);
    if (!s) return nomem(err, "MatMul");
    s->qlinear = true;
    int in[8] = {a.codes, a.scale, a.zp, b.codes, b.scale, b.zp, y.scale, y.zp};
    if (!rewrite(p, i, "", "QLinearMatMul", in, 8, s, err)) return false;
    take_output(p, i, q);
    return true;
}

/* W [n, k] stored as [k, n]: a copy in the plan's memory (the model's
 * initializer stays as it is). */
static bool transpose_weight(st_plan *p, int v, st_status *err)
{
    st_pvalue *pv = &p->values[v];
    int64_t n = pv->t.dims[0], k = pv->t.dims[1];
    uint8_t *t = st_plan_alloc(p, (uint64_t)(n * k > 0 ? n * k : 1));
    if (!t) return nomem(err, "Gemm weights");
    const uint8_t *w = pv->t.data;
    for (int64_t j = 0; j < n; j++)
        for (int64_t q = 0; q < k; q++) t[q * n + j] = w[j * k + q];
    pv->t.data = t;
    pv->t.dims[0] = k;
    pv->t.dims[1] = n;
    return true;
}

/* A classifier head as ORT's quantizer writes it: DQ(a) [m, k],
 * DQ(w const) [n, k] (transB) or [k, n], per tensor or per output column,
 * an optional bias per column, alpha 1. */
static bool fuse_gemm(st_plan *p, const int *count, int i, st_status *err)
{
    const st_node *n = &p->g->nodes[i];
    int n_in;
    const int *in0 = ins(p, i, &n_in);
    if (!is_op(p, i, "Gemm") || p->nodes[i].out0 >= 0 || n->out[0] < 0 || n_in < 2) return false;
    if (!backend_has(p, "", "QLinearMatMul")) return false;
    const st_matmul_state *gs = p->nodes[i].state;
    int c = n_in > 2 ? in0[2] : -1;
    if (!gs || gs->trans_a || gs->alpha != 1.0f || (c >= 0 && gs->beta != 1.0f)) return false;
    qparam a, w, y;
    if (!dq_of(p, in0[0], &a) || a.axis >= 0 || !is8(a.type)) return false;
    if (!dq_of(p, in0[1], &w) || !is_const(p, w.codes) || !is8(w.type) || p->values[w.codes].t.rank != 2) return false;
    /* the scale per output column: W's axis 0 when transposed, else 1 */
    if (w.axis >= 0 && w.axis != (gs->trans_b ? 0 : 1)) return false;
    /* the transposed copy replaces the plan's value: nothing running may
     * read it as it was (a folded DQ has been computed already) */
    if (gs->trans_b && (count[w.codes] != 0 || p->g->values[w.codes].is_output)) return false;
    int64_t cols = p->values[w.codes].t.dims[gs->trans_b ? 0 : 1];
    /* a bias per column: [n] or [1, n] */
    if (c >= 0 && (p->values[c].t.rank > 2 || (p->values[c].t.rank == 2 && p->values[c].t.dims[0] != 1))) return false;
    int q = q_after(p, count, n->out[0], &y);
    if (q < 0) return false;
    int bias = conv_bias(p, count, c, &a, &w, cols, err);
    if (bias == -2) return false;
    /* (the bias may be retyped by now: past here, only fusing or failing) */
    if (gs->trans_b && !transpose_weight(p, w.codes, err)) return false;
    st_qmatmul_state *s = calloc(1, sizeof *s);
    if (!s) return nomem(err, "Gemm");
    s->qlinear = true;
    int in[9] = {a.codes, a.scale, a.zp, w.codes, w.scale, w.zp, y.scale, y.zp, bias};
    if (!rewrite(p, i, "", "QLinearMatMul", in, bias >= 0 ? 9 : 8, s, err)) return false;
    take_output(p, i, q);
    return true;
}

/* ---- Add, Mul ---- */

static bool fuse_binary(st_plan *p, const int *count, int i, st_status *err)
{
    const st_node *n = &p->g->nodes[i];
    bool add = is_op(p, i, "Add");
    int n_in;
    const int *in0 = ins(p, i, &n_in);
    if ((!add && !is_op(p, i, "Mul")) || p->nodes[i].out0 >= 0 || n_in != 2 || n->out[0] < 0) return false;
    if (!backend_has(p, "com.microsoft", add ? "QLinearAdd" : "QLinearMul")) return false;
    qparam a, b, y;
    if (!dq_of(p, in0[0], &a) || !dq_of(p, in0[1], &b) || a.axis >= 0 || b.axis >= 0 || !is8(a.type) || a.type != b.type)
        return false;
    int q = q_after(p, count, n->out[0], &y);
    if (q < 0) return false;
    st_qbinary_state *s = calloc(1, sizeof *s);
    if (!s) return nomem(err, add ? "Add" : "Mul");
    s->op = add ? ST_QL_ADD : ST_QL_MUL;
    int in[8] = {a.codes, a.scale, a.zp, b.codes, b.scale, b.zp, y.scale, y.zp};
    if (!rewrite(p, i, "com.microsoft", add ? "QLinearAdd" : "QLinearMul", in, 8, s, err)) return false;
    take_output(p, i, q);
    return true;
}

/* ---- ops that only move bytes ---- */

/* Every reader of value from reads value to instead. */
static bool redirect(st_plan *p, int from, int to, st_status *err)
{
    for (int r = 0; r < p->g->n_nodes; r++) {
        if (!is_exec(p, r)) continue;
        int n_in;
        const int *in = st_plan_in(p, &p->g->nodes[r], r, &n_in);
        bool hit = false;
        for (int k = 0; k < n_in; k++) hit |= in[k] == from;
        if (!hit) continue;
        int nv[n_in > 0 ? n_in : 1];
        for (int k = 0; k < n_in; k++) nv[k] = in[k] == from ? to : in[k];
        if (!rewrite(p, r, "", NULL, nv, n_in, NULL, err)) return false;
    }
    return true;
}

/* DQ(x_k)... -> Concat -> Q where the scales differ: QLinearConcat,
 * which requantizes each input through a table as it copies. */
static bool fuse_qconcat(st_plan *p, const int *count, int i, st_status *err)
{
    const st_node *n = &p->g->nodes[i];
    int n_in;
    const int *in0 = ins(p, i, &n_in);
    qparam x[n_in > 0 ? n_in : 1], y;
    bool differ = false;
    for (int k = 0; k < n_in; k++) {
        if (!dq_of(p, in0[k], &x[k]) || x[k].axis >= 0 || !is8(x[k].type) || x[k].type != x[0].type) return false;
        differ |= !same_params(p, &x[0], &x[k]);
    }
    int q = n_in > 0 && n->out[0] >= 0 ? q_after(p, count, n->out[0], &y) : -1;
    if (q < 0 || y.type != x[0].type) return false;
    if (!differ && same_params(p, &x[0], &y)) return false; /* a Concat of the bytes */
    if (!backend_has(p, "com.microsoft", "QLinearConcat")) return false;
    const st_concat_state *cs = p->nodes[i].state;
    if (!cs) return false;
    st_qconcat_state *s = calloc(1, sizeof *s);
    if (!s) return nomem(err, "Concat");
    s->axis = cs->axis;
    int in[2 + 3 * n_in];
    in[0] = y.scale;
    in[1] = y.zp;
    for (int k = 0; k < n_in; k++) {
        in[2 + 3 * k] = x[k].codes;
        in[3 + 3 * k] = x[k].scale;
        in[4 + 3 * k] = x[k].zp;
    }
    if (!rewrite(p, i, "com.microsoft", "QLinearConcat", in, 2 + 3 * n_in, s, err)) return false;
    take_output(p, i, q);
    return true;
}

/* DQ -> op -> Q with one scale and zero point: the op runs on the bytes,
 * its outputs become integer tensors and the Qs' readers read them. */
static bool fuse_move(st_plan *p, const int *count, int i, st_status *err)
{
    /* MaxPool stays f32: its byte kernel is the generic loop, slower
     * than the f32 one and the DQ and Q around it together */
    static const char *const MOVES[] = {"Resize", "Concat", "Reshape", "Flatten", "Squeeze",
                                        "Unsqueeze", "Transpose", "Slice", "Split", "Identity"};
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[i];
    bool ok = false, concat = is_op(p, i, "Concat");
    for (size_t k = 0; k < sizeof MOVES / sizeof *MOVES; k++) ok |= is_op(p, i, MOVES[k]);
    int n_in;
    const int *in0 = ins(p, i, &n_in);
    if (!ok || p->nodes[i].out0 >= 0 || n_in < 1) return false;
    if (is_op(p, i, "MaxPool") && n->n_out > 1 && n->out[1] >= 0) return false;
    if (is_op(p, i, "Resize") && strcmp(st_attr_string(n, "mode", "nearest"), "nearest") != 0) return false;
    if (concat && fuse_qconcat(p, count, i, err)) return true;
    if (*err) return false;
    qparam first, x, y;
    int data = concat ? n_in : 1;
    int in[n_in];
    for (int k = 0; k < n_in; k++) {
        in[k] = in0[k];
        if (k >= data) continue;
        if (!dq_of(p, in0[k], &x) || x.axis >= 0 || !is8(x.type)) return false;
        if (k == 0) first = x;
        else if (!same_params(p, &first, &x)) return false;
        in[k] = x.codes;
    }
    int qs[n->n_out > 0 ? n->n_out : 1];
    for (int k = 0; k < n->n_out; k++) {
        qs[k] = -1;
        if (n->out[k] < 0) continue;
        qs[k] = q_after(p, count, n->out[k], &y);
        if (qs[k] < 0 || !same_params(p, &first, &y) || g->values[y.codes].is_output) return false;
    }
    if (!rewrite(p, i, "", NULL, in, n_in, NULL, err)) return false;
    for (int k = 0; k < n->n_out; k++) {
        if (qs[k] < 0) continue;
        p->values[n->out[k]].t.dtype = first.type;
        p->values[n->out[k]].model_dtype = first.type;
        int z = g->nodes[qs[k]].out[0];
        if (!redirect(p, z, n->out[k], err)) return false;
        p->nodes[qs[k]].kind = ST_PN_FUSED;
        p->values[z].kind = ST_PV_DEAD;
        if (p->values[n->out[k]].last_use < p->values[z].last_use) p->values[n->out[k]].last_use = p->values[z].last_use;
    }
    return true;
}

/* ---- elementwise chains: a table of 256 ---- */

static bool island_op(const st_plan *p, int j)
{
    static const char *const OPS[] = {"Sigmoid", "Tanh", "Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip", "Mul",
                                      "Add", "Sub", "Div", "Neg", "Abs", "Erf", "Exp", "Softplus", "Elu", "Selu",
                                      "Identity", "QuantizeLinear", "DequantizeLinear"};
    for (size_t k = 0; k < sizeof OPS / sizeof *OPS; k++)
        if (is_op(p, j, OPS[k])) return true;
    return false;
}

/* Runs the chain's nodes (in[k] marked) in order on the 256 bytes of the
 * source's type with the CPU's own kernels, so the table holds what the
 * nodes would compute; table[b] = the last node's byte for byte b. */
static bool eval_table(st_plan *p, const bool *in_cone, int d, int last, uint8_t *table, st_status *err)
{
    const st_graph *g = p->g;
    void **buf = calloc((size_t)p->n_values, sizeof *buf);
    bool ok = buf != NULL;
    if (!buf) nomem(err, "elementwise chain");
    for (int j = d; j <= last && ok; j++) {
        if (!in_cone[j]) continue;
        const st_node *n = &g->nodes[j];
        int n_in;
        const int *in = ins(p, j, &n_in);
        int nio = n_in + n->n_out;
        st_view views[nio];
        st_operand ops[nio];
        const void *data[n_in > 0 ? n_in : 1];
        memset(ops, 0, sizeof ops);
        int orank = 1;
        for (int k = 0; k < n_in; k++) {
            int v = in[k];
            memset(&views[k], 0, sizeof views[k]);
            views[k].rank = -1;
            data[k] = NULL;
            if (v < 0) continue;
            const st_pvalue *pv = &p->values[v];
            void *src = j == d && k == 0 ? NULL : buf[v];
            if (j == d && k == 0) {
                /* the source: every byte of its type */
                src = buf[v] = malloc(256);
                if (!src) {
                    ok = nomem(err, "elementwise chain");
                    break;
                }
                for (int b = 0; b < 256; b++) ((uint8_t *)src)[b] = (uint8_t)b;
            }
            if (src) {
                st_view_init(&views[k], pv->t.dtype, 1, (int64_t[]){256});
                ops[k] = st_operand_of(&views[k], src);
            } else {
                st_view_init(&views[k], pv->t.dtype, pv->t.rank, pv->t.dims);
                ops[k] = st_operand_of(&views[k], (void *)pv->t.data);
                data[k] = pv->t.data;
                if (pv->t.rank > orank && !is_op(p, j, "QuantizeLinear") && !is_op(p, j, "DequantizeLinear")) orank = pv->t.rank;
            }
        }
        if (!ok) break;
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            st_view *ov = &views[n_in + k];
            memset(ov, 0, sizeof *ov);
            ov->rank = -1;
            if (v < 0) continue;
            int64_t dims[ST_MAX_RANK];
            for (int r = 0; r < orank; r++) dims[r] = r == orank - 1 ? 256 : 1;
            buf[v] = malloc(256 * st_dtype_size(p->values[v].t.dtype));
            if (!buf[v]) {
                ok = nomem(err, "elementwise chain");
                break;
            }
            st_view_init(ov, p->values[v].t.dtype, orank, dims);
            ops[n_in + k] = st_operand_of(ov, buf[v]);
        }
        if (!ok) break;
        st_knode kn = {n, n->op, p->nodes[j].state, n_in, n->n_out, views, data, NULL, p->target.host_device};
        char why[256];
        const st_kernel *kern = st_kernel_find(p->target.host, &kn, why, sizeof why);
        void *priv = NULL;
        /* no kernel, or one that refuses: the chain runs as written; a
         * kernel out of memory fails the plan, as anywhere else */
        st_status r = !kern ? ST_ERR_UNSUPPORTED : kern->prepare ? kern->prepare(&kn, &priv) : ST_OK;
        if (r == ST_OK) {
            st_kctx k = {n, p->nodes[j].state, n_in, n->n_out, ops, ops + n_in, NULL, NULL, NULL, NULL, priv};
            r = kern->run(&k);
            if (kern->release) kern->release(priv);
        }
        if (r == ST_ERR_NOMEM) *err = r;
        ok = r == ST_OK;
    }
    if (ok) memcpy(table, buf[g->nodes[last].out[0]], 256);
    for (int v = 0; buf && v < p->n_values; v++) free(buf[v]);
    free(buf);
    return ok;
}

/* From running DQ node d: the float nodes computed from its output alone
 * (and from scalar constants), up to the Q whose result, a function of
 * one byte, the others feed only.  That Q becomes a QLinearLookup of d's
 * input; the chain's other nodes go. */
static bool fuse_island(st_plan *p, const int *count, int d, st_status *err)
{
    const st_graph *g = p->g;
    qparam src;
    if (!is_exec(p, d) || !is_op(p, d, "DequantizeLinear") || g->nodes[d].out[0] < 0) return false;
    if (!backend_has(p, "ai.strata", "QLinearLookup")) return false;
    int d_in;
    if (!params_of(p, d, ins(p, d, &d_in)[0], &src) || src.axis >= 0 || !is8(src.type)) return false;
    bool *isl = calloc((size_t)g->n_nodes * 2 + (size_t)p->n_values, sizeof *isl);
    if (!isl) return nomem(err, "elementwise chain");
    bool *cone = isl + g->n_nodes, *dep = cone + g->n_nodes; /* dep: values computed from the source alone */
    isl[d] = true;
    dep[g->nodes[d].out[0]] = true;
    int last = d;
    for (int j = d + 1; j < g->n_nodes; j++) {
        if (!is_exec(p, j) || !island_op(p, j)) continue;
        const st_node *n = &g->nodes[j];
        int n_in;
        const int *in = ins(p, j, &n_in);
        bool any = false, ok = n->n_out >= 1 && n->out[0] >= 0;
        for (int k = 0; k < n_in && ok; k++) {
            int v = in[k];
            if (v < 0) continue;
            if (dep[v]) any = true;
            else ok = is_const(p, v) && numel(p, v) == 1;
        }
        if (!ok || !any) continue;
        const st_quant_state *qs = p->nodes[j].state;
        if ((is_op(p, j, "QuantizeLinear") || is_op(p, j, "DequantizeLinear")) && (!qs || qs->axis >= 0)) continue;
        st_dtype ot = p->values[n->out[0]].t.dtype;
        if (is_op(p, j, "QuantizeLinear") ? !is8(ot) : ot != ST_F32) continue;
        if (is_op(p, j, "DequantizeLinear") && !is8(p->values[in[0]].t.dtype)) continue;
        isl[j] = true;
        dep[n->out[0]] = true;
        last = j;
    }
    /* the Q with the largest valid cone: its ancestors in the island,
     * whose values (the source's float aside) nothing else reads */
    int best = -1, best_size = 0;
    bool *tmp = malloc((size_t)g->n_nodes * sizeof *tmp);
    if (!tmp) {
        free(isl);
        return nomem(err, "elementwise chain");
    }
    for (int q = last; q > d; q--) {
        if (!isl[q] || !is_op(p, q, "QuantizeLinear")) continue;
        memset(tmp, 0, (size_t)g->n_nodes * sizeof *tmp);
        tmp[q] = true;
        int size = 1;
        for (int j = q; j > d; j--) {
            if (!tmp[j]) continue;
            int n_in;
            const int *in = ins(p, j, &n_in);
            for (int k = 0; k < n_in; k++) {
                int v = in[k];
                if (v < 0 || !dep[v]) continue;
                int pr = p->values[v].producer;
                if (pr >= 0 && isl[pr] && !tmp[pr]) {
                    tmp[pr] = true;
                    size++;
                }
            }
        }
        if (!tmp[d]) continue;
        bool valid = true;
        for (int j = d + 1; j < q && valid; j++) {
            if (!tmp[j]) continue;
            int v = g->nodes[j].out[0];
            if (g->values[v].is_output) valid = false;
            for (int r = 0; r < g->n_nodes && valid; r++) {
                if (!is_exec(p, r) || tmp[r]) continue;
                int n_in;
                const int *in = st_plan_in(p, &g->nodes[r], r, &n_in);
                for (int k = 0; k < n_in; k++)
                    if (in[k] == v) valid = false;
            }
        }
        if (valid && size > best_size) {
            best = q;
            best_size = size;
            memcpy(cone, tmp, (size_t)g->n_nodes * sizeof *cone);
        }
    }
    free(tmp);
    bool done = false;
    st_qlut_state *s = best >= 0 ? calloc(1, sizeof *s) : NULL;
    if (best >= 0 && !s) nomem(err, "elementwise chain");
    if (s && eval_table(p, cone, d, best, s->table, err)) {
        s->kind = 2;
        s->has_table = true;
        int in[1] = {src.codes};
        done = rewrite(p, best, "ai.strata", "QLinearLookup", in, 1, s, err);
        s = NULL;
        for (int j = d + 1; done && j < best; j++)
            if (cone[j]) {
                p->nodes[j].kind = ST_PN_FUSED;
                p->values[g->nodes[j].out[0]].kind = ST_PV_DEAD;
            }
    }
    free(s);
    free(isl);
    (void)count;
    return done;
}

/* A QLinearLookup of a fused conv's only output goes into its epilogue. */
static bool lut_into_conv(st_plan *p, const int *count, int l)
{
    const st_graph *g = p->g;
    const st_pnode *pl = &p->nodes[l];
    if (!is_exec(p, l) || !pl->op || strcmp(pl->op->name, "QLinearLookup") != 0 || pl->n_in != 1) return false;
    int y = pl->in[0], c = p->values[y].producer;
    if (count[y] != 1 || g->values[y].is_output || !is_exec(p, c) || !p->nodes[c].op) return false;
    if (strcmp(p->nodes[c].op->name, "QLinearConv") != 0 || p->nodes[c].out0 != y) return false;
    st_qconv_state *s = p->nodes[c].state;
    const st_qlut_state *ls = pl->state;
    if (s->has_lut || !ls->has_table) return false;
    for (int b = 0; b < 256; b++) s->lut[b] = ls->table[b];
    s->has_lut = true;
    int z = g->nodes[l].out[0];
    p->values[y].kind = ST_PV_DEAD;
    p->nodes[c].out0 = z;
    p->values[z].producer = c;
    p->nodes[l].kind = ST_PN_FUSED;
    return true;
}

/* Q and DQ nodes whose results nothing reads any more. */
static void drop_unread(st_plan *p, int *count)
{
    const st_graph *g = p->g;
    for (bool again = true; again;) {
        again = false;
        st_plan_count_readers(p, count);
        for (int i = 0; i < g->n_nodes; i++) {
            if (!is_exec(p, i) || !(is_op(p, i, "QuantizeLinear") || is_op(p, i, "DequantizeLinear"))) continue;
            int v = g->nodes[i].out[0];
            if (v < 0 || count[v] || g->values[v].is_output) continue;
            p->nodes[i].kind = ST_PN_DEAD;
            p->values[v].kind = ST_PV_DEAD;
            again = true;
        }
    }
}

st_status st_pass_fuse_qdq(st_plan *p)
{
    const st_graph *g = p->g;
    if (p->precision != ST_F32 || getenv("STRATA_NO_QDQ_FUSION")) return ST_OK;
    st_status err = ST_OK;
    int *count = calloc((size_t)p->n_values + 1, sizeof *count);
    if (!count) {
        nomem(&err, "ops");
        return err;
    }
    st_plan_count_readers(p, count);
    /* chains first: SiLU's Mul reads two DQs, and would otherwise become
     * a QLinearMul of the Sigmoid's table */
    for (int i = 0; i < g->n_nodes && !err; i++)
        if (fuse_island(p, count, i, &err)) st_plan_count_readers(p, count);
    if (!err) drop_unread(p, count);
    for (int i = 0; i < g->n_nodes && !err; i++) {
        if (!is_exec(p, i)) continue;
        /* each stops the chain with false when it fails: err says so */
        if (fuse_conv(p, count, i, &err) || (!err && fuse_matmul(p, count, i, &err)) || (!err && fuse_gemm(p, count, i, &err)) ||
            (!err && fuse_binary(p, count, i, &err)) || (!err && fuse_move(p, count, i, &err)))
            st_plan_count_readers(p, count);
    }
    if (err) {
        free(count);
        return err;
    }
    drop_unread(p, count);
    for (int i = 0; i < g->n_nodes; i++)
        if (lut_into_conv(p, count, i)) st_plan_count_readers(p, count);
    drop_unread(p, count);
    free(count);
    return ST_OK;
}
