/*
 * k_linalg.c — CPU MatMul and Gemm, and the strided GEMM that Conv uses.
 *
 * f32, f16 and bf16 go through st_sgemm, accumulating in f32: the
 * AVX-512 GEMM of gemm_avx512.c where the CPU has it, else OpenBLAS's sgemm;
 * bf16 matrix products take the bf16 GEMM (gemm_bf16.h, vdpbf16ps) where
 * the CPU has avx512_bf16
 * (Debian's OpenBLAS 0.3.21 does not know Sapphire Rapids and would fall
 * back to its SSE3 kernels there).
 * operands whose rows or columns are unit-stride are passed as they are
 * (a transposed view becomes a transposed GEMM, not a copy); anything else,
 * and every f16/bf16 operand, is packed to f32 first.  An output that is
 * not row-major with unit stride (a slice of a last-dim concat has a row
 * stride wider than N, which sgemm takes as ldc; a transposed output does
 * not fit) is computed into a packed block and then copied into place.
 * Work is split into tasks of at most ST_GEMM_ROWS rows of one batch (and
 * of ST_MM_COLS columns when that makes too few; a single GEMM in tiles of
 * gemm_tiles below), a split that does not
 * depend on the thread count, so results are bit-identical however many
 * threads run.
 * f64 and integer matmuls use plain loops: they are rare and small.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/cvt_half.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "runtime/scratch.h"
#include "core/bigmem.h"
#include "ops/linalg.h"

#define ST_GEMM_ROWS 64
#define ST_MM_COLS 384
#define ST_MM_MIN_TASKS 8
#define ST_MM_TILE_ROWS 256
#define ST_MM_TILE_COLS 192
#define ST_MM_TILE_MIN 4

/* Tiles of one GEMM (no batches): the AVX-512 GEMM packs the part of B a
 * task reads once per call, so tasks of 64 rows by every column packed
 * all of B once per 64 rows (three times for 154 rows of a 2x77 batch).
 * Tiles of up to 256 rows by about 192 columns (whole 48-column panels,
 * balanced) pack each column of B about once; rows are halved (down to
 * 64) while that makes fewer than 4 tasks, to keep 2-4 cores busy.
 * Depends only on the shape, so results do not depend on the thread
 * count. */
static void gemm_tiles(int64_t m, int64_t n, int64_t *mrows, int64_t *ncols)
{
    int64_t nt = (n + ST_MM_TILE_COLS - 1) / ST_MM_TILE_COLS, nr = 48;
    int64_t nc = (n + nt - 1) / nt;
    nc = nt > 1 ? (nc + nr - 1) / nr * nr : n;
    nt = (n + nc - 1) / nc;
    int64_t mr = ST_MM_TILE_ROWS;
    while (mr > ST_GEMM_ROWS && (m + mr - 1) / mr * nt < ST_MM_TILE_MIN) mr /= 2;
    *mrows = mr;
    *ncols = nc;
}

/* OpenBLAS serves only CPUs without AVX-512, so it is loaded on first use
 * rather than linked: a linked OpenBLAS starts its thread pool when the
 * process starts, and those threads spin for a tenth of a second or so,
 * taking a core from strata's own workers in every short run.  The
 * function pointers are written once (pthread_once) and only read after.
 * Without OpenBLAS the plain loops below still give the right answer. */
typedef void (*sgemm_fn)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE, const enum CBLAS_TRANSPOSE, const int,
                         const int, const int, const float, const float *, const int, const float *, const int,
                         const float, float *, const int);
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static sgemm_fn blas_sgemm;

static void blas_load(void)
{
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    /* strata parallelises GEMMs itself; OpenBLAS's own threads would
     * oversubscribe the cores */
    void (*set_threads)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
    if (set_threads) set_threads(1);
    blas_sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
}

/* c = alpha * op(a) op(b) + beta * c in plain loops (no BLAS at all). */
static void loops_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = 0.0f;
            for (int64_t p = 0; p < k; p++) s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = alpha * s + (beta == 0.0f ? 0.0f : beta * c[i * ldc + j]);
        }
}

st_status st_mat_f32(const st_operand *o, int rdim, int cdim, int64_t base_off, st_mat *m, float **owned)
{
    int64_t rows = rdim >= 0 ? o->sizes[rdim] : 1, cols = cdim >= 0 ? o->sizes[cdim] : 1;
    int64_t rs = rdim >= 0 ? o->strides[rdim] : 0, cs = cdim >= 0 ? o->strides[cdim] : 0;
    *owned = NULL;
    m->rows = rows;
    m->cols = cols;
    if (o->dtype == ST_F32) {
        /* a single row or column may carry any stride: pick the layout
         * BLAS can take (row-major: cs == 1, lda = rs >= cols; column-
         * major: rs == 1, lda = cs >= rows) */
        if (cols == 1) cs = 1;
        if (rows == 1) rs = cs == 1 ? cols : 1;
        m->p = (const float *)o->data + base_off;
        m->rs = rs;
        m->cs = cs;
        if ((cs == 1 && (rows == 1 || rs >= cols)) || (rs == 1 && (cols == 1 || cs >= rows))) return ST_OK;
        rs = rdim >= 0 ? o->strides[rdim] : 0;
        cs = cdim >= 0 ? o->strides[cdim] : 0;
    }
    float *buf = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof *buf);
    if (!buf) return st_error(ST_ERR_NOMEM, "out of memory packing a %lldx%lld matrix", (long long)rows, (long long)cols);
    size_t es = st_dtype_size(o->dtype);
    const char *src = (const char *)o->data + base_off * (int64_t)es;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) buf[i * cols + j] = st_load_f32(o->dtype, src + (i * rs + j * cs) * (int64_t)es);
    m->p = buf;
    m->rs = cols;
    m->cs = 1;
    *owned = buf;
    return ST_OK;
}

