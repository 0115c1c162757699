/*
 * gemm.h — the CPU's own f32 GEMM core: an AVX-512 register-blocked
 * micro-kernel with a fused epilogue, used by Conv, MatMul and Gemm (via
 * st_sgemm) when the CPU has AVX-512.
 *
 * The shape of the work: C[m, n] (+)= A[m, kc] * B[kc, n], where A is
 * row-major with unit stride along k (conv weights as they lie: [M, C*K]),
 * and B has been packed into panels of ST_GEMM_NR columns, each panel kc
 * rows of NR floats (zero-padded past n), 64-byte aligned.  The
 * micro-kernel holds an MR x NR tile of C in registers, broadcasts A and
 * loads B; the epilogue (bias per row of C, then an activation) runs on the
 * registers before the one store, so a Conv's output is written once.
 *
 * Determinism: each element of C is a chain of FMAs over k in order, k
 * blocks in order; nothing depends on how callers split m or n among
 * threads, so results are bit-identical for any thread count.
 */
#ifndef ST_CPU_GEMM_H
#define ST_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/elementwise.h"

#define ST_GEMM_MR 8
#define ST_GEMM_NR 48
/* k block: the longest sum the micro-kernel runs before C is stored and
 * reloaded.  256 measured as fast as 128 or faster on every conv shape
 * tried (bench/RESULTS.md), with fewer passes over C. */
#define ST_GEMM_KC 256

/* The k block size for a sum of k terms: k split into equal blocks of at
 * most ST_GEMM_KC (rounded up to 4), so no block is a short remainder that
 * pays a full load and store of C.  A function of k alone: results do not
 * depend on who calls. */
static inline int64_t st_gemm_kc(int64_t k)
{
    int64_t blocks = (k + ST_GEMM_KC - 1) / ST_GEMM_KC;
    if (blocks < 1) return k;
    int64_t kc = (k + blocks - 1) / blocks;
    return (kc + 3) / 4 * 4;
}

typedef struct st_gemm_epi {
    /* per row of C (already offset to row 0), each NULL for the identity:
     * act(c * scale + shift + col_shift) * post_scale + post_shift */
    const float *scale, *shift;
    st_epilogue act;
    const float *post_scale, *post_shift;
    /* per column of C (offset to column 0 of the block), NULL for none: a
     * linear layer's bias (MatMul or Gemm: columns are its output
     * features, where a conv's channels are rows).  c + col_shift[j] is
     * one f32 add of the finished sum, so it rounds as a separate Add
     * does. */
    const float *col_shift;
} st_gemm_epi;

/* True when this CPU runs the AVX-512 kernels (checked with cpuid). */
bool st_gemm_fast(void);

/* Floats a packed B of kc rows and n columns takes. */
static inline size_t st_gemm_packed_floats(int64_t kc, int64_t n)
{
    return (size_t)((n + ST_GEMM_NR - 1) / ST_GEMM_NR) * ST_GEMM_NR * (size_t)kc;
}

/* Packs B[kc, n] (element (k, j) at b[k * rs + j * cs]) into panels:
 * panel q holds columns [q * NR, q * NR + NR), row k at q * kc * NR + k * NR. */
void st_gemm_pack_b(const float *b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float *dst);

/* How the kernel finds B: element (k, j) of the k block is at
 *   base[(j / NR) * panel + off[k] + j % NR],
 * so packed panels are {dst, k * NR, kc * NR}, and a conv reading its
 * (staged) input in place is {plane, per-k offsets of the kernel tap, NR}:
 * columns are consecutive pixels.  Reads past column n of the last panel
 * are masked, so B may end exactly at its last column. */
typedef struct st_gemm_b {
    const float *base;
    const int64_t *off;     /* kc entries */
    int64_t panel;
} st_gemm_b;

/* Packs A[m, k] (row stride lda) into blocks of MR rows, element (r, p)
 * of block b at dst[b * k * MR + p * MR + r]: the micro-kernel then reads
 * A as one sequential stream (a cache line per two k) instead of eight
 * rows.  dst holds ceil(m / MR) * MR * k floats. */
void st_gemm_pack_a(const float *a, int64_t lda, int64_t m, int64_t k, float *dst);

/* C[m, n] (row stride ldc) = A[m, kc] (row stride lda) * B, plus C's
 * values when accumulate; with epi (pass it for the last k block only)
 * the bias and activation are applied before the store.  lda < 0: A is
 * packed (st_gemm_pack_a), a points at column k0 of its first block and
 * -lda is the block stride (k * MR). */
void st_gemm_block(const float *a, int64_t lda, const st_gemm_b *b, int64_t kc, int64_t m, int64_t n, float *c,
                   int64_t ldc, bool accumulate, const st_gemm_epi *epi);

/* Whether the vector epilogue handles this activation (else the caller
 * applies st_epilogue_f32 after the GEMM). */
bool st_gemm_epi_native(const st_epilogue *e);

/* One output row of a depthwise conv: out[x] = the epilogue (row 0 of e)
 * of the sum over taps t of w[t] * s[off[t] + x], for x < ow, where s is
 * the row's start in the conv's staged (padded, phase-split) input. */
void st_dw_row(const float *s, const int64_t *off, int64_t taps, const float *w, const st_gemm_epi *e, int64_t ow,
               float *out);

