/*
 * serve_batch.c — dynamic batching and instances.
 *
 * Each model has one queue and cfg.instances threads, each with its own
 * session (a session runs on one thread at a time; separate sessions on
 * one immutable st_model run in parallel).  An instance takes the oldest
 * request, then gathers queued requests whose inputs agree with it in
 * every dim but the first, until their rows reach max_batch or the oldest
 * has waited max_delay_us.  The inputs are concatenated along dim 0, run
 * as one session run, and every output is split back by rows.  A model
 * whose outputs do not follow the batch (dim 0 of an output is not the
 * rows run) gets its requests run one by one instead, so batching can
 * never mix two requests' answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct instance {
    srv_model *m;
    st_session *s;
} instance;

static void finish(srv_request *q, int http, const char *err)
{
    pthread_mutex_lock(&q->lock);
    q->http = http;
    if (err) snprintf(q->err, sizeof q->err, "%s", err);
    q->done = true;
    pthread_cond_broadcast(&q->done_cv);
    pthread_mutex_unlock(&q->lock);
}

static int status_http(st_status s)
{
    /* what the caller sent that the model refused (a symbolic dim it cannot take) */
    return s == ST_ERR_SHAPE || s == ST_ERR_DTYPE || s == ST_ERR_INVALID_ARG ? 400 : 500;
}

static bool compatible(const srv_request *a, const srv_request *b)
{
    for (int i = 0; i < a->n_in; i++)
        for (int d = 1; d < a->in[i].rank; d++)
            if (a->in[i].dims[d] != b->in[i].dims[d]) return false;
    return true;
}

/* Runs requests q[0..k) as one batch (k == 1: as they are).  Returns 1
 * when the outputs did not follow the batch (nothing answered), else 0
 * with every request answered. */
static int run_batch(instance *in, srv_request **q, int k)
{
    srv_model *m = in->m;
    st_session *s = in->s;
    int64_t rows = 0;
    for (int i = 0; i < k; i++) rows += q[i]->batch;
    char err[512];
    int http = 500;
    void *bufs[64] = {0};
    for (int i = 0; i < m->n_in; i++) {
        srv_tensor *t = &q[0]->in[i];
        int64_t dims[ST_MAX_RANK];
        memcpy(dims, t->dims, sizeof dims);
        const void *data = t->data;
        size_t bytes = t->bytes;
        if (k > 1) {
            dims[0] = rows;
            bytes = 0;
            for (int j = 0; j < k; j++) bytes += q[j]->in[i].bytes;
            char *cat = malloc(bytes ? bytes : 1);
            if (!cat) {
                snprintf(err, sizeof err, "out of memory for a batch of %lld rows", (long long)rows);
                goto fail;
            }
            size_t off = 0;
            for (int j = 0; j < k; j++) {
                memcpy(cat + off, q[j]->in[i].data, q[j]->in[i].bytes);
                off += q[j]->in[i].bytes;
            }
            bufs[i] = cat;
            data = cat;
        }
        st_status st = st_session_set_input_checked(s, m->in[i].name, t->dtype, t->rank, dims, data, bytes);
        if (st != ST_OK) {
            http = status_http(st);
            snprintf(err, sizeof err, "%s", st_last_error());
            goto fail;
        }
    }
    st_status st = st_session_run(s);
    if (st == ST_OK) st = st_session_wait(s);
    if (st != ST_OK) {
        http = status_http(st);
        snprintf(err, sizeof err, "%s", st_last_error());
        goto fail;
    }
    /* every output any request asked for, read once and split by rows */
    for (int o = 0; o < m->n_out; o++) {
        bool wanted = false;
        for (int j = 0; j < k; j++)
            for (int r = 0; r < q[j]->n_out; r++) wanted |= q[j]->out_index[r] == o;
        if (!wanted) continue;
        st_tensor *t = NULL;
        st = st_session_output(s, m->out[o].name, &t);
        if (st != ST_OK) {
            snprintf(err, sizeof err, "%s", st_last_error());
            goto fail;
        }
        int rank = st_tensor_rank(t);
        if (k > 1 && (rank < 1 || st_tensor_dim(t, 0) != rows)) {
            st_tensor_free(t);
            for (int i = 0; i < m->n_in; i++) free(bufs[i]);
            for (int j = 0; j < k; j++)
                for (int r = 0; r < q[j]->n_out; r++) {
                    free(q[j]->out[r].data);
                    q[j]->out[r].data = NULL;
                }
            return 1;
        }
        st_dtype dt = m->out[o].dtype;
        size_t bytes = (size_t)st_tensor_numel(t) * st_dtype_size(dt);
        char *all = malloc(bytes ? bytes : 1);
        if (!all) {
            st_tensor_free(t);
            snprintf(err, sizeof err, "out of memory for output '%s'", m->out[o].name);
            goto fail;
        }
        st = st_tensor_read(t, dt, all, bytes);
        if (st != ST_OK) {
            snprintf(err, sizeof err, "%s", st_last_error());
            st_tensor_free(t);
            free(all);
            goto fail;
        }
        size_t row_bytes = k > 1 ? bytes / (size_t)rows : bytes;
        int64_t at = 0;
        for (int j = 0; j < k; j++) {
            size_t part = k > 1 ? row_bytes * (size_t)q[j]->batch : bytes;
            for (int r = 0; r < q[j]->n_out; r++) {
                if (q[j]->out_index[r] != o) continue;
                srv_tensor *ot = &q[j]->out[r];
                ot->dtype = dt;
                ot->rank = rank;
                for (int d = 0; d < rank && d < ST_MAX_RANK; d++) ot->dims[d] = st_tensor_dim(t, d);
                if (k > 1) ot->dims[0] = q[j]->batch;
                ot->bytes = part;
                if (k == 1) {
                    /* the one request takes the buffer (serve_infer.c refuses an output named twice) */
                    ot->data = all;
                    all = NULL;
                } else {
                    ot->data = malloc(part ? part : 1);
                    if (ot->data) memcpy(ot->data, all + (size_t)at * row_bytes, part);
                }
                if (!ot->data) {
                    st_tensor_free(t);
                    free(all);
                    snprintf(err, sizeof err, "out of memory for output '%s'", m->out[o].name);
                    goto fail;
                }
            }
            at += q[j]->batch;
        }
        free(all);
        st_tensor_free(t);
    }
    for (int i = 0; i < m->n_in; i++) free(bufs[i]);
    for (int j = 0; j < k; j++) finish(q[j], 200, NULL);
    return 0;
fail:
    for (int i = 0; i < m->n_in; i++) free(bufs[i]);
    for (int j = 0; j < k; j++) finish(q[j], http, err);
    return 0;
}

