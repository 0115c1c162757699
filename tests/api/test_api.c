/*
 * test_api.c — the public C API, end to end, on dynamic_mlp.onnx (a model
 * with a symbolic batch dim and a light branch whose output is an offset
 * view), against PyTorch's outputs from scripts/models/seed.py.
 *
 * usage: test_api DIR   (DIR holds dynamic_mlp.onnx and its .npy files)
 *
 * Covers: loading from a file and from memory; input/output info with
 * symbolic dims; bind, run, read (outputs poisoned first; tolerance 1e-5
 * absolute + 1e-5 relative against PyTorch); re-planning for a new batch
 * size and back; the errors a caller can provoke (wrong rank, dim, dtype,
 * name, buffer size, unset input); st_session_set_input_checked refusing
 * dims that do not describe the caller's buffer, without reading past it;
 * reading a tensor after its session is freed; st_memory_usage's figures
 * rising and falling with a session's storages; and two sessions of one model running on two threads at once,
 * each checking every result bit for bit against a single-threaded run.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/file.h"
#include "io/npy.h"
#include "strata.h"

static int failures;
uint64_t st_session_plans_built(const st_session *s);
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
                    st_last_error());                                                 \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static char dir[4096];

static const char *path(const char *name)
{
    static char buf[8][4096];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static float *read_output(st_session *s, const char *name, int64_t rows, int64_t cols)
{
    st_tensor *t = NULL;
    if (st_session_output(s, name, &t) != ST_OK) return NULL;
    CHECK(st_tensor_rank(t) == 2 && st_tensor_dim(t, 0) == rows && st_tensor_dim(t, 1) == cols);
    CHECK(st_tensor_dtype(t) == ST_F32);
    float *out = malloc((size_t)(rows * cols) * sizeof *out);
    for (int64_t i = 0; i < rows * cols; i++) out[i] = NAN; /* poison */
    CHECK(st_tensor_read(t, ST_F32, out, (size_t)(rows * cols) * sizeof *out) == ST_OK);
    st_tensor_free(t);
    return out;
}

static int compare(const float *got, const float *want, int64_t n, const char *what)
{
    int bad = 0;
    double max_err = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= 1e-5 + 1e-5 * fabs(want[i]))) bad++;
        if (d > max_err || isnan(d)) max_err = isnan(d) ? INFINITY : d;
    }
    printf("%s: max abs error %.3g over %lld elements%s\n", what, max_err, (long long)n, bad ? "  FAIL" : "");
    CHECK(bad == 0);
    return bad;
}

static void test_info(const st_model *m)
{
    st_value_info in, out;
    CHECK(st_model_input_count(m) == 1 && st_model_output_count(m) == 2);
    CHECK(st_model_input_info(m, 0, &in) == ST_OK);
    CHECK(!strcmp(in.name, "x") && in.dtype == ST_F32 && in.rank == 2);
    CHECK(in.dims[0] < 0 && in.dim_names[0] && !strcmp(in.dim_names[0], "batch"));
    CHECK(in.dims[1] == 64 && in.dim_names[1] == NULL);
    CHECK(st_model_output_info(m, 1, &out) == ST_OK && !strcmp(out.name, "y1"));
    CHECK(st_model_input_info(m, 1, &in) == ST_ERR_INVALID_ARG);
}

