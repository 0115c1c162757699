/*
 * st_bench.c — the strata side of bench/cpu/run.sh: times one model through
 * the public C API, the way bench/cpu/ort_bench.js times ONNX Runtime.
 *
 * Loads MODEL, binds INPUT.npy (f32, C order) to the model's first input,
 * runs `warmup` untimed runs, then `runs` timed ones (st_session_run +
 * st_session_wait, wall clock), and prints one JSON line: median, min, max,
 * every run's milliseconds, the process's peak RSS (VmHWM) and its RSS
 * before the model was loaded.
 *
 *   st_bench MODEL INPUT.npy [--threads N] [--runs N] [--warmup N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A little-endian f32 .npy in C order: its shape and data. */
static void *read_npy(const char *path, int *rank, int64_t *dims)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char head[12];
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
        fclose(f);
        return NULL;
    }
    size_t hlen = head[8] | (size_t)head[9] << 8;
    if (head[6] >= 2) {
        if (fread(head + 10, 1, 2, f) != 2) {
            fclose(f);
            return NULL;
        }
        hlen |= (size_t)head[10] << 16 | (size_t)head[11] << 24;
    }
    char *h = calloc(hlen + 1, 1);
    if (!h || fread(h, 1, hlen, f) != hlen || !strstr(h, "'<f4'") || strstr(h, "True")) {
        free(h);
        fclose(f);
        return NULL;
    }
    char *p = strstr(h, "'shape': (");
    *rank = 0;
    int64_t numel = 1;
    for (p = p ? p + 10 : NULL; p && *p && *p != ')' && *rank < 8;) {
        dims[*rank] = strtoll(p, &p, 10);
        numel *= dims[(*rank)++];
        while (*p == ',' || *p == ' ') p++;
    }
    free(h);
    float *data = malloc((size_t)numel * sizeof *data + 1);
    if (!data || fread(data, sizeof *data, (size_t)numel, f) != (size_t)numel) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

int main(int argc, char **argv)
{
    int threads = 2, runs = 20, warmup = 3;
    const char *pos[2] = {NULL, NULL};
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (np < 2) pos[np++] = argv[i];
    }
    if (np < 2 || runs < 1) {
        fprintf(stderr, "usage: st_bench MODEL INPUT.npy [--threads N] [--runs N] [--warmup N]\n");
        return 2;
    }
    long baseline = status_kb("VmRSS");
    int rank;
    int64_t dims[8];
    void *data = read_npy(pos[1], &rank, dims);
    if (!data) {
        fprintf(stderr, "st_bench: %s: not a little-endian f32 .npy in C order\n", pos[1]);
        return 1;
    }
    st_model *m;
    st_session *s;
    st_session_options o;
    st_session_options_init(&o);
    o.threads = threads;
    st_value_info vi;
    if (st_model_load(pos[0], &m) != ST_OK || st_session_create(m, &o, &s) != ST_OK ||
        st_model_input_info(m, 0, &vi) != ST_OK || st_session_set_input(s, vi.name, ST_F32, rank, dims, data) != ST_OK) {
        fprintf(stderr, "st_bench: %s\n", st_last_error());
        return 1;
    }
    double *t = calloc((size_t)runs, sizeof *t), *sorted = calloc((size_t)runs, sizeof *sorted);
    for (int i = 0; i < warmup + runs; i++) {
        double t0 = now_ms();
        if (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK) {
            fprintf(stderr, "st_bench: %s\n", st_last_error());
            return 1;
        }
        if (i >= warmup) t[i - warmup] = now_ms() - t0;
    }
    memcpy(sorted, t, (size_t)runs * sizeof *t);
    qsort(sorted, (size_t)runs, sizeof *sorted, cmp);
    double med = runs % 2 ? sorted[runs / 2] : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
    printf("{\"runtime\": \"strata\", \"model\": \"%s\", \"threads\": %d, \"runs\": %d, \"median_ms\": %.4f, "
           "\"min_ms\": %.4f, \"max_ms\": %.4f, \"times_ms\": [",
           pos[0], threads, runs, med, sorted[0], sorted[runs - 1]);
    for (int i = 0; i < runs; i++) printf("%s%.4f", i ? ", " : "", t[i]);
    printf("], \"peak_rss_bytes\": %ld, \"baseline_rss_bytes\": %ld}\n", status_kb("VmHWM") * 1024, baseline * 1024);
    st_session_free(s);
    st_model_free(m);
    free(data);
    free(t);
    free(sorted);
    return 0;
}
