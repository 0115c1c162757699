/*
 * fuse_decomposed.c — LayerNorm and GELU that an exporter spelled out as
 * element-wise ops become the fused ops again.
 *
 * Owns: the rewrite of the plan's own graph (graph/derive.h) that puts a
 * LayerNormalization or Gelu node in place of the pattern's last node;
 * the pattern's other nodes lose their readers and are dead on the replan
 * that follows (p->expanded).  Patterns (every value between has no
 * reader outside the pattern; the constants must be exactly these):
 *   LayerNorm, as PyTorch before opset 17, tf2onnx and jax2tf write it:
 *     m = ReduceMean(x, trailing axes)   d = Sub(x, m)
 *     v = ReduceMean(Pow(d, 2) | Mul(d, d))
 *     n = Div(d, Sqrt(Add(v, eps)))  or  Mul(d, Reciprocal(Sqrt(Add(v, eps))))
 *     y = Add(Mul(n, gamma), beta), the Mul and the Add optional
 *   GELU, exact and tanh forms, any order of the product's factors:
 *     0.5 * x * (1 + erf(x / sqrt 2))          (or x * (1 / sqrt 2))
 *     0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
 *     with x^3 as Pow(x, 3) or x * x * x
 * Why: one pass instead of five to nine, and under --precision f16 the
 * fused kernels compute the mean, the variance and the tanh in f32, where
 * the spelled-out graph stores each step in 16 bits.  The fusion applies
 * only when the session backend's kernel table has the fused op (OpenCL
 * has no LayerNormalization yet: its pattern stays as written there).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/derive.h"
#include "graph/model.h"
#include "plan/plan.h"

typedef struct fctx {
    st_plan *p;
    int *count;          /* readers of each value among running nodes (plan values only) */
} fctx;

/* Like st_plan_count_readers, over the graph as rewritten so far (a
 * rewrite may add constants the plan has no slot for yet: not counted). */
static void count_readers(fctx *c)
{
    const st_plan *p = c->p;
    memset(c->count, 0, (size_t)p->n_values * sizeof *c->count);
    for (int i = 0; i < p->g->n_nodes && i < p->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_EXEC) continue;
        const st_node *n = &p->g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && n->in[k] < p->n_values) c->count[n->in[k]]++;
    }
}

static bool runs(const st_plan *p, int i) { return i >= 0 && p->nodes[i].kind == ST_PN_EXEC; }

/* The running node of op type `op` producing v, read only once and not
 * a graph output, or -1. */
static int single(const fctx *c, int v, const char *op)
{
    const st_plan *p = c->p;
    if (v < 0 || v >= p->n_values || c->count[v] != 1 || p->g->values[v].is_output) return -1;
    int n = p->g->values[v].producer;
    if (!runs(p, n) || p->g->nodes[n].domain[0] || strcmp(p->g->nodes[n].op_type, op) != 0) return -1;
    return n;
}

static int producer_op(const fctx *c, int v, const char *op)
{
    const st_plan *p = c->p;
    if (v < 0 || v >= p->n_values) return -1;
    int n = p->g->values[v].producer;
    if (!runs(p, n) || p->g->nodes[n].domain[0] || strcmp(p->g->nodes[n].op_type, op) != 0) return -1;
    return n;
}

