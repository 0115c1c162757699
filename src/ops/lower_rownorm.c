/*
 * lower_rownorm.c — GroupNormalization's rows for the device backends
 * (ops/lower_rownorm.h says why).
 */
#include <string.h>

#include "ops/lower_rownorm.h"
#include "ops/norm.h"

void st_lower_group_norm(const st_kctx *k, bool has_bias, st_lower_rows *p)
{
    const st_norm_state *s = k->state;
    const st_operand *x = &k->in[0], *sc = &k->in[1], *y = &k->out[0], *bi = has_bias ? &k->in[2] : NULL;
    memset(p, 0, sizeof *p);
    int64_t g = s->size, cg = x->sizes[1] / g;
    p->rank = x->rank + 1;
    p->outer = 2;
    for (int d = 0, e = 0; d < x->rank; d++, e++) {
        p->n[e] = x->sizes[d];
        p->s[ST_LRN_X][e] = x->strides[d];
        p->s[ST_LRN_Y][e] = y->strides[d];
        if (d == 1) {
            p->n[e] = g;
            p->s[ST_LRN_X][e] = x->strides[1] * cg;
            p->s[ST_LRN_Y][e] = y->strides[1] * cg;
            /* per channel (opset 21) or per group (before) */
            p->s[ST_LRN_SCALE][e] = s->per_group ? sc->strides[0] : sc->strides[0] * cg;
            if (bi) p->s[ST_LRN_BIAS][e] = s->per_group ? bi->strides[0] : bi->strides[0] * cg;
            e++;
            p->n[e] = cg;
            p->s[ST_LRN_X][e] = x->strides[1];
            p->s[ST_LRN_Y][e] = y->strides[1];
            p->s[ST_LRN_SCALE][e] = s->per_group ? 0 : sc->strides[0];
            if (bi) p->s[ST_LRN_BIAS][e] = s->per_group ? 0 : bi->strides[0];
        }
    }
    p->rows = 1;
    p->len = 1;
    for (int d = 0; d < p->rank; d++) *(d < p->outer ? &p->rows : &p->len) *= p->n[d];
}

bool st_lrn_accepts_rank(const st_knode *n, char *why, size_t len)
{
    const st_norm_state *s = n->state;
    int extra = s->kind == ST_N_GROUP_NORM ? 1 : 0;
    if (n->views[0].rank + extra > ST_MAX_RANK) return st_kernel_refuse(why, len, "%s of rank %d", n->op->name, n->views[0].rank);
    if (s->kind != ST_N_LAYER_NORM && n->views[0].rank < 2)
        return st_kernel_refuse(why, len, "%s of rank %d", n->op->name, n->views[0].rank);
    return true;
}
