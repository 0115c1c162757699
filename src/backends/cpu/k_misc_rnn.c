/*
 * k_misc_rnn.c — CPU RNN, GRU and LSTM (shape rule: ops/misc.c).
 *
 * Each direction is one task (a fixed split: directions are independent,
 * time steps are not).  A task packs its W and R once, projects every
 * time step's input at once (X * W^T, one GEMM), then walks the steps:
 * one GEMM of the previous hidden state by R^T per step (two for GRU
 * without linear_before_reset, whose candidate needs the reset gate
 * first), then the gate math per batch row.
 *
 * Products run through st_sgemm in f32 for f32, f16 and bf16 (and in plain
 * double loops for f64); states, biases and the gate math are kept in
 * double, so an f16 model rounds only where it stores.
 *
 * sequence_lens: row b runs its first lens[b] steps (the reverse
 * direction runs them from lens[b] - 1 down to 0); Y is zero past them,
 * and Y_h / Y_c are zero for an empty sequence, as ONNX Runtime does.
 * Which dim is which under either layout comes from ops/lower_rnn.c, as
 * on the CUDA and OpenCL backends.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/k_misc.h"
#include "backends/cpu/linalg.h"
#include "runtime/pool.h"
#include "ops/lower_rnn.h"
#include "ops/misc.h"

/* One direction's weight, packed row-major [rows, cols]: f32 or f64. */
typedef struct rnn_w {
    float *f;
    double *d;
    int64_t rows, cols;
} rnn_w;

typedef struct rnn_job {
    const st_kctx *k;
    const st_rnn_state *s;
    bool f64;
    st_lower_rnn g;                  /* sizes and per-role strides (ops/lower_rnn.h) */
    int64_t seq, batch, in, H;
    const double *x;                 /* X packed [seq * batch, in], row t * batch + b */
    const int64_t *lens;
    st_status err[2];
} rnn_job;

static double act_apply(const st_rnn_act *a, double x)
{
    switch (a->fn) {
    case ST_ACT_RELU: return x > 0 ? x : 0;
    case ST_ACT_TANH: return tanh(x);
    case ST_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ST_ACT_AFFINE: return a->alpha * x + a->beta;
    case ST_ACT_LEAKY_RELU: return x < 0 ? a->alpha * x : x;
    case ST_ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case ST_ACT_SCALED_TANH: return a->alpha * tanh(a->beta * x);
    case ST_ACT_HARD_SIGMOID: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case ST_ACT_ELU: return x < 0 ? a->alpha * (exp(x) - 1) : x;
    case ST_ACT_SOFTSIGN: return x / (1 + fabs(x));
    case ST_ACT_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    default: return x;
    }
}

/* out[m, n] = a[m, k] * W[row0 .. row0 + n)^T, all packed.  fa and fo are
 * f32 scratch of m * k and m * n. */
static bool mm_wt(const rnn_w *w, int64_t row0, int64_t n, const double *a, int64_t m, double *out, float *fa, float *fo)
{
    int64_t k = w->cols;
    if (w->d) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                const double *wr = w->d + (row0 + j) * k, *ar = a + i * k;
                double acc = 0;
                for (int64_t q = 0; q < k; q++) acc += ar[q] * wr[q];
                out[i * n + j] = acc;
            }
        return true;
    }
    for (int64_t i = 0; i < m * k; i++) fa[i] = (float)a[i];
    st_mat am = {fa, m, k, k > 0 ? k : 1, 1}, bm = {w->f + row0 * k, n, k, k > 0 ? k : 1, 1};
    if (st_sgemm(&am, false, &bm, true, 1.0f, 0.0f, fo, n, m, n, k) != ST_OK) return false;
    for (int64_t i = 0; i < m * n; i++) out[i] = fo[i];
    return true;
}

