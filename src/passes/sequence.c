/*
 * sequence.c — sequences and optionals, lowered at plan time.
 *
 * Owns: the rewrite of sequence and optional nodes in the plan's own graph
 * (graph/derive.h), the values of the tensors that sequence and optional
 * graph inputs hold (plan->slot_value), and values[].kind STRUCT.
 *
 * A sequence is a plan-time structure: a list of tensor values.  Shapes
 * are concrete when a plan is made, and so is a sequence's length (an
 * input's is part of the plan's key), so each sequence op is what it does
 * to lists, and tensors do the work:
 *   - a list is made by a list node: SequenceConstruct, whose inputs are
 *     the elements in order (none: the empty sequence, whose value's dtype
 *     is the element type), or Optional, with one input (a tensor or a
 *     sequence) or none (empty).  A list node runs nothing (ST_PN_FOLDED)
 *     and its value is ST_PV_STRUCT, with no bytes of its own;
 *   - SequenceEmpty, SequenceInsert, SequenceErase, an Identity of a list
 *     and OptionalGetElement of a sequence become list nodes of the new
 *     list;
 *   - SequenceAt and OptionalGetElement of a tensor become an Identity of
 *     the element: a view;
 *   - SequenceLength and OptionalHasElement become an Identity of a
 *     constant, which folds;
 *   - SplitToSequence becomes a Split (views), or with keepdims 0 a Gather
 *     of a constant index per element (views), feeding a list node;
 *   - ConcatFromSequence becomes a Concat of the elements (each through an
 *     Unsqueeze for new_axis 1), which concat placement fills in place;
 *   - SequenceMap is control flow: its body is written once per element
 *     (passes/control.c).
 * A sequence or optional graph input is a list node over one input value
 * per tensor it holds (st_sequence_inputs), which the session binds one by
 * one; the tensors of a sequence or optional graph output are made graph
 * outputs of the plan's graph, so that no pass fuses them away or reuses
 * their bytes (st_sequence_outputs).  A Loop carrying a sequence and an If
 * returning one need nothing more: unrolling threads the lists through.
 *
 * A node is lowered when specialization reaches it (passes/specialize.c),
 * so the lists it reads are made and the positions it needs are constants
 * (folded, or from a small graph input the plan is then keyed on).  A
 * position computed from the data asks for a stage cut like any rule that
 * needs data (plan/stage.c); the list nodes before the cut then move into
 * the next stage, since a list cannot cross a stage as bytes
 * (st_sequence_defer).  Specialization starts again after a rewrite; the
 * later nodes whose lists and positions are already known are rewritten in
 * the same pass, so a Loop of n SequenceInserts costs one pass, not n.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/derive.h"
#include "graph/model.h"
#include "passes/passes.h"
#include "plan/plan.h"

static bool op_is(const st_node *n, const char *op) { return n && !n->domain[0] && !strcmp(n->op_type, op); }

static bool list_node(const st_node *n) { return op_is(n, "SequenceConstruct") || op_is(n, "Optional"); }

const st_node *st_sequence_node(const st_graph *g, int v)
{
    if (v < 0 || v >= g->n_values) return NULL;
    int pr = g->values[v].producer;
    return pr >= 0 && pr < g->n_nodes && list_node(&g->nodes[pr]) ? &g->nodes[pr] : NULL;
}

bool st_sequence_touches(const st_plan *p, const st_node *n)
{
    if (!n->op) return false;
    if (n->op->flags & ST_OP_SEQUENCE) return true;
    if (n->op->flags & ST_OP_CONTROL) return false; /* a body reads lists through its own nodes */
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && p->values[n->in[k]].kind == ST_PV_STRUCT) return true;
    return false;
}

/* ---- the lists of the inputs ---- */

/* Whether value v is settled when rewriting at specialization point i: a
 * graph input or constant, made by a node specialization has passed, or a
 * list.  Only then does a value that is not a list's say it is a tensor
 * (an If not expanded yet may still return a sequence). */
static bool settled(const st_graph *g, int v, int i)
{
    int pr = g->values[v].producer;
    return pr < 0 || pr < i || list_node(&g->nodes[pr]);
}

