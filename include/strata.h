/*
 * strata.h — the public C API of strata, an ONNX runtime for CPUs and GPUs.
 *
 * Handles are opaque.  Every function that can fail returns an st_status;
 * on failure st_last_error() gives a one-line message, built where the
 * failure was understood, that says what was wrong and where
 * ("node 'Conv_12' (Conv): input 1 has 3 dims, expected 4").  The message
 * is per thread, so two threads driving two sessions never see each
 * other's errors.
 *
 * Arguments: every function checks them.  A NULL pointer or an
 * out-of-range value (an index, a rank, a dtype, a buffer size, a field
 * of st_session_options) is refused with ST_ERR_INVALID_ARG (or
 * ST_ERR_SHAPE, ST_ERR_DTYPE where those say more) and changes nothing;
 * an output pointer is set to NULL first.  Functions that return a value
 * return a neutral one for a NULL handle (0, -1, ST_UNDEFINED), void
 * functions ignore NULL, and names of unknown codes are "unknown status"
 * and "undefined".  (tests/faults/test_misuse.c calls each one so.)
 *
 * Threading: a model is immutable once loaded and may be shared by any
 * number of sessions on any threads.  A session is driven by one thread at
 * a time; a call made while another thread is inside the same session
 * returns ST_ERR_BUSY instead of corrupting it.
 *
 * Memory: outputs are views into the session's memory (st_tensor).  A view
 * keeps its storage alive, so freeing the session before the tensor is
 * legal.  A run is submitted asynchronously; st_tensor_read waits for
 * exactly the pending commands that write the bytes it reads.
 *
 * Versions and compatibility.  strata is versioned MAJOR.MINOR.PATCH
 * (ST_VERSION_* below; the build takes its project version from them) and
 * the shared library's SONAME is libstrata.so.MAJOR:
 *   - PATCH releases fix bugs; the API and ABI do not change.
 *   - MINOR releases only add: new functions, new enum values after the
 *     existing ones.  Every declaration already here keeps its signature
 *     and meaning, so a program built against MAJOR.m runs unchanged with
 *     the library of any later MAJOR.n (n >= m).  A function that a better
 *     one supersedes stays, documented as superseded, until the next MAJOR.
 *   - The size and layout of the public structs (st_session_options,
 *     st_value_info) and the values of existing enum constants never change
 *     within a MAJOR, since callers allocate the structs; a new setting
 *     arrives as a new function.
 *   - A MAJOR release may change anything; its new SONAME lets programs
 *     built against the old one keep loading the old library.
 * This holds from 0.2.0, the first release that installs a shared library
 * (st_session_options.profile, the last field, is part of 0.2.0's layout).
 * A program can compare ST_VERSION_NUMBER (what it was compiled against)
 * with st_version_number() (the library it runs with).  Only what this
 * header declares is API: libstrata.so also exports other st_ symbols for
 * its CUDA module and the bundled tools, which may change in any release.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One line each: CMakeLists.txt reads the project version from them. */
#define ST_VERSION_MAJOR 0
#define ST_VERSION_MINOR 2
#define ST_VERSION_PATCH 0
#define ST_VERSION_NUMBER (ST_VERSION_MAJOR * 10000 + ST_VERSION_MINOR * 100 + ST_VERSION_PATCH)

#define ST_MAX_RANK 8

typedef enum st_status {
    ST_OK = 0,
    ST_ERR_INVALID_ARG,   /* a caller passed a bad argument */
    ST_ERR_IO,            /* a file could not be read or written */
    ST_ERR_MODEL,         /* the model is malformed or inconsistent */
    ST_ERR_UNSUPPORTED,   /* valid ONNX that strata does not implement */
    ST_ERR_SHAPE,         /* a shape or rank mismatch */
    ST_ERR_DTYPE,         /* a dtype mismatch */
    ST_ERR_NOMEM,         /* an allocation failed or exceeded the limit */
    ST_ERR_BACKEND,       /* the device or its driver failed */
    ST_ERR_HAZARD,        /* the sanitizer found unordered conflicting commands */
    ST_ERR_BUSY,          /* the session is in use by another thread */
    ST_ERR_INTERNAL,      /* a bug in strata */
    ST_ERR_CANCELLED,     /* the run was cancelled (st_session_cancel; since 0.2.0) */
    ST_ERR_TIMEOUT        /* the run passed its deadline (st_session_set_deadline; since 0.2.0) */
} st_status;