st_status st_sgemm(const st_mat *a, bool ta, const st_mat *b, bool tb, float alpha, float beta, float *c, int64_t ldc,
                   int64_t m, int64_t n, int64_t k)
{
    /* logical A is [m, k] = op(a); a.cs == 1 means a is row-major */
    bool a_rm = a->cs == 1, b_rm = b->cs == 1;
    int64_t lda = a_rm ? a->rs : a->cs, ldb = b_rm ? b->rs : b->cs;
    CBLAS_TRANSPOSE opa = (a_rm != ta) ? CblasNoTrans : CblasTrans;
    CBLAS_TRANSPOSE opb = (b_rm != tb) ? CblasNoTrans : CblasTrans;
    /* BLAS wants lda >= the row length it reads; a single row or column
     * may carry any stride, so fix it up */
    int64_t need_a = (opa == CblasNoTrans) ? k : m, need_b = (opb == CblasNoTrans) ? n : k;
    if (lda < need_a) lda = need_a;
    if (ldb < need_b) ldb = need_b;
    if (m == 0 || n == 0) return ST_OK;
    if (k == 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return ST_OK;
    }
    if (st_gemm_fast()) {
        /* element (i, p) of op(a) and (p, j) of op(b), as strides */
        int64_t ars = ta ? a->cs : a->rs, acs = ta ? a->rs : a->cs;
        int64_t brs = tb ? b->cs : b->rs, bcs = tb ? b->rs : b->cs;
        /* one row (or column) of output: a matrix-vector product */
        int v = m == 1 ? st_sgemv_fast(a->p, acs, b->p, brs, bcs, alpha, beta, c, 1, n, k)
              : n == 1 ? st_sgemv_fast(b->p, brs, a->p, acs, ars, alpha, beta, c, ldc, m, k)
                       : 0;
        if (v > 0) return ST_OK;
        if (v < 0)
            return st_error(ST_ERR_NOMEM, "out of memory gathering a strided vector for a %lld x %lld x %lld matrix product",
                            (long long)m, (long long)n, (long long)k);
        if (m == 1) ars = 0;
        if (n == 1) bcs = 0;
        if (st_sgemm_fast(a->p, ars, acs, b->p, brs, bcs, alpha, beta, c, ldc, m, n, k)) return ST_OK;
        return st_error(ST_ERR_NOMEM, "out of memory packing a %lld x %lld x %lld matrix product", (long long)m,
                        (long long)n, (long long)k);
    }
    pthread_once(&blas_once, blas_load);
    if (blas_sgemm)
        blas_sgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)k, alpha, a->p, (int)lda, b->p, (int)ldb, beta, c, (int)ldc);
    else
        loops_sgemm(opa == CblasTrans, opb == CblasTrans, m, n, k, alpha, a->p, lda, b->p, ldb, beta, c, ldc);
    return ST_OK;
}

/* The bf16 GEMM (gemm_bf16.h) where both operands are bf16, the CPU has
 * avx512_bf16 and the product is a matrix one (a matrix-vector product
 * is bound by reading the matrix, and its f32 products of bf16 values
 * are exact anyway); ma and mb hold the operands widened to f32 (exact),
 * the untransposed op(A) and op(B).  Else, and where gemm_bf16 leaves
 * this alpha and beta to it, the f32 GEMM. */
static st_status gemm_any(st_dtype ta_t, st_dtype tb_t, const st_mat *ma, bool ta, const st_mat *mb, bool tb, float alpha,
                          float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k)
{
    if (ta_t == ST_BF16 && tb_t == ST_BF16 && m > 1 && n > 1 && st_gemm_bf16_fast()) {
        int64_t ars = ta ? ma->cs : ma->rs, acs = ta ? ma->rs : ma->cs;
        int64_t brs = tb ? mb->cs : mb->rs, bcs = tb ? mb->rs : mb->cs;
        int r = st_gemm_bf16(ma->p, ars, acs, mb->p, brs, bcs, alpha, beta, c, ldc, m, n, k);
        if (r > 0) return ST_OK;
        if (r < 0)
            return st_error(ST_ERR_NOMEM, "out of memory packing a %lld x %lld x %lld bf16 matrix product", (long long)m,
                            (long long)n, (long long)k);
    }
    return st_sgemm(ma, ta, mb, tb, alpha, beta, c, ldc, m, n, k);
}

/* ---- MatMul ---- */

/* The GEMM's panels of a constant (initializer) B: the AVX-512 GEMM packs
 * B on every run otherwise (8.5% of a transformer encoder's samples, for
 * weights that never change).  Only the packed layout is new; st_sgemm's
 * k blocking and FMA order are the same, so results are bit-identical to
 * the unpacked path.  B is op(B) of the run: k x n, and the run checks
 * its sizes again before it uses the panels. */
