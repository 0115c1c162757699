/*
 * test_lower_ew.c — the elementwise lowering (src/ops/lower_elementwise.c)
 * against a brute-force reference.
 *
 * Why a unit test: CUDA's walk is filled from this struct and cannot run
 * here, and the CPU, OpenCL and Vulkan kernels take their geometry and
 * fast-path choice from it, so a wrong merge or class would be wrong on
 * every backend at once, where the kernel sweep (which compares backends
 * with each other) could miss it.
 *
 * Each case draws an output shape (ranks 0 to 8, now and then an empty
 * dim) in a random layout (dims in a random memory order, padded, at an
 * offset; now and then dense) and up to three inputs broadcast to it
 * (numpy: fewer dims, size-1 dims with any stride), each in its own
 * layout or in the output's, some with an extra stride-0 dim of their own
 * (an Expand view).  Strides are never negative.  The lowered walk is
 * then checked against the reference, which knows nothing of orders or
 * merges: every output element, by its row-major index, and the element
 * offset numpy's broadcasting gives each input there.
 *   - the walk visits every output element once, with exactly those input
 *     offsets (and an f64 computation through the walk equals the same
 *     computation done by index);
 *   - its dims are ordered by the output's strides, largest first, none of
 *     size 1 (but for a single element), and no two neighbours could merge;
 *   - its class is the one the reference finds from the offsets alone
 *     (dense output; each input equal to it, a constant, or repeating a
 *     row of some length);
 *   - the st_view entry point and the CPU iterator agree with it.
 * A corrupted walk must fail the same checks, so they can fail.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/view.h"
#include "ops/lower_elementwise.h"

static test_rng rng = {20270411};

#define MAXN 1200      /* elements of an output */
#define SPAN 40000     /* element offsets an operand may reach */

typedef struct tcase {
    int nops;                               /* output + inputs */
    int rank[ST_LEW_OPS];
    int64_t sz[ST_LEW_OPS][ST_MAX_RANK], st[ST_LEW_OPS][ST_MAX_RANK], off[ST_LEW_OPS];
} tcase;

/* A layout of dims sz[0..rank): the dims in the memory order `order`
 * (outermost first), each padded by pad[d] elements. */
static void place(int rank, const int64_t *sz, const int *order, const int64_t *pad, int64_t *st)
{
    int64_t step = 1;
    for (int q = rank - 1; q >= 0; q--) {
        int d = order[q];
        st[d] = step;
        step *= sz[d] + pad[d];
    }
}

static void shuffle(int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_range(&rng, 0, i), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static int64_t numel(int rank, const int64_t *sz)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sz[d];
    return n;
}

/* The largest element offset operand k reaches. */
static int64_t reach(const tcase *c, int k)
{
    int64_t o = c->off[k];
    for (int d = 0; d < c->rank[k]; d++)
        if (c->sz[k][d] > 0) o += (c->sz[k][d] - 1) * c->st[k][d];
    return o;
}

