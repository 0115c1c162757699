/*
 * lower_index.c — the index family's copies, walks, tuple splits, Einsum
 * strides and Pad parameters for every backend, and the checks the
 * device accepts() share (ops/lower_index.h says why).
 */
#include <string.h>

#include "ops/lower_index.h"
#include "ops/ops.h"

/* the device kernels' Einsum walk holds ST_MAX_RANK output dims */
_Static_assert(ST_IM_RANK == ST_MAX_RANK, "ops/index_math.h's ST_IM_RANK is ST_MAX_RANK");

static int64_t numel(int rank, const int64_t *n)
{
    int64_t t = 1;
    for (int d = 0; d < rank; d++) t *= n[d];
    return t;
}

/* ---- copies ---- */

/* Sets rank-0 copies to [1] (one element, strides 0) and the total. */
static void copy_finish(st_lower_copy *p)
{
    if (p->rank == 0) {
        p->rank = 1;
        p->n[0] = 1;
        p->ys[0] = p->xs[0] = 0;
    }
    p->total = numel(p->rank, p->n);
}

void st_lower_expand(const st_kctx *k, st_lower_copy *p)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    memset(p, 0, sizeof *p);
    p->rank = y->rank;
    int off = y->rank - x->rank;
    for (int d = 0; d < y->rank; d++) {
        int e = d - off; /* numpy broadcasting: right-aligned */
        p->n[d] = y->sizes[d];
        p->ys[d] = y->strides[d];
        p->xs[d] = e < 0 || x->sizes[e] == 1 ? 0 : x->strides[e];
    }
    copy_finish(p);
}

void st_lower_tile(const st_kctx *k, st_lower_copy *p)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    memset(p, 0, sizeof *p);
    for (int d = 0; d < x->rank; d++) {
        if (x->sizes[d] == 0 || y->sizes[d] == 0) {
            memset(p, 0, sizeof *p); /* nothing to copy (and no repeat count to divide out) */
            p->rank = 1;
            return;
        }
        /* output dim d as [repeat, x dim]: the repeat reads x again */
        int r = p->rank;
        p->n[r] = y->sizes[d] / x->sizes[d];
        p->ys[r] = x->sizes[d] * y->strides[d];
        p->xs[r] = 0;
        p->n[r + 1] = x->sizes[d];
        p->ys[r + 1] = y->strides[d];
        p->xs[r + 1] = x->strides[d];
        p->rank += 2;
    }
    copy_finish(p);
}

void st_lower_depth_to_space(const st_kctx *k, st_lower_copy *p)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t b = s->n, c = y->sizes[1], xc = x->strides[1];
    /* y as [N, C', H, b1, W, b2]; x's channel is b1*b*C' + b2*C' + c'
     * (DCR) or c'*b*b + b1*b + b2 (CRD) */
    const int64_t n[6] = {y->sizes[0], c, x->sizes[2], b, x->sizes[3], b};
    const int64_t ys[6] = {y->strides[0], y->strides[1], y->strides[2] * b, y->strides[2], y->strides[3] * b, y->strides[3]};
    const int64_t dcr[6] = {x->strides[0], xc, x->strides[2], b * c * xc, x->strides[3], c * xc};
    const int64_t crd[6] = {x->strides[0], b * b * xc, x->strides[2], b * xc, x->strides[3], xc};
    memset(p, 0, sizeof *p);
    p->rank = 6;
    memcpy(p->n, n, sizeof n);
    memcpy(p->ys, ys, sizeof ys);
    memcpy(p->xs, s->flag ? crd : dcr, sizeof dcr);
    copy_finish(p);
}

void st_lower_space_to_depth(const st_kctx *k, st_lower_copy *p)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t b = s->n, c = x->sizes[1], yc = y->strides[1];
    /* x as [N, C, H', b1, W', b2]; y's channel is (b1*b + b2)*C + c */
    const int64_t n[6] = {x->sizes[0], c, y->sizes[2], b, y->sizes[3], b};
    const int64_t xs[6] = {x->strides[0], x->strides[1], x->strides[2] * b, x->strides[2], x->strides[3] * b, x->strides[3]};
    const int64_t ys[6] = {y->strides[0], yc, y->strides[2], b * c * yc, y->strides[3], c * yc};
    memset(p, 0, sizeof *p);
    p->rank = 6;
    memcpy(p->n, n, sizeof n);
    memcpy(p->ys, ys, sizeof ys);
    memcpy(p->xs, xs, sizeof xs);
    copy_finish(p);
}

