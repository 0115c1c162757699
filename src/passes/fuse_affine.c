/*
 * fuse_affine.c — for a backend whose Conv kernels take per-channel affine
 * maps around their activation (ST_CAP_CONV_AFFINE: the CPU's), the affine
 * ops around a Conv's activation folded into its epilogue.
 *
 * Owns: st_conv_state's ch_scale, ch_shift, post_scale and post_shift (and
 * epi.act when the activation comes after an affine), nodes[].out0, the
 * ST_PN_FUSED kind of the absorbed nodes and values[].producer of the moved
 * output, as passes/fuse.c does for a bare activation.  Runs after it.
 *
 * Exporters spell a Conv's epilogue in many ops: PP-OCR's LCNet writes
 *   Conv -> [BatchNormalization] -> Mul(s) -> Add(b) -> HardSwish -> Mul(s') -> Add(b')
 * (a learnable affine on each side of the activation), each a full pass
 * over a large tensor.  The chain starting at the Conv's output X becomes
 *   y = act(x * scale[m] + shift[m]) * post_scale[m] + post_shift[m]
 * per output channel m, applied in registers before the one store.
 * Absorbed, while the value has a sole reader that runs as a command and is
 * not a graph output, and keeps X's shape and dtype:
 *   before the activation: BatchNormalization (inference, constant
 *   parameters), Mul/Add by a constant, Sub/Div of X by a constant;
 *   the activation (Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish,
 *   Clip with constant bounds), once;
 *   after it: Mul/Add by a constant, Sub/Div of X by a constant;
 * where "constant" is a scalar or varies along the channel dim only.  The
 * BatchNormalization fold is the f32 one the CPU kernel uses, and
 * the rest is arithmetic in f32 on the constants, so results move by
 * rounding only.  Only plans whose main backend declares the capability
 * get them (plan/plan.c); a kernel table that does not take the fields
 * refuses such a node in its accepts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "passes/passes.h"
#include "plan/plan.h"

static bool is_exec(const st_plan *p, int node) { return node >= 0 && p->nodes[node].kind == ST_PN_EXEC; }

static int *count_users(const st_plan *p)
{
    int *count = malloc(((size_t)p->n_values + 1) * sizeof *count);
    if (count) st_plan_count_readers(p, count);
    return count;
}

static bool same_shape(const st_tinfo *a, const st_tinfo *b)
{
    if (a->rank != b->rank || a->dtype != b->dtype) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* Value c as per-channel numbers for an X of shape x (channel dim 1): a
 * scalar, or varying along the dim that lines up with dim 1 only.  Fills
 * v[0..m) and returns true, or false when c is not such a constant. */
static bool channel_const(const st_plan *p, int c, const st_tinfo *x, float *v)
{
    if (c < 0) return false;
    const st_pvalue *pc = &p->values[c];
    if (pc->kind != ST_PV_CONST || !pc->t.data || !st_dtype_is_float(pc->t.dtype) || pc->t.rank > x->rank) return false;
    int64_t m = x->dims[1], stride = 0;
    for (int d = 0; d < pc->t.rank; d++) {
        int xd = x->rank - pc->t.rank + d;
        int64_t n = pc->t.dims[d];
        if (n == 1) continue;
        if (xd != 1 || n != m) return false;
        stride = 1;
    }
    size_t es = st_dtype_size(pc->t.dtype);
    for (int64_t i = 0; i < m; i++) v[i] = st_load_f32(pc->t.dtype, (const char *)pc->t.data + i * stride * (int64_t)es);
    return true;
}

