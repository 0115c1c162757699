/*
 * test_sgemm.c — the CPU's f32 GEMM (st_sgemm) against a float64
 * reference, above all the shapes that take the matrix-vector path (one
 * row or one column of output: a batch-1 linear layer) and its edges: k
 * not a multiple of 16, a strided vector, B row-major or transposed,
 * beta 0 over a NaN-poisoned output, beta 1 and 0.5, alpha != 1, and a
 * column-major A.  Every output element is compared; the tolerance is
 * 1e-6 * (sum over p of |a||b|) + 1e-6 * |beta c|, what f32 accumulation
 * of k terms can lose.  Run twice by CTest: as is (AVX-512 where the CPU
 * has it) and with STRATA_CPU_NO_AVX512=1 (the portable path).
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/linalg.h"
#include "check.h"

static float frand(test_rng *r) { return (float)((double)rng_u32(r) / 4294967296.0 * 2.0 - 1.0); }

/* A is m x k stored row-major (a_rm) or column-major, with leading
 * dimension padded; op(a) = a (ta false).  B is k x n stored row-major or
 * as its transpose (tb: the storage is n x k row-major). */
static void one(test_rng *r, int64_t m, int64_t n, int64_t k, bool a_rm, bool tb, int64_t pad, float alpha, float beta)
{
    int64_t lda = (a_rm ? k : m) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    float *a = malloc((size_t)((a_rm ? m : k) * lda + 1) * sizeof *a);
    float *b = malloc((size_t)((tb ? n : k) * ldb + 1) * sizeof *b);
    float *c = malloc((size_t)(m * ldc + 1) * sizeof *c);
    float *c0 = malloc((size_t)(m * ldc + 1) * sizeof *c0);
    for (int64_t i = 0; i < (a_rm ? m : k) * lda; i++) a[i] = frand(r);
    for (int64_t i = 0; i < (tb ? n : k) * ldb; i++) b[i] = frand(r);
    for (int64_t i = 0; i < m * ldc; i++) c[i] = beta == 0.0f ? NAN : frand(r);
    memcpy(c0, c, (size_t)(m * ldc) * sizeof *c);
    st_mat ma = {a, m, k, a_rm ? lda : 1, a_rm ? 1 : lda};
    /* B as stored: tb means the stored matrix is n x k and op() transposes */
    st_mat mb = tb ? (st_mat){b, n, k, ldb, 1} : (st_mat){b, k, n, ldb, 1};
    st_sgemm(&ma, false, &mb, tb, alpha, beta, c, ldc, m, n, k);
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                double av = a[a_rm ? i * lda + p : p * lda + i], bv = b[tb ? j * ldb + p : p * ldb + j];
                s += av * bv;
                mag += fabs(av * bv);
            }
            double want = alpha * s + (beta != 0.0f ? (double)beta * c0[i * ldc + j] : 0.0);
            double tol = 1e-6 * fabs(alpha) * mag + 1e-6 * fabs(beta != 0.0f ? beta * c0[i * ldc + j] : 0.0) + 1e-30;
            double got = c[i * ldc + j];
            if (!(fabs(got - want) <= tol) && bad++ < 3)
                CHECKF(0, "m %lld n %lld k %lld a_rm %d tb %d pad %lld alpha %g beta %g: c[%lld, %lld] = %.9g, want %.9g",
                       (long long)m, (long long)n, (long long)k, a_rm, tb, (long long)pad, alpha, beta, (long long)i,
                       (long long)j, got, want);
        }
    CHECK(bad == 0);
    /* padding between rows is not written */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = n; j < ldc; j++)
            if (!(isnan(c0[i * ldc + j]) ? isnan(c[i * ldc + j]) : c[i * ldc + j] == c0[i * ldc + j]))
                CHECKF(0, "m %lld n %lld: padding at [%lld, %lld] written", (long long)m, (long long)n, (long long)i,
                       (long long)j);
    free(a);
    free(b);
    free(c);
    free(c0);
}

int main(void)
{
    test_rng r = {20261201};
    const int64_t ks[] = {1, 7, 16, 17, 33, 96, 1536};
    const int64_t ns[] = {1, 3, 16, 17, 100, 128, 129, 300};
    const float betas[] = {0.0f, 1.0f, 0.5f};
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t bi = 0; bi < 3; bi++) {
                    /* one row of output (the matrix-vector path) */
                    one(&r, 1, ns[ni], ks[ki], true, tb, ni % 2, bi == 2 ? 0.75f : 1.0f, betas[bi]);
                    /* one column, A row- or column-major */
                    one(&r, ns[ni], 1, ks[ki], tb, tb, 0, 1.0f, betas[bi]);
                }
    /* the general GEMM beside it */
    for (int t = 0; t < 40; t++)
        one(&r, rng_range(&r, 2, 70), rng_range(&r, 2, 130), rng_range(&r, 1, 300), rng_range(&r, 0, 1),
            rng_range(&r, 0, 1), rng_range(&r, 0, 3), 1.0f, betas[t % 3]);
    return check_exit("test_sgemm");
}
