/*
 * precision.c — the mixed-precision policy of --precision f16|bf16.
 *
 * Owns: plan->keep_f32 (which values stay f32 under a lower precision),
 * the Cast nodes it inserts into the plan's own graph, and
 * precision_planned.  docs/precision.md states the policy; in short, a
 * lower precision stores values in 16 bits while kernels compute in f32,
 * which loses nothing for a Conv or a MatMul but ruins a few patterns,
 * and those nodes stay f32:
 *   - a reduction whose result is subtracted or divided (a mean taken
 *     from x, a variance as E[x^2] - E[x]^2, a sum that divides): the
 *     reduction, the element-wise nodes that feed it (x * x) and those
 *     that its result flows through until a non-element-wise op; and a
 *     mean that is padded, smoothed (Conv) or reduced again before it is
 *     subtracted: the whole path to the Sub or Neg;
 *   - Pow, Exp and Log (16 bits overflow at 65504 and a rounded exponent
 *     is a relative error of the result), and the recurrent ops and
 *     CumSum, which accumulate along a long axis through stored values;
 *   - a log of a power (a spectrum in dB): the chain from the Log back
 *     through linear ops to where the power's operand comes from, whose
 *     range (an STFT of int16 audio) is beyond f16's.
 * Single kernels that normalise (Softmax, LayerNormalization,
 * InstanceNormalization, GroupNormalization) already compute in f32 from
 * 16-bit operands and are not split by casts.
 *
 * How: the pass runs at the end of specialization, when every value has
 * its model dtype and shape.  It picks the kept nodes, then rewrites the
 * plan's own graph: a kept node reading a value that is lowered reads a
 * Cast of it (to=FLOAT, which the lowering leaves f32: the Cast runs
 * f16 -> f32), and a lowered node reading a kept value reads a Cast of it
 * (whose output is lowered: f32 -> f16).  A constant becomes a folded
 * Cast.  Each such Cast is shared by all the readers on its side.  The
 * plan is then built again on that graph (p->expanded), so the casts are
 * planned like any other command: buffers, placement, the hazard DAG.
 * On that replan the pass finds precision_planned set and does nothing;
 * passes/specialize.c lowers every float value but the kept ones.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/derive.h"
#include "graph/model.h"
#include "passes/passes.h"
#include "plan/plan.h"

/* Element-wise arithmetic and the shape-only ops a reduced value passes
 * through on its way to a Sub or a Div. */
