/*
 * kernel_sweep.c — every kernel-table entry of every backend, run on
 * random cases that its accepts() admits, against the CPU's kernel and a
 * float64 reference (issue 25, in the spirit of ggml's test-backend-ops).
 *
 * For each backend of the registry (backends/registry.c, enumerated
 * through st_backend_count/st_backend_name) that has a device, each op
 * its kernel table names, and
 * each dtype its entries take (ops/kernel.h), a generator
 * (sweep_cases.c) draws shapes, broadcasts and attributes; this driver
 * draws how the operands reach the node (a packed graph input, or a Slice
 * with an offset and a step and a Transpose of a bigger input, which view
 * lowering turns into a strided view with an offset) and whether the
 * output is written into a view of a Concat (concat placement), makes a
 * one-node ONNX model in memory, and runs it strictly on the backend
 * (no CPU fallback, sanitizer on: fresh memory is poisoned).  A case the
 * planner refuses (an accepts() that does not admit it) is redrawn packed,
 * then dropped and counted as refused: only admitted cases count.
 * Outputs are compared with the CPU backend's (device backends) and with
 * the generator's float64 reference, every element, within tolerances
 * stated below per dtype.  A generator may compare another output than
 * the first (TopK's indices), and may have uint64 operands drawn across
 * 2^63, where an order computed as signed goes wrong.
 *
 *   kernel_sweep [--backend NAME]... [--cases N] [--seed S] [--full]
 *                [--op NAME] [--known FILE] [-v]
 *
 * --cases: cases per (op, dtype) (default 2; --full: 12, or
 * STRATA_SWEEP_FULL=1).  Exit status: 0 when every case passed (or failed
 * as listed in --known), 1 on a failure or a stale known failure, 77 when
 * none of the asked backends has a device (CTest's SKIP_RETURN_CODE).
 *
 * Known failures (--known): lines "backend op dtype  # why".  A failing
 * case whose (backend, op, dtype) is listed is counted as known, not as a
 * failure; a listed triple that ran on its backend in this run and did
 * not fail is stale, and fails the run, so the list cannot outlive the bug.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "ops/kernel.h"
#include "sweep.h"

typedef struct sweep_opts {
    int cases;
    uint64_t seed;
    const char *only_op;
    int verbose;
} sweep_opts;

/* ---- dtype encoding ------------------------------------------------- */

