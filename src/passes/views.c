/*
 * views.c — view lowering and layouts: which nodes are pure views, and the
 * layout (offset within its root buffer, strides) of every value.
 *
 * Owns: values[].view, .base, .buffer (as a root value id until
 * plan/plan.c numbers buffers), .kind VIEW, and nodes[].kind VIEW.
 *
 * A node whose op has a view rule (Slice, Split, Transpose, Reshape,
 * Squeeze, Unsqueeze, Flatten, Identity, Gather of a scalar index) becomes
 * a pure view, with no command, whenever the rule can express every output
 * as strides over its input's bytes.  When it cannot (a Reshape that mixes
 * dims of a transposed tensor), the node stays a command that copies, and
 * its output is packed: the copy is explicit and the hazard tracker sees it.
 *
 * A value that passes/channels_last.c wants channels-last is a root with
 * NHWC strides.  A placed Concat input (passes/concat.c) is a slice of its Concat's
 * output along the axis, resolved recursively for nested concats; a value
 * placed through a reshape is its slot of that output viewed with the
 * value's own dims.  Layout
 * offsets here are relative to the root value's buffer; plan/plan.c adds
 * the buffer's arena offset once buffers are placed.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/concat.h"
#include "passes/passes.h"
#include "plan/plan.h"

static st_status resolve(st_plan *p, int v);

/* A placed value is the slot [concat_start, + its size) of its Concat's
 * output along the axis. */
static st_status resolve_placed(st_plan *p, int v)
{
    st_pvalue *pv = &p->values[v];
    const st_node *c = &p->g->nodes[pv->concat];
    int y = c->out[0];
    ST_TRY(resolve(p, y));
    const st_concat_state *cs = p->nodes[pv->concat].state;
    const st_pvalue *py = &p->values[y];
    bool sliced = pv->t.rank == py->t.rank;
    for (int d = 0; sliced && d < pv->t.rank; d++) sliced = d == cs->axis || pv->t.dims[d] == py->t.dims[d];
    if (sliced) {
        pv->view = py->view;
        st_view_slice(&pv->view, cs->axis, pv->concat_start, 1, pv->t.dims[cs->axis]);
    } else {
        /* placed through a reshape: y's slot from concat_start along the
         * axis, viewed with this value's dims */
        int64_t other = 1, n = st_numel(pv->t.rank, pv->t.dims);
        for (int d = 0; d < py->t.rank; d++)
            if (d != cs->axis) other *= py->t.dims[d];
        if (other <= 0 || n % other) return st_error(ST_ERR_INTERNAL, "concat placement: slot does not fit");
        pv->view = py->view;
        st_view_slice(&pv->view, cs->axis, pv->concat_start, 1, n / other);
        if (!st_view_reshape(&pv->view, pv->t.rank, pv->t.dims))
            return st_error(ST_ERR_INTERNAL, "concat placement: slot cannot be reshaped");
    }
    pv->kind = ST_PV_VIEW;
    pv->base = y;
    pv->buffer = p->values[y].buffer;
    pv->resolved = true;
    return ST_OK;
}

static void resolve_root(st_pvalue *pv, int v)
{
    st_view_init(&pv->view, pv->t.dtype, pv->t.rank, pv->t.dims);
    pv->buffer = pv->kind == ST_PV_CONST ? -1 : v;
    pv->resolved = true;
}

static st_status resolve(st_plan *p, int v)
{
    st_pvalue *pv = &p->values[v];
    if (pv->resolved) return ST_OK;
    if (pv->concat >= 0) return resolve_placed(p, v);
    /* outputs of view nodes are resolved by their node, in order */
    resolve_root(pv, v);
    if (pv->kind == ST_PV_ROOT && pv->producer >= 0 && st_pass_wants_channels_last(p, pv->producer, v))
        st_view_init_channels_last(&pv->view, pv->t.dtype, pv->t.dims); /* the same bytes, NHWC strides */
    return ST_OK;
}

/* Tries to make node i a pure view of its first input. */
static st_status lower_view(st_plan *p, int i)
{
    const st_graph *g = p->g;
    const st_node *n = &g->nodes[i];
    const st_op_def *op = st_plan_op(p, n, i);
    int n_in;
    int x = st_plan_in(p, n, i, &n_in)[0];
    ST_TRY(resolve(p, x));
    const st_pvalue *in = &p->values[x];
    st_view outs[n->n_out > 0 ? n->n_out : 1];
    bool ok = in->kind != ST_PV_CONST;
    for (int k = 0; k < n->n_out && ok; k++) {
        if (n->out[k] < 0) continue;
        ok = op->view(p->nodes[i].state, k, &in->view, &outs[k]);
        /* the rule works in the model's dtype; the bytes are in the planned one */
        if (ok && outs[k].dtype != p->values[n->out[k]].t.dtype) ok = false;
    }
    if (!ok) return ST_OK; /* stays a command that copies */
    p->nodes[i].kind = ST_PN_VIEW;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        st_pvalue *pv = &p->values[n->out[k]];
        pv->view = outs[k];
        pv->kind = ST_PV_VIEW;
        pv->base = x;
        pv->buffer = in->buffer;
        pv->resolved = true;
    }
    return ST_OK;
}

st_status st_pass_layout(st_plan *p)
{
    const st_graph *g = p->g;
    for (int v = 0; v < p->n_values; v++)
        if (p->values[v].kind == ST_PV_CONST || p->values[v].kind == ST_PV_INPUT) ST_TRY(resolve(p, v));
    for (int i = 0; i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_EXEC) continue;
        /* the op and inputs as fusion left them (passes/fuse_qdq.c runs a
         * Reshape on the integer tensor its DequantizeLinear read) */
        int n_in;
        const int *in = st_plan_in(p, n, i, &n_in);
        if (st_plan_op(p, n, i)->view && n_in > 0 && in[0] >= 0) ST_TRY(lower_view(p, i));
        if (pn->kind == ST_PN_VIEW) continue;
        for (int k = 0; k < n->n_out; k++)
            if (st_plan_out(p, n, i, k) >= 0) ST_TRY(resolve(p, st_plan_out(p, n, i, k)));
        /* a Concat whose every input is in place has nothing left to do */
        if (pn->skip) {
            int present = 0;
            for (int k = 0; k < n_in; k++) present += in[k] >= 0;
            if (pn->n_placed == present) pn->kind = ST_PN_VIEW;
        }
    }
    return ST_OK;
}

void st_pass_layout_reset(st_plan *p)
{
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_VIEW) pv->kind = ST_PV_ROOT; /* views and placed values were roots before */
        if (pv->kind == ST_PV_DEAD) continue;
        pv->resolved = false;
        pv->base = -1;
        pv->buffer = -1;
        pv->concat = -1;
        pv->concat_start = 0;
        memset(&pv->view, 0, sizeof pv->view);
    }
    for (int i = 0; i < p->n_nodes; i++) {
        st_pnode *pn = &p->nodes[i];
        if (pn->kind == ST_PN_VIEW) pn->kind = ST_PN_EXEC;
        free(pn->skip);
        pn->skip = NULL;
        pn->n_placed = 0;
    }
}