typedef struct linalg_prep {
    float *b;
    int64_t k, n;
} linalg_prep;


/* A fused bias (from column n0) and activation (st_matmul_state's, set
 * by passes/fuse_matmul.c) on a finished tile, for the paths whose GEMM
 * did not apply them in its epilogue: one f32 add, then the vector
 * activation where there is one, as the kernel's epilogue and the separate
 * ops compute them, so every path gives the same bits. */
static void epi_tile(const st_gemm_epi *e, int64_t n0, float *c, int64_t ldc, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        float *r = c + i * ldc;
        if (e->col_shift)
            for (int64_t j = 0; j < cols; j++) r[j] += e->col_shift[n0 + j];
        if (e->act.act && !st_vec_act(&e->act, r, r, cols)) st_epilogue_f32(&e->act, r, cols);
    }
}

/* The epilogue of columns [n0, ..) of a product with epilogue e. */
static st_gemm_epi epi_from(const st_gemm_epi *e, int64_t n0)
{
    st_gemm_epi r = *e;
    if (r.col_shift) r.col_shift += n0;
    return r;
}

typedef struct mm_job {
    const st_kctx *k;
    const st_operand *a, *b, *y;
    int64_t m, n, kk;
    int64_t batches, mtiles, ntiles, mrows, ncols; /* tasks: batch x row tile x column tile */
    int nb;                          /* batch rank of the output */
    int64_t sa[ST_MAX_RANK], sb[ST_MAX_RANK];
    bool a_vec, b_vec;               /* 1-D operands */
    float alpha;
    const float *bpre;               /* B packed at plan time (linalg_prep), or NULL */
    const st_gemm_epi *epi;          /* fused bias and activation, or NULL */
    st_status err;
} mm_job;

static void batch_offsets(const mm_job *j, int64_t bi, int64_t *oa, int64_t *ob, int64_t *oy)
{
    *oa = *ob = *oy = 0;
    for (int d = j->nb - 1; d >= 0; d--) {
        int64_t i = bi % j->y->sizes[d];
        bi /= j->y->sizes[d];
        *oa += i * j->sa[d];
        *ob += i * j->sb[d];
        *oy += i * j->y->strides[d];
    }
}

static void mm_task(void *arg, int64_t t)
{
    mm_job *j = arg;
    int64_t nt = t % j->ntiles, bi = t / j->ntiles / j->mtiles, m0 = (t / j->ntiles % j->mtiles) * j->mrows;
    int64_t m1 = m0 + j->mrows < j->m ? m0 + j->mrows : j->m, rows = m1 - m0;
    int64_t n0 = nt * j->ncols, ncols = j->n - n0 < j->ncols ? j->n - n0 : j->ncols;
    int64_t oa, ob, oy;
    batch_offsets(j, bi, &oa, &ob, &oy);
    const st_operand *a = j->a, *b = j->b, *y = j->y;
    int ra = a->rank;
    st_operand as = *a;
    /* rows [m0, m1) of A */
    int adim_r = j->a_vec ? -1 : ra - 2, adim_c = ra - 1;
    if (adim_r >= 0) {
        as.sizes[adim_r] = rows;
        oa += m0 * a->strides[adim_r];
    }
    int bdim_r = j->b_vec ? b->rank - 1 : b->rank - 2, bdim_c = j->b_vec ? -1 : b->rank - 1;
    /* columns [n0, n0 + ncols) of B */
    st_operand bs = *b;
    if (bdim_c >= 0) {
        bs.sizes[bdim_c] = ncols;
        ob += n0 * b->strides[bdim_c];
    }
    st_mat ma, mb;
    float *pa = NULL, *pb = NULL, *pc = NULL;
    /* the plan-time panels of a constant B serve every tile that st_sgemm
     * would run as a GEMM (not a matrix-vector product) */
    bool pre = j->bpre && rows > 1 && ncols > 1 && n0 % ST_GEMM_NR == 0;
    st_status s = st_mat_f32(&as, adim_r, adim_c, oa, &ma, &pa);
    if (s == ST_OK && !pre) s = st_mat_f32(&bs, bdim_r, bdim_c, ob, &mb, &pb);
    /* output rows [m0, m1), columns [n0, n0 + ncols): direct when row-major f32 */
    int ydim_r = j->a_vec ? -1 : (j->b_vec ? y->rank - 1 : y->rank - 2);
    int ydim_c = j->b_vec ? -1 : y->rank - 1;
    int64_t yrs = ydim_r >= 0 ? y->strides[ydim_r] : 0, ycs = ydim_c >= 0 ? y->strides[ydim_c] : 1;
    oy += n0 * ycs;
    float *cdst;
    int64_t ldc;
    bool direct = y->dtype == ST_F32 && (ycs == 1 || ncols == 1) && (rows == 1 || yrs >= ncols);
    if (s == ST_OK) {
        if (direct) {
            cdst = (float *)y->data + oy + m0 * yrs;
            ldc = rows == 1 ? ncols : yrs;
        } else {
            pc = malloc((size_t)(rows * ncols > 0 ? rows * ncols : 1) * sizeof *pc);
            if (!pc) s = st_error(ST_ERR_NOMEM, "out of memory in MatMul");
            cdst = pc;
            ldc = ncols;
        }
    }
    if (s == ST_OK && pre) {
        st_gemm_epi ep = j->epi ? epi_from(j->epi, n0) : (st_gemm_epi){0};
        if (!st_sgemm_fast_prepacked_epi(ma.p, ma.rs, ma.cs, j->bpre, j->n, n0, j->alpha, 0.0f, cdst, ldc, rows, ncols,
                                         j->kk, j->epi ? &ep : NULL))
            s = st_error(ST_ERR_NOMEM, "out of memory packing A of a %lld x %lld x %lld MatMul", (long long)rows,
                         (long long)ncols, (long long)j->kk);
    } else if (s == ST_OK) {
        s = gemm_any(a->dtype, b->dtype, &ma, false, &mb, false, j->alpha, 0.0f, cdst, ldc, rows, ncols, j->kk);
        if (s == ST_OK && j->epi) epi_tile(j->epi, n0, cdst, ldc, rows, ncols);
    }
    if (s == ST_OK) {
        if (!direct) {
            size_t es = st_dtype_size(y->dtype);
            for (int64_t i = 0; i < rows; i++)
                for (int64_t c = 0; c < ncols; c++)
                    st_store_f32(y->dtype, (char *)y->data + (oy + (m0 + i) * yrs + c * ycs) * (int64_t)es, pc[i * ncols + c]);
        }
    }
    free(pa);
    free(pb);
    free(pc);
    if (s != ST_OK) j->err = s; /* any one failure is reported */
}

