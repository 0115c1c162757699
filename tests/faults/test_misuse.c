/*
 * test_misuse.c — every function of strata.h, given NULL and out-of-range
 * arguments (issue 18.5).
 *
 * usage: test_misuse DIR   (DIR holds dynamic_mlp.onnx)
 *
 * Each call must return the status listed (ST_ERR_INVALID_ARG for a NULL
 * or out-of-range argument, unless another code says more), set a
 * one-line message that names the function or the argument, and leave
 * nothing changed: after all of it the session still runs and gives the
 * same outputs as before.  Functions that return a value instead of a
 * status return the documented "nothing" value (0, -1, NULL, a name for
 * unknown codes); void functions ignore NULL.  Out-of-range values are
 * each field of st_session_options, dims, ranks, dtypes, indices and
 * buffer sizes, at and just past each end of the range.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"

static int failures, checks;

/* st_status, the message it left, and what the message must mention. */
static void expect(st_status got, st_status want, const char *mention, const char *call, int line)
{
    checks++;
    const char *msg = st_last_error();
    bool ok = got == want && msg[0] && !strchr(msg, '\n') && (!mention || strstr(msg, mention));
    if (!ok) {
        fprintf(stderr, "test_misuse.c:%d: %s gave %s (\"%s\"), expected %s%s%s\n", line, call, st_status_name(got), msg,
                st_status_name(want), mention ? " mentioning " : "", mention ? mention : "");
        failures++;
    }
}
#define EXPECT(call, want, mention) expect((call), (want), (mention), #call, __LINE__)
#define TRUE(cond)                                                                      \
    do {                                                                                \
        checks++;                                                                       \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "test_misuse.c:%d: not true: %s\n", __LINE__, #cond);        \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

static const int64_t DIMS[2] = {2, 64};
static float x[2 * 64];

static void run_once(st_session *s, float *y0)
{
    TRUE(st_session_set_input_checked(s, "x", ST_F32, 2, DIMS, x, sizeof x) == ST_OK);
    TRUE(st_session_run(s) == ST_OK);
    st_tensor *t = NULL;
    TRUE(st_session_output(s, "y0", &t) == ST_OK);
    TRUE(t && st_tensor_read(t, ST_F32, y0, (size_t)st_tensor_numel(t) * 4) == ST_OK);
    st_tensor_free(t);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_misuse DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/dynamic_mlp.onnx", argv[1]);
    for (int i = 0; i < 2 * 64; i++) x[i] = (float)sin(i * 0.1);

    /* ---- version and errors ---- */
    TRUE(st_version() && strchr(st_version(), '.'));
    TRUE(st_version_number() == ST_VERSION_NUMBER);
    TRUE(st_last_error() != NULL);
    TRUE(!strcmp(st_status_name((st_status)-1), "unknown status"));
    TRUE(!strcmp(st_status_name((st_status)1000), "unknown status"));
    TRUE(!strcmp(st_status_name(ST_ERR_TIMEOUT), "deadline passed"));
    TRUE(!strcmp(st_dtype_name((st_dtype)-1), "undefined") && !strcmp(st_dtype_name((st_dtype)17), "undefined"));
    TRUE(st_dtype_size((st_dtype)-1) == 0 && st_dtype_size(ST_STRING) == sizeof(char *) && st_dtype_size((st_dtype)17) == 0);

    /* ---- models ---- */
    st_model *m = (st_model *)&m; /* must be cleared on failure */
    EXPECT(st_model_load(NULL, &m), ST_ERR_INVALID_ARG, "st_model_load");
    TRUE(m == (st_model *)&m);
    EXPECT(st_model_load(path, NULL), ST_ERR_INVALID_ARG, "st_model_load");
    EXPECT(st_model_load("", &m), ST_ERR_IO, NULL);
    TRUE(m == NULL);
    EXPECT(st_model_load(argv[1], &m), ST_ERR_IO, "directory");
    EXPECT(st_model_load("/dev/null", &m), ST_ERR_MODEL, "empty");
    EXPECT(st_model_load_memory(NULL, 5, NULL, &m), ST_ERR_INVALID_ARG, "st_model_load_memory");
    EXPECT(st_model_load_memory("abc", 3, NULL, NULL), ST_ERR_INVALID_ARG, "st_model_load_memory");
    EXPECT(st_model_load_memory(NULL, 0, NULL, &m), ST_ERR_MODEL, "empty");
    EXPECT(st_model_load_memory("\xff\xff\xff", 3, NULL, &m), ST_ERR_MODEL, NULL);
    st_model_free(NULL);
    TRUE(st_model_input_count(NULL) == 0 && st_model_output_count(NULL) == 0);
    st_value_info info;
    EXPECT(st_model_input_info(NULL, 0, &info), ST_ERR_INVALID_ARG, "NULL");
    EXPECT(st_model_output_info(NULL, 0, &info), ST_ERR_INVALID_ARG, "NULL");
    if (st_model_load(path, &m) != ST_OK) {
        fprintf(stderr, "%s\n", st_last_error());
        return 1;
    }
    EXPECT(st_model_input_info(m, -1, &info), ST_ERR_INVALID_ARG, "-1");
    EXPECT(st_model_input_info(m, st_model_input_count(m), &info), ST_ERR_INVALID_ARG, "out of range");
    EXPECT(st_model_input_info(m, 0, NULL), ST_ERR_INVALID_ARG, "NULL");
    EXPECT(st_model_output_info(m, -1, &info), ST_ERR_INVALID_ARG, "-1");
    EXPECT(st_model_output_info(m, st_model_output_count(m), &info), ST_ERR_INVALID_ARG, "out of range");
    EXPECT(st_model_output_info(m, 0, NULL), ST_ERR_INVALID_ARG, "NULL");

    /* ---- sessions: creation, each option out of range ---- */
    st_session_options_init(NULL);
    st_session_options o;
    st_session_options_init(&o);
    st_session *s = (st_session *)&s;
    EXPECT(st_session_create(NULL, &o, &s), ST_ERR_INVALID_ARG, "st_session_create");
    TRUE(s == (st_session *)&s);
    EXPECT(st_session_create(m, &o, NULL), ST_ERR_INVALID_ARG, "st_session_create");
    st_session_options b;
#define BAD_OPTION(field, value, mention)                                                      \
    do {                                                                                       \
        b = o;                                                                                 \
        b.field = value;                                                                       \
        s = (st_session *)&s;                                                                  \
        EXPECT(st_session_create(m, &b, &s), ST_ERR_INVALID_ARG, mention);                    \
        TRUE(s == NULL);                                                                       \
    } while (0)
    BAD_OPTION(backend, (st_backend_kind)st_backend_count(), "backend");
    BAD_OPTION(backend, (st_backend_kind)-1, "backend");
    BAD_OPTION(threads, -1, "threads");
    BAD_OPTION(threads, 1025, "threads");
    BAD_OPTION(precision, ST_I32, "precision");
    BAD_OPTION(precision, (st_dtype)99, "precision");
    BAD_OPTION(schedule, (st_schedule)2, "schedule");
    BAD_OPTION(schedule, (st_schedule)-1, "schedule");
    BAD_OPTION(hazard_mode, (st_hazard_mode)4, "hazard_mode");
    BAD_OPTION(hazard_mode, (st_hazard_mode)-1, "hazard_mode");
    BAD_OPTION(device, -1, "device");
    BAD_OPTION(sanitize, -1, "sanitize");
    BAD_OPTION(sanitize, 2, "sanitize");
    BAD_OPTION(serial, 2, "serial");
    BAD_OPTION(no_fallback, -1, "no_fallback");
    b = o;
    b.profile = "/nonexistent-strata-dir/trace.json"; /* a path that cannot be made: refused at creation */
    s = (st_session *)&s;
    EXPECT(st_session_create(m, &b, &s), ST_ERR_IO, "/nonexistent-strata-dir/trace.json");
    TRUE(s == NULL);
    b = o;
    b.memory_limit = 1; /* a limit no plan fits: refused at the run, not here */
    TRUE(st_session_create(m, &b, &s) == ST_OK);
    EXPECT(st_session_set_input_checked(s, "x", ST_F32, 2, DIMS, x, sizeof x), ST_OK, NULL);
    EXPECT(st_session_run(s), ST_ERR_NOMEM, "memory limit");
    st_session_free(s);
    st_session_free(NULL);

    /* ---- a working session, and its calls misused ---- */
    if (st_session_create(m, &o, &s) != ST_OK) {
        fprintf(stderr, "%s\n", st_last_error());
        return 1;
    }
    st_tensor *t = (st_tensor *)&t;
    EXPECT(st_session_output(s, "y0", &t), ST_ERR_INVALID_ARG, "no run");
    TRUE(t == NULL);
    EXPECT(st_session_input(s, "x", &t), ST_ERR_INVALID_ARG, "no run");
    EXPECT(st_session_run(s), ST_ERR_INVALID_ARG, "was not set");
    EXPECT(st_session_wait(s), ST_OK, NULL);
    float before[2 * 16], after[2 * 16];
    run_once(s, before);

    const char *fns[2] = {"st_session_set_input_checked", "st_session_set_input"};
    for (int k = 0; k < 2; k++) {
#define SET(s_, name, dt, rank, dims, data, bytes) \
    (k ? st_session_set_input((s_), (name), (dt), (rank), (dims), (data)) \
       : st_session_set_input_checked((s_), (name), (dt), (rank), (dims), (data), (bytes)))
        int64_t d[ST_MAX_RANK + 1] = {2, 64, 1, 1, 1, 1, 1, 1, 1};
        EXPECT(SET(NULL, "x", ST_F32, 2, d, x, sizeof x), ST_ERR_INVALID_ARG, fns[k]);
        EXPECT(SET(s, NULL, ST_F32, 2, d, x, sizeof x), ST_ERR_INVALID_ARG, fns[k]);
        EXPECT(SET(s, "x", ST_F32, 2, NULL, x, sizeof x), ST_ERR_INVALID_ARG, fns[k]);
        EXPECT(SET(s, "x", ST_F32, 2, d, NULL, sizeof x), ST_ERR_INVALID_ARG, "NULL");
        EXPECT(SET(s, "nope", ST_F32, 2, d, x, sizeof x), ST_ERR_INVALID_ARG, "nope");
        EXPECT(SET(s, "x", (st_dtype)-1, 2, d, x, sizeof x), ST_ERR_DTYPE, "dtype");
        EXPECT(SET(s, "x", (st_dtype)17, 2, d, x, sizeof x), ST_ERR_DTYPE, "dtype");
        EXPECT(SET(s, "x", ST_STRING, 2, d, x, 2 * 64 * sizeof(char *)), ST_ERR_DTYPE, "st_session_set_input_strings");
        EXPECT(SET(s, "x", ST_I64, 2, d, x, 2 * sizeof x), ST_ERR_DTYPE, "float32");
        EXPECT(SET(s, "x", ST_F32, -1, d, x, sizeof x), ST_ERR_SHAPE, "rank");
        EXPECT(SET(s, "x", ST_F32, ST_MAX_RANK + 1, d, x, sizeof x), ST_ERR_SHAPE, "rank");
        EXPECT(SET(s, "x", ST_F32, 3, d, x, sizeof x), ST_ERR_SHAPE, NULL);
        d[1] = 63;
        EXPECT(SET(s, "x", ST_F32, 2, d, x, 2 * 63 * 4), ST_ERR_SHAPE, "64");
        d[1] = 64;
        d[0] = -1;
        EXPECT(SET(s, "x", ST_F32, 2, d, x, sizeof x), ST_ERR_SHAPE, "negative");
        d[0] = INT64_MAX;
        EXPECT(SET(s, "x", ST_F32, 2, d, x, sizeof x), k ? ST_ERR_NOMEM : ST_ERR_SHAPE, NULL);
        d[0] = 2;
    }
    EXPECT(st_session_set_input_checked(s, "x", ST_F32, 2, DIMS, x, sizeof x - 1), ST_ERR_SHAPE, "bytes");
    EXPECT(st_session_set_input_checked(s, "x", ST_F32, 2, DIMS, x, sizeof x + 4), ST_ERR_SHAPE, "bytes");
    EXPECT(st_session_run(NULL), ST_ERR_INVALID_ARG, "st_session_run");
    EXPECT(st_session_wait(NULL), ST_ERR_INVALID_ARG, "st_session_wait");
    EXPECT(st_session_output(NULL, "y0", &t), ST_ERR_INVALID_ARG, "st_session_output");
    EXPECT(st_session_output(s, NULL, &t), ST_ERR_INVALID_ARG, "st_session_output");
    EXPECT(st_session_output(s, "y0", NULL), ST_ERR_INVALID_ARG, "st_session_output");
    EXPECT(st_session_output(s, "x", &t), ST_ERR_INVALID_ARG, "'x'");
    EXPECT(st_session_input(NULL, "x", &t), ST_ERR_INVALID_ARG, "st_session_input");
    EXPECT(st_session_input(s, NULL, &t), ST_ERR_INVALID_ARG, "st_session_input");
    EXPECT(st_session_input(s, "x", NULL), ST_ERR_INVALID_ARG, "st_session_input");
    EXPECT(st_session_input(s, "y0", &t), ST_ERR_INVALID_ARG, "'y0'");
    EXPECT(st_session_cancel(NULL), ST_ERR_INVALID_ARG, "st_session_cancel");
    EXPECT(st_session_set_deadline(NULL, 1), ST_ERR_INVALID_ARG, "st_session_set_deadline");
    EXPECT(st_session_profile_write(NULL), ST_ERR_INVALID_ARG, "st_session_profile_write");
    {   /* strings (main's st_session_set_input_strings): the model's input is float */
        const char *strs[2] = {"a", NULL};
        const int64_t d1[1] = {2};
        EXPECT(st_session_set_input_strings(NULL, "x", 1, d1, strs, 2), ST_ERR_INVALID_ARG, "st_session_set_input_strings");
        EXPECT(st_session_set_input_strings(s, NULL, 1, d1, strs, 2), ST_ERR_INVALID_ARG, "st_session_set_input_strings");
        EXPECT(st_session_set_input_strings(s, "x", 1, NULL, strs, 2), ST_ERR_INVALID_ARG, "st_session_set_input_strings");
        EXPECT(st_session_set_input_strings(s, "x", 1, d1, NULL, 2), ST_ERR_INVALID_ARG, "st_session_set_input_strings");
        EXPECT(st_session_set_input_strings(s, "x", -1, d1, strs, 2), ST_ERR_SHAPE, "rank");
        EXPECT(st_session_set_input_strings(s, "x", 1, d1, strs, 3), ST_ERR_SHAPE, "3 were given");
        EXPECT(st_session_set_input_strings(s, "x", 1, d1, strs, 2), ST_ERR_INVALID_ARG, "string 1 is NULL");
        strs[1] = "b";
        EXPECT(st_session_set_input_strings(s, "x", 1, d1, strs, 2), ST_ERR_DTYPE, "not strings");
    }
    EXPECT(st_session_profile_write(s), ST_ERR_INVALID_ARG, "no profile");
    /* any deadline is in range: the largest never passes */
    TRUE(st_session_set_deadline(s, UINT64_MAX) == ST_OK);
    run_once(s, after);
    TRUE(memcmp(before, after, sizeof before) == 0);
    TRUE(st_session_set_deadline(s, 0) == ST_OK);

    /* ---- tensors ---- */
    TRUE(st_tensor_dtype(NULL) == ST_UNDEFINED && st_tensor_rank(NULL) == -1 && st_tensor_dim(NULL, 0) == -1 &&
         st_tensor_numel(NULL) == 0);
    st_tensor_free(NULL);
    TRUE(st_session_output(s, "y0", &t) == ST_OK);
    int64_t n = st_tensor_numel(t);
    TRUE(st_tensor_dim(t, -1) == -1 && st_tensor_dim(t, st_tensor_rank(t)) == -1 && st_tensor_dim(t, ST_MAX_RANK) == -1);
    float *buf = calloc((size_t)n + 1, sizeof *buf);
    EXPECT(st_tensor_read(NULL, ST_F32, buf, (size_t)n * 4), ST_ERR_INVALID_ARG, "st_tensor_read");
    EXPECT(st_tensor_read(t, ST_F32, NULL, (size_t)n * 4), ST_ERR_INVALID_ARG, "st_tensor_read");
    EXPECT(st_tensor_read(t, (st_dtype)-1, buf, (size_t)n * 4), ST_ERR_DTYPE, "dtype");
    EXPECT(st_tensor_read(t, ST_STRING, buf, (size_t)n * 4), ST_ERR_DTYPE, "strings");
    EXPECT(st_tensor_read(t, ST_F32, buf, (size_t)n * 4 - 1), ST_ERR_INVALID_ARG, "bytes");
    EXPECT(st_tensor_read(t, ST_F32, buf, (size_t)n * 4 + 4), ST_ERR_INVALID_ARG, "bytes");
    EXPECT(st_tensor_read(t, ST_I32, buf, (size_t)n * 4), ST_ERR_DTYPE, "int32");
    EXPECT(st_tensor_write(NULL, ST_F32, buf, (size_t)n * 4), ST_ERR_INVALID_ARG, "st_tensor_write");
    EXPECT(st_tensor_write(t, ST_F32, NULL, (size_t)n * 4), ST_ERR_INVALID_ARG, "st_tensor_write");
    EXPECT(st_tensor_write(t, (st_dtype)17, buf, (size_t)n * 4), ST_ERR_DTYPE, "dtype");
    EXPECT(st_tensor_write(t, ST_F32, buf, 0), ST_ERR_INVALID_ARG, "bytes");
    st_tensor_free(t);
    free(buf);

    /* nothing above changed the session */
    run_once(s, after);
    TRUE(memcmp(before, after, sizeof before) == 0);
    st_session_free(s);
    st_model_free(m);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
