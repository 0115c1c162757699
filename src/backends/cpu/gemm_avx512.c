/*
 * gemm_avx512.c — the AVX-512 f32 GEMM core (see gemm.h) and its vector
 * epilogue math.
 *
 * The library is compiled for baseline x86-64; only these functions carry
 * a target attribute, and callers reach them after st_gemm_fast() has
 * checked the CPU (cpuid, through __builtin_cpu_supports), so one binary
 * runs everywhere and uses AVX-512 where it exists.
 *
 * The micro-kernel keeps an 8 x 48 tile of C in 24 zmm registers.  Per k
 * it loads three vectors of the B panel and broadcasts eight elements of A
 * straight from memory (A is read where it lies: conv weights need no
 * packing).  A 24-FMA body per 11 loads keeps both FMA ports busy.  Rows
 * past m repeat the last row's pointer and are not stored; columns past n
 * are computed on the panel's zero padding and masked off at the store.
 *
 * The activations (sigmoid, SiLU, hard sigmoid, hard swish, ReLU, leaky
 * ReLU, clip) run on the tile in registers (see v_sigmoid in vmath.h for the
 * exponential).
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "runtime/scratch.h"
#include "core/bigmem.h"
#include "backends/cpu/vmath.h"

#define ST_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

/* Decided once per process (written under pthread_once, read-only after):
 * the CPU's features, and STRATA_CPU_NO_AVX512=1, which forces the
 * portable paths so tests can cover them on an AVX-512 machine. */
static pthread_once_t fast_once = PTHREAD_ONCE_INIT;
static bool fast_ok;

static void fast_probe(void)
{
    const char *off = getenv("STRATA_CPU_NO_AVX512");
    fast_ok = !(off && *off && strcmp(off, "0") != 0) && __builtin_cpu_supports("avx512f") &&
              __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
}

bool st_gemm_fast(void)
{
    pthread_once(&fast_once, fast_probe);
    return fast_ok;
}

bool st_gemm_epi_native(const st_epilogue *e)
{
    if (!e || !e->act) return true;
    switch ((st_unary)(e->act - 1)) {
    case ST_U_RELU:
    case ST_U_SIGMOID:
    case ST_U_SILU:
    case ST_U_LEAKY_RELU:
    case ST_U_HARD_SIGMOID:
    case ST_U_HARD_SWISH:
    case ST_U_GELU:
    case ST_U_CLIP: return true;
    default: return false;
    }
}

/* the vector math (v_act and friends) lives in vmath.h, shared with
 * the bf16 kernels (gemm_bf16.c) */

/* ---- the micro-kernel ---- */

/*
 * One MR x (16 * NV) tile of C: rows (1..8) valid rows, nv valid columns
 * (at most 16 * NV), B row k at b + off[k].  NV (1, 2 or 3 vectors of 16
 * columns) is a constant in each instance, so the accumulators live in
 * registers: 24 for the 8 x 48 body, 16 and 8 for the narrower tails that
 * let a row of 80 or 160 pixels end without padding.
 */
#define ST_UNROLL _Pragma("GCC unroll 8")
/* Each micro-kernel stays a function of its own: with the per-column bias
 * in the epilogue gcc inlined all six into gemm_block512, and the
 * encoder's GEMMs took more samples than before. */
#define ST_NOINLINE __attribute__((noinline))

__attribute__((always_inline)) ST_AVX512 static inline void
ukernel_nv(const int NV, const bool PACKED, int64_t kc, const float *a, int64_t lda, int rows, const float *b,
           const int64_t *off, float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    /* row-major A: one pointer per row (rows past `rows` repeat the last:
     * computed, never stored); packed A: element (r, k) at a[k * MR + r] */
    const float *ar[ST_GEMM_MR];
    ST_UNROLL
    for (int r = 0; r < ST_GEMM_MR; r++) ar[r] = PACKED ? a + r : a + (r < rows ? r : rows - 1) * lda;
    __mmask16 mk[3];
    ST_UNROLL
    for (int v = 0; v < 3; v++) {
        int left = nv - 16 * v;
        mk[v] = (__mmask16)(left >= 16 ? 0xffff : left <= 0 ? 0 : (1u << left) - 1);
    }
    __m512 acc[ST_GEMM_MR][3];
    ST_UNROLL
    for (int r = 0; r < ST_GEMM_MR; r++)
        ST_UNROLL
        for (int v = 0; v < NV; v++)
            acc[r][v] = accumulate && r < rows ? _mm512_maskz_loadu_ps(mk[v], c + r * ldc + 16 * v) : _mm512_setzero_ps();
    if (nv == 16 * NV) {
        for (int64_t k = 0; k < kc; k++) {
            const float *bk = b + off[k];
            __m512 bv[3];
            ST_UNROLL
            for (int v = 0; v < NV; v++) bv[v] = _mm512_loadu_ps(bk + 16 * v);
            ST_UNROLL
            for (int r = 0; r < ST_GEMM_MR; r++) {
                __m512 x = _mm512_set1_ps(PACKED ? a[k * ST_GEMM_MR + r] : ar[r][k]);
                ST_UNROLL
                for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
            }
        }
    } else {
        /* the last panel: B may end at column nv */
        for (int64_t k = 0; k < kc; k++) {
            const float *bk = b + off[k];
            __m512 bv[3];
            ST_UNROLL
            for (int v = 0; v < NV; v++) bv[v] = _mm512_maskz_loadu_ps(mk[v], bk + 16 * v);
            ST_UNROLL
            for (int r = 0; r < ST_GEMM_MR; r++) {
                __m512 x = _mm512_set1_ps(PACKED ? a[k * ST_GEMM_MR + r] : ar[r][k]);
                ST_UNROLL
                for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
            }
        }
    }
    /* a per-column bias: loaded once per tile, added to every row */
    __m512 cb[3];
    const bool col = ep->col_shift != NULL;
    ST_UNROLL
    for (int v = 0; v < NV; v++) cb[v] = col ? _mm512_maskz_loadu_ps(mk[v], ep->col_shift + 16 * v) : _mm512_setzero_ps();
    ST_UNROLL
    for (int r = 0; r < ST_GEMM_MR; r++) {
        if (r >= rows) break;
        if (ep->scale) {
            __m512 s = _mm512_set1_ps(ep->scale[r]), t = ep->shift ? _mm512_set1_ps(ep->shift[r]) : _mm512_setzero_ps();
            ST_UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(acc[r][v], s, t);
        } else if (ep->shift) {
            __m512 t = _mm512_set1_ps(ep->shift[r]);
            ST_UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_add_ps(acc[r][v], t);
        }
        if (col) {
            ST_UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_add_ps(acc[r][v], cb[v]);
        }
        if (act->code >= 0) {
            ST_UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = v_act(act, acc[r][v]);
            if (ep->post_scale) {
                __m512 s = _mm512_set1_ps(ep->post_scale[r]), t = _mm512_set1_ps(ep->post_shift[r]);
                ST_UNROLL
                for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(acc[r][v], s, t);
            }
        }
        ST_UNROLL
        for (int v = 0; v < NV; v++) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mk[v], acc[r][v]);
    }
}

