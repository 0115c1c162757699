/*
 * test_gemm_bf16.c — the bf16 GEMM core (src/backends/cpu/gemm_bf16.h)
 * against a float64 reference computed from the same bf16-rounded inputs,
 * every output element.
 *
 * Tolerance: products of two bf16 are exact in f32, so the kernel's only
 * error is the f32 rounding of at most k additions: |c - ref| <=
 * (k + 1) * 2^-24 * sum_p |a_ip * b_pj| (the standard bound for recursive
 * summation, whatever the order), plus, with an epilogue, that error
 * through the affine and the activation and the vector sigmoid's own 1e-6
 * relative (gemm_avx512.c, v_sigmoid).
 * Random shapes with odd k, k across several k blocks (ST_GEMM_KC), m off
 * the 8-row blocks and n off the 16- and 48-column panels; strided and
 * transposed operands (the scalar packing); C poisoned with NaN before;
 * the packing's rounding (to nearest even) against an independent one.
 * CTest runs it twice: as is, and with STRATA_CPU_NO_BF16=1, where only
 * the switch is checked (the f32 path that then runs is covered by the
 * bf16 model tests, which also run that way).
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/gemm_bf16.h"
#include "check.h"

static int cases_run;

/* f32 -> bf16 -> f32, to nearest even, written independently of the
 * library: the value's bits with the low 16 rounded off */
static float round_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t lsb = (u >> 16) & 1u, low = u & 0xffffu;
    u &= 0xffff0000u;
    if (low > 0x8000u || (low == 0x8000u && lsb)) u += 0x10000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

/* uniform in [-s, s], sometimes exactly 0; s spans a few decades so sums
 * mix magnitudes */
static float draw(test_rng *r, float s)
{
    if (rng_range(r, 0, 15) == 0) return 0.0f;
    return round_bf16(s * ((float)(rng_u32(r) >> 8) / 8388608.0f - 1.0f));
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* st_gemm_bf16 on A [m, k] and B [k, n], each row-major or transposed;
 * mode 0: C = A B, 1: C = A B + C, 2: C = alpha A B */
static void product_case(test_rng *r, int64_t m, int64_t n, int64_t k, bool ta, bool tb, int mode)
{
    float *a = malloc((size_t)(m * k + 1) * sizeof *a), *b = malloc((size_t)(k * n + 1) * sizeof *b);
    float *c = malloc((size_t)(m * (n + 3) + 1) * sizeof *c);
    int64_t ldc = n + 3;
    float sa = (float)ldexp(1.0, (int)rng_range(r, -4, 4)), sb = (float)ldexp(1.0, (int)rng_range(r, -4, 4));
    for (int64_t i = 0; i < m * k; i++) a[i] = draw(r, sa);
    for (int64_t i = 0; i < k * n; i++) b[i] = draw(r, sb);
    for (int64_t i = 0; i < m * ldc; i++) c[i] = NAN;
    float *c0 = malloc((size_t)(m * n + 1) * sizeof *c0), alpha = mode == 2 ? draw(r, 4.0f) : 1.0f;
    for (int64_t i = 0; i < m * n; i++) c0[i] = draw(r, 1.0f);
    if (mode == 1)
        for (int64_t i = 0; i < m; i++) memcpy(c + i * ldc, c0 + i * n, (size_t)n * sizeof *c);
    int64_t ars = ta ? 1 : k, acs = ta ? m : 1, brs = tb ? 1 : n, bcs = tb ? k : 1;
    CHECK(st_gemm_bf16(a, ars, acs, b, brs, bcs, alpha, mode == 1 ? 1.0f : 0.0f, c, ldc, m, n, k) == 1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double ref = 0.0, mag = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double t = (double)a[i * ars + p * acs] * (double)b[p * brs + j * bcs];
                ref += t;
                mag += fabs(t);
            }
            double tol = (double)(k + 1) * ldexp(1.0, -24) * mag;
            if (mode == 1) {
                /* C is the sum's first term: one more term in the bound */
                ref += c0[i * n + j];
                tol = (double)(k + 2) * ldexp(1.0, -24) * (mag + fabs(c0[i * n + j]));
            } else if (mode == 2) {
                /* and one more rounding, of the product by alpha */
                ref *= alpha;
                tol = fabs(alpha) * tol + ldexp(1.0, -24) * fabs(ref);
            }
            double got = c[i * ldc + j];
            CHECKF(fabs(got - ref) <= tol, "m %lld n %lld k %lld ta %d tb %d at (%lld, %lld): %.9g vs %.9g (tol %.3g)",
                   (long long)m, (long long)n, (long long)k, ta, tb, (long long)i, (long long)j, got, ref, tol);
        }
    /* the columns past n of each row of C are not written */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = n; j < ldc; j++) CHECKF(isnan(c[i * ldc + j]), "C written past column n at row %lld", (long long)i);
    free(a);
    free(b);
    free(c);
    free(c0);
    cases_run++;
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* st_gemm_bf16_block as a conv uses it: A packed once, B rows by offset
 * (a shifted plane, as the staged input), k blocks accumulating, the
 * epilogue (scale, shift, SiLU or a non-vector activation, post affine)
 * on the last block */
