/*
 * k_winograd.c — Winograd F(2x2, 3x3) and F(4x4, 3x3) for 3x3 stride-1
 * convs on the AVX-512 path, and the filter transform that prepare runs.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/common/cvt_half.h"
#include "backends/cpu/k_conv.h"
#include "runtime/scratch.h"
#include "core/bigmem.h"

/*
 * Each 2x2 block of outputs (a tile) is A^T [U (.) V] A, where V = B^T d B
 * is the tile's 4x4 input patch transformed (additions only), U = G g G^T
 * the 3x3 filter transformed (once, by the kernel's prepare), and (.)
 * runs as 16 GEMMs, one per position xi of the 4x4: out-channels x
 * in-channels times in-channels x tiles.  That is 16 multiply-adds per 4
 * outputs per channel pair instead of 36, 2.25 times fewer.
 * A task takes (image, group, band of 2 * wtr output rows, block of output
 * channels): channel by channel it stages the band's input rows split
 * into even and odd columns (a tile's 4 columns are then the 2 even and 2
 * odd values at q and q + 1) and transforms them into V [16][cg][tiles];
 * then, msub output channels at a time over the same V, it runs the GEMMs
 * into M [16][msub][tiles] and transforms M into the outputs with the
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
    int64_t msub = f->msub < mrows ? f->msub : mrows;
    size_t st_f = (size_t)(rin * wn * f->lqp), v_f = (size_t)(xis * cg * f->tp), m_f = (size_t)(xis * msub * f->tp);
    float *buf = st_scratch_take((st_f + v_f + m_f + 4 * (size_t)f->ow + (size_t)f->w_ + 64) * sizeof(float));
    if (!buf) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return;
    }
    float *S = buf, *V = S + st_f, *Mb = V + v_f, *tmp = Mb + m_f;
    /* per channel: stage rows oy0 - pt .. split into wn column phases of
     * the padded row (phase j, column q: padded column wn * q + j), then
     * V = B^T d B for its tiles; S holds one channel's rows only, so the
     * task's buffers are V and M (the staged rows are read back while
     * they are still in L1) */
    const st_operand *x = f->x;
    size_t es = st_dtype_size(x->dtype);
    int64_t xrs = x->strides[2], xcs = x->strides[3], lq = f->tiles_x + 1;
    float *cvt = tmp + 4 * f->ow;
    for (int64_t c = 0; c < cg; c++) {
        const char *xc = (const char *)x->data + (n * x->strides[0] + (g * cg + c) * x->strides[1]) * (int64_t)es;
        for (int64_t r = 0; r < rin; r++) {
            float *ph = S + (r * wn) * f->lqp;
            int64_t iy = oy0 + r - f->pt;
            if (iy < 0 || iy >= f->h) {
                memset(ph, 0, (size_t)(wn * f->lqp) * sizeof *ph);
                continue;
            }
            /* the row as unit-stride f32: where it lies, or converted
             * (f16 and bf16 sixteen lanes a vector) */
            const float *xr = (const float *)(xc + iy * xrs * (int64_t)es);
            if (x->dtype != ST_F32 || xcs != 1) {
                st_cvt_row_to_f32(cvt, x->dtype, xc + iy * xrs * (int64_t)es, xcs, f->w_);
                xr = cvt;
            }
            if (wn == 2) st_split2(xr, f->w_, -f->pl, ph, ph + f->lqp, lq);
            else st_split4(xr, f->w_, -f->pl, ph, ph + f->lqp, ph + 2 * f->lqp, ph + 3 * f->lqp, lq);
        }
        for (int64_t i = 0; i < tr; i++) {
            float *v = V + c * f->tp + i * f->tiles_x;
            if (wn == 2) {
                const float *e[4], *o[4];
                for (int r = 0; r < 4; r++) {
                    e[r] = S + ((2 * i + r) * 2) * f->lqp;
                    o[r] = e[r] + f->lqp;
                }
                st_wino_in_row(e, o, v, cg * f->tp, f->tiles_x);
            } else {
                const float *ph[24];
                for (int r = 0; r < 6; r++)
                    for (int j = 0; j < 4; j++) ph[4 * r + j] = S + ((4 * i + r) * 4 + j) * f->lqp;
                st_wino4_in_row(ph, v, cg * f->tp, f->tiles_x);
            }
        }
    }
    /* per block of msub output channels (V stays): M[xi] = U[xi] V[xi],
     * then the outputs A^T M A with the epilogue */
    const st_operand *y = f->y;
    size_t ey = st_dtype_size(y->dtype);
    int64_t yrs = y->strides[2], ycs = y->strides[3];
    bool direct = y->dtype == ST_F32 && ycs == 1;
    int64_t kcb = st_gemm_kc(cg);
    for (int64_t s0 = 0; s0 < mrows; s0 += msub) {
        int64_t srows = mrows - s0 < msub ? mrows - s0 : msub;
        for (int64_t xi = 0; xi < xis; xi++) {
            const float *a = f->wu + ((xi * f->G + g) * f->mblocks + (m0 + s0) / ST_GEMM_MR) * cg * ST_GEMM_MR;
            float *c = Mb + xi * srows * f->tp;
            for (int64_t k0 = 0; k0 < cg; k0 += kcb) {
                int64_t kc = cg - k0 < kcb ? cg - k0 : kcb;
                st_gemm_b b = {V + (xi * cg + k0) * f->tp, f->off, ST_GEMM_NR};
                st_gemm_block(a + k0 * ST_GEMM_MR, -(cg * ST_GEMM_MR), &b, kc, srows, nt, c, f->tp, k0 > 0, NULL);
            }
        }
        int64_t mabs = g * f->mg + m0 + s0;
        for (int64_t m = 0; m < srows; m++) {
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
                if (wn == 2) st_wino_out_rows(mm, srows * f->tp, f->tiles_x, &epi, r[0], r[1], f->ow);
                else st_wino4_out_rows(mm, srows * f->tp, f->tiles_x, &epi, r, f->ow);
                if (!direct)
                    for (int a = 0; a < have; a++)
                        st_cvt_row_from_f32(y->dtype, yc + (oy + a) * yrs * (int64_t)ey, ycs, tmp + a * f->ow, f->ow);
            }
        }
    }
    st_scratch_give(buf);
}