/* An integer constant (one element) at value v, known at point i. */
static bool const_int(const st_plan *p, const st_graph *g, int v, int i, int64_t *out)
{
    const st_value *gv = &g->values[v];
    const void *data = NULL;
    st_dtype dt = ST_UNDEFINED;
    int64_t n = 0;
    if (gv->init) {
        data = gv->init->data;
        dt = gv->init->dtype;
        n = st_const_numel(gv->init);
    } else if (v < p->n_values && p->values[v].kind == ST_PV_CONST && (gv->producer < 0 || gv->producer < i)) {
        const st_pvalue *pv = &p->values[v];
        data = pv->t.data;
        dt = pv->t.dtype;
        n = st_numel(pv->t.rank, pv->t.dims);
    }
    if (!data || n != 1 || !st_dtype_is_int(dt)) return false;
    *out = st_load_i64(dt, data);
    return true;
}

/* What a rewrite reads of one list: the elements of a sequence, or what
 * an optional holds.  seq: a sequence; has: an optional holds a value
 * (the one in elems[0]); a tensor is neither. */
typedef struct list {
    bool seq, opt, has;
    const int *elems;
    int n;
} list;

static list list_at(const st_graph *g, int v)
{
    list l = {0};
    const st_node *m = st_sequence_node(g, v);
    if (op_is(m, "SequenceConstruct")) {
        l.seq = true;
        l.elems = m->in;
        l.n = m->n_in;
    } else if (m) {
        l.opt = true;
        l.has = m->n_in > 0 && m->in[0] >= 0;
        l.elems = m->in;
        l.n = l.has ? 1 : 0;
    }
    return l;
}

/* ---- writing nodes ---- */

static st_status nomem(const st_node *n) { return st_error(ST_ERR_NOMEM, "out of memory lowering node '%s'", n->name); }

/* Node j becomes op reading in[0..n_in); its output stays.  attrs: keep
 * the node's own (an axis that the new op reads under the same name). */
static st_status rewrite(st_graph *g, int j, const char *op, const int *in, int n_in, bool attrs)
{
    st_node *n = &g->nodes[j];
    int *ids = malloc(((size_t)n_in + 1) * sizeof *ids);
    if (!ids) return nomem(n);
    if (n_in) memcpy(ids, in, (size_t)n_in * sizeof *ids); /* in may be n->in itself */
    free(n->in);
    n->in = ids;
    n->n_in = n_in;
    n->op_type = (char *)op;
    n->op = st_op_find("", op);
    if (!attrs) {
        n->attrs = NULL;
        n->n_attrs = 0;
    }
    return ST_OK;
}

/* Fills the zeroed slot at with a node of op: inputs in, outputs out,
 * attributes borrowed from src (NULL: none). */
static st_status put(st_graph *g, int at, const char *op, const char *name, int opset, const int *in, int n_in,
                     const int *out, int n_out, const st_node *src)
{
    st_node *n = &g->nodes[at];
    n->name = (char *)name;
    n->op_type = (char *)op;
    n->domain = (char *)"";
    n->opset = opset;
    n->op = st_op_find("", op);
    n->n_in = n_in;
    n->n_out = n_out;
    n->in = malloc(((size_t)n_in + 1) * sizeof *n->in);
    n->out = malloc(((size_t)n_out + 1) * sizeof *n->out);
    n->implicit = malloc(sizeof *n->implicit);
    if (!n->in || !n->out || !n->implicit || !n->op) return st_error(ST_ERR_NOMEM, "out of memory lowering '%s'", name);
    if (n_in) memcpy(n->in, in, (size_t)n_in * sizeof *in);
    if (n_out) memcpy(n->out, out, (size_t)n_out * sizeof *out);
    if (src) {
        n->attrs = src->attrs;
        n->n_attrs = src->n_attrs;
    }
    return ST_OK;
}

/* A new value named "<node>/<what><k>", or -1. */
static int new_value(st_graph *g, const char *node, const char *what, int k)
{
    char name[320];
    snprintf(name, sizeof name, "%s/%s%d", node, what, k);
    return st_graph_add_value(g, name);
}

/* ---- the rewrites ---- */

/* A position input of node n (slot k) in [lo, hi] of a list of len, made
 * non-negative; dflt when the input is omitted. */