static void account(srv_model *m, srv_request **q, int k, int64_t rows, double t0, double t1)
{
    pthread_mutex_lock(&m->lock);
    m->c.batches++;
    m->c.batch_sum += (uint64_t)rows;
    int b = 0;
    while (b < SRV_BATCH_BUCKETS - 1 && rows > (1LL << b)) b++;
    m->c.batch_hist[b]++;
    for (int j = 0; j < k; j++) {
        m->c.requests++;
        if (q[j]->http != 200) m->c.failures++;
        m->c.queue_s += t0 - q[j]->t_arrive;
        m->c.compute_s += t1 - t0;
    }
    pthread_mutex_unlock(&m->lock);
}

static void *instance_main(void *arg)
{
    instance *in = arg;
    srv_model *m = in->m;
    int cap = m->cfg.max_batch > 0 ? m->cfg.max_batch : 1;
    srv_request **take = calloc((size_t)cap, sizeof *take);
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->head && !m->stopping) pthread_cond_wait(&m->wake, &m->lock);
        if (!m->head) break; /* stopping, and nothing left to answer */
        if (m->batchable && take) {
            /* wait for more rows, up to the oldest request's deadline */
            double deadline = m->head->t_arrive + (double)m->cfg.max_delay_us * 1e-6;
            while (m->head && !m->stopping) {
                int64_t rows = 0;
                for (srv_request *r = m->head; r; r = r->next)
                    if (compatible(m->head, r)) rows += r->batch;
                if (rows >= m->cfg.max_batch || srv_now() >= deadline) break;
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double wait = deadline - srv_now();
                long ns = ts.tv_nsec + (long)(wait * 1e9);
                ts.tv_sec += ns / 1000000000L;
                ts.tv_nsec = ns % 1000000000L;
                pthread_cond_timedwait(&m->wake, &m->lock, &ts);
            }
            if (!m->head) continue; /* another instance took them */
        }
        /* the oldest, then compatible ones while their rows fit */
        int k = 0;
        int64_t rows = 0;
        srv_request **link = &m->head, *prev = NULL;
        srv_request *first = m->head;
        while (*link) {
            srv_request *r = *link;
            bool fits = k == 0 || (m->batchable && take && k < cap && compatible(first, r) &&
                                   rows + r->batch <= m->cfg.max_batch);
            if (fits) {
                *link = r->next;
                if (m->tail == r) m->tail = prev;
                r->next = NULL;
                if (take) take[k] = r;
                k++;
                rows += r->batch;
                m->queued--;
                if (!take || !m->batchable) break;
            } else {
                prev = r;
                link = &r->next;
            }
        }
        pthread_mutex_unlock(&m->lock);
        srv_request *one[1] = {first};
        srv_request **batch = take ? take : one;
        double t0 = srv_now();
        if (run_batch(in, batch, k)) {
            /* the model's outputs do not follow dim 0: one by one */
            for (int j = 0; j < k; j++) run_batch(in, &batch[j], 1);
        }
        double t1 = srv_now();
        /* account() reads the requests (status, arrival), so a waiter
         * leaves only once t_arrive is marked -1 after it */
        account(m, batch, k, rows, t0, t1);
        for (int j = 0; j < k; j++) {
            pthread_mutex_lock(&batch[j]->lock);
            batch[j]->t_arrive = -1; /* counted: the waiter may go */
            pthread_cond_broadcast(&batch[j]->done_cv);
            pthread_mutex_unlock(&batch[j]->lock);
        }
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    free(take);
    st_session_free(in->s);
    free(in);
    return NULL;
}

