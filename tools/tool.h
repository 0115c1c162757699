/*
 * tool.h — what the subcommands of the strata command line share: option
 * parsing, loading, binding inputs (from .npy files or random), and the
 * one-line error convention ("strata: <message>", exit status 1).
 */
#ifndef ST_TOOL_H
#define ST_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "io/npy.h"
#include "strata.h"

#define TOOL_MAX_IO 256

typedef struct tool_named {
    const char *name;   /* NULL: positional */
    const char *path;
} tool_named;

typedef struct tool_opts {
    const char *model;
    tool_named inputs[TOOL_MAX_IO];
    int n_inputs;
    tool_named refs[TOOL_MAX_IO];
    int n_refs;
    tool_named dims[TOOL_MAX_IO];   /* --dim NAME=VALUE for symbolic dims */
    int n_dims;
    const char *ref_dir;
    const char *out_dir;
    st_session_options so;      /* with --precision-policy: tool_precision_policy */
    uint64_t seed;
    double atol, rtol, scale_tol;
    bool atol_set, rtol_set, scale_set;
    int runs, warmup;
    bool runs_set;
    bool json, plan, quiet;
    const char *dot;          /* inspect --plan --dot FILE */
    /* strata detect and strata ocr (tool_parse_vision) */
    const char *args[4];      /* positional arguments in order (args[0] is also model) */
    int n_args;
    const char *out_path;     /* -o taken as a file; NULL when not given */
    double conf, iou;         /* --conf, --iou */
    bool conf_set, iou_set;
    int size;                 /* --size: input side for a model without a fixed size; 0: not given */
    const char *det, *rec, *cls, *keys;  /* --det, --rec, --cls, --keys */
    bool no_cls;              /* --no-cls */
} tool_opts;

/* A subcommand: its name, its arguments and what it does (for help), and
 * the function that runs it on argv[0..argc) (argv[0] is the name). */
typedef struct tool_command {
    const char *name;
    const char *args;
    const char *about;
    int (*run)(int argc, char **argv);
} tool_command;

/* 0 when command cmd takes option arg; else prints the one-line error
 * (naming cmd and the nearest option it takes) and returns 1. */
int tool_option_check(const char *cmd, const char *arg);
/* The word of words[0..n) nearest to word, or NULL when none is close. */
const char *tool_nearest_word(const char *word, const char *const *words, int n);
/* `strata help CMD`: usage, what it does, every option with its default. */
void tool_help(FILE *f, const char *cmd, const char *args, const char *about);

/* Progress of long work on stderr, drawn only when stderr is a terminal:
 * "<what> <done>/<total>" on one line, redrawn at most ten times a second
 * and erased at the end, so output that is kept (a pipe, a file) gets
 * nothing. */
typedef struct tool_progress {
    bool on;
    const char *what;
    int total;
    double last_ms;
} tool_progress;
void tool_progress_start(tool_progress *p, const char *what, int total);
/* done of total finished; detail (may be NULL) follows on the line. */
void tool_progress_step(tool_progress *p, int done, const char *detail);
void tool_progress_end(tool_progress *p);
/* Blanks a progress line on the screen, if one is there (tool_fail does,
 * so an error starts on a clean line). */
void tool_progress_clear(void);

/* Prints "strata: <fmt>" to stderr; returns 1 for `return tool_fail(...)`. */
int tool_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, with st_last_error() appended. */
int tool_fail_st(const char *what);

/* Parses argv[1..] (argv[0] is the subcommand).  Returns 0, or 1 after
 * printing the error. */
int tool_parse(int argc, char **argv, tool_opts *o);
/* The same for the vision subcommands: also takes --conf, --iou, --size,
 * --det, --rec, --cls, --keys and --no-cls, and up to max_args positional
 * arguments into o->args (the caller checks how many it got). */
int tool_parse_vision(int argc, char **argv, tool_opts *o, int max_args);

/* Binds every model input: from -i files, else random from the seed.
 * Fills the inputs' npy arrays (caller frees). */
int tool_bind_inputs(const tool_opts *o, const st_model *m, st_session *s);

/* Output name -> file name: characters outside [A-Za-z0-9._-] become '_'. */
void tool_sanitize_name(const char *name, char *out, size_t cap);
void tool_json_string(FILE *f, const char *s);

int st_cmd_run(int argc, char **argv);
int st_cmd_check(int argc, char **argv);
int st_cmd_inspect(int argc, char **argv);
int st_cmd_bench(int argc, char **argv);
int st_cmd_detect(int argc, char **argv);
int st_cmd_ocr(int argc, char **argv);
int st_cmd_probe(int argc, char **argv);
int st_cmd_quantize(int argc, char **argv);
int st_cmd_serve(int argc, char **argv);

/* strata inspect --ops: the op x backend x dtype matrix (ops_matrix.c). */
int tool_ops_matrix(bool json);

/* With --profile: writes the session's trace (st_session_profile_write);
 * 0, or 1 after printing the error.  Nothing to do without --profile. */
int tool_profile_write(const tool_opts *o, st_session *s);

/* strata inspect --plan --dot: the last run's plan and DAG, every stage,
 * as Graphviz into o->dot (plan_dot.c). */
int tool_plan_dot(const tool_opts *o, const st_session *s);

/* Reads a whole output, converted to f32 (or its own dtype for ints;
 * strings as io/npy.h lays them out). */
int tool_read_output(st_session *s, const char *name, st_npy *out);
/* Same dtype and elements, bit for bit (strings: the same text). */
bool tool_npy_equal(const st_npy *a, const st_npy *b);

/* One inference of a single-input model: binds the float data (packed,
 * dims[0..rank), bytes long) to input 0, runs, and reads output 0 as f32
 * into out (malloc'd; its rank and dims too).  `what` names the model in
 * errors. */
int tool_infer_f32(const st_model *m, st_session *s, const char *what, int rank, const int64_t *dims, const float *data,
                   size_t bytes, st_npy *out);

/* --precision-policy (a session setting that st_session_options has no
 * field for), and st_session_create followed by setting it: every command
 * makes its sessions through this. */
extern st_precision_policy tool_precision_policy;
st_status tool_session_create(const st_model *m, const st_session_options *so, st_session **out);

#endif