static st_status position(const st_plan *p, const st_graph *g, const st_node *n, int k, int i, int64_t dflt, int len,
                          bool insert, int *missing, int64_t *out)
{
    int v = k < n->n_in ? n->in[k] : -1;
    int64_t pos = dflt;
    if (v >= 0 && !const_int(p, g, v, i, &pos)) {
        *missing = v;
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): its position '%s' is computed from the data at run time; "
                        "strata plans sequences when positions are known from constants, the input shapes or a small "
                        "graph input", n->name, n->op_type, g->values[v].name);
    }
    int64_t hi = insert ? len : len - 1;
    if (pos < -(int64_t)len || pos > hi)
        return st_error(ST_ERR_SHAPE, "node '%s' (%s): position %lld is out of range for a sequence of %d tensor%s "
                        "(%s)", n->name, n->op_type, (long long)pos, len, len == 1 ? "" : "s",
                        len == 0 ? "it is empty" : insert ? "allowed: -length to length" : "allowed: -length to length - 1");
    *out = pos < 0 ? pos + len : pos;
    return ST_OK;
}

/* The sequence input k of node n, or an error (not ready, or not a
 * sequence). */
static st_status sequence_in(const st_graph *g, const st_node *n, int k, int i, list *l)
{
    int v = k < n->n_in ? n->in[k] : -1;
    if (v < 0) return st_error(ST_ERR_MODEL, "node '%s' (%s): input %d (a sequence) is missing", n->name, n->op_type, k);
    if (!settled(g, v, i)) return st_error(ST_ERR_INTERNAL, "node '%s' (%s): its sequence is not made yet", n->name, n->op_type);
    *l = list_at(g, v);
    if (!l->seq)
        return st_error(ST_ERR_MODEL, "node '%s' (%s): input '%s' is %s, not a sequence", n->name, n->op_type,
                        g->values[v].name, l->opt ? "an optional" : "a tensor");
    return ST_OK;
}

/* ConcatFromSequence: a Concat of the elements, or of each unsqueezed at
 * the axis (new_axis 1, where the axis counts in the output's rank, as
 * Unsqueeze's and Concat's do). */
static st_status lower_concat(st_graph *g, int j, const list *l, int *next)
{
    const st_node *n = &g->nodes[j];
    if (l->n == 0)
        return st_error(ST_ERR_SHAPE, "node '%s' (ConcatFromSequence): the sequence is empty; there is nothing to "
                        "concatenate", n->name);
    if (!st_node_attr(n, "axis"))
        return st_error(ST_ERR_MODEL, "node '%s' (ConcatFromSequence): the axis attribute is required", n->name);
    int64_t new_axis = st_attr_int(n, "new_axis", 0);
    if (new_axis != 0 && new_axis != 1)
        return st_error(ST_ERR_MODEL, "node '%s' (ConcatFromSequence): new_axis is %lld; it must be 0 or 1", n->name,
                        (long long)new_axis);
    if (!new_axis) {
        *next = j + 1;
        return rewrite(g, j, "Concat", l->elems, l->n, true);
    }
    st_node x = *n;
    int cnt = l->n;
    int *parts = malloc(((size_t)cnt + 1) * sizeof *parts);
    int *elems = malloc(((size_t)cnt + 1) * sizeof *elems);
    if (!parts || !elems) {
        free(parts);
        free(elems);
        return nomem(&x);
    }
    memcpy(elems, l->elems, (size_t)cnt * sizeof *elems);
    int64_t axis = st_attr_int(&x, "axis", 0), one = 1;
    int ax = st_graph_add_const(g, "axes", ST_I64, 1, &one, &axis);
    int out = x.out[0];
    st_status s = ax < 0 ? nomem(&x) : ST_OK;
    for (int k = 0; k < cnt && s == ST_OK; k++)
        if ((parts[k] = new_value(g, x.name, "unsqueezed_", k)) < 0) s = nomem(&x);
    if (s == ST_OK && !st_graph_splice(g, j, cnt + 1)) s = nomem(&x);
    for (int k = 0; k < cnt && s == ST_OK; k++) {
        const char *name = st_graph_strf(g, "%s/unsqueeze_%d", x.name, k);
        int in[2] = {elems[k], ax};
        s = name ? put(g, j + k, "Unsqueeze", name, 13, in, 2, &parts[k], 1, NULL) : nomem(&x);
    }
    if (s == ST_OK) s = put(g, j + cnt, "Concat", x.name, x.opset, parts, cnt, &out, 1, &x);
    free(parts);
    free(elems);
    *next = j + cnt + 1;
    return s;
}

