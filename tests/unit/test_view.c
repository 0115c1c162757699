/*
 * test_view.c — view arithmetic, the n-d iterator and strided copies
 * (src/core/view.h), checked against brute-force element enumeration.
 *
 * The reference for a view is the list of its elements' positions in the
 * storage (in elements), in row-major order of the view's index space.
 * Each view operation is applied both to a real st_view and, by index
 * mapping, to that list; the view's own enumeration must then equal the
 * list.  A reshape keeps the list and changes only the shape, and is
 * possible without a copy exactly when the list is an affine function of
 * the new index: that is what the brute-force check decides.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "core/view.h"

/* ---- the reference: a shape and a position per element ---- */

typedef struct ref {
    int rank;
    int64_t sizes[ST_MAX_RANK];
    int64_t n;
    int64_t *pos; /* n positions, row-major */
} ref;

static int64_t numel(int rank, const int64_t *sizes)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

/* row-major flat index -> multi-index */
static void unravel(int64_t flat, int rank, const int64_t *sizes, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = sizes[d] ? flat % sizes[d] : 0;
        flat = sizes[d] ? flat / sizes[d] : 0;
    }
}

static int64_t ravel(const int64_t *idx, int rank, const int64_t *sizes)
{
    int64_t f = 0;
    for (int d = 0; d < rank; d++) f = f * sizes[d] + idx[d];
    return f;
}

/* Positions of every element of v, the brute-force way. */
static int64_t *enumerate(const st_view *v, int64_t *count)
{
    int64_t n = numel(v->rank, v->sizes), es = (int64_t)st_dtype_size(v->dtype);
    int64_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    int64_t idx[ST_MAX_RANK];
    for (int64_t e = 0; e < n; e++) {
        unravel(e, v->rank, v->sizes, idx);
        int64_t at = v->offset / es;
        for (int d = 0; d < v->rank; d++) at += idx[d] * v->strides[d];
        p[e] = at;
    }
    *count = n;
    return p;
}

/* The reference after mapping: new element e takes old element map(e). */
typedef int64_t (*remap_fn)(const int64_t *new_idx, const ref *old, const void *arg);

static void ref_apply(ref *r, int rank, const int64_t *sizes, remap_fn map, const void *arg)
{
    int64_t n = numel(rank, sizes);
    int64_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    int64_t idx[ST_MAX_RANK];
    for (int64_t e = 0; e < n; e++) {
        unravel(e, rank, sizes, idx);
        p[e] = r->pos[map(idx, r, arg)];
    }
    free(r->pos);
    r->pos = p;
    r->n = n;
    r->rank = rank;
    memcpy(r->sizes, sizes, (size_t)rank * sizeof *sizes);
}

static bool matches(const st_view *v, const ref *r, const char *what)
{
    int64_t n;
    int64_t *p = enumerate(v, &n);
    bool ok = v->rank == r->rank && n == r->n;
    for (int d = 0; ok && d < r->rank; d++) ok = v->sizes[d] == r->sizes[d];
    for (int64_t e = 0; ok && e < n; e++) ok = p[e] == r->pos[e];
    CHECKF(ok, "after %s the view's elements differ from the reference", what);
    free(p);
    return ok;
}

/* ---- the operations, reference side ---- */

typedef struct slice_arg { int axis; int64_t start, step; } slice_arg;

static int64_t map_slice(const int64_t *ni, const ref *old, const void *arg)
{
    const slice_arg *a = arg;
    int64_t oi[ST_MAX_RANK];
    memcpy(oi, ni, (size_t)old->rank * sizeof *oi);
    oi[a->axis] = a->start + ni[a->axis] * a->step;
    return ravel(oi, old->rank, old->sizes);
}

typedef struct select_arg { int axis; int64_t index; } select_arg;

static int64_t map_select(const int64_t *ni, const ref *old, const void *arg)
{
    const select_arg *a = arg;
    int64_t oi[ST_MAX_RANK];
    for (int d = 0, k = 0; d < old->rank; d++) oi[d] = d == a->axis ? a->index : ni[k++];
    return ravel(oi, old->rank, old->sizes);
}

