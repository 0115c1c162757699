/*
 * select.c — the data-dependent selections whose result is an output's
 * shape: NonZero's count, Unique's entries and NonMaxSuppression's picks.
 * A shape rule (ops/index.c) runs them on constant data at plan time, and
 * the CPU kernels run the same code to fill the outputs, so the two can
 * never disagree about how many elements there are.
 */
#include "ops/select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static inline char *elem(const st_operand *o, int64_t off)
{
    return (char *)o->data + off * (int64_t)st_dtype_size(o->dtype);
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static bool present(const st_operand *o) { return o->data && st_operand_numel(o) > 0; }

/* ---- NonZero ---- */

bool st_is_nonzero(st_dtype t, const char *p)
{
    return st_dtype_is_float(t) ? st_load_f64(t, p) != 0.0 : st_load_i64(t, p) != 0;
}

int64_t st_nonzero_count(const st_operand *x)
{
    int64_t n = 0;
    st_iter it;
    for (bool more = st_iter_init(&it, x->rank, x->sizes, 1, (const int64_t *[]){x->strides}); more; more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) n += st_is_nonzero(x->dtype, elem(x, it.off[0] + i * it.step[0]));
    return n;
}

/* ---- Unique ---- */

/* Element offsets of a shape's elements in row-major order. */
static void rowmajor_offsets(int rank, const int64_t *sizes, const int64_t *strides, int64_t *out)
{
    int64_t n = st_numel(rank, sizes), idx[ST_MAX_RANK] = {0}, off = 0;
    for (int64_t i = 0; i < n; i++) {
        out[i] = off;
        for (int d = rank - 1; d >= 0; d--) {
            off += strides[d];
            if (++idx[d] < sizes[d]) break;
            off -= strides[d] * sizes[d];
            idx[d] = 0;
        }
    }
}

static int cmp_elem(st_dtype t, const char *a, const char *b)
{
    if (st_dtype_is_float(t)) {
        double x = st_load_f64(t, a), y = st_load_f64(t, b);
        return (x > y) - (x < y);
    }
    if (t == ST_U64) {
        uint64_t x = (uint64_t)st_load_i64(t, a), y = (uint64_t)st_load_i64(t, b);
        return (x > y) - (x < y);
    }
    int64_t x = st_load_i64(t, a), y = st_load_i64(t, b);
    return (x > y) - (x < y);
}

typedef struct unique_ctx {
    const st_operand *x;
    const int64_t *soff, *eoff;
    int64_t len;                    /* elements per slice */
    const int64_t *key;             /* or: order by key[] */
} unique_ctx;

static int unique_cmp(const unique_ctx *c, int64_t a, int64_t b)
{
    if (c->key) return (c->key[a] > c->key[b]) - (c->key[a] < c->key[b]);
    for (int64_t e = 0; e < c->len; e++) {
        int r = cmp_elem(c->x->dtype, elem(c->x, c->soff[a] + c->eoff[e]), elem(c->x, c->soff[b] + c->eoff[e]));
        if (r) return r;
    }
    return 0;
}

/* Stable bottom-up merge sort of v[0..n) by unique_cmp. */
static void merge_sort(int64_t *v, int64_t *tmp, int64_t n, const unique_ctx *c)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = min64(lo + w, n), hi = min64(lo + 2 * w, n), i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = unique_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid) tmp[o++] = v[i++];
            while (j < hi) tmp[o++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

void st_unique_free(st_unique_result *r)
{
    free(r->first);
    free(r->inverse);
    free(r->counts);
    memset(r, 0, sizeof *r);
}

st_status st_unique_run(const st_operand *x, int axis, bool sorted, st_unique_result *r)
{
    memset(r, 0, sizeof *r);
    int64_t n, len;
    int64_t osz[ST_MAX_RANK], ost[ST_MAX_RANK];
    int orank = 0;
    if (axis < 0) {
        n = st_operand_numel(x);
        len = 1;
    } else {
        n = x->sizes[axis];
        for (int d = 0; d < x->rank; d++)
            if (d != axis) {
                osz[orank] = x->sizes[d];
                ost[orank++] = x->strides[d];
            }
        len = st_numel(orank, osz);
    }
    size_t cap = (size_t)(n > 0 ? n : 1);
    int64_t *soff = malloc(cap * sizeof *soff), *eoff = malloc((size_t)(len > 0 ? len : 1) * sizeof *eoff);
    int64_t *order = malloc(cap * sizeof *order), *tmp = malloc(cap * sizeof *tmp), *group = malloc(cap * sizeof *group);
    int64_t *gfirst = malloc(cap * sizeof *gfirst), *gcount = malloc(cap * sizeof *gcount), *gpos = malloc(cap * sizeof *gpos);
    r->first = malloc(cap * sizeof *r->first);
    r->inverse = malloc(cap * sizeof *r->inverse);
    r->counts = malloc(cap * sizeof *r->counts);
    st_status st = ST_OK;
    if (!soff || !eoff || !order || !tmp || !group || !gfirst || !gcount || !gpos || !r->first || !r->inverse || !r->counts) {
        st = st_error(ST_ERR_NOMEM, "out of memory in Unique");
        goto done;
    }
    if (axis < 0) {
        rowmajor_offsets(x->rank, x->sizes, x->strides, soff);
        eoff[0] = 0;
    } else {
        for (int64_t i = 0; i < n; i++) soff[i] = i * x->strides[axis];
        rowmajor_offsets(orank, osz, ost, eoff);
    }
    unique_ctx c = {x, soff, eoff, len, NULL};
    for (int64_t i = 0; i < n; i++) order[i] = i;
    merge_sort(order, tmp, n, &c);
    /* equal slices are adjacent now, each run led by its first occurrence */
    int64_t g = -1;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || unique_cmp(&c, order[i - 1], order[i]) != 0) {
            g++;
            gfirst[g] = order[i];
            gcount[g] = 0;
        }
        gcount[g]++;
        group[order[i]] = g;
    }
    int64_t ng = g + 1;
    for (int64_t i = 0; i < ng; i++) gpos[i] = i;
    if (!sorted) {
        /* entries in order of first occurrence: sort the groups by it */
        for (int64_t i = 0; i < ng; i++) order[i] = i;
        unique_ctx kc = {x, NULL, NULL, 0, gfirst};
        merge_sort(order, tmp, ng, &kc);
        for (int64_t i = 0; i < ng; i++) gpos[order[i]] = i;
    }
    for (int64_t i = 0; i < ng; i++) {
        r->first[gpos[i]] = gfirst[i];
        r->counts[gpos[i]] = gcount[i];
    }
    for (int64_t i = 0; i < n; i++) r->inverse[i] = gpos[group[i]];
    r->n_slices = n;
    r->n_unique = ng;
