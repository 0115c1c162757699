/*
 * serve_infer.c — one inference request of the Open Inference Protocol:
 * parsed, checked against the model, queued, answered.
 *
 * Every input's name, datatype, shape, element count and byte count is
 * checked here, before strata sees it: a request can only reach
 * st_session_set_input_checked with a dtype the model takes, the model's
 * rank and fixed dims, a bounded element count, and exactly as many bytes
 * as its shape needs.
 *
 * Binary tensor data (the extension Triton's clients use): the body is
 * Inference-Header-Content-Length bytes of JSON, then each input whose
 * parameters say "binary_data_size" takes that many bytes, in the order
 * the inputs are listed; they must add up to the rest of the body.  An
 * output asked for with "binary_data": true (or every output, with the
 * request's "binary_data_output": true) comes back the same way.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static const struct {
    const char *name;
    st_dtype dt;
} DTYPES[] = {
    {"BOOL", ST_BOOL}, {"UINT8", ST_U8},   {"UINT16", ST_U16}, {"UINT32", ST_U32}, {"UINT64", ST_U64},
    {"INT8", ST_I8},   {"INT16", ST_I16},  {"INT32", ST_I32},  {"INT64", ST_I64},  {"FP16", ST_F16},
    {"FP32", ST_F32},  {"FP64", ST_F64},   {"BF16", ST_BF16},
};

st_dtype srv_dtype_of(const char *name)
{
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (!strcmp(DTYPES[i].name, name)) return DTYPES[i].dt;
    return ST_UNDEFINED;
}

const char *srv_dtype_name(st_dtype t)
{
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
        if (DTYPES[i].dt == t) return DTYPES[i].name;
    return NULL;
}

void srv_error_body(srv_buf *out, const char *msg)
{
    out->len = 0;
    srv_buf_add(out, "{\"error\":", 9);
    srv_buf_json_string(out, msg);
    srv_buf_add(out, "}", 1);
}

static void value_infos(srv_buf *out, const st_value_info *v, int n)
{
    srv_buf_add(out, "[", 1);
    for (int i = 0; i < n; i++) {
        srv_buf_add(out, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
        srv_buf_json_string(out, v[i].name);
        srv_buf_printf(out, ",\"datatype\":\"%s\",\"shape\":[", srv_dtype_name(v[i].dtype));
        for (int d = 0; d < v[i].rank; d++) srv_buf_printf(out, "%s%lld", d ? "," : "", (long long)v[i].dims[d]);
        srv_buf_add(out, "]}", 2);
    }
    srv_buf_add(out, "]", 1);
}

void srv_model_metadata(const srv_model *m, srv_buf *out)
{
    srv_buf_add(out, "{\"name\":", 8);
    srv_buf_json_string(out, m->name);
    srv_buf_printf(out, ",\"versions\":[\"%lld\"],\"platform\":\"onnx\",\"inputs\":", (long long)m->version);
    value_infos(out, m->in, m->n_in);
    srv_buf_add(out, ",\"outputs\":", 11);
    value_infos(out, m->out, m->n_out);
    srv_buf_printf(out, ",\"parameters\":{\"max_batch_size\":%d,\"dynamic_batching\":%s,\"instances\":%d}}",
                   m->cfg.max_batch, m->batchable ? "true" : "false", m->cfg.instances);
}

/* ---- numbers in and out ---- */
static bool put_number(st_dtype dt, double v, void *dst, size_t i)
{
    bool integral = v == floor(v);
    switch (dt) {
    case ST_F32: ((float *)dst)[i] = (float)v; return fabs(v) <= 3.4028234663852886e38;
    case ST_F64: ((double *)dst)[i] = v; return true;
    case ST_BOOL: ((uint8_t *)dst)[i] = v != 0; return v == 0 || v == 1;
#define INT_CASE(K, T, LO, HI)                                                                                     \
    case K:                                                                                                        \
        if (!integral || v < (double)(LO) || v > (double)(HI)) return false;                                      \
        ((T *)dst)[i] = (T)v;                                                                                      \
        return true;
        INT_CASE(ST_U8, uint8_t, 0, UINT8_MAX)
        INT_CASE(ST_I8, int8_t, INT8_MIN, INT8_MAX)
        INT_CASE(ST_U16, uint16_t, 0, UINT16_MAX)
        INT_CASE(ST_I16, int16_t, INT16_MIN, INT16_MAX)
        INT_CASE(ST_U32, uint32_t, 0, UINT32_MAX)
        INT_CASE(ST_I32, int32_t, INT32_MIN, INT32_MAX)
    /* doubles hold integers exactly to 2^53: larger ones must come as binary data */
        INT_CASE(ST_I64, int64_t, -9007199254740992.0, 9007199254740992.0)
        INT_CASE(ST_U64, uint64_t, 0, 9007199254740992.0)
#undef INT_CASE
    default: return false;
    }
}

