/*
 * gemm_bf16.h — the CPU's bf16 GEMM core for --precision bf16: products of
 * bf16 operands accumulated in f32 with AVX-512 BF16 (vdpbf16ps), used by
 * Conv, MatMul and Gemm when their operands are bf16 and the CPU has
 * avx512_bf16 (gemm.h is the f32 core it mirrors).
 *
 * vdpbf16ps multiplies *pairs* of bf16 along k: each 32-bit lane of its
 * operands holds elements k and k + 1.  So both operands are packed into a
 * pair-interleaved layout (32-bit words, the element of even k in the low
 * half, a zero high half past an odd k):
 *   A: blocks of ST_GEMM_MR rows, word (r, p) of a block at [p * MR + r]
 *      (the kernel broadcasts one word a row);
 *   B: panels of ST_GEMM_NR columns, word (p, j) of a panel at
 *      [p * NR + j], zero past column n (the kernel loads three vectors).
 * Products of two bf16 are exact in f32, so against the f32 kernels on the
 * same bf16-valued data the only differences are the order of the f32
 * additions (pairs first) and that vdpbf16ps treats subnormal bf16 inputs
 * and results as zero.  The epilogue (gemm.h, st_gemm_epi) runs in f32 on
 * the registers, and C is f32: callers store it as bf16.
 *
 * Determinism: as in gemm.h, each element of C is a fixed chain over k
 * whatever the caller's split of m and n among threads.
 */
#ifndef ST_CPU_GEMM_BF16_H
#define ST_CPU_GEMM_BF16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/gemm.h"

/* True when this CPU runs the bf16 kernels: AVX-512 (st_gemm_fast()) and
 * avx512_bf16, checked with cpuid once.  STRATA_CPU_NO_BF16=1 answers
 * false, so tests can cover the f32 path these kernels replace on a CPU
 * that has them. */
bool st_gemm_bf16_fast(void);

/* Words a packed A of m rows and k columns takes: ceil(m / MR) blocks of
 * ceil(k / 2) * MR. */
static inline size_t st_gemm_bf16_a_words(int64_t m, int64_t k)
{
    return (size_t)((m + ST_GEMM_MR - 1) / ST_GEMM_MR) * ST_GEMM_MR * (size_t)((k + 1) / 2);
}

/* Words a packed B of kc rows and n columns takes. */
static inline size_t st_gemm_bf16_b_words(int64_t kc, int64_t n)
{
    return (size_t)((n + ST_GEMM_NR - 1) / ST_GEMM_NR) * ST_GEMM_NR * (size_t)((kc + 1) / 2);
}

/* Packs A[m, k] (f32, row stride lda, unit column stride), rounded to
 * bf16 to nearest even, into dst (st_gemm_bf16_a_words words).  Rows past
 * m are zero.  Portable code: weights are packed once, at plan time. */
void st_gemm_bf16_pack_a(const float *a, int64_t lda, int64_t m, int64_t k, uint32_t *dst);

/* Packs B (f32, rows kc, columns n; row k at base + off[k], element j of
 * it at [j * cs]), rounded to bf16 to nearest even (subnormals to zero),
 * into dst (st_gemm_bf16_b_words(kc, n) words, 64-byte aligned).  Needs
 * st_gemm_bf16_fast().  A conv passes its staged input and tap offsets, a
 * MatMul its B with off[k] = k * row stride. */
void st_gemm_bf16_pack_b(const float *base, const int64_t *off, int64_t cs, int64_t kc, int64_t n, uint32_t *dst);

/* C[m, n] (f32, row stride ldc) = A * B (+ C's values when accumulate),
 * for a k block of kc: a points at the block's first pair in block 0 of a
 * packed A whose blocks are a_stride words apart, b at a packed B of this
 * k block.  The first pair must be whole (k0 even).  With epi (pass it
 * for the last k block only, offset to row 0) the affine and the
 * activation run before the store.  Needs st_gemm_bf16_fast(). */
void st_gemm_bf16_block(const uint32_t *a, int64_t a_stride, const uint32_t *b, int64_t kc, int64_t m, int64_t n,
                        float *c, int64_t ldc, bool accumulate, const st_gemm_epi *epi);

/* C[m, n] = alpha * A[m, k] * B[k, n] + beta * C on one thread, A's
 * element (i, p) at a[i * ars + p * acs] and B's (p, j) at
 * b[p * brs + j * bcs], both f32 holding bf16 values (rounded to nearest
 * even if not), C f32 with row stride ldc; beta 0 ignores C's contents.
 * Packs both operands per call.  Returns 1 when done; 0 (nothing done)
 * when beta is neither 0 nor 1, or is 1 with alpha != 1, for the caller's
 * f32 GEMM; -1 when out of memory.  Needs st_gemm_bf16_fast(). */
int st_gemm_bf16(const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs, float alpha,
                 float beta, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k);

#endif
