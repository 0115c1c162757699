/*
 * conv_s8.c — int8 convolution as an implicit GEMM over a staged input
 * (see conv_s8.h for the idea).
 *
 * Shapes are normalised to 3 spatial dims (depth, height, width; a 2-D
 * conv has depth 1).  A task takes (image, group, output depth slice, band
 * of R output rows, block of output channels).  It stages, for each channel
 * quad cq and depth tap tz, the input slice that tap reads, split into the
 * sy x sx stride phases: phase (ry, rx), staged row i, column q holds the
 * 4 channels of padded input (row (b0 + i) * sy + ry, column q * sx + rx)
 * at 4 * (i * pws + q).  Output position p = r * pws + ox then reads tap
 * (tz, ky, kx) of quad cq at a fixed offset from 4 p: the GEMM's B is the
 * staged buffer itself.  Positions with ox >= ow are computed only where a
 * whole band runs as one product (narrow outputs) and are dropped when the
 * tile is copied out; wide outputs run one output row per product and the
 * epilogue stores straight into y; where the staged rows have no shift
 * (1x1 windows) and y's rows are back to back, a whole band is one
 * product stored straight into y.
 *
 * Padding is staged as X's zero point, so it contributes nothing after the
 * zero-point correction, exactly as the spec's zero-point padding; the
 * channels that fill a last quad are staged as 0 against W's packed 0.
 */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/conv_s8.h"
#include "runtime/scratch.h"

/* Bytes a task's staging may take: the band's rows of every channel quad
 * stay in L2 while the GEMM walks the taps over them. */
#define STAGE_BUDGET (384 * 1024)
/* Tasks (image, group, slice, band) below which bands shrink and output
 * channels split.  Tasks are equal, so the last one can leave a core idle
 * for a task's time: 24 bounds that at about 4% on two cores, where 13
 * (the natural bands of a 256x256 64-channel conv) idled one for 7%.  A
 * band's halo rows are staged twice, a small cost: staging is about 5% of
 * such a conv. */
#define MIN_UNITS 24
/* Output positions a band keeps when bands shrink to make tasks: two
 * panels of the micro-kernel. */
#define MIN_POS (2 * ST_S8_NR)
/* Output positions per product when a band runs as one (narrow outputs). */
#define TILE (4 * ST_S8_NR)
/* Output width from which each output row is its own product, stored
 * straight into y: a row fills the 48-column panels well enough. */
#define DIRECT_MIN_OW 48

/* Outputs larger than this (about an L3 slice) are written with streaming
 * stores where the store path allows: a 3 -> 32 channel ConvInteger at
 * 1024x1024 (128 MB of int32, 9 vpdpbusd per vector stored) ran in 7.6 ms
 * instead of 13.9 ms, as stores no longer read each line first; the
 * compute-bound layers were unchanged. */
#define STREAM_BYTES (32.0 * 1024 * 1024)


/* 3-D views of a conv's spatial dims: index 0 depth, 1 height, 2 width. */
static void norm3(int nsp, const int64_t *v, int64_t fill, int64_t *o)
{
    o[0] = o[1] = fill;
    o[2] = fill;
    for (int i = 0; i < nsp; i++) o[3 - nsp + i] = v[i];
}

st_s8_packed *st_conv_s8_pack(const st_operand *w, const st_conv_s8_window *win)
{
    int64_t k[3], ws[3], M = w->sizes[0], cg = w->sizes[1], cgq = (cg + 3) / 4;
    norm3(win->nsp, win->k, 1, k);
    norm3(win->nsp, w->strides + 2, 0, ws);
    int64_t taps = k[0] * k[1] * k[2], kk = cgq * taps * 4;
    int64_t *koff = malloc((size_t)(kk > 0 ? kk : 1) * sizeof *koff);
    if (!koff) return NULL;
    /* k index (cq * taps + tap) * 4 + t: channel 4 cq + t of tap (tz, ky, kx) */
    for (int64_t cq = 0; cq < cgq; cq++)
        for (int64_t tap = 0; tap < taps; tap++)
            for (int64_t t = 0; t < 4; t++) {
                int64_t c = 4 * cq + t, tz = tap / (k[1] * k[2]), ky = tap / k[2] % k[1], kx = tap % k[2];
                koff[(cq * taps + tap) * 4 + t] = c < cg ? c * w->strides[1] + tz * ws[0] + ky * ws[1] + kx * ws[2] : -1;
            }
    st_s8_packed *p = st_gemm_s8_pack_a(w->data, w->dtype, M, M / win->group, w->strides[0], koff, kk);
    free(koff);
    return p;
}

