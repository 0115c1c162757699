/*
 * lower_elementwise.c — an elementwise walk's order, merged dims and
 * fast-path class, for every backend (ops/lower_elementwise.h says why).
 */
#include <assert.h>
#include <string.h>

#include "ops/lower_elementwise.h"

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* The class of a merged walk (see st_lew_class). */
static void classify(st_lower_ew *w)
{
    w->cls = ST_LEW_GENERAL;
    w->bcast = 0;
    if (w->n == 0) return;
    if (w->n == 1) {
        w->cls = ST_LEW_CONTIGUOUS;
        return;
    }
    if (w->rank == 1) {
        if (w->strides[0][0] != 1) return; /* a strided output */
        unsigned one = 0;
        for (int k = 1; k < w->nops; k++) {
            if (w->strides[k][0] == 0) one |= 1u << k;
            else if (w->strides[k][0] != 1) return;
        }
        w->cls = one ? ST_LEW_SCALAR_BROADCAST : ST_LEW_CONTIGUOUS;
        w->bcast = one;
        return;
    }
    if (w->rank == 2) {
        int64_t cols = w->sizes[1];
        unsigned rep = 0;
        for (int k = 0; k < w->nops; k++) {
            if (w->strides[k][1] != 1) return;
            if (w->strides[k][0] == 0 && k > 0) rep |= 1u << k;
            else if (w->strides[k][0] != cols) return;
        }
        /* every operand dense would have merged into one row */
        if (!rep) return;
        w->cls = ST_LEW_ROW_BROADCAST;
        w->bcast = rep;
    }
}

void st_lower_ew_make(st_lower_ew *w, int rank, const int64_t *sizes, int nops, const int64_t *const *strides)
{
    assert(rank >= 0 && rank <= ST_MAX_RANK && nops >= 1 && nops <= ST_LEW_OPS);
    memset(w, 0, sizeof *w);
    w->nops = nops;
    /* operand 0's strides, largest first; stable, so equal strides (unit
     * dims, most often) keep their order */
    int order[ST_MAX_RANK];
    for (int d = 0; d < rank; d++) order[d] = d;
    for (int d = 1; d < rank; d++)
        for (int e = d; e > 0 && abs64(strides[0][order[e - 1]]) < abs64(strides[0][order[e]]); e--) {
            int t = order[e - 1];
            order[e - 1] = order[e];
            order[e] = t;
        }
    int64_t osz[ST_MAX_RANK], ost[ST_LEW_OPS][ST_MAX_RANK];
    const int64_t *os[ST_LEW_OPS];
    for (int d = 0; d < rank; d++) {
        osz[d] = sizes[order[d]];
        for (int k = 0; k < nops; k++) ost[k][d] = strides[k][order[d]];
    }
    for (int k = 0; k < nops; k++) os[k] = ost[k];
    /* the merge is st_iter_init's, so a CPU iterator over this walk
     * merges nothing more */
    st_iter it;
    bool any = st_iter_init(&it, rank, osz, nops, os);
    w->rank = it.rank;
    w->n = any ? 1 : 0;
    for (int d = 0; d < it.rank; d++) {
        w->sizes[d] = it.sizes[d];
        w->n *= it.sizes[d];
        for (int k = 0; k < nops; k++) w->strides[k][d] = it.strides[k][d];
    }
    classify(w);
}

void st_lower_ew_bcast(int xrank, const int64_t *xsizes, const int64_t *xstrides, int yrank, int64_t *out)
{
    int off = yrank - xrank;
    for (int d = 0; d < yrank; d++) {
        int k = d - off;
        out[d] = (k < 0 || xsizes[k] == 1) ? 0 : xstrides[k];
    }
}

/* One operand's shape as both st_operand and st_view hold it. */
typedef struct shape_ref {
    int rank;
    const int64_t *sizes, *strides;
} shape_ref;

/* ops[0] the output, the rest broadcast into its shape. */
static void lower_refs(st_lower_ew *w, const shape_ref *ops, int nops)
{
    int64_t s[ST_LEW_OPS][ST_MAX_RANK];
    const int64_t *ss[ST_LEW_OPS] = {ops[0].strides};
    assert(nops <= ST_LEW_OPS);
    for (int k = 1; k < nops; k++) {
        st_lower_ew_bcast(ops[k].rank, ops[k].sizes, ops[k].strides, ops[0].rank, s[k]);
        ss[k] = s[k];
    }
    st_lower_ew_make(w, ops[0].rank, ops[0].sizes, nops, ss);
}

void st_lower_ew_operands(st_lower_ew *w, const st_operand *y, int n_in, const st_operand *const *in)
{
    shape_ref r[ST_LEW_OPS] = {{y->rank, y->sizes, y->strides}};
    for (int k = 0; k < n_in && k + 1 < ST_LEW_OPS; k++) r[k + 1] = (shape_ref){in[k]->rank, in[k]->sizes, in[k]->strides};
    lower_refs(w, r, n_in + 1);
}

void st_lower_ew_views(st_lower_ew *w, const st_view *y, int n_in, const st_view *const *in)
{
    shape_ref r[ST_LEW_OPS] = {{y->rank, y->sizes, y->strides}};
    for (int k = 0; k < n_in && k + 1 < ST_LEW_OPS; k++) r[k + 1] = (shape_ref){in[k]->rank, in[k]->sizes, in[k]->strides};
    lower_refs(w, r, n_in + 1);
}

bool st_lower_ew_iter(const st_lower_ew *w, st_iter *it)
{
    const int64_t *ss[ST_LEW_OPS];
    for (int k = 0; k < w->nops; k++) ss[k] = w->strides[k];
    bool any = st_iter_init(it, w->rank, w->sizes, w->nops, ss);
    return any && w->n > 0;
}