/* Budget of one Winograd task's buffers (staged rows, V, M), in floats:
 * 3 MB, more than L2 (2 MB) holds.  Measured against 0.5, 1 and 2 MB
 * (bench/RESULTS.md, issue 9, attempt 9): the 80x80 layers run 10-15%
 * faster with bands of 4 tile rows and one channel block than with the
 * 2-row bands and channel splits a 1 MB budget forces, since each band
 * stages its halo rows and each channel block its input again; 0.5 MB was
 * slower still. */
#define ST_WINO_BUDGET 786432
/* The most a task's buffers may take when that makes fewer passes over U:
 * a conv with many channels on a small plane (IS-Net's 1024->512 at
 * 32x32: U is 75 MB) is bound by reading U once per task, so whole-plane
 * bands split by output channels beat L2-sized bands (16 MB) */
#define ST_WINO_BIG_BUDGET 4194304

bool st_conv_wino(const st_kctx *k, fconv *f, st_status *err)
{
    f->wu = f->prep->wino_u;
    f->wn = f->prep->wino_n == 4 ? 4 : 2;
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
    /* U larger than 16 MB comes from memory, a cycle per float each time
     * a task reads it; then bands may grow past the L2 budget (V read
     * back from L3 costs half a cycle a float) to cut the passes over U */
    bool ubig = 4.0 * (double)(xis * f->cg * f->mblocks * ST_GEMM_MR) > 16e6;
    double umem = ubig ? 1.0 : 0.0;
    int64_t budget = ubig ? ST_WINO_BIG_BUDGET : ST_WINO_BUDGET;
    double best = -1;
    f->wtr = 1;
    f->mchunk = f->mblocks * ST_GEMM_MR;
    for (int64_t tr = 1; tr <= trows; tr++) {
        int64_t nt = tr * f->tiles_x, bands = (trows + tr - 1) / tr;
        for (int64_t chunks = 1; chunks <= f->mblocks; chunks++) {
            int64_t mchunk = (f->mblocks + chunks - 1) / chunks * ST_GEMM_MR;
            if (chunks > 1 && (f->mblocks + chunks - 2) / (chunks - 1) * ST_GEMM_MR == mchunk) continue;
            int64_t nch = (f->mg + mchunk - 1) / mchunk;
            /* one channel's staged rows, V, and M for at least one block
             * of ST_GEMM_MR output channels (a task runs its channels in
             * blocks of msub, reusing V) */
            int64_t floats = (wn * tr + 2) * wn * f->lqp + xis * (f->cg + ST_GEMM_MR) * nt;
            if (floats > budget && tr > 1) continue;
            /* a full band's task, and the last band's (fewer tile rows) */
            double cost[2];
            for (int last = 0; last < 2; last++) {
                int64_t r = last ? trows - (bands - 1) * tr : tr, n = r * f->tiles_x;
                int64_t vecs = n / ST_GEMM_NR * (ST_GEMM_NR / 16) + (n % ST_GEMM_NR + 15) / 16;
                double gemm = 0.5 * (double)(xis * f->cg * mchunk * vecs);
                double tin = (double)(f->cg * r * lgroups) * (wn == 4 ? 130.0 : 60.0) +
                             (double)(f->cg * (wn * r + 2) * (lgroups + 1)) * 12.0;
                /* V past the budget lives in L3: written and read back */
                double vmem = ubig && floats > ST_WINO_BUDGET ? 0.5 * (double)(xis * f->cg * n) : 0.0;
                cost[last] = gemm + tin + umem * (double)(xis * f->cg * mchunk) + vmem + 3000.0;
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
    /* output channels per GEMM pass within a task: as many blocks as the
     * budget leaves room for next to V (at least one) */
    {
        int64_t nt = f->wtr * f->tiles_x;
        int64_t fixed = (wn * f->wtr + 2) * wn * f->lqp + xis * f->cg * nt;
        int64_t left = (fixed + xis * ST_GEMM_MR * nt > ST_WINO_BUDGET ? budget : ST_WINO_BUDGET) - fixed;
        int64_t blocks = left > 0 ? left / (xis * nt * ST_GEMM_MR) : 0;
        if (blocks < 1) blocks = 1;
        f->msub = blocks * ST_GEMM_MR;
    }
    int64_t units = f->N * f->G * f->bands;
    f->mchunks = (f->mg + f->mchunk - 1) / f->mchunk;
    int64_t kcb = st_gemm_kc(f->cg);
    f->off = st_scratch_take((size_t)kcb * sizeof *f->off);
    if (!f->off) {
        *err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return true;
    }
    for (int64_t c = 0; c < kcb; c++) f->off[c] = c * f->tp;
    f->err = ST_OK;
    st_parallel_for(k->pool, units * f->mchunks, wino_task, f);
    st_scratch_give(f->off);
    *err = f->err;
    return true;
}

/* ---- the filter transform (the Conv kernel's prepare, k_conv.c) ---- */

/* Which Winograd tile a conv runs with on the CPU, 0 for none: 3x3,
 * stride 1, dilation 1, 2-D, and enough input channels per group that the
 * GEMMs (whose depth is the channel count) outweigh the transforms
 * (measured: bench/RESULTS.md).  F(4x4, 3x3) where the output has room
 * for 4x4 tiles, else F(2x2, 3x3). */
#define ST_WINO4_MIN_CHANNELS 32
#define ST_WINO2_MIN_CHANNELS 64

int st_conv_wino_tile(const st_conv_state *s, const int64_t *wd, int yrank, const int64_t *yd)
{
    if (s->nsp != 2 || wd[2] != 3 || wd[3] != 3) return 0;
    for (int d = 0; d < 2; d++)
        if (s->s[d] != 1 || s->d[d] != 1) return 0;
    if (wd[0] / s->group < 8 || yrank != 4) return 0;
    if (wd[1] >= ST_WINO4_MIN_CHANNELS && yd[2] >= 8 && yd[3] >= 8) return 4;
    if (wd[1] >= ST_WINO2_MIN_CHANNELS && yd[2] >= 2 && yd[3] >= 2) return 2;
    return 0;
}

/* U = G g G^T for every (output, input) channel pair, stored as (n + 2)^2
 * matrices xi = (n + 2) a + b, each in the GEMM's packed layout (per group,
 * blocks of ST_GEMM_MR output channels).  F(2x2, 3x3): G = [1 0 0; 1/2 1/2
 * 1/2; 1/2 -1/2 1/2; 0 0 1].  F(4x4, 3x3): G = [1/4 0 0; -1/6 -1/6 -1/6;
 * -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1], computed in
 * double.  W is packed [M, C/g, 3, 3] of dtype wt.  Returns a buffer the
 * caller frees with st_big_free (core/bigmem.h), or NULL. */
float *st_conv_wino_pack(const st_conv_state *s, st_dtype wt, const void *w, const int64_t *wd, int n)
{
    static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    static const double G4[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                    {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
    const int64_t R = ST_GEMM_MR;
    int al = n + 2;
    int64_t cg = wd[1], groups = s->group, mg = wd[0] / groups, blocks = (mg + R - 1) / R;
    float *dst = st_big_alloc((size_t)(al * al * groups * blocks * R * cg) * sizeof(float), "Conv weights (Winograd)");
    if (!dst) return NULL;
    size_t es = st_dtype_size(wt);
    const char *src = w;
    for (int64_t gi = 0; gi < groups; gi++)
        for (int64_t b = 0; b < blocks; b++)
            for (int64_t r = 0; r < R; r++) {
                int64_t m = gi * mg + (b * R + r < mg ? b * R + r : mg - 1);
                for (int64_t c = 0; c < cg; c++) {
                    double g[3][3], h[6][3];
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++)
                            g[ky][kx] = st_load_f32(wt, src + (((m * cg + c) * 3 + ky) * 3 + kx) * (int64_t)es);
                    for (int a = 0; a < al; a++) /* G g */
                        for (int kx = 0; kx < 3; kx++) {
                            h[a][kx] = 0;
                            for (int ky = 0; ky < 3; ky++) h[a][kx] += (n == 4 ? G4[a][ky] : G2[a][ky]) * g[ky][kx];
                        }
                    for (int a = 0; a < al; a++) /* (G g) G^T */
                        for (int bb = 0; bb < al; bb++) {
                            double u = 0;
                            for (int kx = 0; kx < 3; kx++) u += h[a][kx] * (n == 4 ? G4[bb][kx] : G2[bb][kx]);
                            dst[((((int64_t)(a * al + bb) * groups + gi) * blocks + b) * cg + c) * R + r] = (float)u;
                        }
                }
            }
    return dst;
}
