/*
 * test_sequence.c — sequence and optional inputs and outputs through the
 * public API, on the models of scripts/models/sequences.py, against float64
 * references computed here from fresh random inputs (the seed, from the
 * clock, is printed; STRATA_TEST_SEED repeats a run).  Outputs are read
 * into NaN-poisoned buffers; tolerance 1e-5 absolute + 1e-5 relative.
 *
 * usage: test_sequence DIR [cpu|opencl]   (exit 77: the backend is not here)
 *
 * Covers: the kinds of inputs and outputs; binding a sequence element by
 * element (lengths 0 to 3, elements of different shapes) and reading a
 * sequence output element by element; SequenceInsert at every position,
 * SequenceAt, SequenceLength, SequenceErase, ConcatFromSequence (with
 * new_axis), SplitToSequence; a Loop carrying a sequence; an optional input
 * present and absent, an optional output; the plan cache keyed on a
 * sequence's length and its elements' shapes; that SequenceAt is a view and
 * a Concat of computed elements is filled in place (the plan); and the
 * errors a caller can provoke: an optional or an element left unbound, a
 * sequence output read as a tensor, a tensor call on a sequence input, an
 * element of the wrong dtype, shape, size or index, SequenceAt out of range
 * and ConcatFromSequence of an empty sequence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/plan.h"
#include "strata.h"

static int failures;
uint64_t st_session_plans_built(const st_session *s);
const st_plan *st_session_plan(const st_session *s);

#define CHECK(cond)                                                                                    \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, st_last_error()); \
            failures++;                                                                                \
        }                                                                                              \
    } while (0)

/* A call that must fail with code, its message naming every word given. */
#define CHECK_ERR(call, code, ...)                                                                  \
    do {                                                                                            \
        st_status r_ = (call);                                                                      \
        const char *w_[] = {__VA_ARGS__};                                                           \
        if (r_ != (code)) {                                                                         \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call, \
                    st_status_name(r_), st_status_name(code), st_last_error());                     \
            failures++;                                                                             \
        }                                                                                           \
        for (size_t k_ = 0; k_ < sizeof w_ / sizeof *w_; k_++)                                      \
            if (!strstr(st_last_error(), w_[k_])) {                                                 \
                fprintf(stderr, "%s:%d: message lacks '%s': %s\n", __FILE__, __LINE__, w_[k_],      \
                        st_last_error());                                                           \
                failures++;                                                                         \
            }                                                                                       \
    } while (0)

static char dir[4096];
static st_session_options opts;
static uint64_t rng;

static double uniform(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static int below(int n) { return (int)((uniform() + 1.0) * 0.5 * n) % n; }

static st_model *load(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    st_model *m = NULL;
    if (st_model_load(path, &m) != ST_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, st_last_error());
        exit(1);
    }
    return m;
}

/* A tensor of rows x cols floats, random, with its float64 copy. */
typedef struct mat {
    int rows, cols;
    float f[64];
    double d[64];
} mat;

static mat random_mat(int rows, int cols)
{
    mat m = {rows, cols, {0}, {0}};
    for (int i = 0; i < rows * cols; i++) {
        m.f[i] = (float)uniform();
        m.d[i] = m.f[i];
    }
    return m;
}

static st_status bind_mat(st_session *s, const char *name, int index, const mat *m)
{
    int64_t dims[2] = {m->rows, m->cols};
    size_t bytes = (size_t)(m->rows * m->cols) * sizeof(float);
    if (index < 0) return st_session_set_input_checked(s, name, ST_F32, 2, dims, m->f, bytes);
    return st_session_set_input_element(s, name, index, ST_F32, 2, dims, m->f, bytes);
}

