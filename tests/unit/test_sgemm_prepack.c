/*
 * test_sgemm_prepack.c — a constant B packed once at plan time
 * (st_gemm_prepack_b, used by MatMul's and Gemm's prepare) must give the
 * same bits as the GEMM that packs B per call (st_sgemm_fast), for any
 * column window [n0, n0 + n) a MatMul or Gemm tile reads, and both must
 * agree with a float64 reference within what f32 accumulation of k terms
 * can lose (1e-6 * sum |a b| + 1e-6 |beta c|).  Shapes cross the k block
 * (ST_GEMM_KC: k 300, 600) and the n block (768: n 900), B row-major and
 * transposed, alpha 1 and 0.5, beta 0 over NaN and beta 1.  Skipped (and
 * passed) on a CPU without AVX-512, where nothing is prepacked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/gemm.h"
#include "core/bigmem.h"
#include "check.h"

static float frand(test_rng *r) { return (float)((double)rng_u32(r) / 4294967296.0 * 2.0 - 1.0); }

/* C = alpha A B + beta C for B k x ntot (tb: stored as its transpose),
 * columns [n0, n0 + n) of it, A m x k row-major. */
static void one(test_rng *r, int64_t m, int64_t ntot, int64_t n0, int64_t n, int64_t k, bool tb, float alpha, float beta)
{
    int64_t ldc = n + 3;
    float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(k * ntot) * sizeof *b);
    float *c1 = malloc((size_t)(m * ldc) * sizeof *c1), *c2 = malloc((size_t)(m * ldc) * sizeof *c2);
    float *c0 = malloc((size_t)(m * ldc) * sizeof *c0);
    for (int64_t i = 0; i < m * k; i++) a[i] = frand(r);
    for (int64_t i = 0; i < k * ntot; i++) b[i] = frand(r);
    for (int64_t i = 0; i < m * ldc; i++) c0[i] = beta == 0.0f ? NAN : frand(r);
    memcpy(c1, c0, (size_t)(m * ldc) * sizeof *c0);
    memcpy(c2, c0, (size_t)(m * ldc) * sizeof *c0);
    /* element (p, j) of B at b[p * rs + j * cs] */
    int64_t rs = tb ? 1 : ntot, cs = tb ? k : 1;
    float *bp = st_gemm_prepack_b(b, rs, cs, k, ntot);
    CHECK(bp != NULL);
    if (bp) {
        CHECK(st_sgemm_fast(a, k, 1, b + n0 * cs, rs, cs, alpha, beta, c1, ldc, m, n, k));
        CHECK(st_sgemm_fast_prepacked(a, k, 1, bp, ntot, n0, alpha, beta, c2, ldc, m, n, k));
    }
    int bad = 0;
    for (int64_t i = 0; i < m && bp; i++)
        for (int64_t j = 0; j < ldc; j++) {
            float g1 = c1[i * ldc + j], g2 = c2[i * ldc + j];
            if (memcmp(&g1, &g2, sizeof g1) != 0 && bad++ < 3)
                CHECKF(0, "m %lld ntot %lld n0 %lld n %lld k %lld tb %d: c[%lld, %lld] prepacked %.9g, packed per call %.9g",
                       (long long)m, (long long)ntot, (long long)n0, (long long)n, (long long)k, tb, (long long)i,
                       (long long)j, g2, g1);
            if (j >= n) continue;
            double s = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                double av = a[i * k + p], bv = b[p * rs + (n0 + j) * cs];
                s += av * bv;
                mag += fabs(av * bv);
            }
            double old = beta != 0.0f ? (double)beta * c0[i * ldc + j] : 0.0;
            double want = alpha * s + old, tol = 1e-6 * fabs(alpha) * mag + 1e-6 * fabs(old) + 1e-30;
            if (!(fabs(g2 - want) <= tol) && bad++ < 3)
                CHECKF(0, "m %lld n %lld k %lld tb %d: c[%lld, %lld] = %.9g, want %.9g", (long long)m, (long long)n,
                       (long long)k, tb, (long long)i, (long long)j, g2, want);
        }
    CHECK(bad == 0);
    st_big_free(bp);
    free(a);
    free(b);
    free(c0);
    free(c1);
    free(c2);
}

int main(void)
{
    if (!st_gemm_fast()) return check_exit("test_sgemm_prepack");
    test_rng r = {20261202};
    const int64_t ks[] = {1, 17, 256, 300, 600};
    const float betas[] = {0.0f, 1.0f};
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
        for (int tb = 0; tb < 2; tb++)
            for (int bi = 0; bi < 2; bi++) {
                /* the whole B, then a window of whole panels as a tile reads it */
                one(&r, rng_range(&r, 2, 40), 900, 0, 900, ks[ki], tb, bi ? 0.5f : 1.0f, betas[bi]);
                one(&r, rng_range(&r, 2, 40), 250, 96, 130, ks[ki], tb, 1.0f, betas[bi]);
                one(&r, 9, 77, 48, 29, ks[ki], tb, 1.0f, betas[bi]);
            }
    return check_exit("test_sgemm_prepack");
}
