/*
 * vnni_peak.c — this CPU's int8 peak (AVX-512 VNNI vpdpbusd throughput)
 * and the share of it strata's int8 GEMM core reaches.
 *
 * The peak is measured the way peak.c measures f32: each thread runs 24
 * independent chains of vpdpbusd on zmm registers in an asm loop; a
 * vpdpbusd is 64 multiply-adds, 128 int8 ops; the figure is over the
 * slowest thread's wall time, the best of all trials.  Peak trials
 * alternate with the kernels' (one before each kernel trial), so on a
 * shared machine the two bests come from the same minutes.
 *
 * Then the GEMM at conv-like shapes (M output channels, K = C * 3 * 3,
 * N pixels), int32 out: one thread on st_gemm_s8_block (the kernel, both
 * operands packed: what a conv's inner loop runs), and N threads on
 * st_gemm_s8_run (A packed per task, as MatMulInteger runs it).  Best of
 * several repetitions.  Then whole int8 convs (st_conv_s8: staging,
 * GEMM, int32 stores) on N threads.  Figures are GOPS (2 ops per
 * multiply-add) and the share of the 1-thread or N-thread peak.
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc bench/cpu/vnni_peak.c build/libstrata.a \
 *      -lprotobuf-c -lm -ldl -pthread -o vnni_peak && ./vnni_peak [threads]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/conv_s8.h"
#include "backends/cpu/gemm_s8.h"

#define ITERS 4000000L
#define CHAINS 24

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pthread_barrier_t start;
static int g_threads = 2;

#define D4(a, b, c, d) "vpdpbusd %%zmm24, %%zmm25, %%zmm" #a "\n\t" \
                       "vpdpbusd %%zmm24, %%zmm25, %%zmm" #b "\n\t" \
                       "vpdpbusd %%zmm24, %%zmm25, %%zmm" #c "\n\t" \
                       "vpdpbusd %%zmm24, %%zmm25, %%zmm" #d "\n\t"
#define Z4(a, b, c, d) "vpxord %%zmm" #a ", %%zmm" #a ", %%zmm" #a "\n\t" \
                       "vpxord %%zmm" #b ", %%zmm" #b ", %%zmm" #b "\n\t" \
                       "vpxord %%zmm" #c ", %%zmm" #c ", %%zmm" #c "\n\t" \
                       "vpxord %%zmm" #d ", %%zmm" #d ", %%zmm" #d "\n\t"

__attribute__((target("avx512f,avx512vnni"))) static void *dp_loop(void *arg)
{
    long n = ITERS;
    int a = 0x01020304, b = (int)(size_t)arg + 5;
    pthread_barrier_wait(&start);
    double t0 = now_s();
    __asm__ volatile("vpbroadcastd %[a], %%zmm24\n\t"
                     "vpbroadcastd %[b], %%zmm25\n\t"
                     Z4(0, 1, 2, 3) Z4(4, 5, 6, 7) Z4(8, 9, 10, 11) Z4(12, 13, 14, 15) Z4(16, 17, 18, 19) Z4(20, 21, 22, 23)
                     "1:\n\t"
                     D4(0, 1, 2, 3) D4(4, 5, 6, 7) D4(8, 9, 10, 11) D4(12, 13, 14, 15) D4(16, 17, 18, 19) D4(20, 21, 22, 23)
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

/* One trial of the peak loop on `threads` threads; the best so far per
 * thread count is kept in best_peak[].  Trials run between the kernels'
 * own, so on a shared machine both see the same load (the share is the
 * ratio of two bests taken over the same minutes). */
static double best_peak[65];

static void peak_trial(int threads)
{
    pthread_t tid[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) pthread_create(&tid[i], NULL, dp_loop, (void *)(size_t)i);
    double worst = 0;
    for (int i = 0; i < threads; i++) {
        void *r = NULL;
        pthread_join(tid[i], &r);
        if (r && *(double *)r > worst) worst = *(double *)r;
        free(r);
    }
    pthread_barrier_destroy(&start);
    double gops = (double)threads * ITERS * CHAINS * 64 * 2 / worst / 1e9;
    if (gops > best_peak[threads]) best_peak[threads] = gops;
}

/* One GEMM shape: returns the best GOPS of the kernel on one thread and of
 * st_gemm_s8_run on the pool. */
