/*
 * serve_repo.c — the model repository of `strata serve`.
 *
 * Layout, as Triton and KServe lay theirs out:
 *     REPO/NAME/VERSION/model.onnx     VERSION a positive integer
 *     REPO/NAME/config.json            optional: {"backend": "cpu", "precision": "f32",
 *                                        "threads": 0, "max_batch": 8, "max_delay_us": 2000,
 *                                        "instances": 1, "memory_limit": 0}
 * The newest version is the one served.  Names come from URLs, so they are
 * checked lexically (srv_name_ok) before any path is made from them: a
 * request cannot name a file outside REPO.  What lies inside REPO (a
 * symlink to the shipped models, say) is the operator's choice.
 *
 * A model is reference-counted: the table holds one reference, every
 * request being answered another, so unloading a model that requests
 * still use frees it when the last of them is done.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "serve.h"

bool srv_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 63) return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || (c == '.' && i > 0);
        if (!ok) return false;
    }
    return true;
}

void srv_repo_init(srv_repo *r, const char *root, const srv_config *defaults, const srv_limits *limits)
{
    memset(r, 0, sizeof *r);
    snprintf(r->root, sizeof r->root, "%s", root);
    r->defaults = *defaults;
    r->limits = *limits;
    pthread_mutex_init(&r->lock, NULL);
}

/* The newest VERSION directory of REPO/NAME holding a model.onnx; -1 when none. */
static int64_t newest_version(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        if (!*s || strlen(s) > 18) continue;
        bool digits = true;
        for (const char *p = s; *p; p++) digits &= *p >= '0' && *p <= '9';
        if (!digits) continue;
        int64_t v = strtoll(s, NULL, 10);
        if (v <= 0) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, s);
        struct stat st;
        if (stat(path, &st) || !S_ISREG(st.st_mode)) continue;
        if (v > best) best = v;
    }
    closedir(d);
    return best;
}

static int int_field(const srv_json *cfg, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
                     size_t cap)
{
    const srv_json *v = srv_json_get(cfg, key);
    if (!v) return 0;
    if (v->type != SJ_NUM || v->num != (double)(int64_t)v->num || v->num < (double)lo || v->num > (double)hi) {
        snprintf(err, cap, "config.json: \"%s\" must be an integer in [%lld, %lld]", key, (long long)lo,
                 (long long)hi);
        return -1;
    }
    *out = (int64_t)v->num;
    return 0;
}

static int read_config(const char *path, srv_config *c, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? 0 : (snprintf(err, cap, "%s: %s", path, strerror(errno)), -1);
    char text[65536];
    size_t n = fread(text, 1, sizeof text, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    if (more) return snprintf(err, cap, "%s: larger than 64 KiB", path), -1;
    char jerr[200];
    srv_json *j = srv_json_parse(text, n, jerr, sizeof jerr);
    if (!j) return snprintf(err, cap, "%s: %s", path, jerr), -1;
    int rc = -1;
    if (j->type != SJ_OBJ) {
        snprintf(err, cap, "%s: not a JSON object", path);
        goto out;
    }
    static const char *known[] = {"backend", "precision", "threads", "max_batch", "max_delay_us", "instances",
                                  "memory_limit"};
    for (size_t i = 0; i < j->len; i++) {
        bool ok = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) ok |= !strcmp(j->keys[i], known[k]);
        if (!ok) {
            snprintf(err, cap, "%s: unknown setting \"%s\"", path, j->keys[i]);
            goto out;
        }
    }
    const srv_json *b = srv_json_get(j, "backend");
    if (b) {
        if (b->type == SJ_STR && !strcmp(b->str, "cpu")) c->backend = ST_BACKEND_CPU;
        else if (b->type == SJ_STR && !strcmp(b->str, "cuda")) c->backend = ST_BACKEND_CUDA;
        else if (b->type == SJ_STR && !strcmp(b->str, "opencl")) c->backend = ST_BACKEND_OPENCL;
        else {
            snprintf(err, cap, "%s: \"backend\" must be \"cpu\", \"cuda\" or \"opencl\"", path);
            goto out;
        }
    }
    const srv_json *p = srv_json_get(j, "precision");
    if (p) {
        if (p->type == SJ_STR && !strcmp(p->str, "f32")) c->precision = ST_F32;
        else if (p->type == SJ_STR && !strcmp(p->str, "f16")) c->precision = ST_F16;
        else if (p->type == SJ_STR && !strcmp(p->str, "bf16")) c->precision = ST_BF16;
        else {
            snprintf(err, cap, "%s: \"precision\" must be \"f32\", \"f16\" or \"bf16\"", path);
            goto out;
        }
    }
    int64_t v;
    char e2[200];
    v = c->threads;
    if (int_field(j, "threads", 0, 1024, &v, e2, sizeof e2)) goto field;
    c->threads = (int)v;
    v = c->max_batch;
    if (int_field(j, "max_batch", 1, 1024, &v, e2, sizeof e2)) goto field;
    c->max_batch = (int)v;
    v = c->max_delay_us;
    if (int_field(j, "max_delay_us", 0, 10000000, &v, e2, sizeof e2)) goto field;
    c->max_delay_us = v;
    v = c->instances;
    if (int_field(j, "instances", 1, 64, &v, e2, sizeof e2)) goto field;
    c->instances = (int)v;
    v = (int64_t)c->memory_limit;
    if (int_field(j, "memory_limit", 0, INT64_MAX / 2, &v, e2, sizeof e2)) goto field;
    c->memory_limit = (uint64_t)v;
    rc = 0;
    goto out;
field:
    snprintf(err, cap, "%s: %s", path, e2);
out:
    srv_json_free(j);
    return rc;
}

