/*
 * k_misc_signal.c — CPU HannWindow, HammingWindow, BlackmanWindow, DFT,
 * STFT and MelWeightMatrix (shape rules: ops/misc.c).
 *
 * Transforms run in double as a mixed-radix FFT (a direct sum for prime
 * factors), taking every twiddle from one table of cos/sin(2 pi k / n)
 * computed once per call, so no angle is rounded twice.  Each 1-D signal (DFT) or frame (STFT)
 * is one task, a split fixed by the shapes alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/k_misc.h"
#include "runtime/pool.h"
#include "ops/misc.h"

#define ST_TWO_PI 6.283185307179586476925286766559

/* ---- windows ---- */

st_status st_cpu_window(const st_kctx *k)
{
    const st_window_state *s = k->state;
    const st_operand *y = &k->out[0];
    static const double A[3][3] = {{0.5, 0.5, 0.0}, {25.0 / 46.0, 21.0 / 46.0, 0.0}, {0.42, 0.5, 0.08}};
    const double *a = A[s->kind];
    int64_t size = y->sizes[0], period = s->periodic ? size : size - 1;
    for (int64_t i = 0; i < size; i++) {
        double ang = period > 0 ? ST_TWO_PI * (double)i / (double)period : 0.0;
        st_store_f64(y->dtype, st_misc_at(y, i * y->strides[0]), a[0] - a[1] * cos(ang) + a[2] * cos(2 * ang));
    }
    return ST_OK;
}

/* ---- the transform ---- */

typedef struct twiddles {
    int64_t n;
    double *c, *s;                    /* cos, sin of 2 pi k / n */
} twiddles;

static bool twiddles_init(twiddles *t, int64_t n)
{
    t->n = n;
    t->c = malloc((size_t)(2 * n + 1) * sizeof *t->c);
    if (!t->c) return false;
    t->s = t->c + n;
    for (int64_t q = 0; q < n; q++) {
        double ang = ST_TWO_PI * (double)q / (double)n;
        t->c[q] = cos(ang);
        t->s[q] = sin(ang);
    }
    return true;
}

static int64_t smallest_factor(int64_t m)
{
    if (m % 2 == 0) return 2;
    for (int64_t f = 3; f * f <= m; f += 2)
        if (m % f == 0) return f;
    return m;
}

/* Mixed-radix decimation in time: out[k] (k < m, packed) = sum over j of
 * in[j * is] * W^(jk), where W^e = exp(sg * 2 pi i e / m) is the table's
 * entry e * ts.  A prime length is summed directly.  tmp: 2m doubles. */
static void fft_rec(const twiddles *t, double sg, const double *ir, const double *ii, int64_t is, double *outr, double *outi,
                    int64_t m, int64_t ts, double *tmp)
{
    if (m == 1) {
        outr[0] = ir[0];
        outi[0] = ii[0];
        return;
    }
    int64_t p = smallest_factor(m), q = m / p;
    if (p == m) {
        for (int64_t k = 0; k < m; k++) {
            double sr = 0, si = 0;
            int64_t e = 0;
            for (int64_t j = 0; j < m; j++) {
                double wr = t->c[e * ts], wi = sg * t->s[e * ts], xr = ir[j * is], xi = ii[j * is];
                sr += xr * wr - xi * wi;
                si += xr * wi + xi * wr;
                e += k;
                if (e >= m) e -= m;
            }
            outr[k] = sr;
            outi[k] = si;
        }
        return;
    }
    /* p interleaved sub-transforms of q points, then a p-point butterfly
     * per k: X[k + s q] = sum_r W_m^(rk) W_p^(rs) Y_r[k] */
    for (int64_t r = 0; r < p; r++) fft_rec(t, sg, ir + r * is, ii + r * is, is * p, outr + r * q, outi + r * q, q, ts * p, tmp);
    double *tr = tmp, *ti = tmp + p;
    for (int64_t k = 0; k < q; k++) {
        for (int64_t r = 0; r < p; r++) {
            int64_t e = r * k;
            double wr = t->c[e * ts], wi = sg * t->s[e * ts], yr = outr[r * q + k], yi = outi[r * q + k];
            tr[r] = yr * wr - yi * wi;
            ti[r] = yr * wi + yi * wr;
        }
        for (int64_t sidx = 0; sidx < p; sidx++) {
            double sr = 0, si = 0;
            int64_t e = 0;
            for (int64_t r = 0; r < p; r++) {
                double wr = t->c[e * q * ts], wi = sg * t->s[e * q * ts];
                sr += tr[r] * wr - ti[r] * wi;
                si += tr[r] * wi + ti[r] * wr;
                e += sidx;
                if (e >= p) e -= p;
            }
            outr[k + sidx * q] = sr;
            outi[k + sidx * q] = si;
        }
    }
}