/* Packs operand o's [dir, rows, cols] slice. */
static bool pack_w(const st_operand *o, int64_t dir, bool f64, rnn_w *w)
{
    w->rows = o->sizes[1];
    w->cols = o->sizes[2];
    size_t n = (size_t)(w->rows * w->cols > 0 ? w->rows * w->cols : 1);
    w->f = f64 ? NULL : malloc(n * sizeof *w->f);
    w->d = f64 ? malloc(n * sizeof *w->d) : NULL;
    if (!w->f && !w->d) return false;
    for (int64_t r = 0; r < w->rows; r++)
        for (int64_t c = 0; c < w->cols; c++) {
            const char *p = st_misc_at(o, dir * o->strides[0] + r * o->strides[1] + c * o->strides[2]);
            if (f64) w->d[r * w->cols + c] = st_load_f64(o->dtype, p);
            else w->f[r * w->cols + c] = st_load_f32(o->dtype, p);
        }
    return true;
}

/* W and R of each direction packed once, when the plan is bound, if they
 * are constants (they always are in exported models): repacking them per
 * run cost a batch-1 LSTM step ten times its arithmetic. */
typedef struct rnn_prep {
    rnn_w w[2], r[2];
} rnn_prep;

static void rnn_release(void *priv)
{
    rnn_prep *p = priv;
    if (!p) return;
    for (int d = 0; d < 2; d++) {
        free(p->w[d].f);
        free(p->r[d].f);
    }
    free(p);
}

/* Packs direction dir of a constant [dirs, rows, cols] weight (laid out
 * as the constant lies, row-major) to f32. */
static bool pack_const(const st_view *v, const void *data, int64_t dir, rnn_w *w)
{
    w->rows = v->sizes[1];
    w->cols = v->sizes[2];
    w->f = malloc((size_t)(w->rows * w->cols > 0 ? w->rows * w->cols : 1) * sizeof *w->f);
    if (!w->f) return false;
    size_t es = st_dtype_size(v->dtype);
    for (int64_t r = 0; r < w->rows; r++)
        for (int64_t c = 0; c < w->cols; c++) {
            int64_t e = dir * v->strides[0] + r * v->strides[1] + c * v->strides[2];
            w->f[r * w->cols + c] = st_load_f32(v->dtype, (const char *)data + e * (int64_t)es);
        }
    return true;
}

