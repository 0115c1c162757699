/* harness.c — cases for the fault, soak and cancel tests (harness.h). */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/npy.h"

double th_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool th_backend(const char *name, st_backend_kind *out)
{
    if (!strcmp(name, "cpu")) *out = ST_BACKEND_CPU;
    else if (!strcmp(name, "opencl")) *out = ST_BACKEND_OPENCL;
    else if (!strcmp(name, "cuda")) *out = ST_BACKEND_CUDA;
    else return false;
    return true;
}

/* A fixed sequence in [0, 1): images and activations alike are happy there. */
static void fill_random(th_tensor *t, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t n = t->bytes / st_dtype_size(t->dtype);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0;
        if (t->dtype == ST_F32) ((float *)t->data)[i] = (float)u;
        else if (t->dtype == ST_I64) ((int64_t *)t->data)[i] = (int64_t)(u * 4);
        else if (t->dtype == ST_I32) ((int32_t *)t->data)[i] = (int32_t)(u * 4);
        else ((unsigned char *)t->data)[i * st_dtype_size(t->dtype)] = (unsigned char)(u * 2);
    }
}

static bool model_inputs(th_case *c, st_value_info *info, int *n)
{
    st_model *m = NULL;
    if (st_model_load(c->model, &m) != ST_OK) {
        fprintf(stderr, "%s: %s\n", c->model, st_last_error());
        return false;
    }
    *n = st_model_input_count(m);
    if (*n > TH_MAX_IO) *n = TH_MAX_IO;
    for (int i = 0; i < *n; i++) {
        st_model_input_info(m, i, &info[i]);
        /* the names live in the model: keep copies */
        static char names[TH_MAX_IO][256];
        snprintf(names[i], sizeof names[i], "%s", info[i].name);
        info[i].name = names[i];
    }
    st_model_free(m);
    return true;
}

bool th_case_parse(th_case *c, const char *spec)
{
    memset(c, 0, sizeof *c);
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", spec);
    const char *npy[TH_MAX_IO];
    int n_npy = 0;
    struct {
        const char *name, *dims;
    } shapes[TH_MAX_IO];
    int n_shapes = 0;
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            fprintf(stderr, "case '%s': '%s' is not key=value\n", spec, kv);
            return false;
        }
        *eq = 0;
        const char *v = eq + 1;
        if (!strcmp(kv, "model")) snprintf(c->model, sizeof c->model, "%s", v);
        else if (!strcmp(kv, "ref")) snprintf(c->ref_dir, sizeof c->ref_dir, "%s", v);
        else if (!strcmp(kv, "name")) snprintf(c->label, sizeof c->label, "%s", v);
        else if (!strcmp(kv, "input") && n_npy < TH_MAX_IO) npy[n_npy++] = v;
        else if (!strcmp(kv, "shape") && n_shapes < TH_MAX_IO) {
            char *colon = strchr(eq + 1, ':');
            if (!colon) {
                fprintf(stderr, "case '%s': shape needs NAME:DIMS\n", spec);
                return false;
            }
            *colon = 0;
            shapes[n_shapes].name = v;
            shapes[n_shapes++].dims = colon + 1;
        } else {
            fprintf(stderr, "case '%s': unknown key '%s'\n", spec, kv);
            return false;
        }
    }
    if (!c->model[0]) {
        fprintf(stderr, "case '%s': no model=\n", spec);
        return false;
    }
    if (!c->label[0]) {
        const char *base = strrchr(c->model, '/');
        snprintf(c->label, sizeof c->label, "%s", base ? base + 1 : c->model);
        char *dot = strrchr(c->label, '.');
        if (dot) *dot = 0;
    }
    st_value_info info[TH_MAX_IO];
    int n = 0;
    if (!model_inputs(c, info, &n)) return false;
    c->n_in = n;
    for (int i = 0; i < n; i++) {
        th_tensor *t = &c->in[i];
        snprintf(t->name, sizeof t->name, "%s", info[i].name);
        t->dtype = info[i].dtype;
        if (i < n_npy) {
            st_npy f;
            if (st_npy_read(npy[i], &f) != ST_OK) {
                fprintf(stderr, "%s\n", st_last_error());
                return false;
            }
            t->rank = f.rank;
            memcpy(t->dims, f.dims, sizeof t->dims);
            t->dtype = f.dtype;
            t->data = f.data;
            t->bytes = f.bytes;
            continue;
        }
        const char *dims = NULL;
        for (int k = 0; k < n_shapes; k++)
            if (!strcmp(shapes[k].name, t->name)) dims = shapes[k].dims;
        t->rank = info[i].rank;
        if (dims) {
            t->rank = 0;
            for (const char *p = dims; *p && t->rank < ST_MAX_RANK;) {
                t->dims[t->rank++] = strtoll(p, (char **)&p, 10);
                if (*p == 'x') p++;
            }
        } else {
            for (int d = 0; d < t->rank; d++) t->dims[d] = info[i].dims[d];
        }
        uint64_t numel = 1;
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d] < 0) {
                fprintf(stderr, "case %s: input '%s' has a symbolic dim; give shape=%s:DIMS\n", c->label, t->name, t->name);
                return false;
            }
            numel *= (uint64_t)t->dims[d];
        }
        t->bytes = numel * st_dtype_size(t->dtype);
        t->data = malloc(t->bytes + 1);
        if (!t->data) return false;
        fill_random(t, (uint64_t)i + 1);
    }
    return true;
}