int st_lcopy_rank(const st_knode *n)
{
    const char *op = n->op->name;
    if (!strcmp(op, "Tile")) return 2 * n->views[0].rank;
    if (!strcmp(op, "DepthToSpace") || !strcmp(op, "SpaceToDepth")) return 6;
    if (!strcmp(op, "Expand")) return n->views[n->n_in].rank;
    return 0;
}

/* ---- walks with one index per element ---- */

static void walk_finish(st_lower_gather *p)
{
    p->total = numel(p->rank, p->n);
    p->line = p->rank > 0 ? p->n[p->axis] : 1;
    p->lines = p->line > 0 ? p->total / p->line : 0;
}

void st_lower_gather_of(const st_kctx *k, st_lower_gather *p)
{
    const st_gather_state *s = k->state;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    int a = s->axis, q = ix->rank;
    memset(p, 0, sizeof *p);
    p->rank = y->rank;
    p->axis = a;
    p->operand[ST_LG_DATA] = 0;
    p->operand[ST_LG_PEER] = k->n_in;
    p->operand[ST_LG_INDEX] = 1;
    /* y = [x dims before axis, index dims, x dims after axis] */
    for (int d = 0; d < y->rank; d++) {
        p->n[d] = y->sizes[d];
        p->s[ST_LG_PEER][d] = y->strides[d];
        if (d < a) p->s[ST_LG_DATA][d] = x->strides[d];
        else if (d < a + q) p->s[ST_LG_INDEX][d] = ix->strides[d - a];
        else p->s[ST_LG_DATA][d] = x->strides[d - q + 1];
    }
    p->data_axis = x->strides[a];
    p->dim = x->sizes[a];
    /* the walk's axis is not x's here: every element is a line of its own */
    p->total = numel(p->rank, p->n);
    p->line = 1;
    p->lines = p->total;
}

/* A walk over `w`'s shape (GatherElements: y, the indices' shape;
 * ScatterElements: the indices), data indexed along axis. */
static void elements_walk(st_lower_gather *p, int axis, const st_operand *data, const st_operand *peer, const st_operand *ix,
                          const st_operand *w)
{
    memset(p, 0, sizeof *p);
    p->rank = w->rank;
    p->axis = axis;
    for (int d = 0; d < w->rank; d++) {
        p->n[d] = w->sizes[d];
        p->s[ST_LG_DATA][d] = d == axis ? 0 : data->strides[d];
        p->s[ST_LG_PEER][d] = peer->strides[d];
        p->s[ST_LG_INDEX][d] = ix->strides[d];
    }
    p->data_axis = data->strides[axis];
    p->dim = data->sizes[axis];
    walk_finish(p);
}

void st_lower_gather_elements(const st_kctx *k, st_lower_gather *p)
{
    const st_index_state *s = k->state;
    elements_walk(p, s->axis, &k->in[0], &k->out[0], &k->in[1], &k->out[0]);
    p->operand[ST_LG_DATA] = 0;
    p->operand[ST_LG_PEER] = k->n_in;
    p->operand[ST_LG_INDEX] = 1;
}

void st_lower_scatter_elements(const st_kctx *k, st_lower_gather *p)
{
    const st_index_state *s = k->state;
    elements_walk(p, s->axis, &k->out[0], &k->in[2], &k->in[1], &k->in[1]);
    p->operand[ST_LG_DATA] = k->n_in;
    p->operand[ST_LG_PEER] = 2;
    p->operand[ST_LG_INDEX] = 1;
}

/* ---- tuples and slices ---- */