static void draw_once(tcase *c)
{
    memset(c, 0, sizeof *c);
    int yr = (int)rng_range(&rng, 0, ST_MAX_RANK);
    int64_t *y = c->sz[0];
    for (int d = 0; d < yr; d++) y[d] = rng_range(&rng, 0, 3) == 0 ? 1 : rng_range(&rng, 2, 5);
    while (numel(yr, y) > MAXN) y[rng_range(&rng, 0, yr - 1)] = 1;
    if (yr && rng_range(&rng, 0, 40) == 0) y[rng_range(&rng, 0, yr - 1)] = 0;
    c->rank[0] = yr;
    int yorder[ST_MAX_RANK];
    int64_t ypad[ST_MAX_RANK];
    bool ydense = rng_range(&rng, 0, 1);
    for (int d = 0; d < yr; d++) {
        yorder[d] = d;
        ypad[d] = ydense ? 0 : rng_range(&rng, 0, 2);
    }
    if (rng_range(&rng, 0, 2) == 0) shuffle(yorder, yr);
    place(yr, y, yorder, ypad, c->st[0]);
    c->off[0] = rng_range(&rng, 0, 30);
    c->nops = 1 + (int)rng_range(&rng, 0, ST_LEW_OPS - 1);
    for (int k = 1; k < c->nops; k++) {
        int r = rng_range(&rng, 0, 3) == 0 ? (int)rng_range(&rng, 0, yr) : yr;
        int lead = yr - r, kind = (int)rng_range(&rng, 0, 5);
        c->rank[k] = r;
        for (int d = 0; d < r; d++) {
            int64_t o = y[lead + d];
            c->sz[k][d] = kind <= 2 ? o : (rng_range(&rng, 0, 2) == 0 ? 1 : o);
        }
        if (kind == 2 && r > 0) { /* a row: a trailing run kept, the leading dims 1 */
            int ones = (int)rng_range(&rng, 1, r);
            for (int d = 0; d < ones; d++) c->sz[k][d] = 1;
        }
        if (kind == 3) /* a single element */
            for (int d = 0; d < r; d++) c->sz[k][d] = 1;
        int order[ST_MAX_RANK];
        int64_t pad[ST_MAX_RANK];
        for (int d = 0; d < r; d++) {
            order[d] = d;
            pad[d] = rng_range(&rng, 0, 2);
        }
        if (kind <= 2 && rng_range(&rng, 0, 2)) {
            /* the output's layout of its trailing dims: an input dense in
             * the output's order (kind 0), or a row of it (kind 2) */
            for (int q = 0, at = 0; q < yr; q++)
                if (yorder[q] >= lead) order[at++] = yorder[q] - lead;
            for (int d = 0; d < r; d++) pad[d] = ypad[lead + d];
        } else if (rng_range(&rng, 0, 1)) {
            shuffle(order, r);
        } else if (rng_range(&rng, 0, 1)) {
            for (int d = 0; d < r; d++) pad[d] = 0;
        }
        place(r, c->sz[k], order, pad, c->st[k]);
        for (int d = 0; d < r; d++) {
            if (c->sz[k][d] == 1) c->st[k][d] = rng_range(&rng, 0, 50); /* read nowhere: any stride */
            else if (kind == 4 && rng_range(&rng, 0, 3) == 0) c->st[k][d] = 0; /* an Expand view's own broadcast */
        }
        c->off[k] = rng_range(&rng, 0, 30);
    }
}

/* A case whose operands stay inside SPAN elements. */
static void draw(tcase *c)
{
    for (;;) {
        draw_once(c);
        bool fits = true;
        for (int k = 0; k < c->nops; k++) fits &= reach(c, k) < SPAN;
        if (fits) return;
    }
}

/* The reference: the offset of every output element (row-major order)
 * in each operand, numpy broadcasting for the inputs. */
static int64_t reference(const tcase *c, int64_t (*off)[ST_LEW_OPS])
{
    int yr = c->rank[0];
    int64_t n = numel(yr, c->sz[0]), idx[ST_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
        for (int k = 0; k < c->nops; k++) {
            int lead = yr - c->rank[k];
            int64_t o = c->off[k];
            for (int d = 0; d < c->rank[k]; d++)
                if (c->sz[k][d] != 1) o += idx[lead + d] * c->st[k][d];
            off[e][k] = o;
        }
        for (int d = yr - 1; d >= 0; d--) {
            if (++idx[d] < c->sz[0][d]) break;
            idx[d] = 0;
        }
    }
    return n;
}

/* The class the reference offsets put the case in (see st_lew_class). */
static st_lew_class ref_class(const tcase *c, int64_t (*off)[ST_LEW_OPS], int64_t n, unsigned *bcast)
{
    *bcast = 0;
    if (n == 0) return ST_LEW_GENERAL;
    if (n == 1) return ST_LEW_CONTIGUOUS;
    int64_t base[ST_LEW_OPS];
    for (int k = 0; k < c->nops; k++) {
        base[k] = off[0][k];
        for (int64_t e = 1; e < n; e++)
            if (off[e][k] < base[k]) base[k] = off[e][k];
    }
    /* the output dense: its offsets are base .. base + n - 1 */
    static bool seen[MAXN];
    memset(seen, 0, sizeof seen);
    for (int64_t e = 0; e < n; e++) {
        int64_t r = off[e][0] - base[0];
        if (r >= n || seen[r]) return ST_LEW_GENERAL;
        seen[r] = true;
    }
    unsigned same = 0, cons = 0;
    for (int k = 1; k < c->nops; k++) {
        bool eq = true, cst = true;
        for (int64_t e = 0; e < n; e++) {
            eq &= off[e][k] - base[k] == off[e][0] - base[0];
            cst &= off[e][k] == off[0][k];
        }
        same |= eq ? 1u << k : 0;
        cons |= cst ? 1u << k : 0;
    }
    unsigned all = ((1u << c->nops) - 1) & ~1u;
    if (same == all) return ST_LEW_CONTIGUOUS;
    if ((same | cons) == all) {
        *bcast = cons & ~same;
        return ST_LEW_SCALAR_BROADCAST;
    }
    /* a row of len elements repeated: offset = the output's modulo len */
    for (int64_t len = 2; len < n; len++) {
        if (n % len) continue;
        unsigned row = 0;
        for (int k = 1; k < c->nops; k++) {
            bool rep = true;
            for (int64_t e = 0; e < n && rep; e++) rep = off[e][k] - base[k] == (off[e][0] - base[0]) % len;
            row |= rep ? 1u << k : 0;
        }
        if ((same | row) == all) {
            *bcast = row & ~same;
            return ST_LEW_ROW_BROADCAST;
        }
    }
    return ST_LEW_GENERAL;
}

