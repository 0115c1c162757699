/*
 * k_conv.c — CPU Conv (im2col + GEMM) and pooling, 1 to 3 spatial dims.
 *
 * Conv splits work into tasks of (image, group, tile of output pixels).
 * A task gathers its tile's input patches into a column block [C/g * K,
 * P] in f32 (zero where the window hangs over the padding), multiplies the
 * group's weights [M/g, C/g * K] by it, adds the bias, and writes the
 * [M/g, P] result straight into the output when the output's pixels are
 * packed (true for a channel slice of a concat), else through a block that
 * is then stored with the output's strides.  A 1x1 stride-1 unpadded conv
 * reads its input as the column block directly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "ops/conv.h"

#define ST_CONV_TILE 512

typedef struct conv_job {
    const st_kctx *k;
    const st_conv_state *s;
    const st_operand *x, *w, *b, *y;
    st_mat wm;                       /* all weights as [M, C/g * K] */
    int64_t cg, mg, kvol, pixels, tiles;
    int64_t in_sp[3], out_sp[3];
    bool pointwise;                  /* 1x1, stride 1, no pad: X is the column block */
    bool y_packed;                   /* output pixels contiguous and f32 */
    st_status err;
} conv_job;

static bool spatial_packed(const st_operand *o, int nsp)
{
    int64_t s = 1;
    for (int i = nsp - 1; i >= 0; i--) {
        if (o->sizes[2 + i] != 1 && o->strides[2 + i] != s) return false;
        s *= o->sizes[2 + i];
    }
    return true;
}

static void im2col(const conv_job *j, int64_t n, int64_t g, int64_t p0, int64_t np, float *col)
{
    const st_conv_state *s = j->s;
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    int nsp = s->nsp;
    for (int64_t c = 0; c < j->cg; c++) {
        const char *xc = (const char *)x->data + (n * x->strides[0] + (g * j->cg + c) * x->strides[1]) * (int64_t)es;
        for (int64_t kk = 0; kk < j->kvol; kk++) {
            int64_t kidx[3] = {0, 0, 0}, rem = kk;
            for (int i = nsp - 1; i >= 0; i--) {
                kidx[i] = rem % s->k[i];
                rem /= s->k[i];
            }
            float *row = col + (c * j->kvol + kk) * np;
            for (int64_t p = 0; p < np; p++) {
                int64_t oidx[3] = {0, 0, 0}, pr = p0 + p;
                for (int i = nsp - 1; i >= 0; i--) {
                    oidx[i] = pr % j->out_sp[i];
                    pr /= j->out_sp[i];
                }
                int64_t off = 0;
                bool inside = true;
                for (int i = 0; i < nsp; i++) {
                    int64_t pos = oidx[i] * s->s[i] - s->pb[i] + kidx[i] * s->d[i];
                    if (pos < 0 || pos >= j->in_sp[i]) inside = false;
                    off += pos * x->strides[2 + i];
                }
                row[p] = inside ? st_load_f32(x->dtype, xc + off * (int64_t)es) : 0.0f;
            }
        }
    }
}