static int64_t map_permute(const int64_t *ni, const ref *old, const void *arg)
{
    const int *perm = arg;
    int64_t oi[ST_MAX_RANK];
    for (int d = 0; d < old->rank; d++) oi[perm[d]] = ni[d];
    return ravel(oi, old->rank, old->sizes);
}

static int64_t map_unsqueeze(const int64_t *ni, const ref *old, const void *arg)
{
    int axis = *(const int *)arg;
    int64_t oi[ST_MAX_RANK];
    for (int d = 0, k = 0; d <= old->rank; d++)
        if (d != axis) oi[k++] = ni[d];
    return ravel(oi, old->rank, old->sizes);
}

/* a broadcast: a unit dim of the old shape repeated, with stride 0 */
static int64_t map_expand(const int64_t *ni, const ref *old, const void *arg)
{
    int axis = *(const int *)arg;
    int64_t oi[ST_MAX_RANK];
    memcpy(oi, ni, (size_t)old->rank * sizeof *oi);
    oi[axis] = 0;
    return ravel(oi, old->rank, old->sizes);
}

/* Can positions p (row-major over sizes) be written as base + sum idx*stride? */
static bool affine(const int64_t *p, int64_t n, int rank, const int64_t *sizes)
{
    if (n == 0) return true;
    int64_t st[ST_MAX_RANK], idx[ST_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        memset(idx, 0, sizeof idx);
        idx[d] = 1;
        st[d] = sizes[d] > 1 ? p[ravel(idx, rank, sizes)] - p[0] : 0;
    }
    for (int64_t e = 0; e < n; e++) {
        unravel(e, rank, sizes, idx);
        int64_t at = p[0];
        for (int d = 0; d < rank; d++) at += idx[d] * st[d];
        if (at != p[e]) return false;
    }
    return true;
}

/* A random shape with numel n: factors drawn from n's divisors, unit
 * dims sprinkled in. */
static int random_shape_of(test_rng *g, int64_t n, int64_t *sizes)
{
    int rank = 0;
    int want = (int)rng_range(g, 1, 6);
    if (n == 0) {
        for (; rank < want; rank++) sizes[rank] = rng_range(g, 0, 3);
        sizes[rng_range(g, 0, rank - 1)] = 0;
        return rank;
    }
    int64_t left = n;
    while (rank < ST_MAX_RANK - 1 && (left > 1 || rank < want)) {
        int64_t divs[64];
        int nd = 0;
        for (int64_t d = 1; d <= left && nd < 64; d++)
            if (left % d == 0) divs[nd++] = d;
        int64_t f = rank + 1 >= want ? left : divs[rng_range(g, 0, nd - 1)];
        if (rng_range(g, 0, 4) == 0) f = 1;
        sizes[rank++] = f;
        left /= f;
    }
    if (left > 1) sizes[rank - 1] *= left;
    return rank;
}

/* ---- the random walk over view operations ---- */

static void check_extent(const st_view *v, const ref *r)
{
    int64_t lo, hi, es = (int64_t)st_dtype_size(v->dtype);
    st_view_extent(v, &lo, &hi);
    if (r->n == 0) {
        CHECKF(lo == hi, "empty view: extent [%lld, %lld)", (long long)lo, (long long)hi);
        return;
    }
    int64_t mn = r->pos[0], mx = r->pos[0];
    for (int64_t e = 1; e < r->n; e++) {
        if (r->pos[e] < mn) mn = r->pos[e];
        if (r->pos[e] > mx) mx = r->pos[e];
    }
    CHECKF(lo == mn * es && hi == (mx + 1) * es, "extent [%lld, %lld), brute force [%lld, %lld)", (long long)lo,
           (long long)hi, (long long)(mn * es), (long long)((mx + 1) * es));
    /* contiguous: exactly the elements p0, p0 + 1, ... in order */
    bool packed = true;
    for (int64_t e = 0; e < r->n; e++) packed = packed && r->pos[e] == r->pos[0] + e;
    CHECKF(st_view_is_contiguous(v) == packed, "st_view_is_contiguous says %d, brute force %d",
           st_view_is_contiguous(v), packed);
    /* the operand a kernel gets says the same */
    static char base[1 << 16]; /* larger than any view here reaches */
    st_operand o = st_operand_of(v, base);
    CHECK(o.data == base + v->offset && o.rank == v->rank && o.dtype == v->dtype);
    CHECK(st_operand_numel(&o) == r->n && st_operand_is_contiguous(&o) == packed);
    for (int d = v->rank; d < ST_MAX_RANK; d++) CHECK(o.sizes[d] == 1);
}