static void block_case(test_rng *r, int64_t m, int64_t n, int64_t k, int act)
{
    int64_t plane = n + k + 8;
    float *a = malloc((size_t)(m * k + 1) * sizeof *a), *src = malloc((size_t)plane * sizeof *src);
    float *c = malloc((size_t)(m * n + 1) * sizeof *c);
    float *scale = malloc((size_t)m * sizeof *scale), *shift = malloc((size_t)m * sizeof *shift);
    float *ps = malloc((size_t)m * sizeof *ps), *pt = malloc((size_t)m * sizeof *pt);
    int64_t *off = malloc((size_t)k * sizeof *off);
    uint32_t *ap = alloc64(st_gemm_bf16_a_words(m, k) * 4);
    int64_t kcb = st_gemm_kc(k);
    uint32_t *bp = alloc64(st_gemm_bf16_b_words(kcb, n) * 4);
    for (int64_t i = 0; i < m * k; i++) a[i] = draw(r, 0.5f);
    for (int64_t i = 0; i < plane; i++) src[i] = draw(r, 1.0f);
    for (int64_t p = 0; p < k; p++) off[p] = rng_range(r, 0, k + 8);
    for (int64_t i = 0; i < m; i++) {
        scale[i] = draw(r, 2.0f);
        shift[i] = draw(r, 1.0f);
        ps[i] = draw(r, 2.0f);
        pt[i] = draw(r, 1.0f);
    }
    for (int64_t i = 0; i < m * n; i++) c[i] = NAN;
    st_gemm_epi e = {0};
    e.scale = scale;
    e.shift = shift;
    /* SiLU runs in the kernel's registers; tanh has no vector form and
     * runs after the store */
    e.act.act = 1 + (act ? ST_U_SILU : ST_U_TANH);
    e.post_scale = ps;
    e.post_shift = pt;
    st_gemm_bf16_pack_a(a, k, m, k, ap);
    int64_t stride = (k + 1) / 2 * ST_GEMM_MR;
    for (int64_t k0 = 0; k0 < k; k0 += kcb) {
        int64_t kc = k - k0 < kcb ? k - k0 : kcb;
        st_gemm_bf16_pack_b(src, off + k0, 1, kc, n, bp);
        st_gemm_bf16_block(ap + k0 / 2 * ST_GEMM_MR, stride, bp, kc, m, n, c, n, k0 > 0, k0 + kc >= k ? &e : NULL);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0, mag = 0.0;
            for (int64_t p = 0; p < k; p++) {
                double t = (double)a[i * k + p] * (double)src[off[p] + j];
                s += t;
                mag += fabs(t);
            }
            double err = (double)(k + 1) * ldexp(1.0, -24) * mag;
            double x = s * scale[i] + shift[i];
            double ex = err * fabs(scale[i]) + ldexp(1.0, -24) * (fabs(x) + fabs(shift[i]));
            /* both activations have slope at most 1.1: the error passes
             * through, plus the vector sigmoid's 1e-6 relative */
            double y = act ? x * sigmoid(x) : tanh(x);
            double ey = 1.1 * ex + 1e-6 * fabs(y) + ldexp(1.0, -24) * fabs(y);
            double z = y * ps[i] + pt[i];
            double ez = ey * fabs(ps[i]) + ldexp(1.0, -23) * (fabs(z) + fabs(pt[i]));
            double got = c[i * n + j];
            CHECKF(fabs(got - z) <= ez, "block m %lld n %lld k %lld act %d at (%lld, %lld): %.9g vs %.9g (tol %.3g)",
                   (long long)m, (long long)n, (long long)k, act, (long long)i, (long long)j, got, z, ez);
        }
    free(a);
    free(src);
    free(c);
    free(scale);
    free(shift);
    free(ps);
    free(pt);
    free(off);
    free(ap);
    free(bp);
    cases_run++;
}