static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xff, m = x & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    int ne = (int)e - 127 + 15;
    if (ne >= 31) return (uint16_t)(sign | 0x7c00u);
    if (ne <= 0) {
        if (ne < -10) return (uint16_t)sign;
        m |= 0x800000u;
        int shift = 14 - ne;
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)ne << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static double bf16_to_double(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void encode(st_dtype t, double v, void *dst)
{
    switch (t) {
    case ST_F32: { float f = (float)v; memcpy(dst, &f, 4); break; }
    case ST_F64: memcpy(dst, &v, 8); break;
    case ST_F16: { uint16_t h = f32_to_f16((float)v); memcpy(dst, &h, 2); break; }
    case ST_BF16: { uint16_t h = f32_to_bf16((float)v); memcpy(dst, &h, 2); break; }
    case ST_I8: *(int8_t *)dst = (int8_t)v; break;
    case ST_U8: *(uint8_t *)dst = (uint8_t)v; break;
    case ST_I16: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
    case ST_U16: { uint16_t x = (uint16_t)v; memcpy(dst, &x, 2); break; }
    case ST_I32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    case ST_U32: { uint32_t x = (uint32_t)v; memcpy(dst, &x, 4); break; }
    case ST_I64: { int64_t x = (int64_t)v; memcpy(dst, &x, 8); break; }
    case ST_U64: { uint64_t x = (uint64_t)v; memcpy(dst, &x, 8); break; }
    case ST_BOOL: *(uint8_t *)dst = v != 0; break;
    default: break;
    }
}

static double decode(st_dtype t, const void *src)
{
    switch (t) {
    case ST_F32: { float f; memcpy(&f, src, 4); return f; }
    case ST_F64: { double d; memcpy(&d, src, 8); return d; }
    case ST_F16: { uint16_t h; memcpy(&h, src, 2); return f16_to_double(h); }
    case ST_BF16: { uint16_t h; memcpy(&h, src, 2); return bf16_to_double(h); }
    case ST_I8: return *(const int8_t *)src;
    case ST_U8: return *(const uint8_t *)src;
    case ST_I16: { int16_t x; memcpy(&x, src, 2); return x; }
    case ST_U16: { uint16_t x; memcpy(&x, src, 2); return x; }
    case ST_I32: { int32_t x; memcpy(&x, src, 4); return x; }
    case ST_U32: { uint32_t x; memcpy(&x, src, 4); return x; }
    case ST_I64: { int64_t x; memcpy(&x, src, 8); return (double)x; }
    case ST_U64: { uint64_t x; memcpy(&x, src, 8); return (double)x; }
    case ST_BOOL: return *(const uint8_t *)src != 0;
    default: return NAN;
    }
}

static bool is_float(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F64; }

/* the reference backend, found in the registry by name */
static st_backend_kind cpu_kind;

/* An integer reference as the dtype holds it: two's-complement wrap. */
static double wrap(st_dtype t, double v)
{
    if (is_float(t) || t == ST_BOOL || isnan(v)) return v;
    v = trunc(v);   /* a float result stored in an integer dtype */
    int bits = (int)st_dtype_size(t) * 8;
    if (bits >= 64) return v;
    double m = ldexp(1, bits), x = fmod(v, m);
    if (x < 0) x += m;
    bool sgn = t == ST_I8 || t == ST_I16 || t == ST_I32;
    if (sgn && x >= m / 2) x -= m;
    return x;
}

/* ---- one case as a model -------------------------------------------- */

/* How operand i reaches the node: graph input x<i> of dims xd, sliced on
 * axis sa from lo with step (sa < 0: no Slice), then transposed by perm
 * (identity: no Transpose).  src_off/src_stride map the operand's logical
 * index to x<i>'s packed elements. */
typedef struct kc_layout {
    int rank;
    int64_t xd[KC_MAX_RANK];
    int sa;
    int64_t lo, step;
    int64_t perm[KC_MAX_RANK];
    bool transposed;
    int64_t src_off, src_stride[KC_MAX_RANK];
} kc_layout;

static void plain_layout(const kc_in *in, kc_layout *l)
{
    memset(l, 0, sizeof *l);
    l->rank = in->rank;
    l->sa = -1;
    int64_t s = 1;
    for (int d = in->rank - 1; d >= 0; d--) {
        l->xd[d] = in->dims[d];
        l->perm[d] = d;
        l->src_stride[d] = s;
        s *= in->dims[d];
    }
}

/* steps: whether the Slice may step (Slice has steps from opset 10; an
 * older model's Slice takes every element of its range) */
static void draw_layout(kc_rng *r, const kc_in *in, kc_layout *l, bool steps)
{
    plain_layout(in, l);
    int rank = in->rank;
    if (rank < 1 || in->constant || kc_int(r, 0, 9) < 4) return;
    /* T = transpose input: T[perm[k]] = S[k] */
    int64_t t[KC_MAX_RANK];
    if (rank > 1 && kc_int(r, 0, 1)) {
        for (int d = rank - 1; d > 0; d--) {
            int j = kc_int(r, 0, d);
            int64_t x = l->perm[d];
            l->perm[d] = l->perm[j];
            l->perm[j] = x;
        }
        for (int d = 0; d < rank; d++) l->transposed |= l->perm[d] != d;
    }
    for (int k = 0; k < rank; k++) t[l->perm[k]] = in->dims[k];
    memcpy(l->xd, t, sizeof t);
    if (!l->transposed || kc_int(r, 0, 1)) {
        l->sa = kc_int(r, 0, rank - 1);
        l->lo = kc_int(r, 0, 3);
        l->step = kc_int(r, 1, 2);
        if (!steps) l->step = 1;
        l->xd[l->sa] = l->lo + l->step * (t[l->sa] - 1) + 1 + kc_int(r, 0, 2);
    }
    int64_t xs[KC_MAX_RANK], s = 1;
    for (int d = rank - 1; d >= 0; d--) xs[d] = s, s *= l->xd[d];
    l->src_off = l->sa >= 0 ? l->lo * xs[l->sa] : 0;
    for (int k = 0; k < rank; k++) {
        int a = (int)l->perm[k];
        l->src_stride[k] = xs[a] * (a == l->sa ? l->step : 1);
    }
}

typedef struct kc_data {
    int n;                          /* graph inputs */
    char names[KC_MAX_IN + 1][16];
    st_dtype dt[KC_MAX_IN + 1];
    int rank[KC_MAX_IN + 1];
    int64_t dims[KC_MAX_IN + 1][KC_MAX_RANK];
    void *bytes[KC_MAX_IN + 1];
    size_t nbytes[KC_MAX_IN + 1];
    double *logical[KC_MAX_IN];     /* the node's operands as the reference sees them */
    /* output: Concat of y and z on axis cat_axis (cat_axis < 0: none) */
    int cat_axis;
    int64_t cat_dims[KC_MAX_RANK];
} kc_data;

static void data_free(kc_data *d)
{
    for (int i = 0; i < KC_MAX_IN + 1; i++) free(d->bytes[i]);
    for (int i = 0; i < KC_MAX_IN; i++) free(d->logical[i]);
    memset(d, 0, sizeof *d);
}

static double draw_value(kc_rng *r, const kc_in *in)
{
    if (in->dt == ST_BOOL) return kc_int(r, 0, 1);
    /* uint64 on both sides of 2^63, where a signed compare goes wrong
     * (multiples of 2^12 there: exact in a double) */
    if (in->wide && in->dt == ST_U64 && kc_int(r, 0, 1)) return ldexp(1, 63) + 4096.0 * kc_int(r, -4, 4);
    if (in->specials && kc_int(r, 0, 4) == 0) {
        int k = kc_int(r, 0, 2);
        return k == 0 ? NAN : k == 1 ? INFINITY : -INFINITY;
    }
    double v = kc_unif(r, in->lo, in->hi);
    if (in->integral || !is_float(in->dt)) v = floor(v + 0.5);
    if (in->nonzero && fabs(v) < (in->integral || !is_float(in->dt) ? 1 : 0.1)) v = v < 0 ? -1 : 1;
    if (in->nonzero && !in->integral && is_float(in->dt) && fabs(v) < 0.1) v = 0.1;
    return v;
}

static void add_input(kc_data *d, pb_buf *g, const char *name, st_dtype dt, int rank, const int64_t *dims, void *bytes,
                      size_t n)
{
    int i = d->n++;
    snprintf(d->names[i], sizeof d->names[i], "%s", name);
    d->dt[i] = dt;
    d->rank[i] = rank;
    memcpy(d->dims[i], dims, sizeof(int64_t) * (size_t)(rank > 0 ? rank : 0));
    d->bytes[i] = bytes;
    d->nbytes[i] = n;
    pb_value_info(g, 11, name, dt, rank, dims);
}

/* Builds the model of case c with layouts l (and the output in a Concat's
 * view when cat_axis >= 0): the graph inputs' data, the operands' values. */
static void build(kc_rng *r, const kc_case *c, const kc_layout *l, kc_data *d, pb_buf *model)
{
    pb_buf g = {0}, node = {0};
    char name[32];
    for (int i = 0; i < c->n_in; i++) {
        const kc_in *in = &c->in[i];
        if (in->rank < 0) {
            pb_string(&node, 1, "");
            continue;
        }
        int64_t n = kc_numel(in->rank, in->dims), xn = kc_numel(l[i].rank, l[i].xd);
        size_t es = st_dtype_size(in->dt);
        uint8_t *bytes = malloc(es * (size_t)(in->constant ? n : xn) + 1);
        double *x = malloc(sizeof *x * (size_t)(xn + 1));
        for (int64_t k = 0; k < (in->constant ? n : xn); k++) {
            double v = in->constant ? in->values[k] : draw_value(r, in);
            encode(in->dt, v, bytes + k * (int64_t)es);
            x[k] = decode(in->dt, bytes + k * (int64_t)es);
        }
        double *op = malloc(sizeof *op * (size_t)(n + 1));
        for (int64_t f = 0; f < n; f++) {
            int64_t rem = f, src = l[i].src_off;
            for (int k = in->rank - 1; k >= 0; k--) {
                src += (rem % in->dims[k]) * l[i].src_stride[k];
                rem /= in->dims[k];
            }
            op[f] = x[in->constant ? f : src];
        }
        free(x);
        d->logical[i] = op;
        snprintf(name, sizeof name, "x%d", i);
        if (in->constant) {
            pb_initializer(&g, name, in->dt, in->rank, in->dims, bytes, es * (size_t)n);
            free(bytes);
            pb_string(&node, 1, name);
            continue;
        }
        add_input(d, &g, name, in->dt, l[i].rank, l[i].xd, bytes, es * (size_t)xn);
        char cur[32];
        snprintf(cur, sizeof cur, "%s", name);
        if (l[i].sa >= 0) {
            int64_t one = 1, v[4] = {l[i].lo, 0, l[i].sa, l[i].step};
            /* ends: one past the last element taken on the sliced axis */
            int64_t t_len = 0;
            for (int k = 0; k < in->rank; k++)
                if (l[i].perm[k] == l[i].sa) t_len = in->dims[k];
            v[1] = l[i].lo + l[i].step * (t_len - 1) + 1;
            const char *pn[4] = {"starts", "ends", "axes", "steps"};
            pb_buf sl = {0};
            pb_string(&sl, 1, cur);
            if (c->opset && c->opset < 10) {
                /* Slice-1: starts, ends and axes are attributes (draw_layout gave step 1) */
                for (int k = 0; k < 3; k++) pb_attr_ints(&sl, pn[k], &v[k], 1);
            } else {
                for (int k = 0; k < 4; k++) {
                    char cn[32];
                    snprintf(cn, sizeof cn, "x%d_%s", i, pn[k]);
                    pb_initializer(&g, cn, ST_I64, 1, &one, &v[k], 8);
                    pb_string(&sl, 1, cn);
                }
            }
            snprintf(cur, sizeof cur, "x%d_sliced", i);
            pb_string(&sl, 2, cur);
            snprintf(name, sizeof name, "slice%d", i);
            pb_string(&sl, 3, name);
            pb_string(&sl, 4, "Slice");
            pb_message(&g, 1, &sl);
        }
        if (l[i].transposed) {
            pb_buf tr = {0};
            pb_string(&tr, 1, cur);
            snprintf(cur, sizeof cur, "x%d_t", i);
            pb_string(&tr, 2, cur);
            snprintf(name, sizeof name, "transpose%d", i);
            pb_string(&tr, 3, name);
            pb_string(&tr, 4, "Transpose");
            pb_attr_ints(&tr, "perm", l[i].perm, in->rank);
            pb_message(&g, 1, &tr);
        }
        pb_string(&node, 1, cur);
    }
    for (int k = 0; k < (c->n_out > 1 ? c->n_out : 1); k++) {
        snprintf(name, sizeof name, "unused%d", k);
        pb_string(&node, 2, k != c->out_pick ? name : d->cat_axis >= 0 ? "y" : "out");
    }
    pb_string(&node, 3, "T");
    pb_string(&node, 4, c->op);
    if (c->domain && *c->domain) pb_string(&node, 7, c->domain);
    pb_append(&node, &c->attrs);   /* whole AttributeProto fields already */
    pb_message(&g, 1, &node);
    if (d->cat_axis >= 0) {
        int64_t zd[KC_MAX_RANK];
        memcpy(zd, c->out_dims, sizeof zd);
        zd[d->cat_axis] = d->cat_dims[d->cat_axis] - c->out_dims[d->cat_axis];
        int64_t zn = kc_numel(c->out_rank, zd);
        size_t es = st_dtype_size(c->out_dt);
        uint8_t *bytes = malloc(es * (size_t)zn + 1);
        for (int64_t k = 0; k < zn; k++) encode(c->out_dt, c->out_dt == ST_BOOL ? kc_int(r, 0, 1) : kc_int(r, 0, 9), bytes + k * (int64_t)es);
        add_input(d, &g, "z", c->out_dt, c->out_rank, zd, bytes, es * (size_t)zn);
        pb_buf cat = {0};
        pb_string(&cat, 1, "y");
        pb_string(&cat, 1, "z");
        pb_string(&cat, 2, "out");
        pb_string(&cat, 3, "cat");
        pb_string(&cat, 4, "Concat");
        pb_attr_int(&cat, "axis", d->cat_axis);
        pb_message(&g, 1, &cat);
    }
    pb_value_info(&g, 12, "out", c->out_dt, -1, NULL);
    pb_model(model, &g, c->opset ? c->opset : 17);
}

/* ---- running and comparing ------------------------------------------ */

enum { RUN_OK, RUN_REFUSED, RUN_REFUSED_HELPER, RUN_FAILED };

/* Runs the model on kind; out gets output "out" as doubles. */
static int run_model(const pb_buf *model, const kc_data *d, st_backend_kind kind, double **out, int64_t *n_out,
                     st_dtype *out_dt, char *msg, size_t len)
{
    st_model *m = NULL;
    st_session *s = NULL;
    st_tensor *t = NULL;
    void *buf = NULL;
    int rc = RUN_FAILED;
    st_status st = st_model_load_memory(model->p, model->n, NULL, &m);
    if (st == ST_OK) {
        st_session_options o;
        st_session_options_init(&o);
        o.backend = kind;
        o.no_fallback = kind != cpu_kind;
        o.sanitize = 1;
        o.threads = 2;
        st = st_session_create(m, &o, &s);
    }
    for (int i = 0; st == ST_OK && i < d->n; i++)
        st = st_session_set_input_checked(s, d->names[i], d->dt[i], d->rank[i], d->dims[i], d->bytes[i], d->nbytes[i]);
    if (st == ST_OK) st = st_session_run(s);
    if (st == ST_OK) st = st_session_output(s, "out", &t);
    if (st == ST_OK) {
        *out_dt = st_tensor_dtype(t);
        *n_out = st_tensor_numel(t);
        size_t es = st_dtype_size(*out_dt);
        buf = malloc(es * (size_t)*n_out + 1);
        st = st_tensor_read(t, *out_dt, buf, es * (size_t)*n_out);
        if (st == ST_OK) {
            *out = malloc(sizeof **out * (size_t)(*n_out + 1));
            for (int64_t i = 0; i < *n_out; i++) (*out)[i] = decode(*out_dt, (const uint8_t *)buf + i * (int64_t)es);
            rc = RUN_OK;
        }
    }
    if (st != ST_OK) {
        const char *e = st_last_error();
        snprintf(msg, len, "%s: %s", st_status_name(st), e);
        /* a strict plan's refusal names the node (plan/place.c) */
        if (st == ST_ERR_UNSUPPORTED) rc = strstr(e, "node 'T'") ? RUN_REFUSED : RUN_REFUSED_HELPER;
    }
    free(buf);
    if (t) st_tensor_free(t);
    if (s) st_session_free(s);
    if (m) st_model_free(m);
    return rc;
}

/* Tolerances.  Device vs CPU: fp32 1e-5 absolute + 1e-5 relative (times
 * the generator's cpu_scale for long sums), 16-bit floats 4e-3 / 8e-3
 * (bf16 3e-2), f64 1e-12, integers and bools exact.  Against the float64
 * reference: the generator's fp32 tolerance, at least 2e-3 for f16 and
 * 2e-2 for bf16 (each rounding of an intermediate costs 2^-11 / 2^-8),
 * 1e-9 for f64. */
static void tol_cpu(const kc_case *c, double *atol, double *rtol)
{
    double sc = c->cpu_scale > 1 ? c->cpu_scale : 1;
    switch (c->out_dt) {
    case ST_F32: *atol = 1e-5 * sc, *rtol = 1e-5 * sc; break;
    case ST_F16: *atol = 4e-3 * sc, *rtol = 8e-3; break;
    case ST_BF16: *atol = 3e-2 * sc, *rtol = 3e-2; break;
    case ST_F64: *atol = 1e-12 * sc, *rtol = 1e-12 * sc; break;
    default: *atol = *rtol = 0; break;
    }
}

static void tol_ref(const kc_case *c, double *atol, double *rtol)
{
    st_dtype t = c->out_dt;
    /* a computation in 16-bit floats (inputs of Cast excepted) */
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i].rank >= 0 && (c->in[i].dt == ST_F16 || c->in[i].dt == ST_BF16) && strcmp(c->op, "Cast") &&
            strcmp(c->op, "CastLike"))
            t = c->in[i].dt == ST_BF16 ? ST_BF16 : (t == ST_BF16 ? t : ST_F16);
    *atol = c->ref_atol, *rtol = c->ref_rtol;
    if (t == ST_F16) *atol = fmax(*atol * 100, 2e-3), *rtol = fmax(*rtol, 2e-3);
    if (t == ST_BF16) *atol = fmax(*atol * 1000, 2e-2), *rtol = fmax(*rtol, 2e-2);
    if (t == ST_F64) *atol = 1e-9, *rtol = 1e-9;
    if (!is_float(c->out_dt)) *atol = *rtol = 0;
}