/* Compares tensor t (freed) with want, a rank-`rank` float64 array. */
static void expect(st_tensor *t, const char *what, int rank, const int64_t *dims, const double *want)
{
    if (!t) {
        fprintf(stderr, "%s: no tensor (%s)\n", what, st_last_error());
        failures++;
        return;
    }
    int64_t n = 1;
    bool shape = st_tensor_rank(t) == rank && st_tensor_dtype(t) == ST_F32;
    for (int d = 0; d < rank && shape; d++) {
        shape = st_tensor_dim(t, d) == dims[d];
        n *= dims[d];
    }
    if (!shape) {
        fprintf(stderr, "%s: wrong rank, shape or dtype\n", what);
        failures++;
        st_tensor_free(t);
        return;
    }
    float *got = malloc((size_t)n * sizeof *got + 1);
    for (int64_t i = 0; i < n; i++) got[i] = NAN; /* poison */
    CHECK(st_tensor_read(t, ST_F32, got, (size_t)n * sizeof *got) == ST_OK);
    st_tensor_free(t);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-5 + 1e-5 * fabs(want[i]))) bad++;
    if (bad) {
        fprintf(stderr, "%s: %d of %lld elements differ\n", what, bad, (long long)n);
        failures++;
    }
    free(got);
}

static st_tensor *output(st_session *s, const char *name)
{
    st_tensor *t = NULL;
    CHECK(st_session_output(s, name, &t) == ST_OK);
    return t;
}

static st_tensor *element(st_session *s, const char *name, int k)
{
    st_tensor *t = NULL;
    CHECK(st_session_output_element(s, name, k, &t) == ST_OK);
    return t;
}

static int length(st_session *s, const char *name)
{
    int n = -1;
    CHECK(st_session_output_length(s, name, &n) == ST_OK);
    return n;
}

/* ---- seq_ops: insert, at, length, concat, erase, split ---- */

static void run_seq_ops(st_session *s, int n, const int *rows, int t_rows, int64_t pos)
{
    mat S[4], T = random_mat(t_rows, 4);
    CHECK(st_session_set_input_sequence(s, "S", n) == ST_OK);
    for (int k = 0; k < n; k++) {
        S[k] = random_mat(rows[k], 4);
        CHECK(bind_mat(s, "S", k, &S[k]) == ST_OK);
    }
    CHECK(bind_mat(s, "T", -1, &T) == ST_OK);
    CHECK(st_session_set_input_checked(s, "pos", ST_I64, 0, NULL, &pos, sizeof pos) == ST_OK);
    if (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK) {
        fprintf(stderr, "seq_ops (length %d, pos %lld): %s\n", n, (long long)pos, st_last_error());
        failures++;
        return;
    }
    /* the reference: S with relu(T) inserted at pos */
    mat r = T;
    for (int i = 0; i < r.rows * r.cols; i++) r.d[i] = r.d[i] > 0 ? r.d[i] : 0;
    const mat *s2[5];
    int at = (int)(pos < 0 ? pos + n : pos), m = 0;
    for (int k = 0; k <= n; k++) {
        if (k == at) s2[m++] = &r;
        if (k < n) s2[m++] = &S[k];
    }
    st_tensor *t = output(s, "len");
    int64_t len = -1;
    if (t) {
        CHECK(st_tensor_read(t, ST_I64, &len, sizeof len) == ST_OK);
        st_tensor_free(t);
    }
    CHECK(len == m);
    double want[256];
    const mat *last = s2[m - 1];
    for (int i = 0; i < last->rows * 4; i++) want[i] = last->d[i] * 2;
    expect(output(s, "last"), "last", 2, (int64_t[]){last->rows, 4}, want);
    int total = 0;
    for (int k = 0; k < m; k++) {
        memcpy(want + total * 4, s2[k]->d, (size_t)s2[k]->rows * 4 * sizeof *want);
        total += s2[k]->rows;
    }
    expect(output(s, "cat"), "cat", 2, (int64_t[]){total, 4}, want);
    CHECK(length(s, "rest") == m - 1);
    for (int k = 1; k < m; k++) expect(element(s, "rest", k - 1), "rest[k]", 2, (int64_t[]){s2[k]->rows, 4}, s2[k]->d);
    /* pieces: (cat + 1) in chunks of two rows */
    int chunks = (total + 1) / 2;
    CHECK(length(s, "pieces") == chunks);
    for (int c = 0; c < chunks && c < length(s, "pieces"); c++) {
        int rr = c * 2 + 2 <= total ? 2 : total - c * 2;
        double w[8];
        for (int i = 0; i < rr * 4; i++) w[i] = want[c * 8 + i] + 1;
        expect(element(s, "pieces", c), "pieces[c]", 2, (int64_t[]){rr, 4}, w);
    }
}

