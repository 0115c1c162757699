/*
 * concat.c — concat placement: producers write straight into their slot of
 * a Concat's output, so the Concat copies nothing.
 *
 * Owns: values[].concat and nodes[].skip / .n_placed.  An input X of a
 * Concat node C is placed when all of these hold:
 *   1. X is computed by a command: not a constant, not a graph input, and
 *      its producer is not a view op (a view's bytes belong to another
 *      value, and it may be a pure view with no command to redirect);
 *   2. X is not placed elsewhere already (X feeding two Concats, or one
 *      Concat twice, is placed once);
 *   3. X and C's output have the same planned dtype.
 * Other readers of X need no packing: every kernel reads strided inputs, so
 * they read X through its strided slot.  A graph output may be placed: it
 * is then returned as a view.  Nested concats place transitively: when C's
 * own output is placed in D, X's slot is a slice of C's slot in D.
 * Slots never overlap (they partition C's output along the axis), and the
 * hazard DAG orders each producer against every reader of its slot like
 * any other write, so placement needs no special ordering.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "plan/plan.h"

void st_pass_place_concats(st_plan *p)
{
    const st_graph *g = p->model->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        st_pnode *pn = &p->nodes[i];
        if (pn->kind != ST_PN_EXEC || !(n->op->flags & ST_OP_CONCAT) || n->out[0] < 0) continue;
        pn->skip = calloc((size_t)n->n_in + 1, sizeof *pn->skip);
        if (!pn->skip) continue; /* placement is an optimisation; without memory, just copy */
        st_dtype out_dt = p->values[n->out[0]].t.dtype;
        for (int k = 0; k < n->n_in; k++) {
            int x = n->in[k];
            if (x < 0) continue;
            st_pvalue *pv = &p->values[x];
            if (pv->kind != ST_PV_ROOT || pv->producer < 0) continue;
            const st_node *prod = &g->nodes[pv->producer];
            if (p->nodes[pv->producer].kind != ST_PN_EXEC || prod->op->view) continue;
            if (pv->concat >= 0 || pv->t.dtype != out_dt) continue;
            pv->concat = i;
            pn->skip[k] = true;
            pn->n_placed++;
        }
        if (pn->n_placed == 0) {
            free(pn->skip);
            pn->skip = NULL;
        }
    }
}