static void remember_failure(srv_repo *r, const char *name, const char *why)
{
    int i = 0;
    while (i < r->n_failed && strcmp(r->failed_name[i], name)) i++;
    if (i == r->n_failed) {
        if (r->n_failed == SRV_MAX_MODELS) return;
        r->n_failed++;
    }
    snprintf(r->failed_name[i], sizeof r->failed_name[i], "%s", name);
    snprintf(r->failed_why[i], sizeof r->failed_why[i], "%s", why);
}

static void forget_failure(srv_repo *r, const char *name)
{
    for (int i = 0; i < r->n_failed; i++)
        if (!strcmp(r->failed_name[i], name)) {
            r->n_failed--;
            memcpy(r->failed_name[i], r->failed_name[r->n_failed], sizeof r->failed_name[i]);
            memcpy(r->failed_why[i], r->failed_why[r->n_failed], sizeof r->failed_why[i]);
            return;
        }
}

static void model_free(srv_model *m)
{
    st_model_free(m->model);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->wake);
    free(m);
}

/* Builds and starts NAME's newest version (the repository unlocked). */
static srv_model *model_open(srv_repo *r, const char *name, char *err, size_t cap, int *http)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", r->root, name);
    int64_t ver = newest_version(dir);
    if (ver < 0) {
        *http = 404;
        snprintf(err, cap, "model '%s': no %s/VERSION/model.onnx in the repository", name, name);
        return NULL;
    }
    *http = 500;
    srv_model *m = calloc(1, sizeof *m);
    if (!m) return snprintf(err, cap, "out of memory"), NULL;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->version = ver;
    m->cfg = r->defaults;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->wake, NULL);
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char why[400];
    if (read_config(path, &m->cfg, why, sizeof why)) {
        snprintf(err, cap, "model '%s': %s", name, why);
        model_free(m);
        return NULL;
    }
    snprintf(path, sizeof path, "%s/%lld/model.onnx", dir, (long long)ver);
    if (st_model_load(path, &m->model) != ST_OK) {
        snprintf(err, cap, "model '%s': %s", name, st_last_error());
        model_free(m);
        return NULL;
    }
    m->n_in = st_model_input_count(m->model);
    m->n_out = st_model_output_count(m->model);
    if (m->n_in > 64 || m->n_out > 64) {
        snprintf(err, cap, "model '%s': more than 64 inputs or outputs", name);
        model_free(m);
        return NULL;
    }
    /* batching concatenates along dim 0: every input and output must have
     * a symbolic one */
    m->batchable = m->cfg.max_batch > 1;
    for (int i = 0; i < m->n_in + m->n_out; i++) {
        bool is_in = i < m->n_in;
        int k = is_in ? i : i - m->n_in;
        st_value_info *vi = is_in ? &m->in[k] : &m->out[k];
        st_status s = is_in ? st_model_input_info(m->model, k, vi) : st_model_output_info(m->model, k, vi);
        st_value_kind kind = is_in ? st_model_input_kind(m->model, k) : st_model_output_kind(m->model, k);
        if (s != ST_OK) {
            snprintf(err, cap, "model '%s': %s", name, st_last_error());
            model_free(m);
            return NULL;
        }
        if (kind != ST_KIND_TENSOR || !srv_dtype_name(vi->dtype)) {
            snprintf(err, cap, "model '%s': %s '%s' is a %s %s; strata serve carries numeric tensors only", name,
                     is_in ? "input" : "output", vi->name, kind == ST_KIND_TENSOR ? "tensor of" : "non-tensor",
                     st_dtype_name(vi->dtype));
            model_free(m);
            return NULL;
        }
        if (vi->rank < 1 || vi->dims[0] >= 0) m->batchable = false;
    }
    if (srv_model_start(m, why, sizeof why)) {
        snprintf(err, cap, "model '%s': %s", name, why);
        model_free(m);
        return NULL;
    }
    m->refs = 1;
    return m;
}