static void test_seq_ops(void)
{
    st_model *m = load("seq_ops.onnx");
    CHECK(st_model_input_kind(m, 0) == ST_KIND_SEQUENCE);
    CHECK(st_model_input_kind(m, 1) == ST_KIND_TENSOR);
    CHECK(st_model_output_kind(m, 0) == ST_KIND_TENSOR);
    CHECK(st_model_output_kind(m, 3) == ST_KIND_SEQUENCE);
    st_value_info info;
    CHECK(st_model_input_info(m, 0, &info) == ST_OK && info.dtype == ST_F32 && info.rank == 2 && info.dims[1] == 4);
    st_session *s;
    CHECK(st_session_create(m, &opts, &s) == ST_OK);
    /* every length 0..3 and every position -n..n, rows drawn at random */
    for (int n = 0; n <= 3; n++)
        for (int64_t pos = -n; pos <= n; pos++) {
            int rows[3] = {1 + below(4), 1 + below(4), 1 + below(4)};
            run_seq_ops(s, n, rows, 1 + below(3), pos);
        }
    printf("seq_ops: lengths 0-3, every position: checked\n");

    /* the plan cache: same length and shapes, no new plan; another shape of
     * one element, a new plan; back again, the cached one */
    int rows[3] = {2, 3, 1};
    run_seq_ops(s, 3, rows, 2, 1);
    uint64_t built = st_session_plans_built(s);
    run_seq_ops(s, 3, rows, 2, 1);
    CHECK(st_session_plans_built(s) == built);
    rows[1] = 4;
    run_seq_ops(s, 3, rows, 2, 1);
    CHECK(st_session_plans_built(s) == built + 1);
    rows[1] = 3;
    run_seq_ops(s, 3, rows, 2, 1);
    CHECK(st_session_plans_built(s) == built + 1);
    /* SequenceAt lowered to a view of its element (the Mul reads it) */
    const st_plan *p = st_session_plan(s);
    int views = 0;
    for (int i = 0; p && i < p->n_nodes; i++)
        if (!strcmp(p->g->nodes[i].name, "at")) views += p->nodes[i].kind == ST_PN_VIEW;
    CHECK(views == 1);

    /* errors */
    st_tensor *t = NULL;
    CHECK_ERR(st_session_output(s, "rest", &t), ST_ERR_INVALID_ARG, "'rest'", "sequence of 3 tensors");
    CHECK(t == NULL);
    CHECK_ERR(st_session_output_length(s, "cat", &(int){0}), ST_ERR_INVALID_ARG, "'cat'", "not a sequence");
    CHECK_ERR(st_session_output_element(s, "rest", 3, &t), ST_ERR_INVALID_ARG, "'rest'", "element 3 of a sequence of 3");
    mat x = random_mat(2, 4);
    CHECK_ERR(bind_mat(s, "S", -1, &x), ST_ERR_INVALID_ARG, "'S'", "st_session_set_input_sequence");
    CHECK_ERR(st_session_set_input_absent(s, "S"), ST_ERR_INVALID_ARG, "'S'", "a sequence");
    CHECK_ERR(st_session_set_input_sequence(s, "T", 2), ST_ERR_INVALID_ARG, "'T'", "a tensor");
    CHECK_ERR(st_session_set_input_sequence(s, "S", -1), ST_ERR_INVALID_ARG, "'S'");
    CHECK(st_session_set_input_sequence(s, "S", 2) == ST_OK);
    CHECK_ERR(bind_mat(s, "S", 2, &x), ST_ERR_INVALID_ARG, "'S'", "element 2 of a sequence of 2");
    mat wide = random_mat(2, 5);
    CHECK_ERR(bind_mat(s, "S", 0, &wide), ST_ERR_SHAPE, "S[0]", "dim 1");
    int32_t ints[8] = {0};
    CHECK_ERR(st_session_set_input_element(s, "S", 0, ST_I32, 2, (int64_t[]){2, 4}, ints, sizeof ints), ST_ERR_DTYPE,
              "S[0]", "int32");
    CHECK_ERR(st_session_set_input_element(s, "S", 0, ST_F32, 2, (int64_t[]){2, 4}, x.f, 4), ST_ERR_SHAPE, "S[0]",
              "buffer");
    CHECK(bind_mat(s, "S", 0, &x) == ST_OK);
    CHECK_ERR(st_session_run(s), ST_ERR_INVALID_ARG, "'S'", "element 1");
    st_session_free(s);
    st_model_free(m);
}

