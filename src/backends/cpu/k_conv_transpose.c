/*
 * k_conv_transpose.c — the CPU kernel of ConvTranspose (conv family).
 *
 * ConvTranspose is a GEMM then a col2im: per (image, group, block of
 * output channels), W^T [Mb * K, C/g] times a tile of the input pixels
 * [C/g, P] gives every kernel tap's contribution of those pixels, which
 * is added into the output at (input position * stride - pad + tap *
 * dilation).  The block owns its output channels, so tasks never share
 * an output element; they accumulate straight into the output when it
 * is f32 with packed pixels, else into a block stored afterwards.  f64
 * runs a direct loop.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/common/cvt_half.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "ops/conv.h"

/* ---- ConvTranspose ---- */

#define CT_MBLOCK 16                 /* output channels per task */
#define CT_TILE 1024                 /* about this many input pixels per GEMM */

typedef struct ct_job {
    const st_conv_state *s;
    const st_operand *x, *w, *b, *y;
    st_mat wm;                       /* W as [C, M/g * K] */
    int64_t cg, mg, kvol, in_px, out_px, mblocks, tile_rows;
    /* spatial dims padded to 3 with leading unit dims */
    int64_t isz[3], osz[3], k[3], st[3], dl[3], pb[3];
    int64_t xst[3], yst[3];          /* x's and y's spatial strides (0 on padding dims) */
    bool x_direct, y_direct;
    st_status err;
} ct_job;

static bool ct_spatial_packed(const st_operand *o, int nsp)
{
    int64_t s = 1;
    for (int i = nsp - 1; i >= 0; i--) {
        if (o->sizes[2 + i] != 1 && o->strides[2 + i] != s) return false;
        s *= o->sizes[2 + i];
    }
    return true;
}

