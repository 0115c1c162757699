/*
 * k_conv.c — CPU Conv, 1 to 3 spatial dims: the dispatch, the portable
 * im2col + GEMM path, f64, and prepare (k_conv.h lists the other files).
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
#include "backends/cpu/k_conv.h"
#include "runtime/scratch.h"
#include "core/bigmem.h"
#include "backends/cpu/linalg.h"

bool st_conv_spatial_packed(const st_operand *o, int nsp)
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
        col = st_scratch_take((size_t)(kdim * np > 0 ? kdim * np : 1) * sizeof *col);
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
        out = st_scratch_take((size_t)(j->mg * np > 0 ? j->mg * np : 1) * sizeof *out);
        if (!out) {
            st_scratch_give(col);
            j->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
            return;
        }
        dst = out;
        ldc = np;
    }
    st_status r = st_sgemm(&wg, false, &cm, false, 1.0f, 0.0f, dst, ldc, j->mg, np, kdim);
    if (r != ST_OK) {
        st_scratch_give(col);
        st_scratch_give(out);
        j->err = r;
        return;
    }
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
    st_scratch_give(col);
    st_scratch_give(out);
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
    j.prep = k->priv;
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
        shift = st_scratch_take((size_t)M * sizeof *shift); /* the worker's, kept (scratch.h) */
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
    if (j.prep && (j.prep->packed_w || j.prep->packed_bf16 || j.prep->wino_u) && st_conv_fast(k, &j, &r)) {
        st_scratch_give(shift);
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
            st_scratch_give(shift);
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
        st_scratch_give(shift);
        free(wown);
        return r;
    }
    if (r == ST_OK && st_conv_fast(k, &j, &r)) {
        st_scratch_give(shift);
        free(wpack);
        free(wown);
        return r;
    }
    if (r != ST_OK) {
        st_scratch_give(shift);
        free(wpack);
        free(wown);
        return r;
    }
    bool unit = true;
    for (int i = 0; i < nsp; i++)
        if (s->k[i] != 1 || s->s[i] != 1 || s->pb[i] || s->pe[i]) unit = false;
    j.pointwise = unit && j.x->dtype == ST_F32 && st_conv_spatial_packed(j.x, nsp);
    j.y_packed = j.y->dtype == ST_F32 && st_conv_spatial_packed(j.y, nsp);
    j.tiles = (j.pixels + ST_CONV_TILE - 1) / ST_CONV_TILE;
    j.err = ST_OK;
    st_parallel_for(k->pool, j.y->sizes[0] * s->group * j.tiles, conv_task, &j);
    st_scratch_give(shift);
    free(wpack);
    free(wown);
    return j.err;
}

/* ---- prepare: the constant weights, packed once per command ---- */

/* Packs W (constant, [M, C/g, ...]) for the AVX-512 path: the Winograd
 * transform where st_conv_wino_tile picks one, else the GEMM's packed
 * layout (per group, blocks of ST_GEMM_MR output channels, element (r, k)
 * of a block at [k * MR + r]; rows past the group's last repeat it).
 * bf16 weights of a conv on bf16 data, where the CPU has avx512_bf16, are
 * packed for the bf16 GEMM instead (gemm_bf16.h), except where Winograd
 * runs: its transforms stay f32.
 * Depthwise convs read their weights as they are and get neither.  Without
 * AVX-512 (or with STRATA_CPU_NO_AVX512) nothing is packed: the portable
 * path reads W itself. */