/* ONNX TensorProto.DataType numbering, so values pass through unchanged. */
typedef enum st_dtype {
    ST_UNDEFINED = 0,
    ST_F32 = 1,
    ST_U8 = 2,
    ST_I8 = 3,
    ST_U16 = 4,
    ST_I16 = 5,
    ST_I32 = 6,
    ST_I64 = 7,
    ST_STRING = 8, /* set and read with the _strings functions below; held on the host */
    ST_BOOL = 9,
    ST_F16 = 10,
    ST_F64 = 11,
    ST_U32 = 12,
    ST_U64 = 13,
    ST_BF16 = 16
} st_dtype;

/* A backend is a number: its index in the library's registry of
 * backends, which st_backend_count, st_backend_name and st_backend_find
 * enumerate.  The three named here keep their numbers for good; a backend
 * added later has the next number and is found by its name. */
typedef enum st_backend_kind {
    ST_BACKEND_CPU = 0,
    ST_BACKEND_CUDA = 1,
    ST_BACKEND_OPENCL = 2
} st_backend_kind;

/* How the hazard tracker decides that two commands conflict.  Only RANGES
 * is correct and fast; the others exist to reproduce and measure the bug
 * classes of the seed report (rules 3 and 7 of docs/architecture.md), and
 * what the exact byte sets of strided views buy (EXTENTS). */
typedef enum st_hazard_mode {
    ST_HAZARD_RANGES = 0,       /* overlapping bytes of one storage, a strided view's exact runs */
    ST_HAZARD_STORAGE = 1,      /* any two uses of one storage: correct, coarse */
    ST_HAZARD_BASE_POINTER = 2, /* only views that start at the same byte: the seed's bug */
    ST_HAZARD_EXTENTS = 3       /* overlapping view extents [first byte, last byte]: correct, coarser */
} st_hazard_mode;

typedef enum st_schedule {
    ST_SCHEDULE_DEFAULT = 0,    /* ready commands in program order, on the thread pool */
    ST_SCHEDULE_RANDOM = 1      /* ready commands in a seeded random order, completed late */
} st_schedule;

/* What a model input or output holds.  A sequence is an ordered list of
 * tensors of one dtype (their shapes may differ); an optional holds a
 * tensor or a sequence, or nothing.  st_value_info describes the element
 * tensor of a sequence or optional.  (Since 0.2.0.) */
typedef enum st_value_kind {
    ST_KIND_TENSOR = 0,
    ST_KIND_SEQUENCE = 1,
    ST_KIND_OPTIONAL = 2,             /* an optional tensor */
    ST_KIND_OPTIONAL_SEQUENCE = 3     /* an optional sequence of tensors */
} st_value_kind;

/* How a session precision below f32 is applied (docs/precision.md). */
typedef enum st_precision_policy {
    ST_PRECISION_MIXED = 0,     /* sensitive ops and patterns stay f32, with planned casts */
    ST_PRECISION_STRICT = 1     /* every float value in the session's precision */
} st_precision_policy;

typedef struct st_model st_model;
typedef struct st_session st_session;
typedef struct st_tensor st_tensor;

typedef struct st_session_options {
    st_backend_kind backend;
    int threads;              /* 0: one per core; at most 1024 */
    st_dtype precision;       /* ST_F32 (default), ST_F16 or ST_BF16 */
    int sanitize;             /* 1: check every conflicting pair is ordered, poison fresh memory
                                 (0 or 1, like serial and no_fallback) */
    st_schedule schedule;
    uint64_t seed;            /* for ST_SCHEDULE_RANDOM */
    st_hazard_mode hazard_mode;
    int device;               /* GPU ordinal, >= 0 */
    uint64_t memory_limit;    /* bytes a session may allocate; 0: the machine's memory */
    int serial;               /* 1: one command at a time (no inter-op parallelism; for
                                 measuring what it gains) */
    int no_fallback;          /* 1: a node the backend has no kernel for is an error
                                 instead of running on the CPU (GPU backends) */
    const char *profile;      /* a path: record every run's commands for a Chrome-trace /
                                 Perfetto JSON that st_session_profile_write writes there
                                 (docs/profiling.md); NULL: off.  Copied at creation, which
                                 fails with ST_ERR_IO if the file cannot be made there.  On
                                 CUDA it replays no CUDA graphs, to time each command. */
} st_session_options;

/* Name, dtype and shape of a model input or output.  dims[i] < 0 marks a
 * symbolic or unknown dim; dim_names[i] then holds its name (or NULL). */
typedef struct st_value_info {
    const char *name;
    st_dtype dtype;
    int rank;                 /* -1: unknown rank */
    int64_t dims[ST_MAX_RANK];
    const char *dim_names[ST_MAX_RANK];
} st_value_info;

/* ---- version ---- */
/* The running library's version, "MAJOR.MINOR.PATCH", and the same as
 * MAJOR * 10000 + MINOR * 100 + PATCH (compare with ST_VERSION_NUMBER). */