/* floor(a / b) for b > 0 */
static int64_t floordiv(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Adds the contributions in cols ([mcount * K, rows * isz[2]], for input
 * rows [row0, row0 + rows)) into the channel planes acc[mi]. */
static void col2im(const ct_job *j, const float *cols, int64_t mcount, int64_t row0, int64_t rows, float *const *acc)
{
    int64_t np = rows * j->isz[2], iw_n = j->isz[2], ow_n = j->osz[2];
    for (int64_t mi = 0; mi < mcount; mi++) {
        float *plane = acc[mi];
        for (int64_t kk = 0; kk < j->kvol; kk++) {
            int64_t kw = kk % j->k[2], kh = (kk / j->k[2]) % j->k[1], kd = kk / (j->k[2] * j->k[1]);
            const float *crow = cols + (mi * j->kvol + kk) * np;
            int64_t cw = kw * j->dl[2] - j->pb[2];
            /* input columns whose output column falls inside */
            int64_t lo = cw >= 0 ? 0 : floordiv(-cw + j->st[2] - 1, j->st[2]);
            int64_t hi = ow_n - 1 - cw < 0 ? -1 : floordiv(ow_n - 1 - cw, j->st[2]);
            if (hi > iw_n - 1) hi = iw_n - 1;
            if (lo > hi) continue;
            for (int64_t r = 0; r < rows; r++) {
                int64_t ir = row0 + r, ih = ir % j->isz[1], id = ir / j->isz[1];
                int64_t od = id * j->st[0] - j->pb[0] + kd * j->dl[0];
                int64_t oh = ih * j->st[1] - j->pb[1] + kh * j->dl[1];
                if (od < 0 || od >= j->osz[0] || oh < 0 || oh >= j->osz[1]) continue;
                float *orow = plane + (od * j->osz[1] + oh) * ow_n + cw;
                const float *src = crow + r * iw_n;
                int64_t sw = j->st[2];
                if (sw == 1) {
                    for (int64_t iw = lo; iw <= hi; iw++) orow[iw] += src[iw];
                } else {
                    for (int64_t iw = lo; iw <= hi; iw++) orow[iw * sw] += src[iw];
                }
            }
        }
    }
}

static void ct_task(void *arg, int64_t t)
{
    ct_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int64_t groups = j->s->group;
    int64_t n = t / (groups * j->mblocks), g = (t / j->mblocks) % groups, m0 = (t % j->mblocks) * CT_MBLOCK;
    int64_t mcount = j->mg - m0 < CT_MBLOCK ? j->mg - m0 : CT_MBLOCK;
    int64_t mfirst = g * j->mg + m0;            /* the first output channel */
    float *accbuf = NULL, *cols = NULL, *xbuf = NULL;
    float *acc[CT_MBLOCK];
    if (j->y_direct) {
        for (int64_t mi = 0; mi < mcount; mi++)
            acc[mi] = (float *)y->data + n * y->strides[0] + (mfirst + mi) * y->strides[1];
    } else {
        accbuf = malloc((size_t)(mcount * j->out_px) * sizeof *accbuf);
        if (!accbuf) goto nomem;
        for (int64_t mi = 0; mi < mcount; mi++) acc[mi] = accbuf + mi * j->out_px;
    }
    for (int64_t mi = 0; mi < mcount; mi++) {
        float bias = j->b ? st_load_f32(j->b->dtype, (const char *)j->b->data + (mfirst + mi) * j->b->strides[0] *
                                                                                (int64_t)st_dtype_size(j->b->dtype))
                          : 0.0f;
        for (int64_t p = 0; p < j->out_px; p++) acc[mi][p] = bias;
    }
    int64_t in_rows = j->isz[0] * j->isz[1], max_np = j->tile_rows * j->isz[2];
    if (j->in_px > 0) {
        cols = malloc((size_t)(mcount * j->kvol * max_np) * sizeof *cols);
        if (!cols) goto nomem;
        if (!j->x_direct) {
            xbuf = malloc((size_t)(j->cg * max_np > 0 ? j->cg * max_np : 1) * sizeof *xbuf);
            if (!xbuf) goto nomem;
        }
    }
    st_mat a = j->wm;
    a.p += g * j->cg * a.rs + m0 * j->kvol * a.cs;
    a.rows = j->cg;
    a.cols = mcount * j->kvol;
    size_t ex = st_dtype_size(x->dtype);
    for (int64_t row0 = 0; j->in_px > 0 && row0 < in_rows; row0 += j->tile_rows) {
        int64_t rows = in_rows - row0 < j->tile_rows ? in_rows - row0 : j->tile_rows;
        int64_t np = rows * j->isz[2], p0 = row0 * j->isz[2];
        st_mat bm;
        if (j->x_direct) {
            bm.p = (const float *)x->data + n * x->strides[0] + g * j->cg * x->strides[1] + p0;
            bm.rs = j->cg == 1 ? np : x->strides[1];
        } else {
            for (int64_t c = 0; c < j->cg; c++) {
                const char *xc = (const char *)x->data + (n * x->strides[0] + (g * j->cg + c) * x->strides[1]) * (int64_t)ex;
                float *dst = xbuf + c * np;
                for (int64_t r = 0; r < rows; r++) {
                    int64_t ir = row0 + r, ih = ir % j->isz[1], id = ir / j->isz[1];
                    const char *xr = xc + (id * j->xst[0] + ih * j->xst[1]) * (int64_t)ex;
                    st_cvt_row_to_f32(dst + r * j->isz[2], x->dtype, xr, j->xst[2], j->isz[2]);
                }
            }
            bm.p = xbuf;
            bm.rs = np;
        }
        bm.cs = 1;
        bm.rows = j->cg;
        bm.cols = np;
        if (st_sgemm(&a, true, &bm, false, 1.0f, 0.0f, cols, np, mcount * j->kvol, np, j->cg) != ST_OK) goto nomem;
        col2im(j, cols, mcount, row0, rows, acc);
    }
    if (!j->y_direct) {
        size_t ey = st_dtype_size(y->dtype);
        for (int64_t mi = 0; mi < mcount; mi++) {
            char *yc = (char *)y->data + (n * y->strides[0] + (mfirst + mi) * y->strides[1]) * (int64_t)ey;
            /* a row at a time (f16 / bf16 rows convert sixteen lanes a vector) */
            for (int64_t row = 0; row < j->osz[0] * j->osz[1]; row++) {
                int64_t oh = row % j->osz[1], od = row / j->osz[1];
                st_cvt_row_from_f32(y->dtype, yc + (od * j->yst[0] + oh * j->yst[1]) * (int64_t)ey, j->yst[2],
                                    acc[mi] + row * j->osz[2], j->osz[2]);
            }
        }
    }
    free(accbuf);
    free(cols);
    free(xbuf);
    return;
nomem:
    free(accbuf);
    free(cols);
    free(xbuf);
    j->err = st_error(ST_ERR_NOMEM, "out of memory in ConvTranspose");
}

/* The common upsampling ConvTranspose whose kernel equals its stride
 * (2x2 stride 2, no pads, no dilation, no output padding): every output
 * pixel receives exactly one tap of one input pixel, so tiles of input rows
 * write disjoint output rows and can be tasks of their own (the general
 * path above accumulates whole planes, one task per block of channels,
 * which left PP-OCR's head on one thread).  Each output value is bias plus
 * one GEMM sum, so the result does not depend on the split. */
/* y[2i] = b + c0[i], y[2i + 1] = b + c1[i] (cloned for AVX-512). */
ST_CLONES
static void interleave2(float *y, const float *c0, const float *c1, float b, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        y[2 * i] = b + c0[i];
        y[2 * i + 1] = b + c1[i];
    }
}