static void test_errors(const st_model *m)
{
    st_session *s;
    CHECK(st_session_create(m, NULL, &s) == ST_OK);
    float x[3 * 64] = {0};
    int64_t d1[1] = {64}, d2[2] = {3, 63}, d3[2] = {3, 64};
    int64_t xi[3 * 64] = {0};
    CHECK(st_session_run(s) == ST_ERR_INVALID_ARG); /* nothing bound */
    CHECK(strstr(st_last_error(), "'x'") != NULL);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 1, d1, x, 64 * sizeof(float)) == ST_ERR_SHAPE);
    CHECK(strstr(st_last_error(), "rank") != NULL);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, d2, x, 3 * 63 * sizeof(float)) == ST_ERR_SHAPE);
    CHECK(strstr(st_last_error(), "dim 1 must be 64") != NULL);
    CHECK(st_session_set_input_checked(s, "x", ST_I64, 2, d3, xi, sizeof xi) == ST_ERR_DTYPE);
    CHECK(st_session_set_input_checked(s, "nope", ST_F32, 2, d3, x, sizeof x) == ST_ERR_INVALID_ARG);
    CHECK(strstr(st_last_error(), "'nope'") != NULL);
    st_tensor *t;
    CHECK(st_session_output(s, "y0", &t) == ST_ERR_INVALID_ARG); /* no run yet */
    /* the unchecked form stays (strata.h's compatibility rules) */
    CHECK(st_session_set_input(s, "x", ST_F32, 2, d3, x) == ST_OK);
    CHECK(st_session_run(s) == ST_OK);
    CHECK(st_session_output(s, "nope", &t) == ST_ERR_INVALID_ARG);
    CHECK(st_session_output(s, "y0", &t) == ST_OK);
    float small[4];
    CHECK(st_tensor_read(t, ST_F32, small, sizeof small) == ST_ERR_INVALID_ARG);
    st_tensor_free(t);
    st_session_free(s);
    st_session_options o;
    st_session_options_init(&o);
    o.precision = ST_I32;
    CHECK(st_session_create(m, &o, &s) == ST_ERR_INVALID_ARG);
}

/* st_session_set_input_checked refuses dims that do not describe the
 * caller's buffer, and reads none of it: the buffer ends at a page that
 * cannot be read, so a read past its end would crash the test. */
static void test_buffer_size(const st_model *m)
{
    st_session *s;
    CHECK(st_session_create(m, NULL, &s) == ST_OK);
    long page = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    if (map == MAP_FAILED) return;
    CHECK(mprotect(map + page, (size_t)page, PROT_NONE) == 0);
    size_t bytes = 2 * 64 * sizeof(float); /* two rows, at the very end of the readable page */
    float *x = (float *)(map + page - bytes);
    for (int i = 0; i < 2 * 64; i++) x[i] = (float)(i % 7) - 3.0f;
    int64_t two[2] = {2, 64}, three[2] = {3, 64}, huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, three, x, bytes) == ST_ERR_SHAPE);
    CHECK(strstr(st_last_error(), "input 'x': dims [3, 64] of float32 need 768 bytes, but the buffer has 512") != NULL);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, two, x, bytes + 4) == ST_ERR_SHAPE); /* too big is wrong too */
    CHECK(strstr(st_last_error(), "need 512 bytes, but the buffer has 516") != NULL);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, huge, x, bytes) == ST_ERR_SHAPE);
    CHECK(strstr(st_last_error(), "more than 2^64 bytes") != NULL);
    int64_t huge_empty[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 0}; /* no bytes at all */
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 3, huge_empty, x, bytes) == ST_ERR_SHAPE);
    CHECK(strstr(st_last_error(), "need 0 bytes, but the buffer has 512") != NULL);
    /* a float buffer of another float dtype is counted in its own dtype */
    CHECK(st_session_set_input_checked(s, "x", ST_F16, 2, two, x, bytes) == ST_ERR_SHAPE);
    CHECK(strstr(st_last_error(), "of float16 need 256 bytes") != NULL);
    CHECK(st_session_run(s) == ST_ERR_INVALID_ARG); /* nothing was bound by the refused calls */
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, two, x, bytes) == ST_OK);
    CHECK(st_session_run(s) == ST_OK);
    CHECK(st_session_wait(s) == ST_OK);
    st_session_free(s);
    munmap(map, (size_t)page * 2);
    printf("buffer size: wrong dims refused without reading past the buffer\n");
}

