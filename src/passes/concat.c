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
 *   3. X and Y have the same planned dtype.
 * Two ways to be placed:
 *   - X is an input of C: its slot is that input's share of the axis;
 *   - consecutive inputs of C are slices of one value R along C's axis
 *     that together cover R in order (a split, or YOLO's C2f chunk, fed
 *     back into a concat): then R itself is placed over their slots, the
 *     slices become views of Y, and C copies none of them.
 * Other readers of X need no packing: every kernel reads strided inputs, so
 * they read X through its strided slot.  A graph output may be placed: it
 * is then returned as a view.  Nested concats place transitively: when C's
 * own output is placed in D, X's slot is a slice of C's slot in D.
 * Slots never overlap (they partition Y along the axis), and the hazard
 * DAG orders each producer against every reader of its slot like any other
 * write, so placement needs no special ordering.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/concat.h"
#include "plan/plan.h"

static bool placeable(const st_plan *p, int x, st_dtype dtype)
{
    if (x < 0) return false;
    const st_pvalue *pv = &p->values[x];
    if (pv->kind != ST_PV_ROOT || pv->producer < 0 || pv->concat >= 0 || pv->t.dtype != dtype) return false;
    const st_node *prod = &p->model->g->nodes[pv->producer];
    return p->nodes[pv->producer].kind == ST_PN_EXEC && !prod->op->view;
}

/* If value x is a slice of the first input R of its (view op) producer
 * along `axis` only, returns R and the slice's start; else -1.  The test
 * applies the op's own view rule to a packed view of R. */
static int slice_of(const st_plan *p, int x, int axis, int64_t *start)
{
    const st_graph *g = p->model->g;
    int prod = g->values[x].producer;
    if (prod < 0 || p->nodes[prod].kind != ST_PN_EXEC) return -1;
    const st_node *n = &g->nodes[prod];
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

void st_pass_place_concats(st_plan *p)
{
    const st_graph *g = p->model->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_EXEC || !(n->op->flags & ST_OP_CONCAT) || n->out[0] < 0) continue;
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
            if (placeable(p, x, out_dt)) {
                p->values[x].concat = i;
                p->values[x].concat_start = start[k];
                pn->skip[k] = true;
                pn->n_placed++;
                continue;
            }
            /* a run of inputs k..j-1 that slice one value R in order */
            int64_t s0;
            int r = slice_of(p, x, axis, &s0);
            if (r < 0 || s0 != 0 || !placeable(p, r, out_dt)) continue;
            int64_t covered = 0;
            int j = k;
            while (j < n->n_in && n->in[j] >= 0) {
                int64_t s;
                if (slice_of(p, n->in[j], axis, &s) != r || s != covered) break;
                covered += p->values[n->in[j]].t.dims[axis];
                j++;
            }
            if (covered != p->values[r].t.dims[axis]) continue;
            p->values[r].concat = i;
            p->values[r].concat_start = start[k];
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