static long reshape_ok, reshape_refused;

static void try_reshape(test_rng *g, st_view *v, ref *r)
{
    int64_t sizes[ST_MAX_RANK];
    int rank = random_shape_of(g, r->n, sizes);
    if (r->n == 0 && numel(rank, sizes) != 0) return;
    bool can = affine(r->pos, r->n, rank, sizes);
    st_view w = *v;
    bool did = st_view_reshape(&w, rank, sizes);
    char shape[160] = "", from[160] = "";
    for (int d = 0; d < rank; d++) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld ", (long long)sizes[d]);
    for (int d = 0; d < v->rank; d++)
        snprintf(from + strlen(from), sizeof from - strlen(from), "%lld:%lld ", (long long)v->sizes[d], (long long)v->strides[d]);
    CHECKF(did == can, "reshape of [size:stride %s] to [%s]: st_view_reshape says %d, brute force %d", from, shape,
           did, can);
    if (!did) {
        CHECK(memcmp(&w, v, sizeof w) == 0); /* a refused reshape leaves the view alone */
        reshape_refused++;
        return;
    }
    reshape_ok++;
    r->rank = rank;
    memcpy(r->sizes, sizes, sizeof sizes);
    *v = w;
    matches(v, r, "reshape");
}

static void test_random_walk(void)
{
    test_rng g = {0x5eed1001};
    for (int trial = 0; trial < 3000; trial++) {
        int rank = (int)rng_range(&g, 0, 5);
        int64_t sizes[ST_MAX_RANK];
        for (int d = 0; d < rank; d++) sizes[d] = rng_range(&g, 0, 19) == 0 ? 0 : rng_range(&g, 1, 4);
        st_view v;
        st_view_init(&v, ST_I32, rank, sizes);
        int64_t pad = rng_range(&g, 0, 7);
        v.offset = pad * 4;
        ref r = {rank, {0}, numel(rank, sizes), NULL};
        memcpy(r.sizes, sizes, sizeof sizes);
        r.pos = malloc((size_t)(r.n ? r.n : 1) * sizeof *r.pos);
        for (int64_t e = 0; e < r.n; e++) r.pos[e] = pad + e;
        matches(&v, &r, "init");
        check_extent(&v, &r);

        for (int step = 0; step < 14; step++) {
            int op = (int)rng_range(&g, 0, 6);
            const char *what = "";
            if (op == 0 && v.rank > 0) {
                slice_arg a = {(int)rng_range(&g, 0, v.rank - 1), 0, 0};
                int64_t s = v.sizes[a.axis], count;
                a.step = rng_range(&g, 1, 3) * (rng_range(&g, 0, 1) ? 1 : -1);
                if (s == 0) {
                    count = 0;
                } else {
                    a.start = rng_range(&g, 0, s - 1);
                    int64_t max = a.step > 0 ? (s - 1 - a.start) / a.step + 1 : a.start / -a.step + 1;
                    count = rng_range(&g, 0, 9) == 0 ? 0 : rng_range(&g, 1, max);
                }
                st_view_slice(&v, a.axis, a.start, a.step, count);
                int64_t ns[ST_MAX_RANK];
                memcpy(ns, r.sizes, sizeof ns);
                ns[a.axis] = count;
                ref_apply(&r, r.rank, ns, map_slice, &a);
                what = a.step < 0 ? "slice (negative step)" : "slice";
            } else if (op == 1 && v.rank > 0) {
                select_arg a = {(int)rng_range(&g, 0, v.rank - 1), 0};
                if (v.sizes[a.axis] == 0) continue;
                a.index = rng_range(&g, 0, v.sizes[a.axis] - 1);
                st_view_select(&v, a.axis, a.index);
                int64_t ns[ST_MAX_RANK];
                for (int d = 0, k = 0; d < r.rank; d++)
                    if (d != a.axis) ns[k++] = r.sizes[d];
                ref_apply(&r, r.rank - 1, ns, map_select, &a);
                what = "select";
            } else if (op == 2) {
                int perm[ST_MAX_RANK];
                for (int d = 0; d < v.rank; d++) perm[d] = d;
                for (int d = v.rank - 1; d > 0; d--) {
                    int j = (int)rng_range(&g, 0, d), t = perm[d];
                    perm[d] = perm[j];
                    perm[j] = t;
                }
                st_view_permute(&v, perm);
                int64_t ns[ST_MAX_RANK];
                for (int d = 0; d < r.rank; d++) ns[d] = r.sizes[perm[d]];
                ref_apply(&r, r.rank, ns, map_permute, perm);
                what = "permute";
            } else if (op == 3 && v.rank < 6) {
                int axis = (int)rng_range(&g, 0, v.rank);
                st_view_unsqueeze(&v, axis);
                int64_t ns[ST_MAX_RANK];
                for (int d = 0, k = 0; d <= r.rank; d++) ns[d] = d == axis ? 1 : r.sizes[k++];
                ref_apply(&r, r.rank + 1, ns, map_unsqueeze, &axis);
                what = "unsqueeze";
            } else if (op == 4) {
                int units[ST_MAX_RANK], nu = 0;
                for (int d = 0; d < v.rank; d++)
                    if (v.sizes[d] == 1) units[nu++] = d;
                if (!nu) continue;
                select_arg a = {units[rng_range(&g, 0, nu - 1)], 0};
                st_view_squeeze(&v, a.axis);
                int64_t ns[ST_MAX_RANK];
                for (int d = 0, k = 0; d < r.rank; d++)
                    if (d != a.axis) ns[k++] = r.sizes[d];
                ref_apply(&r, r.rank - 1, ns, map_select, &a);
                what = "squeeze";
            } else if (op == 5) {
                /* a broadcast, as Expand's view rule makes one */
                int units[ST_MAX_RANK], nu = 0;
                for (int d = 0; d < v.rank; d++)
                    if (v.sizes[d] == 1) units[nu++] = d;
                if (!nu) continue;
                int axis = units[rng_range(&g, 0, nu - 1)];
                v.sizes[axis] = rng_range(&g, 2, 3);
                v.strides[axis] = 0;
                ref_apply(&r, r.rank, v.sizes, map_expand, &axis);
                what = "broadcast";
            } else if (op == 6) {
                try_reshape(&g, &v, &r);
                check_extent(&v, &r);
                continue;
            } else {
                continue;
            }
            if (!matches(&v, &r, what)) break;
            check_extent(&v, &r);
        }
        free(r.pos);
    }
    /* the walk must exercise both outcomes of reshape */
    CHECKF(reshape_ok > 1000 && reshape_refused > 100, "reshapes: %ld done, %ld refused", reshape_ok, reshape_refused);
}