/* f64 and integers: plain loops over strided elements. */
static void mm_generic(const mm_job *j)
{
    const st_operand *a = j->a, *b = j->b, *y = j->y;
    size_t ea = st_dtype_size(a->dtype), eb = st_dtype_size(b->dtype), ey = st_dtype_size(y->dtype);
    bool flt = st_dtype_is_float(a->dtype);
    for (int64_t bi = 0; bi < j->batches; bi++) {
        int64_t oa, ob, oy;
        batch_offsets(j, bi, &oa, &ob, &oy);
        int64_t ars = j->a_vec ? 0 : a->strides[a->rank - 2], acs = a->strides[a->rank - 1];
        int64_t brs = j->b_vec ? b->strides[b->rank - 1] : b->strides[b->rank - 2], bcs = j->b_vec ? 0 : b->strides[b->rank - 1];
        int64_t yrs = j->a_vec ? 0 : y->strides[j->b_vec ? y->rank - 1 : y->rank - 2], ycs = j->b_vec ? 0 : y->strides[y->rank - 1];
        for (int64_t i = 0; i < j->m; i++)
            for (int64_t c = 0; c < j->n; c++) {
                double fs = 0;
                int64_t is = 0;
                for (int64_t p = 0; p < j->kk; p++) {
                    const char *pa = (const char *)a->data + (oa + i * ars + p * acs) * (int64_t)ea;
                    const char *pb = (const char *)b->data + (ob + p * brs + c * bcs) * (int64_t)eb;
                    if (flt) fs += st_load_f64(a->dtype, pa) * st_load_f64(b->dtype, pb);
                    else is += (int64_t)((uint64_t)st_load_i64(a->dtype, pa) * (uint64_t)st_load_i64(b->dtype, pb));
                }
                char *py = (char *)y->data + (oy + i * yrs + c * ycs) * (int64_t)ey;
                if (flt) st_store_f64(y->dtype, py, fs);
                else st_store_i64(y->dtype, py, is);
            }
    }
}

/* The stride of dims [0, last] of o taken as one dim (size-1 dims
 * skipped), or -1 when they are not evenly spaced. */
static int64_t fused_stride(const st_operand *o, int last)
{
    int64_t st = -1, span = 0;
    for (int d = last; d >= 0; d--) {
        if (o->sizes[d] == 1) continue;
        if (st < 0) st = o->strides[d];
        else if (o->strides[d] != span) return -1;
        span = o->strides[d] * o->sizes[d];
    }
    return st < 0 ? 0 : st;
}

/* A batched A times a B without batch dims (a linear layer on [batch,
 * seq, d], or on a transposed view of it, as nn.MultiheadAttention's input
 * projection gets): one GEMM of batches x m rows instead of a GEMM per
 * batch, which for 77 batches of 2 rows packed the whole weight 77 times.
 * When A's rows are not evenly spaced they are gathered into *owned (f32,
 * row-major; cheap next to the GEMM: m k floats against m n k products).
 * False when the output's rows are not evenly spaced or on no memory:
 * the batched path then runs as before. */