static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 31, f = h & 1023;
    float v = e == 0 ? ldexpf((float)f, -24) : e == 31 ? (f ? NAN : INFINITY) : ldexpf((float)(f | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

static void put_json_numbers(srv_buf *out, const srv_tensor *t)
{
    size_t n = t->bytes / st_dtype_size(t->dtype);
    char tmp[40];
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        int len;
        switch (t->dtype) {
        case ST_F32: v = ((const float *)t->data)[i]; goto real;
        case ST_F64: v = ((const double *)t->data)[i]; goto real;
        case ST_F16: v = half_to_float(((const uint16_t *)t->data)[i]); goto real;
        case ST_BF16: {
            uint32_t u = (uint32_t)((const uint16_t *)t->data)[i] << 16;
            float f;
            memcpy(&f, &u, 4);
            v = f;
            goto real;
        }
        case ST_BOOL: len = snprintf(tmp, sizeof tmp, "%s", ((const uint8_t *)t->data)[i] ? "true" : "false"); break;
        case ST_U8: len = snprintf(tmp, sizeof tmp, "%u", ((const uint8_t *)t->data)[i]); break;
        case ST_I8: len = snprintf(tmp, sizeof tmp, "%d", ((const int8_t *)t->data)[i]); break;
        case ST_U16: len = snprintf(tmp, sizeof tmp, "%u", ((const uint16_t *)t->data)[i]); break;
        case ST_I16: len = snprintf(tmp, sizeof tmp, "%d", ((const int16_t *)t->data)[i]); break;
        case ST_U32: len = snprintf(tmp, sizeof tmp, "%u", ((const uint32_t *)t->data)[i]); break;
        case ST_I32: len = snprintf(tmp, sizeof tmp, "%d", ((const int32_t *)t->data)[i]); break;
        case ST_U64: len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)((const uint64_t *)t->data)[i]); break;
        case ST_I64: len = snprintf(tmp, sizeof tmp, "%lld", (long long)((const int64_t *)t->data)[i]); break;
        default: len = snprintf(tmp, sizeof tmp, "null"); break;
        }
        goto add;
    real:
        /* JSON has no NaN or infinity */
        if (!isfinite(v)) len = snprintf(tmp, sizeof tmp, "null");
        else len = snprintf(tmp, sizeof tmp, t->dtype == ST_F64 ? "%.17g" : "%.9g", v);
    add:
        if (i) srv_buf_add(out, ",", 1);
        srv_buf_add(out, tmp, (size_t)len);
    }
}

/* ---- the request ---- */
typedef struct ctx {
    srv_model *m;
    const srv_limits *lim;
    char *err;
    size_t cap;
} ctx;

#define BAD(...) (snprintf(c->err, c->cap, __VA_ARGS__), -1)

static int find_index(const st_value_info *v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].name, name)) return i;
    return -1;
}

