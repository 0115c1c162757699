/*
 * k_pool.c — the CPU pools (MaxPool, AveragePool, LpPool, GlobalAveragePool,
 * GlobalMaxPool, GlobalLpPool), 1 to 3 spatial dims; LpPool runs the
 * generic loop only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/common/cvt_half.h"
#include "backends/cpu/k_conv.h"
#include "runtime/scratch.h"

/* ---- pooling ---- */

typedef struct pool_job {
    const st_conv_state *s;
    const st_operand *x, *y, *ix;
    int64_t in_sp[3], out_sp[3], pixels;
} pool_job;

static void pool_plane(void *arg, int64_t t)
{
    const pool_job *j = arg;
    const st_conv_state *s = j->s;
    const st_operand *x = j->x, *y = j->y;
    int64_t n = t / x->sizes[1], c = t % x->sizes[1];
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype);
    int nsp = s->nsp;
    const char *xp = (const char *)x->data + (n * x->strides[0] + c * x->strides[1]) * (int64_t)ex;
    for (int64_t p = 0; p < j->pixels; p++) {
        int64_t o[3] = {0, 0, 0}, pr = p;
        for (int i = nsp - 1; i >= 0; i--) {
            o[i] = pr % j->out_sp[i];
            pr /= j->out_sp[i];
        }
        int64_t start[3], total = 1;
        for (int i = 0; i < nsp; i++) {
            start[i] = o[i] * s->s[i] - s->pb[i];
            /* the divisor with count_include_pad counts pads, not the
             * overhang a ceil_mode window has past them */
            int64_t lim = start[i] + (s->k[i] - 1) * s->d[i] + 1, hi = j->in_sp[i] + s->pe[i];
            total *= ((lim < hi ? lim : hi) - start[i] + s->d[i] - 1) / s->d[i];
        }
        double acc = s->is_max ? -INFINITY : 0.0;
        int64_t best = -1, count = 0;
        int64_t kvol = 1;
        for (int i = 0; i < nsp; i++) kvol *= s->k[i];
        for (int64_t kk = 0; kk < kvol; kk++) {
            int64_t rem = kk, off = 0, flat = 0;
            bool inside = true;
            int64_t pos[3] = {0, 0, 0};
            for (int i = nsp - 1; i >= 0; i--) {
                int64_t ki = rem % s->k[i];
                rem /= s->k[i];
                pos[i] = start[i] + ki * s->d[i];
                if (pos[i] < 0 || pos[i] >= j->in_sp[i]) inside = false;
            }
            if (!inside) continue;
            for (int i = 0; i < nsp; i++) {
                off += pos[i] * x->strides[2 + i];
                flat = flat * j->in_sp[i] + pos[i];
            }
            if (s->storage_order == 1 && nsp == 2) flat = pos[1] * j->in_sp[0] + pos[0];
            double v = st_load_f64(x->dtype, xp + off * (int64_t)ex);
            if (s->is_max) {
                if (v > acc || best < 0) {
                    acc = v;
                    best = flat;
                }
            } else if (s->p) {
                acc += s->p == 1 ? fabs(v) : s->p == 2 ? v * v : pow(fabs(v), (double)s->p);
            } else {
                acc += v;
            }
            count++;
        }
        int64_t yo = n * y->strides[0] + c * y->strides[1];
        for (int i = 0; i < nsp; i++) yo += o[i] * y->strides[2 + i];
        double result = s->is_max ? acc
                        : s->p ? (s->p == 1 ? acc : s->p == 2 ? sqrt(acc) : pow(acc, 1.0 / (double)s->p))
                        : acc / (double)(s->count_include_pad ? total : (count ? count : 1));
        if (x->dtype == ST_F32 || x->dtype == ST_F16 || x->dtype == ST_BF16) st_store_f32(y->dtype, (char *)y->data + yo * (int64_t)ey, (float)result);
        else st_store_f64(y->dtype, (char *)y->data + yo * (int64_t)ey, result);
        if (j->ix) {
            int64_t plane = 1;
            for (int i = 0; i < nsp; i++) plane *= j->in_sp[i];
            int64_t io = n * j->ix->strides[0] + c * j->ix->strides[1];
            for (int i = 0; i < nsp; i++) io += o[i] * j->ix->strides[2 + i];
            ((int64_t *)j->ix->data)[io] = (n * x->sizes[1] + c) * plane + best;
        }
    }
}