ST_AVX512 ST_NOINLINE static void ukernel48(int64_t kc, const float *a, int64_t lda, int rows, const float *b, const int64_t *off,
                                float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_nv(3, false, kc, a, lda, rows, b, off, c, ldc, nv, accumulate, ep, act);
}

ST_AVX512 ST_NOINLINE static void ukernel48p(int64_t kc, const float *a, int64_t lda, int rows, const float *b, const int64_t *off,
                                float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_nv(3, true, kc, a, lda, rows, b, off, c, ldc, nv, accumulate, ep, act);
}

ST_AVX512 ST_NOINLINE static void ukernel32(int64_t kc, const float *a, int64_t lda, int rows, const float *b, const int64_t *off,
                                float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_nv(2, false, kc, a, lda, rows, b, off, c, ldc, nv, accumulate, ep, act);
}

ST_AVX512 ST_NOINLINE static void ukernel32p(int64_t kc, const float *a, int64_t lda, int rows, const float *b, const int64_t *off,
                                float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_nv(2, true, kc, a, lda, rows, b, off, c, ldc, nv, accumulate, ep, act);
}

ST_AVX512 ST_NOINLINE static void ukernel16(int64_t kc, const float *a, int64_t lda, int rows, const float *b, const int64_t *off,
                                float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_nv(1, false, kc, a, lda, rows, b, off, c, ldc, nv, accumulate, ep, act);
}

ST_AVX512 ST_NOINLINE static void ukernel16p(int64_t kc, const float *a, int64_t lda, int rows, const float *b, const int64_t *off,
                                float *c, int64_t ldc, int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_nv(1, true, kc, a, lda, rows, b, off, c, ldc, nv, accumulate, ep, act);
}

/* The epilogue's arrays from row i on; ep->act unused here. */
static inline st_gemm_epi epi_at(const st_gemm_epi *e, int64_t i)
{
    st_gemm_epi r = {0};
    if (!e) return r;
    r.scale = e->scale ? e->scale + i : NULL;
    r.shift = e->shift ? e->shift + i : NULL;
    r.post_scale = e->post_scale ? e->post_scale + i : NULL;
    r.post_shift = e->post_shift ? e->post_shift + i : NULL;
    r.col_shift = e->col_shift; /* gemm_block512 moves it along the panels */
    return r;
}

ST_AVX512 static void act_row512(const vact *act, const float *x, float *y, int64_t n);

/* Panels outer, row blocks inner: a panel's B rows stay in L1 while every
 * row block of A streams past them from L2. */
ST_AVX512 static void gemm_block512(const float *a, int64_t lda, const st_gemm_b *b, int64_t kc, int64_t m, int64_t n,
                                    float *c, int64_t ldc, bool accumulate, const st_gemm_epi *epi)
{
    vact act = vact_of(epi ? &epi->act : NULL);
    if (epi && !st_gemm_epi_native(&epi->act)) act.code = -1; /* applied after the store */
    /* A linear layer's activation (a per-column bias: MatMul, Gemm) runs on
     * each tile just stored, row by row from L1 (act_row512, the separate
     * Gelu's loop), rather than on the 24 accumulators: a GELU there needs
     * more registers than are left, and measured slower than its separate
     * pass.  Same v_act on the same values: same bits. */
    bool tile_act = epi && epi->col_shift && act.code >= 0;
    vact none = act;
    none.code = -1;
    const vact *kact = tile_act ? &none : &act;
    for (int64_t j = 0; j < n; j += ST_GEMM_NR) {
        int nv = (int)(n - j < ST_GEMM_NR ? n - j : ST_GEMM_NR);
        const float *panel = b->base + (j / ST_GEMM_NR) * b->panel;
        for (int64_t i = 0; i < m; i += ST_GEMM_MR) {
            int rows = (int)(m - i < ST_GEMM_MR ? m - i : ST_GEMM_MR);
            st_gemm_epi ep = epi_at(epi, i);
            if (ep.col_shift) ep.col_shift += j;
            float *ct = c + i * ldc + j;
            if (lda > 0) {
                const float *ai = a + i * lda;
                if (nv > 32) ukernel48(kc, ai, lda, rows, panel, b->off, ct, ldc, nv, accumulate, &ep, kact);
                else if (nv > 16) ukernel32(kc, ai, lda, rows, panel, b->off, ct, ldc, nv, accumulate, &ep, kact);
                else ukernel16(kc, ai, lda, rows, panel, b->off, ct, ldc, nv, accumulate, &ep, kact);
            } else {
                const float *ai = a + (i / ST_GEMM_MR) * -lda;
                if (nv > 32) ukernel48p(kc, ai, 0, rows, panel, b->off, ct, ldc, nv, accumulate, &ep, kact);
                else if (nv > 16) ukernel32p(kc, ai, 0, rows, panel, b->off, ct, ldc, nv, accumulate, &ep, kact);
                else ukernel16p(kc, ai, 0, rows, panel, b->off, ct, ldc, nv, accumulate, &ep, kact);
            }
            if (tile_act)
                for (int r = 0; r < rows; r++) act_row512(&act, ct + r * ldc, ct + r * ldc, nv);
        }
    }
}

void st_gemm_epi_row(const st_gemm_epi *e, int64_t r, float *x, int64_t n)
{
    if (!e) return;
    float s = e->scale ? e->scale[r] : 1.0f, t = e->shift ? e->shift[r] : 0.0f;
    if (e->scale)
        for (int64_t j = 0; j < n; j++) x[j] = x[j] * s + t;
    else if (e->shift)
        for (int64_t j = 0; j < n; j++) x[j] += t;
    if (e->col_shift)
        for (int64_t j = 0; j < n; j++) x[j] += e->col_shift[j];
    if (!e->act.act) return;
    st_epilogue_f32(&e->act, x, n);
    if (e->post_scale)
        for (int64_t j = 0; j < n; j++) x[j] = x[j] * e->post_scale[r] + e->post_shift[r];
}

void st_gemm_block(const float *a, int64_t lda, const st_gemm_b *b, int64_t kc, int64_t m, int64_t n, float *c,
                   int64_t ldc, bool accumulate, const st_gemm_epi *epi)
{
    if (m <= 0 || n <= 0) return;
    if (kc <= 0) {
        /* an empty sum: C keeps its values (or becomes 0), then the epilogue */
        for (int64_t i = 0; i < m; i++) {
            float *r = c + i * ldc;
            if (!accumulate) memset(r, 0, (size_t)n * sizeof *r);
            st_gemm_epi_row(epi, i, r, n);
        }
        return;
    }
    if (epi && !st_gemm_epi_native(&epi->act)) {
        /* an activation without a vector form: the affine in the kernel,
         * the rest after the store */
        st_gemm_epi pre = *epi;
        pre.act.act = 0;
        pre.post_scale = pre.post_shift = NULL;
        gemm_block512(a, lda, b, kc, m, n, c, ldc, accumulate, &pre);
        st_gemm_epi rest = {0};
        rest.act = epi->act;
        rest.post_scale = epi->post_scale;
        rest.post_shift = epi->post_shift;
        for (int64_t i = 0; i < m; i++) st_gemm_epi_row(&rest, i, c + i * ldc, n);
        return;
    }
    gemm_block512(a, lda, b, kc, m, n, c, ldc, accumulate, epi);
}