/* SplitToSequence: a Split into views (or, keepdims 0 without a split, a
 * Gather of each index, views too) and a list node of the pieces. */
static st_status lower_split(st_plan *p, st_graph *g, int j, int i, int *missing, int *next)
{
    st_node x = g->nodes[j];
    int xv = x.in[0];
    if (xv < 0) return st_error(ST_ERR_MODEL, "node '%s' (SplitToSequence): input 0 is missing", x.name);
    if (j != i || (g->values[xv].producer >= i && !g->values[xv].init))
        return st_error(ST_ERR_INTERNAL, "node '%s' (SplitToSequence): its input is not specialized yet", x.name);
    const st_pvalue *pv = &p->values[xv];
    if (pv->kind == ST_PV_STRUCT)
        return st_error(ST_ERR_MODEL, "node '%s' (SplitToSequence): input '%s' is a sequence or optional, not a tensor",
                        x.name, g->values[xv].name);
    int r = pv->t.rank;
    int64_t axis = st_attr_int(&x, "axis", 0);
    if (axis < -r || axis >= r)
        return st_error(ST_ERR_SHAPE, "node '%s' (SplitToSequence): axis %lld is out of range for rank %d", x.name,
                        (long long)axis, r);
    if (axis < 0) axis += r;
    int64_t dim = pv->t.dims[axis];
    bool keep = st_attr_int(&x, "keepdims", 1) != 0;
    int sv = x.n_in > 1 ? x.in[1] : -1;
    int64_t *sizes = NULL;
    int64_t cnt = 0;
    if (sv >= 0) {
        const st_pvalue *sp = &p->values[sv];
        if (!g->values[sv].init && sp->kind != ST_PV_CONST) {
            *missing = sv;
            return st_error(ST_ERR_UNSUPPORTED, "node '%s' (SplitToSequence): its split '%s' is computed from the data at "
                            "run time; strata plans sequences when their lengths are known", x.name, g->values[sv].name);
        }
        const void *data = g->values[sv].init ? g->values[sv].init->data : sp->t.data;
        st_dtype dt = g->values[sv].init ? g->values[sv].init->dtype : sp->t.dtype;
        int rank = g->values[sv].init ? g->values[sv].init->rank : sp->t.rank;
        int64_t n = g->values[sv].init ? st_const_numel(g->values[sv].init) : st_numel(sp->t.rank, sp->t.dims);
        if (!st_dtype_is_int(dt) || rank > 1)
            return st_error(ST_ERR_MODEL, "node '%s' (SplitToSequence): split must be an integer scalar or 1-D tensor",
                            x.name);
        if (rank == 0) {
            int64_t part = st_load_i64(dt, data);
            if (part <= 0)
                return st_error(ST_ERR_SHAPE, "node '%s' (SplitToSequence): split %lld is not positive", x.name,
                                (long long)part);
            cnt = (dim + part - 1) / part;
            sizes = malloc(((size_t)cnt + 1) * sizeof *sizes);
            if (!sizes) return nomem(&x);
            for (int64_t k = 0; k < cnt; k++) sizes[k] = k + 1 < cnt ? part : dim - part * (cnt - 1);
        } else {
            cnt = n;
            sizes = malloc(((size_t)cnt + 1) * sizeof *sizes);
            if (!sizes) return nomem(&x);
            int64_t total = 0;
            for (int64_t k = 0; k < cnt; k++) {
                sizes[k] = st_load_i64(dt, (const char *)data + k * (int64_t)st_dtype_size(dt));
                if (sizes[k] < 0) {
                    long long bad = (long long)sizes[k];
                    free(sizes);
                    return st_error(ST_ERR_SHAPE, "node '%s' (SplitToSequence): split size %lld is negative", x.name, bad);
                }
                total += sizes[k];
            }
            if (total != dim) {
                free(sizes);
                return st_error(ST_ERR_SHAPE, "node '%s' (SplitToSequence): split sizes sum to %lld, the axis has %lld",
                                x.name, (long long)total, (long long)dim);
            }
        }
        keep = true; /* keepdims is for the split of ones only */
    } else {
        cnt = dim;
        sizes = malloc(((size_t)cnt + 1) * sizeof *sizes);
        if (!sizes) return nomem(&x);
        for (int64_t k = 0; k < cnt; k++) sizes[k] = 1;
    }
    if (cnt > ST_MAX_SEQUENCE) {
        free(sizes);
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (SplitToSequence): %lld pieces; strata plans sequences of at most "
                        "%d tensors", x.name, (long long)cnt, ST_MAX_SEQUENCE);
    }
    int out = x.out[0];
    st_dtype dtype = pv->model_dtype;
    if (cnt == 0) {
        free(sizes);
        g->values[out].dtype = dtype;
        *next = j + 1;
        return rewrite(g, j, "SequenceConstruct", NULL, 0, false);
    }
    int n = (int)cnt;
    int *pieces = malloc(((size_t)n + 1) * sizeof *pieces);
    st_status s = pieces ? ST_OK : nomem(&x);
    for (int k = 0; k < n && s == ST_OK; k++)
        if ((pieces[k] = new_value(g, x.name, "", k)) < 0) s = nomem(&x);
    int at = j;
    if (keep) {
        int64_t len = cnt;
        int split = s == ST_OK ? st_graph_add_const(g, "split", ST_I64, 1, &len, sizes) : -1;
        if (s == ST_OK && split < 0) s = nomem(&x);
        if (s == ST_OK && !st_graph_splice(g, j, 2)) s = nomem(&x);
        int in[2] = {xv, split};
        const char *name = s == ST_OK ? st_graph_strf(g, "%s/split", x.name) : NULL;
        if (s == ST_OK) s = name ? put(g, at++, "Split", name, 13, in, 2, pieces, n, &x) : nomem(&x);
    } else {
        if (s == ST_OK && !st_graph_splice(g, j, n + 1)) s = nomem(&x);
        for (int k = 0; k < n && s == ST_OK; k++) {
            int64_t idx = k;
            int iv = st_graph_add_const(g, "index", ST_I64, 0, NULL, &idx);
            const char *name = st_graph_strf(g, "%s/take_%d", x.name, k);
            int in[2] = {xv, iv};
            s = iv >= 0 && name ? put(g, at++, "Gather", name, 13, in, 2, &pieces[k], 1, &x) : nomem(&x);
        }
    }
    if (s == ST_OK) s = put(g, at++, "SequenceConstruct", x.name, x.opset, pieces, n, &out, 1, NULL);
    if (s == ST_OK) g->values[out].dtype = dtype;
    free(sizes);
    free(pieces);
    *next = at;
    return s;
}

