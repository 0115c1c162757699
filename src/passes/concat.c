/*
 * concat.c — concat placement: producers write straight into their slot of
 * a Concat's output, so the Concat copies nothing.
 *
 * Owns: values[].concat / .concat_start and nodes[].skip / .n_placed.  A
 * value X is placed in Concat node C's output (Y) when all of these hold:
 *   1. X is computed by a command: not a constant, not a graph input, and
 *      its producer is not a view op (a view's bytes belong to another
 *      value, and it may be a pure view with no command to redirect);
 *   2. X is not placed elsewhere already (X feeding two Concats, or one
 *      Concat twice, is placed once);
 *   3. X and Y have the same planned dtype;
 *   4. X's producer runs on the Concat's device (plan/place.c): a host
 *      node of a mixed plan cannot write into device memory.
 * Two ways to be placed:
 *   - X is an input of C: its slot is that input's share of the axis;
 *   - consecutive inputs of C are slices of one value R along C's axis
 *     that together cover R in order (a split, or YOLO's C2f chunk, fed
 *     back into a concat): then R itself is placed over their slots, the
 *     slices become views of Y, and C copies none of them.
 *   - X is the output of a view op (a Reshape, Flatten, Squeeze, ...) that
 *     gives the bytes of a packed value R unchanged, in order (YOLOv5's
 *     per-scale head output [1, 3, 80, 80, 85] reshaped to [1, 19200, 85]
 *     for the final concat), and X's slot of Y, Y packed, can be viewed
 *     with R's dims such that the reshape gives the slot back (a
 *     contiguous slot always can; YOLO11n's [1, 144, 80, 80] heads
 *     reshaped to [1, 144, 6400] and concatenated along the last axis can
 *     too, rows of 80 with a stride of 80).  R is then placed over the
 *     slot with those strides, and X is a view of it.  Y must stay packed:
 *     a Concat holding such an R is placed in another only where its slot
 *     is contiguous (the dims before the axis all 1).
 * Other readers of X need no packing: every kernel reads strided inputs, so
 * they read X through its strided slot.  A graph output may be placed: it
 * is then returned as a view.  Nested concats place transitively: when C's
 * own output is placed in D, X's slot is a slice of C's slot in D.
 *   - a split source R whose slices fill only the last slots of the run
 *     (YOLOv5's head: the confidences of each row are a slice of the
 *     Sigmoid's output, xy and wh are computed from the other slices) may
 *     be placed over the earlier slots too, where its bytes are then
 *     overwritten by those slots' writers; only when every reader of the
 *     overwritten bytes runs before every writer of them in program order
 *     (overlap_safe below), so the overwrite is a WAR the DAG orders.
 * Slots never overlap (they partition Y along the axis), and the hazard
 * DAG orders each producer against every reader of its slot like any other
 * write, so placement needs no special ordering; the split-source case
 * above relies on the same DAG for its write-after-read, and the
 * sanitizer and the random schedules check it like any other edge.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/concat.h"
#include "passes/passes.h"
#include "plan/plan.h"

static bool placeable(const st_plan *p, int x, int c, st_dtype dtype)
{
    if (x < 0) return false;
    const st_pvalue *pv = &p->values[x];
    if (pv->kind != ST_PV_ROOT || pv->producer < 0 || pv->concat >= 0 || pv->t.dtype != dtype) return false;
    st_node prod_node = st_plan_node(p, pv->producer);
    const st_node *prod = &prod_node;
    /* a producer on another device cannot write into the Concat's bytes */
    if (p->nodes[pv->producer].device != p->nodes[c].device) return false;
    return p->nodes[pv->producer].kind == ST_PN_EXEC && !prod->op->view;
}

/* If value x is a slice of the first input R of its (view op) producer
 * along `axis` only, returns R and the slice's start; else -1.  The test
 * applies the op's own view rule to a packed view of R. */