const char *st_version(void);
int st_version_number(void);

/* ---- backends ---- */
/* How many backends the registry holds (kinds 0 .. count-1), including
 * those this build lacks or whose device is absent: a session on one of
 * those fails at creation with a message that says why. */
int st_backend_count(void);
/* The name of backend kind ("cpu", "cuda", "opencl", ...), or NULL when
 * kind is out of range. */
const char *st_backend_name(st_backend_kind kind);
/* The kind named name; ST_ERR_INVALID_ARG, naming the registered ones,
 * when none is. */
st_status st_backend_find(const char *name, st_backend_kind *out);
/* 1 when backend kind is built into this library (or its module loads),
 * else 0 (st_last_error says why).  Says nothing of its devices. */
int st_backend_available(st_backend_kind kind);

/* ---- memory ---- */
/* Bytes that strata holds in backend kind's memory (its devices' for a
 * device backend, host memory for the CPU), now (*live) and at most since
 * the process started or the last st_memory_reset_peak (*peak): every
 * arena, weight, input, output and staging storage it allocated, and a
 * CUDA executor's workspaces; not what the driver keeps for itself (a CUDA
 * context, cuBLAS's and cuDNN's own state).  Either pointer may be NULL. */
st_status st_memory_usage(st_backend_kind kind, uint64_t *live, uint64_t *peak);
void st_memory_reset_peak(st_backend_kind kind);

/* ---- errors ---- */
const char *st_last_error(void);
const char *st_status_name(st_status s);
const char *st_dtype_name(st_dtype t);
/* Bytes per element; for ST_STRING, sizeof(char *): an element is a
 * pointer to its characters. */
size_t st_dtype_size(st_dtype t);

/* ---- models ---- */
st_status st_model_load(const char *path, st_model **out);
/* base_dir resolves external data files; NULL forbids external data. */
st_status st_model_load_memory(const void *data, size_t size, const char *base_dir,
                               st_model **out);
void st_model_free(st_model *m);

int st_model_input_count(const st_model *m);
int st_model_output_count(const st_model *m);
st_status st_model_input_info(const st_model *m, int index, st_value_info *info);
st_status st_model_output_info(const st_model *m, int index, st_value_info *info);
/* Whether input or output index is a tensor, a sequence or an optional;
 * ST_KIND_TENSOR for an index out of range.  (Since 0.2.0.) */
st_value_kind st_model_input_kind(const st_model *m, int index);
st_value_kind st_model_output_kind(const st_model *m, int index);

/* ---- sessions ---- */
void st_session_options_init(st_session_options *o);
st_status st_session_create(const st_model *m, const st_session_options *o, st_session **out);
void st_session_free(st_session *s);

/* Copies data (packed, row-major, of the given dtype and dims) into the
 * session.  A float input of another float dtype is converted.  bytes is
 * the size of the caller's buffer: it must equal the product of dims times
 * st_dtype_size(dtype), else the call fails with ST_ERR_SHAPE and reads
 * nothing, so wrong dims cannot make strata read past the buffer.  (Since
 * 0.2.0.) */
st_status st_session_set_input_checked(st_session *s, const char *name, st_dtype dtype, int rank,
                                       const int64_t *dims, const void *data, size_t bytes);
/* Superseded by st_session_set_input_checked: the same without the buffer
 * size, so it trusts dims to describe the buffer.  Kept until 1.0 (see
 * the compatibility rules above). */
st_status st_session_set_input(st_session *s, const char *name, st_dtype dtype, int rank,
                               const int64_t *dims, const void *data);
/* Sequence and optional inputs (since 0.2.0).  A sequence input is bound
 * element by element: st_session_set_input_sequence gives its length
 * (0 is an empty sequence), then st_session_set_input_element binds each
 * element, checked like st_session_set_input_checked against the element
 * type the model declares; elements may differ in shape.  Every element
 * must be bound before a run.  An optional input holding a tensor is
 * bound with st_session_set_input_checked, one holding a sequence with
 * the two calls above, and an empty one with st_session_set_input_absent.
 * A plan is made per sequence length and element shapes (and per optional
 * present or absent), and cached like any other input shape. */
st_status st_session_set_input_sequence(st_session *s, const char *name, int count);
st_status st_session_set_input_element(st_session *s, const char *name, int index, st_dtype dtype, int rank,
                                       const int64_t *dims, const void *data, size_t bytes);
st_status st_session_set_input_absent(st_session *s, const char *name);
/* Copies count strings (NUL-terminated; UTF-8 where an op reads them as
 * text) into the session, for an input of dtype ST_STRING; count must be
 * the product of dims, else ST_ERR_SHAPE and nothing is read.  Strings are
 * handled on the host while planning: the plan is specialized on (and
 * cached for) the strings' values, as for a vocabulary or a set of labels,
 * so changing them makes a new plan.  (Since 0.2.0.) */