/* The f32 path for 1-D and 2-D windows: a plane is copied once into a
 * padded buffer (pads hold -inf for max, 0 for average), then each output
 * row is the max or sum of kh * kw shifted rows of it, loops the compiler
 * vectorises (cloned for AVX-512 and baseline x86-64).  Averages divide by
 * the window's count, which factors into a row count times a column count
 * with or without count_include_pad.  A global pool is a plane reduction
 * in 16 lanes.  MaxPool's NaN handling differs from the generic loop only
 * in which NaN wins when a window holds one: here a NaN never replaces a
 * number. */

ST_CLONES static void row_max(float *acc, const float *src, int64_t n, int64_t step)
{
    if (step == 1)
        for (int64_t i = 0; i < n; i++) acc[i] = src[i] > acc[i] ? src[i] : acc[i];
    else
        for (int64_t i = 0; i < n; i++) acc[i] = src[i * step] > acc[i] ? src[i * step] : acc[i];
}

ST_CLONES static void row_add(float *acc, const float *src, int64_t n, int64_t step)
{
    if (step == 1)
        for (int64_t i = 0; i < n; i++) acc[i] += src[i];
    else
        for (int64_t i = 0; i < n; i++) acc[i] += src[i * step];
}

/* Sum or max of n floats at stride `step`, in 16 independent lanes (a fixed
 * order, so the same bits on every thread). */
ST_CLONES static double plane_reduce(const float *x, int64_t n, int64_t step, bool is_max)
{
    float lane[16];
    for (int l = 0; l < 16; l++) lane[l] = is_max ? -INFINITY : 0.0f;
    int64_t i = 0;
    if (step == 1) {
        for (; i + 16 <= n; i += 16)
            for (int l = 0; l < 16; l++) {
                float v = x[i + l];
                lane[l] = is_max ? (v > lane[l] ? v : lane[l]) : lane[l] + v;
            }
    }
    double r = is_max ? -INFINITY : 0.0;
    for (int l = 0; l < 16; l++) r = is_max ? (lane[l] > r ? lane[l] : r) : r + lane[l];
    for (; i < n; i++) {
        float v = x[i * step];
        r = is_max ? (v > r ? v : r) : r + v;
    }
    return r;
}

typedef struct fpool {
    const st_conv_state *s;
    const st_operand *x, *y;
    int64_t h, w, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl, ph, pw;
    int xd;
    bool global;
    float *cnt;                 /* averages: per output row, then per output column */
    st_status err;
} fpool;

