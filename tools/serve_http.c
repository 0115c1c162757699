/*
 * serve_http.c — the HTTP side of `strata serve`, on libmicrohttpd.
 *
 * Why libmicrohttpd: it is GNU's small C HTTP/1.1 server library, in
 * Debian (libmicrohttpd-dev), maintained for two decades, security-
 * audited, with no dependency beyond libc.  It parses the requests;
 * the server only sees a method, a decoded path, headers and a body.
 *
 * A thread per connection: a request for a model waits in its handler
 * until its batch has run, so waiting costs a sleeping thread, and the
 * number of connections (--max-connections) bounds the threads.
 *
 * Limits: a body larger than --max-body is refused with 413 before it
 * is read (from Content-Length), or the connection is closed when a
 * chunked body grows past it; idle connections close after --timeout.
 */
#ifdef ST_HAVE_MHD
#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

struct srv_server {
    struct MHD_Daemon *d;
    srv_repo *repo;
    int port;
    int draining;             /* __atomic */
    int inflight;             /* __atomic */
    uint64_t status[6];       /* answers by class: 1xx..5xx, __atomic */
};

typedef struct conn {
    srv_buf body;
    bool reject;              /* draining when it arrived: 503 */
    bool too_big;
} conn;

static enum MHD_Result send_buf(struct MHD_Connection *c, srv_server *s, int http, srv_buf *b, const char *type,
                                size_t header_len)
{
    if (b->failed) {
        srv_buf_free(b);
        srv_error_body(b, "out of memory");
        http = 500;
        type = "application/json";
        header_len = 0;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(b->len, b->data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        srv_buf_free(b);
        return MHD_NO;
    }
    b->data = NULL; /* the response owns it now */
    srv_buf_free(b);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (header_len) {
        char v[32];
        snprintf(v, sizeof v, "%zu", header_len);
        MHD_add_response_header(r, "Inference-Header-Content-Length", v);
    }
    if (__atomic_load_n(&s->draining, __ATOMIC_SEQ_CST)) MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)http, r);
    MHD_destroy_response(r);
    int cls = http / 100;
    if (cls >= 1 && cls <= 5) __atomic_fetch_add(&s->status[cls], 1, __ATOMIC_RELAXED);
    return rc;
}

static enum MHD_Result send_error(struct MHD_Connection *c, srv_server *s, int http, const char *msg)
{
    srv_buf b = {0};
    srv_error_body(&b, msg);
    return send_buf(c, s, http, &b, "application/json", 0);
}

static enum MHD_Result send_json(struct MHD_Connection *c, srv_server *s, const char *json)
{
    srv_buf b = {0};
    srv_buf_add(&b, json, strlen(json));
    return send_buf(c, s, 200, &b, "application/json", 0);
}

/* "/v2/models/x/infer" -> {"v2", "models", "x", "infer"}; -1 when too many or too long */
static int split_path(const char *url, char seg[8][256])
{
    int n = 0;
    const char *p = url;
    while (*p) {
        while (*p == '/') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != '/') e++;
        if (n == 8 || e - p >= 256) return -1;
        memcpy(seg[n], p, (size_t)(e - p));
        seg[n][e - p] = 0;
        n++;
        p = e;
    }
    return n;
}

static enum MHD_Result route_model(struct MHD_Connection *c, srv_server *s, bool get, bool post, char seg[8][256],
                                   int n, conn *k)
{
    /* v2 models NAME [versions V] [ready|infer] */
    const char *name = seg[2], *version = "";
    int at = 3;
    if (n >= 5 && !strcmp(seg[3], "versions")) {
        version = seg[4];
        at = 5;
    }
    const char *action = at < n ? seg[at] : "";
    if (at + 1 < n || (*action && strcmp(action, "ready") && strcmp(action, "infer")))
        return send_error(c, s, 404, "no such endpoint");
    if (!srv_name_ok(name)) return send_error(c, s, 400, "bad model name");
    bool infer = !strcmp(action, "infer");
    if (infer ? !post : !get) return send_error(c, s, 405, infer ? "infer takes POST" : "this endpoint takes GET");
    srv_model *m = srv_repo_get(s->repo, name, version);
    if (!m) {
        char msg[400];
        snprintf(msg, sizeof msg, "model '%s'%s%s is not loaded", name, *version ? " version " : "", version);
        return send_error(c, s, 404, msg);
    }
    enum MHD_Result rc;
    if (!strcmp(action, "ready")) {
        rc = send_json(c, s, "{\"ready\":true}");
    } else if (!infer) {
        srv_buf b = {0};
        srv_model_metadata(m, &b);
        rc = send_buf(c, s, 200, &b, "application/json", 0);
    } else {
        size_t header_len = k->body.len;
        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Inference-Header-Content-Length");
        if (h) {
            char *end;
            unsigned long long v = strtoull(h, &end, 10);
            if (!*h || *end || *h < '0' || *h > '9') {
                srv_model_put(m);
                return send_error(c, s, 400, "Inference-Header-Content-Length is not a number");
            }
            header_len = v > k->body.len ? k->body.len + 1 : (size_t)v; /* too large: srv_infer says so */
        }
        srv_buf b = {0};
        int http;
        const char *type;
        size_t out_header;
        srv_infer(m, &s->repo->limits, k->body.data ? k->body.data : "", k->body.len, header_len, &b, &http, &type,
                  &out_header);
        rc = send_buf(c, s, http, &b, type, out_header);
    }
    srv_model_put(m);
    return rc;
}

