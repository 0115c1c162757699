/*
 * peak.c — the machine's f32 peak: AVX-512 FMA throughput on N threads.
 *
 * Each thread runs 24 independent chains of vfmadd231ps on zmm registers in
 * an asm loop (enough chains to cover the FMA latency on two ports) for a
 * fixed number of iterations; the figure is FLOPs (2 per lane per FMA)
 * over the slowest thread's wall time.  Best of 25 short trials, since load
 * from other processes on a shared VM only ever makes it slower.  This is
 * the ceiling no convolution can beat; bench/cpu/run.sh divides each
 * model's FLOPs by it for the floor.
 *
 *   cc -O2 -pthread bench/cpu/peak.c -o peak && ./peak [threads] [cpu]
 *
 * With "cpu" each thread's time is its own CPU time (CLOCK_THREAD_CPUTIME_ID)
 * instead of the wall clock: on a machine shared with other work that is
 * the figure to divide CPU-time measurements by (bench/RESULTS.md's issue
 * 15 sections), where the wall clock counts the time others held the core.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ITERS 4000000L
#define CHAINS 24

static clockid_t clock_id = CLOCK_MONOTONIC; /* set once in main, before the threads */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pthread_barrier_t start;

#define F4(a, b, c, d) "vfmadd231ps %%zmm24, %%zmm25, %%zmm" #a "\n\t" \
                       "vfmadd231ps %%zmm24, %%zmm25, %%zmm" #b "\n\t" \
                       "vfmadd231ps %%zmm24, %%zmm25, %%zmm" #c "\n\t" \
                       "vfmadd231ps %%zmm24, %%zmm25, %%zmm" #d "\n\t"
#define Z4(a, b, c, d) "vxorps %%xmm" #a ", %%xmm" #a ", %%xmm" #a "\n\t" \
                       "vxorps %%xmm" #b ", %%xmm" #b ", %%xmm" #b "\n\t" \
                       "vxorps %%xmm" #c ", %%xmm" #c ", %%xmm" #c "\n\t" \
                       "vxorps %%xmm" #d ", %%xmm" #d ", %%xmm" #d "\n\t"

__attribute__((target("avx512f"))) static void *fma_loop(void *arg)
{
    long n = ITERS;
    float a = 0.9999999f, b = (float)(size_t)arg * 1e-7f + 1e-6f;
    pthread_barrier_wait(&start);
    double t0 = now_s();
    /* zmm0..23 are the chains, zmm24 and zmm25 the operands */
    __asm__ volatile("vbroadcastss %[a], %%zmm24\n\t"
                     "vbroadcastss %[b], %%zmm25\n\t"
                     Z4(0, 1, 2, 3) Z4(4, 5, 6, 7) Z4(8, 9, 10, 11) Z4(12, 13, 14, 15) Z4(16, 17, 18, 19) Z4(20, 21, 22, 23)
                     "1:\n\t"
                     F4(0, 1, 2, 3) F4(4, 5, 6, 7) F4(8, 9, 10, 11) F4(12, 13, 14, 15) F4(16, 17, 18, 19) F4(20, 21, 22, 23)
                     "dec %[n]\n\t"
                     "jnz 1b\n\t"
                     "vzeroupper\n\t"
                     : [n] "+r"(n)
                     : [a] "m"(a), [b] "m"(b)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                       "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
                       "xmm23", "xmm24", "xmm25", "cc");
    double *out = malloc(sizeof *out);
    if (out) *out = now_s() - t0;
    return out;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (threads < 1 || threads > 64) threads = 2;
    if (argc > 2 && !strcmp(argv[2], "cpu")) clock_id = CLOCK_THREAD_CPUTIME_ID;
    if (!__builtin_cpu_supports("avx512f")) {
        fprintf(stderr, "peak: this CPU has no AVX-512\n");
        return 1;
    }
    double best = 0;
    for (int trial = 0; trial < 25; trial++) {
        pthread_t tid[64];
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, fma_loop, (void *)(size_t)i);
        double worst = 0;
        for (int i = 0; i < threads; i++) {
            void *r = NULL;
            pthread_join(tid[i], &r);
            if (r && *(double *)r > worst) worst = *(double *)r;
            free(r);
        }
        pthread_barrier_destroy(&start);
        double gflops = (double)threads * ITERS * CHAINS * 16 * 2 / worst / 1e9;
        if (gflops > best) best = gflops;
    }
    printf("{\"threads\": %d, \"peak_gflops\": %.1f}\n", threads, best);
    return 0;
}
