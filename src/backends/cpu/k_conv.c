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

#include "backends/cpu/clones.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "ops/conv.h"

#define ST_CONV_TILE 512

typedef struct conv_job {
    const st_kctx *k;
    const st_conv_state *s;
    const st_operand *x, *w, *b, *y;
    st_mat wm;                       /* all weights as [M, C/g * K] */
    st_gemm_epi epi;                 /* bias, fused affines and activation, per output channel */
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
    for (int64_t m = 0; m < j->mg; m++) st_gemm_epi_row(&j->epi, g * j->mg + m, dst + m * ldc, np);
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


/* ---- the AVX-512 path: implicit GEMM on a staged input ---- */

/*
 * Work is split into tasks of (image, group, band, block of output
 * channels).  A band is a run of output rows; the task first *stages* the
 * input rows its band reads, for the group's channels, into an f32 buffer
 * small enough to stay in L2: padded, and split into stride phases, so that
 * phase (ry, rx) of channel c holds Xpad[i * sy + ry][q * sx + rx] at
 * [i * pws + q] (Xpad: the input with its begin pads, i counted from the
 * band's first row).  In those coordinates every kernel tap (c, ky, kx)
 * reads a *contiguous* run of the staged plane for a run of consecutive
 * output positions p = oy * pws + ox: the tap's B row is the plane shifted
 * by a constant, off[k].  The GEMM reads B in place (no im2col, no index
 * arithmetic per element) and every conv becomes a stride-1 one.  Output
 * positions with ox >= ow (pws - ow per row) are computed and dropped when
 * a tile is copied out; where pws == ow and the output's pixels are packed
 * f32 the kernel stores straight into it.
 * A 1x1 stride-1 unpadded conv stages runs of pixels instead of rows (a
 * plain copy, which also keeps the GEMM's B rows off the 4 KB-aliased
 * strides of large planes).  Staging reads the input once (plus a band's
 * halo), whatever its strides and float dtype.
 */

#define ST_FCONV_TILE 192          /* output positions per GEMM call: 4 panels */
#define ST_FCONV_STAGE 196608      /* floats a band's staging may take (768 KB) */
#define ST_FCONV_MIN_TASKS 16
/* Output channels are split only below this many (image, group, band)
 * units: each split stages the band again, and 8 or more equal tasks share
 * out well on two cores (the 40x40 and 20x20 stride-2 convs, 10 to 14
 * bands, -6 to -13% without the second staging). */
#define ST_FCONV_MIN_UNITS 8
/* Outputs a depthwise task aims at (several channels of a small plane). */
#define ST_DW_TASK_ELEMS 16384

typedef struct fconv {
    const st_conv_state *s;
    const st_operand *x, *y;
    const float *w;            /* [M, K] row-major, row stride lda */
    int64_t lda, K;
    st_gemm_epi epi;           /* per output channel */
    int64_t N, G, cg, mg, C;
    int64_t h, w_, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    int xd;                    /* index of the innermost spatial dim */
    bool pointwise, x_direct, y_direct, rows_direct, depthwise;
    int64_t qy, qx;            /* the largest tap shift in staged rows and columns */
    int64_t pws;               /* staged row width (positions per output row) */
    int64_t band;              /* output rows per band (pointwise: positions) */
    int64_t bands, plane, chan;/* staged floats per phase plane and per channel */
    int64_t *off;              /* per k (c, ky, kx) of a group */
    int64_t stage_floats, mchunk, mchunks, mblocks;
    int64_t dwc;               /* depthwise: channels per task */
    /* Winograd F(2x2, 3x3) (st_conv_state.wino_u set at plan time) */
    const float *wu;
    int wn;                           /* outputs per tile side: 2 or 4 */
    int64_t tiles_x, lqp, tp, wtr;    /* tile columns, staged row stride, tile stride, tile rows per band */
    st_status err;
} fconv;

/* aligned_alloc wants a size that is a multiple of the alignment (C11) */
static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static size_t stage_bytes(const fconv *f) { return (size_t)(f->stage_floats + f->pws + 64) * sizeof(float); }

/* Stages channels [c0, c0 + cg) of image n for the band starting at output
 * row (pointwise: position) b0 into dst. */
static void stage_band(const fconv *f, int64_t n, int64_t c0, int64_t b0, float *dst)
{
    const st_operand *x = f->x;
    size_t es = st_dtype_size(x->dtype);
    int64_t rs = f->xd == 3 ? x->strides[2] : 0, cs = x->strides[f->xd];
    bool f32 = x->dtype == ST_F32;
    for (int64_t c = 0; c < f->cg; c++) {
        const char *xc = (const char *)x->data + (n * x->strides[0] + (c0 + c) * x->strides[1]) * (int64_t)es;
        float *dc = dst + c * f->chan;
        if (f->pointwise) {
            /* positions [b0, b0 + band) of the plane, row segment by row segment */
            int64_t p1 = b0 + f->band < f->h * f->w_ ? b0 + f->band : f->h * f->w_;
            for (int64_t p = b0; p < p1;) {
                int64_t iy = p / f->w_, ix = p % f->w_, len = f->w_ - ix < p1 - p ? f->w_ - ix : p1 - p;
                const char *xr = xc + (iy * rs + ix * cs) * (int64_t)es;
                float *d = dc + (p - b0);
                if (f32 && cs == 1) memcpy(d, xr, (size_t)len * sizeof *d);
                else if (f32)
                    for (int64_t q = 0; q < len; q++) d[q] = ((const float *)xr)[q * cs];
                else
                    for (int64_t q = 0; q < len; q++) d[q] = st_load_f32(x->dtype, xr + q * cs * (int64_t)es);
                p += len;
            }
            continue;
        }
        int64_t rows = f->oh - b0 < f->band ? f->oh - b0 : f->band;
        if (f32 && cs == 1 && f->sx == 2) {
            /* both column phases of each input row in one pass */
            for (int64_t ry = 0; ry < f->sy; ry++) {
                float *pe = dc + (ry * 2) * f->plane, *po = pe + f->plane;
                for (int64_t i = 0; i < rows + f->qy; i++) {
                    int64_t iy = (b0 + i) * f->sy + ry - f->pt;
                    float *re = pe + i * f->pws, *ro = po + i * f->pws;
                    if (iy < 0 || iy >= f->h) {
                        memset(re, 0, (size_t)f->pws * sizeof *re);
                        memset(ro, 0, (size_t)f->pws * sizeof *ro);
                    } else {
                        st_split2((const float *)(xc + iy * rs * (int64_t)es), f->w_, -f->pl, re, ro, f->pws);
                    }
                }
            }
            continue;
        }
        for (int64_t ry = 0; ry < f->sy; ry++)
            for (int64_t rx = 0; rx < f->sx; rx++) {
                float *pl = dc + (ry * f->sx + rx) * f->plane;
                /* ix = q * sx + rx - pl lies in [0, w) for q in [qlo, qhi) */
                int64_t first = f->pl - rx, qlo = first <= 0 ? 0 : (first + f->sx - 1) / f->sx;
                int64_t qhi = (f->w_ + f->pl - rx + f->sx - 1) / f->sx;
                if (qlo > f->pws) qlo = f->pws;
                if (qhi > f->pws) qhi = f->pws;
                if (qhi < qlo) qhi = qlo;
                int64_t ix0 = qlo * f->sx + rx - f->pl;
                for (int64_t i = 0; i < rows + f->qy; i++) {
                    float *row = pl + i * f->pws;
                    int64_t iy = (b0 + i) * f->sy + ry - f->pt;
                    if (iy < 0 || iy >= f->h) {
                        memset(row, 0, (size_t)f->pws * sizeof *row);
                        continue;
                    }
                    memset(row, 0, (size_t)qlo * sizeof *row);
                    const char *xr = xc + (iy * rs + ix0 * cs) * (int64_t)es;
                    if (f32 && cs == 1 && f->sx == 1) {
                        memcpy(row + qlo, xr, (size_t)(qhi - qlo) * sizeof *row);
                    } else if (f32) {
                        const float *xf = (const float *)xr;
                        int64_t step = f->sx * cs;
                        for (int64_t q = qlo; q < qhi; q++) row[q] = xf[(q - qlo) * step];
                    } else {
                        for (int64_t q = qlo; q < qhi; q++)
                            row[q] = st_load_f32(x->dtype, xr + (q - qlo) * f->sx * cs * (int64_t)es);
                    }
                    memset(row + qhi, 0, (size_t)(f->pws - qhi) * sizeof *row);
                }
            }
    }
}

/* Copies rows [0, mrows) of a tile (row stride ldc in c) of band-local
 * positions [p0, p0 + np) of band b0 to channels m0.. of image n of y,
 * dropping the pad columns. */
static void copy_out(const fconv *f, int64_t n, int64_t b0, int64_t m0, int64_t mrows, int64_t p0, int64_t np,
                     const float *c, int64_t ldc)
{
    const st_operand *y = f->y;
    size_t ey = st_dtype_size(y->dtype);
    int64_t rs = f->xd == 3 ? y->strides[2] : 0, cs = y->strides[f->xd];
    for (int64_t m = 0; m < mrows; m++) {
        char *yc = (char *)y->data + (n * y->strides[0] + (m0 + m) * y->strides[1]) * (int64_t)ey;
        const float *cr = c + m * ldc - p0;
        if (f->pointwise) {
            /* positions are pixels: b0 + p */
            for (int64_t p = p0; p < p0 + np;) {
                int64_t g = b0 + p, oy = g / f->ow, ox = g % f->ow, len = f->ow - ox < p0 + np - p ? f->ow - ox : p0 + np - p;
                char *yr = yc + (oy * rs + ox * cs) * (int64_t)ey;
                if (y->dtype == ST_F32 && cs == 1) memcpy(yr, cr + p, (size_t)len * sizeof(float));
                else
                    for (int64_t q = 0; q < len; q++) st_store_f32(y->dtype, yr + q * cs * (int64_t)ey, cr[p + q]);
                p += len;
            }
            continue;
        }
        for (int64_t r = p0 / f->pws; r * f->pws < p0 + np; r++) {
            int64_t a = r * f->pws > p0 ? r * f->pws : p0, b = r * f->pws + f->ow;
            if (b > p0 + np) b = p0 + np;
            if (b <= a) continue;
            int64_t ox = a - r * f->pws;
            char *yr = yc + ((b0 + r) * rs + ox * cs) * (int64_t)ey;
            if (y->dtype == ST_F32 && cs == 1) memcpy(yr, cr + a, (size_t)(b - a) * sizeof(float));
            else
                for (int64_t q = a; q < b; q++) st_store_f32(y->dtype, yr + (q - a) * cs * (int64_t)ey, cr[q]);
        }
    }
}

static void fconv_task(void *arg, int64_t t)
{
    fconv *f = arg;
    int64_t mc = t % f->mchunks, band = (t / f->mchunks) % f->bands, ng = t / (f->mchunks * f->bands);
    int64_t n = ng / f->G, g = ng % f->G;
    int64_t m0 = mc * f->mchunk, mrows = f->mg - m0 < f->mchunk ? f->mg - m0 : f->mchunk;
    int64_t b0 = band * f->band, npos;
    if (f->pointwise) npos = f->h * f->w_ - b0 < f->band ? f->h * f->w_ - b0 : f->band;
    else npos = (f->oh - b0 < f->band ? f->oh - b0 : f->band) * f->pws;
    if (mrows <= 0 || npos <= 0) return;
    float *stage = alloc64(stage_bytes(f));
    bool direct = f->y_direct || f->rows_direct;
    float *cbuf = direct ? NULL : alloc64((size_t)(mrows * ST_FCONV_TILE) * sizeof(float));
    if (!stage || (!direct && !cbuf)) {
        free(stage);
        free(cbuf);
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return;
    }
    const float *bbase = stage;
    if (f->x_direct) bbase = (const float *)f->x->data + n * f->x->strides[0] + g * f->cg * f->x->strides[1] + b0;
    else stage_band(f, n, g * f->cg, b0, stage);
    int64_t mabs = g * f->mg + m0;
    st_gemm_epi epi = f->epi;
    if (epi.scale) epi.scale += mabs;
    if (epi.shift) epi.shift += mabs;
    if (epi.post_scale) epi.post_scale += mabs, epi.post_shift += mabs;
    /* the packed blocks of this group's channels m0.. */
    const float *a = f->w + (g * f->mblocks + m0 / ST_GEMM_MR) * -f->lda;
    int64_t kcb = st_gemm_kc(f->K);
    if (f->rows_direct) {
        /* one output row at a time, stored straight into y's row */
        int64_t yr = f->xd == 3 ? f->y->strides[2] : 0;
        for (int64_t r = 0; r < npos / f->pws; r++) {
            float *c = (float *)f->y->data + n * f->y->strides[0] + mabs * f->y->strides[1] + (b0 + r) * yr;
            for (int64_t k0 = 0; k0 < f->K; k0 += kcb) {
                int64_t kc = f->K - k0 < kcb ? f->K - k0 : kcb;
                st_gemm_b b = {bbase + r * f->pws, f->off + k0, ST_GEMM_NR};
                st_gemm_block(a + k0 * ST_GEMM_MR, f->lda, &b, kc, mrows, f->ow, c, f->y->strides[1], k0 > 0,
                              k0 + kc >= f->K ? &epi : NULL);
            }
        }
        free(stage);
        free(cbuf);
        return;
    }
    for (int64_t p0 = 0; p0 < npos; p0 += ST_FCONV_TILE) {
        int64_t np = npos - p0 < ST_FCONV_TILE ? npos - p0 : ST_FCONV_TILE;
        float *c;
        int64_t ldc;
        if (f->y_direct) {
            /* pws == ow: band-local position p is pixel b0 * ow + p (pointwise: b0 + p) */
            int64_t pix = (f->pointwise ? b0 : b0 * f->ow) + p0;
            c = (float *)f->y->data + n * f->y->strides[0] + mabs * f->y->strides[1] + pix;
            ldc = f->y->strides[1];
        } else {
            c = cbuf;
            ldc = ST_FCONV_TILE;
        }
        if (f->K == 0) {
            st_gemm_b none = {bbase, f->off, ST_GEMM_NR};
            st_gemm_block(a, f->lda, &none, 0, mrows, np, c, ldc, false, &epi);
        }
        for (int64_t k0 = 0; k0 < f->K; k0 += kcb) {
            int64_t kc = f->K - k0 < kcb ? f->K - k0 : kcb;
            st_gemm_b b = {bbase + p0, f->off + k0, ST_GEMM_NR};
            st_gemm_block(a + k0 * ST_GEMM_MR, f->lda, &b, kc, mrows, np, c, ldc, k0 > 0,
                          k0 + kc >= f->K ? &epi : NULL);
        }
        if (!f->y_direct) copy_out(f, n, b0, mabs, mrows, p0, np, cbuf, ldc);
    }
    free(stage);
    free(cbuf);
}

/* Depthwise: a task per (image, channel, band) stages its rows and runs the
 * taps as shifted vector FMAs, one output row at a time. */
static void dw_task(void *arg, int64_t t)
{
    fconv *f = arg;
    int64_t cgroups = (f->C + f->dwc - 1) / f->dwc;
    int64_t band = t % f->bands, ci = t / f->bands, n = ci / cgroups, c0 = ci % cgroups * f->dwc;
    int64_t c1 = c0 + f->dwc < f->C ? c0 + f->dwc : f->C;
    int64_t b0 = band * f->band, rows = f->oh - b0 < f->band ? f->oh - b0 : f->band;
    float *st = alloc64(stage_bytes(f) + (size_t)(f->ow + 16) * sizeof(float));
    if (!st) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return;
    }
    float *row = st + (stage_bytes(f) / sizeof(float));
    const st_operand *y = f->y;
    size_t ey = st_dtype_size(y->dtype);
    int64_t rs = f->xd == 3 ? y->strides[2] : 0, cs = y->strides[f->xd];
    bool direct = y->dtype == ST_F32 && cs == 1;
    for (int64_t c = c0; c < c1; c++) {
        stage_band(f, n, c, b0, st);
        char *yc = (char *)y->data + (n * y->strides[0] + c * y->strides[1]) * (int64_t)ey;
        st_gemm_epi epi = f->epi;
        if (epi.scale) epi.scale += c;
        if (epi.shift) epi.shift += c;
        if (epi.post_scale) epi.post_scale += c, epi.post_shift += c;
        for (int64_t r = 0; r < rows; r++) {
            int64_t oy = b0 + r;
            float *out = direct ? (float *)(yc + oy * rs * (int64_t)ey) : row;
            st_dw_row(st + r * f->pws, f->off, f->K, f->w + c * f->lda, &epi, f->ow, out);
            if (!direct)
                for (int64_t ox = 0; ox < f->ow; ox++)
                    st_store_f32(y->dtype, yc + (oy * rs + ox * cs) * (int64_t)ey, row[ox]);
        }
    }
    free(st);
}