typedef struct worker {
    const st_model *m;
    const float *xs;          /* n_inputs inputs of rows x 64 */
    const float *refs;        /* the single-threaded y0 for each */
    int n_inputs, rows, iters;
    int mismatches;
    st_status err;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    st_session *s;
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 2;
    if ((w->err = st_session_create(w->m, &o, &s)) != ST_OK) return NULL;
    int64_t dims[2] = {w->rows, 64};
    for (int it = 0; it < w->iters; it++) {
        int k = it % w->n_inputs;
        if ((w->err = st_session_set_input_checked(s, "x", ST_F32, 2, dims, w->xs + (size_t)k * w->rows * 64,
                                                  (size_t)w->rows * 64 * sizeof(float))) != ST_OK)
            break;
        if ((w->err = st_session_run(s)) != ST_OK) break;
        float *y = read_output(s, "y0", w->rows, 16);
        if (!y) {
            w->err = ST_ERR_INTERNAL;
            break;
        }
        if (memcmp(y, w->refs + (size_t)k * w->rows * 16, (size_t)w->rows * 16 * sizeof *y) != 0) w->mismatches++;
        free(y);
    }
    st_session_free(s);
    return NULL;
}

static void test_threads(const st_model *m)
{
    enum { N = 4, ROWS = 7 };
    float *xs = malloc(N * ROWS * 64 * sizeof *xs), *refs = malloc(N * ROWS * 16 * sizeof *refs);
    uint64_t r = 12345;
    for (int i = 0; i < N * ROWS * 64; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        xs[i] = (float)((double)(r >> 11) * 0x1p-53 * 2 - 1);
    }
    st_session *s;
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 1;
    CHECK(st_session_create(m, &o, &s) == ST_OK);
    int64_t dims[2] = {ROWS, 64};
    for (int k = 0; k < N; k++) {
        CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, dims, xs + k * ROWS * 64, ROWS * 64 * sizeof(float)) == ST_OK);
        CHECK(st_session_run(s) == ST_OK);
        float *y = read_output(s, "y0", ROWS, 16);
        if (y) memcpy(refs + k * ROWS * 16, y, ROWS * 16 * sizeof *y);
        free(y);
    }
    st_session_free(s);
    worker w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (worker){m, xs, refs, N, ROWS, 200, 0, ST_OK};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].err == ST_OK);
        CHECK(w[i].mismatches == 0);
    }
    printf("two sessions on two threads: %d and %d runs, %d and %d mismatches against the single-threaded run\n",
           w[0].iters, w[1].iters, w[0].mismatches, w[1].mismatches);
    free(xs);
    free(refs);
}

/* st_memory_usage: a session's storages raise the host figures while it
 * lives, the peak keeps the most, a tensor that outlives its session
 * keeps its storage's bytes counted, and freeing both gives every byte
 * back. */