void st_gemm_pack_a(const float *a, int64_t lda, int64_t m, int64_t k, float *dst)
{
    for (int64_t i0 = 0; i0 < m; i0 += ST_GEMM_MR) {
        float *blk = dst + (i0 / ST_GEMM_MR) * k * ST_GEMM_MR;
        for (int64_t r = 0; r < ST_GEMM_MR; r++) {
            /* rows past m repeat the last row: computed, never stored */
            const float *src = a + (i0 + r < m ? i0 + r : m - 1) * lda;
            for (int64_t p = 0; p < k; p++) blk[p * ST_GEMM_MR + r] = src[p];
        }
    }
}

ST_AVX512 static void transpose16_512(const float *src, int64_t ss, int ni, int nd, float *dst, int64_t ds);

static __mmask16 lanes16(int64_t n) { return (__mmask16)(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); }

/* st_gemm_pack_b with vectors: a row of a panel is three masked loads
 * (zeros past n) when B's rows are unit-stride, where a memcpy call per 48
 * floats cost as much as the copy; a transposed B (rs == 1, a Gemm with
 * transB or a MatMul by a transposed view) goes through 16 x 16 transposes
 * instead of a strided load per element. */
ST_AVX512 static bool pack_b512(const float *b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float *dst)
{
    if (cs != 1 && rs != 1) return false;
    for (int64_t j0 = 0; j0 < n; j0 += ST_GEMM_NR) {
        int64_t nv = n - j0 < ST_GEMM_NR ? n - j0 : ST_GEMM_NR;
        float *panel = dst + (j0 / ST_GEMM_NR) * kc * ST_GEMM_NR;
        if (cs == 1) {
            __mmask16 m0 = lanes16(nv), m1 = lanes16(nv - 16), m2 = lanes16(nv - 32);
            for (int64_t k = 0; k < kc; k++) {
                float *row = panel + k * ST_GEMM_NR;
                const float *src = b + k * rs + j0;
                _mm512_storeu_ps(row, _mm512_maskz_loadu_ps(m0, src));
                _mm512_storeu_ps(row + 16, _mm512_maskz_loadu_ps(m1, src + 16));
                _mm512_storeu_ps(row + 32, _mm512_maskz_loadu_ps(m2, src + 32));
            }
            continue;
        }
        /* rs == 1: column j of the panel is B's row j0 + j in memory */
        if (nv < ST_GEMM_NR) memset(panel, 0, (size_t)(kc * ST_GEMM_NR) * sizeof *panel);
        for (int64_t k0 = 0; k0 < kc; k0 += 16)
            for (int64_t i0 = 0; i0 < nv; i0 += 16)
                transpose16_512(b + (j0 + i0) * cs + k0, cs, (int)(nv - i0 < 16 ? nv - i0 : 16),
                                (int)(kc - k0 < 16 ? kc - k0 : 16), panel + k0 * ST_GEMM_NR + i0, ST_GEMM_NR);
    }
    return true;
}

void st_gemm_pack_b(const float *b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float *dst)
{
    if (st_gemm_fast() && pack_b512(b, rs, cs, kc, n, dst)) return;
    for (int64_t j0 = 0; j0 < n; j0 += ST_GEMM_NR) {
        int64_t nv = n - j0 < ST_GEMM_NR ? n - j0 : ST_GEMM_NR;
        float *panel = dst + (j0 / ST_GEMM_NR) * kc * ST_GEMM_NR;
        for (int64_t k = 0; k < kc; k++) {
            float *row = panel + k * ST_GEMM_NR;
            const float *src = b + k * rs + j0 * cs;
            if (cs == 1) memcpy(row, src, (size_t)nv * sizeof *row);
            else
                for (int64_t j = 0; j < nv; j++) row[j] = src[j * cs];
            for (int64_t j = nv; j < ST_GEMM_NR; j++) row[j] = 0.0f;
        }
    }
}

/* c = alpha * A * B + beta * c: k blocks of KC, n blocks of NC, so a
 * packed B block (KC x NC floats, 768 KB) stays in L2.  A B of up to
 * ST_GEMM_DIRECT_B floats (it fits in L2 whole) is read in place. */
#define ST_GEMM_NC 768
#define ST_GEMM_DIRECT_B (256 * 1024)

/* B as sgemm_core reads it: strided in memory (b, brs, bcs), or, with pre
 * set, the panels of st_gemm_prepack_b (ntot columns in all) from column
 * n0 on, n0 a multiple of ST_GEMM_NR. */
typedef struct sgemm_bsrc {
    const float *b;
    int64_t brs, bcs;
    const float *pre;
    int64_t ntot, n0;
} sgemm_bsrc;

/* The epilogue of column block [j0, j0 + nc) of a product (epi: col_shift
 * from column 0 of the product, and act). */
static st_gemm_epi epi_cols(const st_gemm_epi *epi, int64_t j0)
{
    st_gemm_epi r = {0};
    if (!epi) return r;
    r.act = epi->act;
    r.col_shift = epi->col_shift ? epi->col_shift + j0 : NULL;
    return r;
}

