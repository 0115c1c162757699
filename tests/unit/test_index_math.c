/*
 * test_index_math.c — ops/index_math.h's element rules, which the CPU,
 * CUDA and OpenCL kernels all compile, against their definitions written
 * out plainly here: the ONNX spec's wording, in exact arithmetic, for
 * indices and values at the edges (INT64 extremes, uint64 above 2^63,
 * NaN), where a clamp or a signed compare would slip.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "ops/index_math.h"

static test_rng rng = {20270412};

/* an int64 often near an edge */
static int64_t edge_i64(void)
{
    static const int64_t E[] = {INT64_MIN, INT64_MIN + 1, -5, -2, -1, 0, 1, 2, 3, 7, INT64_MAX - 1, INT64_MAX};
    return rng_range(&rng, 0, 2) ? E[rng_range(&rng, 0, 11)] : rng_range(&rng, -20, 20);
}

static void test_index(void)
{
    for (int t = 0; t < 20000; t++) {
        int64_t v = edge_i64(), dim = rng_range(&rng, 0, 9);
        /* the spec: v in [-dim, dim) selects v mod dim, else nothing */
        bool in = (v >= 0 && v < dim) || (v < 0 && v >= -dim);
        int64_t want = !in ? -1 : v < 0 ? v + dim : v;
        CHECKF(st_im_index(v, dim) == want, "index %lld of %lld: %lld", (long long)v, (long long)dim, (long long)st_im_index(v, dim));
        int neg = (int)rng_range(&rng, 0, 1);
        int64_t oh = (v >= 0 && v < dim) ? v : (neg && v < 0 && v >= -dim) ? v + dim : -1;
        CHECK(st_im_one_hot(v, dim, neg) == oh);
    }
}

static void test_reduce(void)
{
    for (int t = 0; t < 20000; t++) {
        /* uint64 values on both sides of 2^63 */
        uint64_t a = rng_u64(&rng), b = rng_range(&rng, 0, 1) ? rng_u64(&rng) : a ^ (1ull << 63);
        if (rng_range(&rng, 0, 3) == 0) b = a;
        int64_t sa = (int64_t)a, sb = (int64_t)b;
        CHECK((uint64_t)st_im_reduce_i64(ST_RED_MAX, sa, sb, 1) == (a > b ? a : b));
        CHECK((uint64_t)st_im_reduce_i64(ST_RED_MIN, sa, sb, 1) == (a < b ? a : b));
        CHECK(st_im_reduce_i64(ST_RED_MAX, sa, sb, 0) == (sa > sb ? sa : sb));
        CHECK(st_im_reduce_i64(ST_RED_MIN, sa, sb, 0) == (sa < sb ? sa : sb));
        CHECK((uint64_t)st_im_reduce_i64(ST_RED_ADD, sa, sb, 0) == a + b);
        CHECK((uint64_t)st_im_reduce_i64(ST_RED_MUL, sa, sb, 1) == a * b);
        CHECK(st_im_reduce_i64(ST_RED_NONE, sa, sb, 0) == sb);
    }
    /* floats: max / min keep y's element unless the update is strictly beyond it */
    CHECK(st_im_reduce_f64(ST_RED_MAX, 1.0, NAN) == 1.0);
    CHECK(isnan(st_im_reduce_f64(ST_RED_MIN, NAN, 1.0)));
    CHECK(st_im_reduce_f64(ST_RED_ADD, 0.1, 0.2) == 0.1 + 0.2);
    /* f64 where f32 would round: the bug OpenCL had */
    CHECK(st_im_reduce_f64(ST_RED_ADD, 1.0, 1e-12) != 1.0);
    CHECK(st_im_reduce_f32(ST_RED_MUL, 3.0f, 0.5f) == 1.5f);
}