static int slice_of(const st_plan *p, int x, int axis, int64_t *start)
{
    const st_graph *g = p->g;
    int prod = g->values[x].producer;
    if (prod < 0 || p->nodes[prod].kind != ST_PN_EXEC) return -1;
    st_node pnode = st_plan_node(p, prod);
    const st_node *n = &pnode;
    if (!n->op->view || n->n_in < 1 || n->in[0] < 0) return -1;
    int r = n->in[0], slot = -1;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] == x) slot = k;
    const st_pvalue *pr = &p->values[r], *px = &p->values[x];
    if (slot < 0 || pr->t.rank != px->t.rank || axis >= pr->t.rank) return -1;
    st_view rv, xv;
    st_view_init(&rv, pr->t.dtype, pr->t.rank, pr->t.dims);
    if (!n->op->view(p->nodes[prod].state, slot, &rv, &xv)) return -1;
    int64_t es = (int64_t)st_dtype_size(rv.dtype);
    for (int d = 0; d < rv.rank; d++) {
        if (xv.strides[d] != rv.strides[d] && xv.sizes[d] > 1) return -1;
        if (d != axis && xv.sizes[d] != rv.sizes[d]) return -1;
    }
    if (rv.strides[axis] == 0 || xv.offset % (rv.strides[axis] * es)) return -1;
    *start = xv.offset / (rv.strides[axis] * es);
    return r;
}

/* If value x is the output of a view op whose first input R, packed, gives
 * x as R's own bytes in order (a reshape), returns R; else -1. */
static int reshape_of(const st_plan *p, int x)
{
    const st_graph *g = p->g;
    int prod = g->values[x].producer;
    if (prod < 0 || p->nodes[prod].kind != ST_PN_EXEC) return -1;
    st_node pnode = st_plan_node(p, prod);
    const st_node *n = &pnode;
    if (!n->op->view || n->n_in < 1 || n->in[0] < 0 || n->n_out != 1 || n->out[0] != x) return -1;
    int r = n->in[0];
    const st_pvalue *pr = &p->values[r], *px = &p->values[x];
    st_view rv, xv;
    st_view_init(&rv, pr->t.dtype, pr->t.rank, pr->t.dims);
    if (!n->op->view(p->nodes[prod].state, 0, &rv, &xv)) return -1;
    if (xv.offset != 0 || !st_view_is_contiguous(&xv) || st_view_numel(&xv) != st_view_numel(&rv)) return -1;
    if (xv.rank != px->t.rank) return -1;
    for (int d = 0; d < xv.rank; d++)
        if (xv.sizes[d] != px->t.dims[d]) return -1;
    return r;
}

/* Whether R (value r), reshaped by x's producer, fits x's slot of a packed
 * y (axis, at start): the slot's strides express R's dims, and the view
 * rule turns that view of R back into the slot itself. */
static bool reshape_fits(const st_plan *p, int x, int r, int y, int axis, int64_t start)
{
    const st_pvalue *py = &p->values[y], *pr = &p->values[r], *px = &p->values[x];
    st_node pnode = st_plan_node(p, p->g->values[x].producer);
    const st_node *n = &pnode;
    st_view slot, rv, xv;
    st_view_init(&slot, py->t.dtype, py->t.rank, py->t.dims);
    st_view_slice(&slot, axis, start, 1, px->t.dims[axis]);
    rv = slot;
    if (!st_view_reshape(&rv, pr->t.rank, pr->t.dims)) return false;
    if (!n->op->view(p->nodes[p->g->values[x].producer].state, 0, &rv, &xv)) return false;
    if (xv.offset != slot.offset || xv.rank != slot.rank) return false;
    for (int d = 0; d < slot.rank; d++)
        if (xv.sizes[d] != slot.sizes[d] || (slot.sizes[d] > 1 && xv.strides[d] != slot.strides[d])) return false;
    return true;
}

/* Whether every dim of value y before axis is 1 (a slot along axis of a
 * packed y is then one contiguous run). */
static bool lead_one(const st_plan *p, int y, int axis)
{
    for (int d = 0; d < axis; d++)
        if (p->values[y].t.dims[d] != 1) return false;
    return true;
}

/* Whether value v has the shape of a slot of y along axis (placed as a
 * slice of y, not through a reshape). */
static bool slot_shaped(const st_plan *p, int v, int y, int axis)
{
    const st_pvalue *pv = &p->values[v], *py = &p->values[y];
    if (pv->t.rank != py->t.rank) return false;
    for (int d = 0; d < pv->t.rank; d++)
        if (d != axis && pv->t.dims[d] != py->t.dims[d]) return false;
    return true;
}

/* Whether Concat node c's output holds, at any depth of nested concats, a
 * value placed through a reshape (its slot must stay contiguous). */