static st_status rnn_prepare(const st_knode *n, void **priv)
{
    *priv = NULL;
    if (n->n_in < 3 || !n->data[1] || !n->data[2]) return ST_OK;
    const st_view *wv = &n->views[1], *rv = &n->views[2];
    if (wv->rank != 3 || rv->rank != 3 || wv->dtype == ST_F64 || !st_dtype_is_float(wv->dtype) ||
        !st_dtype_is_float(rv->dtype) || rv->dtype == ST_F64 || wv->sizes[0] > 2 || rv->sizes[0] != wv->sizes[0])
        return ST_OK;
    rnn_prep *p = calloc(1, sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory packing %s weights", n->node->op_type);
    for (int64_t d = 0; d < wv->sizes[0]; d++)
        if (!pack_const(wv, n->data[1], d, &p->w[d]) || !pack_const(rv, n->data[2], d, &p->r[d])) {
            rnn_release(p);
            return st_error(ST_ERR_NOMEM, "out of memory packing %s weights", n->node->op_type);
        }
    *priv = p;
    return ST_OK;
}

/* Lowered operand o's data (NULL when absent) and the address of its
 * element [a, b, c, d] by role, whichever the layout. */
static const st_operand *role_op(const st_kctx *k, const st_lrnn_op *o)
{
    return o->operand < 0 ? NULL : o->operand < k->n_in ? &k->in[o->operand] : &k->out[o->operand - k->n_in];
}

static char *role_at(const st_operand *v, const st_lrnn_op *o, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return st_misc_at(v, a * o->s[0] + b * o->s[1] + c * o->s[2] + d * o->s[3]);
}

static double clipv(const st_rnn_state *s, double v)
{
    if (!s->has_clip) return v;
    return v < -s->clip ? -s->clip : v > s->clip ? s->clip : v;
}

static st_status rnn_direction(rnn_job *j, int64_t dir)
{
    const st_kctx *k = j->k;
    const st_rnn_state *s = j->s;
    int64_t H = j->H, G = s->gates, GH = G * H, B = j->batch, T = j->seq, I = j->in;
    bool rev = s->dirs == 2 ? dir == 1 : s->reverse;
    const st_rnn_act *act = s->act[dir];
    const st_lrnn_op *g = j->g.o;
    const st_operand *bo = role_op(k, &g[ST_LRNN_B]), *h0 = role_op(k, &g[ST_LRNN_H0]), *c0 = role_op(k, &g[ST_LRNN_C0]);
    const st_operand *po = role_op(k, &g[ST_LRNN_P]), *y = role_op(k, &g[ST_LRNN_Y]), *yh = role_op(k, &g[ST_LRNN_YH]);
    const st_operand *yc = role_op(k, &g[ST_LRNN_YC]);
    rnn_w w = {0}, r = {0};
    const rnn_prep *prep = j->f64 ? NULL : k->priv;
    if (prep) { /* borrowed: not freed below */
        w = prep->w[dir];
        r = prep->r[dir];
    }
    int64_t fa_n = T * B * I > B * H ? T * B * I : B * H, fo_n = T * B * GH > B * GH ? T * B * GH : B * GH;
    double *xw = malloc((size_t)(T * B * GH + 1) * sizeof *xw);
    double *gh = malloc((size_t)(B * GH + 1) * sizeof *gh);
    double *h = malloc((size_t)(B * H + 1) * sizeof *h), *c = malloc((size_t)(B * H + 1) * sizeof *c);
    double *aux = malloc((size_t)(2 * B * H + 1) * sizeof *aux);   /* GRU: z and r * h */
    double *bias = calloc((size_t)(2 * GH + 3 * H + 1), sizeof *bias);
    float *fa = j->f64 ? NULL : malloc((size_t)(fa_n + 1) * sizeof *fa), *fo = j->f64 ? NULL : malloc((size_t)(fo_n + 1) * sizeof *fo);
    /* tasks may run on pool threads, whose error text the caller cannot
     * see: report the code and let st_cpu_rnn set the message */
    st_status st = ST_OK;
    if (!xw || !gh || !h || !c || !aux || !bias || (!j->f64 && (!fa || !fo)) ||
        (!prep && (!pack_w(&k->in[1], dir, j->f64, &w) || !pack_w(&k->in[2], dir, j->f64, &r)))) {
        st = ST_ERR_NOMEM;
        goto done;
    }
    /* wb, rb (each [GH]) and the peepholes pi, po, pf */
    double *wb = bias, *rb = bias + GH, *peep = bias + 2 * GH;
    if (bo)
        for (int64_t i = 0; i < 2 * GH; i++) bias[i] = st_load_f64(bo->dtype, role_at(bo, &g[ST_LRNN_B], dir, i, 0, 0));
    if (po)
        for (int64_t i = 0; i < 3 * H; i++) peep[i] = st_load_f64(po->dtype, role_at(po, &g[ST_LRNN_P], dir, i, 0, 0));
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < H; i++) {
            h[b * H + i] = h0 ? st_load_f64(h0->dtype, role_at(h0, &g[ST_LRNN_H0], dir, b, i, 0)) : 0.0;
            c[b * H + i] = c0 ? st_load_f64(c0->dtype, role_at(c0, &g[ST_LRNN_C0], dir, b, i, 0)) : 0.0;
        }
    if (!mm_wt(&w, 0, GH, j->x, T * B, xw, fa, fo)) {
        st = ST_ERR_NOMEM;
        goto done;
    }
    double *zb = aux, *rh = aux + B * H;
    for (int64_t step = 0; step < T; step++) {
        bool lbr = s->linear_before_reset;
        if (!mm_wt(&r, 0, s->cell == ST_CELL_GRU && !lbr ? 2 * H : GH, h, B, gh, fa, fo)) {
            st = ST_ERR_NOMEM;
            goto done;
        }
        if (s->cell == ST_CELL_GRU && !lbr) {
            /* z and r first: the candidate multiplies R_h by r * h */
            for (int64_t b = 0; b < B; b++) {
                bool on = step < j->lens[b];
                int64_t t = rev ? j->lens[b] - 1 - step : step;
                const double *xr = xw + (t * B + b) * GH, *g = gh + b * 2 * H;
                for (int64_t i = 0; i < H; i++) {
                    if (!on) {
                        rh[b * H + i] = 0;
                        continue;
                    }
                    double z = act_apply(&act[0], clipv(s, xr[i] + g[i] + wb[i] + rb[i]));
                    double rr = act_apply(&act[0], clipv(s, xr[H + i] + g[H + i] + wb[H + i] + rb[H + i]));
                    zb[b * H + i] = z;
                    rh[b * H + i] = rr * h[b * H + i];
                }
            }
            if (!mm_wt(&r, 2 * H, H, rh, B, gh, fa, fo)) {
                st = ST_ERR_NOMEM;
                goto done;
            }
        }
        for (int64_t b = 0; b < B; b++) {
            if (step >= j->lens[b]) continue;
            int64_t t = rev ? j->lens[b] - 1 - step : step;
            const double *xr = xw + (t * B + b) * GH;
            double *hb = h + b * H, *cb = c + b * H;
            for (int64_t i = 0; i < H; i++) {
                if (s->cell == ST_CELL_RNN) {
                    const double *g = gh + b * H;
                    hb[i] = act_apply(&act[0], clipv(s, xr[i] + g[i] + wb[i] + rb[i]));
                } else if (s->cell == ST_CELL_GRU) {
                    double z, cand;
                    if (lbr) {
                        const double *g = gh + b * GH;
                        z = act_apply(&act[0], clipv(s, xr[i] + g[i] + wb[i] + rb[i]));
                        double rr = act_apply(&act[0], clipv(s, xr[H + i] + g[H + i] + wb[H + i] + rb[H + i]));
                        cand = act_apply(&act[1], clipv(s, xr[2 * H + i] + rr * (g[2 * H + i] + rb[2 * H + i]) + wb[2 * H + i]));
                    } else {
                        z = zb[b * H + i];
                        cand = act_apply(&act[1], clipv(s, xr[2 * H + i] + gh[b * H + i] + rb[2 * H + i] + wb[2 * H + i]));
                    }
                    hb[i] = (1 - z) * cand + z * hb[i];
                } else {
                    /* gates i, o, f, c; peepholes i, o, f */
                    const double *g = gh + b * GH;
                    double cp = cb[i];
                    double gi = act_apply(&act[0], clipv(s, xr[i] + g[i] + wb[i] + rb[i] + peep[i] * cp));
                    double gf = s->input_forget ? 1 - gi
                                                : act_apply(&act[0], clipv(s, xr[2 * H + i] + g[2 * H + i] + wb[2 * H + i] +
                                                                                  rb[2 * H + i] + peep[2 * H + i] * cp));
                    double gc = act_apply(&act[1], clipv(s, xr[3 * H + i] + g[3 * H + i] + wb[3 * H + i] + rb[3 * H + i]));
                    double cn = gf * cp + gi * gc;
                    double go = act_apply(&act[0], clipv(s, xr[H + i] + g[H + i] + wb[H + i] + rb[H + i] + peep[H + i] * cn));
                    cb[i] = cn;
                    hb[i] = go * act_apply(&act[2], cn);
                }
            }
            if (y)
                for (int64_t i = 0; i < H; i++) st_store_f64(y->dtype, role_at(y, &g[ST_LRNN_Y], t, dir, b, i), hb[i]);
        }
    }
    for (int64_t b = 0; b < B; b++) {
        bool empty = j->lens[b] == 0;
        if (y)
            for (int64_t t = j->lens[b]; t < T; t++)
                for (int64_t i = 0; i < H; i++) st_store_f64(y->dtype, role_at(y, &g[ST_LRNN_Y], t, dir, b, i), 0.0);
        if (yh)
            for (int64_t i = 0; i < H; i++)
                st_store_f64(yh->dtype, role_at(yh, &g[ST_LRNN_YH], dir, b, i, 0), empty ? 0.0 : h[b * H + i]);
        if (yc)
            for (int64_t i = 0; i < H; i++)
                st_store_f64(yc->dtype, role_at(yc, &g[ST_LRNN_YC], dir, b, i, 0), empty ? 0.0 : c[b * H + i]);
    }
done:
    free(xw);
    free(gh);
    free(h);
    free(c);
    free(aux);
    free(bias);
    free(fa);
    free(fo);
    if (!prep) {
        free(w.f);
        free(w.d);
        free(r.f);
        free(r.d);
    }
    return st;
}