static bool sgemm_core(const float *a, int64_t ars, int64_t acs, const sgemm_bsrc *bs, float alpha, float beta,
                       float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, const st_gemm_epi *epi)
{
    if (m <= 0 || n <= 0) return true;
    if (m == 1) ars = 0;
    const float *b = bs->b;
    int64_t brs = bs->brs, bcs = bs->bcs;
    /* A packed (the micro-kernel's sequential layout) with alpha folded in,
     * unless it can be read in place */
    int64_t blocks = (m + ST_GEMM_MR - 1) / ST_GEMM_MR;
    /* Rows that are unit-stride along k (and no alpha to fold in) are
     * read in place: the micro-kernel broadcasts from eight row streams
     * as fast as from the packed one (bench/cpu/sgemm_shapes.c, row
     * strides of 4 KB included), and the 8 x 16 transposes that packed
     * them were 8-10% of a transformer encoder's time.  The products and
     * their order are the same either way.  Packed panels go in the
     * worker's kept scratch (scratch.h). */
    bool unpacked = acs == 1 && alpha == 1.0f && m > 1;
    float *ap = unpacked ? NULL : st_scratch_take((size_t)(blocks * ST_GEMM_MR * (k > 0 ? k : 1)) * sizeof(float));
    if (!ap && !unpacked) return false;
    for (int64_t i0 = 0; i0 < m && !unpacked; i0 += ST_GEMM_MR) {
        float *blk = ap + (i0 / ST_GEMM_MR) * k * ST_GEMM_MR;
        for (int64_t r = 0; r < ST_GEMM_MR; r++) {
            const float *src = a + (i0 + r < m ? i0 + r : m - 1) * ars;
            for (int64_t p = 0; p < k; p++) blk[p * ST_GEMM_MR + r] = alpha * src[p * acs];
        }
    }
    /* B is read in place when it is small, its rows unit-stride and not a
     * multiple of 4 KB (give or take 256 bytes) apart; else packed per
     * (k, n) block, unless it was packed whole before (bs->pre) */
    int64_t rb = (brs * 4) % 4096;
    if (rb < 0) rb += 4096;
    bool direct = !bs->pre && bcs == 1 && (k <= 1 || (rb >= 256 && rb <= 3840)) && k * n <= ST_GEMM_DIRECT_B;
    int64_t kc_max = k < ST_GEMM_KC ? k : ST_GEMM_KC, nc_max = n < ST_GEMM_NC ? n : ST_GEMM_NC;
    float *bp = direct || bs->pre ? NULL
                                  : st_scratch_take(st_gemm_packed_floats(kc_max > 0 ? kc_max : 1, nc_max) * sizeof(float));
    if (!direct && !bs->pre && !bp) {
        st_scratch_give(ap);
        return false;
    }
    int64_t off[ST_GEMM_KC];
    if (beta != 0.0f && beta != 1.0f)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) c[i * ldc + j] *= beta;
    int64_t kcb = st_gemm_kc(k), pre_cols = (bs->ntot + ST_GEMM_NR - 1) / ST_GEMM_NR * ST_GEMM_NR;
    for (int64_t j0 = 0; j0 < n; j0 += ST_GEMM_NC) {
        int64_t nc = n - j0 < ST_GEMM_NC ? n - j0 : ST_GEMM_NC;
        st_gemm_epi ep = epi_cols(epi, j0);
        if (k == 0) {
            st_gemm_b none = {b, off, 0};
            st_gemm_block(ap, -ST_GEMM_MR, &none, 0, m, nc, c + j0, ldc, beta != 0.0f, epi ? &ep : NULL);
        }
        /* an activation without a vector form runs on the finished rows */
        bool late = epi && epi->act.act && !st_gemm_epi_native(&epi->act);
        for (int64_t k0 = 0; k0 < k; k0 += kcb) {
            int64_t kc = k - k0 < kcb ? k - k0 : kcb;
            const st_gemm_epi *e = epi && k0 + kc >= k ? &ep : NULL;
            st_gemm_b pb;
            if (bs->pre) {
                /* the same panels st_gemm_pack_b would make, made once */
                for (int64_t i = 0; i < kc; i++) off[i] = i * ST_GEMM_NR;
                pb = (st_gemm_b){bs->pre + k0 * pre_cols + (bs->n0 + j0) / ST_GEMM_NR * kc * ST_GEMM_NR, off, kc * ST_GEMM_NR};
            } else if (direct) {
                for (int64_t i = 0; i < kc; i++) off[i] = i * brs;
                pb = (st_gemm_b){b + k0 * brs + j0, off, ST_GEMM_NR};
            } else {
                for (int64_t i = 0; i < kc; i++) off[i] = i * ST_GEMM_NR;
                st_gemm_pack_b(b + k0 * brs + j0 * bcs, brs, bcs, kc, nc, bp);
                pb = (st_gemm_b){bp, off, kc * ST_GEMM_NR};
            }
            if (unpacked) gemm_block512(a + k0, ars, &pb, kc, m, nc, c + j0, ldc, k0 > 0 || beta != 0.0f, e);
            else gemm_block512(ap + k0 * ST_GEMM_MR, -(k * ST_GEMM_MR), &pb, kc, m, nc, c + j0, ldc, k0 > 0 || beta != 0.0f, e);
        }
        if (late && k > 0) {
            st_gemm_epi rest = {0};
            rest.act = epi->act;
            for (int64_t i = 0; i < m; i++) st_gemm_epi_row(&rest, i, c + i * ldc + j0, nc);
        }
    }
    st_scratch_give(bp);
    st_scratch_give(ap);
    return true;
}

bool st_sgemm_fast(const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float alpha,
                   float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k)
{
    sgemm_bsrc bs = {b, brs, bcs, NULL, 0, 0};
    return sgemm_core(a, ars, acs, &bs, alpha, beta, c, ldc, m, n, k, NULL);
}

float *st_gemm_prepack_b(const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n)
{
    if (k <= 0 || n <= 0) return NULL;
    int64_t cols = (n + ST_GEMM_NR - 1) / ST_GEMM_NR * ST_GEMM_NR, kcb = st_gemm_kc(k);
    float *dst = st_big_alloc((size_t)(k * cols) * sizeof(float), "MatMul weights");
    if (!dst) return NULL;
    for (int64_t k0 = 0; k0 < k; k0 += kcb) {
        int64_t kc = k - k0 < kcb ? k - k0 : kcb;
        st_gemm_pack_b(b + k0 * rs, rs, cs, kc, n, dst + k0 * cols);
    }
    return dst;
}

bool st_sgemm_fast_prepacked(const float *a, int64_t ars, int64_t acs, const float *bp, int64_t ntot, int64_t n0,
                             float alpha, float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k)
{
    return st_sgemm_fast_prepacked_epi(a, ars, acs, bp, ntot, n0, alpha, beta, c, ldc, m, n, k, NULL);
}

bool st_sgemm_fast_prepacked_epi(const float *a, int64_t ars, int64_t acs, const float *bp, int64_t ntot, int64_t n0,
                                 float alpha, float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                                 const st_gemm_epi *epi)
{
    sgemm_bsrc bs = {bp, 0, 0, bp, ntot, n0};
    return sgemm_core(a, ars, acs, &bs, alpha, beta, c, ldc, m, n, k, epi);
}

/* ---- depthwise rows ---- */