/* In place on (re, im) of length t->n; forward is exp(-2 pi i jk / n),
 * inverse exp(+...) / n.  tmp holds 4n doubles. */
static void transform(const twiddles *t, double *re, double *im, bool inverse, double *tmp)
{
    int64_t n = t->n;
    double *xr = tmp, *xi = tmp + n;
    memcpy(xr, re, (size_t)n * sizeof *re);
    memcpy(xi, im, (size_t)n * sizeof *im);
    fft_rec(t, inverse ? 1.0 : -1.0, xr, xi, 1, re, im, n, 1, tmp + 2 * n);
    if (inverse)
        for (int64_t q = 0; q < n; q++) {
            re[q] /= (double)n;
            im[q] /= (double)n;
        }
}

/* ---- DFT ---- */

typedef struct dft_job {
    const st_dft_state *s;
    const st_operand *x, *y;
    twiddles tw;
    int64_t in_len, out_len;
    st_status *err;
} dft_job;

static void dft_task(void *arg, int64_t t)
{
    const dft_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int ax = j->s->axis, last = x->rank - 1;
    int64_t n = j->s->n, xo = 0, yo = 0, rem = t;
    /* t runs over every dim but the axis and the real/imaginary one */
    for (int d = last - 1; d >= 0; d--) {
        if (d == ax) continue;
        int64_t i = rem % x->sizes[d];
        rem /= x->sizes[d];
        xo += i * x->strides[d];
        yo += i * y->strides[d];
    }
    double *buf = malloc((size_t)(6 * n) * sizeof *buf);
    if (!buf) {
        *j->err = ST_ERR_NOMEM;
        return;
    }
    double *re = buf, *im = buf + n;
    bool cplx = x->sizes[last] == 2;
    for (int64_t q = 0; q < n; q++) {
        re[q] = im[q] = 0;
        if (q >= j->in_len) continue;
        int64_t o = xo + q * x->strides[ax];
        re[q] = st_load_f64(x->dtype, st_misc_at(x, o));
        if (cplx) im[q] = st_load_f64(x->dtype, st_misc_at(x, o + x->strides[last]));
    }
    transform(&j->tw, re, im, j->s->inverse, buf + 2 * n);
    for (int64_t q = 0; q < j->out_len; q++) {
        int64_t o = yo + q * y->strides[ax];
        st_store_f64(y->dtype, st_misc_at(y, o), re[q]);
        st_store_f64(y->dtype, st_misc_at(y, o + y->strides[last]), im[q]);
    }
    free(buf);
}

st_status st_cpu_dft(const st_kctx *k)
{
    const st_dft_state *s = k->state;
    st_status err = ST_OK;
    dft_job j = {s, &k->in[0], &k->out[0], {0}, 0, 0, &err};
    int ax = s->axis;
    j.in_len = j.x->sizes[ax] < s->n ? j.x->sizes[ax] : s->n;
    j.out_len = j.y->sizes[ax];
    int64_t signals = 1;
    for (int d = 0; d < j.x->rank - 1; d++)
        if (d != ax) signals *= j.x->sizes[d];
    if (st_operand_numel(j.y) == 0) return ST_OK;
    if (!twiddles_init(&j.tw, s->n)) return st_error(ST_ERR_NOMEM, "out of memory");
    st_parallel_for(k->pool, signals, dft_task, &j);
    free(j.tw.c);
    if (err != ST_OK) return st_error(err, "out of memory");
    return ST_OK;
}

/* ---- STFT ---- */

typedef struct stft_job {
    const st_dft_state *s;
    const st_operand *x, *win, *y;
    twiddles tw;
    st_status *err;
} stft_job;

static void stft_task(void *arg, int64_t t)
{
    const stft_job *j = arg;
    const st_operand *x = j->x, *y = j->y, *w = j->win;
    int64_t frames = y->sizes[1], b = t / frames, f = t % frames, n = j->s->n;
    double *buf = malloc((size_t)(6 * n) * sizeof *buf);
    if (!buf) {
        *j->err = ST_ERR_NOMEM;
        return;
    }
    double *re = buf, *im = buf + n;
    bool cplx = x->sizes[2] == 2;
    for (int64_t q = 0; q < n; q++) {
        int64_t o = b * x->strides[0] + (f * j->s->step + q) * x->strides[1];
        double wv = w ? st_load_f64(w->dtype, st_misc_at(w, q * w->strides[0])) : 1.0;
        re[q] = st_load_f64(x->dtype, st_misc_at(x, o)) * wv;
        im[q] = cplx ? st_load_f64(x->dtype, st_misc_at(x, o + x->strides[2])) * wv : 0.0;
    }
    transform(&j->tw, re, im, false, buf + 2 * n);
    for (int64_t q = 0; q < y->sizes[2]; q++) {
        int64_t o = b * y->strides[0] + f * y->strides[1] + q * y->strides[2];
        st_store_f64(y->dtype, st_misc_at(y, o), re[q]);
        st_store_f64(y->dtype, st_misc_at(y, o + y->strides[3]), im[q]);
    }
    free(buf);
}