/* ---- named cases ---- */

static void test_named(void)
{
    /* reshape of a transposed 2-D tensor into 1-D needs a copy */
    st_view v;
    st_view_init(&v, ST_F32, 2, (int64_t[]){3, 4});
    st_view_permute(&v, (int[]){1, 0});
    st_view w = v;
    CHECK(!st_view_reshape(&w, 1, (int64_t[]){12}));
    CHECK(memcmp(&w, &v, sizeof v) == 0);
    /* ... but splitting one of its dims does not */
    w = v;
    CHECK(st_view_reshape(&w, 3, (int64_t[]){2, 2, 3}));
    CHECK(w.strides[0] == 2 && w.strides[1] == 1 && w.strides[2] == 4);
    /* a contiguous view reshapes to anything of the same numel */
    st_view_init(&v, ST_F32, 3, (int64_t[]){2, 3, 4});
    w = v;
    CHECK(st_view_reshape(&w, 2, (int64_t[]){6, 4}));
    CHECK(w.strides[0] == 4 && w.strides[1] == 1);
    CHECK(!st_view_reshape(&w, 2, (int64_t[]){5, 5})); /* numel differs */
    /* every other row of a matrix: rows can merge with nothing, columns split */
    st_view_init(&v, ST_F32, 2, (int64_t[]){6, 4});
    st_view_slice(&v, 0, 0, 2, 3);
    w = v;
    CHECK(st_view_reshape(&w, 3, (int64_t[]){3, 2, 2}));
    CHECK(w.strides[0] == 8 && w.strides[1] == 2 && w.strides[2] == 1);
    w = v;
    CHECK(!st_view_reshape(&w, 1, (int64_t[]){12}));

    /* a reversed slice: offset moves to the last element, stride negates */
    st_view_init(&v, ST_F64, 1, (int64_t[]){10});
    st_view_slice(&v, 0, 9, -2, 5);
    CHECK(v.offset == 72 && v.strides[0] == -2 && v.sizes[0] == 5);
    int64_t lo, hi;
    st_view_extent(&v, &lo, &hi);
    CHECK(lo == 8 && hi == 80); /* elements 9, 7, 5, 3, 1 */
    /* empty views touch nothing, wherever they point */
    st_view_slice(&v, 0, 3, 1, 0);
    st_view_extent(&v, &lo, &hi);
    CHECK(lo == hi);
    st_view_init(&v, ST_F32, 3, (int64_t[]){4, 0, 5});
    st_view_extent(&v, &lo, &hi);
    CHECK(lo == hi);
    /* a scalar */
    st_view_init(&v, ST_I64, 0, NULL);
    v.offset = 16;
    st_view_extent(&v, &lo, &hi);
    CHECK(lo == 16 && hi == 24);
    CHECK(st_view_numel(&v) == 1);
    /* a broadcast touches one element */
    st_view_init(&v, ST_F32, 2, (int64_t[]){1, 3});
    v.sizes[0] = 1000;
    v.strides[0] = 0;
    st_view_extent(&v, &lo, &hi);
    CHECK(lo == 0 && hi == 12);
    /* unsqueeze at the end of a packed view keeps it packed */
    st_view_init(&v, ST_F32, 2, (int64_t[]){2, 3});
    st_view_unsqueeze(&v, 2);
    CHECK(st_view_is_contiguous(&v) && v.rank == 3 && v.sizes[2] == 1);
    st_view_unsqueeze(&v, 0);
    CHECK(st_view_is_contiguous(&v) && v.rank == 4 && v.sizes[0] == 1);
}