static st_status conv_prepare(const st_knode *n, void **priv)
{
    const st_conv_state *cs = n->state;
    const st_view *w = &n->views[1], *y = &n->views[n->n_in];
    const void *wd = n->n_in > 1 ? n->data[1] : NULL;
    *priv = NULL;
    if (!st_gemm_fast() || !wd || !st_dtype_is_float(w->dtype) || w->dtype == ST_F64 || w->rank < 3 || cs->group < 1 ||
        w->sizes[0] % cs->group)
        return ST_OK;
    int64_t m = w->sizes[0], k = st_numel(w->rank - 1, w->sizes + 1), mg = m / cs->group;
    if (w->sizes[1] == 1 && mg == 1) return ST_OK; /* depthwise */
    st_cpu_conv_prep *p = calloc(1, sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory packing Conv weights");
    int wn = st_conv_wino_tile(cs, w->sizes, y->rank, y->sizes);
    if (wn) {
        /* no fallback to the GEMM layout when this fails: the Winograd
         * kernel rounds differently, and a result must not depend on how
         * much memory was free when the plan was made */
        p->wino_u = st_conv_wino_pack(cs, w->dtype, wd, w->sizes, wn);
        p->wino_n = wn;
        if (!p->wino_u) {
            free(p);
            return st_error(ST_ERR_NOMEM, "out of memory packing Conv weights (Winograd)");
        }
        *priv = p;
        return ST_OK;
    }
    const int64_t R = ST_GEMM_MR, blocks = (mg + R - 1) / R;
    size_t es = st_dtype_size(w->dtype);
    const char *src = wd;
    if (w->dtype == ST_BF16 && n->views[0].dtype == ST_BF16 && st_gemm_bf16_fast()) {
        /* bf16 weights and data: the bf16 GEMM's layout, a group at a time
         * through f32 rows (exact: bf16 widens to f32 without rounding) */
        size_t gw = st_gemm_bf16_a_words(mg, k);
        uint32_t *bdst = st_big_alloc((size_t)cs->group * gw * sizeof(uint32_t), "Conv weights (bf16)");
        float *rows = malloc((size_t)(mg * k) * sizeof *rows + 1);
        if (!bdst || !rows) {
            st_big_free(bdst);
            free(rows);
            free(p);
            return st_error(ST_ERR_NOMEM, "out of memory packing Conv weights (bf16)");
        }
        for (int64_t gi = 0; gi < cs->group; gi++) {
            st_convert(ST_F32, rows, ST_BF16, src + gi * mg * k * (int64_t)es, (size_t)(mg * k));
            st_gemm_bf16_pack_a(rows, k, mg, k, bdst + gi * gw);
        }
        free(rows);
        p->packed_bf16 = bdst;
        *priv = p;
        return ST_OK;
    }
    /* session-lifetime: mapped on its own when large (core/bigmem.h) */
    float *dst = st_big_alloc((size_t)(cs->group * blocks * R * k) * sizeof(float), "Conv weights");
    if (!dst) {
        free(p);
        return st_error(ST_ERR_NOMEM, "out of memory packing Conv weights");
    }
    for (int64_t gi = 0; gi < cs->group; gi++)
        for (int64_t b = 0; b < blocks; b++) {
            float *blk = dst + (gi * blocks + b) * R * k;
            for (int64_t r = 0; r < R; r++) {
                int64_t row = gi * mg + (b * R + r < mg ? b * R + r : mg - 1);
                for (int64_t q = 0; q < k; q++) blk[q * R + r] = st_load_f32(w->dtype, src + (row * k + q) * (int64_t)es);
            }
        }
    p->packed_w = dst;
    *priv = p;
    return ST_OK;
}

static void conv_release(void *priv)
{
    st_cpu_conv_prep *p = priv;
    if (!p) return;
    st_big_free(p->packed_w);
    st_big_free(p->packed_bf16);
    st_big_free(p->wino_u);
    free(p);
}

/* The residual operand of passes/fuse_conv_add.c is CUDA's alone: the
 * pass runs only for its plans, and a node it rewrote must not run here
 * with R ignored. */
static bool conv_accepts(const st_knode *n, char *why, size_t len)
{
    const st_conv_state *s = n->state;
    if (s && s->residual) return st_kernel_refuse(why, len, "a residual operand (CUDA's fused Conv + Add)");
    return true;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_conv[] = {
    {"Conv", "", ST_DT_ALL, st_cpu_conv, conv_accepts, conv_prepare, conv_release},
    {NULL}
};