/* ---- Winograd F(2x2, 3x3) for 3x3 stride-1 convs ---- */

/*
 * Each 2x2 block of outputs (a tile) is A^T [U (.) V] A, where V = B^T d B
 * is the tile's 4x4 input patch transformed (additions only), U = G g G^T
 * the 3x3 filter transformed (at plan time, passes/fuse_cpu.c), and (.)
 * runs as 16 GEMMs, one per position xi of the 4x4: out-channels x
 * in-channels times in-channels x tiles.  That is 16 multiply-adds per 4
 * outputs per channel pair instead of 36, 2.25 times fewer.
 * A task takes (image, group, band of 2 * wtr output rows, block of output
 * channels): it stages the band's input rows split into even and odd
 * columns (a tile's 4 columns are then the 2 even and 2 odd values at q
 * and q + 1), transforms them into V [16][cg][tiles], runs the GEMMs into
 * M [16][mrows][tiles] and transforms M into the outputs with the
 * epilogue.  Tiles are aligned to even rows and columns of the whole
 * output, whatever the band, so the split changes no bits.
 */

static void wino_task(void *arg, int64_t t)
{
    fconv *f = arg;
    int wn = f->wn, al = wn + 2, xis = al * al;
    int64_t mc = t % f->mchunks, band = (t / f->mchunks) % f->bands, ng = t / (f->mchunks * f->bands);
    int64_t n = ng / f->G, g = ng % f->G;
    int64_t m0 = mc * f->mchunk, mrows = f->mg - m0 < f->mchunk ? f->mg - m0 : f->mchunk;
    int64_t oy0 = band * wn * f->wtr, rows = f->oh - oy0 < wn * f->wtr ? f->oh - oy0 : wn * f->wtr;
    if (mrows <= 0 || rows <= 0) return;
    int64_t tr = (rows + wn - 1) / wn, nt = tr * f->tiles_x, rin = wn * tr + 2, cg = f->cg;
    size_t st_f = (size_t)(cg * rin * wn * f->lqp), v_f = (size_t)(xis * cg * f->tp), m_f = (size_t)(xis * mrows * f->tp);
    float *buf = aligned_alloc(64, ((st_f + v_f + m_f + 4 * (size_t)f->ow + 64) * sizeof(float) + 63) / 64 * 64);
    if (!buf) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return;
    }
    float *S = buf, *V = S + st_f, *Mb = V + v_f, *tmp = Mb + m_f;
    /* stage: rows oy0 - pt .. of each channel, split into wn column phases
     * of the padded row (phase j, column q: padded column wn * q + j) */
    const st_operand *x = f->x;
    size_t es = st_dtype_size(x->dtype);
    int64_t xrs = x->strides[2], xcs = x->strides[3], lq = f->tiles_x + 1;
    for (int64_t c = 0; c < cg; c++) {
        const char *xc = (const char *)x->data + (n * x->strides[0] + (g * cg + c) * x->strides[1]) * (int64_t)es;
        for (int64_t r = 0; r < rin; r++) {
            float *ph = S + ((c * rin + r) * wn) * f->lqp;
            int64_t iy = oy0 + r - f->pt;
            if (iy < 0 || iy >= f->h) {
                memset(ph, 0, (size_t)(wn * f->lqp) * sizeof *ph);
            } else if (x->dtype == ST_F32 && xcs == 1) {
                const float *xr = (const float *)(xc + iy * xrs * (int64_t)es);
                if (wn == 2) st_split2(xr, f->w_, -f->pl, ph, ph + f->lqp, lq);
                else st_split4(xr, f->w_, -f->pl, ph, ph + f->lqp, ph + 2 * f->lqp, ph + 3 * f->lqp, lq);
            } else {
                for (int64_t q = 0; q < lq; q++)
                    for (int j = 0; j < wn; j++) {
                        int64_t ix = wn * q + j - f->pl;
                        ph[j * f->lqp + q] =
                            ix >= 0 && ix < f->w_ ? st_load_f32(x->dtype, xc + (iy * xrs + ix * xcs) * (int64_t)es) : 0.0f;
                    }
            }
        }
    }
    /* V = B^T d B */
    for (int64_t c = 0; c < cg; c++)
        for (int64_t i = 0; i < tr; i++) {
            float *v = V + c * f->tp + i * f->tiles_x;
            if (wn == 2) {
                const float *e[4], *o[4];
                for (int r = 0; r < 4; r++) {
                    e[r] = S + ((c * rin + 2 * i + r) * 2) * f->lqp;
                    o[r] = e[r] + f->lqp;
                }
                st_wino_in_row(e, o, v, cg * f->tp, f->tiles_x);
            } else {
                const float *ph[24];
                for (int r = 0; r < 6; r++)
                    for (int j = 0; j < 4; j++) ph[4 * r + j] = S + ((c * rin + 4 * i + r) * 4 + j) * f->lqp;
                st_wino4_in_row(ph, v, cg * f->tp, f->tiles_x);
            }
        }
    /* M[xi] = U[xi] V[xi] */
    int64_t kcb = st_gemm_kc(cg);
    for (int64_t xi = 0; xi < xis; xi++) {
        const float *a = f->wu + ((xi * f->G + g) * f->mblocks + m0 / ST_GEMM_MR) * cg * ST_GEMM_MR;
        float *c = Mb + xi * mrows * f->tp;
        for (int64_t k0 = 0; k0 < cg; k0 += kcb) {
            int64_t kc = cg - k0 < kcb ? cg - k0 : kcb;
            st_gemm_b b = {V + (xi * cg + k0) * f->tp, f->off, ST_GEMM_NR};
            st_gemm_block(a + k0 * ST_GEMM_MR, -(cg * ST_GEMM_MR), &b, kc, mrows, nt, c, f->tp, k0 > 0, NULL);
        }
    }
    /* outputs: A^T M A and the epilogue */
    const st_operand *y = f->y;
    size_t ey = st_dtype_size(y->dtype);
    int64_t yrs = y->strides[2], ycs = y->strides[3];
    bool direct = y->dtype == ST_F32 && ycs == 1;
    int64_t mabs = g * f->mg + m0;
    for (int64_t m = 0; m < mrows; m++) {
        st_gemm_epi epi = f->epi;
        if (epi.scale) epi.scale += mabs + m;
        if (epi.shift) epi.shift += mabs + m;
        if (epi.post_scale) epi.post_scale += mabs + m, epi.post_shift += mabs + m;
        char *yc = (char *)y->data + (n * y->strides[0] + (mabs + m) * y->strides[1]) * (int64_t)ey;
        for (int64_t i = 0; i < tr; i++) {
            int64_t oy = oy0 + wn * i, have = rows - wn * i < wn ? rows - wn * i : wn;
            float *r[4] = {NULL, NULL, NULL, NULL};
            for (int a = 0; a < have; a++) r[a] = direct ? (float *)(yc + (oy + a) * yrs * (int64_t)ey) : tmp + a * f->ow;
            const float *mm = Mb + m * f->tp + i * f->tiles_x;
            if (wn == 2) st_wino_out_rows(mm, mrows * f->tp, f->tiles_x, &epi, r[0], r[1], f->ow);
            else st_wino4_out_rows(mm, mrows * f->tp, f->tiles_x, &epi, r, f->ow);
            if (!direct)
                for (int a = 0; a < have; a++)
                    for (int64_t ox = 0; ox < f->ow; ox++)
                        st_store_f32(y->dtype, yc + ((oy + a) * yrs + ox * ycs) * (int64_t)ey, tmp[a * f->ow + ox]);
        }
    }
    free(buf);
}

