/*
 * gemm_s8.h — the CPU's int8 GEMM core: C[m, n] = sum over k of
 * (A[i, k] - za_i) * (B[k, j] - zb_j), A and B each u8 or s8, accumulated
 * exactly in int32 (wrapping, as ONNX's int32 outputs do), with an
 * epilogue that writes int32, requantizes to u8/s8 or dequantizes to f32.
 *
 * The AVX-512 VNNI form: vpdpbusd multiplies 4 unsigned bytes by 4 signed
 * bytes and adds the 4 products to an int32 lane.  So k runs in quads: the
 * broadcast side (A) gives 4 bytes of one row per quad, the vector side (B)
 * 16 columns x 4 bytes per 64-byte vector.  One operand must be stored
 * unsigned and the other signed; when both have the same type, the one that
 * is *not* the weight is flipped (x ^ 0x80: u8 - 128 as s8, s8 + 128 as
 * u8) while it is packed or staged, and its zero point is flipped with it.
 * The sum is the same in the stored domain (x' = x + shift, z' = z + shift
 * cancel), so every correction is written with stored values:
 *   C = D - zb'_j rsA'_i - za'_i csB'_j + K za'_i zb'_j,
 * D the raw dot product, rsA' / csB' the sums of A's rows / B's columns.
 * Weights are packed once with their sums (st_gemm_s8_pack_a / _b), so a
 * constant weight's part of the correction is never recomputed.
 *
 * Layouts (ST_S8_MR rows, ST_S8_NR columns):
 *   packed A: blocks of MR rows; block b, quad q, row r: 4 bytes at
 *     data[(b * kq + q) * MR * 4 + r * 4]; a group's rows start a block.
 *   B as the kernel reads it: column j of quad q at
 *     base + (j / NR) * panel + off[q] + (j % NR) * 4
 *   so packed panels are {data, q * NR * 4, kq * NR * 4}, and a conv reading
 *   its staged input in place is {plane, tap offsets, NR * 4}.
 * Padding bytes (k past K, rows past m) are stored as 0 and contribute
 * nothing.
 *
 * Dispatch: st_gemm_s8_fast() (cpuid, once) picks the VNNI kernels, else a
 * portable scalar form of the same loops; STRATA_CPU_NO_AVX512=1 forces the
 * portable one.  Both give the same bits: integer sums are exact modulo
 * 2^32 in any order, and the float epilogue does the same IEEE operations
 * in the same order per element.  So results never depend on the thread
 * count or on how callers split the work.
 */
#ifndef ST_CPU_GEMM_S8_H
#define ST_CPU_GEMM_S8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/pool.h"
#include "core/dtype.h"
#include "core/status.h"

#define ST_S8_MR 8
#define ST_S8_NR 48

/* True when the VNNI kernels run (AVX-512 F/BW/VL/DQ and VNNI, checked
 * with cpuid once per process, and STRATA_CPU_NO_AVX512 unset). */
bool st_gemm_s8_fast(void);

/* A packed weight, owned by the caller that packed it (a kernel per run
 * today, a backend's prepare step later) and freed with
 * st_gemm_s8_packed_free, which accepts NULL. */
typedef struct st_s8_packed {
    st_dtype type;          /* ST_U8 or ST_I8: the stored bytes (weights are never flipped) */
    bool b_side;            /* packed as B (panels of NR columns), else as A (blocks of MR rows) */
    int64_t n;              /* rows (A) or columns (B) */
    int64_t groups, per_group; /* A: groups of per_group rows, each starting a block; B: 1, n */
    int64_t k, kq;          /* entries per row / column as packed (padding included), and quads of 4 */
    int32_t *sums;          /* per row (A) or column (B): sum of the stored values over k */
    uint8_t *data;          /* 64-byte aligned */
    size_t bytes;           /* of data */
} st_s8_packed;

/* Packs A[m, k] (u8 or s8; element (i, p) at a[i * rs + koff[p]], koff[p]
 * < 0 for a padding entry, stored 0) as the broadcast side, rows in groups
 * of per_group (m a multiple of it), each group starting a block so a
 * group's GEMM starts at its first row.  NULL when out of memory. */
st_s8_packed *st_gemm_s8_pack_a(const void *a, st_dtype type, int64_t m, int64_t per_group, int64_t rs,
                                const int64_t *koff, int64_t k);

/* Packs B[k, n] (element (p, j) at b[p * rs + j * cs]) as the vector side:
 * panels of NR columns.  NULL when out of memory. */
st_s8_packed *st_gemm_s8_pack_b(const void *b, st_dtype type, int64_t k, int64_t n, int64_t rs, int64_t cs);