/* The slice: data dims from `from`, peer dims from `peer_from`. */
static void nd_slice(st_lower_nd *p, const st_operand *data, int from, const st_operand *peer, int peer_from)
{
    p->slice_rank = data->rank - from;
    for (int d = 0; d < p->slice_rank; d++) {
        p->slice_n[d] = data->sizes[from + d];
        p->slice_s[0][d] = data->strides[from + d];
        p->slice_s[1][d] = peer->strides[peer_from + d];
    }
    p->slice = numel(p->slice_rank, p->slice_n);
}

void st_lower_gather_nd(const st_kctx *k, st_lower_nd *p)
{
    const st_index_state *s = k->state;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    memset(p, 0, sizeof *p);
    p->b = (int)s->n;
    p->q = ix->rank;
    p->m = (int)ix->sizes[p->q - 1];
    p->tuples = numel(p->q - 1, ix->sizes);
    /* y = [indices.shape[:-1], x.shape[b + m:]] */
    nd_slice(p, x, p->b + p->m, y, p->q - 1);
    p->items = st_operand_numel(y);
}

void st_lower_scatter_nd(const st_kctx *k, st_lower_nd *p)
{
    const st_operand *ix = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    memset(p, 0, sizeof *p);
    p->q = ix->rank;
    p->m = (int)ix->sizes[p->q - 1];
    p->tuples = numel(p->q - 1, ix->sizes);
    /* updates = [indices.shape[:-1], y.shape[m:]] */
    nd_slice(p, y, p->m, u, p->q - 1);
    p->items = st_operand_numel(u) > 0 ? p->slice : 0;
}

/* ---- Einsum ---- */

void st_lower_einsum_of(const st_kctx *k, st_lower_einsum *p)
{
    const st_einsum_state *s = k->state;
    const st_operand *y = &k->out[0];
    int64_t ls[ST_LEIN_IN][ST_EIN_LABELS];
    bool used[ST_EIN_LABELS] = {false}, out[ST_EIN_LABELS] = {false};
    memset(p, 0, sizeof *p);
    memset(ls, 0, sizeof ls);
    p->n_in = k->n_in < ST_LEIN_IN ? k->n_in : ST_LEIN_IN;
    for (int i = 0; i < p->n_in; i++)
        for (int d = 0; d < s->rank[i]; d++) {
            int l = s->label[i][d];
            used[l] = true;
            ls[i][l] = st_im_label_stride(ls[i][l], k->in[i].sizes[d], k->in[i].strides[d]);
        }
    p->out_rank = s->out_rank;
    for (int d = 0; d < s->out_rank; d++) {
        int l = s->out_label[d];
        out[l] = true;
        p->out_n[d] = y->sizes[d];
        p->out_ys[d] = y->strides[d];
        for (int i = 0; i < p->n_in; i++) p->out_s[d][i] = ls[i][l];
    }
    for (int l = 0; l < ST_EIN_LABELS && p->n_sum < ST_LEIN_SUM; l++)
        if (used[l] && !out[l]) {
            p->sum_n[p->n_sum] = s->size[l];
            for (int i = 0; i < p->n_in; i++) p->sum_s[p->n_sum][i] = ls[i][l];
            p->n_sum++;
        }
    p->total = st_operand_numel(y);
}

/* Labels the output lacks (any count, for accepts). */
static int einsum_sums(const st_einsum_state *s)
{
    bool used[ST_EIN_LABELS] = {false}, out[ST_EIN_LABELS] = {false};
    for (int i = 0; i < s->n_in; i++)
        for (int d = 0; d < s->rank[i]; d++) used[s->label[i][d]] = true;
    for (int d = 0; d < s->out_rank; d++) out[s->out_label[d]] = true;
    int n = 0;
    for (int l = 0; l < ST_EIN_LABELS; l++) n += used[l] && !out[l];
    return n;
}

/* ---- Pad ---- */

/* Input 2 (opset >= 11) holds the constant when it is given. */
static bool pad_value_input(const st_pad_state *s, int n_in, const st_view *views)
{
    return s->value_input && n_in > 2 && views[2].rank >= 0;
}

