/*
 * k_conv_fast.c — the AVX-512 Conv path: implicit GEMM on a staged input.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/common/cvt_half.h"
#include "backends/cpu/k_conv.h"
#include "runtime/scratch.h"

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


/* Past the staged planes: room for the GEMM's reads past the last
 * position, then, when X is f16 or bf16, one input row converted to f32
 * (stage_row). */
size_t st_conv_stage_bytes(const fconv *f)
{
    size_t extra = f->x->dtype == ST_F32 ? 0 : (size_t)(f->w_ + 16);
    return (size_t)(f->stage_floats + f->pws + 64 + (int64_t)extra) * sizeof(float);
}

/* Input row iy of the channel at xc as f32 with element stride *step: the
 * row where it lies when X is f32, else the row converted into cvt (f16
 * and bf16 with unit stride sixteen lanes a vector, cvt_half.c) and
 * *step = 1, so the f32 staging below serves every float dtype. */
static const float *stage_row(const fconv *f, const char *xc, int64_t iy, float *cvt, int64_t *step)
{
    const st_operand *x = f->x;
    size_t es = st_dtype_size(x->dtype);
    int64_t rs = f->xd == 3 ? x->strides[2] : 0, cs = x->strides[f->xd];
    const char *xr = xc + iy * rs * (int64_t)es;
    if (x->dtype == ST_F32) {
        *step = cs;
        return (const float *)xr;
    }
    st_cvt_row_to_f32(cvt, x->dtype, xr, cs, f->w_);
    *step = 1;
    return cvt;
}

/* Stages channels [c0, c0 + cg) of image n for the band starting at output
 * row (pointwise: position) b0 into dst. */
void st_conv_stage_band(const fconv *f, int64_t n, int64_t c0, int64_t b0, float *dst)
{
    const st_operand *x = f->x;
    size_t es = st_dtype_size(x->dtype);
    int64_t rs = f->xd == 3 ? x->strides[2] : 0, cs = x->strides[f->xd];
    float *cvt = dst + f->stage_floats + f->pws + 64;
    for (int64_t c = 0; c < f->cg; c++) {
        const char *xc = (const char *)x->data + (n * x->strides[0] + (c0 + c) * x->strides[1]) * (int64_t)es;
        float *dc = dst + c * f->chan;
        if (f->pointwise) {
            /* positions [b0, b0 + band) of the plane, row segment by row segment */
            int64_t p1 = b0 + f->band < f->h * f->w_ ? b0 + f->band : f->h * f->w_;
            for (int64_t p = b0; p < p1;) {
                int64_t iy = p / f->w_, ix = p % f->w_, len = f->w_ - ix < p1 - p ? f->w_ - ix : p1 - p;
                st_cvt_row_to_f32(dc + (p - b0), x->dtype, xc + (iy * rs + ix * cs) * (int64_t)es, cs, len);
                p += len;
            }
            continue;
        }
        int64_t rows = f->oh - b0 < f->band ? f->oh - b0 : f->band;
        if (f->sx == 2 && (cs == 1 || x->dtype != ST_F32)) {
            /* both column phases of each input row in one pass */
            for (int64_t ry = 0; ry < f->sy; ry++) {
                float *pe = dc + (ry * 2) * f->plane, *po = pe + f->plane;
                for (int64_t i = 0; i < rows + f->qy; i++) {
                    int64_t iy = (b0 + i) * f->sy + ry - f->pt, step;
                    float *re = pe + i * f->pws, *ro = po + i * f->pws;
                    if (iy < 0 || iy >= f->h) {
                        memset(re, 0, (size_t)f->pws * sizeof *re);
                        memset(ro, 0, (size_t)f->pws * sizeof *ro);
                    } else {
                        st_split2(stage_row(f, xc, iy, cvt, &step), f->w_, -f->pl, re, ro, f->pws);
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
                    int64_t iy = (b0 + i) * f->sy + ry - f->pt, step;
                    if (iy < 0 || iy >= f->h) {
                        memset(row, 0, (size_t)f->pws * sizeof *row);
                        continue;
                    }
                    memset(row, 0, (size_t)qlo * sizeof *row);
                    const float *xf = stage_row(f, xc, iy, cvt, &step) + ix0 * step;
                    if (step == 1 && f->sx == 1) {
                        memcpy(row + qlo, xf, (size_t)(qhi - qlo) * sizeof *row);
                    } else {
                        step *= f->sx;
                        for (int64_t q = qlo; q < qhi; q++) row[q] = xf[(q - qlo) * step];
                    }
                    memset(row + qhi, 0, (size_t)(f->pws - qhi) * sizeof *row);
                }
            }
    }
}

/* Copies rows [0, mrows) of a tile (row stride ldc in c) of band-local
 * positions [p0, p0 + np) of band b0 to channels m0.. of image n of y,
 * dropping the pad columns. */
static void st_conv_copy_out(const fconv *f, int64_t n, int64_t b0, int64_t m0, int64_t mrows, int64_t p0, int64_t np,
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
                st_cvt_row_from_f32(y->dtype, yc + (oy * rs + ox * cs) * (int64_t)ey, cs, cr + p, len);
                p += len;
            }
            continue;
        }
        for (int64_t r = p0 / f->pws; r * f->pws < p0 + np; r++) {
            int64_t a = r * f->pws > p0 ? r * f->pws : p0, b = r * f->pws + f->ow;
            if (b > p0 + np) b = p0 + np;
            if (b <= a) continue;
            int64_t ox = a - r * f->pws;
            st_cvt_row_from_f32(y->dtype, yc + ((b0 + r) * rs + ox * cs) * (int64_t)ey, cs, cr + a, b - a);
        }
    }
}

