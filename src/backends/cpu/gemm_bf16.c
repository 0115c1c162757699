/*
 * gemm_bf16.c — the bf16 GEMM core (see gemm_bf16.h): packing into the
 * pair-interleaved layout and the AVX-512 BF16 micro-kernel.
 *
 * Only the functions marked ST_BF16 carry the avx512bf16 target; callers
 * reach them after st_gemm_bf16_fast() has checked the CPU, so one binary
 * runs everywhere (the f32 kernels serve where these cannot).
 *
 * The micro-kernel is the f32 one's shape (gemm_avx512.c): an 8 x 48 tile
 * of C in 24 zmm accumulators; per pair of k it loads three vectors of the
 * B panel (48 columns x 2 bf16) and broadcasts one 32-bit word (2 bf16)
 * of each of A's eight rows, 24 vdpbf16ps per 11 loads: twice the f32
 * kernel's multiply-adds per instruction.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/vmath.h"

#define ST_BF16 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,fma")))
#define ST_UNROLL _Pragma("GCC unroll 8")

static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;
static bool bf16_ok;

static void bf16_probe(void)
{
    const char *off = getenv("STRATA_CPU_NO_BF16");
    bf16_ok = !(off && *off && strcmp(off, "0") != 0) && st_gemm_fast() && __builtin_cpu_supports("avx512bf16");
}

bool st_gemm_bf16_fast(void)
{
    pthread_once(&bf16_once, bf16_probe);
    return bf16_ok;
}

/* f32 -> bf16 bits, to nearest even; NaN stays NaN (quieted) */
static uint32_t bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

static void pack_a_strided(const float *a, int64_t rs, int64_t cs, int64_t m, int64_t k, uint32_t *dst)
{
    const int64_t R = ST_GEMM_MR, kp = (k + 1) / 2;
    for (int64_t b = 0; b * R < m; b++) {
        uint32_t *blk = dst + b * kp * R;
        for (int64_t r = 0; r < R; r++) {
            int64_t i = b * R + r;
            for (int64_t p = 0; p < kp; p++) {
                uint32_t w = 0;
                if (i < m) {
                    const float *row = a + i * rs;
                    w = bf16_bits(row[2 * p * cs]);
                    if (2 * p + 1 < k) w |= bf16_bits(row[(2 * p + 1) * cs]) << 16;
                }
                blk[p * R + r] = w;
            }
        }
    }
}

void st_gemm_bf16_pack_a(const float *a, int64_t lda, int64_t m, int64_t k, uint32_t *dst)
{
    pack_a_strided(a, lda, 1, m, k, dst);
}

/* Unit-stride rows: sixteen columns of a pair of rows a step, rounded
 * with vcvtne2ps2bf16 (low half row k, high half row k + 1) and
 * interleaved with one vpermw. */
ST_BF16 static void pack_b_unit(const float *base, const int64_t *off, int64_t kc, int64_t n, uint32_t *dst)
{
    const int64_t kp = (kc + 1) / 2;
    uint16_t idx[32];
    for (int j = 0; j < 16; j++) {
        idx[2 * j] = (uint16_t)j;
        idx[2 * j + 1] = (uint16_t)(16 + j);
    }
    const __m512i perm = _mm512_loadu_si512(idx);
    for (int64_t j0 = 0; j0 < n; j0 += ST_GEMM_NR) {
        uint32_t *panel = dst + (j0 / ST_GEMM_NR) * kp * ST_GEMM_NR;
        for (int64_t p = 0; p < kp; p++) {
            const float *r0 = base + off[2 * p] + j0;
            const float *r1 = 2 * p + 1 < kc ? base + off[2 * p + 1] + j0 : NULL;
            uint32_t *out = panel + p * ST_GEMM_NR;
            ST_UNROLL
            for (int v = 0; v < 3; v++) {
                int64_t left = n - j0 - 16 * v;
                __mmask16 mk = (__mmask16)(left >= 16 ? 0xffff : left <= 0 ? 0 : (1u << left) - 1);
                __m512 x0 = mk == 0xffff ? _mm512_loadu_ps(r0 + 16 * v) : _mm512_maskz_loadu_ps(mk, r0 + 16 * v);
                __m512 x1 = !r1                ? _mm512_setzero_ps()
                            : mk == 0xffff     ? _mm512_loadu_ps(r1 + 16 * v)
                                               : _mm512_maskz_loadu_ps(mk, r1 + 16 * v);
                __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
                _mm512_store_si512(out + 16 * v, _mm512_permutexvar_epi16(perm, h));
            }
        }
    }
}