/* Rewrites node j (specialization stands at node i <= j).  Returns an
 * error when it cannot yet (or ever); *next: the node after what it
 * wrote. */
static st_status lower(st_plan *p, st_graph *g, int j, int i, int *missing, int *next)
{
    const st_node *n = &g->nodes[j];
    *next = j + 1;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !settled(g, n->in[k], i))
            return st_error(ST_ERR_INTERNAL, "node '%s' (%s): input %d is not made yet", n->name, n->op_type, k);
    list l;
    int64_t pos;
    if (op_is(n, "SequenceEmpty")) {
        int64_t dt = st_attr_int(n, "dtype", ST_F32);
        if (!st_dtype_valid((st_dtype)dt))
            return st_error(ST_ERR_UNSUPPORTED, "node '%s' (SequenceEmpty): dtype %lld is not supported", n->name,
                            (long long)dt);
        g->values[n->out[0]].dtype = (st_dtype)dt;
        return rewrite(g, j, "SequenceConstruct", NULL, 0, false);
    }
    if (op_is(n, "SequenceInsert")) {
        ST_TRY(sequence_in(g, n, 0, i, &l));
        if (n->n_in < 2 || n->in[1] < 0)
            return st_error(ST_ERR_MODEL, "node '%s' (SequenceInsert): the tensor to insert is missing", n->name);
        if (list_at(g, n->in[1]).seq || list_at(g, n->in[1]).opt)
            return st_error(ST_ERR_MODEL, "node '%s' (SequenceInsert): input '%s' is not a tensor", n->name,
                            g->values[n->in[1]].name);
        ST_TRY(position(p, g, n, 2, i, l.n, l.n, true, missing, &pos));
        int *e = malloc(((size_t)l.n + 2) * sizeof *e);
        if (!e) return nomem(n);
        for (int k = 0, w = 0; k <= l.n; k++) {
            if (k == pos) e[w++] = n->in[1];
            if (k < l.n) e[w++] = l.elems[k];
        }
        g->values[n->out[0]].dtype = g->values[n->in[0]].dtype;
        st_status s = rewrite(g, j, "SequenceConstruct", e, l.n + 1, false);
        free(e);
        return s;
    }
    if (op_is(n, "SequenceErase")) {
        ST_TRY(sequence_in(g, n, 0, i, &l));
        ST_TRY(position(p, g, n, 1, i, -1, l.n, false, missing, &pos));
        int *e = malloc(((size_t)l.n + 1) * sizeof *e);
        if (!e) return nomem(n);
        for (int k = 0, w = 0; k < l.n; k++)
            if (k != pos) e[w++] = l.elems[k];
        g->values[n->out[0]].dtype = g->values[n->in[0]].dtype;
        st_status s = rewrite(g, j, "SequenceConstruct", e, l.n - 1, false);
        free(e);
        return s;
    }
    if (op_is(n, "SequenceAt")) {
        ST_TRY(sequence_in(g, n, 0, i, &l));
        if (n->n_in < 2 || n->in[1] < 0)
            return st_error(ST_ERR_MODEL, "node '%s' (SequenceAt): the position input is missing", n->name);
        ST_TRY(position(p, g, n, 1, i, 0, l.n, false, missing, &pos));
        return rewrite(g, j, "Identity", &l.elems[pos], 1, false);
    }
    if (op_is(n, "SequenceLength")) {
        ST_TRY(sequence_in(g, n, 0, i, &l));
        int64_t len = l.n;
        int c = st_graph_add_const(g, "length", ST_I64, 0, NULL, &len);
        return c < 0 ? nomem(n) : rewrite(g, j, "Identity", &c, 1, false);
    }
    if (op_is(n, "ConcatFromSequence")) {
        ST_TRY(sequence_in(g, n, 0, i, &l));
        return lower_concat(g, j, &l, next);
    }
    if (op_is(n, "SplitToSequence")) return lower_split(p, g, j, i, missing, next);
    if (op_is(n, "OptionalHasElement")) {
        bool has = false;
        if (n->n_in > 0 && n->in[0] >= 0) {
            l = list_at(g, n->in[0]);
            has = !l.opt || l.has; /* a tensor or a sequence is there (opset 18) */
        }
        int c = st_graph_add_const(g, "has_element", ST_BOOL, 0, NULL, &has);
        return c < 0 ? nomem(n) : rewrite(g, j, "Identity", &c, 1, false);
    }
    if (op_is(n, "OptionalGetElement") || op_is(n, "Identity")) {
        bool get = op_is(n, "OptionalGetElement");
        if (n->n_in < 1 || n->in[0] < 0) return st_error(ST_ERR_MODEL, "node '%s' (%s): input 0 is missing", n->name, n->op_type);
        l = list_at(g, n->in[0]);
        if (get && l.opt && !l.has)
            return st_error(ST_ERR_SHAPE, "node '%s' (OptionalGetElement): the optional '%s' is empty", n->name,
                            g->values[n->in[0]].name);
        int v = get && l.opt ? l.elems[0] : n->in[0];
        g->values[n->out[0]].dtype = g->values[v].dtype;
        if (get && l.opt) l = list_at(g, v);
        if (l.seq) return rewrite(g, j, "SequenceConstruct", l.elems, l.n, false);
        if (l.opt) return rewrite(g, j, "Optional", l.elems, l.n, false);
        return rewrite(g, j, "Identity", &v, 1, false);
    }
    /* a tensor op reading a list */
    for (int k = 0; k < n->n_in; k++) {
        list r = n->in[k] >= 0 ? list_at(g, n->in[k]) : (list){0};
        if (r.seq || r.opt)
            return st_error(ST_ERR_MODEL, "node '%s' (%s): input %d '%s' is %s; %s takes tensors", n->name, n->op_type, k,
                            g->values[n->in[k]].name, r.seq ? "a sequence" : "an optional", n->op_type);
    }
    return st_error(ST_ERR_INTERNAL, "node '%s' (%s): not a sequence op", n->name, n->op_type);
}