/* The GEMM of a task on bf16 data (f->abf, gemm_bf16.h): per tile of
 * positions and k block, the staged f32 rows of the block's taps are
 * packed into the pair-interleaved layout (the values are bf16 already,
 * so this rounds nothing), then multiplied by the weights packed at plan
 * time, accumulating in f32 into the tile that is stored as bf16. */
static void conv_tiles_bf16(fconv *f, int64_t n, int64_t g, int64_t m0, int64_t mrows, int64_t b0, int64_t npos,
                            const float *bbase, float *cbuf, const st_gemm_epi *epi)
{
    int64_t kcb = st_gemm_kc(f->K), mabs = g * f->mg + m0;
    uint32_t *bp = st_scratch_take(st_gemm_bf16_b_words(kcb > 0 ? kcb : 1, ST_FCONV_TILE) * sizeof(uint32_t));
    if (!bp) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv (bf16)");
        return;
    }
    const uint32_t *a = f->abf + (g * f->mblocks + m0 / ST_GEMM_MR) * f->abf_stride;
    for (int64_t p0 = 0; p0 < npos; p0 += ST_FCONV_TILE) {
        int64_t np = npos - p0 < ST_FCONV_TILE ? npos - p0 : ST_FCONV_TILE;
        float *c = cbuf;
        int64_t ldc = ST_FCONV_TILE;
        if (f->y_direct) {
            int64_t pix = (f->pointwise ? b0 : b0 * f->ow) + p0;
            c = (float *)f->y->data + n * f->y->strides[0] + mabs * f->y->strides[1] + pix;
            ldc = f->y->strides[1];
        }
        if (f->K == 0) st_gemm_bf16_block(a, f->abf_stride, bp, 0, mrows, np, c, ldc, false, epi);
        for (int64_t k0 = 0; k0 < f->K; k0 += kcb) {
            int64_t kc = f->K - k0 < kcb ? f->K - k0 : kcb;
            st_gemm_bf16_pack_b(bbase + p0, f->off + k0, 1, kc, np, bp);
            st_gemm_bf16_block(a + k0 / 2 * ST_GEMM_MR, f->abf_stride, bp, kc, mrows, np, c, ldc, k0 > 0,
                               k0 + kc >= f->K ? epi : NULL);
        }
        if (!f->y_direct) st_conv_copy_out(f, n, b0, mabs, mrows, p0, np, cbuf, ldc);
    }
    st_scratch_give(bp);
}