st_status st_cpu_stft(const st_kctx *k)
{
    const st_dft_state *s = k->state;
    st_status err = ST_OK;
    stft_job j = {s, &k->in[0], k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL, &k->out[0], {0}, &err};
    if (st_operand_numel(j.y) == 0) return ST_OK;
    if (!twiddles_init(&j.tw, s->n)) return st_error(ST_ERR_NOMEM, "out of memory");
    st_parallel_for(k->pool, j.y->sizes[0] * j.y->sizes[1], stft_task, &j);
    free(j.tw.c);
    if (err != ST_OK) return st_error(err, "out of memory");
    return ST_OK;
}

/* ---- MelWeightMatrix ---- */

/* Triangular filters between mel-spaced points (num_mel_bins + 2 of them,
 * split into num_mel_bins + 2 steps, as the ONNX definition does), each
 * point snapped down to a DFT bin. */
st_status st_cpu_mel_weight(const st_kctx *k)
{
    const st_operand *y = &k->out[0];
    int64_t len = st_load_i64(k->in[1].dtype, k->in[1].data), rate = st_load_i64(k->in[2].dtype, k->in[2].data);
    double lo_hz = st_load_f64(k->in[3].dtype, k->in[3].data), hi_hz = st_load_f64(k->in[4].dtype, k->in[4].data);
    int64_t spec = y->sizes[0], bins = y->sizes[1];
    if (rate <= 0) return st_error(ST_ERR_INVALID_ARG, "sample_rate is %lld", (long long)rate);
    if (!(lo_hz >= 0 && hi_hz > lo_hz)) return st_error(ST_ERR_INVALID_ARG, "the edges %g and %g Hz are not an increasing pair", lo_hz, hi_hz);
    int64_t *pt = malloc((size_t)(bins + 2) * sizeof *pt);
    if (!pt) return st_error(ST_ERR_NOMEM, "out of memory");
    double lo_mel = 2595.0 * log10(1.0 + lo_hz / 700.0), hi_mel = 2595.0 * log10(1.0 + hi_hz / 700.0);
    double step = (hi_mel - lo_mel) / (double)(bins + 2);
    for (int64_t i = 0; i < bins + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + lo_mel) / 2595.0) - 1.0);
        pt[i] = (int64_t)floor((double)(len + 1) * hz / (double)rate);
    }
    for (int64_t r = 0; r < spec; r++)
        for (int64_t c = 0; c < bins; c++) st_store_f64(y->dtype, st_misc_at(y, r * y->strides[0] + c * y->strides[1]), 0.0);
    for (int64_t i = 0; i < bins; i++) {
        int64_t l = pt[i], c = pt[i + 1], h = pt[i + 2];
        if (c == l) {
            if (c >= 0 && c < spec) st_store_f64(y->dtype, st_misc_at(y, c * y->strides[0] + i * y->strides[1]), 1.0);
        } else {
            for (int64_t q = l; q <= c; q++)
                if (q >= 0 && q < spec)
                    st_store_f64(y->dtype, st_misc_at(y, q * y->strides[0] + i * y->strides[1]), (double)(q - l) / (double)(c - l));
        }
        if (h > c)
            for (int64_t q = c; q < h; q++)
                if (q >= 0 && q < spec)
                    st_store_f64(y->dtype, st_misc_at(y, q * y->strides[0] + i * y->strides[1]), (double)(h - q) / (double)(h - c));
    }
    free(pt);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_misc_signal[] = {
    {"HannWindow", "", ST_DT_ALL, st_cpu_window, NULL, NULL, NULL},
    {"HammingWindow", "", ST_DT_ALL, st_cpu_window, NULL, NULL, NULL},
    {"BlackmanWindow", "", ST_DT_ALL, st_cpu_window, NULL, NULL, NULL},
    {"DFT", "", ST_DT_ALL, st_cpu_dft, NULL, NULL, NULL},
    {"STFT", "", ST_DT_ALL, st_cpu_stft, NULL, NULL, NULL},
    {"MelWeightMatrix", "", ST_DT_ALL, st_cpu_mel_weight, NULL, NULL, NULL},
    {NULL}
};