/* Specialization reached list node i: its value is structure.  Elements
 * are tensors of one dtype; an optional holds a tensor or a sequence. */
static st_status mark_list(st_plan *p, int i)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[i];
    bool seq = op_is(n, "SequenceConstruct");
    int out = n->out[0];
    if (n->n_out != 1 || out < 0) return st_error(ST_ERR_MODEL, "node '%s' (%s): needs one output", n->name, n->op_type);
    if (!seq && n->n_in > 1)
        return st_error(ST_ERR_MODEL, "node '%s' (Optional): takes at most one input, has %d", n->name, n->n_in);
    st_dtype dt = g->values[out].dtype;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0) {
            if (seq) return st_error(ST_ERR_MODEL, "node '%s' (SequenceConstruct): input %d is missing", n->name, k);
            continue;
        }
        const st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_STRUCT) {
            if (seq)
                return st_error(ST_ERR_UNSUPPORTED, "node '%s': sequence element %d '%s' is a sequence or optional; "
                                "strata's sequences hold tensors", n->name, k, g->values[v].name);
            if (!op_is(st_sequence_node(g, v), "SequenceConstruct"))
                return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Optional): '%s' is an optional; an optional of an "
                                "optional is not supported", n->name, g->values[v].name);
        }
        st_dtype e = pv->model_dtype;
        if (dt == ST_UNDEFINED) dt = e;
        else if (seq && e != dt && e != ST_UNDEFINED)
            return st_error(ST_ERR_DTYPE, "node '%s': sequence element %d '%s' is %s, where the sequence's elements are %s",
                            n->name, k, g->values[v].name, st_dtype_name(e), st_dtype_name(dt));
    }
    p->nodes[i].kind = ST_PN_FOLDED;
    st_pvalue *pv = &p->values[out];
    pv->kind = ST_PV_STRUCT;
    pv->t.present = true;
    pv->t.dtype = dt;
    pv->t.rank = 0;
    pv->t.data = NULL;
    pv->model_dtype = dt;
    return ST_OK;
}