static void st_conv_fast_task(void *arg, int64_t t)
{
    fconv *f = arg;
    int64_t mc = t % f->mchunks, band = (t / f->mchunks) % f->bands, ng = t / (f->mchunks * f->bands);
    int64_t n = ng / f->G, g = ng % f->G;
    int64_t m0 = mc * f->mchunk, mrows = f->mg - m0 < f->mchunk ? f->mg - m0 : f->mchunk;
    int64_t b0 = band * f->band, npos;
    if (f->pointwise) npos = f->h * f->w_ - b0 < f->band ? f->h * f->w_ - b0 : f->band;
    else npos = (f->oh - b0 < f->band ? f->oh - b0 : f->band) * f->pws;
    if (mrows <= 0 || npos <= 0) return;
    /* the worker's kept scratch (scratch.h): a warm run allocates none */
    float *stage = st_scratch_take(st_conv_stage_bytes(f));
    bool direct = f->y_direct || f->rows_direct;
    float *cbuf = direct ? NULL : st_scratch_take((size_t)(mrows * ST_FCONV_TILE) * sizeof(float));
    if (!stage || (!direct && !cbuf)) {
        st_scratch_give(stage);
        st_scratch_give(cbuf);
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return;
    }
    const float *bbase = stage;
    if (f->x_direct) bbase = (const float *)f->x->data + n * f->x->strides[0] + g * f->cg * f->x->strides[1] + b0;
    else st_conv_stage_band(f, n, g * f->cg, b0, stage);
    int64_t mabs = g * f->mg + m0;
    st_gemm_epi epi = f->epi;
    if (epi.scale) epi.scale += mabs;
    if (epi.shift) epi.shift += mabs;
    if (epi.post_scale) epi.post_scale += mabs, epi.post_shift += mabs;
    if (f->abf) {
        conv_tiles_bf16(f, n, g, m0, mrows, b0, npos, bbase, cbuf, &epi);
        st_scratch_give(stage);
        st_scratch_give(cbuf);
        return;
    }
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
        st_scratch_give(stage);
        st_scratch_give(cbuf);
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
        if (!f->y_direct) st_conv_copy_out(f, n, b0, mabs, mrows, p0, np, cbuf, ldc);
    }
    st_scratch_give(stage);
    st_scratch_give(cbuf);
}