/* ---- the iterator ---- */

static void test_iter(void)
{
    test_rng g = {0x5eed1002};
    long rows_seen = 0;
    for (int trial = 0; trial < 4000; trial++) {
        int rank = (int)rng_range(&g, 0, 6), nops = (int)rng_range(&g, 1, ST_ITER_MAX);
        int64_t sizes[ST_MAX_RANK], st[ST_ITER_MAX][ST_MAX_RANK];
        for (int d = 0; d < rank; d++) sizes[d] = rng_range(&g, 0, 29) == 0 ? 0 : rng_range(&g, 1, 4);
        int kind = (int)rng_range(&g, 0, 2);
        for (int k = 0; k < nops; k++) {
            st_strides_contiguous(rank, sizes, st[k]);
            for (int d = 0; d < rank; d++) {
                if (kind == 0) st[k][d] = rng_range(&g, -6, 6);        /* anything, zero included */
                else if (kind == 1 && rng_range(&g, 0, 3) == 0) st[k][d] *= -1; /* reversed dims */
            }
        }
        const int64_t *sp[ST_ITER_MAX] = {st[0], st[1], st[2], st[3]};
        int64_t n = numel(rank, sizes);

        /* brute force: every element's offset in every operand, row-major */
        int64_t *want = malloc((size_t)(n ? n : 1) * nops * sizeof *want);
        int64_t idx[ST_MAX_RANK];
        for (int64_t e = 0; e < n; e++) {
            unravel(e, rank, sizes, idx);
            for (int k = 0; k < nops; k++) {
                int64_t o = 0;
                for (int d = 0; d < rank; d++) o += idx[d] * st[k][d];
                want[e * nops + k] = o;
            }
        }

        st_iter it;
        bool more = st_iter_init(&it, rank, sizes, nops, sp);
        CHECK(more == (n > 0));
        int64_t rows = st_iter_rows(&it);
        CHECK(n == 0 ? rows == 0 : rows * it.inner == n);
        /* fully coalesced: no unit dims, no neighbours that could merge */
        if (n > 0) {
            bool all_packed = kind == 2 || rank == 0;
            for (int d = 0; d < it.rank; d++) CHECK(it.sizes[d] > 1 || it.rank == 1);
            for (int d = 1; d < it.rank; d++) {
                bool mergeable = true;
                for (int k = 0; k < nops; k++)
                    if (it.strides[k][d - 1] != it.strides[k][d] * it.sizes[d]) mergeable = false;
                CHECKF(!mergeable, "dims %d and %d were not coalesced", d - 1, d);
            }
            if (all_packed) CHECKF(it.rank == 1 && it.inner == n, "a packed tensor is not one row (rank %d)", it.rank);
        }
        int64_t *row_off = malloc((size_t)(rows ? rows : 1) * nops * sizeof *row_off);
        int64_t e = 0, r = 0;
        bool ok = true;
        for (; more; more = st_iter_next(&it), r++) {
            if (r >= rows) { ok = false; break; }
            for (int k = 0; k < nops; k++) row_off[r * nops + k] = it.off[k];
            for (int64_t i = 0; i < it.inner; i++, e++)
                for (int k = 0; k < nops; k++)
                    if (e >= n || want[e * nops + k] != it.off[k] + i * it.step[k]) ok = false;
        }
        CHECKF(ok && e == n && r == rows, "trial %d: iteration differs from enumeration", trial);
        rows_seen += r;

        /* seek(a), then next() b - a - 1 times, covers rows [a, b) */
        if (ok && rows > 0) {
            for (int t = 0; t < 4; t++) {
                int64_t a = rng_range(&g, 0, rows - 1), b = rng_range(&g, a + 1, rows);
                st_iter_init(&it, rank, sizes, nops, sp);
                st_iter_seek(&it, a);
                bool good = true;
                for (int64_t row = a; row < b; row++) {
                    for (int k = 0; k < nops; k++) good = good && it.off[k] == row_off[row * nops + k];
                    bool nx = st_iter_next(&it);
                    good = good && nx == (row + 1 < rows);
                }
                CHECKF(good, "trial %d: seek(%lld) then next() to row %lld", trial, (long long)a, (long long)b);
            }
        }
        free(row_off);
        free(want);
    }
    CHECK(rows_seen > 10000);
}