done:
    free(soff);
    free(eoff);
    free(order);
    free(tmp);
    free(group);
    free(gfirst);
    free(gcount);
    free(gpos);
    if (st != ST_OK) st_unique_free(r);
    return st;
}

/* ---- NonMaxSuppression ---- */

void st_nms_params_read(const st_operand *in, int n_in, bool center_point_box, st_nms_params *p)
{
    memset(p, 0, sizeof *p);
    p->center_point_box = center_point_box;
    if (n_in > 2 && present(&in[2])) p->max_per_class = st_load_i64(in[2].dtype, in[2].data);
    if (n_in > 3 && present(&in[3])) p->iou_threshold = st_load_f32(in[3].dtype, in[3].data);
    if (n_in > 4 && present(&in[4])) {
        p->has_score_threshold = true;
        p->score_threshold = st_load_f32(in[4].dtype, in[4].data);
    }
}

typedef struct nms_cand {
    float score;
    int64_t index;
} nms_cand;

/* Highest score first; equal scores keep box order. */
static int nms_cand_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Boxes as {xmin, ymin, xmax, ymax}. */
static bool nms_suppresses(const float *a, const float *b, float threshold)
{
    float ix0 = fmaxf(a[0], b[0]), ix1 = fminf(a[2], b[2]);
    float iy0 = fmaxf(a[1], b[1]), iy1 = fminf(a[3], b[3]);
    if (ix1 <= ix0 || iy1 <= iy0) return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    float uni = area_a + area_b - inter;
    if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
    return inter / uni > threshold;
}