void st_gemm_bf16_pack_b(const float *base, const int64_t *off, int64_t cs, int64_t kc, int64_t n, uint32_t *dst)
{
    if (cs == 1) {
        pack_b_unit(base, off, kc, n, dst);
        return;
    }
    const int64_t kp = (kc + 1) / 2;
    for (int64_t j = 0; j < (n + ST_GEMM_NR - 1) / ST_GEMM_NR * ST_GEMM_NR; j++) {
        uint32_t *col = dst + (j / ST_GEMM_NR) * kp * ST_GEMM_NR + j % ST_GEMM_NR;
        for (int64_t p = 0; p < kp; p++) {
            uint32_t w = 0;
            if (j < n) {
                w = bf16_bits(base[off[2 * p] + j * cs]);
                if (2 * p + 1 < kc) w |= bf16_bits(base[off[2 * p + 1] + j * cs]) << 16;
            }
            col[p * ST_GEMM_NR] = w;
        }
    }
}

/* One MR x (16 * NV) tile: kp pairs, A words at a[p * MR + r], B words at
 * b[p * NR + 16 * v + lane], rows (1..8) and nv (columns) valid. */
__attribute__((always_inline)) ST_BF16 static inline void ukernel_bf(const int NV, int64_t kp, const uint32_t *a,
                                                                     const uint32_t *b, float *c, int64_t ldc, int rows,
                                                                     int nv, bool accumulate, const st_gemm_epi *ep,
                                                                     const vact *act)
{
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
    for (int64_t p = 0; p < kp; p++) {
        __m512i bv[3];
        ST_UNROLL
        for (int v = 0; v < NV; v++) bv[v] = _mm512_load_si512(b + p * ST_GEMM_NR + 16 * v);
        ST_UNROLL
        for (int r = 0; r < ST_GEMM_MR; r++) {
            __m512i x = _mm512_set1_epi32((int)a[p * ST_GEMM_MR + r]);
            ST_UNROLL
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)x, (__m512bh)bv[v]);
        }
    }
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

ST_BF16 static void ukernel_bf48(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc, int rows,
                                 int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_bf(3, kp, a, b, c, ldc, rows, nv, accumulate, ep, act);
}

ST_BF16 static void ukernel_bf32(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc, int rows,
                                 int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_bf(2, kp, a, b, c, ldc, rows, nv, accumulate, ep, act);
}

ST_BF16 static void ukernel_bf16(int64_t kp, const uint32_t *a, const uint32_t *b, float *c, int64_t ldc, int rows,
                                 int nv, bool accumulate, const st_gemm_epi *ep, const vact *act)
{
    ukernel_bf(1, kp, a, b, c, ldc, rows, nv, accumulate, ep, act);
}

static inline st_gemm_epi epi_rows(const st_gemm_epi *e, int64_t i)
{
    st_gemm_epi r = {0};
    if (!e) return r;
    r.scale = e->scale ? e->scale + i : NULL;
    r.shift = e->shift ? e->shift + i : NULL;
    r.post_scale = e->post_scale ? e->post_scale + i : NULL;
    r.post_shift = e->post_shift ? e->post_shift + i : NULL;
    return r;
}

/* Panels outer, row blocks inner, as in the f32 core: a panel stays in L1
 * while A's blocks stream past it. */
ST_BF16 static void block_bf16(const uint32_t *a, int64_t a_stride, const uint32_t *b, int64_t kc, int64_t m,
                               int64_t n, float *c, int64_t ldc, bool accumulate, const st_gemm_epi *epi)
{
    vact act = vact_of(epi ? &epi->act : NULL);
    const int64_t kp = (kc + 1) / 2;
    for (int64_t j = 0; j < n; j += ST_GEMM_NR) {
        int nv = (int)(n - j < ST_GEMM_NR ? n - j : ST_GEMM_NR);
        const uint32_t *panel = b + (j / ST_GEMM_NR) * kp * ST_GEMM_NR;
        for (int64_t i = 0; i < m; i += ST_GEMM_MR) {
            int rows = (int)(m - i < ST_GEMM_MR ? m - i : ST_GEMM_MR);
            st_gemm_epi ep = epi_rows(epi, i);
            const uint32_t *ai = a + (i / ST_GEMM_MR) * a_stride;
            float *ct = c + i * ldc + j;
            if (nv > 32) ukernel_bf48(kp, ai, panel, ct, ldc, rows, nv, accumulate, &ep, &act);
            else if (nv > 16) ukernel_bf32(kp, ai, panel, ct, ldc, rows, nv, accumulate, &ep, &act);
            else ukernel_bf16(kp, ai, panel, ct, ldc, rows, nv, accumulate, &ep, &act);
        }
    }
}

