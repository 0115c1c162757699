/*
 * serve.h — `strata serve`: an Open Inference Protocol (KServe "v2") REST
 * server over a model repository.  What the serve_*.c files share:
 *
 *   serve_json.c     a small JSON reader (with a fast path for arrays of
 *                    numbers, the bulk of a request) and a string builder
 *   serve_repo.c     the repository: NAME/VERSION/model.onnx, config.json,
 *                    load, unload, lookups that hold a reference, and the
 *                    models' Prometheus metrics
 *   serve_batch.c    per-model request queue and its instance threads,
 *                    which gather requests into batches and run them
 *   serve_infer.c    an infer request: parsed (JSON or binary tensor data),
 *                    checked against the model, answered
 *   serve_http.c     libmicrohttpd: routes, bodies, limits, draining
 *   cmd_serve.c      the command: options, start, SIGTERM, stop
 *
 * Only strata.h's public API is used: the server is a client of the
 * library like any other.
 */
#ifndef ST_SERVE_H
#define ST_SERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata.h"

/* ---- JSON ---------------------------------------------------------------- */
typedef enum srv_jtype { SJ_NULL, SJ_BOOL, SJ_NUM, SJ_STR, SJ_ARR, SJ_OBJ, SJ_NUMS } srv_jtype;

/* A parsed value.  An array holding only numbers (or booleans), nested to
 * any depth, is SJ_NUMS: its numbers flattened row-major into nums[0..n),
 * so a tensor's "data" costs 8 bytes an element, not a node each. */
typedef struct srv_json {
    srv_jtype type;
    bool b;
    double num;
    char *str;                /* SJ_STR: decoded, NUL-terminated */
    size_t len;               /* SJ_STR: bytes; SJ_ARR/SJ_OBJ: items; SJ_NUMS: numbers */
    struct srv_json *items;   /* SJ_ARR, SJ_OBJ */
    char **keys;              /* SJ_OBJ */
    double *nums;             /* SJ_NUMS */
} srv_json;

/* Parses text[0..size) (need not be NUL-terminated).  NULL on error, with
 * a message ("JSON: ... at byte N") in err. */
srv_json *srv_json_parse(const char *text, size_t size, char *err, size_t err_cap);
void srv_json_free(srv_json *v);
/* Member key of an object, or NULL (also when v is not an object). */
const srv_json *srv_json_get(const srv_json *v, const char *key);

/* A growable string; on allocation failure it sets failed and stops. */
typedef struct srv_buf {
    char *data;
    size_t len, cap;
    bool failed;
} srv_buf;
void srv_buf_add(srv_buf *b, const void *data, size_t n);
void srv_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void srv_buf_json_string(srv_buf *b, const char *s);
void srv_buf_free(srv_buf *b);

/* ---- protocol dtypes ------------------------------------------------------ */
/* "FP32" <-> ST_F32 ...; ST_UNDEFINED / NULL for what the server does not carry. */
st_dtype srv_dtype_of(const char *name);
const char *srv_dtype_name(st_dtype t);

/* ---- configuration ------------------------------------------------------- */
typedef struct srv_config {
    st_backend_kind backend;
    st_dtype precision;
    int threads;              /* per instance; 0: one per core */
    int max_batch;            /* 1: no batching */
    int64_t max_delay_us;     /* how long a batch waits for more requests */
    int instances;            /* sessions running requests in parallel */
    uint64_t memory_limit;    /* per session; 0: the machine's */
} srv_config;

typedef struct srv_limits {
    size_t max_body;          /* bytes of a request body */
    int64_t max_elements;     /* elements of one input tensor */
} srv_limits;

/* ---- metrics ------------------------------------------------------------- */
#define SRV_BATCH_BUCKETS 8   /* batch sizes <= 1, 2, 4, ..., 64, +Inf */
typedef struct srv_counters {
    uint64_t requests, failures, batches;
    uint64_t batch_hist[SRV_BATCH_BUCKETS];
    uint64_t batch_sum;
    double queue_s, compute_s;
} srv_counters;

/* ---- the repository and its models --------------------------------------- */
typedef struct srv_request srv_request;

typedef struct srv_model {
    char name[64];
    int64_t version;
    st_model *model;
    srv_config cfg;
    bool batchable;           /* every input and output has a symbolic dim 0 and max_batch > 1 */
    int n_in, n_out;
    st_value_info in[64], out[64];
    /* the queue and the instance threads (serve_batch.c) */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    srv_request *head, *tail;
    int queued;
    bool stopping;
    pthread_t *threads;
    int n_threads;
    int refs;                 /* the repository's table holds one; each lookup one more */
    srv_counters c;           /* under lock */
} srv_model;