/* Budget of one Winograd task's buffers (staged rows, V, M), in floats:
 * 3 MB, more than L2 (2 MB) holds.  Measured against 0.5, 1 and 2 MB
 * (bench/RESULTS.md, issue 9, attempt 9): the 80x80 layers run 10-15%
 * faster with bands of 4 tile rows and one channel block than with the
 * 2-row bands and channel splits a 1 MB budget forces, since each band
 * stages its halo rows and each channel block its input again; 0.5 MB was
 * slower still. */
#define ST_WINO_BUDGET 786432

static bool conv_wino(const st_kctx *k, fconv *f, st_status *err)
{
    f->wu = f->s->wino_u;
    f->wn = f->s->wino_n == 4 ? 4 : 2;
    int64_t wn = f->wn, xis = (wn + 2) * (wn + 2);
    f->tiles_x = (f->ow + wn - 1) / wn;
    f->lqp = (f->tiles_x + 1 + 15) / 16 * 16;
    f->mblocks = (f->mg + ST_GEMM_MR - 1) / ST_GEMM_MR;
    /* The split: tile rows per band (tr) and blocks of output channels
     * (mchunk), chosen by an estimate of the time on two cores.  Larger
     * bands fill the GEMM's panels (a row of 5 or 10 tiles alone leaves
     * most of a 16-wide vector idle) but make fewer tasks; more output
     * channel blocks make more tasks but each stages and transforms the
     * band's input again.  The estimate, in cycles: the GEMMs (vectors of
     * 16 tiles, 48-wide panels then a 16- or 32-wide rest, two FMAs a
     * cycle), the input transform and staging per channel and tile row,
     * and a fixed cost per task; the makespan of equal tasks on two
     * workers.  The buffers (staged rows, V, M) stay within the budget.
     * A fixed function of the shapes: the split never depends on the
     * thread count, and no split changes a bit of the result (tiles are
     * aligned to the whole output, each product's sum runs over all the
     * input channels in order). */
    int64_t trows = (f->oh + wn - 1) / wn, lgroups = (f->tiles_x + 15) / 16;
    double best = -1;
    f->wtr = 1;
    f->mchunk = f->mblocks * ST_GEMM_MR;
    for (int64_t tr = 1; tr <= trows; tr++) {
        int64_t nt = tr * f->tiles_x, bands = (trows + tr - 1) / tr;
        for (int64_t chunks = 1; chunks <= f->mblocks; chunks++) {
            int64_t mchunk = (f->mblocks + chunks - 1) / chunks * ST_GEMM_MR;
            if (chunks > 1 && (f->mblocks + chunks - 2) / (chunks - 1) * ST_GEMM_MR == mchunk) continue;
            int64_t nch = (f->mg + mchunk - 1) / mchunk;
            int64_t floats = wn * wn * f->cg * f->lqp * tr + xis * (f->cg + mchunk) * nt;
            if (floats > ST_WINO_BUDGET && !(tr == 1 && chunks == f->mblocks)) continue;
            /* a full band's task, and the last band's (fewer tile rows) */
            double cost[2];
            for (int last = 0; last < 2; last++) {
                int64_t r = last ? trows - (bands - 1) * tr : tr, n = r * f->tiles_x;
                int64_t vecs = n / ST_GEMM_NR * (ST_GEMM_NR / 16) + (n % ST_GEMM_NR + 15) / 16;
                double gemm = 0.5 * (double)(xis * f->cg * mchunk * vecs);
                double tin = (double)(f->cg * r * lgroups) * (wn == 4 ? 130.0 : 60.0) +
                             (double)(f->cg * (wn * r + 2) * (lgroups + 1)) * 12.0;
                cost[last] = gemm + tin + 3000.0;
            }
            /* list scheduling on two workers: at most half the total plus
             * half the longest task */
            int64_t per = f->N * f->G * nch;
            double total = (double)per * ((double)(bands - 1) * cost[0] + cost[1]);
            double span = total / 2 + (cost[0] > cost[1] ? cost[0] : cost[1]) / 2;
            if (best < 0 || span < best - 1e-9) {
                best = span;
                f->wtr = tr;
                f->mchunk = mchunk;
            }
        }
    }
    f->bands = (f->oh + wn * f->wtr - 1) / (wn * f->wtr);
    f->tp = (f->wtr * f->tiles_x + 15) / 16 * 16;
    if (f->tp % 1024 == 0) f->tp += 16;
    int64_t units = f->N * f->G * f->bands;
    f->mchunks = (f->mg + f->mchunk - 1) / f->mchunk;
    int64_t kcb = st_gemm_kc(f->cg);
    f->off = malloc((size_t)kcb * sizeof *f->off);
    if (!f->off) {
        *err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return true;
    }
    for (int64_t c = 0; c < kcb; c++) f->off[c] = c * f->tp;
    f->err = ST_OK;
    st_parallel_for(k->pool, units * f->mchunks, wino_task, f);
    free(f->off);
    *err = f->err;
    return true;
}