st_status st_nms_select(const st_operand *boxes, const st_operand *scores, const st_nms_params *p, int64_t **sel_out,
                        int64_t *count)
{
    int64_t nb = boxes->sizes[0], n = boxes->sizes[1], nc = scores->sizes[1];
    *sel_out = NULL;
    *count = 0;
    if (p->max_per_class <= 0 || n == 0) return ST_OK;
    size_t cap_n = (size_t)n;
    float *bx = malloc(cap_n * 4 * sizeof *bx);
    nms_cand *cand = malloc(cap_n * sizeof *cand);
    int64_t *picked = malloc(cap_n * sizeof *picked);
    int64_t cap = 64, cnt = 0;
    int64_t *sel = malloc((size_t)cap * 3 * sizeof *sel);
    st_status st = ST_OK;
    if (!bx || !cand || !picked || !sel) {
        st = st_error(ST_ERR_NOMEM, "out of memory in NonMaxSuppression");
        goto done;
    }
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < n; i++) {
            float v[4];
            for (int q = 0; q < 4; q++)
                v[q] = st_load_f32(boxes->dtype, elem(boxes, b * boxes->strides[0] + i * boxes->strides[1] + q * boxes->strides[2]));
            float *o = bx + i * 4;
            if (p->center_point_box) { /* [x_center, y_center, width, height] */
                o[0] = v[0] - v[2] / 2;
                o[2] = v[0] + v[2] / 2;
                o[1] = v[1] - v[3] / 2;
                o[3] = v[1] + v[3] / 2;
            } else { /* [y1, x1, y2, x2], either diagonal */
                o[0] = fminf(v[1], v[3]);
                o[2] = fmaxf(v[1], v[3]);
                o[1] = fminf(v[0], v[2]);
                o[3] = fmaxf(v[0], v[2]);
            }
        }
        for (int64_t c = 0; c < nc; c++) {
            int64_t m = 0;
            for (int64_t i = 0; i < n; i++) {
                float sc = st_load_f32(scores->dtype,
                                       elem(scores, b * scores->strides[0] + c * scores->strides[1] + i * scores->strides[2]));
                if (p->has_score_threshold && !(sc > p->score_threshold)) continue;
                cand[m].score = sc;
                cand[m++].index = i;
            }
            qsort(cand, (size_t)m, sizeof *cand, nms_cand_cmp);
            int64_t np = 0;
            for (int64_t e = 0; e < m && np < p->max_per_class; e++) {
                const float *box = bx + cand[e].index * 4;
                bool keep = true;
                for (int64_t q = 0; q < np && keep; q++)
                    if (nms_suppresses(box, bx + picked[q] * 4, p->iou_threshold)) keep = false;
                if (!keep) continue;
                picked[np++] = cand[e].index;
                if (cnt == cap) {
                    int64_t *grown = realloc(sel, (size_t)cap * 2 * 3 * sizeof *sel);
                    if (!grown) {
                        st = st_error(ST_ERR_NOMEM, "out of memory in NonMaxSuppression");
                        goto done;
                    }
                    sel = grown;
                    cap *= 2;
                }
                sel[cnt * 3] = b;
                sel[cnt * 3 + 1] = c;
                sel[cnt * 3 + 2] = cand[e].index;
                cnt++;
            }
        }
    }
done:
    free(bx);
    free(cand);
    free(picked);
    if (st != ST_OK) {
        free(sel);
        return st;
    }
    *sel_out = sel;
    *count = cnt;
    return ST_OK;
}