/* Whether the same pass may try node n after the first: a sequence node
 * that needs no shape, or an Identity of a list. */
static bool lowerable(const st_graph *g, const st_node *n)
{
    if (!n->op || list_node(n)) return false;
    if (n->op->flags & ST_OP_SEQUENCE) return !op_is(n, "SplitToSequence");
    return op_is(n, "Identity") && n->n_in == 1 && st_sequence_node(g, n->in[0]);
}

st_status st_sequence_lower(st_plan *p, int i, int *missing)
{
    *missing = -1;
    if (list_node(&p->g->nodes[i])) return mark_list(p, i);
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    int next;
    st_status s = lower(p, g, i, i, missing, &next);
    if (s != ST_OK) {
        st_graph_relink(g);
        return s;
    }
    st_graph_relink(g);
    for (int j = next; j < g->n_nodes;) {
        if (!lowerable(g, &g->nodes[j])) {
            j++;
            continue;
        }
        int unused;
        s = lower(p, g, j, i, &unused, &next);
        st_graph_relink(g);
        /* one that cannot yet is left for when specialization reaches it,
         * which reports its error if it is live */
        if (s == ST_ERR_NOMEM) return s;
        j = s == ST_OK ? next : j + 1;
    }
    p->expanded = true;
    return ST_OK;
}

/* ---- graph inputs and outputs ---- */