static double value(int k, int64_t o) { return sin(0.37 * (double)o + k) * (k + 1); }

static double f(const double *x, int nin)
{
    double v = 0.5;
    for (int k = 0; k < nin; k++) v = v * 1.5 - x[k];
    return v;
}

/* Every check of one case on walk w; the number that failed. */
static long verify(const tcase *c, const st_lower_ew *w, bool quiet)
{
    long before = check_failures;
    static int64_t ref[MAXN][ST_LEW_OPS];
    static int slot[SPAN];
    static bool hit[MAXN];
    static double ybuf[SPAN], yref[SPAN];
    int64_t n = reference(c, ref);
#define V(expr, ...)                                                                                                   \
    do {                                                                                                               \
        if (quiet) {                                                                                                   \
            if (!(expr)) check_failures++;                                                                             \
        } else {                                                                                                       \
            CHECKF(expr, __VA_ARGS__);                                                                                 \
        }                                                                                                              \
    } while (0)
    V(w->n == n, "n %lld, the output has %lld", (long long)w->n, (long long)n);
    V(w->nops == c->nops && w->rank >= 1 && w->rank <= ST_MAX_RANK, "nops %d rank %d", w->nops, w->rank);
    int64_t prod = 1;
    for (int d = 0; d < w->rank; d++) prod *= w->sizes[d];
    V(prod == w->n, "sizes multiply to %lld, n is %lld", (long long)prod, (long long)w->n);
    if (check_failures != before) return check_failures - before;
    /* structure: ordered, no unit dims, maximal merge */
    for (int d = 0; d < w->rank && n > 1; d++) {
        V(w->sizes[d] > 1 || n == 0, "dim %d of size %lld", d, (long long)w->sizes[d]);
        if (d + 1 < w->rank) {
            V(w->strides[0][d] >= w->strides[0][d + 1], "dims %d, %d out of the output's order", d, d + 1);
            bool merge = true;
            for (int k = 0; k < w->nops; k++) merge &= w->strides[k][d] == w->strides[k][d + 1] * w->sizes[d + 1];
            V(!merge, "dims %d, %d could merge", d, d + 1);
        }
    }
    /* the mapping, and an f64 computation through it */
    for (int i = 0; i < SPAN; i++) slot[i] = -1;
    for (int64_t e = 0; e < n; e++) slot[ref[e][0]] = (int)e;
    memset(hit, 0, sizeof hit);
    for (int64_t i = 0; i < w->n; i++) {
        int64_t r = i, o[ST_LEW_OPS];
        for (int k = 0; k < w->nops; k++) o[k] = c->off[k];
        for (int d = w->rank - 1; d >= 0; d--) {
            int64_t q = r % w->sizes[d];
            r /= w->sizes[d];
            for (int k = 0; k < w->nops; k++) o[k] += q * w->strides[k][d];
        }
        bool inside = o[0] >= 0 && o[0] < SPAN && slot[o[0]] >= 0;
        V(inside, "walk element %lld writes offset %lld, no output element's", (long long)i, (long long)o[0]);
        if (!inside) break;
        int64_t e = slot[o[0]];
        V(!hit[e], "output element %lld visited twice", (long long)e);
        hit[e] = true;
        double x[ST_LEW_OPS];
        for (int k = 1; k < w->nops; k++) {
            V(o[k] == ref[e][k], "output element %lld: operand %d at %lld, numpy's %lld", (long long)e, k, (long long)o[k],
              (long long)ref[e][k]);
            x[k - 1] = value(k, o[k]);
        }
        ybuf[o[0]] = f(x, w->nops - 1);
    }
    for (int64_t e = 0; e < n; e++) {
        double x[ST_LEW_OPS];
        for (int k = 1; k < c->nops; k++) x[k - 1] = value(k, ref[e][k]);
        yref[ref[e][0]] = f(x, c->nops - 1);
        V(hit[e] && ybuf[ref[e][0]] == yref[ref[e][0]], "output element %lld: %g, the reference's %g", (long long)e,
          hit[e] ? ybuf[ref[e][0]] : NAN, yref[ref[e][0]]);
    }
    unsigned bc;
    st_lew_class cls = ref_class(c, ref, n, &bc);
    V(w->cls == cls && w->bcast == bc, "class %d (bcast %#x), the reference's %d (%#x)", (int)w->cls, w->bcast, (int)cls, bc);
#undef V
    return check_failures - before;
}