static bool mm_fold_batches(const st_operand *a, const st_operand *b, const st_operand *y, st_operand *a2,
                            st_operand *y2, float **owned)
{
    *owned = NULL;
    if (a->rank < 3 || b->rank < 2 || a->rank != y->rank) return false;
    for (int d = 0; d < b->rank - 2; d++)
        if (b->sizes[d] != 1) return false;
    for (int d = 0; d < a->rank - 2; d++)
        if (a->sizes[d] != y->sizes[d]) return false;
    int64_t yrs = fused_stride(y, y->rank - 2), ars = fused_stride(a, a->rank - 2);
    int64_t rows = st_numel(a->rank - 1, a->sizes), kk = a->sizes[a->rank - 1], acs = a->strides[a->rank - 1];
    if (yrs < 0) return false;
    *a2 = *a;
    *y2 = *y;
    a2->rank = y2->rank = 2;
    a2->sizes[0] = y2->sizes[0] = rows;
    a2->sizes[1] = kk;
    a2->strides[1] = acs;
    y2->sizes[1] = y->sizes[y->rank - 1];
    y2->strides[1] = y->strides[y->rank - 1];
    y2->strides[0] = yrs;
    if (ars >= 0) {
        a2->strides[0] = ars;
        return true;
    }
    float *buf = malloc((size_t)(rows * kk > 0 ? rows * kk : 1) * sizeof *buf);
    if (!buf) return false;
    size_t es = st_dtype_size(a->dtype);
    for (int64_t r = 0; r < rows; r++) {
        /* element offset of row r: its index over dims [0, rank - 2] */
        int64_t off = 0, i = r;
        for (int d = a->rank - 2; d >= 0; d--) {
            off += i % a->sizes[d] * a->strides[d];
            i /= a->sizes[d];
        }
        st_cvt_row_to_f32(buf + r * kk, a->dtype, (const char *)a->data + off * (int64_t)es, acs, kk);
    }
    a2->data = buf;
    a2->dtype = ST_F32;
    a2->strides[0] = kk;
    a2->strides[1] = 1;
    *owned = buf;
    return true;
}

/* A 16-bit product with a fused bias or activation: the plan was made for
 * a backend that fuses them there (ST_CAP_MATMUL_EPI_LP) and this node
 * fell back to the CPU.  The product is stored as the unfused graph
 * stores it, then each element becomes act(y + bias[j]), rounded to y's
 * dtype after the add and after the activation, as the separate Add and
 * activation nodes round. */
static st_status lowp_epilogue(const st_kctx *k, st_kernel_fn run)
{
    const st_matmul_state *ms = k->state;
    st_matmul_state plain = *ms;
    plain.bias = NULL;
    plain.n_bias = 0;
    memset(&plain.act, 0, sizeof plain.act);
    st_kctx k2 = *k;
    k2.state = &plain;
    ST_TRY(run(&k2));
    const st_operand *y = &k->out[0];
    int64_t numel = st_operand_numel(y), n = y->rank ? y->sizes[y->rank - 1] : 1;
    if (ms->bias && ms->n_bias != n)
        return st_error(ST_ERR_INTERNAL, "node '%s': a fused bias of %lld for %lld columns", k->node->name,
                        (long long)ms->n_bias, (long long)n);
    size_t es = st_dtype_size(y->dtype);
    st_gemm_epi e = {0};
    e.act = ms->act;
    for (int64_t i = 0; i < numel; i++) {
        int64_t off = 0, r = i;
        for (int d = y->rank - 1; d >= 0; d--) {
            off += (r % y->sizes[d]) * y->strides[d];
            r /= y->sizes[d];
        }
        char *p = (char *)y->data + off * (int64_t)es;
        if (ms->bias) st_store_f64(y->dtype, p, (double)((float)st_load_f64(y->dtype, p) + ms->bias[i % n]));
        if (ms->act.act) {
            float v = (float)st_load_f64(y->dtype, p);
            st_gemm_epi_row(&e, 0, &v, 1);
            st_store_f64(y->dtype, p, (double)v);
        }
    }
    return ST_OK;
}

static bool lowp_epi(const st_kctx *k)
{
    const st_matmul_state *ms = k->state;
    return ms && (ms->bias || ms->act.act) && k->out[0].dtype != ST_F32;
}