st_status st_sequence_inputs(st_plan *p)
{
    ST_TRY(st_plan_own_graph(p));
    st_graph *g = p->own_g;
    int n_lists = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        if (p->in_elems[i] == ST_IN_TENSOR) continue;
        st_value_kind kind = g->values[g->inputs[i]].kind;
        n_lists += kind == ST_KIND_OPTIONAL_SEQUENCE && p->in_elems[i] != ST_IN_ABSENT ? 2 : 1;
    }
    if (!st_graph_insert(g, 0, n_lists)) return st_error(ST_ERR_NOMEM, "out of memory planning sequence inputs");
    int at = 0, slot = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        int cnt = p->in_elems[i];
        if (cnt == ST_IN_TENSOR) continue;
        int x = g->inputs[i];
        const char *name = g->values[x].name;
        st_value_kind kind = g->values[x].kind;
        st_dtype dt = g->values[x].dtype;
        int n = cnt > 0 ? cnt : 0;
        int *elems = malloc(((size_t)n + 1) * sizeof *elems);
        if (!elems) return st_error(ST_ERR_NOMEM, "out of memory planning input '%s'", name);
        st_status s = ST_OK;
        for (int k = 0; k < n && s == ST_OK; k++) {
            char nm[320];
            snprintf(nm, sizeof nm, "%s[%d]", name, k);
            int v = st_graph_add_value(g, nm);
            if (v < 0) {
                s = st_error(ST_ERR_NOMEM, "out of memory planning input '%s'", name);
                break;
            }
            /* an input of the plan that no graph input lists: a stage cut
             * passes it on like one (plan/stage.c) */
            g->values[v].is_input = true;
            g->values[v].dtype = dt;
            elems[k] = v;
            p->slot_value[slot++] = v;
        }
        const char *lname = s == ST_OK ? st_graph_strf(g, "%s/list", name) : NULL;
        if (s == ST_OK && !lname) s = st_error(ST_ERR_NOMEM, "out of memory planning input '%s'", name);
        if (s == ST_OK) {
            if (kind == ST_KIND_SEQUENCE) {
                s = put(g, at++, "SequenceConstruct", lname, 17, elems, n, &x, 1, NULL);
            } else if (kind == ST_KIND_OPTIONAL_SEQUENCE && cnt != ST_IN_ABSENT) {
                int inner = new_value(g, name, "sequence", 0);
                s = inner < 0 ? st_error(ST_ERR_NOMEM, "out of memory planning input '%s'", name)
                              : put(g, at++, "SequenceConstruct", lname, 17, elems, n, &inner, 1, NULL);
                if (s == ST_OK) {
                    g->values[inner].dtype = dt;
                    s = put(g, at++, "Optional", lname, 17, &inner, 1, &x, 1, NULL);
                }
            } else {
                s = put(g, at++, "Optional", lname, 17, elems, n > 0 ? 1 : 0, &x, 1, NULL);
            }
        }
        free(elems);
        ST_TRY(s);
    }
    st_graph_relink(g);
    return ST_OK;
}

/* The tensors that graph output v holds: a sequence's elements, what an
 * optional holds (the elements of a sequence it holds), none for a
 * tensor (l.n 0). */
static list output_list(const st_graph *g, int v)
{
    list l = list_at(g, v);
    if (l.opt && l.has && list_at(g, l.elems[0]).seq) l = list_at(g, l.elems[0]);
    return l;
}

st_status st_sequence_outputs(st_plan *p)
{
    const st_graph *g = p->g;
    int extra = 0;
    bool any = false;
    for (int i = 0; i < g->n_outputs; i++) {
        extra += output_list(g, g->outputs[i]).n;
        any |= st_sequence_node(g, g->outputs[i]) != NULL;
    }
    if (!any) return ST_OK;
    ST_TRY(st_plan_own_graph(p));
    st_graph *o = p->own_g;
    int *outs = malloc(((size_t)o->n_outputs + (size_t)extra + 1) * sizeof *outs);
    if (!outs) return st_error(ST_ERR_NOMEM, "out of memory planning sequence outputs");
    memcpy(outs, o->outputs, (size_t)o->n_outputs * sizeof *outs);
    int n = o->n_outputs;
    for (int i = 0; i < o->n_outputs; i++) {
        list l = output_list(o, o->outputs[i]);
        for (int k = 0; k < l.n; k++) {
            int v = l.elems[k];
            bool dup = false;
            for (int q = 0; q < n && !dup; q++) dup = outs[q] == v;
            if (dup) continue;
            /* a graph output now: kept whole to the end, never fused away */
            outs[n++] = v;
            o->values[v].is_output = true;
            p->values[v].last_use = o->n_nodes;
        }
    }
    free(o->outputs);
    o->outputs = outs;
    o->n_outputs = n;
    return ST_OK;
}

int st_sequence_defer(st_graph *g, int cut)
{
    int moved = 0;
    for (int i = 0; i < cut; i++) moved += list_node(&g->nodes[i]);
    if (!moved) return cut;
    st_node *lists = malloc((size_t)moved * sizeof *lists);
    if (!lists) return cut; /* then the split refuses what crosses as a list (plan/stage.c) */
    int w = 0, l = 0;
    for (int i = 0; i < cut; i++) {
        if (list_node(&g->nodes[i])) lists[l++] = g->nodes[i];
        else g->nodes[w++] = g->nodes[i];
    }
    memcpy(g->nodes + w, lists, (size_t)moved * sizeof *lists);
    free(lists);
    st_graph_relink(g);
    return cut - moved;
}