void th_case_free(th_case *c)
{
    for (int i = 0; i < c->n_in; i++) free(c->in[i].data);
    for (int i = 0; i < c->n_out; i++) free(c->want[i].data);
    memset(c, 0, sizeof *c);
}

st_status th_bind(st_session *s, const th_case *c)
{
    for (int i = 0; i < c->n_in; i++) {
        const th_tensor *t = &c->in[i];
        st_status r = st_session_set_input_checked(s, t->name, t->dtype, t->rank, t->dims, t->data, t->bytes);
        if (r != ST_OK) return r;
    }
    return ST_OK;
}

bool th_outputs_alloc(const th_case *c, th_outputs *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < c->n_out; i++)
        if (!(o->data[i] = malloc(c->want[i].bytes + 1))) return false;
    return true;
}

void th_outputs_free(const th_case *c, th_outputs *o)
{
    for (int i = 0; i < c->n_out; i++) free(o->data[i]);
    memset(o, 0, sizeof *o);
}

st_status th_read(st_session *s, const th_case *c, th_outputs *o)
{
    for (int i = 0; i < c->n_out; i++) {
        const th_tensor *w = &c->want[i];
        st_tensor *t = NULL;
        st_status r = st_session_output(s, w->name, &t);
        if (r != ST_OK) return r;
        bool same = st_tensor_rank(t) == w->rank;
        for (int d = 0; same && d < w->rank; d++) same = st_tensor_dim(t, d) == w->dims[d];
        r = same ? st_tensor_read(t, w->dtype, o->data[i], w->bytes) : ST_ERR_SHAPE;
        st_tensor_free(t);
        if (r != ST_OK) return r;
    }
    return ST_OK;
}

int th_compare(const th_case *c, const th_outputs *o)
{
    for (int i = 0; i < c->n_out; i++)
        if (memcmp(o->data[i], c->want[i].data, c->want[i].bytes) != 0) return i;
    return -1;
}

/* The clean run against the fixture's reference: every element within
 * 1e-4 of the output's largest magnitude (what the PP-OCR tests ask of
 * f32), so a wrong "expected" output cannot slip in. */
static bool check_ref(const th_case *c, const th_tensor *w)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s.npy", c->ref_dir, w->name);
    st_npy ref;
    if (st_npy_read(path, &ref) != ST_OK) {
        fprintf(stderr, "case %s: %s\n", c->label, st_last_error());
        return false;
    }
    bool ok = ref.bytes == w->bytes && ref.dtype == w->dtype;
    if (ok && w->dtype == ST_F32) {
        const float *g = w->data, *r = ref.data;
        size_t n = w->bytes / 4;
        double big = 0, worst = 0;
        for (size_t i = 0; i < n; i++) big = fmax(big, fabs(r[i]));
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)g[i] - (double)r[i]);
            if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
        }
        ok = worst <= 1e-4 * big + 1e-6;
        printf("case %s: output '%s' against %s: max error %.3g (max |ref| %.3g)%s\n", c->label, w->name, c->ref_dir, worst,
               big, ok ? "" : "  FAIL");
    } else if (ok) {
        ok = memcmp(ref.data, w->data, w->bytes) == 0;
    }
    if (!ok) fprintf(stderr, "case %s: output '%s' does not match %s\n", c->label, w->name, path);
    st_npy_free(&ref);
    return ok;
}

bool th_case_reference(th_case *c, st_backend_kind backend)
{
    st_model *m = NULL;
    st_session *s = NULL;
    st_session_options o;
    st_session_options_init(&o);
    o.backend = backend;
    o.threads = 1;
    bool ok = st_model_load(c->model, &m) == ST_OK && st_session_create(m, &o, &s) == ST_OK && th_bind(s, c) == ST_OK &&
              st_session_run(s) == ST_OK && st_session_wait(s) == ST_OK;
    if (!ok) fprintf(stderr, "case %s: the clean run failed: %s\n", c->label, st_last_error());
    int n = ok ? st_model_output_count(m) : 0;
    if (n > TH_MAX_IO) n = TH_MAX_IO;
    for (int i = 0; ok && i < n; i++) {
        st_value_info info;
        st_tensor *t = NULL;
        th_tensor *w = &c->want[i];
        ok = st_model_output_info(m, i, &info) == ST_OK && st_session_output(s, info.name, &t) == ST_OK;
        if (ok) {
            snprintf(w->name, sizeof w->name, "%s", info.name);
            w->dtype = st_tensor_dtype(t);
            w->rank = st_tensor_rank(t);
            for (int d = 0; d < w->rank; d++) w->dims[d] = st_tensor_dim(t, d);
            w->bytes = (size_t)st_tensor_numel(t) * st_dtype_size(w->dtype);
            w->data = malloc(w->bytes + 1);
            ok = w->data && st_tensor_read(t, w->dtype, w->data, w->bytes) == ST_OK;
            c->n_out = i + 1;
        }
        if (!ok) fprintf(stderr, "case %s: reading output %d: %s\n", c->label, i, st_last_error());
        st_tensor_free(t);
    }
    st_session_free(s);
    st_model_free(m);
    for (int i = 0; ok && c->ref_dir[0] && i < c->n_out; i++) ok = check_ref(c, &c->want[i]);
    return ok;
}
