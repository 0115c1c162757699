/*
 * candidates.c — the measurement behind the CPU backend's choice of GEMM
 * (bench/RESULTS.md, "CPU speed (issue 9)"): single-thread f32 GEMM rate
 * of the candidates on this machine, on the GEMM shapes YOLOv8n's convs
 * reduce to (M output channels, K = C * kh * kw, N output pixels).
 *
 *   OpenBLAS 0.3.21  cblas_sgemm, the core type it detects (or the one
 *                    OPENBLAS_CORETYPE names when the library loads)
 *   oneDNN 2.6       dnnl_sgemm (OMP_NUM_THREADS=1)
 *   XNNPACK          xnn fully-connected f32 operator (Debian's 2022-02
 *                    snapshot), batch N, K inputs, M outputs, no threadpool:
 *                    the same multiply-adds with the pixels as its batch
 *   strata           st_sgemm_fast, the AVX-512 micro-kernel of
 *                    src/backends/cpu/gemm_avx512.c (A packed per call,
 *                    B read in place)
 *
 * Built and run by hand (not part of run.sh: it needs libdnnl-dev,
 * libxnnpack-dev and libpthreadpool-dev):
 *   cc -O2 -Iinclude -Isrc -Ibuild/gen bench/cpu/candidates.c build/libstrata.a \
 *      -lprotobuf-c -ldnnl -lopenblas -lXNNPACK -lpthread -lm -ldl -o /tmp/candidates
 *   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /tmp/candidates
 *   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX /tmp/candidates
 * Each figure is the best of 7 repetitions (load on a shared machine only
 * ever slows a run down).
 */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xnnpack.h>

#include "backends/cpu/gemm.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    static const int shapes[][3] = {{64, 576, 6400}, {128, 1152, 1600}, {32, 288, 25600}, {256, 2304, 400}, {80, 720, 6400}};
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS core: %s (OPENBLAS_CORETYPE=%s)\n", openblas_get_corename(), core ? core : "unset");
    printf("%-18s %10s %10s %10s %10s  GFLOP/s, one thread\n", "M x K x N", "OpenBLAS", "oneDNN", "XNNPACK", "strata");
    bool xnn = xnn_initialize(NULL) == xnn_status_success;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)k * n);
        float *c = malloc(sizeof(float) * (size_t)m * n);
        for (long i = 0; i < (long)m * k; i++) a[i] = (float)(i % 13) * 0.01f;
        for (long i = 0; i < (long)k * n; i++) b[i] = (float)(i % 7) * 0.01f;
        double best[4] = {1e9, 1e9, 1e9, 1e9};
        /* XNNPACK: y[N, M] = x[N, K] W[M, K]^T (its weights packed at creation) */
        float *xin = malloc(sizeof(float) * (size_t)n * k), *yout = malloc(sizeof(float) * (size_t)n * m);
        xnn_operator_t fc = NULL;
        for (long i = 0; i < (long)n * k; i++) xin[i] = (float)(i % 7) * 0.01f;
        if (xnn && xnn_create_fully_connected_nc_f32(k, m, k, m, a, NULL, -INFINITY, INFINITY, 0, &fc) != xnn_status_success)
            fc = NULL;
        if (fc && xnn_setup_fully_connected_nc_f32(fc, n, xin, yout, NULL) != xnn_status_success) {
            xnn_delete_operator(fc);
            fc = NULL;
        }
        for (int rep = 0; rep < 7; rep++) {
            double t0 = now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
            double t1 = now_s();
            dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
            double t2 = now_s();
            st_sgemm_fast(a, k, 1, b, n, 1, 1.0f, 0.0f, c, n, m, n, k);
            double t3 = now_s();
            if (fc) xnn_run_operator(fc, NULL);
            double t4 = now_s();
            if (t1 - t0 < best[0]) best[0] = t1 - t0;
            if (t2 - t1 < best[1]) best[1] = t2 - t1;
            if (t3 - t2 < best[2]) best[2] = t3 - t2;
            if (t4 - t3 < best[3]) best[3] = t4 - t3;
        }
        if (fc) xnn_delete_operator(fc);
        free(xin);
        free(yout);
        double f = 2.0 * m * n * k / 1e9;
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", m, k, n);
        printf("%-18s %10.1f %10.1f %10.1f %10.1f\n", name, f / best[0], f / best[1], fc || !xnn ? f / best[3] : 0.0,
               f / best[2]);
        free(a);
        free(b);
        free(c);
    }
    return 0;
}