typedef struct cs8 {
    const st_conv_s8_args *a;
    int64_t in[3], out[3], k[3], s[3], d[3], p[3], xs[3], ys[3];
    int64_t G, cg, mg, cgq, taps, kq, gblocks;
    int64_t qy, pws, R, bands, rows_alloc, plane, stage_bytes;
    int64_t mchunk, mchunks;
    int64_t *off;              /* per quad, bytes from the staged row of position 0 */
    uint8_t flip, xz;          /* the flip, and X's zero point as staged */
    bool a_unsigned, colsum, direct, flat, stream;
    int32_t *row_add, *row_mul;
    uint8_t *staged;           /* every unit's band, staged once, or NULL (each task stages its own) */
    size_t es;
    st_status err;
} cs8;

/* The AVX-512 form of interleave: 64 positions a step.  The byte and
 * word unpacks work within 128-bit lanes, so result r_k's lane L holds
 * positions 16 L + 4 k .. + 3; a 4 x 4 transpose of lanes (vshufi64x2)
 * puts them in order.  Stride 2 takes the even bytes of 128 (vpackuswb,
 * lane-wise, then vpermq to undo the lane order).  The last partial step
 * loads masked (no read past the row) and stores through a bounce buffer:
 * YOLOv8n's rows are 20 to 320 positions, and the 16-wide and scalar
 * tails this replaced took a third of the staging time. */
__attribute__((always_inline, target("avx512f,avx512bw"))) static inline void
interleave64(const uint8_t *const *src, int nc, int64_t step, int64_t q, __mmask64 m0, __mmask64 m1, uint8_t flip,
             uint8_t *d)
{
    const __m512i fx = _mm512_set1_epi8((char)flip), lo8 = _mm512_set1_epi16(0xff);
    const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    __m512i v[4];
    for (int t = 0; t < 4; t++) {
        if (t >= nc) {
            v[t] = _mm512_setzero_si512();
            continue;
        }
        const uint8_t *p = src[t] + q * step;
        __m512i x = m0 == (__mmask64)-1 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(m0, p);
        if (step == 2) {
            __m512i y = m1 == (__mmask64)-1 ? _mm512_loadu_si512(p + 64) : _mm512_maskz_loadu_epi8(m1, p + 64);
            x = _mm512_permutexvar_epi64(order, _mm512_packus_epi16(_mm512_and_si512(x, lo8), _mm512_and_si512(y, lo8)));
        }
        v[t] = _mm512_xor_si512(x, fx);
    }
    __m512i ab0 = _mm512_unpacklo_epi8(v[0], v[1]), ab1 = _mm512_unpackhi_epi8(v[0], v[1]);
    __m512i cd0 = _mm512_unpacklo_epi8(v[2], v[3]), cd1 = _mm512_unpackhi_epi8(v[2], v[3]);
    __m512i r0 = _mm512_unpacklo_epi16(ab0, cd0), r1 = _mm512_unpackhi_epi16(ab0, cd0);
    __m512i r2 = _mm512_unpacklo_epi16(ab1, cd1), r3 = _mm512_unpackhi_epi16(ab1, cd1);
    __m512i t0 = _mm512_shuffle_i64x2(r0, r1, 0x44), t1 = _mm512_shuffle_i64x2(r0, r1, 0xee);
    __m512i t2 = _mm512_shuffle_i64x2(r2, r3, 0x44), t3 = _mm512_shuffle_i64x2(r2, r3, 0xee);
    _mm512_storeu_si512(d, _mm512_shuffle_i64x2(t0, t2, 0x88));
    _mm512_storeu_si512(d + 64, _mm512_shuffle_i64x2(t0, t2, 0xdd));
    _mm512_storeu_si512(d + 128, _mm512_shuffle_i64x2(t1, t3, 0x88));
    _mm512_storeu_si512(d + 192, _mm512_shuffle_i64x2(t1, t3, 0xdd));
}