static bool close_enough(double got, double want, double atol, double rtol)
{
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* The index in the Concat's output of element f of y. */
static int64_t cat_index(const kc_case *c, const kc_data *d, int64_t f)
{
    if (d->cat_axis < 0) return f;
    int64_t rem = f, o = 0, stride = 1;
    for (int k = c->out_rank - 1; k >= 0; k--) {
        o += (rem % c->out_dims[k]) * stride;
        rem /= c->out_dims[k];
        stride *= d->cat_dims[k];
    }
    return o;
}

/* ---- the sweep -------------------------------------------------------- */

typedef struct known_row {
    char backend[16], op[48], dtype[16];
    int ran, failed;
} known_row;

typedef struct sweep_stats {
    int entries, covered, ops, cases, refused, failures, known;
} sweep_stats;

static known_row *known_find(known_row *k, int n, const char *be, const char *op, const char *dt)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(k[i].backend, be) && !strcmp(k[i].op, op) && !strcmp(k[i].dtype, dt)) return &k[i];
    return NULL;
}

static void describe(const kc_case *c, const kc_layout *l, const kc_data *d, char *s, size_t len)
{
    size_t at = 0;
    for (int i = 0; i < c->n_in && at < len; i++) {
        const kc_in *in = &c->in[i];
        if (in->rank < 0) {
            at += (size_t)snprintf(s + at, len - at, "in%d absent; ", i);
            continue;
        }
        at += (size_t)snprintf(s + at, len - at, "in%d %s[", i, st_dtype_name(in->dt));
        for (int k = 0; k < in->rank && at < len; k++) at += (size_t)snprintf(s + at, len - at, "%s%lld", k ? "," : "", (long long)in->dims[k]);
        if (at < len) at += (size_t)snprintf(s + at, len - at, "]%s", in->constant ? " const" : "");
        if (l[i].sa >= 0 && at < len)
            at += (size_t)snprintf(s + at, len - at, " slice(axis %d from %lld step %lld)", l[i].sa, (long long)l[i].lo, (long long)l[i].step);
        if (l[i].transposed && at < len) at += (size_t)snprintf(s + at, len - at, " transposed");
        if (at < len) at += (size_t)snprintf(s + at, len - at, "; ");
    }
    if (at < len && d->cat_axis >= 0) at += (size_t)snprintf(s + at, len - at, "out in Concat view (axis %d); ", d->cat_axis);
    if (at < len && c->note[0]) snprintf(s + at, len - at, "%s", c->note);
}

