/*
 * sgemm_shapes.c — the AVX-512 f32 GEMM (st_sgemm_fast) on a transformer
 * encoder's shapes (d 256, FFN 1024, 2x77 = 154 and 1x512 tokens, and one
 * attention head), in GFLOP/s of process CPU time: best of 7 trials of
 * about 0.2 GFLOP each, so that other work on a shared machine only ever
 * makes a trial slower.  Divide by `peak 1 cpu` (peak.c) for the share of
 * the core's f32 peak.  With "pre", B is packed once beforehand
 * (st_gemm_prepack_b, as MatMul and Gemm do for a constant B at plan
 * time) and only A is packed per call.
 *
 *   cc -O2 -Isrc -Iinclude bench/cpu/sgemm_shapes.c build/libstrata.a -lprotobuf-c -lpthread -lm -ldl \
 *      -o sgemm_shapes && ./sgemm_shapes [pre]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/gemm.h"

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    /* m x n x k: QKV projection, FFN down, FFN up, output projection at
     * 154 tokens; QKV and FFN at 512; Q K^T and attention x V of a head */
    static const int64_t shapes[][3] = {{154, 768, 256}, {154, 256, 1024}, {154, 1024, 256}, {154, 256, 256},
                                        {512, 768, 256}, {512, 256, 1024}, {512, 1024, 256}, {77, 77, 64},
                                        {77, 64, 77}};
    bool pre = argc > 1 && !strcmp(argv[1], "pre");
    /* The GEMM mallocs its packed A (and B) per call.  Alone in a loop,
     * glibc hands a freed 2 MB block back to the kernel and every call
     * faults it in again (512 x 256 x 1024 measured 7x slower on the VM of
     * bench/RESULTS.md); a model's runs fault no pages once warm (perf
     * stat: the same count for 5 and 25 runs), so keep the heap here too. */
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    if (!st_gemm_fast()) {
        fprintf(stderr, "sgemm_shapes: this CPU has no AVX-512 (or STRATA_CPU_NO_AVX512 is set)\n");
        return 1;
    }
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(k * n) * sizeof *b);
        float *c = malloc((size_t)(m * n) * sizeof *c);
        float *bp = NULL;
        if (!a || !b || !c) return 1;
        for (int64_t i = 0; i < m * k; i++) a[i] = (float)(i % 13) * 0.1f;
        for (int64_t i = 0; i < k * n; i++) b[i] = (float)(i % 7) * 0.1f;
        if (pre && !(bp = st_gemm_prepack_b(b, n, 1, k, n))) return 1;
        double best = 1e30;
        int reps = (int)(1e8 / (double)(m * n * k)) + 1;
        for (int t = 0; t < 7; t++) {
            double t0 = cpu_s();
            for (int r = 0; r < reps; r++) {
                bool ok = pre ? st_sgemm_fast_prepacked(a, k, 1, bp, n, 0, 1.0f, 0.0f, c, n, m, n, k)
                              : st_sgemm_fast(a, k, 1, b, n, 1, 1.0f, 0.0f, c, n, m, n, k);
                if (!ok) return 1;
            }
            double dt = (cpu_s() - t0) / reps;
            if (dt < best) best = dt;
        }
        printf("%4lld x %4lld x %4lld %s: %7.3f ms %6.1f GFLOP/s\n", (long long)m, (long long)n, (long long)k,
               pre ? "prepacked B" : "B packed per call", best * 1e3, 2.0 * (double)(m * n * k) / best * 1e-9);
        free(a);
        free(b);
        free(c);
        free(bp);
    }
    return 0;
}