bool st_conv_fast(const st_kctx *k, const conv_job *j, st_status *err)
{
    const st_conv_state *s = j->s;
    const st_operand *x = j->x, *y = j->y;
    const float *packed_w = j->prep ? j->prep->packed_w : NULL, *wino_u = j->prep ? j->prep->wino_u : NULL;
    /* bf16 compute needs bf16 data (the weights' dtype decided prepare) */
    const uint32_t *packed_bf = j->prep && x->dtype == ST_BF16 && st_gemm_bf16_fast() ? j->prep->packed_bf16 : NULL;
    if (!st_gemm_fast() || s->nsp > 2 || (!packed_w && !packed_bf && !wino_u && j->wm.cs != 1)) return false;
    if (packed_w && j->cg == 1 && j->mg == 1) return false; /* depthwise reads W itself */
    if (!(x->dtype == ST_F32 || x->dtype == ST_F16 || x->dtype == ST_BF16)) return false;
    if (!(y->dtype == ST_F32 || y->dtype == ST_F16 || y->dtype == ST_BF16)) return false;
    fconv f = {0};
    f.s = s;
    f.prep = j->prep;
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
    /* A k x 1 conv on an input one pixel wide (the [N, C, T, 1] of audio
     * and text models) is the 1-D conv along H that it is: staged as one
     * row of T pixels, not as T rows of one pixel each, whose output rows
     * make GEMM tiles of a single position.  The weights' taps are in the
     * same order either way (kw = 1). */
    if (two && f.w_ == 1 && f.ow == 1 && f.kw == 1 && f.pl == 0 && s->pe[1] == 0 && f.kh > 1) {
        f.xd = 2;
        f.w_ = f.h;
        f.ow = f.oh;
        f.kw = f.kh;
        f.sx = f.sy;
        f.dx = f.dy;
        f.pl = f.pt;
        f.h = f.oh = f.kh = f.sy = f.dy = 1;
        f.pt = 0;
        two = false;
    }
    f.depthwise = j->cg == 1 && j->mg == 1;
    f.pointwise = !f.depthwise && f.kh == 1 && f.kw == 1 && f.sy == 1 && f.sx == 1 && f.pt == 0 && f.pl == 0 &&
                  s->pe[0] == 0 && (!two || s->pe[1] == 0);
    f.qy = (f.kh - 1) * f.dy / f.sy;
    f.qx = (f.kw - 1) * f.dx / f.sx;
    if (wino_u && two && f.kh == 3 && f.kw == 3 && f.sy == 1 && f.sx == 1 && f.dy == 1 && f.dx == 1 && !f.depthwise)
        return st_conv_wino(k, &f, err);
    if (!packed_w && !packed_bf && !j->wm.p) return false; /* the caller packs W and comes back */
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
    if (f.pointwise && x->dtype == ST_F32 && st_conv_spatial_packed(x, s->nsp)) {
        int64_t mod = (x->strides[1] * 4) % 4096;
        if (mod < 0) mod += 4096;
        if (mod >= 256 && mod <= 3840) {
            f.x_direct = true;
            f.chan = x->strides[1];
        }
    }
    f.stage_floats = f.depthwise ? f.chan : f.cg * f.chan;
    f.off = st_scratch_take((size_t)(f.K > 0 ? f.K : 1) * sizeof *f.off);
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
        st_parallel_for(k->pool, f.N * ((f.C + f.dwc - 1) / f.dwc) * f.bands, st_conv_dw_task, &f);
        st_scratch_give(f.off);
        *err = f.err;
        return true;
    }
    f.y_direct = y->dtype == ST_F32 && st_conv_spatial_packed(y, s->nsp) && f.pws == f.ow;
    /* rows whose width is a multiple of 16 end exactly on a narrower
     * micro-kernel: store them straight into y, row by row, instead of
     * computing the pad columns and copying the tile out */
    f.rows_direct = !packed_bf && !f.y_direct && !f.pointwise && y->dtype == ST_F32 && y->strides[f.xd] == 1 && f.ow % 16 == 0 &&
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
     * (the kernel's prepare, k_conv.c), else here */
    float *apack = NULL;
    f.mblocks = mblocks;
    if (packed_bf) {
        f.abf = packed_bf;
        f.abf_stride = (f.K + 1) / 2 * ST_GEMM_MR;
    } else if (packed_w) {
        f.w = packed_w;
    } else {
        apack = st_scratch_take((size_t)(f.G * mblocks * ST_GEMM_MR * f.K) * sizeof(float));
        if (!apack) {
            st_scratch_give(f.off);
            *err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
            return true;
        }
        for (int64_t g = 0; g < f.G; g++)
            st_gemm_pack_a(f.w + g * f.mg * f.lda, f.lda, f.mg, f.K, apack + g * mblocks * ST_GEMM_MR * f.K);
        f.w = apack;
    }
    f.lda = -(f.K * ST_GEMM_MR);
    st_parallel_for(k->pool, units * f.mchunks, st_conv_fast_task, &f);
    st_scratch_give(apack);
    st_scratch_give(f.off);
    *err = f.err;
    return true;
}