static void test_trilu(void)
{
    for (int t = 0; t < 20000; t++) {
        int64_t w = rng_range(&rng, 0, 7), i = rng_range(&rng, 0, 7), k = edge_i64();
        int upper = (int)rng_range(&rng, 0, 1);
        for (int64_t c = 0; c < w; c++) {
            /* the spec: upper keeps j - i >= k, lower j - i <= k (no overflow: |c - i| < 8) */
            int want = upper ? c - i >= k : c - i <= k;
            CHECKF(st_im_trilu_keep(i, c, k, w, upper) == want, "trilu row %lld col %lld k %lld upper %d", (long long)i, (long long)c,
                   (long long)k, upper);
        }
        int64_t f = st_im_trilu_first(i, k, w, upper), e = st_im_trilu_end(i, k, w, upper);
        CHECK(f >= 0 && e <= w && (f <= e || (f == w && e <= w)));
    }
}

static void test_pad(void)
{
    /* reflect and wrap against their definitions over an extended line */
    for (int t = 0; t < 5000; t++) {
        int64_t n = rng_range(&rng, 1, 6), begin = rng_range(&rng, -2, 9), end = rng_range(&rng, -2, 9);
        int64_t lo = begin < 0 ? -begin : 0, m = n - lo - (end < 0 ? -end : 0);
        int64_t len = (begin > 0 ? begin : 0) + m + (end > 0 ? end : 0);
        for (int mode = 0; mode < 4 && m > 0; mode++)
            for (int64_t o = 0; o < len; o++) {
                int64_t i = o - (begin > 0 ? begin : 0), want;
                if (i >= 0 && i < m) want = lo + i;
                else if (mode == ST_PAD_CONSTANT) want = -1;
                else if (mode == ST_PAD_EDGE) want = lo + (i < 0 ? 0 : m - 1);
                else if (mode == ST_PAD_WRAP) want = lo + (((i % m) + m) % m);
                else {
                    /* walk back and forth over [0, m) without repeating the edges */
                    int64_t p = 0, dir = 1, steps = i < 0 ? -i : i;
                    if (i < 0) dir = -1;
                    for (int64_t s = 0; s < steps && m > 1; s++) {
                        if (p + dir < 0 || p + dir >= m) dir = -dir;
                        p += dir;
                    }
                    want = lo + p;
                }
                CHECKF(st_im_pad_source(mode, o, begin, end, n) == want, "pad mode %d o %lld begin %lld end %lld n %lld", mode,
                       (long long)o, (long long)begin, (long long)end, (long long)n);
            }
    }
}

static void test_order(void)
{
    CHECK(st_im_cmp_f64(NAN, 1e300) == 1 && st_im_cmp_f64(-INFINITY, NAN) == -1 && st_im_cmp_f64(NAN, NAN) == 0);
    CHECK(st_im_cmp_f32(1.0f, 2.0f) == -1 && st_im_cmp_f32(2.0f, 2.0f) == 0);
    CHECK(st_im_cmp_f64(1.0, 1.0 + 1e-15) == -1); /* equal in f32, not in f64 */
    CHECK(st_im_cmp_i64((int64_t)(1ull << 63), 1, 1) == 1 && st_im_cmp_i64((int64_t)(1ull << 63), 1, 0) == -1);
    /* ties go to the lower index, largest or not */
    CHECK(st_im_topk_before(0, 1, 2, 5) && !st_im_topk_before(0, 1, 5, 2));
    CHECK(st_im_topk_before(0, 0, 2, 5) && st_im_topk_before(1, 1, 9, 0) && st_im_topk_before(-1, 0, 9, 0));
    for (int64_t s = 0; s < 5; s++) CHECK(st_im_cumsum_at(s, 5, 1) == 4 - s && st_im_cumsum_at(s, 5, 0) == s);
    CHECK(st_im_label_stride(3, 1, 100) == 3 && st_im_label_stride(3, 2, 100) == 103);
}

int main(void)
{
    test_index();
    test_reduce();
    test_trilu();
    test_pad();
    test_order();
    return check_exit("test_index_math");
}