/* The epilogue activation for node a reading x, or false. */
static bool act_of(const st_plan *p, int a, int x, st_epilogue *e)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[a];
    const char *op = st_plan_op(p, n, a)->name;
    static const char *FUSABLE[] = {"Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Clip"};
    bool ok = false;
    for (size_t i = 0; i < sizeof FUSABLE / sizeof *FUSABLE; i++) ok |= strcmp(op, FUSABLE[i]) == 0;
    const st_ew_state *s = p->nodes[a].state;
    int n_in;
    const int *in = st_plan_in(p, n, a, &n_in);
    if (!ok || !s || n_in < 1 || in[0] != x) return false;
    e->act = s->code + 1;
    e->alpha = s->alpha;
    e->beta = s->beta;
    if (s->code == ST_U_CLIP)
        for (int k = 1; k < n_in; k++) {
            int v = in[k];
            if (v < 0) continue;
            const st_pvalue *pv = &p->values[v];
            if (pv->kind != ST_PV_CONST || st_numel(pv->t.rank, pv->t.dims) != 1) return false;
            float b = st_load_f32(pv->t.dtype, pv->t.data);
            if (k == 1) e->alpha = b;
            else e->beta = b;
        }
    return true;
}

/* BatchNormalization a reading x as a per-channel (scale, shift), or false. */
static bool batchnorm_of(const st_plan *p, int a, int x, const st_tinfo *xt, float *sc, float *sh, float *tmp)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[a];
    if (strcmp(st_plan_op(p, n, a)->name, "BatchNormalization") != 0 || n->domain[0]) return false;
    const st_norm_state *s = p->nodes[a].state;
    int n_in;
    const int *in = st_plan_in(p, n, a, &n_in);
    if (!s || !s->spatial || n_in < 5 || in[0] != x || xt->rank < 2) return false;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] >= 0) return false;
    int64_t m = xt->dims[1];
    float *gamma = tmp, *beta = tmp + m, *mean = tmp + 2 * m, *var = tmp + 3 * m;
    float *dst[4] = {gamma, beta, mean, var};
    for (int k = 1; k <= 4; k++) {
        const st_pvalue *pv = &p->values[in[k]];
        if (in[k] < 0 || pv->kind != ST_PV_CONST || st_numel(pv->t.rank, pv->t.dims) != m) return false;
        size_t es = st_dtype_size(pv->t.dtype);
        for (int64_t i = 0; i < m; i++) dst[k - 1][i] = st_load_f32(pv->t.dtype, (const char *)pv->t.data + i * (int64_t)es);
    }
    /* as the CPU kernel folds it (backends/cpu/k_norm.c) */
    for (int64_t i = 0; i < m; i++) {
        sc[i] = gamma[i] / sqrtf(var[i] + s->epsilon);
        sh[i] = beta[i] - mean[i] * sc[i];
    }
    return true;
}

/* Mul, Add, Sub or Div of x by a per-channel constant applied to (S, T):
 * x -> x * S + T becomes the op of it.  False when node a is not one. */
static bool affine_of(const st_plan *p, int a, int x, const st_tinfo *xt, float *S, float *T, float *v)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[a];
    const char *op = st_plan_op(p, n, a)->name;
    int code = !strcmp(op, "Mul") ? 0 : !strcmp(op, "Add") ? 1 : !strcmp(op, "Sub") ? 2 : !strcmp(op, "Div") ? 3 : -1;
    int n_in;
    const int *in = st_plan_in(p, n, a, &n_in);
    if (code < 0 || n->domain[0] || n_in != 2) return false;
    /* channel_const lines the constant up from the right, as opset 7 does */
    const st_ew_state *s = p->nodes[a].state;
    if (s && s->b_units) return false;
    int side = in[0] == x ? 0 : in[1] == x ? 1 : -1;
    if (side < 0 || in[0] == in[1] || (code >= 2 && side != 0)) return false; /* c - x, c / x are not affine in x */
    if (!channel_const(p, in[1 - side], xt, v)) return false;
    for (int64_t i = 0; i < xt->dims[1]; i++) {
        switch (code) {
        case 0: S[i] *= v[i], T[i] *= v[i]; break;
        case 1: T[i] += v[i]; break;
        case 2: T[i] -= v[i]; break;
        default: S[i] /= v[i], T[i] /= v[i]; break;
        }
    }
    return true;
}