static bool ct_tiles_exact(const ct_job *j)
{
    for (int d = 0; d < 3; d++)
        if (j->k[d] != j->st[d] || j->dl[d] != 1 || j->pb[d] != 0 || j->osz[d] != j->isz[d] * j->st[d]) return false;
    return true;
}

static void ct_tile_task(void *arg, int64_t t)
{
    ct_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int64_t groups = j->s->group, in_rows = j->isz[0] * j->isz[1];
    int64_t tiles = (in_rows + j->tile_rows - 1) / j->tile_rows;
    int64_t tile = t % tiles, mb = (t / tiles) % j->mblocks, g = (t / (tiles * j->mblocks)) % groups;
    int64_t n = t / (tiles * j->mblocks * groups);
    int64_t m0 = mb * CT_MBLOCK, mcount = j->mg - m0 < CT_MBLOCK ? j->mg - m0 : CT_MBLOCK, mfirst = g * j->mg + m0;
    int64_t row0 = tile * j->tile_rows, rows = in_rows - row0 < j->tile_rows ? in_rows - row0 : j->tile_rows;
    int64_t np = rows * j->isz[2], p0 = row0 * j->isz[2];
    float *cols = malloc((size_t)(mcount * j->kvol * np) * sizeof *cols + 1), *xbuf = NULL;
    if (!cols) goto nomem;
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype);
    st_mat bm;
    if (j->x_direct) {
        bm.p = (const float *)x->data + n * x->strides[0] + g * j->cg * x->strides[1] + p0;
        bm.rs = j->cg == 1 ? np : x->strides[1];
    } else {
        xbuf = malloc((size_t)(j->cg * np) * sizeof *xbuf + 1);
        if (!xbuf) goto nomem;
        for (int64_t c = 0; c < j->cg; c++) {
            const char *xc = (const char *)x->data + (n * x->strides[0] + (g * j->cg + c) * x->strides[1]) * (int64_t)ex;
            for (int64_t r = 0; r < rows; r++) {
                int64_t ir = row0 + r, ih = ir % j->isz[1], id = ir / j->isz[1];
                const char *xr = xc + (id * j->xst[0] + ih * j->xst[1]) * (int64_t)ex;
                st_cvt_row_to_f32(xbuf + c * np + r * j->isz[2], x->dtype, xr, j->xst[2], j->isz[2]);
            }
        }
        bm.p = xbuf;
        bm.rs = np;
    }
    bm.cs = 1;
    bm.rows = j->cg;
    bm.cols = np;
    st_mat a = j->wm;
    a.p += g * j->cg * a.rs + m0 * j->kvol * a.cs;
    a.rows = j->cg;
    a.cols = mcount * j->kvol;
    if (st_sgemm(&a, true, &bm, false, 1.0f, 0.0f, cols, np, mcount * j->kvol, np, j->cg) != ST_OK) goto nomem;
    bool f32 = y->dtype == ST_F32;
    if (j->k[2] == 2 && j->yst[2] == 1) {
        /* 2 wide: the two column taps of an output row interleave into one
         * contiguous row (f16 / bf16: interleaved in f32, then converted
         * sixteen lanes a vector, not element by element) */
        float *line = f32 ? NULL : malloc((size_t)(2 * j->isz[2]) * sizeof *line + 1);
        if (!f32 && !line) goto nomem;
        for (int64_t mi = 0; mi < mcount; mi++) {
            float bias = j->b ? st_load_f32(j->b->dtype, (const char *)j->b->data + (mfirst + mi) * j->b->strides[0] *
                                                                                    (int64_t)st_dtype_size(j->b->dtype))
                              : 0.0f;
            char *yc = (char *)y->data + (n * y->strides[0] + (mfirst + mi) * y->strides[1]) * (int64_t)ey;
            for (int64_t kk = 0; kk < j->kvol; kk += 2) {
                int64_t kh = (kk / 2) % j->k[1], kd = kk / (2 * j->k[1]);
                const float *c0 = cols + (mi * j->kvol + kk) * np, *c1 = c0 + np;
                for (int64_t r = 0; r < rows; r++) {
                    int64_t ir = row0 + r, ih = ir % j->isz[1], id = ir / j->isz[1];
                    char *yr = yc + ((id * j->st[0] + kd) * j->yst[0] + (ih * j->st[1] + kh) * j->yst[1]) * (int64_t)ey;
                    interleave2(f32 ? (float *)yr : line, c0 + r * j->isz[2], c1 + r * j->isz[2], bias, j->isz[2]);
                    if (!f32) st_cvt_row_from_f32(y->dtype, yr, 1, line, 2 * j->isz[2]);
                }
            }
        }
        free(line);
        free(cols);
        free(xbuf);
        return;
    }
    for (int64_t mi = 0; mi < mcount; mi++) {
        float bias = j->b ? st_load_f32(j->b->dtype, (const char *)j->b->data + (mfirst + mi) * j->b->strides[0] *
                                                                                (int64_t)st_dtype_size(j->b->dtype))
                          : 0.0f;
        char *yc = (char *)y->data + (n * y->strides[0] + (mfirst + mi) * y->strides[1]) * (int64_t)ey;
        for (int64_t kk = 0; kk < j->kvol; kk++) {
            int64_t kw = kk % j->k[2], kh = (kk / j->k[2]) % j->k[1], kd = kk / (j->k[2] * j->k[1]);
            const float *crow = cols + (mi * j->kvol + kk) * np;
            for (int64_t r = 0; r < rows; r++) {
                int64_t ir = row0 + r, ih = ir % j->isz[1], id = ir / j->isz[1];
                int64_t od = id * j->st[0] + kd, oh = ih * j->st[1] + kh;
                char *yr = yc + (od * j->yst[0] + oh * j->yst[1] + kw * j->yst[2]) * (int64_t)ey;
                const float *src = crow + r * j->isz[2];
                int64_t step = j->st[2] * j->yst[2];
                if (f32)
                    for (int64_t iw = 0; iw < j->isz[2]; iw++) ((float *)yr)[iw * step] = bias + src[iw];
                else
                    for (int64_t iw = 0; iw < j->isz[2]; iw++) st_store_f32(y->dtype, yr + iw * step * (int64_t)ey, bias + src[iw]);
            }
        }
    }
    free(cols);
    free(xbuf);
    return;