/* All count positions, stride 1 or 2.  A masked lane loads as 0, so the
 * tail's extra positions are garbage only in the bounce buffer. */
__attribute__((target("avx512f,avx512bw"))) static void interleave512(const uint8_t *const *src, int nc, int64_t step,
                                                                     int64_t count, uint8_t flip, uint8_t *dst)
{
    const __mmask64 all = (__mmask64)-1;
    /* stride 2 reads 128 bytes for 64 positions: one past the last used */
    int64_t q = 0, need = step == 1 ? 64 : 65;
    for (; q + need <= count; q += 64) interleave64(src, nc, step, q, all, all, flip, dst + 4 * q);
    if (q == count) return;
    int64_t bytes = step == 1 ? count - q : 2 * (count - q) - 1; /* the last position's byte is the last read */
    __mmask64 m0 = bytes >= 64 ? all : all >> (64 - bytes), m1 = bytes > 64 ? all >> (128 - bytes) : 0;
    uint8_t out[256] __attribute__((aligned(64)));
    interleave64(src, nc, step, q, m0, m1, flip, out);
    memcpy(dst + 4 * q, out, (size_t)(4 * (count - q)));
}

/* Interleaves count positions of 4 channels (channel t's position q at
 * src[t][q * step], t < nc; the others are 0) into dst, 4 bytes a position,
 * flipping the live channels. */
static void interleave(const uint8_t *const *src, int nc, int64_t step, int64_t count, uint8_t flip, uint8_t *dst)
{
    int64_t q = 0;
    if ((step == 1 || step == 2) && st_gemm_s8_fast()) {
        interleave512(src, nc, step, count, flip, dst);
        return;
    }
    if (step == 1 || step == 2) {
        const __m128i fx = _mm_set1_epi8((char)flip), lo8 = _mm_set1_epi16(0xff);
        /* stride 2 reads 32 bytes for 16 positions: one past the last used */
        int64_t need = step == 1 ? 16 : 17;
        for (; q + need <= count; q += 16) {
            __m128i v[4];
            for (int t = 0; t < 4; t++) {
                if (t >= nc) {
                    v[t] = _mm_setzero_si128();
                    continue;
                }
                const uint8_t *p = src[t] + q * step;
                __m128i x = _mm_loadu_si128((const __m128i *)p);
                if (step == 2) {
                    __m128i y = _mm_loadu_si128((const __m128i *)(p + 16));
                    x = _mm_packus_epi16(_mm_and_si128(x, lo8), _mm_and_si128(y, lo8));
                }
                v[t] = _mm_xor_si128(x, fx);
            }
            __m128i ab0 = _mm_unpacklo_epi8(v[0], v[1]), ab1 = _mm_unpackhi_epi8(v[0], v[1]);
            __m128i cd0 = _mm_unpacklo_epi8(v[2], v[3]), cd1 = _mm_unpackhi_epi8(v[2], v[3]);
            __m128i *d = (__m128i *)(dst + 4 * q);
            _mm_storeu_si128(d, _mm_unpacklo_epi16(ab0, cd0));
            _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(ab0, cd0));
            _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(ab1, cd1));
            _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(ab1, cd1));
        }
    }
    for (; q < count; q++)
        for (int t = 0; t < 4; t++) dst[4 * q + t] = t < nc ? (uint8_t)(src[t][q * step] ^ flip) : 0;
}

/* n positions of padding: the zero point in live channels, 0 in the rest. */
static void pad_fill(uint8_t *dst, int64_t n, int nc, uint8_t xz)
{
    uint8_t pat[4];
    for (int t = 0; t < 4; t++) pat[t] = t < nc ? xz : 0;
    for (int64_t q = 0; q < n; q++) memcpy(dst + 4 * q, pat, 4);
}