/* One admitted case of op on backend kind: 0 pass, 1 fail, -1 refused. */
static int run_case(kc_rng *r, const st_kernel_table *t, st_backend_kind kind, kc_case *c, const sweep_opts *o,
                    char *why, size_t len)
{
    kc_layout l[KC_MAX_IN];
    for (int attempt = 0; attempt < 2; attempt++) {
        kc_data d;
        memset(&d, 0, sizeof d);
        d.cat_axis = -1;
        for (int i = 0; i < c->n_in; i++) {
            if (attempt == 0) draw_layout(r, &c->in[i], &l[i], !c->opset || c->opset >= 10);
            else plain_layout(&c->in[i], &l[i]);
        }
        if (attempt == 0 && c->out_rank > 0 && c->n_out == 1 && kc_int(r, 0, 3) == 0) {
            d.cat_axis = kc_int(r, 0, c->out_rank - 1);
            memcpy(d.cat_dims, c->out_dims, sizeof d.cat_dims);
            d.cat_dims[d.cat_axis] += kc_int(r, 1, 3);
        }
        pb_buf model = {0};
        build(r, c, l, &d, &model);

        char desc[512], msg[512];
        describe(c, l, &d, desc, sizeof desc);
        double *dev = NULL, *cpu = NULL;
        int64_t n_dev = 0, n_cpu = 0;
        st_dtype dt_dev = ST_UNDEFINED, dt_cpu = ST_UNDEFINED;
        int rc = run_model(&model, &d, kind, &dev, &n_dev, &dt_dev, msg, sizeof msg);
        int verdict = 0;
        if (rc == RUN_REFUSED || rc == RUN_REFUSED_HELPER) {
            if (o->verbose > 1) printf("  refused (%s): %s\n", desc, msg);
            pb_free(&model);
            data_free(&d);
            if (attempt == 0) continue;
            return -1;
        }
        if (rc == RUN_FAILED) {
            snprintf(why, len, "%s: %s", desc, msg);
            verdict = 1;
        }
        if (!verdict && dt_dev != c->out_dt) {
            snprintf(why, len, "%s: output dtype %s, expected %s", desc, st_dtype_name(dt_dev), st_dtype_name(c->out_dt));
            verdict = 1;
        }
        int64_t n_want = kc_numel(c->out_rank, d.cat_axis >= 0 ? d.cat_dims : c->out_dims);
        if (!verdict && n_dev != n_want) {
            snprintf(why, len, "%s: %lld output elements, expected %lld", desc, (long long)n_dev, (long long)n_want);
            verdict = 1;
        }
        if (!verdict && kind != cpu_kind) {
            if (run_model(&model, &d, cpu_kind, &cpu, &n_cpu, &dt_cpu, msg, sizeof msg) != RUN_OK) {
                snprintf(why, len, "%s: the CPU run failed: %s", desc, msg);
                verdict = 1;
            } else {
                double atol, rtol;
                tol_cpu(c, &atol, &rtol);
                for (int64_t i = 0; i < n_dev && !verdict; i++)
                    if (!close_enough(dev[i], cpu[i], atol, rtol)) {
                        snprintf(why, len, "%s: element %lld: %.9g, the CPU's %.9g (tolerance %g + %g |cpu|)", desc, (long long)i,
                                 dev[i], cpu[i], atol, rtol);
                        verdict = 1;
                    }
            }
        }
        if (!verdict && c->ref) {
            int64_t n = kc_numel(c->out_rank, c->out_dims);
            double *ref = malloc(sizeof *ref * (size_t)(n + 1));
            c->ref(c, (const double *const *)d.logical, ref);
            double atol, rtol;
            tol_ref(c, &atol, &rtol);
            for (int64_t i = 0; i < n && !verdict; i++) {
                double want = wrap(c->out_dt, ref[i]);
                if (c->out_dt == ST_BOOL && !isnan(want)) want = want != 0;
                if (c->out_dt != ST_F64 && !isnan(want)) {
                    /* the reference as the output dtype holds it (an
                     * overflow is infinite there, an integer truncated) */
                    uint8_t tmp[8];
                    if (is_float(c->out_dt) && fabs(want) > 3.4028234663852886e38) want = want > 0 ? INFINITY : -INFINITY;
                    encode(c->out_dt, want, tmp);
                    want = decode(c->out_dt, tmp);
                }
                double got = dev[cat_index(c, &d, i)];
                if (!close_enough(got, want, atol, rtol)) {
                    snprintf(why, len, "%s: element %lld: %.9g, float64 reference %.9g (tolerance %g + %g |ref|)", desc,
                             (long long)i, got, want, atol, rtol);
                    verdict = 1;
                }
            }
            free(ref);
        }
        if (o->verbose > 1) printf("  %s (%s)\n", verdict ? "FAIL" : "ok", desc);
        /* STRATA_SWEEP_DUMP=DIR: a failing case's model and inputs there
         * (model.onnx, <input>.bin raw), to replay it; the last one stays */
        const char *dump = getenv("STRATA_SWEEP_DUMP");
        if (verdict && dump && *dump) {
            char path[1024];
            snprintf(path, sizeof path, "%s/model.onnx", dump);
            FILE *df = fopen(path, "wb");
            if (df) fwrite(model.p, 1, model.n, df), fclose(df);
            for (int i = 0; i < d.n; i++) {
                snprintf(path, sizeof path, "%s/%s.bin", dump, d.names[i]);
                df = fopen(path, "wb");
                if (df) fwrite(d.bytes[i], 1, d.nbytes[i], df), fclose(df);
            }
        }
        free(dev);
        free(cpu);
        pb_free(&model);
        data_free(&d);
        (void)t;
        return verdict;
    }
    return -1;
}