static int parse_input(ctx *c, srv_request *q, const srv_json *j, const char *bin, size_t bin_size, size_t *bin_at)
{
    srv_model *m = c->m;
    if (j->type != SJ_OBJ) return BAD("every input must be an object");
    const srv_json *name = srv_json_get(j, "name"), *dt = srv_json_get(j, "datatype"),
                   *shape = srv_json_get(j, "shape"), *data = srv_json_get(j, "data"),
                   *params = srv_json_get(j, "parameters");
    if (!name || name->type != SJ_STR) return BAD("an input has no \"name\" string");
    int idx = find_index(m->in, m->n_in, name->str);
    if (idx < 0) return BAD("model '%s' has no input '%.200s'", m->name, name->str);
    srv_tensor *t = &q->in[idx];
    if (t->data) return BAD("input '%s' given twice", m->in[idx].name);
    const st_value_info *vi = &m->in[idx];
    if (!dt || dt->type != SJ_STR) return BAD("input '%s': no \"datatype\" string", vi->name);
    st_dtype want = vi->dtype;
    if (srv_dtype_of(dt->str) != want)
        return BAD("input '%s': datatype '%.40s', the model takes %s", vi->name, dt->str, srv_dtype_name(want));
    if (!shape || shape->type != SJ_NUMS) return BAD("input '%s': \"shape\" must be an array of integers", vi->name);
    if (vi->rank >= 0 && (int)shape->len != vi->rank)
        return BAD("input '%s': shape has %zu dims, the model takes %d", vi->name, shape->len, vi->rank);
    if (shape->len > ST_MAX_RANK) return BAD("input '%s': more than %d dims", vi->name, ST_MAX_RANK);
    int64_t numel = 1;
    for (size_t d = 0; d < shape->len; d++) {
        double v = shape->nums[d];
        if (v != floor(v) || v < 1 || v > (double)c->lim->max_elements)
            return BAD("input '%s': dim %zu is %g; dims are integers from 1 to %lld", vi->name, d, v,
                       (long long)c->lim->max_elements);
        int64_t x = (int64_t)v;
        if (vi->rank >= 0 && vi->dims[d] >= 0 && vi->dims[d] != x)
            return BAD("input '%s': dim %zu is %lld, the model takes %lld", vi->name, d, (long long)x,
                       (long long)vi->dims[d]);
        if (numel > c->lim->max_elements / x)
            return BAD("input '%s': more than %lld elements", vi->name, (long long)c->lim->max_elements);
        numel *= x;
        t->dims[d] = x;
    }
    t->rank = (int)shape->len;
    t->dtype = want;
    snprintf(t->name, sizeof t->name, "%s", vi->name);
    if (m->batchable) {
        if (t->rank < 1 || t->dims[0] > m->cfg.max_batch)
            return BAD("input '%s': dim 0 (the batch) is %lld, the model's max_batch is %d", vi->name,
                       (long long)(t->rank ? t->dims[0] : 0), m->cfg.max_batch);
        if (q->batch && q->batch != t->dims[0])
            return BAD("input '%s': dim 0 is %lld, another input's is %lld", vi->name, (long long)t->dims[0],
                       (long long)q->batch);
        q->batch = t->dims[0];
    }
    size_t bytes = (size_t)numel * st_dtype_size(want);
    t->bytes = bytes;
    const srv_json *bsize = params ? srv_json_get(params, "binary_data_size") : NULL;
    if (bsize) {
        if (data) return BAD("input '%s': both \"data\" and binary_data_size", vi->name);
        if (bsize->type != SJ_NUM || bsize->num != floor(bsize->num) || bsize->num < 0)
            return BAD("input '%s': binary_data_size must be a non-negative integer", vi->name);
        if (bsize->num != (double)bytes)
            return BAD("input '%s': binary_data_size is %.0f, its shape and datatype take %zu bytes", vi->name,
                       bsize->num, bytes);
        if (bytes > bin_size - *bin_at)
            return BAD("input '%s': binary_data_size %zu runs past the body (%zu bytes of binary data left)",
                       vi->name, bytes, bin_size - *bin_at);
        t->data = malloc(bytes ? bytes : 1);
        if (!t->data) return BAD("out of memory");
        memcpy(t->data, bin + *bin_at, bytes);
        *bin_at += bytes;
        return 0;
    }
    if (!data) return BAD("input '%s': no \"data\" and no binary_data_size", vi->name);
    if (data->type != SJ_NUMS) return BAD("input '%s': \"data\" must be an array of numbers", vi->name);
    if ((int64_t)data->len != numel)
        return BAD("input '%s': \"data\" has %zu elements, shape takes %lld", vi->name, data->len, (long long)numel);
    if (want == ST_F16 || want == ST_BF16)
        return BAD("input '%s': %s data must come as binary tensor data", vi->name, srv_dtype_name(want));
    t->data = malloc(bytes ? bytes : 1);
    if (!t->data) return BAD("out of memory");
    for (size_t i = 0; i < data->len; i++)
        if (!put_number(want, data->nums[i], t->data, i))
            return BAD("input '%s': element %zu (%g) is not a valid %s", vi->name, i, data->nums[i],
                       srv_dtype_name(want));
    return 0;
}