void st_gemm_bf16_block(const uint32_t *a, int64_t a_stride, const uint32_t *b, int64_t kc, int64_t m, int64_t n,
                        float *c, int64_t ldc, bool accumulate, const st_gemm_epi *epi)
{
    if (m <= 0 || n <= 0) return;
    if (kc <= 0) {
        for (int64_t i = 0; i < m; i++) {
            float *r = c + i * ldc;
            if (!accumulate) memset(r, 0, (size_t)n * sizeof *r);
            st_gemm_epi_row(epi, i, r, n);
        }
        return;
    }
    if (epi && !st_gemm_epi_native(&epi->act)) {
        /* an activation without a vector form: the affine in the kernel,
         * the rest after the store (as st_gemm_block does) */
        st_gemm_epi pre = *epi, rest = {0};
        pre.act.act = 0;
        pre.post_scale = pre.post_shift = NULL;
        block_bf16(a, a_stride, b, kc, m, n, c, ldc, accumulate, &pre);
        rest.act = epi->act;
        rest.post_scale = epi->post_scale;
        rest.post_shift = epi->post_shift;
        for (int64_t i = 0; i < m; i++) st_gemm_epi_row(&rest, i, c + i * ldc, n);
        return;
    }
    block_bf16(a, a_stride, b, kc, m, n, c, ldc, accumulate, epi);
}

/* Columns of B packed per k block at a time: 8 panels (a k block of 256
 * is 192 KB of packed B, within L2). */
#define ST_BF16_NC (8 * ST_GEMM_NR)

int st_gemm_bf16(const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float alpha,
                 float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k)
{
    if (!(beta == 0.0f || (beta == 1.0f && alpha == 1.0f))) return 0;
    if (m <= 0 || n <= 0) return 1;
    int64_t kcb = st_gemm_kc(k), nc = n < ST_BF16_NC ? n : ST_BF16_NC;
    size_t aw = st_gemm_bf16_a_words(m, k), bw = st_gemm_bf16_b_words(kcb > 0 ? kcb : 1, nc);
    uint32_t *ap = aligned_alloc(64, (aw * 4 + 63) / 64 * 64);
    uint32_t *bp = aligned_alloc(64, (bw * 4 + 63) / 64 * 64);
    int64_t *off = malloc((size_t)(kcb > 0 ? kcb : 1) * sizeof *off);
    /* alpha as the epilogue's scale of every row (beta 0 only) */
    float *scale = alpha != 1.0f ? malloc((size_t)m * sizeof *scale) : NULL;
    if (!ap || !bp || !off || (alpha != 1.0f && !scale)) {
        free(ap);
        free(bp);
        free(off);
        free(scale);
        return -1;
    }
    for (int64_t i = 0; scale && i < m; i++) scale[i] = alpha;
    st_gemm_epi epi = {0};
    epi.scale = scale;
    bool acc = beta != 0.0f;
    pack_a_strided(a, ars, acs, m, k, ap);
    int64_t a_stride = (k + 1) / 2 * ST_GEMM_MR;
    for (int64_t j0 = 0; j0 < n; j0 += nc) {
        int64_t nn = n - j0 < nc ? n - j0 : nc;
        if (k == 0) st_gemm_bf16_block(ap, a_stride, bp, 0, m, nn, c + j0, ldc, acc, &epi);
        for (int64_t k0 = 0; k0 < k; k0 += kcb) {
            int64_t kc = k - k0 < kcb ? k - k0 : kcb;
            for (int64_t q = 0; q < kc; q++) off[q] = (k0 + q) * brs;
            st_gemm_bf16_pack_b(b + j0 * bcs, off, bcs, kc, nn, bp);
            st_gemm_bf16_block(ap + k0 / 2 * ST_GEMM_MR, a_stride, bp, kc, m, nn, c + j0, ldc, acc || k0 > 0,
                               k0 + kc >= k ? &epi : NULL);
        }
    }
    free(ap);
    free(bp);
    free(off);
    free(scale);
    return 1;
}