/* ---- strided copies with conversion ---- */

static const st_dtype COPY_TYPES[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I32, ST_I64, ST_U8, ST_I8, ST_BOOL, ST_U16};

/* Random strides over sizes: packed in a random dim order, with gaps, some
 * dims reversed and (if allowed) some broadcast.  Returns the element
 * offset of [0,...,0] that keeps every position >= 0, and the span. */
static int64_t random_layout(test_rng *g, int rank, const int64_t *sizes, bool broadcast, int64_t *strides,
                             int64_t *span)
{
    int perm[ST_MAX_RANK];
    for (int d = 0; d < rank; d++) perm[d] = d;
    for (int d = rank - 1; d > 0; d--) {
        int j = (int)rng_range(g, 0, d), t = perm[d];
        perm[d] = perm[j];
        perm[j] = t;
    }
    int64_t s = rng_range(g, 1, 2);
    for (int i = rank - 1; i >= 0; i--) {
        int d = perm[i];
        strides[d] = s;
        s *= sizes[d] + rng_range(g, 0, 1);
    }
    int64_t base = 0, mx = 0;
    for (int d = 0; d < rank; d++) {
        if (broadcast && rng_range(g, 0, 4) == 0) strides[d] = 0;
        if (rng_range(g, 0, 2) == 0) strides[d] = -strides[d];
        int64_t ext = (sizes[d] > 0 ? sizes[d] - 1 : 0) * strides[d];
        if (ext < 0) base -= ext;
        else mx += ext;
    }
    *span = base + mx + 1;
    return base;
}