st_status st_cpu_matmul(const st_kctx *k)
{
    if (lowp_epi(k)) return lowp_epilogue(k, st_cpu_matmul);
    const st_operand *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    st_operand a2, y2;
    float *owned = NULL;
    bool flt = a->dtype == ST_F32 || a->dtype == ST_F16 || a->dtype == ST_BF16;
    if (flt && mm_fold_batches(a, b, y, &a2, &y2, &owned)) {
        a = &a2;
        y = &y2;
        /* B's leading size-1 dims go too: the output has no batch dims left */
    }
    mm_job j = {0};
    j.k = k;
    j.a = a;
    j.b = b;
    j.y = y;
    j.alpha = 1.0f;
    j.a_vec = a->rank == 1;
    j.b_vec = b->rank == 1;
    j.m = j.a_vec ? 1 : a->sizes[a->rank - 2];
    j.kk = a->sizes[a->rank - 1];
    j.n = j.b_vec ? 1 : b->sizes[b->rank - 1];
    j.nb = y->rank - (j.a_vec ? 0 : 1) - (j.b_vec ? 0 : 1);
    /* batch strides of A and B in the output's batch space */
    int abr = a->rank - (j.a_vec ? 1 : 2), bbr = b->rank - (j.b_vec ? 1 : 2);
    for (int d = 0; d < j.nb; d++) {
        int ka = d - (j.nb - abr), kb = d - (j.nb - bbr);
        j.sa[d] = ka < 0 || a->sizes[ka] == 1 ? 0 : a->strides[ka];
        j.sb[d] = kb < 0 || b->sizes[kb] == 1 ? 0 : b->strides[kb];
    }
    j.batches = st_numel(j.nb, y->sizes);
    const linalg_prep *pp = k->priv;
    if (flt && pp && pp->k == j.kk && pp->n == j.n && !j.b_vec) j.bpre = pp->b;
    const st_matmul_state *ms = k->state;
    st_gemm_epi epi = {0};
    if (ms && (ms->bias || ms->act.act)) {
        /* passes/fuse_matmul.c fuses f32 products with a 2-D B only */
        if (!flt || y->dtype != ST_F32 || j.b_vec || (ms->bias && ms->n_bias != j.n)) {
            free(owned);
            return st_error(ST_ERR_INTERNAL, "node '%s': a fused bias of %lld for a %s MatMul of %lld columns",
                            k->node->name, (long long)ms->n_bias, st_dtype_name(y->dtype), (long long)j.n);
        }
        epi.col_shift = ms->bias;
        epi.act = ms->act;
        j.epi = &epi;
    }
    if (j.batches == 0 || j.m == 0 || j.n == 0) {
        free(owned);
        return ST_OK;
    }
    if (flt) {
        j.mrows = ST_GEMM_ROWS;
        j.mtiles = (j.m + ST_GEMM_ROWS - 1) / ST_GEMM_ROWS;
        /* columns too, in tiles of 384, when rows alone make few tasks (a
         * CTC head is 40 rows by 6625 columns); each output element is
         * still one whole sum, so the split changes no bits */
        j.ncols = j.n;
        if (j.batches * j.mtiles < ST_MM_MIN_TASKS && j.n > ST_MM_COLS) j.ncols = ST_MM_COLS;
        if (j.batches == 1 && j.m > 1 && !j.b_vec) {
            gemm_tiles(j.m, j.n, &j.mrows, &j.ncols);
            j.mtiles = (j.m + j.mrows - 1) / j.mrows;
        }
        j.ntiles = (j.n + j.ncols - 1) / j.ncols;
        j.err = ST_OK;
        st_parallel_for(k->pool, j.batches * j.mtiles * j.ntiles, mm_task, &j);
        free(owned);
        return j.err;
    }
    mm_generic(&j);
    return ST_OK;
}

/* ---- Gemm ---- */

typedef struct gemm_job {
    const st_operand *a, *b, *y;
    const st_matmul_state *s;
    st_mat ma, mb;
    int64_t m, n, kk;
    int64_t mrows, ncols, ntiles;    /* tasks: row tile x column tile */
    bool direct;
    float *tmp;
    const float *bpre;               /* op(B) packed at plan time, or NULL */
    float beta;                      /* the GEMM's: 1 when y starts as beta * C, else 0 */
    const st_gemm_epi *epi;          /* C as a per-column bias, the fused activation; or NULL */
    st_status err;
} gemm_job;

static void gemm_task(void *arg, int64_t t)
{
    gemm_job *j = arg;
    int64_t m0 = t / j->ntiles * j->mrows, rows = j->m - m0 < j->mrows ? j->m - m0 : j->mrows;
    int64_t n0 = t % j->ntiles * j->ncols, ncols = j->n - n0 < j->ncols ? j->n - n0 : j->ncols;
    st_mat ma = j->ma, mb = j->mb;
    /* columns [n0, n0 + ncols) of op(B) */
    if (j->s->trans_b) mb.p += n0 * mb.rs;
    else mb.p += n0 * mb.cs;
    /* rows [m0, m0 + rows) of op(A) */
    if (j->s->trans_a) ma.p += m0 * ma.cs;
    else ma.p += m0 * ma.rs;
    float *c;
    int64_t ldc;
    if (j->direct) {
        c = (float *)j->y->data + m0 * j->y->strides[0] + n0;
        ldc = j->y->strides[0];
    } else {
        c = j->tmp + m0 * j->n + n0;
        ldc = j->n;
    }
    if (ldc < j->n) ldc = j->n;
    st_status r = ST_OK;
    if (j->bpre && rows > 1 && ncols > 1 && n0 % ST_GEMM_NR == 0) {
        /* the plan-time panels of a constant B, where gemm_any would run
         * the f32 GEMM (not a matrix-vector product) */
        int64_t ars = j->s->trans_a ? ma.cs : ma.rs, acs = j->s->trans_a ? ma.rs : ma.cs;
        st_gemm_epi ep = j->epi ? epi_from(j->epi, n0) : (st_gemm_epi){0};
        if (!st_sgemm_fast_prepacked_epi(ma.p, ars, acs, j->bpre, j->n, n0, j->s->alpha, j->beta, c, ldc, rows, ncols,
                                         j->kk, j->epi ? &ep : NULL))
            r = st_error(ST_ERR_NOMEM, "out of memory packing A of a %lld x %lld x %lld Gemm", (long long)rows,
                         (long long)ncols, (long long)j->kk);
    } else {
        r = gemm_any(j->a->dtype, j->b->dtype, &ma, j->s->trans_a, &mb, j->s->trans_b, j->s->alpha, j->beta, c, ldc,
                     rows, ncols, j->kk);
        if (r == ST_OK && j->epi) epi_tile(j->epi, n0, c, ldc, rows, ncols);
    }
    if (r != ST_OK) j->err = r; /* any one failure is reported */
}