static int dtype_list(uint32_t mask, st_dtype *out)
{
    int n = 0;
    for (int t = 1; t < 32; t++)
        if ((mask & (1u << t)) && t != ST_STRING) out[n++] = (st_dtype)t;
    return n;
}

static void sweep_backend(const st_kernel_table *t, st_backend_kind kind, const sweep_opts *o, known_row *known,
                          int n_known, sweep_stats *s)
{
    int n = st_kernel_count(t);
    s->entries = n;
    for (int i = 0; i < n; i++) {
        const st_kernel *k = st_kernel_at(t, i);
        const char *dom = k->domain ? k->domain : "";
        if (kc_generator(dom, k->op)) s->covered++;
        /* each op once, at its first entry: the planner picks among an
         * op's entries (the first that accepts), so a case reaches
         * whichever of them admits it */
        bool first = true;
        for (int j = 0; j < i; j++) {
            const st_kernel *e = st_kernel_at(t, j);
            if (!strcmp(e->op, k->op) && !strcmp(e->domain ? e->domain : "", dom)) first = false;
        }
        if (!first) continue;
        if (o->only_op && strcmp(o->only_op, k->op)) continue;
        kc_gen_fn gen = kc_generator(dom, k->op);
        if (!gen) {
            if (o->verbose) printf("  %s: no generator\n", k->op);
            continue;
        }
        s->ops++;
        const st_op_def *op = st_op_find(dom, k->op);
        uint32_t mask = st_kernel_dtypes(t, op) & (op && op->types ? op->types : ~0u);
        st_dtype dts[32];
        int nd = dtype_list(mask, dts);
        for (int di = 0; di < nd; di++) {
            kc_rng r = {o->seed ^ (uint64_t)(i + 1) * 0x100000001b3ull ^ (uint64_t)dts[di] * 0x9e3779b97f4a7c15ull ^
                                  (uint64_t)kind * 0x51ed27ull};
            int done = 0, ran = 0, fails = 0, refused = 0, drawn = 0;
            for (int tries = 0; done < o->cases && tries < o->cases * 4; tries++) {
                kc_case c;
                memset(&c, 0, sizeof c);
                c.op = k->op;
                c.domain = dom;
                if (!gen(&r, dts[di], &c)) {   /* none for this dtype, or not this draw */
                    pb_free(&c.attrs);
                    continue;
                }
                drawn++;
                char why[1024] = "";
                int v = run_case(&r, t, kind, &c, o, why, sizeof why);
                pb_free(&c.attrs);
                if (v < 0) {
                    refused++;
                    continue;
                }
                done++;
                ran++;
                s->cases++;
                if (v > 0) {
                    fails++;
                    known_row *kr = known_find(known, n_known, t->backend, k->op, st_dtype_name(dts[di]));
                    if (kr) {
                        kr->failed++;
                        s->known++;
                        if (o->verbose) printf("  known failure %s %s %s: %s\n", t->backend, k->op, st_dtype_name(dts[di]), why);
                    } else {
                        s->failures++;
                        printf("FAIL %s %s %s: %s\n", t->backend, k->op, st_dtype_name(dts[di]), why);
                    }
                }
            }
            s->refused += refused;
            /* the table says the kernel takes this dtype, yet accepts()
             * refused every case drawn: the coverage matrix (README) or
             * accepts() is wrong, or the kernel has quietly stopped
             * running natively */
            if (drawn && !ran) {
                known_row *kr = known_find(known, n_known, t->backend, k->op, st_dtype_name(dts[di]));
                if (kr) {
                    kr->failed++;
                    s->known++;
                } else {
                    s->failures++;
                    printf("FAIL %s %s %s: the table takes %s, but accepts() refused all %d cases drawn (-v -v says why)\n",
                           t->backend, k->op, st_dtype_name(dts[di]), st_dtype_name(dts[di]), refused);
                }
            }
            known_row *kr = known_find(known, n_known, t->backend, k->op, st_dtype_name(dts[di]));
            if (kr && ran) kr->ran++;
            if (o->verbose)
                printf("  %-22s %-8s %d cases, %d failed, %d refused\n", k->op, st_dtype_name(dts[di]), ran, fails, refused);
        }
        fflush(stdout);
    }
}