static bool is_arith(const char *op)
{
    static const char *OPS[] = {"Add", "Sub", "Mul", "Div", "Sqrt", "Reciprocal", "Pow", "Neg", "Abs", "Exp", "Log",
                                "Max", "Min", "Sum", "Mean", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Expand",
                                "Identity", "Cast", "Clip"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

static bool is_reduction(const char *op)
{
    static const char *OPS[] = {"ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                "ReduceLogSumExp", "GlobalAveragePool"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

/* Ops kept f32 wherever they are. */
static bool is_seed(const char *op)
{
    static const char *OPS[] = {"Pow", "Exp", "Log", "LSTM", "GRU", "RNN", "CumSum", "ReduceLogSumExp", "ReduceLogSum"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

/* Ops a value passes through linearly (a log of a power looks through them). */
static bool is_linear(const char *op)
{
    static const char *OPS[] = {"Add", "Mul", "MatMul", "Gemm", "Conv", "Transpose", "Reshape", "Unsqueeze", "Squeeze",
                                "Flatten", "Clip", "Identity", "Max", "Slice", "Concat", "Sqrt", "Abs", "Div", "Pad"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

typedef struct ctx {
    st_plan *p;
    const st_graph *g;
    int **readers;       /* per value: the running nodes reading it */
    int *n_readers;
    bool *keep;          /* per node */
} ctx;

static bool runs(const ctx *c, int i) { return i >= 0 && c->p->nodes[i].kind == ST_PN_EXEC; }

static bool is_f32(const ctx *c, int v) { return v >= 0 && c->p->values[v].t.dtype == ST_F32; }

static const char *op_of(const ctx *c, int i) { return c->g->nodes[i].domain[0] ? "" : c->g->nodes[i].op_type; }

/* Whether a value derived from reduction output v is subtracted or
 * divided within depth element-wise steps. */
static bool reaches_sub_div(const ctx *c, int v, int depth)
{
    if (depth < 0 || v < 0) return false;
    for (int r = 0; r < c->n_readers[v]; r++) {
        int j = c->readers[v][r];
        const char *op = op_of(c, j);
        if (!strcmp(op, "Sub") || !strcmp(op, "Div") || !strcmp(op, "Reciprocal") || !strcmp(op, "Neg")) return true;
        if (is_arith(op) && reaches_sub_div(c, c->g->nodes[j].out[0], depth - 1)) return true;
    }
    return false;
}

/* Ops a mean may pass through, besides element-wise ones, before it is
 * subtracted: padding (Pad, or Slice and Concat as a reflect pad), a
 * smoothing filter (Conv, AveragePool) and further reductions of it.
 * silero_vad_v4's adaptive normalisation takes the mean of the log
 * spectrum over frequency, reflect-pads it, smooths it with a Conv,
 * averages that and subtracts it from the spectrum. */
static bool is_mean_filter(const char *op)
{
    static const char *OPS[] = {"Concat", "Pad", "Slice", "Split", "Conv", "AveragePool", "Transpose", "Gather", "Tile"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return is_arith(op) || is_reduction(op);
}

/* Whether reduction output v reaches a Sub or a Neg within depth steps
 * through is_mean_filter ops; marks the path (on[]), its Sub or Neg too. */
static bool mean_subtracted(const ctx *c, int v, int depth, bool *on)
{
    if (depth < 0 || v < 0) return false;
    bool found = false;
    for (int r = 0; r < c->n_readers[v]; r++) {
        int j = c->readers[v][r];
        const char *op = op_of(c, j);
        if (!strcmp(op, "Sub") || !strcmp(op, "Neg")) {
            on[j] = found = true;
            continue;
        }
        if (!is_mean_filter(op)) continue;
        const st_node *n = &c->g->nodes[j];
        for (int k = 0; k < n->n_out; k++)
            if (is_f32(c, n->out[k]) && mean_subtracted(c, n->out[k], depth - 1, on)) on[j] = found = true;
    }
    return found;
}

/* Keeps the element-wise nodes a kept value flows through, up to depth. */
static void keep_forward(ctx *c, int v, int depth)
{
    if (depth < 0 || v < 0) return;
    for (int r = 0; r < c->n_readers[v]; r++) {
        int j = c->readers[v][r];
        /* a node kept already was walked from (or is a seed): no second walk */
        if (c->keep[j] || !is_arith(op_of(c, j)) || !is_f32(c, c->g->nodes[j].out[0])) continue;
        c->keep[j] = true;
        keep_forward(c, c->g->nodes[j].out[0], depth - 1);
    }
}

/* Keeps the element-wise producers of node i's float inputs whose only
 * readers are kept (x * x before a mean), up to depth. */
static void keep_backward(ctx *c, int i, int depth)
{
    if (depth < 0) return;
    const st_node *n = &c->g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0 || !is_f32(c, v) || c->g->values[v].is_output) continue;
        int pr = c->p->values[v].producer;
        if (!runs(c, pr) || c->keep[pr] || !is_arith(op_of(c, pr))) continue;
        bool all = true;
        for (int r = 0; r < c->n_readers[v]; r++) all &= c->keep[c->readers[v][r]];
        if (!all) continue;
        c->keep[pr] = true;
        keep_backward(c, pr, depth - 1);
    }
}

/* A Log of a power: from Log node i back through linear ops to a Pow (or
 * x * x) within depth steps; marks the path (on[]) when found. */
static bool power_below(ctx *c, int i, int depth, bool *on)
{
    if (depth < 0) return false;
    const st_node *n = &c->g->nodes[i];
    bool found = false;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0 || !is_f32(c, v) || c->p->values[v].kind == ST_PV_CONST) continue;
        int pr = c->p->values[v].producer;
        if (!runs(c, pr)) continue;
        const char *op = op_of(c, pr);
        const st_node *pn = &c->g->nodes[pr];
        bool power = !strcmp(op, "Pow") || !strcmp(op, "Exp") || (!strcmp(op, "Mul") && pn->n_in == 2 && pn->in[0] == pn->in[1]);
        if (power || (is_linear(op) && power_below(c, pr, depth - 1, on))) {
            on[pr] = true;
            found = true;
        }
    }
    return found;
}

/* The producers of the operands of power node i through linear ops back
 * to a graph input, up to depth: their range is the power's root.  An
 * STFT's source is audio that an Unsqueeze, a Reshape and a reflecting
 * Pad bring to its Conv: rounded to f16 there, a quiet band's log moved
 * silero_vad_v4's LSTM state by 1.2% (tests/zoo/README.md). */
static void keep_power_operands(ctx *c, int i, int depth)
{
    if (depth < 0) return;
    const st_node *n = &c->g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0 || !is_f32(c, v) || c->p->values[v].kind == ST_PV_CONST) continue;
        int pr = c->p->values[v].producer;
        if (!runs(c, pr) || c->keep[pr] || !is_linear(op_of(c, pr))) continue;
        c->keep[pr] = true;
        keep_power_operands(c, pr, depth - 1);
    }
}

static bool is_view_op(const char *op)
{
    static const char *OPS[] = {"Squeeze", "Unsqueeze", "Reshape", "Flatten", "Transpose", "Gather", "Slice", "Concat",
                                "Split", "Identity"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

/* A recurrent op's state is carried in f32 from where it enters the
 * graph to where it leaves: the view-like ops between (the Gather or
 * Slice of one direction's state, the Concat of the new states) are kept
 * too, so a state fed back from one call to the next is never rounded. */
static void keep_state_path(ctx *c, int i, int depth, bool up)
{
    if (depth < 0) return;
    const st_node *n = &c->g->nodes[i];
    if (up) {
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || !is_f32(c, v)) continue;
            int pr = c->p->values[v].producer;
            if (!runs(c, pr) || c->keep[pr] || !is_view_op(op_of(c, pr))) continue;
            c->keep[pr] = true;
            keep_state_path(c, pr, depth - 1, true);
        }
        return;
    }
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        if (v < 0 || !is_f32(c, v)) continue;
        for (int r = 0; r < c->n_readers[v]; r++) {
            int j = c->readers[v][r];
            if (c->keep[j] || !is_view_op(op_of(c, j))) continue;
            c->keep[j] = true;
            keep_state_path(c, j, depth - 1, false);
        }
    }
}

/* Ops between a float value and an equality test on it (a peak test,
 * Equal(x, MaxPool(x))): rounding makes neighbours tie. */
static bool is_order_path(const char *op)
{
    static const char *OPS[] = {"Sigmoid", "MaxPool", "Reshape", "Transpose", "Slice", "Squeeze", "Unsqueeze", "Identity",
                                "Flatten", "Softmax", "Tanh"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

static void keep_order_path(ctx *c, int i, int depth)
{
    if (depth < 0) return;
    const st_node *n = &c->g->nodes[i];
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0 || !is_f32(c, v)) continue;
        int pr = c->p->values[v].producer;
        if (!runs(c, pr) || c->keep[pr] || !is_order_path(op_of(c, pr))) continue;
        c->keep[pr] = true;
        keep_order_path(c, pr, depth - 1);
    }
}

/* Whether op is an item of the comma-separated list (or the list is "*"):
 * whole names, so that "Mul" does not also keep MatMul. */
static bool listed(const char *list, const char *op)
{
    if (!strcmp(list, "*")) return true;
    size_t n = strlen(op);
    for (const char *p = list; n && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, op, n)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* Whether "@name" is an item of the list (a node by its name). */
static bool named(const char *list, const char *name)
{
    for (const char *p = strchr(list, '@'); p; p = strchr(p + 1, '@')) {
        size_t n = strlen(name);
        if (!strncmp(p + 1, name, n) && (p[1 + n] == ',' || !p[1 + n])) return true;
    }
    return false;
}

static void choose(ctx *c)
{
    const st_graph *g = c->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = op_of(c, i);
        const st_node *n = &g->nodes[i];
        /* a float Equal decides on exact values: it and what leads to it */
        if (runs(c, i) && !strcmp(op, "Equal") && n->n_in == 2 && is_f32(c, n->in[0])) {
            c->keep[i] = true;
            keep_order_path(c, i, 4);
        }
        if (!runs(c, i) || n->n_out < 1 || !is_f32(c, n->out[0])) continue;
        if (is_seed(op)) c->keep[i] = true;
        /* an integer beyond f16's range made float (a ConvInteger's int32
         * sums before the Mul by the scales that dequantizes them) */
        if (!strcmp(op, "Cast") && n->n_in == 1 && n->in[0] >= 0) {
            st_dtype from = c->p->values[n->in[0]].t.dtype;
            if (from == ST_I32 || from == ST_I64 || from == ST_U32 || from == ST_U64) {
                c->keep[i] = true;
                keep_forward(c, n->out[0], 0);
            }
        }
        if (is_reduction(op) && reaches_sub_div(c, g->nodes[i].out[0], 6)) {
            c->keep[i] = true;
            keep_forward(c, g->nodes[i].out[0], 8);
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = op_of(c, i);
        if (c->keep[i] && (!strcmp(op, "LSTM") || !strcmp(op, "GRU") || !strcmp(op, "RNN"))) {
            keep_state_path(c, i, 4, true);
            keep_state_path(c, i, 4, false);
        }
    }
    /* the producers of what kept reductions read, once the forward
     * closures are all known */
    for (int i = 0; i < g->n_nodes; i++)
        if (c->keep[i] && is_reduction(op_of(c, i))) keep_backward(c, i, 2);
    bool *on = calloc((size_t)g->n_nodes + 1, sizeof *on);
    if (!on) return; /* the policy is an improvement; without memory the plan is merely all-16-bit */
    /* a mean that is padded, smoothed or reduced again before it is
     * subtracted: the same cancellation as above, so the same closure,
     * with the ops between.  16 bits store silero_vad_v4's log-spectrum
     * mean (about 11) to +-0.004, and that one rounding shifts every
     * feature of x - mean (of the order of 1) the same way, so the layers
     * after it sum it coherently (its LSTM state: 1.4% off, 0.3% kept) */
    for (int i = 0; i < g->n_nodes; i++) {
        if (!runs(c, i) || c->keep[i] || !is_reduction(op_of(c, i)) || !is_f32(c, g->nodes[i].out[0])) continue;
        memset(on, 0, (size_t)g->n_nodes * sizeof *on);
        if (!mean_subtracted(c, g->nodes[i].out[0], 6, on)) continue;
        c->keep[i] = true;
        for (int j = 0; j < g->n_nodes; j++)
            if (on[j] && !c->keep[j]) {
                c->keep[j] = true;
                const char *op = op_of(c, j);
                if (!strcmp(op, "Sub") || !strcmp(op, "Neg")) keep_forward(c, g->nodes[j].out[0], 8);
            }
        keep_backward(c, i, 2);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (!runs(c, i) || strcmp(op_of(c, i), "Log") || !is_f32(c, g->nodes[i].out[0])) continue;
        memset(on, 0, (size_t)g->n_nodes * sizeof *on);
        if (!power_below(c, i, 5, on)) continue;
        for (int j = 0; j < g->n_nodes; j++)
            if (on[j]) {
                c->keep[j] = true;
                const char *op = op_of(c, j);
                if (!strcmp(op, "Pow") || !strcmp(op, "Exp") || !strcmp(op, "Mul")) keep_power_operands(c, j, 8);
            }
    }
    free(on);
    const char *dbg = getenv("STRATA_PRECISION_KEEP");  /* debugging aid: keep every node whose op is listed */
    for (int i = 0; dbg && i < g->n_nodes; i++)
        if (runs(c, i) && g->nodes[i].n_out > 0 &&
            (is_f32(c, g->nodes[i].out[0]) || (g->nodes[i].n_in > 0 && is_f32(c, g->nodes[i].in[0]))) &&
            (listed(dbg, op_of(c, i)) || (g->nodes[i].name && named(dbg, g->nodes[i].name))))
            c->keep[i] = true;
}

static st_status nomem(void) { return st_error(ST_ERR_NOMEM, "out of memory planning the mixed precision"); }

/* Readers of every value among running nodes. */
static st_status index_readers(ctx *c)
{
    const st_graph *g = c->g;
    c->n_readers = calloc((size_t)g->n_values + 1, sizeof *c->n_readers);
    c->readers = calloc((size_t)g->n_values + 1, sizeof *c->readers);
    if (!c->n_readers || !c->readers) return nomem();
    for (int i = 0; i < g->n_nodes; i++)
        if (runs(c, i))
            for (int k = 0; k < g->nodes[i].n_in; k++)
                if (g->nodes[i].in[k] >= 0) c->n_readers[g->nodes[i].in[k]]++;
    for (int v = 0; v < g->n_values; v++) {
        if (!c->n_readers[v]) continue;
        c->readers[v] = malloc((size_t)c->n_readers[v] * sizeof **c->readers);
        if (!c->readers[v]) return nomem();
        c->n_readers[v] = 0;
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (runs(c, i))
            for (int k = 0; k < g->nodes[i].n_in; k++) {
                int v = g->nodes[i].in[k];
                if (v < 0) continue;
                int *r = c->readers[v];
                if (c->n_readers[v] == 0 || r[c->n_readers[v] - 1] != i) r[c->n_readers[v]++] = i;
            }
    return ST_OK;
}

/* One Cast to insert: value `from` becomes `to`, just before node `at`
 * of the graph as it was. */
typedef struct cast {
    int from, to, at;
    bool to_f32;
} cast;

static int cmp_cast(const void *a, const void *b)
{
    const cast *x = a, *y = b;
    return (x->at < y->at) ? 1 : (x->at > y->at) ? -1 : 0; /* from the back */
}

static st_status rewrite(ctx *c)
{
    st_plan *p = c->p;
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    c->g = g;
    int n_values = g->n_values, n_nodes = g->n_nodes;
    /* per value: its f32 twin (a kept reader's), its lowered twin (a
     * lowered reader's), or -1 */
    int *twin32 = malloc(((size_t)n_values + 1) * sizeof *twin32);
    int *twin16 = malloc(((size_t)n_values + 1) * sizeof *twin16);
    cast *casts = malloc(((size_t)n_values * 2 + 1) * sizeof *casts);
    bool *keepv = calloc((size_t)n_values * 3 + 1, sizeof *keepv);
    if (!twin32 || !twin16 || !casts || !keepv) {
        free(twin32);
        free(twin16);
        free(casts);
        free(keepv);
        return nomem();
    }
    int n_casts = 0;
    st_status s = ST_OK;
    for (int v = 0; v < n_values; v++) twin32[v] = twin16[v] = -1;
    for (int i = 0; i < n_nodes; i++)
        if (c->keep[i])
            for (int k = 0; k < g->nodes[i].n_out; k++)
                if (g->nodes[i].out[k] >= 0 && is_f32(c, g->nodes[i].out[k])) keepv[g->nodes[i].out[k]] = true;
    for (int v = 0; v < n_values && s == ST_OK; v++) {
        if (!is_f32(c, v) || !c->n_readers[v]) continue;
        int kept = 0, first_kept = -1, first_low = -1;
        for (int r = 0; r < c->n_readers[v]; r++) {
            int j = c->readers[v][r];
            if (c->keep[j]) kept++, first_kept = first_kept < 0 ? j : first_kept;
            else if (first_low < 0) first_low = j;
        }
        const st_pvalue *pv = &p->values[v];
        bool made_kept = keepv[v];
        if (!made_kept && kept) {
            /* a lowered value, or a constant or input, that a kept node reads */
            if (kept == c->n_readers[v] && (pv->kind == ST_PV_CONST || pv->kind == ST_PV_INPUT) && !g->values[v].is_output) {
                keepv[v] = true; /* no reader wants it lowered: it stays f32 */
                continue;
            }
            const char *name = st_graph_strf(g, "%s/f32", g->values[v].name);
            int to = name ? st_graph_add_value(g, name) : -1;
            if (to < 0) s = nomem();
            else casts[n_casts++] = (cast){v, to, first_kept, true}, twin32[v] = to;
        } else if (made_kept && kept < c->n_readers[v]) {
            const char *name = st_graph_strf(g, "%s/%s", g->values[v].name, st_dtype_name(p->precision));
            int to = name ? st_graph_add_value(g, name) : -1;
            if (to < 0) s = nomem();
            else casts[n_casts++] = (cast){v, to, first_low, false}, twin16[v] = to;
        }
    }
    if (s == ST_OK) {
        /* readers read the twin on their side */
        for (int i = 0; i < n_nodes; i++) {
            if (!runs(c, i)) continue;
            st_node *n = &g->nodes[i];
            for (int k = 0; k < n->n_in; k++) {
                int v = n->in[k];
                if (v < 0) continue;
                if (c->keep[i] && twin32[v] >= 0) n->in[k] = twin32[v];
                else if (!c->keep[i] && twin16[v] >= 0) n->in[k] = twin16[v];
            }
        }
        qsort(casts, (size_t)n_casts, sizeof *casts, cmp_cast);
        static st_attr to_float = {.name = (char *)"to", .type = ST_ATTR_INT, .i = 1};
        for (int k = 0; k < n_casts && s == ST_OK; k++) {
            const cast *x = &casts[k];
            if (!st_graph_insert(g, x->at, 1)) {
                s = nomem();
                break;
            }
            st_node *n = &g->nodes[x->at];
            n->name = st_graph_strf(g, "precision/%s:%s", x->to_f32 ? "to_f32" : "from_f32", g->values[x->from].name);
            n->op_type = (char *)"Cast";
            n->domain = (char *)"";
            n->opset = 13;
            n->op = st_op_find("", "Cast");
            n->n_in = n->n_out = 1;
            n->attrs = &to_float; /* to=FLOAT: f32 to the model; the lowering makes the other side 16-bit */
            n->n_attrs = 1;
            n->in = malloc(sizeof *n->in);
            n->out = malloc(sizeof *n->out);
            n->implicit = malloc(sizeof *n->implicit);
            if (!n->name || !n->op || !n->in || !n->out || !n->implicit) {
                s = nomem();
                break;
            }
            n->in[0] = x->from;
            n->out[0] = x->to;
            g->values[x->to].dtype = ST_F32;
            if (x->to_f32) keepv[x->to] = true;
        }
        st_graph_relink(g);
    }
    if (s == ST_OK) {
        int kept_nodes = 0;
        for (int i = 0; i < n_nodes; i++) kept_nodes += c->keep[i];
        free(p->keep_f32);
        p->keep_f32 = calloc((size_t)g->n_values + 1, sizeof *p->keep_f32);
        if (!p->keep_f32) s = nomem();
        else {
            for (int v = 0; v < g->n_values && v < n_values * 3; v++) p->keep_f32[v] = keepv[v];
            p->n_keep_f32 = g->n_values;
            p->n_kept_nodes = kept_nodes;
            p->n_precision_casts = n_casts;
        }
    }
    free(twin32);
    free(twin16);
    free(casts);
    free(keepv);
    return s;
}

st_status st_pass_precision(st_plan *p)
{
    if (p->precision == ST_F32 || p->precision_strict || p->precision_planned) return ST_OK;
    p->precision_planned = true;
    ctx c = {p, p->g, NULL, NULL, calloc((size_t)p->g->n_nodes + 1, sizeof(bool))};
    st_status s = c.keep ? index_readers(&c) : nomem();
    bool any = false;
    if (s == ST_OK) {
        choose(&c);
        for (int i = 0; i < p->g->n_nodes; i++) any |= c.keep[i];
    }
    int n_values = p->g->n_values;
    if (s == ST_OK && any) {
        s = rewrite(&c);
        if (s == ST_OK) p->expanded = true; /* plan again, with the casts */
    }
    for (int v = 0; c.readers && v < n_values; v++) free(c.readers[v]);
    free(c.readers);
    free(c.n_readers);
    free(c.keep);
    return s;
}