static int parse_outputs(ctx *c, srv_request *q, const srv_json *outs, bool all_binary)
{
    srv_model *m = c->m;
    if (!outs) {
        q->n_out = m->n_out;
        for (int o = 0; o < m->n_out; o++) {
            q->out_index[o] = o;
            q->out[o].binary = all_binary;
            snprintf(q->out[o].name, sizeof q->out[o].name, "%s", m->out[o].name);
        }
        return 0;
    }
    if (outs->type != SJ_ARR && !(outs->type == SJ_NUMS && outs->len == 0))
        return BAD("\"outputs\" must be an array of objects");
    size_t n = outs->type == SJ_ARR ? outs->len : 0;
    if (n > (size_t)m->n_out) return BAD("\"outputs\" names %zu outputs, the model has %d", n, m->n_out);
    for (size_t i = 0; i < n; i++) {
        const srv_json *o = &outs->items[i];
        const srv_json *name = srv_json_get(o, "name");
        if (!name || name->type != SJ_STR) return BAD("an output has no \"name\" string");
        int idx = find_index(m->out, m->n_out, name->str);
        if (idx < 0) return BAD("model '%s' has no output '%.200s'", m->name, name->str);
        for (int k = 0; k < q->n_out; k++)
            if (q->out_index[k] == idx) return BAD("output '%s' asked for twice", m->out[idx].name);
        const srv_json *p = srv_json_get(o, "parameters");
        const srv_json *b = p ? srv_json_get(p, "binary_data") : NULL;
        if (b && b->type != SJ_BOOL) return BAD("output '%s': binary_data must be true or false", m->out[idx].name);
        q->out_index[q->n_out] = idx;
        q->out[q->n_out].binary = b ? b->b : all_binary;
        snprintf(q->out[q->n_out].name, sizeof q->out[q->n_out].name, "%s", m->out[idx].name);
        q->n_out++;
    }
    return 0;
}