void st_lower_pad_of(const st_kctx *k, st_lower_pad *p)
{
    const st_pad_state *s = k->state;
    const st_operand *y = &k->out[0];
    memset(p, 0, sizeof *p);
    p->rank = y->rank;
    p->mode = s->mode;
    for (int d = 0; d < y->rank; d++) {
        p->begin[d] = s->begin[d];
        p->end[d] = s->end[d];
    }
    p->value_operand = -1;
    if (k->views && pad_value_input(s, k->n_in, k->views) && k->in[2].data) {
        p->value_operand = 2;
    } else {
        unsigned char val[16] = {0};
        st_store_f64(y->dtype, val, s->value); /* as the CPU kernel: 0 unless the attribute set it */
        memcpy(&p->value_bits, val, 8);
    }
    p->total = st_operand_numel(y);
}

/* ---- accepts ---- */

static bool op_is(const st_knode *n, const char *a, const char *b)
{
    return !strcmp(n->op->name, a) || (b && !strcmp(n->op->name, b));
}

/* The ops whose kernels move elements of input 0 to output 0 unchanged. */
static bool moves_bytes(const st_knode *n)
{
    static const char *const ops[] = {"ScatterElements", "Scatter", "GatherND", "Trilu", "Expand", "Tile",
                                      "DepthToSpace", "SpaceToDepth", "Gather", "GatherElements", "ScatterND",
                                      "CumSum", "Pad", "CenterCropPad"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(n->op->name, ops[i])) return true;
    return false;
}

bool st_lidx_accepts(const st_knode *n, const char *device, int max_copy_rank, char *why, size_t len)
{
    const char *op = n->op->name;
    const st_view *x = &n->views[0], *y = &n->views[n->n_in];
    if (moves_bytes(n) && x->dtype != y->dtype)
        return st_kernel_refuse(why, len, "%s from %s to %s", op, st_dtype_name(x->dtype), st_dtype_name(y->dtype));
    if (op_is(n, "ScatterND", "ScatterElements") || op_is(n, "Scatter", NULL)) {
        if (n->views[2].dtype != x->dtype)
            return st_kernel_refuse(why, len, "%s of %s updates into %s", op, st_dtype_name(n->views[2].dtype), st_dtype_name(x->dtype));
    }
    if (op_is(n, "OneHot", NULL) && n->views[2].dtype != y->dtype)
        return st_kernel_refuse(why, len, "OneHot of %s values into %s", st_dtype_name(n->views[2].dtype), st_dtype_name(y->dtype));
    if (op_is(n, "Pad", "CenterCropPad") && pad_value_input(n->state, n->n_in, n->views) && n->views[2].dtype != y->dtype)
        return st_kernel_refuse(why, len, "Pad with a %s constant for %s data", st_dtype_name(n->views[2].dtype), st_dtype_name(y->dtype));
    if (op_is(n, "DepthToSpace", "SpaceToDepth") && x->rank != 4) return st_kernel_refuse(why, len, "%s of rank %d", op, x->rank);
    if (st_lcopy_rank(n) > max_copy_rank)
        return st_kernel_refuse(why, len, "%s of rank %d (%s copies up to %d dims, this one has %d)", op, x->rank, device, max_copy_rank,
                                st_lcopy_rank(n));
    if (op_is(n, "NonZero", NULL) && x->rank < 1) return st_kernel_refuse(why, len, "NonZero of a scalar");
    if (op_is(n, "Gather", NULL) && (n->n_in < 2 || n->views[1].rank < 0)) return st_kernel_refuse(why, len, "Gather without an index operand");
    if (op_is(n, "Einsum", NULL)) {
        if (n->n_in > ST_LEIN_IN) return st_kernel_refuse(why, len, "Einsum of %d inputs (%s takes up to %d)", n->n_in, device, ST_LEIN_IN);
        int ns = einsum_sums(n->state);
        if (ns > ST_LEIN_SUM) return st_kernel_refuse(why, len, "Einsum summing %d labels (%s takes up to %d)", ns, device, ST_LEIN_SUM);
    }
    return true;
}