#define SRV_MAX_MODELS 128

typedef struct srv_repo {
    char root[4096];
    srv_config defaults;
    srv_limits limits;
    pthread_mutex_t lock;
    srv_model *models[SRV_MAX_MODELS];
    /* names whose last load failed, and why (the index shows them) */
    char failed_name[SRV_MAX_MODELS][64];
    char failed_why[SRV_MAX_MODELS][256];
    int n_failed;
} srv_repo;

/* A name the repository accepts: [A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}, so it
 * can never be "..", hold a '/' or leave the repository. */
bool srv_name_ok(const char *name);
void srv_repo_init(srv_repo *r, const char *root, const srv_config *defaults, const srv_limits *limits);
/* Loads every model directory in the repository; returns how many failed
 * (each printed on stderr). */
int srv_repo_load_all(srv_repo *r);
/* Loads (or reloads) NAME's newest version.  0, or -1 with a message in
 * err and *http set to the status to answer (400, 404, 500). */
int srv_repo_load(srv_repo *r, const char *name, char *err, size_t cap, int *http);
int srv_repo_unload(srv_repo *r, const char *name, char *err, size_t cap, int *http);
void srv_repo_unload_all(srv_repo *r);
/* The ready model NAME (version: "" for any, else that version), holding
 * a reference; NULL when there is none.  srv_model_put drops it. */
srv_model *srv_repo_get(srv_repo *r, const char *name, const char *version);
void srv_model_put(srv_model *m);
/* JSON array for POST /v2/repository/index. */
void srv_repo_index(srv_repo *r, srv_buf *out);
/* Prometheus text of every loaded model's counters. */
void srv_repo_metrics(srv_repo *r, srv_buf *out);

/* ---- requests and batches ------------------------------------------------ */
typedef struct srv_tensor {
    char name[256];
    st_dtype dtype;
    int rank;
    int64_t dims[ST_MAX_RANK];
    void *data;               /* packed row-major; owned unless borrowed */
    bool borrowed;            /* data points into the request body */
    size_t bytes;
    bool binary;              /* outputs: answer as binary tensor data */
} srv_tensor;

struct srv_request {
    srv_request *next;
    srv_model *model;
    int n_in;
    srv_tensor in[64];        /* in the model's input order */
    int n_out;
    srv_tensor out[64];       /* requested outputs, in order; data filled by the run */
    int out_index[64];        /* model output index of out[i] */
    int64_t batch;            /* dim 0 of the inputs (1 when not batching) */
    double t_arrive;
    /* completion */
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    bool done;
    int http;                 /* 200, or the error's status */
    char err[512];
};

double srv_now(void);
/* Starts the model's instance threads (each with its own session); 0 or
 * -1 with err. */
int srv_model_start(srv_model *m, char *err, size_t cap);
/* Lets the instances finish what is queued, then joins them. */
void srv_model_stop(srv_model *m);
/* Queues q on its model and waits until it is answered. */
void srv_model_infer(srv_model *m, srv_request *q);

/* ---- infer requests ------------------------------------------------------ */
/* POST .../infer: body (header_len bytes of JSON, then binary tensor data
 * when header_len < size) to a response.  Sets *http, *content_type and
 * *out_header_len (the binary extension's Inference-Header-Content-Length,
 * 0 when the response is plain JSON). */
void srv_infer(srv_model *m, const srv_limits *lim, const char *body, size_t size, size_t header_len, srv_buf *out,
               int *http, const char **content_type, size_t *out_header_len);
/* Model metadata for GET /v2/models/NAME. */
void srv_model_metadata(const srv_model *m, srv_buf *out);
/* {"error": msg} */
void srv_error_body(srv_buf *out, const char *msg);

/* ---- the HTTP server ----------------------------------------------------- */
typedef struct srv_server srv_server;
/* Starts listening on host:port (port 0: any free one); NULL with err. */
srv_server *srv_http_start(srv_repo *repo, const char *host, int port, int max_connections, int timeout_s,
                           char *err, size_t cap);
int srv_http_port(const srv_server *s);
/* From now on every new request gets 503. */
void srv_http_drain(srv_server *s);
/* Requests being answered now. */
int srv_http_inflight(srv_server *s);
void srv_http_stop(srv_server *s);
/* Prometheus text of the server's own counters (HTTP statuses, in flight). */
void srv_http_metrics(srv_server *s, srv_buf *out);

#endif