static void test_copy_strided(void)
{
    test_rng g = {0x5eed1003};
    int nt = (int)(sizeof COPY_TYPES / sizeof *COPY_TYPES);
    for (int trial = 0; trial < 3000; trial++) {
        st_dtype dt = COPY_TYPES[rng_range(&g, 0, nt - 1)];
        st_dtype stp = rng_range(&g, 0, 3) == 0 ? dt : COPY_TYPES[rng_range(&g, 0, nt - 1)];
        int rank = (int)rng_range(&g, 0, 5);
        int64_t sizes[ST_MAX_RANK];
        for (int d = 0; d < rank; d++) sizes[d] = rng_range(&g, 0, 24) == 0 ? 0 : rng_range(&g, 1, 4);
        bool packed = rng_range(&g, 0, 3) == 0;
        st_view sv, dv;
        st_view_init(&sv, stp, rank, sizes);
        st_view_init(&dv, dt, rank, sizes);
        int64_t sspan = numel(rank, sizes), dspan = sspan, sbase = 0, dbase = 0;
        if (!packed) {
            sbase = random_layout(&g, rank, sizes, true, sv.strides, &sspan);
            dbase = random_layout(&g, rank, sizes, false, dv.strides, &dspan);
        }
        if (sspan < 1) sspan = 1;
        if (dspan < 1) dspan = 1;
        size_t ses = st_dtype_size(stp), des = st_dtype_size(dt);
        sv.offset = sbase * (int64_t)ses;
        dv.offset = dbase * (int64_t)des;
        unsigned char *src = malloc((size_t)sspan * ses), *dst = malloc((size_t)dspan * des),
                      *want = malloc((size_t)dspan * des);
        /* small integers, exact in every dtype; bool sources 0/1 */
        for (int64_t i = 0; i < sspan; i++) {
            int64_t val = stp == ST_BOOL ? rng_range(&g, 0, 1) : rng_range(&g, 0, 100);
            st_store_i64(stp, src + i * (int64_t)ses, val);
        }
        memset(dst, 0xcd, (size_t)dspan * des); /* poison: untouched bytes must stay so */
        memcpy(want, dst, (size_t)dspan * des);
        int64_t n, n2;
        int64_t *sp = enumerate(&sv, &n), *dp = enumerate(&dv, &n2);
        for (int64_t e = 0; e < n; e++)
            st_convert(dt, want + dp[e] * (int64_t)des, stp, src + sp[e] * (int64_t)ses, 1);
        st_operand so = st_operand_of(&sv, src), dop = st_operand_of(&dv, dst);
        st_copy_strided(&dop, &so);
        CHECKF(memcmp(dst, want, (size_t)dspan * des) == 0, "trial %d: copy %s -> %s, rank %d, %s", trial,
               st_dtype_name(stp), st_dtype_name(dt), rank, packed ? "packed" : "strided");
        /* a float result is also the exact integer it started as */
        if (st_dtype_is_float(dt) && stp != ST_BOOL)
            for (int64_t e = 0; e < n; e++)
                CHECK(st_load_f64(dt, dst + dp[e] * (int64_t)des) == st_load_f64(stp, src + sp[e] * (int64_t)ses));
        free(sp);
        free(dp);
        free(src);
        free(dst);
        free(want);
    }
    /* a conversion the loop cannot make exact: f32 -> f16 rounds */
    float f[4] = {1.0f + 0x1p-11f, 65520.0f, -0.0f, 0x1p-25f};
    uint16_t h[4] = {0};
    st_view sv, dv;
    st_view_init(&sv, ST_F32, 1, (int64_t[]){4});
    st_view_init(&dv, ST_F16, 1, (int64_t[]){4});
    st_view_slice(&dv, 0, 3, -1, 4); /* reversed destination */
    st_operand so = st_operand_of(&sv, f), dop = st_operand_of(&dv, h);
    st_copy_strided(&dop, &so);
    CHECK(h[3] == 0x3c00 && h[2] == 0x7c00 && h[1] == 0x8000 && h[0] == 0x0000);
}

/* st_view_runs against the byte set of every element, on random views
 * (negative, zero and overlapping strides, unit and empty dims, 1-, 2-
 * and 4-byte dtypes): the runs are disjoint, increasing, not adjacent,
 * and cover exactly the touched bytes; with too many runs it returns 0 and
 * the brute force agrees there are more than max. */