/* The packing rounds f32 to bf16 to nearest even, and lays pairs out as
 * gemm_bf16.h says: word (p, j) of panel q holds rows 2p and 2p + 1 */
static void pack_case(test_rng *r, int64_t kc, int64_t n, int64_t cs)
{
    int64_t rs = n * cs + 5;
    float *b = malloc((size_t)(kc * rs + 1) * sizeof *b);
    int64_t *off = malloc((size_t)kc * sizeof *off);
    uint32_t *bp = alloc64(st_gemm_bf16_b_words(kc, n) * 4);
    /* full f32 values (not bf16), ties included */
    for (int64_t i = 0; i < kc * rs; i++) {
        float v = (float)ldexp((double)(int32_t)rng_u32(r), -30);
        if (rng_range(r, 0, 7) == 0) {
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            u = (u & 0xffff0000u) | 0x8000u; /* a tie */
            memcpy(&v, &u, sizeof v);
        }
        b[i] = v;
    }
    for (int64_t p = 0; p < kc; p++) off[p] = p * rs;
    st_gemm_bf16_pack_b(b, off, cs, kc, n, bp);
    int64_t kp = (kc + 1) / 2;
    for (int64_t j = 0; j < (n + ST_GEMM_NR - 1) / ST_GEMM_NR * ST_GEMM_NR; j++)
        for (int64_t p = 0; p < kp; p++) {
            uint32_t w = bp[(j / ST_GEMM_NR) * kp * ST_GEMM_NR + p * ST_GEMM_NR + j % ST_GEMM_NR];
            for (int h = 0; h < 2; h++) {
                float want = 0.0f;
                if (j < n && 2 * p + h < kc) want = round_bf16(b[(2 * p + h) * rs + j * cs]);
                uint32_t u = h ? w & 0xffff0000u : w << 16;
                float got;
                memcpy(&got, &u, sizeof got);
                CHECKF(got == want, "pack kc %lld n %lld cs %lld: (%lld, %lld) half %d: %.9g vs %.9g", (long long)kc,
                       (long long)n, (long long)cs, (long long)p, (long long)j, h, got, want);
            }
        }
    free(b);
    free(off);
    free(bp);
    cases_run++;
}

int main(void)
{
    const char *off = getenv("STRATA_CPU_NO_BF16");
    if (off && *off && strcmp(off, "0") != 0) {
        /* the switch the model tests use to run the f32 path here */
        CHECK(!st_gemm_bf16_fast());
        return check_exit("test_gemm_bf16 (STRATA_CPU_NO_BF16)");
    }
    if (!st_gemm_bf16_fast()) {
        printf("test_gemm_bf16: this CPU lacks avx512_bf16; skipped\n");
        return 77;
    }
    test_rng rng = {20261215};
    static const int64_t EDGE[][3] = {{1, 1, 1}, {1, 1, 2}, {8, 48, 2}, {9, 49, 3}, {7, 47, 1}, {1, 200, 33},
                                      {33, 1, 17}, {16, 16, 257}, {40, 100, 513}, {3, 5, 2}, {65, 193, 9}, {8, 17, 600}};
    for (size_t s = 0; s < sizeof EDGE / sizeof EDGE[0]; s++)
        for (int t = 0; t < 4; t++) product_case(&rng, EDGE[s][0], EDGE[s][1], EDGE[s][2], t & 1, t >> 1, (int)(s % 3));
    for (int it = 0; it < 150; it++)
        product_case(&rng, rng_range(&rng, 1, 40), rng_range(&rng, 1, 130), rng_range(&rng, 1, 700),
                     rng_range(&rng, 0, 3) == 0, rng_range(&rng, 0, 3) == 0, it % 3);
    /* alpha with beta 1 is left to the f32 GEMM, untouched */
    float one = 1.0f, cc = 3.0f;
    CHECK(st_gemm_bf16(&one, 1, 1, &one, 1, 1, 2.0f, 1.0f, &cc, 1, 1, 1, 1) == 0 && cc == 3.0f);
    for (int it = 0; it < 40; it++)
        block_case(&rng, rng_range(&rng, 1, 30), rng_range(&rng, 1, 200), rng_range(&rng, 1, 600), it % 2);
    for (int it = 0; it < 30; it++) pack_case(&rng, rng_range(&rng, 1, 40), rng_range(&rng, 1, 110), rng_range(&rng, 1, 2));
    printf("gemm_bf16: %d cases, kernels: avx512_bf16\n", cases_run);
    return check_exit("test_gemm_bf16");
}