ST_AVX512 static void dw_row512(const float *s, const int64_t *off, int64_t taps, const float *w,
                                const st_gemm_epi *e, const vact *act, int64_t ow, float *out)
{
    __m512 vs = _mm512_set1_ps(e->scale ? e->scale[0] : 1.0f), vt = _mm512_set1_ps(e->shift ? e->shift[0] : 0.0f);
    bool post = act->code >= 0 && e->post_scale;
    __m512 ps = _mm512_set1_ps(post ? e->post_scale[0] : 1.0f), pt = _mm512_set1_ps(post ? e->post_shift[0] : 0.0f);
    int64_t x = 0;
    /* four vectors at a time: one broadcast of a tap feeds four FMAs */
    for (; x + 64 <= ow; x += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t t = 0; t < taps; t++) {
            const float *p = s + off[t] + x;
            __m512 wt = _mm512_set1_ps(w[t]);
            a0 = _mm512_fmadd_ps(wt, _mm512_loadu_ps(p), a0);
            a1 = _mm512_fmadd_ps(wt, _mm512_loadu_ps(p + 16), a1);
            a2 = _mm512_fmadd_ps(wt, _mm512_loadu_ps(p + 32), a2);
            a3 = _mm512_fmadd_ps(wt, _mm512_loadu_ps(p + 48), a3);
        }
        a0 = _mm512_fmadd_ps(a0, vs, vt);
        a1 = _mm512_fmadd_ps(a1, vs, vt);
        a2 = _mm512_fmadd_ps(a2, vs, vt);
        a3 = _mm512_fmadd_ps(a3, vs, vt);
        if (act->code >= 0) {
            a0 = _mm512_fmadd_ps(v_act(act, a0), ps, pt);
            a1 = _mm512_fmadd_ps(v_act(act, a1), ps, pt);
            a2 = _mm512_fmadd_ps(v_act(act, a2), ps, pt);
            a3 = _mm512_fmadd_ps(v_act(act, a3), ps, pt);
        }
        _mm512_storeu_ps(out + x, a0);
        _mm512_storeu_ps(out + x + 16, a1);
        _mm512_storeu_ps(out + x + 32, a2);
        _mm512_storeu_ps(out + x + 48, a3);
    }
    for (; x < ow; x += 16) {
        __mmask16 m = (__mmask16)(ow - x >= 16 ? 0xffff : (1u << (ow - x)) - 1);
        __m512 a = _mm512_setzero_ps();
        for (int64_t t = 0; t < taps; t++)
            a = _mm512_fmadd_ps(_mm512_set1_ps(w[t]), _mm512_maskz_loadu_ps(m, s + off[t] + x), a);
        a = _mm512_fmadd_ps(a, vs, vt);
        if (act->code >= 0) a = _mm512_fmadd_ps(v_act(act, a), ps, pt);
        _mm512_mask_storeu_ps(out + x, m, a);
    }
}

void st_dw_row(const float *s, const int64_t *off, int64_t taps, const float *w, const st_gemm_epi *e, int64_t ow,
               float *out)
{
    vact act = vact_of(&e->act);
    if (st_gemm_epi_native(&e->act)) {
        dw_row512(s, off, taps, w, e, &act, ow, out);
        return;
    }
    st_gemm_epi pre = *e;
    pre.act.act = 0;
    act.code = -1;
    dw_row512(s, off, taps, w, &pre, &act, ow, out);
    st_gemm_epi rest = {0};
    rest.act = e->act;
    rest.post_scale = e->post_scale;
    rest.post_shift = e->post_shift;
    st_gemm_epi_row(&rest, 0, out, ow);
}

/* ---- elementwise activations on packed rows ---- */

ST_AVX512 static void act_row512(const vact *act, const float *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, v_act(act, _mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, v_act(act, _mm512_maskz_loadu_ps(m, x + i)));
    }
}

bool st_vec_act(const st_epilogue *e, const float *x, float *y, int64_t n)
{
    if (!e->act || !st_gemm_epi_native(e) || !st_gemm_fast()) return false;
    vact act = vact_of(e);
    act_row512(&act, x, y, n);
    return true;
}

/* ---- Winograd F(2x2, 3x3): the output transform ---- */

/*
 * For 16 * k tiles at a time (lanes are tile columns q), the 16 products
 * m[xi] of a tile (xi = 4a + b) become 2x2 outputs through A^T m A with
 * A^T = [1 1 1 0; 0 1 -1 -1], then the epilogue, then the two rows are
 * written with even and odd columns interleaved.
 */
ST_AVX512 static void wino_out512(const float *m, int64_t xs, int64_t nq, const st_gemm_epi *e, const vact *act,
                                  float *r0, float *r1, int64_t ow)
{
    __m512 vs = _mm512_set1_ps(e->scale ? e->scale[0] : 1.0f), vt = _mm512_set1_ps(e->shift ? e->shift[0] : 0.0f);
    bool post = act->code >= 0 && e->post_scale;
    __m512 ps = _mm512_set1_ps(post ? e->post_scale[0] : 1.0f), pt = _mm512_set1_ps(post ? e->post_shift[0] : 0.0f);
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int64_t q = 0; q < nq; q += 16) {
        int64_t left = nq - q;
        __mmask16 mq = (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1);
        __m512 t0[4], t1[4];
        for (int a = 0; a < 4; a++) {
            __m512 x0 = _mm512_maskz_loadu_ps(mq, m + (4 * a + 0) * xs + q);
            __m512 x1 = _mm512_maskz_loadu_ps(mq, m + (4 * a + 1) * xs + q);
            __m512 x2 = _mm512_maskz_loadu_ps(mq, m + (4 * a + 2) * xs + q);
            __m512 x3 = _mm512_maskz_loadu_ps(mq, m + (4 * a + 3) * xs + q);
            t0[a] = _mm512_add_ps(_mm512_add_ps(x0, x1), x2);
            t1[a] = _mm512_sub_ps(_mm512_sub_ps(x1, x2), x3);
        }
        __m512 y[2][2];
        y[0][0] = _mm512_add_ps(_mm512_add_ps(t0[0], t0[1]), t0[2]);
        y[1][0] = _mm512_sub_ps(_mm512_sub_ps(t0[1], t0[2]), t0[3]);
        y[0][1] = _mm512_add_ps(_mm512_add_ps(t1[0], t1[1]), t1[2]);
        y[1][1] = _mm512_sub_ps(_mm512_sub_ps(t1[1], t1[2]), t1[3]);
        for (int r = 0; r < 2; r++) {
            float *row = r ? r1 : r0;
            if (!row) continue;
            __m512 ev = _mm512_fmadd_ps(y[r][0], vs, vt), od = _mm512_fmadd_ps(y[r][1], vs, vt);
            if (act->code >= 0) {
                ev = _mm512_fmadd_ps(v_act(act, ev), ps, pt);
                od = _mm512_fmadd_ps(v_act(act, od), ps, pt);
            }
            /* columns 2q.. of the row: even, odd, even, odd ... */
            __m512 w0 = _mm512_permutex2var_ps(ev, lo, od), w1 = _mm512_permutex2var_ps(ev, hi, od);
            int64_t c0 = 2 * q, n0 = ow - c0, n1 = ow - c0 - 16;
            __mmask16 k0 = (__mmask16)(n0 >= 16 ? 0xffff : n0 <= 0 ? 0 : (1u << n0) - 1);
            __mmask16 k1 = (__mmask16)(n1 >= 16 ? 0xffff : n1 <= 0 ? 0 : (1u << n1) - 1);
            _mm512_mask_storeu_ps(row + c0, k0, w0);
            _mm512_mask_storeu_ps(row + c0 + 16, k1, w1);
        }
    }
}

void st_wino_out_rows(const float *m, int64_t xs, int64_t nq, const st_gemm_epi *e, float *r0, float *r1, int64_t ow)
{
    vact act = vact_of(&e->act);
    if (st_gemm_epi_native(&e->act)) {
        wino_out512(m, xs, nq, e, &act, r0, r1, ow);
        return;
    }
    st_gemm_epi pre = *e;
    pre.act.act = 0;
    act.code = -1;
    wino_out512(m, xs, nq, &pre, &act, r0, r1, ow);
    st_gemm_epi rest = {0};
    rest.act = e->act;
    rest.post_scale = e->post_scale;
    rest.post_shift = e->post_shift;
    st_gemm_epi_row(&rest, 0, r0, ow);
    if (r1) st_gemm_epi_row(&rest, 0, r1, ow);
}