static void fpool_plane(void *arg, int64_t t)
{
    fpool *f = arg;
    const st_operand *x = f->x, *y = f->y;
    int64_t n = t / x->sizes[1], c = t % x->sizes[1];
    int64_t xr = f->xd == 3 ? x->strides[2] : 0, xc = x->strides[f->xd];
    int64_t yr = f->xd == 3 ? y->strides[2] : 0, yc = y->strides[f->xd];
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype);
    /* f16 and bf16 planes are read and written as f32 rows (cvt_half.c):
     * max is exact in either, and an average is summed in f32 as for f32 */
    const char *xp = (const char *)x->data + (n * x->strides[0] + c * x->strides[1]) * (int64_t)ex;
    char *yp = (char *)y->data + (n * y->strides[0] + c * y->strides[1]) * (int64_t)ey;
    bool is_max = f->s->is_max, xf32 = x->dtype == ST_F32;
    if (f->global) {
        double r;
        float *row = NULL;
        if (!xf32 && !(row = st_scratch_take((size_t)f->w * sizeof *row))) {
            f->err = st_error(ST_ERR_NOMEM, "out of memory in a pool");
            return;
        }
        if (xf32 && xc == 1 && xr == f->w) r = plane_reduce((const float *)xp, f->h * f->w, 1, is_max);
        else {
            r = is_max ? -INFINITY : 0.0;
            for (int64_t i = 0; i < f->h; i++) {
                const char *xi = xp + i * xr * (int64_t)ex;
                double v;
                if (xf32) v = plane_reduce((const float *)xi, f->w, xc, is_max);
                else {
                    st_cvt_row_to_f32(row, x->dtype, xi, xc, f->w);
                    v = plane_reduce(row, f->w, 1, is_max);
                }
                r = is_max ? (v > r ? v : r) : r + v;
            }
        }
        st_scratch_give(row);
        float out = (float)(is_max ? r : r / (double)(f->h * f->w));
        st_cvt_row_from_f32(y->dtype, yp, 1, &out, 1);
        return;
    }
    /* a unit-stride max pool (SPPF's 5x5) runs separably: below */
    bool sep = is_max && f->sy == 1 && f->sx == 1 && f->dy == 1 && f->dx == 1;
    int64_t area = f->ph * f->pw;
    /* the worker's kept scratch (scratch.h): a warm run allocates none */
    float *buf = st_scratch_take((size_t)((sep ? 3 : 1) * area + 2 * f->ow) * sizeof *buf);
    if (!buf) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in a pool");
        return;
    }
    float *acc = buf + area, *out = acc + f->ow, pad = is_max ? -INFINITY : 0.0f;
    for (int64_t i = 0; i < f->ph; i++) {
        float *row = buf + i * f->pw;
        int64_t iy = i - f->pt;
        if (iy >= 0 && iy < f->h && f->pl + f->w <= f->pw) {
            for (int64_t q = 0; q < f->pl; q++) row[q] = pad;
            st_cvt_row_to_f32(row + f->pl, x->dtype, xp + iy * xr * (int64_t)ex, xc, f->w);
            for (int64_t q = f->pl + f->w; q < f->pw; q++) row[q] = pad;
            continue;
        }
        for (int64_t q = 0; q < f->pw; q++) {
            int64_t ix = q - f->pl;
            row[q] = iy >= 0 && iy < f->h && ix >= 0 && ix < f->w
                         ? st_load_f32(x->dtype, xp + (iy * xr + ix * xc) * (int64_t)ex)
                         : pad;
        }
    }
    if (sep) {
        /* The padded plane as one flat run: hm[p] = the max of buf[p + kx]
         * over kx, then v[p] = the max of hm[p + ky * pw] over ky, so
         * output (oy, ox) is v[oy * pw + ox]; positions past a row's end
         * mix two rows and are never read.  Each max starts from -inf and
         * takes the taps in the order of the loop below (ky, then kx): a
         * NaN never wins, and among equal values (+0 and -0) the first in
         * that order does, as there; so the bits are the same. */
        float *hm = buf + area + 2 * f->ow, *v = hm + area;
        int64_t nh = area - (f->kw - 1), nv = (f->oh - 1) * f->pw + f->ow;
        for (int64_t p = 0; p < nh; p++) hm[p] = pad;
        for (int64_t kx = 0; kx < f->kw; kx++) row_max(hm, buf + kx, nh, 1);
        for (int64_t p = 0; p < nv; p++) v[p] = pad;
        for (int64_t ky = 0; ky < f->kh; ky++) row_max(v, hm + ky * f->pw, nv, 1);
        for (int64_t oy = 0; oy < f->oh; oy++)
            st_cvt_row_from_f32(y->dtype, yp + oy * yr * (int64_t)ey, yc, v + oy * f->pw, f->ow);
        st_scratch_give(buf);
        return;
    }
    for (int64_t oy = 0; oy < f->oh; oy++) {
        for (int64_t ox = 0; ox < f->ow; ox++) acc[ox] = pad;
        for (int64_t ky = 0; ky < f->kh; ky++) {
            const float *src = buf + (oy * f->sy + ky * f->dy) * f->pw;
            for (int64_t kx = 0; kx < f->kw; kx++) {
                if (is_max) row_max(acc, src + kx * f->dx, f->ow, f->sx);
                else row_add(acc, src + kx * f->dx, f->ow, f->sx);
            }
        }
        if (is_max) memcpy(out, acc, (size_t)f->ow * sizeof *out);
        else
            for (int64_t ox = 0; ox < f->ow; ox++) out[ox] = acc[ox] / (f->cnt[oy] * f->cnt[f->oh + ox]);
        st_cvt_row_from_f32(y->dtype, yp + oy * yr * (int64_t)ey, yc, out, f->ow);
    }
    st_scratch_give(buf);
}