static bool holds_reshaped(const st_plan *p, int c)
{
    const st_graph *g = p->g;
    int y = g->nodes[c].out[0];
    int axis = ((const st_concat_state *)p->nodes[c].state)->axis;
    for (int v = 0; v < p->n_values; v++) {
        if (p->values[v].concat != c) continue;
        if (!slot_shaped(p, v, y, axis)) return true;
        int prod = p->values[v].producer;
        if (prod >= 0 && (g->nodes[prod].op->flags & ST_OP_CONCAT) && holds_reshaped(p, prod)) return true;
    }
    return false;
}

/* Whether value v may be placed in Concat node i (output y, axis) as far
 * as nesting goes: a concat output holding reshaped values only where its
 * slot is contiguous. */
static bool nest_ok(const st_plan *p, int v, int y, int axis)
{
    int prod = p->values[v].producer;
    if (prod < 0 || !(p->g->nodes[prod].op->flags & ST_OP_CONCAT)) return true;
    return lead_one(p, y, axis) || !holds_reshaped(p, prod);
}

/* For placing R over Y (axis) at base when its slices fill only the
 * slots from start to the end of R: the slots of Y in [base, start) hold
 * other inputs of C, so R's bytes there are overwritten by their writers
 * (the producer of a placed input, or C's copy).  That is safe when every
 * command that reads those bytes of R runs before every such writer in
 * program order (the hazard DAG then orders the overwrite after the reads)
 * and R's producer runs before the writers.  A value derived from R by a
 * slice along the axis covers only its own slots; any other view of R
 * (through view ops, transitively) counts as covering all of R.  A reader
 * that is not a plain command of its own (a fused node), a graph output
 * among R's views, or C reading one of them other than the run refuses. */
typedef struct overlap_ctx {
    const st_plan *p;
    int c, axis, r;
    int64_t s0;           /* R's positions [0, s0) along the axis are overwritten */
    const int *writer;    /* per such position, the node that overwrites it */
    int k0, k1;           /* the run of C's inputs that are slices of R */
} overlap_ctx;

/* Whether every reader of value v (R or a view of it covering R's
 * positions [lo, hi) along the axis) runs before the writers of those
 * positions. */
static bool readers_first(const overlap_ctx *o, int v, int64_t lo, int64_t hi, int depth)
{
    const st_plan *p = o->p;
    const st_graph *g = p->g;
    if (depth > 16) return false;
    int first_w = g->n_nodes;
    for (int64_t a = lo; a < hi && a < o->s0; a++)
        if (o->writer[a] < first_w) first_w = o->writer[a];
    if (first_w == g->n_nodes) return true; /* v covers nothing overwritten */
    for (int q = 0; q < g->n_outputs; q++)
        if (g->outputs[q] == v) return false;
    for (int m = 0; m < g->n_nodes; m++) {
        const st_pnode *pm = &p->nodes[m];
        const st_node *nm = &g->nodes[m];
        const int *ins = pm->in ? pm->in : nm->in;
        int nin = pm->in ? pm->n_in : nm->n_in;
        bool reads = false;
        for (int q = 0; q < nin; q++)
            if (ins[q] == v && !(m == o->c && q >= o->k0 && q < o->k1)) reads = true;
        if (!reads || pm->kind == ST_PN_DEAD || pm->kind == ST_PN_FOLDED) continue;
        if (pm->kind != ST_PN_EXEC || m == o->c || m >= first_w) return false;
        if (!st_plan_op(p, nm, m)->view) continue;
        /* a view op: its outputs read the same bytes (a slice of R along
         * the axis only its own positions) */
        for (int t = 0; t < nm->n_out; t++) {
            int u = nm->out[t];
            if (u < 0) continue;
            int64_t s, ulo = lo, uhi = hi;
            if (v == o->r && slice_of(p, u, o->axis, &s) == o->r) {
                ulo = s;
                uhi = s + p->values[u].t.dims[o->axis];
            }
            if (!readers_first(o, u, ulo, uhi, depth + 1)) return false;
        }
    }
    return true;
}

/* Whether R (value r, slot-shaped) may be placed in Concat node c at
 * start[k0] - s0, its slices at s0.. being C's inputs k0..k1-1 (see
 * overlap_ctx). */