/* Winograd F(2x2, 3x3) input transform B^T d B of one row of nq tiles of
 * one channel: e[r], o[r] (r < 4) are the even and odd columns of the
 * tile row's 4 input rows (nq + 1 of each); product xi goes to
 * v[xi * vs + q]. */
void st_wino_in_row(const float *const *e, const float *const *o, float *v, int64_t vs, int64_t nq);

/* Winograd F(2x2, 3x3) output transform for one output channel and one row
 * of tiles: m holds the 16 products of nq tiles, product xi (= 4a + b, a
 * the row, b the column of the 4x4 tile) at m[xi * xs + q]; writes the
 * epilogue (row 0 of e) of the 2x2 outputs to rows r0 and r1 (r1 NULL:
 * none), columns [0, ow), f32 and unit-stride. */
void st_wino_out_rows(const float *m, int64_t xs, int64_t nq, const st_gemm_epi *e, float *r0, float *r1, int64_t ow);

/* The same for F(4x4, 3x3): p[4 * r + j] (r < 6 input rows, j < 4) holds
 * column 4q + j of input row r at [q], nq + 1 of each; 36 products xi =
 * 6a + b.  The output transform writes 4 rows (rows[a], NULL past the
 * output). */
void st_wino4_in_row(const float *const *p, float *v, int64_t vs, int64_t nq);
void st_wino4_out_rows(const float *m, int64_t xs, int64_t nq, const st_gemm_epi *e, float *const *rows, int64_t ow);

/* The epilogue of e's row r on n floats, in scalar code (for callers
 * without the vector kernels). */
void st_gemm_epi_row(const st_gemm_epi *e, int64_t r, float *x, int64_t n);

/* y[0..n) = the activation e of x[0..n) (x == y allowed) with the vector
 * math above; false (nothing done) when there is no vector form or no
 * AVX-512. */
bool st_vec_act(const st_epilogue *e, const float *x, float *y, int64_t n);

/* A conv's stride phases of one row, AVX-512 only (callers have checked
 * st_gemm_fast()): with X(i) = x[i] inside [0, w) and 0 outside (the
 * pads), e[q] = X(ix0 + 2q), o[q] = X(ix0 + 2q + 1), and p_j[q] =
 * X(ix0 + 4q + j), for q < n.  x is read inside [0, w) only. */
void st_split2(const float *x, int64_t w, int64_t ix0, float *e, float *o, int64_t n);
void st_split4(const float *x, int64_t w, int64_t ix0, float *p0, float *p1, float *p2, float *p3, int64_t n);

/* dst[l * ds + i] = src[i * ss + l] for i < ni, l < nd (both at most 16),
 * AVX-512 only (callers have checked st_gemm_fast()). */
void st_transpose16(const float *src, int64_t ss, int ni, int nd, float *dst, int64_t ds);

/* c[m, n] = alpha * A * B + beta * c on one thread, A's element (i, p) at
 * a[i * ars + p * acs] and B's (p, j) at b[p * brs + j * bcs]. */
/* y[j * ys] = alpha * sum_p x[p * xs] * B(p, j) + beta * y[j * ys] for j < n,
 * with B(p, j) = b[p * brs + j * bcs]: one row times a matrix, without the
 * GEMM's packing (a batch-1 linear layer reads its weight once).  Returns
 * 1 when done; 0 unless bcs == 1 or brs == 1, and the caller takes the
 * GEMM; -1 when out of memory, and the caller fails rather than take the
 * GEMM, which rounds differently (a result must not depend on how much
 * memory was free).  AVX-512 only (callers have checked st_gemm_fast());
 * beta == 0 ignores y's old contents. */
int st_sgemv_fast(const float *x, int64_t xs, const float *b, int64_t brs, int64_t bcs, float alpha, float beta,
                  float *y, int64_t ys, int64_t n, int64_t k);
bool st_sgemm_fast(const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float alpha,
                   float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k);


/* A constant B[k, n] (element (p, j) at b[p * rs + j * cs]) packed whole,
 * once (k_linalg.c's prepare for a MatMul or Gemm weight): for each k
 * block of st_gemm_kc(k) rows from row k0, the panels of all n columns
 * (as st_gemm_pack_b makes them) at k0 * ceil(n / NR) * NR.  NULL when k
 * or n is 0 or out of memory; st_big_free() it (core/bigmem.h).  AVX-512
 * only. */
float *st_gemm_prepack_b(const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n);
/* st_sgemm_fast with B's columns [n0, n0 + n) of a prepacked B of ntot
 * columns; n0 a multiple of ST_GEMM_NR.  The products and their order are
 * those of st_sgemm_fast on the same B, so results are bit-identical. */
bool st_sgemm_fast_prepacked(const float *a, int64_t ars, int64_t acs, const float *bp, int64_t ntot, int64_t n0,
                             float alpha, float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k);
/* The same with an epilogue applied to each tile of C before its last
 * store (epi: col_shift and act only, col_shift offset to column 0 of
 * this product; NULL: none).  An activation without a vector form is
 * applied to the finished rows instead.  Each element gets the bias add
 * and the activation that separate Add and activation ops would apply
 * to the same sum, so the bits are theirs. */
bool st_sgemm_fast_prepacked_epi(const float *a, int64_t ars, int64_t acs, const float *bp, int64_t ntot, int64_t n0,
                                 float alpha, float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k,
                                 const st_gemm_epi *epi);

#endif