static void gemm_shape(st_pool *pool, int64_t m, int64_t n, int64_t k, double *kern, double *run)
{
    uint8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    int32_t *c = malloc((size_t)(m * n) * sizeof *c);
    int64_t *koff = malloc((size_t)k * sizeof *koff), kq = (k + 3) / 4, *off = malloc((size_t)kq * sizeof *off);
    for (int64_t i = 0; i < m * k; i++) a[i] = (uint8_t)(i * 7 + 3);
    for (int64_t i = 0; i < k * n; i++) b[i] = (uint8_t)(i * 13 + 1);
    for (int64_t i = 0; i < k; i++) koff[i] = i;
    for (int64_t q = 0; q < kq; q++) off[q] = q * ST_S8_NR * 4;
    st_s8_packed *ap = st_gemm_s8_pack_a(a, ST_I8, m, m, k, koff, k), *bp = st_gemm_s8_pack_b(b, ST_U8, k, n, n, 1);
    st_s8_b bb = {bp->data, off, (int64_t)st_gemm_s8_panel_bytes(kq)};
    st_s8_epi e = {0};
    e.out = ST_S8_OUT_I32;
    double ops = 2.0 * (double)m * (double)n * (double)k;
    int reps = (int)(1e10 / ops) + 1;
    *kern = *run = 0;
    for (int t = 0; t < 9; t++) {
        peak_trial(1);
        double t0 = now_s();
        for (int r = 0; r < reps; r++) st_gemm_s8_block(ap->data, false, &bb, kq, m, n, c, n, &e);
        double g = ops * reps / (now_s() - t0) / 1e9;
        if (g > *kern) *kern = g;
    }
    st_s8_gemm g = {0};
    g.m = m, g.n = n, g.k = k, g.a = a, g.a_type = ST_I8, g.a_rs = k, g.a_cs = 1, g.b = bp, g.out = ST_S8_OUT_I32;
    g.c = c, g.c_rs = n, g.c_cs = 1;
    for (int t = 0; t < 9; t++) {
        peak_trial(g_threads);
        double t0 = now_s();
        for (int r = 0; r < reps; r++) st_gemm_s8_run(pool, &g);
        double gg = ops * reps / (now_s() - t0) / 1e9;
        if (gg > *run) *run = gg;
    }
    st_gemm_s8_packed_free(ap);
    st_gemm_s8_packed_free(bp);
    free(a), free(b), free(c), free(koff), free(off);
}

/* One ConvInteger-like conv (X u8 with a zero point, W s8, int32 out) on
 * the pool through st_conv_s8: best GOPS (2 per multiply-add of the
 * unpadded conv) over a few repetitions, weights packed once outside. */