st_status st_session_set_input_strings(st_session *s, const char *name, int rank, const int64_t *dims,
                                       const char *const *strs, size_t count);
/* Submits the run and returns; reading an output waits for what it needs. */
st_status st_session_run(st_session *s);
/* Waits for every command of the last run; reports a kernel failure. */
st_status st_session_wait(st_session *s);
/* With st_session_options.profile set: waits for the last run, then
 * writes the trace of every run since the session was created (or since
 * the last call) to the profile's path and starts a new one.  The file is
 * written beside the path and renamed over it, so the path never holds a
 * partial trace.  Runs that failed are left out; runs not written when
 * the session is freed are dropped.  (Since 0.2.0.) */
st_status st_session_profile_write(st_session *s);
/* A view of an output of the last run.  Free it with st_tensor_free. */
st_status st_session_output(st_session *s, const char *name, st_tensor **out);
/* The same for a graph input, so a caller can write it in place. */
st_status st_session_input(st_session *s, const char *name, st_tensor **out);
/* Sequence and optional outputs of the last run (since 0.2.0).
 * st_session_output reads an optional output that holds a tensor; one
 * that is empty, or a sequence, is an error that says so.  present: 1
 * when an optional output holds a value, 0 when it is empty (1 for any
 * other output).  length: the number of tensors in a sequence output (or
 * in the sequence an optional output holds).  st_session_output_element
 * gives element index (0 <= index < length) as a view like
 * st_session_output's; free it with st_tensor_free. */
st_status st_session_output_present(st_session *s, const char *name, int *present);
st_status st_session_output_length(st_session *s, const char *name, int *length);
st_status st_session_output_element(st_session *s, const char *name, int index, st_tensor **out);

/* ---- cancelling runs, and deadlines (since 0.2.0) ----
 * A cancelled run, or one past its deadline, starts no more commands: on
 * the CPU, no kernel that has not begun; on a GPU, nothing not yet queued
 * on the device, and no CPU node of a mixed plan (a device cannot take
 * back work it was given, so queued commands complete).  Its
 * st_session_wait, and reads of its outputs, then return ST_ERR_CANCELLED
 * or ST_ERR_TIMEOUT, once nothing of the run is pending any more; the
 * session's next run is unaffected.  A run all of whose commands had
 * started is complete, and succeeds. */
/* Cancels the session's latest run (the one in flight, or being planned).
 * Callable from any thread while another is inside the session (it never
 * returns ST_ERR_BUSY), but not concurrently with st_session_free.  A run
 * started after the call is not cancelled. */
st_status st_session_cancel(st_session *s);
/* Each run started after this call must finish within ns nanoseconds of
 * its st_session_run, or it stops as if cancelled and reports
 * ST_ERR_TIMEOUT.  0 (the default) removes the deadline. */
st_status st_session_set_deadline(st_session *s, uint64_t ns);
/* How a precision below f32 is applied (docs/precision.md): by default
 * (ST_PRECISION_MIXED) numerically sensitive ops and patterns stay f32,
 * with casts planned around them; ST_PRECISION_STRICT stores every float
 * value in the session's precision.  No effect on an f32 session.  Call
 * it before the session's first run (ST_ERR_INVALID_ARG after: plans are
 * built then).  (Since 0.2.0, after its release: check for the symbol.) */
st_status st_session_set_precision_policy(st_session *s, st_precision_policy policy);

/* ---- tensors ---- */
st_dtype st_tensor_dtype(const st_tensor *t);      /* the model's dtype */
int st_tensor_rank(const st_tensor *t);
int64_t st_tensor_dim(const st_tensor *t, int i);
int64_t st_tensor_numel(const st_tensor *t);
/* Reads the whole tensor, packed row-major, converted to dtype.  Waits only
 * for pending commands that write the bytes read.  Not for strings: */
st_status st_tensor_read(const st_tensor *t, st_dtype dtype, void *dst, size_t dst_bytes);
/* A string tensor's elements, row-major: count (st_tensor_numel) pointers
 * into dst, to NUL-terminated strings that belong to t and stay valid
 * until st_tensor_free(t).  (Since 0.2.0.) */
st_status st_tensor_read_strings(const st_tensor *t, const char **dst, size_t count);
/* Writes the whole tensor from packed data of dtype.  Waits for pending
 * commands that read or write those bytes. */
st_status st_tensor_write(st_tensor *t, st_dtype dtype, const void *src, size_t src_bytes);
void st_tensor_free(st_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