/* ---- Winograd F(2x2, 3x3): the input transform ---- */

ST_AVX512 static void wino_in512(const float *const *e, const float *const *o, float *v, int64_t vs, int64_t nq)
{
    for (int64_t q = 0; q < nq; q += 16) {
        int64_t left = nq - q;
        __mmask16 m = (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1);
        __m512 h[4][4];
        for (int r = 0; r < 4; r++) {
            /* a tile's 4 columns: even and odd at q, even and odd at q + 1 */
            __m512 e0 = _mm512_maskz_loadu_ps(m, e[r] + q), e1 = _mm512_maskz_loadu_ps(m, e[r] + q + 1);
            __m512 o0 = _mm512_maskz_loadu_ps(m, o[r] + q), o1 = _mm512_maskz_loadu_ps(m, o[r] + q + 1);
            h[r][0] = _mm512_sub_ps(e0, e1);
            h[r][1] = _mm512_add_ps(o0, e1);
            h[r][2] = _mm512_sub_ps(e1, o0);
            h[r][3] = _mm512_sub_ps(o0, o1);
        }
        for (int b = 0; b < 4; b++) {
            _mm512_mask_storeu_ps(v + (0 + b) * vs + q, m, _mm512_sub_ps(h[0][b], h[2][b]));
            _mm512_mask_storeu_ps(v + (4 + b) * vs + q, m, _mm512_add_ps(h[1][b], h[2][b]));
            _mm512_mask_storeu_ps(v + (8 + b) * vs + q, m, _mm512_sub_ps(h[2][b], h[1][b]));
            _mm512_mask_storeu_ps(v + (12 + b) * vs + q, m, _mm512_sub_ps(h[1][b], h[3][b]));
        }
    }
}

void st_wino_in_row(const float *const *e, const float *const *o, float *v, int64_t vs, int64_t nq)
{
    wino_in512(e, o, v, vs, nq);
}

/* ---- Winograd F(4x4, 3x3) ---- */

/* B^T d for F(4, 3) on 16 lanes: d0..d5 -> r0..r5. */
#define WINO4_BT(d, r)                                                                                              \
    do {                                                                                                            \
        __m512 f4_ = _mm512_set1_ps(4.0f), f5_ = _mm512_set1_ps(5.0f), f2_ = _mm512_set1_ps(2.0f);                \
        r[0] = _mm512_add_ps(_mm512_fnmadd_ps(f5_, d[2], _mm512_mul_ps(f4_, d[0])), d[4]);                       \
        __m512 s14_ = _mm512_add_ps(d[1], d[2]), s34_ = _mm512_add_ps(d[3], d[4]);                               \
        r[1] = _mm512_fnmadd_ps(f4_, s14_, s34_);                                                                 \
        __m512 t12_ = _mm512_sub_ps(d[1], d[2]), t34_ = _mm512_sub_ps(d[4], d[3]);                               \
        r[2] = _mm512_fmadd_ps(f4_, t12_, t34_);                                                                  \
        __m512 u13_ = _mm512_sub_ps(d[3], d[1]), u24_ = _mm512_sub_ps(d[4], d[2]);                               \
        r[3] = _mm512_fmadd_ps(f2_, u13_, u24_);                                                                  \
        r[4] = _mm512_fnmadd_ps(f2_, u13_, u24_);                                                                 \
        r[5] = _mm512_add_ps(_mm512_fnmadd_ps(f5_, d[3], _mm512_mul_ps(f4_, d[1])), d[5]);                       \
    } while (0)

/* The input transform of one row of nq tiles of one channel: p[r][j]
 * (r < 6 input rows, j < 4 column phases) holds column 4q + j of row r at
 * [q] (nq + 1 of each); product xi = 6a + b goes to v[xi * vs + q]. */
ST_AVX512 static void wino4_in512(const float *const *p, float *v, int64_t vs, int64_t nq)
{
    for (int64_t q = 0; q < nq; q += 16) {
        int64_t left = nq - q;
        __mmask16 m = (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1);
        __m512 h[6][6];
        for (int r = 0; r < 6; r++) {
            const float *const *pr = p + 4 * r;
            __m512 d[6];
            d[0] = _mm512_maskz_loadu_ps(m, pr[0] + q);
            d[1] = _mm512_maskz_loadu_ps(m, pr[1] + q);
            d[2] = _mm512_maskz_loadu_ps(m, pr[2] + q);
            d[3] = _mm512_maskz_loadu_ps(m, pr[3] + q);
            d[4] = _mm512_maskz_loadu_ps(m, pr[0] + q + 1);
            d[5] = _mm512_maskz_loadu_ps(m, pr[1] + q + 1);
            WINO4_BT(d, h[r]);
        }
        for (int b = 0; b < 6; b++) {
            __m512 d[6], r[6];
            for (int a = 0; a < 6; a++) d[a] = h[a][b];
            WINO4_BT(d, r);
            for (int a = 0; a < 6; a++) _mm512_mask_storeu_ps(v + (6 * a + b) * vs + q, m, r[a]);
        }
    }
}

void st_wino4_in_row(const float *const *p, float *v, int64_t vs, int64_t nq) { wino4_in512(p, v, vs, nq); }

/* A^T m for F(4, 3): m0..m5 -> o0..o3. */
#define WINO4_AT(mm, o)                                                                                             \
    do {                                                                                                            \
        __m512 a12_ = _mm512_add_ps(mm[1], mm[2]), s12_ = _mm512_sub_ps(mm[1], mm[2]);                           \
        __m512 a34_ = _mm512_add_ps(mm[3], mm[4]), s34_ = _mm512_sub_ps(mm[3], mm[4]);                           \
        o[0] = _mm512_add_ps(_mm512_add_ps(mm[0], a12_), a34_);                                                  \
        o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), s34_, s12_);                                                 \
        o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), a34_, a12_);                                                 \
        o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), s34_, s12_), mm[5]);                          \
    } while (0)

/* The output transform of one row of nq tiles of one output channel: the
 * 36 products at m[xi * xs + q]; the epilogue (row 0 of e) of the 4x4
 * outputs goes to rows r[0..3] (NULL: past the output), columns [0, ow). */