static double conv_shape(st_pool *pool, int64_t cin, int64_t cout, int64_t hw, int64_t k, int64_t stride)
{
    int64_t oh = (hw + 2 * (k / 2) - k) / stride + 1;
    st_operand x = {0}, w = {0}, y = {0};
    x.dtype = ST_U8, x.rank = 4, x.sizes[0] = 1, x.sizes[1] = cin, x.sizes[2] = x.sizes[3] = hw;
    w.dtype = ST_I8, w.rank = 4, w.sizes[0] = cout, w.sizes[1] = cin, w.sizes[2] = w.sizes[3] = k;
    y.dtype = ST_I32, y.rank = 4, y.sizes[0] = 1, y.sizes[1] = cout, y.sizes[2] = y.sizes[3] = oh;
    st_strides_contiguous(4, x.sizes, x.strides);
    st_strides_contiguous(4, w.sizes, w.strides);
    st_strides_contiguous(4, y.sizes, y.strides);
    x.data = malloc((size_t)(cin * hw * hw));
    w.data = malloc((size_t)(cout * cin * k * k));
    y.data = malloc((size_t)(cout * oh * oh) * 4);
    for (int64_t i = 0; i < cin * hw * hw; i++) ((uint8_t *)x.data)[i] = (uint8_t)(i * 29 + 7);
    for (int64_t i = 0; i < cout * cin * k * k; i++) ((uint8_t *)w.data)[i] = (uint8_t)(i * 17 + 3);
    memset(y.data, 0, (size_t)(cout * oh * oh) * 4);
    st_conv_s8_window win = {2, {k, k}, {stride, stride}, {1, 1}, {k / 2, k / 2}, 1};
    st_s8_packed *wp = st_conv_s8_pack(&w, &win);
    st_conv_s8_args a = {0};
    a.win = &win, a.x = &x, a.x_zp = 118, a.w = wp, a.out = ST_S8_OUT_I32, a.y = &y;
    double ops = 2.0 * (double)(cout * cin * k * k) * (double)(oh * oh), best = 0;
    int reps = (int)(1e10 / ops) + 1;
    for (int t = 0; t < 9; t++) {
        peak_trial(g_threads);
        double t0 = now_s();
        for (int r = 0; r < reps; r++) st_conv_s8(pool, &a);
        double g = ops * reps / (now_s() - t0) / 1e9;
        if (g > best) best = g;
    }
    st_gemm_s8_packed_free(wp);
    free(x.data), free(w.data), free(y.data);
    return best;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (threads < 1 || threads > 64) threads = 2;
    g_threads = threads;
    if (!__builtin_cpu_supports("avx512vnni") || !st_gemm_s8_fast()) {
        fprintf(stderr, "vnni_peak: this CPU has no AVX-512 VNNI (or STRATA_CPU_NO_AVX512 is set)\n");
        return 1;
    }
    for (int t = 0; t < 10; t++) {
        peak_trial(1);
        peak_trial(threads);
    }
    /* In a session the kernels run on one of the pool's `threads` workers
     * and the others join its loops; here the main thread calls, so the
     * pool's workers and the caller share the cores (st_parallel_for is
     * serial on a pool of one worker, so a pool of threads - 1 would not
     * do).  The extra thread only takes turns: the chunks are the same. */
    st_pool *pool = threads > 1 ? st_pool_create(threads) : NULL;
    static const int64_t SHAPES[][3] = {{64, 4096, 576}, {32, 4096, 288}, {128, 1024, 1152}, {256, 256, 2304}, {64, 16384, 64}};
    enum { NS = sizeof SHAPES / sizeof SHAPES[0] };
    double kern[NS], run[NS];
    for (int s = 0; s < NS; s++) gemm_shape(pool, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2], &kern[s], &run[s]);
    /* cin, cout, input size, kernel, stride: the ConvInteger comparison's
     * shape and the quantized segmentation net's layers (bench/cpu/quant_models.py) */
    static const int64_t CONVS[][5] = {{64, 64, 256, 3, 1}, {3, 32, 1024, 3, 1}, {32, 64, 1024, 3, 2}, {64, 32, 512, 3, 1},
                                       {32, 16, 1024, 3, 1}, {256, 256, 32, 3, 1}};
    enum { NC = sizeof CONVS / sizeof CONVS[0] };
    double conv[NC];
    for (int s = 0; s < NC; s++) conv[s] = conv_shape(pool, CONVS[s][0], CONVS[s][1], CONVS[s][2], CONVS[s][3], CONVS[s][4]);
    double p1 = best_peak[1], pn = best_peak[threads];
    printf("{\"threads\": %d, \"peak_gops_1\": %.1f, \"peak_gops\": %.1f, \"gemm\": [", threads, p1, pn);
    for (int s = 0; s < NS; s++)
        printf("%s{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"kernel_gops_1\": %.1f, \"kernel_share_1\": %.3f, "
               "\"run_gops\": %.1f, \"run_share\": %.3f}",
               s ? ", " : "", (long long)SHAPES[s][0], (long long)SHAPES[s][1], (long long)SHAPES[s][2], kern[s], kern[s] / p1,
               run[s], run[s] / pn);
    printf("], \"conv\": [");
    for (int s = 0; s < NC; s++)
        printf("%s{\"cin\": %lld, \"cout\": %lld, \"hw\": %lld, \"k\": %lld, \"stride\": %lld, \"gops\": %.1f, \"share\": %.3f}",
               s ? ", " : "", (long long)CONVS[s][0], (long long)CONVS[s][1], (long long)CONVS[s][2], (long long)CONVS[s][3],
               (long long)CONVS[s][4], conv[s], conv[s] / pn);
    printf("]}\n");
    st_pool_destroy(pool);
    return 0;
}