/* ---- a Loop carrying a sequence, stacked with new_axis ---- */

static void test_loop_seq(void)
{
    st_model *m = load("loop_seq.onnx");
    st_session *s;
    CHECK(st_session_create(m, &opts, &s) == ST_OK);
    for (int64_t n = 1; n <= 4; n++) {
        mat X = random_mat(1 + below(3), 3);
        CHECK(bind_mat(s, "X", -1, &X) == ST_OK);
        CHECK(st_session_set_input_checked(s, "n", ST_I64, 0, NULL, &n, sizeof n) == ST_OK);
        if (st_session_run(s) != ST_OK || st_session_wait(s) != ST_OK) {
            fprintf(stderr, "loop_seq (n %lld): %s\n", (long long)n, st_last_error());
            failures++;
            continue;
        }
        CHECK(length(s, "seq") == n);
        double want[256];
        int per = X.rows * 3;
        for (int k = 0; k < n; k++) {
            for (int i = 0; i < per; i++) want[k * per + i] = X.d[i] * (k + 1);
            expect(element(s, "seq", k), "seq[k]", 2, (int64_t[]){X.rows, 3}, want + k * per);
        }
        expect(output(s, "stack"), "stack", 3, (int64_t[]){n, X.rows, 3}, want);
        /* the stack's Concat is filled in place by its computed elements */
        const st_plan *p = st_session_plan(s);
        int placed = 0;
        for (int i = 0; p && i < p->n_nodes; i++)
            if (!strcmp(p->g->nodes[i].op_type, "Concat")) placed += p->nodes[i].n_placed;
        CHECK(placed == n);
    }
    printf("loop_seq: trip counts 1-4 checked, the stack filled in place\n");
    /* zero iterations: an empty sequence, which ConcatFromSequence refuses */
    int64_t zero = 0;
    CHECK(st_session_set_input_checked(s, "n", ST_I64, 0, NULL, &zero, sizeof zero) == ST_OK);
    CHECK_ERR(st_session_run(s), ST_ERR_SHAPE, "'stack'", "empty");
    st_session_free(s);
    st_model_free(m);
}

/* ---- optionals ---- */

static void test_optional(void)
{
    st_model *m = load("optional.onnx");
    CHECK(st_model_input_kind(m, 0) == ST_KIND_OPTIONAL);
    CHECK(st_model_output_kind(m, 2) == ST_KIND_OPTIONAL);
    st_session *s;
    CHECK(st_session_create(m, &opts, &s) == ST_OK);
    CHECK_ERR(st_session_run(s), ST_ERR_INVALID_ARG, "'O'", "st_session_set_input_absent");
    for (int trial = 0; trial < 4; trial++) {
        bool present = trial % 2 == 0;
        float o[3];
        double y[3], od[3];
        for (int i = 0; i < 3; i++) {
            o[i] = (float)uniform();
            od[i] = o[i];
            y[i] = present ? od[i] + 1 : 0;
        }
        if (present) CHECK(st_session_set_input_checked(s, "O", ST_F32, 1, (int64_t[]){3}, o, sizeof o) == ST_OK);
        else CHECK(st_session_set_input_absent(s, "O") == ST_OK);
        CHECK(st_session_run(s) == ST_OK && st_session_wait(s) == ST_OK);
        st_tensor *t = output(s, "has");
        uint8_t has = 2;
        if (t) {
            CHECK(st_tensor_read(t, ST_BOOL, &has, 1) == ST_OK);
            st_tensor_free(t);
        }
        CHECK(has == present);
        expect(output(s, "y"), "y", 1, (int64_t[]){3}, y);
        int p = -1;
        CHECK(st_session_output_present(s, "echo", &p) == ST_OK && p == present);
        CHECK(st_session_output_present(s, "y", &p) == ST_OK && p == 1);
        if (present) {
            expect(output(s, "echo"), "echo", 1, (int64_t[]){3}, od);
        } else {
            t = NULL;
            CHECK_ERR(st_session_output(s, "echo", &t), ST_ERR_INVALID_ARG, "'echo'", "holds no value");
            CHECK_ERR(st_session_output_length(s, "echo", &p), ST_ERR_INVALID_ARG, "'echo'", "no value");
        }
    }
    printf("optional: present and absent checked\n");
    st_session_free(s);
    st_model_free(m);
}

