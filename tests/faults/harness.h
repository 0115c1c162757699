/*
 * harness.h — what the fault, soak and cancel tests share: a "case" is a
 * model with its inputs (from .npy files, or drawn from a fixed seed for
 * a given shape) and the outputs it must give, and the functions that
 * bind, run and check one in a session.
 *
 * A case's expected outputs are made in the test's own process by a clean
 * run (one worker thread, default schedule), and, where the case names a
 * reference directory (PyTorch's or ONNX Runtime's outputs, from the
 * fixtures), that clean run is first checked against it.  Later runs,
 * whatever their threads, schedule, or the faults around them, must give
 * those bytes exactly: strata's kernels split work independently of the
 * thread count, so every schedule is bit-identical.
 *
 * Case specs, one argument each, comma-separated key=value:
 *   model=PATH[,input=NPY]...[,shape=NAME:1x3x320x320]...[,ref=DIR][,name=LABEL]
 */
#ifndef ST_TEST_HARNESS_H
#define ST_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata.h"

#define TH_MAX_IO 16

/* The library's count of a session's commands not yet complete (not in
 * strata.h: the tests check that a stopped run leaves none). */
int st_session_pending(st_session *s);

/* A check that counts a failure and goes on, printing where, what and
 * strata's last error, in the counter the test passes (it reports the
 * count at the end). */
#define TH_CHECK(failures, cond, ...)                                           \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, " (%s)\n", st_last_error());                       \
            (failures)++;                                                       \
        }                                                                       \
    } while (0)

typedef struct th_tensor {
    char name[256];
    st_dtype dtype;
    int rank;
    int64_t dims[ST_MAX_RANK];
    void *data;
    size_t bytes;
} th_tensor;

typedef struct th_case {
    char label[64];
    char model[4096];
    char ref_dir[4096];
    int n_in;
    th_tensor in[TH_MAX_IO];
    int n_out;
    th_tensor want[TH_MAX_IO];   /* the clean run's outputs */
} th_case;

/* A buffer per output, the size of the case's, that a test reads into. */
typedef struct th_outputs {
    void *data[TH_MAX_IO];
} th_outputs;

/* Parses spec and reads or draws the inputs; prints and returns false on
 * error. */
bool th_case_parse(th_case *c, const char *spec);
/* Runs the case once cleanly on backend (one thread), keeps the outputs
 * as c->want, and checks them against c->ref_dir when there is one.
 * Prints and returns false on failure. */
bool th_case_reference(th_case *c, st_backend_kind backend);
void th_case_free(th_case *c);

bool th_outputs_alloc(const th_case *c, th_outputs *o);
void th_outputs_free(const th_case *c, th_outputs *o);

/* Binds every input of c (st_session_set_input_checked). */
st_status th_bind(st_session *s, const th_case *c);
/* Reads every output of the last run into o; each must have the case's
 * dtype and shape (ST_ERR_SHAPE otherwise). */
st_status th_read(st_session *s, const th_case *c, th_outputs *o);
/* Index of the first output that differs from c->want, or -1. */
int th_compare(const th_case *c, const th_outputs *o);

/* Options from "cpu", "opencl" or "cuda"; false if unknown. */
bool th_backend(const char *name, st_backend_kind *out);
double th_now(void);

#endif