static bool overlap_safe(const st_plan *p, int c, int axis, int r, int64_t s0, int k0, int k1, const int64_t *start)
{
    st_node cnode = st_plan_node(p, c);
    const st_node *n = &cnode;
    int64_t base = start[k0] - s0;
    if (base < 0) return false;
    int *writer = malloc((size_t)s0 * sizeof *writer);
    if (!writer) return false;
    int first_w = p->g->n_nodes;
    bool ok = true;
    for (int q = 0; q < k0 && ok; q++) {
        int x = n->in[q];
        if (x < 0) continue;
        int64_t a0 = start[q] - base, a1 = a0 + p->values[x].t.dims[axis];
        if (a1 <= 0) continue;
        int w = c;
        if (p->nodes[c].skip[q]) {
            if (p->values[x].concat != c) ok = false; /* placed through a view: not tracked here */
            w = p->values[x].producer;
        }
        if (w < first_w) first_w = w;
        for (int64_t a = a0 < 0 ? 0 : a0; a < a1 && a < s0; a++) writer[a] = w;
    }
    overlap_ctx o = {p, c, axis, r, s0, writer, k0, k1};
    ok = ok && p->values[r].producer < first_w && readers_first(&o, r, 0, p->values[r].t.dims[axis], 0);
    free(writer);
    return ok;
}

void st_pass_place_concats(st_plan *p)
{
    const st_graph *g = p->g;
    for (int i = 0; i < g->n_nodes; i++) {
        /* as fusion left it: passes/fuse_qdq.c runs a Concat on the
         * integer tensors its DequantizeLinears read */
        st_node cnode = st_plan_node(p, i);
        const st_node *n = &cnode;
        st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_EXEC || !(n->op->flags & ST_OP_CONCAT) || st_plan_out(p, n, i, 0) != n->out[0] || n->out[0] < 0) continue;
        pn->skip = calloc((size_t)n->n_in + 1, sizeof *pn->skip);
        int64_t *start = malloc(((size_t)n->n_in + 1) * sizeof *start);
        if (!pn->skip || !start) { /* placement is an optimisation; without memory, just copy */
            free(pn->skip);
            free(start);
            pn->skip = NULL;
            continue;
        }
        int axis = ((const st_concat_state *)pn->state)->axis;
        st_dtype out_dt = p->values[n->out[0]].t.dtype;
        int64_t at = 0;
        for (int k = 0; k < n->n_in; k++) {
            start[k] = at;
            if (n->in[k] >= 0) at += p->values[n->in[k]].t.dims[axis];
        }
        for (int k = 0; k < n->n_in; k++) {
            int x = n->in[k];
            if (x < 0) continue;
            if (placeable(p, x, i, out_dt) && nest_ok(p, x, n->out[0], axis)) {
                p->values[x].concat = i;
                p->values[x].concat_start = start[k];
                pn->skip[k] = true;
                pn->n_placed++;
                continue;
            }
            /* a run of inputs k..j-1 that slice one value R in order */
            /* a packed value R that x reshapes, into a contiguous slot */
            int r = reshape_of(p, x);
            if (r >= 0 && placeable(p, r, i, out_dt) && p->values[x].t.dtype == out_dt &&
                nest_ok(p, r, n->out[0], axis) && reshape_fits(p, x, r, n->out[0], axis, start[k])) {
                p->values[r].concat = i;
                p->values[r].concat_start = start[k];
                pn->skip[k] = true;
                pn->n_placed++;
                continue;
            }
            int64_t s0;
            r = slice_of(p, x, axis, &s0);
            if (r < 0 || !placeable(p, r, i, out_dt) || !nest_ok(p, r, n->out[0], axis)) continue;
            int64_t covered = s0;
            int j = k;
            while (j < n->n_in && n->in[j] >= 0) {
                int64_t s;
                if (slice_of(p, n->in[j], axis, &s) != r || s != covered) break;
                covered += p->values[n->in[j]].t.dims[axis];
                j++;
            }
            if (covered != p->values[r].t.dims[axis]) continue;
            /* slices from s0 > 0 (YOLOv5's confidences, Split's third
             * output, after xy and wh computed from the first two): R goes
             * over the earlier inputs' slots too, when their writers come
             * after every reader of what they overwrite */
            if (s0 > 0 && (!slot_shaped(p, r, n->out[0], axis) || !overlap_safe(p, i, axis, r, s0, k, j, start)))
                continue;
            p->values[r].concat = i;
            p->values[r].concat_start = start[k] - s0;
            for (int q = k; q < j; q++) pn->skip[q] = true;
            pn->n_placed += j - k;
            k = j - 1;
        }
        free(start);
        if (pn->n_placed == 0) {
            free(pn->skip);
            pn->skip = NULL;
        }
    }
}