/* Stages image n, group g, output slice oz, band from output row b0. */
static void stage(const cs8 *f, int64_t n, int64_t g, int64_t oz, int64_t b0, uint8_t *S)
{
    const st_operand *x = f->a->x;
    const uint8_t *xb = x->data;
    int64_t rows = (f->out[1] - b0 < f->R ? f->out[1] - b0 : f->R) + f->qy, sy = f->s[1], sx = f->s[2];
    int64_t W = f->in[2], pl = f->p[2];
    for (int64_t cq = 0; cq < f->cgq; cq++) {
        int nc = (int)(f->cg - 4 * cq < 4 ? f->cg - 4 * cq : 4);
        for (int64_t tz = 0; tz < f->k[0]; tz++) {
            int64_t iz = oz * f->s[0] - f->p[0] + tz * f->d[0];
            for (int64_t ry = 0; ry < sy; ry++)
                for (int64_t rx = 0; rx < sx; rx++) {
                    uint8_t *pln = S + ((cq * f->k[0] + tz) * sy * sx + ry * sx + rx) * f->plane;
                    /* columns q whose input column q * sx + rx - pl lies in [0, W) */
                    int64_t first = pl - rx, qlo = first <= 0 ? 0 : (first + sx - 1) / sx;
                    int64_t qhi = (W + pl - rx + sx - 1) / sx;
                    if (qlo > f->pws) qlo = f->pws;
                    if (qhi > f->pws) qhi = f->pws;
                    if (qhi < qlo) qhi = qlo;
                    for (int64_t i = 0; i < rows; i++) {
                        uint8_t *row = pln + i * f->pws * 4;
                        int64_t iy = (b0 + i) * sy + ry - f->p[1];
                        if (iz < 0 || iz >= f->in[0] || iy < 0 || iy >= f->in[1]) {
                            pad_fill(row, f->pws, nc, f->xz);
                            continue;
                        }
                        pad_fill(row, qlo, nc, f->xz);
                        const uint8_t *src[4];
                        for (int t = 0; t < 4; t++) {
                            int64_t c = g * f->cg + 4 * cq + (t < nc ? t : 0);
                            src[t] = xb + n * x->strides[0] + c * x->strides[1] + iz * f->xs[0] + iy * f->xs[1] +
                                     (qlo * sx + rx - pl) * f->xs[2];
                        }
                        interleave(src, nc, sx * f->xs[2], qhi - qlo, f->flip, row + qlo * 4);
                        pad_fill(row + qhi * 4, f->pws - qhi, nc, f->xz);
                    }
                    /* rows past the band are read only by dropped positions */
                    memset(pln + rows * f->pws * 4, 0, (size_t)((f->rows_alloc - rows) * f->pws * 4));
                }
        }
    }
}

/* Copies tile positions [p0, p0 + np) (row stride TILE in c) of rows
 * [0, mrows) to output channels m.. of image n, slice oz, band b0,
 * dropping the positions past ow. */
static void copy_out(const cs8 *f, int64_t n, int64_t m, int64_t mrows, int64_t oz, int64_t b0, int64_t p0, int64_t np,
                     const uint8_t *c)
{
    const st_operand *y = f->a->y;
    int64_t ow = f->out[2];
    for (int64_t r = 0; r < mrows; r++) {
        char *yc = (char *)y->data + (n * y->strides[0] + (m + r) * y->strides[1] + oz * f->ys[0]) * (int64_t)f->es;
        const uint8_t *cr = c + r * TILE * (int64_t)f->es;
        for (int64_t p = p0; p < p0 + np;) {
            int64_t row = p / f->pws, ox = p % f->pws, end = (row + 1) * f->pws < p0 + np ? (row + 1) * f->pws : p0 + np;
            int64_t len = ox < ow ? (ow - ox < end - p ? ow - ox : end - p) : 0;
            char *yr = yc + ((b0 + row) * f->ys[1] + ox * f->ys[2]) * (int64_t)f->es;
            const uint8_t *src = cr + (p - p0) * (int64_t)f->es;
            if (f->ys[2] == 1) memcpy(yr, src, (size_t)len * f->es);
            else
                for (int64_t q = 0; q < len; q++) memcpy(yr + q * f->ys[2] * (int64_t)f->es, src + q * (int64_t)f->es, f->es);
            p = end;
        }
    }
}