st_status st_cpu_gemm(const st_kctx *k)
{
    if (lowp_epi(k)) return lowp_epilogue(k, st_cpu_gemm);
    const st_matmul_state *s = k->state;
    const st_operand *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    const st_operand *cin = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    int64_t m = y->sizes[0], n = y->sizes[1], kk = s->trans_a ? a->sizes[0] : a->sizes[1];
    /* an empty output has nothing to write (and no tiles to divide it in) */
    if (m == 0 || n == 0) return ST_OK;
    if (!(a->dtype == ST_F32 || a->dtype == ST_F16 || a->dtype == ST_BF16)) {
        /* f64 and integers: plain loops */
        size_t ea = st_dtype_size(a->dtype), ey = st_dtype_size(y->dtype);
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < n; c++) {
                double acc = 0;
                for (int64_t p = 0; p < kk; p++) {
                    int64_t ia = s->trans_a ? p * a->strides[0] + i * a->strides[1] : i * a->strides[0] + p * a->strides[1];
                    int64_t ib = s->trans_b ? c * b->strides[0] + p * b->strides[1] : p * b->strides[0] + c * b->strides[1];
                    acc += st_load_f64(a->dtype, (const char *)a->data + ia * (int64_t)ea) *
                           st_load_f64(b->dtype, (const char *)b->data + ib * (int64_t)ea);
                }
                acc *= s->alpha;
                if (cin) {
                    int64_t idx[2] = {i, c}, sc[ST_MAX_RANK];
                    st_broadcast_strides(cin, y, sc);
                    acc += s->beta * st_load_f64(cin->dtype, (const char *)cin->data +
                                                                  (idx[0] * sc[0] + idx[1] * sc[1]) * (int64_t)st_dtype_size(cin->dtype));
                }
                st_store_f64(y->dtype, (char *)y->data + (i * y->strides[0] + c * y->strides[1]) * (int64_t)ey, acc);
            }
        return ST_OK;
    }
    gemm_job j = {0};
    j.a = a;
    j.b = b;
    j.y = y;
    j.s = s;
    j.m = m;
    j.n = n;
    j.kk = kk;
    float *pa = NULL, *pb = NULL;
    const linalg_prep *pp = k->priv;
    if (pp && pp->k == kk && pp->n == n) j.bpre = pp->b;
    st_status r = st_mat_f32(a, 0, 1, 0, &j.ma, &pa);
    /* a prepacked B is still read where a tile takes the matrix-vector path */
    if (r == ST_OK) r = st_mat_f32(b, 0, 1, 0, &j.mb, &pb);
    j.direct = y->dtype == ST_F32 && (y->strides[1] == 1 || n == 1) && (m == 1 || y->strides[0] >= n);
    if (r == ST_OK && !j.direct) {
        j.tmp = malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof *j.tmp);
        if (!j.tmp) r = st_error(ST_ERR_NOMEM, "out of memory in Gemm");
    }
    /* A C that varies along columns only (a linear layer's bias) is added
     * in the GEMM's epilogue, to each finished sum, instead of being
     * copied into y first for the sum to start from: one pass less over
     * y. */
    float *colb = NULL;
    st_gemm_epi epi = {0};
    bool per_col = cin && s->beta != 0.0f && (cin->rank == 1 || (cin->rank == 2 && cin->sizes[0] == 1)) &&
                   (cin->sizes[cin->rank - 1] == n || cin->sizes[cin->rank - 1] == 1);
    /* An f32 bias with beta 1, n unit-stride columns (a linear layer's),
     * is read where it lies; any other per-column C is scaled into
     * scratch, not malloc: a warm run allocates nothing here
     * (tests/faults' faults_alloc_warm_runs). */
    if (r == ST_OK && per_col) {
        int64_t cn = cin->sizes[cin->rank - 1], cs = cn == 1 ? 0 : cin->strides[cin->rank - 1];
        if (s->beta == 1.0f && cin->dtype == ST_F32 && cn == n && (cs == 1 || n == 1)) {
            epi.col_shift = (const float *)cin->data;
        } else {
            colb = st_scratch_take((size_t)n * sizeof *colb);
            if (!colb) r = st_error(ST_ERR_NOMEM, "out of memory in Gemm");
            size_t ec = st_dtype_size(cin->dtype);
            for (int64_t c = 0; colb && c < n; c++)
                colb[c] = s->beta * st_load_f32(cin->dtype, (const char *)cin->data + c * cs * (int64_t)ec);
            epi.col_shift = colb;
        }
    }
    if (s->act.act) {
        if (y->dtype != ST_F32 && r == ST_OK)
            r = st_error(ST_ERR_INTERNAL, "node '%s': a fused activation on a %s Gemm", k->node->name,
                         st_dtype_name(y->dtype));
        epi.act = s->act;
    }
    if (epi.col_shift || epi.act.act) j.epi = &epi;
    j.beta = cin && s->beta != 0.0f && !per_col ? 1.0f : 0.0f;
    if (r == ST_OK && j.beta != 0.0f) {
        /* start from beta * C (broadcast), then accumulate A*B */
        st_operand acc = *y;
        if (!j.direct) {
            st_view v;
            st_view_init(&v, ST_F32, 2, y->sizes);
            acc = st_operand_of(&v, j.tmp);
        }
        if (cin && s->beta != 0.0f) {
            int64_t sc[ST_MAX_RANK];
            st_broadcast_strides(cin, y, sc);
            st_operand cb = *cin;
            cb.rank = 2;
            cb.sizes[0] = m;
            cb.sizes[1] = n;
            cb.strides[0] = sc[0];
            cb.strides[1] = sc[1];
            st_copy_strided(&acc, &cb);
            if (s->beta != 1.0f) {
                for (int64_t i = 0; i < m; i++)
                    for (int64_t c = 0; c < n; c++) {
                        float *p = (float *)acc.data + i * acc.strides[0] + c * acc.strides[1];
                        *p *= s->beta;
                    }
            }
        }
    }
    if (r == ST_OK) {
        /* with beta 0 the GEMM writes y without reading it */
        j.mrows = ST_GEMM_ROWS;
        j.ncols = n;
        if (m > 1) gemm_tiles(m, n, &j.mrows, &j.ncols);
        j.ntiles = (n + j.ncols - 1) / j.ncols;
        st_parallel_for(k->pool, (m + j.mrows - 1) / j.mrows * j.ntiles, gemm_task, &j);
        r = j.err;
        if (r == ST_OK && !j.direct) {
            st_view v;
            st_view_init(&v, ST_F32, 2, y->sizes);
            st_operand src = st_operand_of(&v, j.tmp);
            st_copy_strided(y, &src);
        }
    }
    free(pa);
    free(pb);
    free(j.tmp);
    if (colb) st_scratch_give(colb);
    return r;
}