/* The scalar a constant value holds, or NAN. */
static double scalar(const st_plan *p, int v)
{
    if (v < 0 || v >= p->n_values) return NAN;
    const st_pvalue *pv = &p->values[v];
    if (pv->kind != ST_PV_CONST || !st_dtype_is_float(pv->t.dtype) || st_numel(pv->t.rank, pv->t.dims) != 1) return NAN;
    return st_load_f64(pv->t.dtype, pv->t.data);
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* The axes a ReduceMean node reduces, as the first axis of a trailing
 * run [first, rank), or -1 when they are not such a run (or keepdims=0). */
static int trailing_axes(const st_plan *p, int node, int rank)
{
    const st_node *n = &p->g->nodes[node];
    if (st_attr_int(n, "keepdims", 1) != 1) return -1;
    int64_t axes[ST_MAX_RANK];
    int na = 0;
    int cnt = 0;
    const int64_t *a = st_attr_ints(n, "axes", &cnt);
    if (a) {
        if (cnt > ST_MAX_RANK) return -1;
        for (int i = 0; i < cnt; i++) axes[na++] = a[i];
    } else if (n->n_in > 1 && n->in[1] >= 0) {
        const st_pvalue *pv = &p->values[n->in[1]];
        if (pv->kind != ST_PV_CONST || pv->t.dtype != ST_I64) return -1;
        int64_t k = st_numel(pv->t.rank, pv->t.dims);
        if (k < 1 || k > ST_MAX_RANK) return -1;
        for (int64_t i = 0; i < k; i++) axes[na++] = ((const int64_t *)pv->t.data)[i];
    } else {
        return -1; /* every axis: not a LayerNorm of rows */
    }
    uint32_t mask = 0;
    for (int i = 0; i < na; i++) {
        int64_t x = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (x < 0 || x >= rank) return -1;
        mask |= 1u << x;
    }
    int first = rank - na;
    for (int d = first; d < rank; d++)
        if (!(mask & (1u << d))) return -1;
    return first;
}

/* The other input of binary node n when one of its inputs is v, or -1. */
static int other(const st_node *n, int v)
{
    if (n->n_in != 2) return -1;
    return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : -1;
}

/* A constant per-feature parameter of LN over [axis, rank): its dims,
 * leading 1s dropped, fit the normalised shape (LayerNormalization's
 * rule).  Returns the value to use (a reshaped copy when it had leading
 * 1s), or -1. */
static int ln_param(st_plan *p, int v, int x, int axis)
{
    if (v < 0 || v >= p->n_values) return -1;
    const st_pvalue *pv = &p->values[v];
    const st_tinfo *xt = &p->values[x].t;
    if (pv->kind != ST_PV_CONST || pv->t.dtype != xt->dtype) return -1;
    int lead = 0;
    while (lead < pv->t.rank - 1 && pv->t.dims[lead] == 1) lead++;
    int r = pv->t.rank - lead, rr = xt->rank - axis;
    if (r > rr) return -1;
    for (int i = 0; i < r; i++)
        if (pv->t.dims[lead + i] != xt->dims[axis + rr - r + i] && pv->t.dims[lead + i] != 1) return -1;
    if (!lead) return v;
    st_graph *g = p->own_g;
    const char *name = st_graph_strf(g, "%s/ln_param", g->values[v].name);
    return name ? st_graph_add_const(g, name, pv->t.dtype, r, pv->t.dims + lead, pv->t.data) : -1;
}

static st_attr *attrs2(st_graph *g, st_attr a, st_attr b)
{
    st_attr *x = st_graph_own(g, calloc(2, sizeof *x));
    if (x) {
        x[0] = a;
        x[1] = b;
    }
    return x;
}

/* Node at becomes op on in[0..n_in) with attributes attrs. */
static st_status become(st_graph *g, int at, const char *op, const int *in, int n_in, st_attr *attrs, int n_attrs, int opset)
{
    st_node *n = &g->nodes[at];
    int *ids = malloc(((size_t)n_in + 1) * sizeof *ids);
    if (!ids) return st_error(ST_ERR_NOMEM, "out of memory fusing '%s'", n->name);
    memcpy(ids, in, (size_t)n_in * sizeof *ids);
    free(n->in);
    n->in = ids;
    n->n_in = n_in;
    n->op_type = (char *)op;
    n->domain = (char *)"";
    n->opset = opset;
    n->op = st_op_find("", op);
    n->attrs = attrs;
    n->n_attrs = n_attrs;
    return n->op ? ST_OK : st_error(ST_ERR_INTERNAL, "no op row for %s", op);
}

/* LayerNorm ending at Div or Mul node `at` (the normalised value n);
 * *done when rewritten. */
static st_status try_layer_norm(fctx *c, int at, bool *done)
{
    st_plan *p = c->p;
    const st_graph *g = p->g;
    const st_node *nn = &g->nodes[at];
    if (nn->n_in != 2 || nn->out[0] < 0) return ST_OK;
    bool div = !strcmp(nn->op_type, "Div");
    for (int side = 0; side < (div ? 1 : 2); side++) {
        int dv = nn->in[side], sv = nn->in[1 - side];
        int sub = producer_op(c, dv, "Sub");
        if (sub < 0) continue;
        int sq;
        if (div) {
            sq = single(c, sv, "Sqrt");
        } else {
            int rc = single(c, sv, "Reciprocal");
            sq = rc < 0 ? -1 : single(c, g->nodes[rc].in[0], "Sqrt");
        }
        if (sq < 0) continue;
        int add = single(c, g->nodes[sq].in[0], "Add");
        if (add < 0) continue;
        const st_node *an = &g->nodes[add];
        int vv = -1;
        double eps = NAN;
        for (int k = 0; k < 2 && an->n_in == 2; k++)
            if (!isnan(scalar(p, an->in[k]))) eps = scalar(p, an->in[k]), vv = an->in[1 - k];
        int rv = single(c, vv, "ReduceMean");
        if (rv < 0 || isnan(eps) || eps < 0) continue;
        int sqv = g->nodes[rv].in[0];
        int pw = single(c, sqv, "Pow"), mu = single(c, sqv, "Mul");
        if (pw >= 0 && !(g->nodes[pw].in[0] == dv && scalar(p, g->nodes[pw].in[1]) == 2.0)) continue;
        if (mu >= 0 && !(g->nodes[mu].in[0] == dv && g->nodes[mu].in[1] == dv)) continue;
        if (pw < 0 && mu < 0) continue;
        /* d is read by the square (once, or twice by one Mul) and by n */
        if (c->count[dv] != (pw >= 0 ? 2 : 3) || g->values[dv].is_output) continue;
        const st_node *sn = &g->nodes[sub];
        int x = sn->in[0], mv = sn->in[1];
        int rm = single(c, mv, "ReduceMean");
        if (rm < 0 || g->nodes[rm].in[0] != x) continue;
        const st_tinfo *xt = &p->values[x].t;
        if (!st_dtype_is_float(xt->dtype) || xt->rank < 1 || !st_plan_same_shape(p, x, nn->out[0])) continue;
        int axis = trailing_axes(p, rm, xt->rank);
        if (axis < 0 || trailing_axes(p, rv, xt->rank) != axis) continue;
        /* the affine tail: Mul by gamma, Add of beta */
        int last = at, gamma = -1, beta = -1;
        int mul = -1, badd = -1;
        int ov = nn->out[0];
        if (c->count[ov] == 1 && !g->values[ov].is_output) {
            for (int j = at + 1; j < g->n_nodes && mul < 0; j++)
                if (runs(p, j) && !g->nodes[j].domain[0] && !strcmp(g->nodes[j].op_type, "Mul") && other(&g->nodes[j], ov) >= 0)
                    mul = j;
        }
        ST_TRY(st_plan_own_graph(p));
        st_graph *og = p->own_g;
        if (mul >= 0 && st_plan_same_shape(p, x, g->nodes[mul].out[0]) &&
            (gamma = ln_param(p, other(&og->nodes[mul], ov), x, axis)) >= 0) {
            last = mul;
            int mv2 = og->nodes[mul].out[0];
            if (c->count[mv2] == 1 && !og->values[mv2].is_output)
                for (int j = mul + 1; j < og->n_nodes && badd < 0; j++)
                    if (runs(p, j) && !og->nodes[j].domain[0] && !strcmp(og->nodes[j].op_type, "Add") &&
                        other(&og->nodes[j], mv2) >= 0)
                        badd = j;
            if (badd >= 0 && st_plan_same_shape(p, x, og->nodes[badd].out[0]) &&
                (beta = ln_param(p, other(&og->nodes[badd], mv2), x, axis)) >= 0)
                last = badd;
        }
        if (gamma < 0) {
            /* LayerNormalization needs a Scale: ones of the normalised shape */
            int64_t n = 1;
            for (int d = axis; d < xt->rank; d++) n *= xt->dims[d];
            if (n > (1 << 24)) continue;
            uint64_t bytes = (uint64_t)n * st_dtype_size(xt->dtype);
            void *ones = malloc(bytes ? bytes : 1);
            if (!ones) return st_error(ST_ERR_NOMEM, "out of memory fusing '%s'", nn->name);
            float one = 1.0f;
            for (int64_t i = 0; i < n; i++) st_convert(xt->dtype, (char *)ones + i * st_dtype_size(xt->dtype), ST_F32, &one, 1);
            const char *name = st_graph_strf(og, "%s/ln_scale", og->nodes[at].name);
            gamma = name ? st_graph_add_const(og, name, xt->dtype, xt->rank - axis, xt->dims + axis, ones) : -1;
            free(ones);
            if (gamma < 0) return st_error(ST_ERR_NOMEM, "out of memory fusing '%s'", nn->name);
        }
        st_attr *a = attrs2(og, (st_attr){.name = (char *)"axis", .type = ST_ATTR_INT, .i = axis},
                            (st_attr){.name = (char *)"epsilon", .type = ST_ATTR_FLOAT, .f = (float)eps});
        if (!a) return st_error(ST_ERR_NOMEM, "out of memory fusing '%s'", nn->name);
        int in[3] = {x, gamma, beta};
        ST_TRY(become(og, last, "LayerNormalization", in, beta >= 0 ? 3 : 2, a, 2, 17));
        *done = true;
        return ST_OK;
    }
    return ST_OK;
}

/* Multiplicative factors of v through Muls read once: leaves[] (up to 4). */
static int factors(const fctx *c, int v, int *leaves, int n, bool top)
{
    const st_graph *g = c->p->g;
    int m = top ? producer_op(c, v, "Mul") : single(c, v, "Mul");
    if (m < 0 || g->nodes[m].n_in != 2) {
        if (n < 4) leaves[n] = v;
        return n + 1;
    }
    n = factors(c, g->nodes[m].in[0], leaves, n, false);
    return factors(c, g->nodes[m].in[1], leaves, n, false);
}

/* x^3 as Pow(x, 3) or a product of three x. */
static bool is_cube(const fctx *c, int v, int x)
{
    int pw = single(c, v, "Pow");
    if (pw >= 0) return c->p->g->nodes[pw].in[0] == x && scalar(c->p, c->p->g->nodes[pw].in[1]) == 3.0;
    int lv[4];
    int n = factors(c, v, lv, 0, false);
    if (n != 3 || single(c, v, "Mul") < 0) return false;
    for (int i = 0; i < 3; i++)
        if (lv[i] != x) return false;
    return true;
}

/* GELU ending at Mul node `at`; *done when rewritten. */
static st_status try_gelu(fctx *c, int at, bool *done)
{
    st_plan *p = c->p;
    const st_graph *g = p->g;
    int ov = g->nodes[at].out[0];
    if (ov < 0) return ST_OK;
    int lv[4];
    int n = factors(c, ov, lv, 0, true);
    if (n != 3) return ST_OK;
    /* one leaf 0.5, one x, one 1 + erf|tanh(...) */
    int half = -1, x = -1, a = -1;
    for (int i = 0; i < 3; i++) {
        if (scalar(p, lv[i]) == 0.5) half = i;
        else if (single(c, lv[i], "Add") >= 0) a = a < 0 ? i : a;
    }
    if (half < 0 || a < 0) return ST_OK;
    for (int i = 0; i < 3; i++)
        if (i != half && i != a) x = lv[i];
    if (x < 0 || !st_dtype_is_float(p->values[x].t.dtype) || !st_plan_same_shape(p, x, ov)) return ST_OK;
    const st_node *an = &g->nodes[single(c, lv[a], "Add")];
    int tv = -1;
    for (int k = 0; k < 2 && an->n_in == 2; k++)
        if (scalar(p, an->in[k]) == 1.0) tv = an->in[1 - k];
    if (tv < 0) return ST_OK;
    int erf = single(c, tv, "Erf"), th = single(c, tv, "Tanh");
    bool tanh_form = false;
    if (erf >= 0) {
        int uv = g->nodes[erf].in[0];
        int dn = single(c, uv, "Div"), mn = single(c, uv, "Mul");
        bool ok = (dn >= 0 && g->nodes[dn].in[0] == x && near(scalar(p, g->nodes[dn].in[1]), 1.41421356237309505)) ||
                  (mn >= 0 && other(&g->nodes[mn], x) >= 0 && near(scalar(p, other(&g->nodes[mn], x)), 0.70710678118654752));
        if (!ok) return ST_OK;
    } else if (th >= 0) {
        /* sqrt(2/pi) * (x + 0.044715 * x^3) */
        int uv = g->nodes[th].in[0], mn = single(c, uv, "Mul");
        if (mn < 0) return ST_OK;
        const st_node *m = &g->nodes[mn];
        int inner = -1;
        for (int k = 0; k < 2 && m->n_in == 2; k++)
            if (near(scalar(p, m->in[k]), 0.79788456080286536)) inner = m->in[1 - k];
        int ad = single(c, inner, "Add");
        if (ad < 0 || other(&g->nodes[ad], x) < 0) return ST_OK;
        int cv = other(&g->nodes[ad], x), cm = single(c, cv, "Mul");
        if (cm < 0) return ST_OK;
        int x3 = -1;
        for (int k = 0; k < 2 && g->nodes[cm].n_in == 2; k++)
            if (near(scalar(p, g->nodes[cm].in[k]), 0.044715)) x3 = g->nodes[cm].in[1 - k];
        if (x3 < 0 || !is_cube(c, x3, x)) return ST_OK;
        tanh_form = true;
    } else {
        return ST_OK;
    }
    ST_TRY(st_plan_own_graph(p));
    st_graph *og = p->own_g;
    st_attr *at_ = NULL;
    if (tanh_form) {
        at_ = st_graph_own(og, calloc(1, sizeof *at_));
        if (!at_) return st_error(ST_ERR_NOMEM, "out of memory fusing '%s'", og->nodes[at].name);
        *at_ = (st_attr){.name = (char *)"approximate", .type = ST_ATTR_STRING, .s = (char *)"tanh"};
    }
    ST_TRY(become(og, at, "Gelu", &x, 1, at_, at_ ? 1 : 0, 20));
    *done = true;
    return ST_OK;
}

st_status st_pass_fuse_decomposed(st_plan *p)
{
    if (getenv("STRATA_NO_DECOMPOSED_FUSION")) return ST_OK;
    const st_kernel_table *t = p->target.main;
    const st_op_def *ln = st_op_find("", "LayerNormalization"), *gelu = st_op_find("", "Gelu");
    bool want_ln = ln && t && st_kernel_dtypes(t, ln) != 0, want_gelu = gelu && t && st_kernel_dtypes(t, gelu) != 0;
    if (!want_ln && !want_gelu) return ST_OK;
    const st_graph *g = p->g;
    fctx c = {p, calloc((size_t)p->n_values + 1, sizeof(int))};
    if (!c.count) return st_error(ST_ERR_NOMEM, "out of memory fusing decomposed ops");
    count_readers(&c);
    bool any = false;
    st_status s = ST_OK;
    for (int i = 0; i < g->n_nodes && s == ST_OK; i++) {
        if (!runs(p, i) || g->nodes[i].domain[0]) continue;
        const char *op = p->g->nodes[i].op_type;
        bool done = false;
        if (want_ln && (!strcmp(op, "Div") || !strcmp(op, "Mul"))) s = try_layer_norm(&c, i, &done);
        if (s == ST_OK && !done && want_gelu && !strcmp(op, "Mul")) s = try_gelu(&c, i, &done);
        g = p->g; /* the plan's own graph once a rewrite made it */
        if (done) {
            any = true;
            /* readers changed: the pattern's values lost theirs */
            count_readers(&c);
        }
    }
    free(c.count);
    if (s == ST_OK && any) {
        st_graph_relink(p->own_g);
        p->expanded = true; /* plan again on the fused graph */
    }
    return s;
}