/* Unit u (image, group, slice, band) staged into its slot of f->staged. */
static void stage_task(void *arg, int64_t u)
{
    cs8 *f = arg;
    int64_t band = u % f->bands, rest = u / f->bands, oz = rest % f->out[0];
    rest /= f->out[0];
    stage(f, rest / f->G, rest % f->G, oz, band * f->R, f->staged + u * f->stage_bytes);
}

static void conv_task(void *arg, int64_t t)
{
    cs8 *f = arg;
    const st_conv_s8_args *a = f->a;
    int64_t mc = t % f->mchunks, unit = t / f->mchunks, rest = unit, band = rest % f->bands;
    rest /= f->bands;
    int64_t oz = rest % f->out[0];
    rest /= f->out[0];
    int64_t g = rest % f->G, n = rest / f->G;
    int64_t m0 = mc * f->mchunk, mrows = f->mg - m0 < f->mchunk ? f->mg - m0 : f->mchunk;
    int64_t b0 = band * f->R, rows = f->out[1] - b0 < f->R ? f->out[1] - b0 : f->R, ow = f->out[2];
    if (mrows <= 0 || rows <= 0) return;
    int64_t cols = f->flat ? rows * ow : f->direct ? ow : TILE;
    size_t cbytes = f->direct || f->flat ? 0 : (size_t)(mrows * TILE) * f->es;
    size_t own = f->staged ? 0 : (size_t)f->stage_bytes;
    uint8_t *mem = st_scratch_take(own + cbytes + (size_t)cols * sizeof(int32_t)); /* the worker's, kept */
    if (!mem) {
        f->err = ST_ERR_NOMEM;
        return;
    }
    const uint8_t *S = f->staged ? f->staged + unit * f->stage_bytes : mem;
    uint8_t *cbuf = mem + own;
    int32_t *csum = (int32_t *)(cbuf + cbytes);
    if (!f->staged) stage(f, n, g, oz, b0, mem);
    int64_t mabs = g * f->mg + m0;
    st_s8_epi e = {0};
    e.row_add = f->row_add + mabs;
    if (f->colsum) {
        e.row_mul = f->row_mul + mabs;
        e.col_mul = csum;
    }
    e.out = a->out;
    e.row_scale = a->scale ? a->scale + mabs : NULL;
    e.row_bias = a->fbias ? a->fbias + mabs : NULL;
    e.stream = f->stream;
    e.zero_point = a->y_zp;
    e.lut = a->lut;
    const uint8_t *A = a->w->data + (g * f->gblocks + m0 / ST_S8_MR) * f->kq * ST_S8_MR * 4;
    const st_operand *y = a->y;
    if (f->flat) {
        st_s8_b b = {S, f->off, ST_S8_NR * 4};
        if (f->colsum) st_gemm_s8_colsums(&b, !f->a_unsigned, f->kq, rows * ow, csum);
        char *c = (char *)y->data + (n * y->strides[0] + mabs * y->strides[1] + oz * f->ys[0] + b0 * f->ys[1]) * (int64_t)f->es;
        st_gemm_s8_block(A, f->a_unsigned, &b, f->kq, mrows, rows * ow, c, y->strides[1], &e);
    } else if (f->direct) {
        for (int64_t r = 0; r < rows; r++) {
            st_s8_b b = {S + r * f->pws * 4, f->off, ST_S8_NR * 4};
            if (f->colsum) st_gemm_s8_colsums(&b, !f->a_unsigned, f->kq, ow, csum);
            char *c = (char *)y->data + (n * y->strides[0] + mabs * y->strides[1] + oz * f->ys[0] + (b0 + r) * f->ys[1]) *
                                            (int64_t)f->es;
            st_gemm_s8_block(A, f->a_unsigned, &b, f->kq, mrows, ow, c, y->strides[1], &e);
        }
    } else {
        int64_t npos = rows * f->pws;
        for (int64_t p0 = 0; p0 < npos; p0 += TILE) {
            int64_t np = npos - p0 < TILE ? npos - p0 : TILE;
            st_s8_b b = {S + p0 * 4, f->off, ST_S8_NR * 4};
            if (f->colsum) st_gemm_s8_colsums(&b, !f->a_unsigned, f->kq, np, csum);
            st_gemm_s8_block(A, f->a_unsigned, &b, f->kq, mrows, np, cbuf, TILE, &e);
            copy_out(f, n, mabs, mrows, oz, b0, p0, np, cbuf);
        }
    }
    st_scratch_give(mem);
}