nomem:
    free(cols);
    free(xbuf);
    j->err = st_error(ST_ERR_NOMEM, "out of memory in ConvTranspose");
}

/* f64: direct scatter loops, for conformance; models run f32/f16/bf16. */
static void ct_f64(const ct_job *j)
{
    const st_operand *x = j->x, *w = j->w, *y = j->y;
    const double *xd = x->data, *wd = w->data;
    double *yd = y->data;
    int nsp = j->s->nsp;
    int64_t wst[3] = {0, 0, 0};
    for (int i = 0; i < nsp; i++) wst[3 - nsp + i] = w->strides[2 + i];
    for (int64_t n = 0; n < y->sizes[0]; n++)
        for (int64_t m = 0; m < y->sizes[1]; m++) {
            double bias = j->b ? st_load_f64(j->b->dtype, (const char *)j->b->data + m * j->b->strides[0] * 8) : 0.0;
            for (int64_t p = 0; p < j->out_px; p++) {
                int64_t ow = p % j->osz[2], oh = (p / j->osz[2]) % j->osz[1], od = p / (j->osz[2] * j->osz[1]);
                yd[n * y->strides[0] + m * y->strides[1] + od * j->yst[0] + oh * j->yst[1] + ow * j->yst[2]] = bias;
            }
        }
    for (int64_t n = 0; n < x->sizes[0]; n++)
        for (int64_t ci = 0; ci < x->sizes[1]; ci++) {
            int64_t g = ci / j->cg;
            for (int64_t p = 0; p < j->in_px; p++) {
                int64_t iw = p % j->isz[2], ih = (p / j->isz[2]) % j->isz[1], id = p / (j->isz[2] * j->isz[1]);
                double v = xd[n * x->strides[0] + ci * x->strides[1] + id * j->xst[0] + ih * j->xst[1] + iw * j->xst[2]];
                for (int64_t kk = 0; kk < j->kvol; kk++) {
                    int64_t kw = kk % j->k[2], kh = (kk / j->k[2]) % j->k[1], kd = kk / (j->k[2] * j->k[1]);
                    int64_t od = id * j->st[0] - j->pb[0] + kd * j->dl[0];
                    int64_t oh = ih * j->st[1] - j->pb[1] + kh * j->dl[1];
                    int64_t ow = iw * j->st[2] - j->pb[2] + kw * j->dl[2];
                    if (od < 0 || od >= j->osz[0] || oh < 0 || oh >= j->osz[1] || ow < 0 || ow >= j->osz[2]) continue;
                    for (int64_t mi = 0; mi < j->mg; mi++) {
                        double wv = wd[ci * w->strides[0] + mi * w->strides[1] + kd * wst[0] + kh * wst[1] + kw * wst[2]];
                        yd[n * y->strides[0] + (g * j->mg + mi) * y->strides[1] + od * j->yst[0] + oh * j->yst[1] + ow * j->yst[2]] +=
                            v * wv;
                    }
                }
            }
        }
}