int srv_repo_load(srv_repo *r, const char *name, char *err, size_t cap, int *http)
{
    if (!srv_name_ok(name)) {
        *http = 400;
        snprintf(err, cap, "bad model name (allowed: letters, digits, '_', '-', '.' not first; 1 to 63)");
        return -1;
    }
    srv_model *m = model_open(r, name, err, cap, http);
    pthread_mutex_lock(&r->lock);
    if (!m) {
        remember_failure(r, name, err);
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    forget_failure(r, name);
    srv_model *old = NULL;
    int slot = -1;
    for (int i = 0; i < SRV_MAX_MODELS; i++) {
        if (r->models[i] && !strcmp(r->models[i]->name, name)) {
            old = r->models[i];
            slot = i;
            break;
        }
        if (!r->models[i] && slot < 0) slot = i;
    }
    if (slot < 0) {
        pthread_mutex_unlock(&r->lock);
        srv_model_stop(m);
        model_free(m);
        *http = 500;
        snprintf(err, cap, "the repository holds %d models already", SRV_MAX_MODELS);
        return -1;
    }
    r->models[slot] = m;
    pthread_mutex_unlock(&r->lock);
    if (old) { /* a reload: the new version serves from now on */
        srv_model_stop(old);
        srv_model_put(old);
    }
    return 0;
}

int srv_repo_unload(srv_repo *r, const char *name, char *err, size_t cap, int *http)
{
    if (!srv_name_ok(name)) {
        *http = 400;
        snprintf(err, cap, "bad model name");
        return -1;
    }
    srv_model *m = NULL;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < SRV_MAX_MODELS; i++)
        if (r->models[i] && !strcmp(r->models[i]->name, name)) {
            m = r->models[i];
            r->models[i] = NULL;
        }
    pthread_mutex_unlock(&r->lock);
    if (!m) {
        *http = 404;
        snprintf(err, cap, "model '%s' is not loaded", name);
        return -1;
    }
    /* queued requests are answered, then the instances end */
    srv_model_stop(m);
    srv_model_put(m);
    return 0;
}

void srv_repo_unload_all(srv_repo *r)
{
    for (int i = 0; i < SRV_MAX_MODELS; i++) {
        pthread_mutex_lock(&r->lock);
        srv_model *m = r->models[i];
        r->models[i] = NULL;
        pthread_mutex_unlock(&r->lock);
        if (m) {
            srv_model_stop(m);
            srv_model_put(m);
        }
    }
}

int srv_repo_load_all(srv_repo *r)
{
    DIR *d = opendir(r->root);
    if (!d) {
        fprintf(stderr, "strata: serve: %s: %s\n", r->root, strerror(errno));
        return -1;
    }
    char names[SRV_MAX_MODELS][64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < SRV_MAX_MODELS) {
        if (!srv_name_ok(e->d_name)) continue;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", r->root, e->d_name);
        if (newest_version(dir) < 0) continue;
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char err[512];
        int http;
        if (srv_repo_load(r, names[i], err, sizeof err, &http)) {
            fprintf(stderr, "strata: serve: %s\n", err);
            failed++;
        }
    }
    return failed;
}

srv_model *srv_repo_get(srv_repo *r, const char *name, const char *version)
{
    srv_model *m = NULL;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < SRV_MAX_MODELS; i++) {
        srv_model *c = r->models[i];
        if (!c || strcmp(c->name, name)) continue;
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)c->version);
        if (version && *version && strcmp(version, v)) break;
        m = c;
        pthread_mutex_lock(&m->lock);
        m->refs++;
        pthread_mutex_unlock(&m->lock);
        break;
    }
    pthread_mutex_unlock(&r->lock);
    return m;
}