static void respond(const srv_request *q, const char *id, srv_buf *out, size_t *header_len)
{
    const srv_model *m = q->model;
    srv_buf_add(out, "{\"model_name\":", 14);
    srv_buf_json_string(out, m->name);
    srv_buf_printf(out, ",\"model_version\":\"%lld\"", (long long)m->version);
    if (id) {
        srv_buf_add(out, ",\"id\":", 6);
        srv_buf_json_string(out, id);
    }
    srv_buf_add(out, ",\"outputs\":[", 12);
    bool any_binary = false;
    for (int i = 0; i < q->n_out; i++) {
        const srv_tensor *t = &q->out[i];
        srv_buf_add(out, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
        srv_buf_json_string(out, t->name);
        srv_buf_printf(out, ",\"datatype\":\"%s\",\"shape\":[", srv_dtype_name(t->dtype));
        for (int d = 0; d < t->rank; d++) srv_buf_printf(out, "%s%lld", d ? "," : "", (long long)t->dims[d]);
        if (t->binary) {
            srv_buf_printf(out, "],\"parameters\":{\"binary_data_size\":%zu}}", t->bytes);
            any_binary = true;
        } else {
            srv_buf_add(out, "],\"data\":[", 10);
            put_json_numbers(out, t);
            srv_buf_add(out, "]}", 2);
        }
    }
    srv_buf_add(out, "]}", 2);
    *header_len = 0;
    if (!any_binary) return;
    *header_len = out->len;
    for (int i = 0; i < q->n_out; i++)
        if (q->out[i].binary) srv_buf_add(out, q->out[i].data, q->out[i].bytes);
}

static void count_failure(srv_model *m)
{
    pthread_mutex_lock(&m->lock);
    m->c.requests++;
    m->c.failures++;
    pthread_mutex_unlock(&m->lock);
}

void srv_infer(srv_model *m, const srv_limits *lim, const char *body, size_t size, size_t header_len, srv_buf *out,
               int *http, const char **content_type, size_t *out_header_len)
{
    *content_type = "application/json";
    *out_header_len = 0;
    char err[512] = "";
    ctx c = {m, lim, err, sizeof err};
    srv_request *q = calloc(1, sizeof *q);
    srv_json *j = NULL;
    if (!q) {
        *http = 500;
        srv_error_body(out, "out of memory");
        return;
    }
    *http = 400;
    if (header_len > size) {
        snprintf(err, sizeof err, "Inference-Header-Content-Length %zu is larger than the body (%zu bytes)",
                 header_len, size);
        goto fail;
    }
    j = srv_json_parse(body, header_len, err, sizeof err);
    if (!j) goto fail;
    if (j->type != SJ_OBJ) {
        snprintf(err, sizeof err, "the request must be a JSON object");
        goto fail;
    }
    const srv_json *id = srv_json_get(j, "id");
    if (id && id->type != SJ_STR) {
        snprintf(err, sizeof err, "\"id\" must be a string");
        goto fail;
    }
    const srv_json *params = srv_json_get(j, "parameters");
    const srv_json *bo = params ? srv_json_get(params, "binary_data_output") : NULL;
    if (bo && bo->type != SJ_BOOL) {
        snprintf(err, sizeof err, "binary_data_output must be true or false");
        goto fail;
    }
    const srv_json *inputs = srv_json_get(j, "inputs");
    if (!inputs || inputs->type != SJ_ARR) {
        snprintf(err, sizeof err, "\"inputs\" must be an array of objects");
        goto fail;
    }
    q->n_in = m->n_in;
    q->batch = m->batchable ? 0 : 1;
    size_t bin_at = 0, bin_size = size - header_len;
    for (size_t i = 0; i < inputs->len; i++)
        if (parse_input(&c, q, &inputs->items[i], body + header_len, bin_size, &bin_at)) goto fail;
    for (int i = 0; i < m->n_in; i++)
        if (!q->in[i].data) {
            snprintf(err, sizeof err, "input '%s' is missing", m->in[i].name);
            goto fail;
        }
    if (bin_at != bin_size) {
        snprintf(err, sizeof err, "%zu bytes of binary data follow the header, the inputs take %zu", bin_size,
                 bin_at);
        goto fail;
    }
    if (parse_outputs(&c, q, srv_json_get(j, "outputs"), bo && bo->b)) goto fail;
    if (!q->batch) q->batch = 1;
    srv_model_infer(m, q);
    if (q->http != 200) {
        *http = q->http;
        srv_error_body(out, q->err);
        goto done;
    }
    respond(q, id ? id->str : NULL, out, out_header_len);
    if (out->failed) {
        *http = 500;
        srv_error_body(out, "out of memory for the response");
        *out_header_len = 0;
        goto done;
    }
    *http = 200;
    if (*out_header_len) *content_type = "application/octet-stream";
    goto done;
fail:
    count_failure(m);
    srv_error_body(out, err);
done:
    for (int i = 0; i < 64; i++) {
        free(q->in[i].data);
        free(q->out[i].data);
    }
    free(q);
    srv_json_free(j);
}