static void rnn_task(void *arg, int64_t dir)
{
    rnn_job *j = arg;
    j->err[dir] = rnn_direction(j, dir);
}

st_status st_cpu_rnn(const st_kctx *k)
{
    const st_rnn_state *s = k->state;
    const st_operand *x = &k->in[0];
    rnn_job j = {0};
    j.k = k;
    j.s = s;
    j.f64 = x->dtype == ST_F64;
    st_lower_rnn_of(k, &j.g);
    const st_lrnn_op *gx = &j.g.o[ST_LRNN_X], *gl = &j.g.o[ST_LRNN_SL];
    const st_operand *sl = role_op(k, gl);
    j.seq = j.g.T;
    j.batch = j.g.B;
    j.in = j.g.I;
    j.H = j.g.H;
    int64_t *lens = malloc((size_t)(j.batch + 1) * sizeof *lens);
    double *xp = malloc((size_t)(j.seq * j.batch * j.in + 1) * sizeof *xp);
    if (!lens || !xp) {
        free(lens);
        free(xp);
        return st_error(ST_ERR_NOMEM, "out of memory");
    }
    for (int64_t b = 0; b < j.batch; b++) {
        lens[b] = sl ? st_load_i64(sl->dtype, role_at(sl, gl, b, 0, 0, 0)) : j.seq;
        if (lens[b] < 0 || lens[b] > j.seq) {
            long long bad = (long long)lens[b];
            free(lens);
            free(xp);
            return st_error(ST_ERR_INVALID_ARG, "sequence_lens[%lld] is %lld; X has %lld steps", (long long)b, bad, (long long)j.seq);
        }
    }
    for (int64_t t = 0; t < j.seq; t++)
        for (int64_t b = 0; b < j.batch; b++)
            for (int64_t i = 0; i < j.in; i++)
                xp[(t * j.batch + b) * j.in + i] = st_load_f64(x->dtype, role_at(x, gx, t, b, i, 0));
    j.x = xp;
    j.lens = lens;
    st_parallel_for(k->pool, s->dirs, rnn_task, &j);
    free(lens);
    free(xp);
    for (int d = 0; d < s->dirs; d++)
        if (j.err[d] != ST_OK) return st_error(j.err[d], "out of memory for %s's direction %d", s->cell == ST_CELL_LSTM ? "LSTM" : s->cell == ST_CELL_GRU ? "GRU" : "RNN", d);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_misc_rnn[] = {
    {"RNN", "", ST_DT_ALL, st_cpu_rnn, NULL, rnn_prepare, rnn_release},
    {"GRU", "", ST_DT_ALL, st_cpu_rnn, NULL, rnn_prepare, rnn_release},
    {"LSTM", "", ST_DT_ALL, st_cpu_rnn, NULL, rnn_prepare, rnn_release},
    {NULL}
};