st_status st_conv_s8(st_pool *pool, const st_conv_s8_args *a)
{
    const st_conv_s8_window *win = a->win;
    const st_operand *x = a->x, *y = a->y;
    cs8 f;
    memset(&f, 0, sizeof f);
    f.a = a;
    int nsp = win->nsp;
    norm3(nsp, x->sizes + 2, 1, f.in);
    norm3(nsp, y->sizes + 2, 1, f.out);
    norm3(nsp, win->k, 1, f.k);
    norm3(nsp, win->s, 1, f.s);
    norm3(nsp, win->d, 1, f.d);
    norm3(nsp, win->pb, 0, f.p);
    norm3(nsp, x->strides + 2, 0, f.xs);
    norm3(nsp, y->strides + 2, 0, f.ys);
    int64_t N = x->sizes[0], M = y->sizes[1];
    f.G = win->group;
    f.cg = x->sizes[1] / f.G;
    f.mg = M / f.G;
    f.cgq = (f.cg + 3) / 4;
    f.taps = f.k[0] * f.k[1] * f.k[2];
    f.kq = a->w->kq;
    f.gblocks = (f.mg + ST_S8_MR - 1) / ST_S8_MR;
    f.es = st_dtype_size(y->dtype);
    if (N == 0 || M == 0 || f.out[0] == 0 || f.out[1] == 0 || f.out[2] == 0) return ST_OK;
    /* W's bytes are the kernel's A; X is flipped when its type is W's */
    bool wu = a->w->type == ST_U8, xu = x->dtype == ST_U8;
    f.a_unsigned = wu;
    f.flip = xu == wu ? 0x80 : 0;
    f.xz = (uint8_t)((uint8_t)a->x_zp ^ f.flip);
    int32_t zb = f.flip ? (xu ? a->x_zp - 128 : a->x_zp + 128) : a->x_zp;
    /* the staged geometry: shifts of the taps in staged rows and columns */
    int64_t qx = (f.k[2] - 1) * f.d[2] / f.s[2];
    f.qy = (f.k[1] - 1) * f.d[1] / f.s[1];
    f.pws = f.out[2] + qx;
    int64_t phases = f.s[1] * f.s[2];
    int64_t row_bytes = f.cgq * f.k[0] * phases * f.pws * 4;
    if (row_bytes < 1) row_bytes = 1;
    int64_t oh = f.out[1], outer = N * f.G * f.out[0];
    f.R = STAGE_BUDGET / row_bytes - f.qy;
    if (f.R < 1) f.R = 1;
    if (f.R > oh) f.R = oh;
    if (outer * ((oh + f.R - 1) / f.R) < MIN_UNITS) {
        int64_t want = (MIN_UNITS + outer - 1) / outer, r = (oh + want - 1) / want;
        /* but keep MIN_POS positions a band where the budget allows, and
         * split output channels instead: a 1x1 conv at 20x20 cut into
         * bands of one row ran its products 20 positions wide in
         * 48-wide panels, slower than the f32 conv */
        int64_t rmin = (MIN_POS + f.pws - 1) / f.pws;
        if (rmin > f.R) rmin = f.R;
        if (r < rmin) r = rmin;
        if (r < f.R) f.R = r > 0 ? r : 1;
    }
    f.bands = (oh + f.R - 1) / f.R;
    int64_t units = outer * f.bands;
    f.mchunks = 1;
    if (units < MIN_UNITS) {
        f.mchunks = (MIN_UNITS + units - 1) / units;
        if (f.mchunks > f.gblocks) f.mchunks = f.gblocks;
    }
    f.mchunk = (f.gblocks + f.mchunks - 1) / f.mchunks * ST_S8_MR;
    f.mchunks = (f.mg + f.mchunk - 1) / f.mchunk;
    f.rows_alloc = f.R + f.qy + 1;
    f.plane = f.rows_alloc * f.pws * 4;
    f.stage_bytes = f.cgq * f.k[0] * phases * f.plane;
    f.direct = f.out[2] >= DIRECT_MIN_OW && f.ys[2] == 1;
    /* no shifts between staged rows (1x1, stride 1 across rows) and y's
     * rows of a channel back to back: the band's staged positions are y's
     * in order, so the band is one product stored straight into y, in full
     * 48-column panels (an 80-wide row ran as 48 + 32, a 20-wide one went
     * through the tile and copy_out) */
    f.flat = qx == 0 && f.qy == 0 && f.ys[2] == 1 && f.ys[1] == f.out[2];
    f.stream = f.direct && (double)st_operand_numel(y) * (double)f.es > STREAM_BYTES;
    /* per quad: (channel quad, tap) -> plane of (cq, tz, phase) and shift */
    f.off = malloc((size_t)(f.kq > 0 ? f.kq : 1) * sizeof *f.off);
    f.row_add = malloc((size_t)M * 2 * sizeof(int32_t));
    if (!f.off || !f.row_add) {
        free(f.off);
        free(f.row_add);
        return st_error(ST_ERR_NOMEM, "out of memory in an int8 Conv");
    }
    f.row_mul = f.row_add + M;
    for (int64_t cq = 0; cq < f.cgq; cq++)
        for (int64_t tap = 0; tap < f.taps; tap++) {
            int64_t tz = tap / (f.k[1] * f.k[2]), ky = tap / f.k[2] % f.k[1], kx = tap % f.k[2];
            int64_t vy = ky * f.d[1], vx = kx * f.d[2];
            int64_t pidx = (cq * f.k[0] + tz) * phases + (vy % f.s[1]) * f.s[2] + vx % f.s[2];
            f.off[cq * f.taps + tap] = pidx * f.plane + ((vy / f.s[1]) * f.pws + vx / f.s[2]) * 4;
        }
    /* C = D - zb' rsW' - zw' csX' + K zw' zb' + bias (gemm_s8.h), in uint32 */
    uint32_t K = (uint32_t)(f.cg * f.taps);
    for (int64_t m = 0; m < M; m++) {
        uint32_t zw = a->w_zp ? (uint32_t)a->w_zp[m * a->w_zp_step] : 0u;
        uint32_t v = (a->bias ? (uint32_t)a->bias[m] : 0u) - (uint32_t)zb * (uint32_t)a->w->sums[m] + K * zw * (uint32_t)zb;
        f.row_add[m] = (int32_t)v;
        f.row_mul[m] = (int32_t)(0u - zw);
        if (zw) f.colsum = true;
    }
    /* Output channels split into chunks: stage each band once for all
     * of them rather than once per chunk (the staging was a third of a
     * QDQ YOLOv8n's int8 conv time, most of it repeated).  The staged
     * bytes are the same either way. */
    if (f.mchunks > 1) {
        f.staged = st_scratch_take((size_t)(units * f.stage_bytes));
        if (f.staged) st_parallel_for(pool, units, stage_task, &f);
    }
    st_parallel_for(pool, N * f.G * f.out[0] * f.bands * f.mchunks, conv_task, &f);
    st_scratch_give(f.staged);
    free(f.off);
    free(f.row_add);
    if (f.err != ST_OK) return st_error(f.err, "out of memory in an int8 Conv");
    return ST_OK;
}