/* Taps of a window along one dim that a pool's average divides by. */
static float pool_count(const st_conv_state *s, int i, int64_t o, int64_t in)
{
    int64_t start = o * s->s[i] - s->pb[i], n = 0;
    if (s->count_include_pad) {
        int64_t lim = start + (s->k[i] - 1) * s->d[i] + 1, hi = in + s->pe[i];
        return (float)(((lim < hi ? lim : hi) - start + s->d[i] - 1) / s->d[i]);
    }
    for (int64_t k = 0; k < s->k[i]; k++) {
        int64_t pos = start + k * s->d[i];
        n += pos >= 0 && pos < in;
    }
    return (float)n;
}

static bool pool_fast(const st_kctx *k, st_status *err)
{
    const st_conv_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (s->nsp > 2 || s->p || (k->n_out > 1 && k->out[1].data)) return false;
    if (!(x->dtype == ST_F32 || x->dtype == ST_F16 || x->dtype == ST_BF16) || y->dtype != x->dtype) return false;
    fpool f = {0};
    f.s = s;
    f.x = x;
    f.y = y;
    bool two = s->nsp == 2;
    f.xd = two ? 3 : 2;
    f.h = two ? x->sizes[2] : 1;
    f.w = x->sizes[f.xd];
    f.oh = two ? y->sizes[2] : 1;
    f.ow = y->sizes[f.xd];
    f.kh = two ? s->k[0] : 1;
    f.kw = s->k[s->nsp - 1];
    f.sy = two ? s->s[0] : 1;
    f.sx = s->s[s->nsp - 1];
    f.dy = two ? s->d[0] : 1;
    f.dx = s->d[s->nsp - 1];
    f.pt = two ? s->pb[0] : 0;
    f.pl = s->pb[s->nsp - 1];
    f.global = f.oh == 1 && f.ow == 1 && f.kh == f.h && f.kw == f.w && f.pt == 0 && f.pl == 0 && f.dy == 1 &&
               f.dx == 1 && s->pe[0] == 0 && (!two || s->pe[1] == 0);
    /* the padded plane covers every window, ceil_mode overhangs included */
    f.ph = (f.oh - 1) * f.sy + (f.kh - 1) * f.dy + 1;
    f.pw = (f.ow - 1) * f.sx + (f.kw - 1) * f.dx + 1;
    if (f.ph < f.h + f.pt) f.ph = f.h + f.pt;
    if (f.pw < f.w + f.pl) f.pw = f.w + f.pl;
    if (!s->is_max && !f.global) {
        f.cnt = st_scratch_take((size_t)(f.oh + f.ow) * sizeof *f.cnt);
        if (!f.cnt) {
            *err = st_error(ST_ERR_NOMEM, "out of memory in a pool");
            return true;
        }
        for (int64_t o = 0; o < f.oh; o++) f.cnt[o] = two ? pool_count(s, 0, o, f.h) : 1.0f;
        for (int64_t o = 0; o < f.ow; o++) f.cnt[f.oh + o] = pool_count(s, s->nsp - 1, o, f.w);
    }
    f.err = ST_OK;
    st_parallel_for(k->pool, x->sizes[0] * x->sizes[1], fpool_plane, &f);
    st_scratch_give(f.cnt);
    *err = f.err;
    return true;
}

st_status st_cpu_pool(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    pool_job j = {s, &k->in[0], &k->out[0], k->n_out > 1 && k->out[1].data ? &k->out[1] : NULL, {0}, {0}, 1};
    for (int i = 0; i < s->nsp; i++) {
        j.in_sp[i] = j.x->sizes[2 + i];
        j.out_sp[i] = j.y->sizes[2 + i];
        j.pixels *= j.out_sp[i];
    }
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_status err;
    if (pool_fast(k, &err)) return err;
    st_parallel_for(k->pool, j.x->sizes[0] * j.x->sizes[1], pool_plane, &j);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_pool[] = {
    {"MaxPool", "", ST_DT_ALL, st_cpu_pool, NULL, NULL, NULL},
    {"AveragePool", "", ST_DT_ALL, st_cpu_pool, NULL, NULL, NULL},
    {"GlobalAveragePool", "", ST_DT_ALL, st_cpu_pool, NULL, NULL, NULL},
    {"GlobalMaxPool", "", ST_DT_ALL, st_cpu_pool, NULL, NULL, NULL},
    {"LpPool", "", ST_DT_ALL, st_cpu_pool, NULL, NULL, NULL},
    {"GlobalLpPool", "", ST_DT_ALL, st_cpu_pool, NULL, NULL, NULL},
    {NULL}
};