ST_AVX512 static void wino4_out512(const float *m, int64_t xs, int64_t nq, const st_gemm_epi *e, const vact *act,
                                   float *const *rows, int64_t ow)
{
    __m512 vs = _mm512_set1_ps(e->scale ? e->scale[0] : 1.0f), vt = _mm512_set1_ps(e->shift ? e->shift[0] : 0.0f);
    bool post = act->code >= 0 && e->post_scale;
    __m512 ps = _mm512_set1_ps(post ? e->post_scale[0] : 1.0f), pt = _mm512_set1_ps(post ? e->post_shift[0] : 0.0f);
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int64_t q = 0; q < nq; q += 16) {
        int64_t left = nq - q;
        __mmask16 mq = (__mmask16)(left >= 16 ? 0xffff : (1u << left) - 1);
        __m512 t[6][4];
        for (int a = 0; a < 6; a++) {
            __m512 mm[6];
            for (int b = 0; b < 6; b++) mm[b] = _mm512_maskz_loadu_ps(mq, m + (6 * a + b) * xs + q);
            WINO4_AT(mm, t[a]);
        }
        for (int b = 0; b < 4; b++) {
            __m512 mm[6], o[4];
            for (int a = 0; a < 6; a++) mm[a] = t[a][b];
            WINO4_AT(mm, o);
            for (int a = 0; a < 4; a++) t[a][b] = o[a]; /* t[a][b]: output row a, column 4q + b */
        }
        for (int a = 0; a < 4; a++) {
            float *row = rows[a];
            if (!row) continue;
            __m512 c[4];
            for (int b = 0; b < 4; b++) {
                c[b] = _mm512_fmadd_ps(t[a][b], vs, vt);
                if (act->code >= 0) c[b] = _mm512_fmadd_ps(v_act(act, c[b]), ps, pt);
            }
            /* columns 4q + b: interleave four ways */
            __m512 l02 = _mm512_permutex2var_ps(c[0], lo, c[2]), h02 = _mm512_permutex2var_ps(c[0], hi, c[2]);
            __m512 l13 = _mm512_permutex2var_ps(c[1], lo, c[3]), h13 = _mm512_permutex2var_ps(c[1], hi, c[3]);
            __m512 w[4] = {_mm512_permutex2var_ps(l02, lo, l13), _mm512_permutex2var_ps(l02, hi, l13),
                           _mm512_permutex2var_ps(h02, lo, h13), _mm512_permutex2var_ps(h02, hi, h13)};
            for (int k = 0; k < 4; k++) {
                int64_t c0 = 4 * q + 16 * k, nleft = ow - c0;
                __mmask16 km = (__mmask16)(nleft >= 16 ? 0xffff : nleft <= 0 ? 0 : (1u << nleft) - 1);
                _mm512_mask_storeu_ps(row + c0, km, w[k]);
            }
        }
    }
}

void st_wino4_out_rows(const float *m, int64_t xs, int64_t nq, const st_gemm_epi *e, float *const *rows, int64_t ow)
{
    vact act = vact_of(&e->act);
    if (st_gemm_epi_native(&e->act)) {
        wino4_out512(m, xs, nq, e, &act, rows, ow);
        return;
    }
    st_gemm_epi pre = *e;
    pre.act.act = 0;
    act.code = -1;
    wino4_out512(m, xs, nq, &pre, &act, rows, ow);
    st_gemm_epi rest = {0};
    rest.act = e->act;
    rest.post_scale = e->post_scale;
    rest.post_shift = e->post_shift;
    for (int a = 0; a < 4; a++)
        if (rows[a]) st_gemm_epi_row(&rest, 0, rows[a], ow);
}

/* ---- stride-2 and stride-4 deinterleaving (conv staging) ---- */

/* The lanes of a 16-float load at element index i0 of a row of w floats
 * that fall inside it, and that load's address (masked lanes are never
 * touched, so it may start before the row or run past it: the address is
 * formed as an integer). */
static inline __mmask16 row_mask(int64_t i0, int64_t w)
{
    int64_t lo = i0 < 0 ? -i0 : 0, hi = w - i0 < 16 ? w - i0 : 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

static inline const float *row_at(const float *x, int64_t i0)
{
    return (const float *)(uintptr_t)((uintptr_t)x + (uintptr_t)(i0 * (int64_t)sizeof(float)));
}

/* e[q] = X(ix0 + 2q), o[q] = X(ix0 + 2q + 1) for q < n, X(i) = x[i] inside
 * [0, w) and 0 outside: two vpermt2ps per 32 floats, the pads by masked
 * loads. */
ST_AVX512 static void split2_512(const float *x, int64_t w, int64_t ix0, float *e, float *o, int64_t n)
{
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t q = 0; q < n; q += 16) {
        int64_t i0 = ix0 + 2 * q;
        __mmask16 mq = (__mmask16)(n - q >= 16 ? 0xffff : (1u << (n - q)) - 1);
        __m512 a, b;
        if (i0 >= 0 && i0 + 32 <= w) {
            a = _mm512_loadu_ps(x + i0);
            b = _mm512_loadu_ps(x + i0 + 16);
        } else {
            a = _mm512_maskz_loadu_ps(row_mask(i0, w), row_at(x, i0));
            b = _mm512_maskz_loadu_ps(row_mask(i0 + 16, w), row_at(x, i0 + 16));
        }
        _mm512_mask_storeu_ps(e + q, mq, _mm512_permutex2var_ps(a, ie, b));
        _mm512_mask_storeu_ps(o + q, mq, _mm512_permutex2var_ps(a, io, b));
    }
}

/* p_j[q] = X(ix0 + 4q + j) for q < n, j < 4: 64 floats in four vectors,
 * phases (0, 1) and (2, 3) gathered from pairs of vectors, then the pairs'
 * halves joined: eight vpermt2ps per 64 floats. */
ST_AVX512 static void split4_512(const float *x, int64_t w, int64_t ix0, float *p0, float *p1, float *p2, float *p3,
                                 int64_t n)
{
    const __m512i i01 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    const __m512i i23 = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
    const __m512i jlo = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i jhi = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    for (int64_t q = 0; q < n; q += 16) {
        int64_t i0 = ix0 + 4 * q;
        __m512 v[4];
        __mmask16 mq = (__mmask16)(n - q >= 16 ? 0xffff : (1u << (n - q)) - 1);
        if (i0 >= 0 && i0 + 64 <= w) {
            for (int k = 0; k < 4; k++) v[k] = _mm512_loadu_ps(x + i0 + 16 * k);
        } else {
            for (int k = 0; k < 4; k++) v[k] = _mm512_maskz_loadu_ps(row_mask(i0 + 16 * k, w), row_at(x, i0 + 16 * k));
        }
        __m512 a01 = _mm512_permutex2var_ps(v[0], i01, v[1]), b01 = _mm512_permutex2var_ps(v[2], i01, v[3]);
        __m512 a23 = _mm512_permutex2var_ps(v[0], i23, v[1]), b23 = _mm512_permutex2var_ps(v[2], i23, v[3]);
        _mm512_mask_storeu_ps(p0 + q, mq, _mm512_permutex2var_ps(a01, jlo, b01));
        _mm512_mask_storeu_ps(p1 + q, mq, _mm512_permutex2var_ps(a01, jhi, b01));
        _mm512_mask_storeu_ps(p2 + q, mq, _mm512_permutex2var_ps(a23, jlo, b23));
        _mm512_mask_storeu_ps(p3 + q, mq, _mm512_permutex2var_ps(a23, jhi, b23));
    }
}