static void operands(const tcase *c, st_operand *o)
{
    for (int k = 0; k < c->nops; k++) {
        memset(&o[k], 0, sizeof o[k]);
        o[k].rank = c->rank[k];
        o[k].dtype = ST_F32;
        memcpy(o[k].sizes, c->sz[k], sizeof o[k].sizes);
        memcpy(o[k].strides, c->st[k], sizeof o[k].strides);
    }
}

int main(void)
{
    long classes[4] = {0}, corrupt_caught = 0, corrupt_tried = 0;
    for (int t = 0; t < 30000; t++) {
        tcase c;
        draw(&c);
        st_operand o[ST_LEW_OPS];
        operands(&c, o);
        const st_operand *in[ST_LEW_OPS] = {&o[1], &o[2], &o[3]};
        st_lower_ew w;
        memset(&w, 0x5a, sizeof w); /* poisoned: every field must be written */
        st_lower_ew_operands(&w, &o[0], c.nops - 1, in);
        long failed = verify(&c, &w, false);
        if (failed && check_print_ok()) fprintf(stderr, "  (case %d: output rank %d, %d operands)\n", t, c.rank[0], c.nops);
        classes[w.cls & 3]++;

        /* the view entry point lowers the same */
        st_view v[ST_LEW_OPS];
        for (int k = 0; k < c.nops; k++) {
            memset(&v[k], 0, sizeof v[k]);
            v[k].dtype = ST_F32;
            v[k].rank = c.rank[k];
            memcpy(v[k].sizes, c.sz[k], sizeof v[k].sizes);
            memcpy(v[k].strides, c.st[k], sizeof v[k].strides);
        }
        const st_view *vin[ST_LEW_OPS] = {&v[1], &v[2], &v[3]};
        st_lower_ew wv;
        memset(&wv, 0x33, sizeof wv);
        st_lower_ew_views(&wv, &v[0], c.nops - 1, vin);
        CHECKF(memcmp(&w, &wv, sizeof w) == 0, "case %d: views lower otherwise", t);

        /* the CPU's iterator over it walks the same elements */
        st_iter it;
        int64_t count = 0;
        for (bool more = st_lower_ew_iter(&w, &it); more; more = st_iter_next(&it)) count += it.inner;
        CHECKF(count == w.n && it.rank == w.rank, "case %d: the iterator walks %lld elements in %d dims, the walk %lld in %d", t,
               (long long)count, it.rank, (long long)w.n, w.rank);

        /* a walk one stride or size off fails the checks */
        if (w.n > 1) {
            st_lower_ew bad = w;
            int d = (int)rng_range(&rng, 0, bad.rank - 1), k = (int)rng_range(&rng, 0, bad.nops - 1);
            if (rng_range(&rng, 0, 1)) bad.strides[k][d] += 1;
            else if (bad.rank > 1) bad.sizes[d] += 1;
            else bad.n += 1;
            corrupt_tried++;
            long saved = check_failures;
            corrupt_caught += verify(&c, &bad, true) > 0;
            check_failures = saved; /* expected: caught, not a failure of the lowering */
        }
    }
    CHECKF(corrupt_caught == corrupt_tried, "only %ld of %ld corrupted walks were caught", corrupt_caught, corrupt_tried);
    /* the draw reaches every class often enough to mean something */
    for (int k = 0; k < 4; k++) CHECKF(classes[k] > 300, "class %d drawn %ld times", k, classes[k]);
    printf("test_lower_ew: classes contiguous %ld, scalar %ld, row %ld, general %ld; %ld corrupted walks caught\n", classes[0],
           classes[1], classes[2], classes[3], corrupt_caught);
    return check_exit("test_lower_ew");
}