void srv_model_put(srv_model *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    int left = --m->refs;
    pthread_mutex_unlock(&m->lock);
    if (left == 0) model_free(m);
}

void srv_repo_index(srv_repo *r, srv_buf *out)
{
    srv_buf_add(out, "[", 1);
    bool first = true;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < SRV_MAX_MODELS; i++) {
        srv_model *m = r->models[i];
        if (!m) continue;
        srv_buf_printf(out, "%s{\"name\":", first ? "" : ",");
        srv_buf_json_string(out, m->name);
        srv_buf_printf(out, ",\"version\":\"%lld\",\"state\":\"READY\"}", (long long)m->version);
        first = false;
    }
    for (int i = 0; i < r->n_failed; i++) {
        srv_buf_printf(out, "%s{\"name\":", first ? "" : ",");
        srv_buf_json_string(out, r->failed_name[i]);
        srv_buf_printf(out, ",\"state\":\"UNAVAILABLE\",\"reason\":");
        srv_buf_json_string(out, r->failed_why[i]);
        srv_buf_add(out, "}", 1);
        first = false;
    }
    pthread_mutex_unlock(&r->lock);
    srv_buf_add(out, "]", 1);
}

void srv_repo_metrics(srv_repo *r, srv_buf *out)
{
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"strata_inference_requests_total", "counter", "Inference requests answered, successes and failures"},
        {"strata_inference_failures_total", "counter", "Inference requests that failed after they were queued"},
        {"strata_inference_queue_seconds_total", "counter", "Time requests spent queued before their run"},
        {"strata_inference_compute_seconds_total", "counter", "Time requests spent in their (batched) run"},
        {"strata_inference_batches_total", "counter", "Session runs (one per batch)"},
        {"strata_inference_batch_size", "histogram", "Requests' batch rows per session run"},
    };
    static const int le[SRV_BATCH_BUCKETS - 1] = {1, 2, 4, 8, 16, 32, 64};
    pthread_mutex_lock(&r->lock);
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        srv_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", fam[f].name, fam[f].help, fam[f].name, fam[f].type);
        for (int i = 0; i < SRV_MAX_MODELS; i++) {
            srv_model *m = r->models[i];
            if (!m) continue;
            pthread_mutex_lock(&m->lock);
            srv_counters c = m->c;
            pthread_mutex_unlock(&m->lock);
            char lab[128];
            snprintf(lab, sizeof lab, "model=\"%s\",version=\"%lld\"", m->name, (long long)m->version);
            switch (f) {
            case 0: srv_buf_printf(out, "%s{%s} %llu\n", fam[f].name, lab, (unsigned long long)c.requests); break;
            case 1: srv_buf_printf(out, "%s{%s} %llu\n", fam[f].name, lab, (unsigned long long)c.failures); break;
            case 2: srv_buf_printf(out, "%s{%s} %.6f\n", fam[f].name, lab, c.queue_s); break;
            case 3: srv_buf_printf(out, "%s{%s} %.6f\n", fam[f].name, lab, c.compute_s); break;
            case 4: srv_buf_printf(out, "%s{%s} %llu\n", fam[f].name, lab, (unsigned long long)c.batches); break;
            default: {
                uint64_t cum = 0;
                for (int b = 0; b < SRV_BATCH_BUCKETS; b++) {
                    cum += c.batch_hist[b];
                    if (b < SRV_BATCH_BUCKETS - 1)
                        srv_buf_printf(out, "%s_bucket{%s,le=\"%d\"} %llu\n", fam[f].name, lab, le[b],
                                       (unsigned long long)cum);
                    else
                        srv_buf_printf(out, "%s_bucket{%s,le=\"+Inf\"} %llu\n", fam[f].name, lab,
                                       (unsigned long long)cum);
                }
                srv_buf_printf(out, "%s_sum{%s} %llu\n%s_count{%s} %llu\n", fam[f].name, lab,
                               (unsigned long long)c.batch_sum, fam[f].name, lab, (unsigned long long)c.batches);
            }
            }
        }
    }
    pthread_mutex_unlock(&r->lock);
}