void st_gemm_s8_packed_free(st_s8_packed *p);

/* Bytes of one panel (NR columns, kq quads) of a packed B: st_s8_b's
 * panel stride for it. */
static inline size_t st_gemm_s8_panel_bytes(int64_t kq) { return (size_t)kq * ST_S8_NR * 4; }

typedef struct st_s8_b {
    const uint8_t *base;
    const int64_t *off;     /* bytes, one per quad */
    int64_t panel;          /* bytes between panels of NR columns */
} st_s8_b;

typedef enum st_s8_out {
    ST_S8_OUT_I32,          /* the corrected sum */
    ST_S8_OUT_U8,           /* requantized: saturate(round_even((float)c * s) + zero_point) */
    ST_S8_OUT_S8,
    ST_S8_OUT_F32,          /* dequantized: (float)c * s, then + bias */
} st_s8_out;

/*
 * The epilogue, each array offset to the call's row 0 / column 0 and each
 * NULL for none (0, or 1 for a scale):
 *   c = d + row_add[i] + col_add[j] + row_mul[i] * col_mul[j] + row_mul2[i] * col_mul2[j]
 * in int32 with wrap-around; then for the non-int32 outputs
 *   s = row_scale[i] * col_scale[j]  (just the one given when only one is), s = s / div when div != 0,
 *   f = (float)c * s,
 * and U8/S8 round f to nearest even (NaN to 0), clamp it to the type's range
 * less zero_point, add zero_point; F32 adds row_bias[i] and col_bias[j].
 * (float)c, the product and the quotient each round once, as scalar C
 * does, so the vector and scalar forms agree to the bit.
 */
typedef struct st_s8_epi {
    const int32_t *row_add, *col_add, *row_mul, *col_mul, *row_mul2, *col_mul2;
    st_s8_out out;
    const float *row_scale, *col_scale;
    float div;
    int32_t zero_point;
    const float *row_bias, *col_bias;
    /* U8/S8: the requantized value's stored byte b becomes lut[b] (a QDQ
     * chain of elementwise ops after the conv, passes/fuse_qdq.c); NULL:
     * none */
    const int32_t *lut;
    /* int32 / f32 out: full 64-byte-aligned vectors go out with streaming
     * stores (no read of the line first, no cache pollution), for outputs
     * far larger than the caches that the caller will not read back soon */
    bool stream;
} st_s8_epi;

/* C[m, n] (row stride ldc elements of the output type, columns unit
 * stride) = the epilogue of A * B over kq quads.  a: packed A at the block
 * of row 0 (rows past m in its last block are computed, never stored);
 * a_unsigned: A's stored bytes are u8 (B's then are s8), else s8 (B u8). */
void st_gemm_s8_block(const uint8_t *a, bool a_unsigned, const st_s8_b *b, int64_t kq, int64_t m, int64_t n, void *c,
                      int64_t ldc, const st_s8_epi *e);

/* sums[j] = the sum over kq quads of B's stored bytes in column j (u8 when
 * b_unsigned, else s8), j < n: csB' for a B staged per call. */
void st_gemm_s8_colsums(const st_s8_b *b, bool b_unsigned, int64_t kq, int64_t n, int32_t *sums);

/*
 * The whole product for plain matrices, split over the pool into fixed
 * blocks of rows and columns (the split is a function of the shape only):
 * A (any strides, u8 or s8) is packed per task, flipped when its type
 * equals B's; B is packed (st_gemm_s8_pack_b).  Zero points are in the
 * operands' own (unflipped) values: one per row of A / column of B (step
 * 1), one for all (step 0), or none (NULL).  The epilogue's scales and
 * biases are as in st_s8_epi (its integer arrays are built here).  C's
 * element (i, j) is at c[i * c_rs + j * c_cs] in the output type.
 */
typedef struct st_s8_gemm {
    int64_t m, n, k;
    const void *a;
    st_dtype a_type;
    int64_t a_rs, a_cs;
    const st_s8_packed *b;
    const int32_t *a_zp, *b_zp;
    int64_t a_zp_step, b_zp_step;
    st_s8_out out;
    const float *row_scale, *col_scale;   /* full length m / n, or NULL */
    float div;
    int32_t zero_point;
    const float *row_bias, *col_bias;
    /* full length n, or NULL: added to column j's int32 sum before the
     * scales (QLinearMatMul's bias, made by the QDQ fusion of a Gemm) */
    const int32_t *col_int;
    void *c;
    int64_t c_rs, c_cs;
} st_s8_gemm;

st_status st_gemm_s8_run(st_pool *pool, const st_s8_gemm *g);

#endif