/* ---- SequenceAt at a position the caller gives ---- */

static void test_seq_at_input(void)
{
    st_model *m = load("seq_at_input.onnx");
    st_session *s;
    CHECK(st_session_create(m, &opts, &s) == ST_OK);
    float e[3][2];
    double d[3][2];
    CHECK(st_session_set_input_sequence(s, "S", 3) == ST_OK);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 2; i++) d[k][i] = e[k][i] = (float)uniform();
        CHECK(st_session_set_input_element(s, "S", k, ST_F32, 1, (int64_t[]){2}, e[k], sizeof e[k]) == ST_OK);
    }
    for (int64_t i = -3; i < 3; i++) {
        CHECK(st_session_set_input_checked(s, "i", ST_I64, 0, NULL, &i, sizeof i) == ST_OK);
        CHECK(st_session_run(s) == ST_OK && st_session_wait(s) == ST_OK);
        expect(output(s, "y"), "y", 1, (int64_t[]){2}, d[i < 0 ? i + 3 : i]);
    }
    int64_t out_of_range = 3;
    CHECK(st_session_set_input_checked(s, "i", ST_I64, 0, NULL, &out_of_range, sizeof out_of_range) == ST_OK);
    CHECK_ERR(st_session_run(s), ST_ERR_SHAPE, "'at'", "position 3", "out of range", "3 tensors");
    /* an empty sequence: nothing to take */
    int64_t zero = 0;
    CHECK(st_session_set_input_sequence(s, "S", 0) == ST_OK);
    CHECK(st_session_set_input_checked(s, "i", ST_I64, 0, NULL, &zero, sizeof zero) == ST_OK);
    CHECK_ERR(st_session_run(s), ST_ERR_SHAPE, "'at'", "empty");
    printf("seq_at_input: every position checked, out of range refused\n");
    st_session_free(s);
    st_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_sequence DIR [cpu|opencl]\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    st_session_options_init(&opts);
    opts.threads = 2;
    if (argc > 2 && !strcmp(argv[2], "opencl")) {
        opts.backend = ST_BACKEND_OPENCL;
        opts.sanitize = 1;
        opts.no_fallback = 1;
    }
    const char *e = getenv("STRATA_TEST_SEED");
    uint64_t seed = e && *e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL);
    rng = seed;
    printf("seed %llu (STRATA_TEST_SEED repeats it), backend %s\n", (unsigned long long)seed,
           opts.backend == ST_BACKEND_OPENCL ? "opencl" : "cpu");
    if (opts.backend != ST_BACKEND_CPU) {
        st_model *m = load("optional.onnx");
        st_session *s;
        st_status r = st_session_create(m, &opts, &s);
        st_model_free(m);
        if (r != ST_OK) {
            printf("skipped: %s\n", st_last_error());
            return 77;
        }
        st_session_free(s);
    }
    test_seq_ops();
    test_loop_seq();
    test_optional();
    test_seq_at_input();
    if (failures) fprintf(stderr, "test_sequence: %d failures (seed %llu)\n", failures, (unsigned long long)seed);
    else printf("test_sequence: all passed\n");
    return failures ? 1 : 0;
}