st_status st_cpu_conv_transpose(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    ct_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.x = &k->in[0];
    j.w = &k->in[1];
    j.b = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    j.y = &k->out[0];
    int nsp = s->nsp;
    j.cg = j.x->sizes[1] / s->group;
    j.mg = j.y->sizes[1] / s->group;
    j.kvol = j.in_px = j.out_px = 1;
    for (int d = 0; d < 3; d++) {
        j.isz[d] = j.osz[d] = j.k[d] = j.st[d] = j.dl[d] = 1;
        j.pb[d] = j.xst[d] = j.yst[d] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        int d = 3 - nsp + i;
        j.isz[d] = j.x->sizes[2 + i];
        j.osz[d] = j.y->sizes[2 + i];
        j.k[d] = s->k[i];
        j.st[d] = s->s[i];
        j.dl[d] = s->d[i];
        j.pb[d] = s->pb[i];
        j.xst[d] = j.x->strides[2 + i];
        j.yst[d] = j.y->strides[2 + i];
        j.kvol *= s->k[i];
        j.in_px *= j.isz[d];
        j.out_px *= j.osz[d];
    }
    if (st_operand_numel(j.y) == 0) return ST_OK;
    if (j.x->dtype == ST_F64) {
        ct_f64(&j);
        return ST_OK;
    }
    /* W as a [C, M/g * K] matrix: packed W already is that */
    st_operand wv = *j.w;
    float *wown = NULL, *wpack = NULL;
    if (!st_operand_is_contiguous(j.w)) {
        size_t n = (size_t)st_operand_numel(j.w);
        wown = malloc(n * sizeof *wown + 1);
        if (!wown) return st_error(ST_ERR_NOMEM, "out of memory in ConvTranspose");
        st_view pv;
        st_view_init(&pv, ST_F32, j.w->rank, j.w->sizes);
        st_operand dst = st_operand_of(&pv, wown);
        st_copy_strided(&dst, j.w);
        wv.data = wown;
        wv.dtype = ST_F32;
    }
    wv.rank = 2;
    wv.sizes[0] = j.w->sizes[0];
    wv.sizes[1] = j.mg * j.kvol;
    wv.strides[0] = j.mg * j.kvol;
    wv.strides[1] = 1;
    st_status r = st_mat_f32(&wv, 0, 1, 0, &j.wm, &wpack);
    if (r != ST_OK) {
        free(wown);
        return r;
    }
    j.x_direct = j.x->dtype == ST_F32 && ct_spatial_packed(j.x, nsp) && (j.cg == 1 || j.x->strides[1] >= j.in_px);
    j.y_direct = j.y->dtype == ST_F32 && ct_spatial_packed(j.y, nsp);
    j.tile_rows = j.isz[2] > 0 ? CT_TILE / j.isz[2] : 1;
    if (j.tile_rows < 1) j.tile_rows = 1;
    j.mblocks = (j.mg + CT_MBLOCK - 1) / CT_MBLOCK;
    j.err = ST_OK;
    if (ct_tiles_exact(&j)) {
        int64_t tiles = (j.isz[0] * j.isz[1] + j.tile_rows - 1) / j.tile_rows;
        st_parallel_for(k->pool, j.y->sizes[0] * s->group * j.mblocks * tiles, ct_tile_task, &j);
    } else {
        st_parallel_for(k->pool, j.y->sizes[0] * s->group * j.mblocks, ct_task, &j);
    }
    free(wpack);
    free(wown);
    return j.err;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_conv_transpose[] = {
    {"ConvTranspose", "", ST_DT_ALL, st_cpu_conv_transpose, NULL, NULL, NULL},
    {NULL}
};
