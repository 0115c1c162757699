/*
 * bf16_gemm.c — the bf16 GEMM kernel (gemm_bf16.h, vdpbf16ps) against
 * the f32 one (gemm.h) on the same shapes, one thread, in GFLOP/s.
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -Ibuild/gen bench/cpu/bf16_gemm.c build/libstrata.a -lm -pthread -ldl -o bf16_gemm
 *   ./bf16_gemm [TRIALS]
 *
 * Each trial times both kernels on a block as the conv path runs it: A (m
 * rows of weights) packed once, B a tile of 192 positions x k packed per
 * k block, C f32.  "bf16 kernel" counts the kernel alone, "bf16 + pack"
 * also packs B each time (what a conv tile pays); the f32 kernel reads B
 * in place by row offsets, as the conv path reads its staged input.  Trials of the two alternate, and the best of each is
 * kept, so a loaded machine slows both alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

int main(int argc, char **argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 7;
    if (!st_gemm_bf16_fast()) {
        fprintf(stderr, "bf16_gemm: this CPU lacks avx512_bf16\n");
        return 1;
    }
    static const int64_t SHAPES[][2] = {{64, 256}, {128, 576}, {256, 1152}, {32, 144}, {16, 27}};
    const int64_t n = 192;
    printf("%-12s %12s %14s %12s %9s\n", "m x k (n 192)", "f32 GFLOP/s", "bf16 kernel", "bf16 + pack", "ratio");
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        int64_t m = SHAPES[s][0], k = SHAPES[s][1], kcb = st_gemm_kc(k);
        float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(k * n) * sizeof *b);
        float *ap = alloc64((size_t)((m + 7) / 8 * 8 * k) * sizeof *ap), *c = alloc64((size_t)(m * n) * sizeof *c);
        uint32_t *abf = alloc64(st_gemm_bf16_a_words(m, k) * 4), *bbf = alloc64(st_gemm_bf16_b_words(kcb, n) * 4);
        int64_t *off = malloc((size_t)k * sizeof *off);
        for (int64_t i = 0; i < m * k; i++) a[i] = (float)(i % 13) * 0.125f - 0.75f;
        for (int64_t i = 0; i < k * n; i++) b[i] = (float)(i % 7) * 0.25f - 0.75f;
        st_gemm_pack_a(a, k, m, k, ap);
        st_gemm_bf16_pack_a(a, k, m, k, abf);
        for (int64_t p = 0; p < k; p++) off[p] = p * n;
        double best[3] = {1e30, 1e30, 1e30};
        int reps = (int)(2e8 / (double)(2 * m * n * k)) + 1;
        for (int t = 0; t < trials; t++) {
            double t0 = now();
            for (int r = 0; r < reps; r++)
                for (int64_t k0 = 0; k0 < k; k0 += kcb) {
                    int64_t kc = k - k0 < kcb ? k - k0 : kcb;
                    st_gemm_b bb = {b, off + k0, ST_GEMM_NR};
                    st_gemm_block(ap + k0 * ST_GEMM_MR, -(k * ST_GEMM_MR), &bb, kc, m, n, c, n, k0 > 0, NULL);
                }
            double t1 = now();
            for (int r = 0; r < reps; r++)
                for (int64_t k0 = 0; k0 < k; k0 += kcb) {
                    int64_t kc = k - k0 < kcb ? k - k0 : kcb;
                    st_gemm_bf16_pack_b(b, off + k0, 1, kc, n, bbf);
                    st_gemm_bf16_block(abf + k0 / 2 * ST_GEMM_MR, (k + 1) / 2 * ST_GEMM_MR, bbf, kc, m, n, c, n, k0 > 0, NULL);
                }
            double t2 = now();
            st_gemm_bf16_pack_b(b, off, 1, kcb, n, bbf);
            for (int r = 0; r < reps; r++)
                for (int64_t k0 = 0; k0 < k; k0 += kcb) {
                    int64_t kc = k - k0 < kcb ? k - k0 : kcb;
                    st_gemm_bf16_block(abf + k0 / 2 * ST_GEMM_MR, (k + 1) / 2 * ST_GEMM_MR, bbf, kc, m, n, c, n, k0 > 0, NULL);
                }
            double t3 = now();
            if (t1 - t0 < best[0]) best[0] = t1 - t0;
            if (t2 - t1 < best[2]) best[2] = t2 - t1;
            if (t3 - t2 < best[1]) best[1] = t3 - t2;
        }
        double fl = 2.0 * (double)m * (double)n * (double)k * reps / 1e9;
        printf("%4lld x %-6lld %12.1f %14.1f %12.1f %8.2fx\n", (long long)m, (long long)k, fl / best[0], fl / best[1],
               fl / best[2], best[0] / best[2]);
        free(a), free(b), free(ap), free(c), free(abf), free(bbf), free(off);
    }
    return 0;
}