static int load_known(const char *path, known_row **out)
{
    *out = NULL;
    if (!path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "kernel_sweep: cannot read the known-failure list %s\n", path);
        exit(1);
    }
    char line[512];
    int n = 0;
    known_row *k = NULL;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        known_row row;
        memset(&row, 0, sizeof row);
        if (sscanf(line, "%15s %47s %15s", row.backend, row.op, row.dtype) != 3) continue;
        k = realloc(k, sizeof *k * (size_t)(n + 1));
        k[n++] = row;
    }
    fclose(f);
    *out = k;
    return n;
}

int main(int argc, char **argv)
{
    sweep_opts o = {2, 25, NULL, 0};
    const char *known_path = NULL, *want[8];
    int n_want = 0;
    const char *full = getenv("STRATA_SWEEP_FULL");
    if (full && *full && strcmp(full, "0")) o.cases = 12;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--backend") && has && n_want < 8) want[n_want++] = argv[++i];
        else if (!strcmp(a, "--cases") && has) o.cases = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && has) o.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--op") && has) o.only_op = argv[++i];
        else if (!strcmp(a, "--known") && has) known_path = argv[++i];
        else if (!strcmp(a, "--full")) o.cases = 12;
        else if (!strcmp(a, "-v")) o.verbose++;
        else {
            fprintf(stderr, "kernel_sweep: unknown argument '%s'\n"
                            "usage: kernel_sweep [--backend NAME]... [--cases N] [--seed S] [--full] [--op NAME] [--known FILE] [-v]\n", a);
            return 1;
        }
    }
    if (o.cases < 1) {
        fprintf(stderr, "kernel_sweep: --cases must be at least 1\n");
        return 1;
    }
    known_row *known;
    int n_known = load_known(known_path, &known);
    /* the backends come from the registry (backends/registry.c); the CPU
     * is the reference every other backend is compared with */
    for (int i = 0; i < n_want; i++) {
        st_backend_kind k;
        if (st_backend_find(want[i], &k) != ST_OK) {
            fprintf(stderr, "kernel_sweep: %s\n", st_last_error());
            return 1;
        }
    }
    if (st_backend_find("cpu", &cpu_kind) != ST_OK) {
        fprintf(stderr, "kernel_sweep: %s\n", st_last_error());
        return 1;
    }
    int ran = 0, bad = 0;
    for (int kind = 0; kind < st_backend_count(); kind++) {
        const char *name = st_backend_name((st_backend_kind)kind);
        bool asked = n_want == 0;
        for (int i = 0; i < n_want; i++) asked |= !strcmp(want[i], name);
        if (!asked) continue;
        const st_kernel_table *t = st_backend_available((st_backend_kind)kind) ? st_backend_kernels((st_backend_kind)kind) : NULL;
        if (!t) {
            printf("backend %-7s skipped: %s\n", name, st_last_error());
            continue;
        }
        if (kind != (int)cpu_kind && !st_backend_get((st_backend_kind)kind, 0)) {
            printf("backend %-7s skipped: %s\n", name, st_last_error());
            continue;
        }
        sweep_stats s;
        memset(&s, 0, sizeof s);
        sweep_backend(t, (st_backend_kind)kind, &o, known, n_known, &s);
        printf("backend %-7s %3d entries (%d with a generator), %d ops swept, %d cases, %d refused by accepts, "
               "%d failures, %d known failures\n",
               t->backend, s.entries, s.covered, s.ops, s.cases, s.refused, s.failures, s.known);
        ran++;
        bad += s.failures;
        for (int i = 0; i < n_known; i++)
            if (!strcmp(known[i].backend, t->backend) && known[i].ran && !known[i].failed && !o.only_op) {
                printf("STALE known failure %s %s %s: it ran and passed; take it off the list\n", known[i].backend,
                       known[i].op, known[i].dtype);
                bad++;
            }
    }
    free(known);
    if (!ran) {
        printf("kernel_sweep: skipped (no asked backend has a device)\n");
        return 77;
    }
    return bad ? 1 : 0;
}