int srv_model_start(srv_model *m, char *err, size_t cap)
{
    int n = m->cfg.instances > 0 ? m->cfg.instances : 1;
    m->threads = calloc((size_t)n, sizeof *m->threads);
    if (!m->threads) return snprintf(err, cap, "out of memory"), -1;
    st_session_options o;
    st_session_options_init(&o);
    o.backend = m->cfg.backend;
    o.precision = m->cfg.precision;
    o.threads = m->cfg.threads;
    o.memory_limit = m->cfg.memory_limit;
    for (int i = 0; i < n; i++) {
        instance *in = calloc(1, sizeof *in);
        if (!in) {
            snprintf(err, cap, "out of memory");
            goto fail;
        }
        in->m = m;
        if (st_session_create(m->model, &o, &in->s) != ST_OK) {
            snprintf(err, cap, "instance %d: %s", i, st_last_error());
            free(in);
            goto fail;
        }
        if (pthread_create(&m->threads[i], NULL, instance_main, in)) {
            snprintf(err, cap, "instance %d: cannot start a thread", i);
            st_session_free(in->s);
            free(in);
            goto fail;
        }
        m->n_threads++;
    }
    return 0;
fail:
    srv_model_stop(m);
    return -1;
}

void srv_model_stop(srv_model *m)
{
    pthread_mutex_lock(&m->lock);
    m->stopping = true;
    pthread_cond_broadcast(&m->wake);
    pthread_mutex_unlock(&m->lock);
    for (int i = 0; i < m->n_threads; i++) pthread_join(m->threads[i], NULL);
    m->n_threads = 0;
    free(m->threads);
    m->threads = NULL;
}

void srv_model_infer(srv_model *m, srv_request *q)
{
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->done_cv, NULL);
    q->model = m;
    q->next = NULL;
    q->t_arrive = srv_now();
    pthread_mutex_lock(&m->lock);
    if (m->stopping) {
        pthread_mutex_unlock(&m->lock);
        q->http = 503;
        snprintf(q->err, sizeof q->err, "model '%s' is being unloaded", m->name);
        q->done = true;
        goto out;
    }
    if (m->tail) m->tail->next = q;
    else m->head = q;
    m->tail = q;
    m->queued++;
    pthread_cond_broadcast(&m->wake);
    pthread_mutex_unlock(&m->lock);
    pthread_mutex_lock(&q->lock);
    while (!q->done || q->t_arrive >= 0) pthread_cond_wait(&q->done_cv, &q->lock);
    pthread_mutex_unlock(&q->lock);
out:
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->done_cv);
}