static void conv_task(void *arg, int64_t t)
{
    conv_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int64_t groups = j->s->group;
    int64_t n = t / (groups * j->tiles), g = (t / j->tiles) % groups, p0 = (t % j->tiles) * ST_CONV_TILE;
    int64_t np = j->pixels - p0 < ST_CONV_TILE ? j->pixels - p0 : ST_CONV_TILE;
    int64_t kdim = j->cg * j->kvol;
    float *col = NULL, *out = NULL;
    st_mat cm;
    if (j->pointwise) {
        /* X's channels of this group, pixels [p0, p0 + np): rows of stride
         * strides[1], unit-stride pixels */
        cm.p = (const float *)x->data + n * x->strides[0] + g * j->cg * x->strides[1] + p0;
        cm.rows = j->cg;
        cm.cols = np;
        cm.rs = x->strides[1];
        cm.cs = 1;
        if (j->cg == 1) cm.rs = np;
    } else {
        col = malloc((size_t)(kdim * np > 0 ? kdim * np : 1) * sizeof *col);
        if (!col) {
            j->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
            return;
        }
        im2col(j, n, g, p0, np, col);
        cm.p = col;
        cm.rows = kdim;
        cm.cols = np;
        cm.rs = np;
        cm.cs = 1;
    }
    st_mat wg = j->wm;
    wg.p += g * j->mg * wg.rs;
    wg.rows = j->mg;
    float *dst;
    int64_t ldc;
    if (j->y_packed) {
        dst = (float *)y->data + n * y->strides[0] + g * j->mg * y->strides[1] + p0;
        ldc = y->strides[1];
        if (j->mg == 1) ldc = np;
    } else {
        out = malloc((size_t)(j->mg * np > 0 ? j->mg * np : 1) * sizeof *out);
        if (!out) {
            free(col);
            j->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
            return;
        }
        dst = out;
        ldc = np;
    }
    st_sgemm(&wg, false, &cm, false, 1.0f, 0.0f, dst, ldc, j->mg, np, kdim);
    for (int64_t m = 0; m < j->mg; m++) {
        float *r = dst + m * ldc;
        if (j->b) {
            size_t eb = st_dtype_size(j->b->dtype);
            float bias = st_load_f32(j->b->dtype, (const char *)j->b->data + (g * j->mg + m) * j->b->strides[0] * (int64_t)eb);
            for (int64_t p = 0; p < np; p++) r[p] += bias;
        }
        st_epilogue_f32(&j->s->epi, r, np);
    }
    if (!j->y_packed) {
        size_t ey = st_dtype_size(y->dtype);
        for (int64_t m = 0; m < j->mg; m++)
            for (int64_t p = 0; p < np; p++) {
                int64_t off = n * y->strides[0] + (g * j->mg + m) * y->strides[1], pr = p0 + p;
                for (int i = j->s->nsp - 1; i >= 0; i--) {
                    off += (pr % j->out_sp[i]) * y->strides[2 + i];
                    pr /= j->out_sp[i];
                }
                st_store_f32(y->dtype, (char *)y->data + off * (int64_t)ey, out[m * np + p]);
            }
    }
    free(col);
    free(out);
}

/* f64: direct loops, for conformance; models run f32/f16/bf16. */
static void conv_f64(const conv_job *j)
{
    const st_conv_state *s = j->s;
    const st_operand *x = j->x, *w = j->w, *y = j->y;
    int nsp = s->nsp;
    for (int64_t n = 0; n < y->sizes[0]; n++)
        for (int64_t m = 0; m < y->sizes[1]; m++) {
            int64_t g = m / j->mg;
            for (int64_t p = 0; p < j->pixels; p++) {
                int64_t oidx[3] = {0, 0, 0}, pr = p;
                for (int i = nsp - 1; i >= 0; i--) {
                    oidx[i] = pr % j->out_sp[i];
                    pr /= j->out_sp[i];
                }
                double acc = j->b ? st_load_f64(j->b->dtype, (const char *)j->b->data + m * j->b->strides[0] * 8) : 0.0;
                for (int64_t c = 0; c < j->cg; c++)
                    for (int64_t kk = 0; kk < j->kvol; kk++) {
                        int64_t kidx[3] = {0, 0, 0}, rem = kk, xo = n * x->strides[0] + (g * j->cg + c) * x->strides[1];
                        int64_t wo = m * w->strides[0] + c * w->strides[1];
                        bool inside = true;
                        for (int i = nsp - 1; i >= 0; i--) {
                            kidx[i] = rem % s->k[i];
                            rem /= s->k[i];
                        }
                        for (int i = 0; i < nsp; i++) {
                            int64_t pos = oidx[i] * s->s[i] - s->pb[i] + kidx[i] * s->d[i];
                            if (pos < 0 || pos >= j->in_sp[i]) inside = false;
                            xo += pos * x->strides[2 + i];
                            wo += kidx[i] * w->strides[2 + i];
                        }
                        if (inside) acc += ((const double *)x->data)[xo] * ((const double *)w->data)[wo];
                    }
                int64_t yo = n * y->strides[0] + m * y->strides[1];
                for (int i = 0; i < nsp; i++) yo += oidx[i] * y->strides[2 + i];
                ((double *)y->data)[yo] = acc;
            }
        }
}