static void test_runs(void)
{
    test_rng r = {0x5eed7u};
    static const st_dtype dts[] = {ST_U8, ST_F16, ST_F32};
    long exact = 0, over = 0;
    for (int t = 0; t < 20000; t++) {
        st_view v;
        int rank = (int)rng_range(&r, 0, 4);
        int64_t sizes[ST_MAX_RANK];
        for (int d = 0; d < rank; d++) sizes[d] = rng_range(&r, 0, 9) == 0 ? 0 : rng_range(&r, 1, 5);
        st_view_init(&v, dts[rng_range(&r, 0, 2)], rank, sizes);
        int64_t es = (int64_t)st_dtype_size(v.dtype), span = 0;
        for (int d = 0; d < rank; d++) {
            int k = (int)rng_range(&r, 0, 3);
            if (k == 0) v.strides[d] = rng_range(&r, -12, 12);    /* anything, overlaps included */
            else if (k == 1) v.strides[d] = 0;                   /* broadcast */
            /* else: contiguous */
            span += (sizes[d] > 0 ? sizes[d] - 1 : 0) * (v.strides[d] < 0 ? -v.strides[d] : v.strides[d]);
        }
        v.offset = (span + rng_range(&r, 0, 3)) * es;          /* every element at a byte >= 0 */
        int64_t n, *el = enumerate(&v, &n);
        int64_t bytes = v.offset + (span + 8) * es;
        unsigned char *want = calloc((size_t)bytes + 1, 1);
        for (int64_t e = 0; e < n; e++)
            for (int64_t b = 0; b < es; b++) want[el[e] * es + b] = 1;
        int64_t true_runs = 0;
        for (int64_t b = 0; b < bytes; b++) true_runs += want[b] && (b == 0 || !want[b - 1]);
        int max = (int)rng_range(&r, 1, 40);
        st_range runs[40];
        int m = st_view_runs(&v, max, runs);
        if (m == 0) {
            /* refused: empty, or more unmerged runs than max, and those
             * are never more than the elements */
            CHECKF(n == 0 || n > max, "t=%d: refused %lld elements with max %d", t, (long long)n, max);
            over++;
        } else {
            CHECKF(m == true_runs, "t=%d: %d runs, want %lld", t, m, (long long)true_runs);
            unsigned char *got = calloc((size_t)bytes + 1, 1);
            for (int k = 0; k < m; k++) {
                CHECKF(runs[k].lo < runs[k].hi && runs[k].lo >= 0 && runs[k].hi <= bytes, "t=%d run %d", t, k);
                CHECKF(k == 0 || runs[k].lo > runs[k - 1].hi, "t=%d: runs %d, %d not disjoint", t, k - 1, k);
                for (int64_t b = runs[k].lo; b < runs[k].hi && b >= 0 && b < bytes; b++) got[b] = 1;
            }
            CHECKF(!memcmp(got, want, (size_t)bytes), "t=%d: bytes differ", t);
            free(got);
            exact++;
        }
        free(want);
        free(el);
    }
    /* the concat halves the optimisation is for: [5, 4] and [5, 5] of [5, 9] */
    st_view a, b;
    st_view_init(&a, ST_F32, 2, (int64_t[]){5, 4});
    st_view_init(&b, ST_F32, 2, (int64_t[]){5, 5});
    a.strides[0] = b.strides[0] = 9;
    b.offset = 16;
    st_range ra[8], rb[8];
    CHECK(st_view_runs(&a, 8, ra) == 5 && st_view_runs(&b, 8, rb) == 5);
    for (int i = 0; i < 5; i++) CHECK(ra[i].hi == rb[i].lo && (i == 4 || rb[i].hi == ra[i + 1].lo));
    printf("runs: %ld exact, %ld refused (over max or empty)\n", exact, over);
}

int main(void)
{
    test_runs();
    test_named();
    test_random_walk();
    test_iter();
    test_copy_strided();
    printf("reshapes: %ld done, %ld refused\n", reshape_ok, reshape_refused);
    return check_exit("test_view");
}