void st_split2(const float *x, int64_t w, int64_t ix0, float *e, float *o, int64_t n)
{
    if (n > 0) split2_512(x, w, ix0, e, o, n);
}

void st_split4(const float *x, int64_t w, int64_t ix0, float *p0, float *p1, float *p2, float *p3, int64_t n)
{
    if (n > 0) split4_512(x, w, ix0, p0, p1, p2, p3, n);
}

/* ---- 16 x 16 transpose ---- */

/* Three rounds of in-lane and cross-lane shuffles (64 in all): unpack pairs
 * of rows, gather four rows per 128-bit lane (u[4k + m], lane j: column
 * 4j + m of rows 4k..4k+3), then join the four row groups per column. */
ST_AVX512 static void transpose16_512(const float *src, int64_t ss, int ni, int nd, float *dst, int64_t ds)
{
    __mmask16 md = (__mmask16)(nd >= 16 ? 0xffff : (1u << nd) - 1), mi = (__mmask16)(ni >= 16 ? 0xffff : (1u << ni) - 1);
    __m512 r[16], t[16], u[16];
    for (int i = 0; i < 16; i++) r[i] = i < ni ? _mm512_maskz_loadu_ps(md, src + i * ss) : _mm512_setzero_ps();
    for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 4; k++) {
        u[4 * k + 0] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
        u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
    for (int m = 0; m < 4; m++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
        __m512 w0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
        __m512 c[4] = {_mm512_shuffle_f32x4(v0, w0, 0x88), _mm512_shuffle_f32x4(v1, w1, 0x88),
                       _mm512_shuffle_f32x4(v0, w0, 0xDD), _mm512_shuffle_f32x4(v1, w1, 0xDD)};
        for (int q = 0; q < 4; q++) {
            int l = 4 * q + m; /* c[q] is column 4q + m */
            if (l < nd) _mm512_mask_storeu_ps(dst + l * ds, mi, c[q]);
        }
    }
}

void st_transpose16(const float *src, int64_t ss, int ni, int nd, float *dst, int64_t ds)
{
    if (ni > 0 && nd > 0) transpose16_512(src, ss, ni, nd, dst, ds);
}

/* ---- matrix-vector ---- */

/* y[j] = alpha * (x . column j of B) + beta * y[j]: the dot form, for a B
 * whose columns are contiguous (a transposed weight, [n, k] row-major).
 * Four columns at a time share each load of x; every y[j] sums its k
 * products in the same order, however the caller splits the columns. */
ST_AVX512 static void gemv_dot(const float *x, const float *b, int64_t bcs, float alpha, float beta, float *y,
                               int64_t ys, int64_t n, int64_t k)
{
    __mmask16 tail = (__mmask16)((1u << (k % 16)) - 1);
    int64_t kv = k / 16;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const float *c0 = b + j * bcs, *c1 = c0 + bcs, *c2 = c1 + bcs, *c3 = c2 + bcs;
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (int64_t v = 0; v < kv; v++) {
            __m512 xv = _mm512_loadu_ps(x + 16 * v);
            s0 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(c0 + 16 * v), s0);
            s1 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(c1 + 16 * v), s1);
            s2 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(c2 + 16 * v), s2);
            s3 = _mm512_fmadd_ps(xv, _mm512_loadu_ps(c3 + 16 * v), s3);
        }
        if (tail) {
            __m512 xv = _mm512_maskz_loadu_ps(tail, x + 16 * kv);
            s0 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, c0 + 16 * kv), s0);
            s1 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, c1 + 16 * kv), s1);
            s2 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, c2 + 16 * kv), s2);
            s3 = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(tail, c3 + 16 * kv), s3);
        }
        float d[4] = {_mm512_reduce_add_ps(s0), _mm512_reduce_add_ps(s1), _mm512_reduce_add_ps(s2),
                      _mm512_reduce_add_ps(s3)};
        for (int q = 0; q < 4; q++) {
            float *o = y + (j + q) * ys;
            *o = alpha * d[q] + (beta != 0.0f ? beta * *o : 0.0f);
        }
    }
    for (; j < n; j++) {
        const float *c0 = b + j * bcs;
        __m512 s0 = _mm512_setzero_ps();
        for (int64_t v = 0; v < kv; v++) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + 16 * v), _mm512_loadu_ps(c0 + 16 * v), s0);
        if (tail)
            s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, x + 16 * kv), _mm512_maskz_loadu_ps(tail, c0 + 16 * kv), s0);
        float *o = y + j * ys;
        *o = alpha * _mm512_reduce_add_ps(s0) + (beta != 0.0f ? beta * *o : 0.0f);
    }
}

/* The axpy form, for a B whose rows are contiguous ([k, n] row-major):
 * blocks of up to 128 columns stay in eight registers while k rows
 * stream past. */
ST_AVX512 static void gemv_rows(const float *x, int64_t xs, const float *b, int64_t brs, float alpha, float beta,
                                float *y, int64_t ys, int64_t n, int64_t k)
{
    for (int64_t j0 = 0; j0 < n; j0 += 128) {
        int64_t nb = n - j0 < 128 ? n - j0 : 128;
        int nv = (int)((nb + 15) / 16);
        __mmask16 last = nb % 16 ? (__mmask16)((1u << (nb % 16)) - 1) : (__mmask16)0xffff;
        __m512 acc[8];
        for (int v = 0; v < 8; v++) acc[v] = _mm512_setzero_ps();
        for (int64_t p = 0; p < k; p++) {
            __m512 xv = _mm512_set1_ps(x[p * xs]);
            const float *row = b + p * brs + j0;
            for (int v = 0; v < nv; v++)
                acc[v] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(v == nv - 1 ? last : 0xffff, row + 16 * v), acc[v]);
        }
        for (int v = 0; v < nv; v++) {
            float out[16];
            _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_set1_ps(alpha), acc[v]));
            int cnt = v == nv - 1 ? (int)(nb - 16 * v) : 16;
            for (int q = 0; q < cnt; q++) {
                float *o = y + (j0 + 16 * v + q) * ys;
                *o = out[q] + (beta != 0.0f ? beta * *o : 0.0f);
            }
        }
    }
}

int st_sgemv_fast(const float *x, int64_t xs, const float *b, int64_t brs, int64_t bcs, float alpha, float beta,
                  float *y, int64_t ys, int64_t n, int64_t k)
{
    if (n <= 0) return 1;
    if (bcs == 1) {
        gemv_rows(x, xs, b, brs, alpha, beta, y, ys, n, k);
        return 1;
    }
    if (brs != 1) return 0;
    if (xs == 1 || k <= 1) {
        gemv_dot(x, b, bcs, alpha, beta, y, ys, n, k);
        return 1;
    }
    float *xc = malloc((size_t)k * sizeof *xc);
    if (!xc) return -1;
    for (int64_t p = 0; p < k; p++) xc[p] = x[p * xs];
    gemv_dot(xc, b, bcs, alpha, beta, y, ys, n, k);
    free(xc);
    return 1;
}
