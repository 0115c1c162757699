/*
 * consumer.c — a program built against an installed strata, as a user
 * would build one (tests/install/install_test.sh builds it with pkg-config,
 * with CMake's find_package, and statically).  It uses strata.h alone.
 *
 * usage: consumer DIR [--cuda]
 *   DIR holds c2f.onnx, c2f_input_0.npy and c2f_ref/y.npy (scripts/models/
 *   seed.py).  Prints the library file strata was loaded from and the
 *   library's version, runs the model on the CPU and compares every output
 *   element with PyTorch's (|got - ref| <= 1e-5 + 1e-5 |ref|, the output
 *   poisoned first), checks that a wrong buffer size is refused, and prints
 *   PASS.  With --cuda it does the same on a CUDA session and prints
 *   "cuda: ok, ..." or, where the session cannot be made (no GPU),
 *   "cuda: " and strata's message.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"

/* Runs c2f on a session of m with options o (NULL: defaults) and compares
 * every element of y with PyTorch's: |got - ref| <= 1e-5 + 1e-5 |ref|, the
 * output poisoned first.  Returns how many are out of tolerance, or -1
 * with strata's message in st_last_error(). */
static long run_c2f(const st_model *m, const st_session_options *o, const float *x, int rank, const int64_t *dims,
                    size_t bytes, const float *ref, size_t ref_bytes, double *worst)
{
    st_session *s;
    st_tensor *t = NULL;
    long bad = -1;
    if (st_session_create(m, o, &s) != ST_OK) return -1;
    if (st_session_set_input_checked(s, "x", ST_F32, rank, dims, x, bytes - 4) != ST_ERR_SHAPE) {
        fprintf(stderr, "a buffer 4 bytes short was not refused\n");
        goto done;
    }
    printf("short buffer refused: %s\n", st_last_error());
    if (st_session_set_input_checked(s, "x", ST_F32, rank, dims, x, bytes) != ST_OK || st_session_run(s) != ST_OK ||
        st_session_output(s, "y", &t) != ST_OK)
        goto done;
    size_t n = (size_t)st_tensor_numel(t);
    if (n * sizeof(float) != ref_bytes) {
        fprintf(stderr, "y has %zu elements, the reference %zu\n", n, ref_bytes / sizeof(float));
        goto done;
    }
    float *y = malloc(ref_bytes);
    for (size_t i = 0; i < n; i++) y[i] = NAN; /* poison */
    if (st_tensor_read(t, ST_F32, y, ref_bytes) == ST_OK) {
        bad = 0;
        *worst = 0;
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)y[i] - (double)ref[i]);
            if (!(d <= 1e-5 + 1e-5 * fabs((double)ref[i]))) bad++;
            if (!(d <= *worst)) *worst = d;
        }
    }
    free(y);
done:
    if (t) st_tensor_free(t);
    st_session_free(s);
    return bad;
}

/* A little-endian float32 .npy in C order: its dims and data (malloc'd). */
static float *read_npy(const char *path, int *rank, int64_t *dims, size_t *bytes)
{
    FILE *f = fopen(path, "rb");
    unsigned char pre[10];
    if (!f || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
        if (f) fclose(f);
        return NULL;
    }
    size_t hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    char hdr[1024];
    if (hlen >= sizeof hdr || fread(hdr, 1, hlen, f) != hlen) {
        fclose(f);
        return NULL;
    }
    hdr[hlen] = 0;
    const char *shape = strstr(hdr, "'shape': (");
    if (!strstr(hdr, "'descr': '<f4'") || !strstr(hdr, "'fortran_order': False") || !shape) {
        fclose(f);
        return NULL;
    }
    size_t n = 1;
    *rank = 0;
    for (const char *p = shape + 10; *p != ')' && *rank < ST_MAX_RANK;) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p) break;
        dims[(*rank)++] = d;
        n *= (size_t)d;
        p = end;
        while (*p == ',' || *p == ' ') p++;
    }
    *bytes = n * sizeof(float);
    float *data = malloc(*bytes + 1);
    if (data && fread(data, 1, *bytes, f) != *bytes) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

#define FAIL(...)                          \
    do {                                   \
        printf("FAIL: " __VA_ARGS__);      \
        printf(" (%s)\n", st_last_error()); \
        return 1;                          \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: consumer DIR [--cuda]\n");
        return 2;
    }
    Dl_info where;
    if (!dladdr((void *)st_version, &where)) FAIL("dladdr found no object holding st_version");
    printf("library: %s\n", where.dli_fname);
    printf("version: %s (compiled against %d, running %d)\n", st_version(), ST_VERSION_NUMBER, st_version_number());
    if (st_version_number() != ST_VERSION_NUMBER) FAIL("the library's version is not the header's");

    char path[4096];
    int rank, ref_rank;
    int64_t dims[ST_MAX_RANK], ref_dims[ST_MAX_RANK];
    size_t bytes, ref_bytes;
    snprintf(path, sizeof path, "%s/c2f_input_0.npy", argv[1]);
    float *x = read_npy(path, &rank, dims, &bytes);
    snprintf(path, sizeof path, "%s/c2f_ref/y.npy", argv[1]);
    float *ref = read_npy(path, &ref_rank, ref_dims, &ref_bytes);
    if (!x || !ref) FAIL("cannot read the .npy files in %s", argv[1]);
    snprintf(path, sizeof path, "%s/c2f.onnx", argv[1]);
    st_model *m;
    if (st_model_load(path, &m) != ST_OK) FAIL("loading %s", path);
    double worst = 0;
    long bad = run_c2f(m, NULL, x, rank, dims, bytes, ref, ref_bytes, &worst);
    if (bad < 0) FAIL("running c2f on the CPU");
    printf("c2f: %zu elements, max abs error %.3g, %ld out of tolerance\n", ref_bytes / sizeof(float), worst, bad);
    if (bad) FAIL("c2f's output differs from PyTorch's");

    if (argc > 2 && !strcmp(argv[2], "--cuda")) {
        st_session_options o;
        st_session_options_init(&o);
        o.backend = ST_BACKEND_CUDA;
        bad = run_c2f(m, &o, x, rank, dims, bytes, ref, ref_bytes, &worst);
        if (bad < 0) printf("cuda: %s\n", st_last_error());
        else printf("cuda: ok, c2f max abs error %.3g, %ld out of tolerance\n", worst, bad);
        if (bad > 0) FAIL("c2f's output on CUDA differs from PyTorch's");
    }
    free(x);
    free(ref);
    st_model_free(m);
    printf("PASS\n");
    return 0;
}