/* False only when out of memory. */
static bool fuse_conv(st_plan *p, int *count, int i)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[i];
    st_conv_state *cs = p->nodes[i].state;
    int x0 = st_plan_out(p, n, i, 0);
    if (!cs || x0 < 0 || g->values[x0].is_output) return true;
    const st_tinfo xt = p->values[x0].t;
    if (xt.rank < 3 || xt.dtype == ST_F64 || !st_dtype_is_float(xt.dtype)) return true;
    int64_t m = xt.dims[1];
    float *buf = calloc((size_t)m * 9 + 1, sizeof *buf);
    int *fused = calloc((size_t)g->n_nodes + 1, sizeof *fused);
    if (!buf || !fused) {
        free(buf);
        free(fused);
        return false;
    }
    float *S = buf, *T = buf + m, *PS = buf + 2 * m, *PT = buf + 3 * m, *v = buf + 4 * m, *tmp = buf + 5 * m;
    for (int64_t k = 0; k < m; k++) S[k] = PS[k] = 1.0f;
    st_epilogue e = cs->epi;
    bool post = e.act != 0, any_pre = false, any_post = false;
    int x = x0, nf = 0;
    for (;;) {
        int a = st_plan_sole_reader(p, count, x);
        if (a < 0 || g->nodes[a].n_out < 1) break;
        int y = g->nodes[a].out[0];
        if (y < 0 || !same_shape(&p->values[y].t, &xt)) break;
        if (!post && batchnorm_of(p, a, x, &xt, v, v + m, tmp)) {
            for (int64_t k = 0; k < m; k++) S[k] *= v[k], T[k] = T[k] * v[k] + v[m + k];
            any_pre = true;
        } else if (affine_of(p, a, x, &xt, post ? PS : S, post ? PT : T, v)) {
            if (post) any_post = true;
            else any_pre = true;
        } else if (!post && act_of(p, a, x, &e)) {
            post = true;
        } else {
            break;
        }
        fused[nf++] = a;
        x = y;
    }
    bool ok = true;
    if (nf > 0) {
        float *keep = st_plan_alloc(p, (uint64_t)m * 4 * sizeof(float));
        ok = keep != NULL;
        if (keep) {
            memcpy(keep, buf, (size_t)m * 4 * sizeof(float));
            cs->epi = e;
            if (any_pre) {
                cs->ch_scale = keep;
                cs->ch_shift = keep + m;
            }
            if (any_post) {
                cs->post_scale = keep + 2 * m;
                cs->post_shift = keep + 3 * m;
            }
            p->values[x0].kind = ST_PV_DEAD;
            p->nodes[i].out0 = x;
            p->values[x].producer = i;
            for (int k = 0; k < nf; k++) {
                int a = fused[k];
                p->nodes[a].kind = ST_PN_FUSED;
                int o = g->nodes[a].out[0];
                if (o != x) p->values[o].kind = ST_PV_DEAD;
                int n_in;
                const int *in = st_plan_in(p, &g->nodes[a], a, &n_in);
                for (int q = 0; q < n_in; q++)
                    if (in[q] >= 0) count[in[q]]--;
            }
        }
    }
    free(buf);
    free(fused);
    return ok;
}

/* As in passes/fuse.c: a fusion left out for want of memory would change
 * the result's bits, so it is an error. */
st_status st_pass_fuse_affine(st_plan *p)
{
    const st_graph *g = p->g;
    int *count = count_users(p);
    bool ok = count != NULL;
    for (int i = 0; ok && i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        if (!is_exec(p, i) || strcmp(st_plan_op(p, n, i)->name, "Conv") != 0 || n->domain[0]) continue;
        ok = fuse_conv(p, count, i);
    }
    free(count);
    return ok ? ST_OK : st_error(ST_ERR_NOMEM, "out of memory folding affine ops into convolutions");
}