/* ---- prepare: a constant B packed once per command ---- */

/* Packs constant B (view v, data d; row p, column j of op(B) at element
 * p * rs + j * cs of d) into *priv.  Nothing when the CPU has no AVX-512
 * (the portable path reads B itself), B is not float, not contiguous, or
 * empty. */
static st_status linalg_pack(const st_view *v, const void *d, bool trans, void **priv)
{
    *priv = NULL;
    if (!st_gemm_fast() || !d || v->rank < 2 || v->offset != 0 ||
        !(v->dtype == ST_F32 || v->dtype == ST_F16 || v->dtype == ST_BF16))
        return ST_OK;
    st_view c;
    st_view_init(&c, v->dtype, v->rank, v->sizes);
    for (int i = 0; i < v->rank; i++) {
        if (i < v->rank - 2 && v->sizes[i] != 1) return ST_OK; /* a batched B: one GEMM per batch */
        if (v->sizes[i] > 1 && v->strides[i] != c.strides[i]) return ST_OK;
    }
    int64_t rows = v->sizes[v->rank - 2], cols = v->sizes[v->rank - 1];
    int64_t k = trans ? cols : rows, n = trans ? rows : cols;
    if (k == 0 || n == 0) return ST_OK;
    const float *src = d;
    float *cvt = NULL;
    if (v->dtype != ST_F32) {
        cvt = malloc((size_t)(rows * cols) * sizeof *cvt);
        if (!cvt) return st_error(ST_ERR_NOMEM, "out of memory converting a constant %lld x %lld B to f32",
                                  (long long)rows, (long long)cols);
        st_cvt_row_to_f32(cvt, v->dtype, d, 1, rows * cols);
        src = cvt;
    }
    linalg_prep *p = malloc(sizeof *p);
    float *packed = p ? st_gemm_prepack_b(src, trans ? 1 : cols, trans ? cols : 1, k, n) : NULL;
    free(cvt);
    if (!packed) {
        free(p);
        return st_error(ST_ERR_NOMEM, "out of memory packing a constant %lld x %lld B", (long long)k, (long long)n);
    }
    p->b = packed;
    p->k = k;
    p->n = n;
    *priv = p;
    return ST_OK;
}

/* Both bf16 on a CPU with avx512_bf16: gemm_any takes the bf16 GEMM,
 * which packs its own way. */
static bool bf16_gemm_takes(const st_knode *n)
{
    return n->views[0].dtype == ST_BF16 && n->views[1].dtype == ST_BF16 && st_gemm_bf16_fast();
}

static st_status matmul_prepare(const st_knode *n, void **priv)
{
    *priv = NULL;
    st_dtype t = n->views[0].dtype;
    if (n->n_in < 2 || !(t == ST_F32 || t == ST_F16 || t == ST_BF16) || bf16_gemm_takes(n)) return ST_OK;
    return linalg_pack(&n->views[1], n->data[1], false, priv);
}

static st_status gemm_prepare(const st_knode *n, void **priv)
{
    const st_matmul_state *s = n->state;
    *priv = NULL;
    st_dtype t = n->views[0].dtype;
    if (n->n_in < 2 || !(t == ST_F32 || t == ST_F16 || t == ST_BF16) || bf16_gemm_takes(n)) return ST_OK;
    return linalg_pack(&n->views[1], n->data[1], s->trans_b, priv);
}

static void linalg_release(void *priv)
{
    linalg_prep *p = priv;
    if (!p) return;
    st_big_free(p->b); /* st_gemm_prepack_b's */
    free(p);
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_linalg[] = {
    {"MatMul", "", ST_DT_ALL, st_cpu_matmul, NULL, matmul_prepare, linalg_release},
    {"Gemm", "", ST_DT_ALL, st_cpu_gemm, NULL, gemm_prepare, linalg_release},
    {NULL}
};