static void test_memory(st_model *m, const st_npy *x)
{
    uint64_t live0 = 0, peak0 = 0, live1 = 0, peak1 = 0, live2 = 0, live3 = 0, peak3 = 0;
    CHECK(st_memory_usage(ST_BACKEND_CPU, &live0, NULL) == ST_OK);
    st_memory_reset_peak(ST_BACKEND_CPU);
    CHECK(st_memory_usage(ST_BACKEND_CPU, NULL, &peak0) == ST_OK && peak0 == live0);
    st_session *s;
    st_tensor *t = NULL;
    CHECK(st_session_create(m, NULL, &s) == ST_OK);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, x->dims, x->data, x->bytes) == ST_OK);
    CHECK(st_session_run(s) == ST_OK && st_session_wait(s) == ST_OK);
    CHECK(st_memory_usage(ST_BACKEND_CPU, &live1, &peak1) == ST_OK);
    CHECK(live1 > live0);
    CHECK(peak1 >= live1);
    CHECK(st_session_output(s, "y1", &t) == ST_OK);
    st_session_free(s);
    CHECK(st_memory_usage(ST_BACKEND_CPU, &live2, NULL) == ST_OK);
    CHECK(live2 > live0 && live2 <= live1); /* the output's storage (here the arena) stays */
    st_tensor_free(t);
    CHECK(st_memory_usage(ST_BACKEND_CPU, &live3, &peak3) == ST_OK);
    CHECK(live3 == live0);
    CHECK(peak3 == peak1);
    CHECK(st_memory_usage((st_backend_kind)99, &live3, NULL) == ST_ERR_INVALID_ARG);
    printf("memory: %llu bytes held while the session ran, %llu at most; %llu after it and its tensor were freed\n",
           (unsigned long long)(live1 - live0), (unsigned long long)(peak1 - live0), (unsigned long long)(live3 - live0));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_api DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    st_npy x, y0, y1;
    if (st_npy_read(path("dynamic_mlp_input_0.npy"), &x) != ST_OK || st_npy_read(path("dynamic_mlp_y0.npy"), &y0) != ST_OK ||
        st_npy_read(path("dynamic_mlp_y1.npy"), &y1) != ST_OK) {
        fprintf(stderr, "test_api: %s\n", st_last_error());
        return 2;
    }
    int64_t rows = x.dims[0];

    st_model *m, *mm;
    CHECK(st_model_load(path("dynamic_mlp.onnx"), &m) == ST_OK);
    void *bytes;
    size_t len;
    CHECK(st_file_read(path("dynamic_mlp.onnx"), &bytes, &len) == ST_OK);
    CHECK(st_model_load_memory(bytes, len, NULL, &mm) == ST_OK);
    free(bytes);
    test_info(m);
    test_info(mm);

    /* bind, run, read, against PyTorch, with the sanitizer's poisoning on */
    st_session_options o;
    st_session_options_init(&o);
    o.sanitize = 1;
    st_session *s;
    CHECK(st_session_create(mm, &o, &s) == ST_OK);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, x.dims, x.data, x.bytes) == ST_OK);
    CHECK(st_session_run(s) == ST_OK);
    /* y1 is a view at an offset into the light branch's output; reading it
     * right after submitting waits for exactly its writer */
    float *g1 = read_output(s, "y1", rows, 16), *g0 = read_output(s, "y0", rows, 16);
    if (g0 && g1) {
        compare(g0, y0.data, rows * 16, "y0 (batch 5)");
        compare(g1, y1.data, rows * 16, "y1 (batch 5, offset view)");
    }
    free(g0);
    free(g1);
    /* a smaller batch re-plans; the first rows must match */
    int64_t d3[2] = {3, 64};
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, d3, x.data, 3 * 64 * sizeof(float)) == ST_OK);
    CHECK(st_session_run(s) == ST_OK);
    g0 = read_output(s, "y0", 3, 16);
    if (g0) compare(g0, y0.data, 3 * 16, "y0 (batch 3)");
    free(g0);
    /* back to 5: the cached plan, nothing planned again */
    CHECK(st_session_plans_built(s) == 2);
    CHECK(st_session_set_input_checked(s, "x", ST_F32, 2, x.dims, x.data, x.bytes) == ST_OK);
    CHECK(st_session_run(s) == ST_OK);
    CHECK(st_session_plans_built(s) == 2);
    printf("plans built for batch 5, 3, 5: %llu\n", (unsigned long long)st_session_plans_built(s));
    st_tensor *t;
    CHECK(st_session_output(s, "y1", &t) == ST_OK);
    st_session_free(s); /* the tensor keeps its storage alive */
    float *late = malloc((size_t)rows * 16 * sizeof *late);
    CHECK(st_tensor_read(t, ST_F32, late, (size_t)rows * 16 * sizeof *late) == ST_OK);
    compare(late, y1.data, rows * 16, "y1 read after the session was freed");
    free(late);
    st_tensor_free(t);

    test_memory(m, &x);
    test_errors(m);
    test_buffer_size(m);
    test_threads(m);
    st_model_free(mm);
    st_model_free(m);
    st_npy_free(&x);
    st_npy_free(&y0);
    st_npy_free(&y1);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