static enum MHD_Result route(struct MHD_Connection *c, srv_server *s, const char *url, const char *method, conn *k)
{
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    char seg[8][256];
    int n = split_path(url, seg);
    if (n == 1 && !strcmp(seg[0], "metrics")) {
        if (!get) return send_error(c, s, 405, "/metrics takes GET");
        srv_buf b = {0};
        srv_http_metrics(s, &b);
        srv_repo_metrics(s->repo, &b);
        return send_buf(c, s, 200, &b, "text/plain; version=0.0.4", 0);
    }
    if (n < 1 || strcmp(seg[0], "v2")) return send_error(c, s, 404, "no such endpoint");
    if (n == 1) {
        if (!get) return send_error(c, s, 405, "/v2 takes GET");
        char json[256];
        snprintf(json, sizeof json,
                 "{\"name\":\"strata\",\"version\":\"%s\",\"extensions\":[\"binary_tensor_data\",\"model_repository\"]}",
                 st_version());
        return send_json(c, s, json);
    }
    if (n == 3 && !strcmp(seg[1], "health") && (!strcmp(seg[2], "live") || !strcmp(seg[2], "ready"))) {
        if (!get) return send_error(c, s, 405, "health takes GET");
        return send_json(c, s, !strcmp(seg[2], "live") ? "{\"live\":true}" : "{\"ready\":true}");
    }
    if (n >= 3 && !strcmp(seg[1], "models")) return route_model(c, s, get, post, seg, n, k);
    if (n >= 3 && !strcmp(seg[1], "repository")) {
        if (!post) return send_error(c, s, 405, "the repository extension takes POST");
        if (n == 3 && !strcmp(seg[2], "index")) {
            srv_buf b = {0};
            srv_repo_index(s->repo, &b);
            return send_buf(c, s, 200, &b, "application/json", 0);
        }
        if (n == 5 && !strcmp(seg[2], "models") && (!strcmp(seg[4], "load") || !strcmp(seg[4], "unload"))) {
            char err[512];
            int http = 200;
            int rc = !strcmp(seg[4], "load") ? srv_repo_load(s->repo, seg[3], err, sizeof err, &http)
                                             : srv_repo_unload(s->repo, seg[3], err, sizeof err, &http);
            if (rc) return send_error(c, s, http, err);
            return send_json(c, s, "{}");
        }
    }
    return send_error(c, s, 404, "no such endpoint");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **state)
{
    (void)version;
    srv_server *s = cls;
    conn *k = *state;
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k) return MHD_NO;
        *state = k;
        __atomic_fetch_add(&s->inflight, 1, __ATOMIC_SEQ_CST);
        k->reject = __atomic_load_n(&s->draining, __ATOMIC_SEQ_CST);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->repo->limits.max_body) k->too_big = true;
        /* answered before the body is read: the connection then closes */
        if (k->reject) return send_error(c, s, 503, "the server is shutting down");
        if (k->too_big) {
            char msg[128];
            snprintf(msg, sizeof msg, "the body is larger than the server's limit of %zu bytes",
                     s->repo->limits.max_body);
            return send_error(c, s, 413, msg);
        }
        return MHD_YES;
    }
    if (k->reject || k->too_big) {
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (k->body.len + *upload_size > s->repo->limits.max_body) return MHD_NO; /* chunked, too big: close */
        srv_buf_add(&k->body, upload, *upload_size);
        if (k->body.failed) return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    return route(c, s, url, method, k);
}

static void completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    srv_server *s = cls;
    conn *k = *state;
    if (!k) return;
    srv_buf_free(&k->body);
    free(k);
    *state = NULL;
    __atomic_fetch_sub(&s->inflight, 1, __ATOMIC_SEQ_CST);
}

srv_server *srv_http_start(srv_repo *repo, const char *host, int port, int max_connections, int timeout_s,
                           char *err, size_t cap)
{
    srv_server *s = calloc(1, sizeof *s);
    if (!s) return snprintf(err, cap, "out of memory"), NULL;
    s->repo = repo;
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)port);
        addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)port);
        addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        free(s);
        snprintf(err, cap, "--host '%s' is not an IPv4 or IPv6 address", host);
        return NULL;
    }
    s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)timeout_s, MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, cap, "cannot listen on %s port %d (in use, or not an address of this machine)", host, port);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    return s;
}

int srv_http_port(const srv_server *s) { return s->port; }

void srv_http_drain(srv_server *s) { __atomic_store_n(&s->draining, 1, __ATOMIC_SEQ_CST); }

int srv_http_inflight(srv_server *s) { return __atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST); }

void srv_http_stop(srv_server *s)
{
    if (!s) return;
    MHD_stop_daemon(s->d);
    free(s);
}

void srv_http_metrics(srv_server *s, srv_buf *out)
{
    srv_buf_printf(out, "# HELP strata_http_responses_total HTTP responses by status class\n"
                        "# TYPE strata_http_responses_total counter\n");
    for (int c = 1; c <= 5; c++)
        srv_buf_printf(out, "strata_http_responses_total{code=\"%dxx\"} %llu\n", c,
                       (unsigned long long)__atomic_load_n(&s->status[c], __ATOMIC_RELAXED));
    srv_buf_printf(out, "# HELP strata_http_inflight_requests Requests being answered\n"
                        "# TYPE strata_http_inflight_requests gauge\nstrata_http_inflight_requests %d\n",
                   srv_http_inflight(s));
}

#endif /* ST_HAVE_MHD */