/* Runs the conv on the fast path; returns false (having done nothing) when
 * the shapes or dtypes are not ones it takes. */
static bool conv_fast(const st_kctx *k, const conv_job *j, st_status *err)
{
    const st_conv_state *s = j->s;
    const st_operand *x = j->x, *y = j->y;
    if (!st_gemm_fast() || s->nsp > 2 || (!s->packed_w && !s->wino_u && j->wm.cs != 1)) return false;
    if (s->packed_w && j->cg == 1 && j->mg == 1) return false; /* depthwise reads W itself */
    if (!(x->dtype == ST_F32 || x->dtype == ST_F16 || x->dtype == ST_BF16)) return false;
    if (!(y->dtype == ST_F32 || y->dtype == ST_F16 || y->dtype == ST_BF16)) return false;
    fconv f = {0};
    f.s = s;
    f.x = x;
    f.y = y;
    f.w = j->wm.p;
    f.lda = j->wm.rs;
    f.K = j->cg * j->kvol;
    f.epi = j->epi;
    f.N = x->sizes[0];
    f.G = s->group;
    f.cg = j->cg;
    f.mg = j->mg;
    f.C = x->sizes[1];
    bool two = s->nsp == 2;
    f.xd = two ? 3 : 2;
    f.h = two ? x->sizes[2] : 1;
    f.w_ = x->sizes[f.xd];
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
    f.depthwise = j->cg == 1 && j->mg == 1;
    f.pointwise = !f.depthwise && f.kh == 1 && f.kw == 1 && f.sy == 1 && f.sx == 1 && f.pt == 0 && f.pl == 0 &&
                  s->pe[0] == 0 && (!two || s->pe[1] == 0);
    f.qy = (f.kh - 1) * f.dy / f.sy;
    f.qx = (f.kw - 1) * f.dx / f.sx;
    if (s->wino_u && two && f.kh == 3 && f.kw == 3 && f.sy == 1 && f.sx == 1 && f.dy == 1 && f.dx == 1 && !f.depthwise)
        return conv_wino(k, &f, err);
    if (!s->packed_w && !j->wm.p) return false; /* the caller packs W and comes back */
    f.pws = f.pointwise ? f.w_ : f.ow + f.qx;
    int64_t pix = f.h * f.w_;
    if (f.pointwise) {
        /* runs of pixels: within the staging budget, at least a tile, and
         * at least ST_FCONV_MIN_TASKS runs when the plane allows (so that
         * output channels, which would stage again, need not be split) */
        int64_t per = ST_FCONV_STAGE / f.cg / ST_FCONV_TILE * ST_FCONV_TILE;
        int64_t want = pix / ST_FCONV_MIN_TASKS / ST_FCONV_TILE * ST_FCONV_TILE;
        f.band = per < want ? per : want;
        if (f.band < ST_FCONV_TILE) f.band = ST_FCONV_TILE;
        f.bands = (pix + f.band - 1) / f.band;
        f.plane = f.chan = (f.band + 15) / 16 * 16;
    } else {
        /* output rows: as many as the staging budget holds, split further
         * (down to 2 rows) until there are enough tasks; only then are
         * output channels split too, since each split stages again */
        int64_t per_row = f.cg * f.sy * f.sx * f.pws;
        int64_t r = ST_FCONV_STAGE / (per_row > 0 ? per_row : 1) - f.qy;
        if (r < 1) r = 1;
        int64_t want = (f.oh + ST_FCONV_MIN_TASKS - 1) / ST_FCONV_MIN_TASKS;
        if (want < 2) want = 2;
        /* depthwise: a task per channel already makes enough tasks */
        if (f.depthwise && f.N * f.C >= ST_FCONV_MIN_TASKS) want = f.oh;
        f.band = r < want ? r : want;
        if (f.band > f.oh) f.band = f.oh;
        f.bands = (f.oh + f.band - 1) / f.band;
        f.plane = ((f.band + f.qy) * f.pws + 15) / 16 * 16;
        f.chan = f.sy * f.sx * f.plane;
    }
    /* Staged channels an odd number of 64-byte lines apart: the B rows of
     * successive channels then start in different L1 sets (the set is
     * address bits 6-11), instead of a few sets when the spacing is a
     * multiple of 512 bytes or more (YOLO's first conv, 3 channels of 4
     * stride phases: -25%).  Layout only: the sums are unchanged. */
    if (f.chan / 16 % 2 == 0) f.chan += 16;
    if (!f.pointwise && f.sy * f.sx == 1) f.plane = f.chan;
    /* A pointwise conv on packed f32 pixels reads X where it lies (no
     * staging copy), unless its channels lie within 256 bytes of a
     * multiple of 4 KB apart: then the GEMM's B rows would all map to a
     * few L1 sets, and the staged copy, whose channels are spaced to avoid
     * that, is faster */
    if (f.pointwise && x->dtype == ST_F32 && spatial_packed(x, s->nsp)) {
        int64_t mod = (x->strides[1] * 4) % 4096;
        if (mod < 0) mod += 4096;
        if (mod >= 256 && mod <= 3840) {
            f.x_direct = true;
            f.chan = x->strides[1];
        }
    }
    f.stage_floats = f.depthwise ? f.chan : f.cg * f.chan;
    f.off = malloc((size_t)(f.K > 0 ? f.K : 1) * sizeof *f.off);
    if (!f.off) {
        *err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return true;
    }
    for (int64_t kk = 0; kk < f.K; kk++) {
        int64_t c = kk / j->kvol, t = kk % j->kvol, ky = t / f.kw, kx = t % f.kw;
        int64_t vy = ky * f.dy, vx = kx * f.dx;
        f.off[kk] = c * f.chan + ((vy % f.sy) * f.sx + vx % f.sx) * f.plane + (vy / f.sy) * f.pws + vx / f.sx;
    }
    f.err = ST_OK;
    if (f.depthwise) {
        /* channels per task: about ST_DW_TASK_ELEMS outputs each (a task per
         * channel of a small plane, as in PP-OCR rec's 12x80 and 3x80
         * layers, costs more in scheduling and allocation than in
         * arithmetic), while ST_FCONV_MIN_TASKS tasks remain */
        int64_t per = f.band * f.ow > 0 ? ST_DW_TASK_ELEMS / (f.band * f.ow) : 1;
        int64_t cap = f.N * f.C * f.bands / ST_FCONV_MIN_TASKS;
        f.dwc = per < cap ? per : cap;
        if (f.dwc < 1) f.dwc = 1;
        st_parallel_for(k->pool, f.N * ((f.C + f.dwc - 1) / f.dwc) * f.bands, dw_task, &f);
        free(f.off);
        *err = f.err;
        return true;
    }
    f.y_direct = y->dtype == ST_F32 && spatial_packed(y, s->nsp) && f.pws == f.ow;
    /* rows whose width is a multiple of 16 end exactly on a narrower
     * micro-kernel: store them straight into y, row by row, instead of
     * computing the pad columns and copying the tile out */
    f.rows_direct = !f.y_direct && !f.pointwise && y->dtype == ST_F32 && y->strides[f.xd] == 1 && f.ow % 16 == 0 &&
                    f.ow >= ST_GEMM_NR;
    /* blocks of output channels when the bands alone are too few to share
     * out (a fixed rule of the shapes: the split never depends on the
     * thread count) */
    int64_t units = f.N * f.G * f.bands;
    f.mchunks = 1;
    if (units < ST_FCONV_MIN_UNITS) f.mchunks = (ST_FCONV_MIN_UNITS + units - 1) / units;
    int64_t mblocks = (f.mg + ST_GEMM_MR - 1) / ST_GEMM_MR;
    if (f.mchunks > mblocks) f.mchunks = mblocks;
    f.mchunk = (mblocks + f.mchunks - 1) / f.mchunks * ST_GEMM_MR;
    f.mchunks = (f.mg + f.mchunk - 1) / f.mchunk;
    /* A in the GEMM's packed layout (one sequential stream per block of 8
     * output channels): packed once at plan time for constant weights
     * (passes/fuse_cpu.c), else here */
    float *apack = NULL;
    f.mblocks = mblocks;
    if (s->packed_w) {
        f.w = s->packed_w;
    } else {
        apack = aligned_alloc(64, ((size_t)(f.G * mblocks * ST_GEMM_MR * f.K) * sizeof(float) + 63) / 64 * 64);
        if (!apack) {
            free(f.off);
            *err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
            return true;
        }
        for (int64_t g = 0; g < f.G; g++)
            st_gemm_pack_a(f.w + g * f.mg * f.lda, f.lda, f.mg, f.K, apack + g * mblocks * ST_GEMM_MR * f.K);
        f.w = apack;
    }
    f.lda = -(f.K * ST_GEMM_MR);
    st_parallel_for(k->pool, units * f.mchunks, fconv_task, &f);
    free(apack);
    free(f.off);
    *err = f.err;
    return true;
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
    /* the epilogue per output channel: the bias folds into the shift */
    int64_t M = j.y->sizes[1];
    float *shift = NULL;
    if (j.b || s->ch_shift) {
        shift = malloc((size_t)M * sizeof *shift + 1);
        if (!shift) return st_error(ST_ERR_NOMEM, "out of memory in Conv");
        size_t eb = j.b ? st_dtype_size(j.b->dtype) : 0;
        for (int64_t m = 0; shift && m < M; m++) {
            float b = j.b ? st_load_f32(j.b->dtype, (const char *)j.b->data + m * j.b->strides[0] * (int64_t)eb) : 0.0f;
            shift[m] = b * (s->ch_scale ? s->ch_scale[m] : 1.0f) + (s->ch_shift ? s->ch_shift[m] : 0.0f);
        }
    }
    j.epi.scale = s->ch_scale;
    j.epi.shift = shift;
    j.epi.act = s->epi;
    j.epi.post_scale = s->post_scale;
    j.epi.post_shift = s->post_shift;
    st_status r = ST_OK;
    /* weights packed at plan time: the fast path needs nothing else */
    if ((s->packed_w || s->wino_u) && conv_fast(k, &j, &r)) {
        free(shift);
        return r;
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
        if (!wown) {
            free(shift);
            return st_error(ST_ERR_NOMEM, "out of memory in Conv");
        }
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
    r = st_mat_f32(&wv, 0, 1, 0, &j.wm, &wpack);
    if (r != ST_OK) {
        free(shift);
        free(wown);
        return r;
    }
    if (r == ST_OK && conv_fast(k, &j, &r)) {
        free(shift);
        free(wpack);
        free(wown);
        return r;
    }
    if (r != ST_OK) {
        free(shift);
        free(wpack);
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
    free(shift);
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
    const float *xp = (const float *)x->data + n * x->strides[0] + c * x->strides[1];
    float *yp = (float *)y->data + n * y->strides[0] + c * y->strides[1];
    bool is_max = f->s->is_max;
    if (f->global) {
        double r;
        if (xc == 1 && xr == f->w) r = plane_reduce(xp, f->h * f->w, 1, is_max);
        else {
            r = is_max ? -INFINITY : 0.0;
            for (int64_t i = 0; i < f->h; i++) {
                double v = plane_reduce(xp + i * xr, f->w, xc, is_max);
                r = is_max ? (v > r ? v : r) : r + v;
            }
        }
        *yp = (float)(is_max ? r : r / (double)(f->h * f->w));
        return;
    }
    /* a unit-stride max pool (SPPF's 5x5) runs separably: below */
    bool sep = is_max && f->sy == 1 && f->sx == 1 && f->dy == 1 && f->dx == 1;
    int64_t area = f->ph * f->pw;
    float *buf = malloc((size_t)((sep ? 3 : 1) * area + f->ow) * sizeof *buf);
    if (!buf) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in a pool");
        return;
    }
    float *acc = buf + area, pad = is_max ? -INFINITY : 0.0f;
    for (int64_t i = 0; i < f->ph; i++) {
        float *row = buf + i * f->pw;
        int64_t iy = i - f->pt;
        if (iy >= 0 && iy < f->h && xc == 1 && f->pl + f->w <= f->pw) {
            for (int64_t q = 0; q < f->pl; q++) row[q] = pad;
            memcpy(row + f->pl, xp + iy * xr, (size_t)f->w * sizeof *row);
            for (int64_t q = f->pl + f->w; q < f->pw; q++) row[q] = pad;
            continue;
        }
        for (int64_t q = 0; q < f->pw; q++) {
            int64_t ix = q - f->pl;
            row[q] = iy >= 0 && iy < f->h && ix >= 0 && ix < f->w ? xp[iy * xr + ix * xc] : pad;
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
        float *hm = buf + area, *v = hm + area;
        int64_t nh = area - (f->kw - 1), nv = (f->oh - 1) * f->pw + f->ow;
        for (int64_t p = 0; p < nh; p++) hm[p] = pad;
        for (int64_t kx = 0; kx < f->kw; kx++) row_max(hm, buf + kx, nh, 1);
        for (int64_t p = 0; p < nv; p++) v[p] = pad;
        for (int64_t ky = 0; ky < f->kh; ky++) row_max(v, hm + ky * f->pw, nv, 1);
        for (int64_t oy = 0; oy < f->oh; oy++) {
            float *yo = yp + oy * yr;
            if (yc == 1) memcpy(yo, v + oy * f->pw, (size_t)f->ow * sizeof *yo);
            else
                for (int64_t ox = 0; ox < f->ow; ox++) yo[ox * yc] = v[oy * f->pw + ox];
        }
        free(buf);
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
        float *yo = yp + oy * yr;
        if (is_max)
            for (int64_t ox = 0; ox < f->ow; ox++) yo[ox * yc] = acc[ox];
        else
            for (int64_t ox = 0; ox < f->ow; ox++) yo[ox * yc] = acc[ox] / (f->cnt[oy] * f->cnt[f->oh + ox]);
    }
    free(buf);
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
    if (s->nsp > 2 || x->dtype != ST_F32 || y->dtype != ST_F32 || (k->n_out > 1 && k->out[1].data)) return false;
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
        f.cnt = malloc((size_t)(f.oh + f.ow) * sizeof *f.cnt);
        if (!f.cnt) {
            *err = st_error(ST_ERR_NOMEM, "out of memory in a pool");
            return true;
        }
        for (int64_t o = 0; o < f.oh; o++) f.cnt[o] = two ? pool_count(s, 0, o, f.h) : 1.0f;
        for (int64_t o = 0; o < f.ow; o++) f.cnt[f.oh + o] = pool_count(s, s->nsp - 1, o, f.w);
    }
    f.err = ST_OK;
    st_parallel_for(k->pool, x->sizes[0] * x->sizes[1], fpool_plane, &f);
    free(f.cnt);
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