st_status st_cpu_conv(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    conv_job j = {0};
    j.k = k;
    j.s = s;
    j.x = &k->in[0];
    j.w = &k->in[1];
    j.b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    j.y = &k->out[0];
    int nsp = s->nsp;
    j.cg = j.x->sizes[1] / s->group;
    j.mg = j.y->sizes[1] / s->group;
    j.kvol = 1;
    j.pixels = 1;
    for (int i = 0; i < nsp; i++) {
        j.kvol *= s->k[i];
        j.in_sp[i] = j.x->sizes[2 + i];
        j.out_sp[i] = j.y->sizes[2 + i];
        j.pixels *= j.out_sp[i];
    }
    if (st_operand_numel(j.y) == 0) return ST_OK;
    if (j.x->dtype == ST_F64) {
        conv_f64(&j);
        return ST_OK;
    }
    /* weights as a [M, C/g * K] matrix: packed W is already that */
    st_operand wv = *j.w;
    float *wown = NULL;
    bool w_packed = st_operand_is_contiguous(j.w);
    if (w_packed) {
        wv.rank = 2;
        wv.sizes[0] = j.w->sizes[0];
        wv.sizes[1] = j.cg * j.kvol;
        wv.strides[0] = j.cg * j.kvol;
        wv.strides[1] = 1;
    } else {
        /* a strided weight: pack it row-major first */
        size_t n = (size_t)st_operand_numel(j.w);
        wown = malloc(n * sizeof *wown + 1);
        if (!wown) return st_error(ST_ERR_NOMEM, "out of memory in Conv");
        st_view pv;
        st_view_init(&pv, ST_F32, j.w->rank, j.w->sizes);
        st_operand dst = st_operand_of(&pv, wown);
        st_copy_strided(&dst, j.w);
        wv.data = wown;
        wv.dtype = ST_F32;
        wv.rank = 2;
        wv.sizes[0] = j.w->sizes[0];
        wv.sizes[1] = j.cg * j.kvol;
        wv.strides[0] = j.cg * j.kvol;
        wv.strides[1] = 1;
    }
    float *wpack = NULL;
    st_status r = st_mat_f32(&wv, 0, 1, 0, &j.wm, &wpack);
    if (r != ST_OK) {
        free(wown);
        return r;
    }
    bool unit = true;
    for (int i = 0; i < nsp; i++)
        if (s->k[i] != 1 || s->s[i] != 1 || s->pb[i] || s->pe[i]) unit = false;
    j.pointwise = unit && j.x->dtype == ST_F32 && spatial_packed(j.x, nsp);
    j.y_packed = j.y->dtype == ST_F32 && spatial_packed(j.y, nsp);
    j.tiles = (j.pixels + ST_CONV_TILE - 1) / ST_CONV_TILE;
    j.err = ST_OK;
    st_parallel_for(k->pool, j.y->sizes[0] * s->group * j.tiles, conv_task, &j);
    free(wpack);
    free(wown);
    return j.err;
}

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
            } else {
                acc += v;
            }
            count++;
        }
        int64_t yo = n * y->strides[0] + c * y->strides[1];
        for (int i = 0; i < nsp; i++) yo += o[i] * y->strides[2 + i];
        double result = s->is_max ? acc : acc / (double)(s->count_include_pad ? total : (count ? count : 1));
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
    st_parallel_for(k->pool, j.x->sizes[0] * j.x->sizes[1], pool_plane, &j);
    return ST_OK;
}
