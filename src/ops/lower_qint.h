/*
 * lower_qint.h — the integer quantization ops lowered once for every
 * device backend: MatMulInteger / QLinearMatMul and ConvInteger /
 * QLinearConv as plain numbers (sizes, strides in elements, dtypes, the
 * per-row / per-column / per-channel steps of each zero point and scale),
 * read by the CUDA launch (backends/cuda/k_qint.cu) and the OpenCL
 * arguments (backends/opencl/k_qint.c), and the accepts() checks both
 * make.  Why here: the two host sides computed the same geometry twice,
 * so a fix to one could miss the other; the kernels stay bit-identical
 * only if they see the same numbers.
 *
 * An operand is named by its index in the kernel's operands (input i: i,
 * output j: n_in + j) or -1 when absent; a backend turns the index into
 * its own address (a device pointer, a cl_mem and element offset).  Only
 * shapes and presence are read (st_kctx's in / out: sizes, strides and
 * whether data is set), never the data.
 */
#ifndef ST_OPS_LOWER_QINT_H
#define ST_OPS_LOWER_QINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* batch dims a quantized matmul kernel walks */
#define ST_LQ_BATCH 4

/* One operand of a MatMulInteger / QLinearMatMul: its element (batch b,
 * row i, column j) is sum(b[d] * bs[d]) + i * rs + j * cs from its
 * element [0, ..., 0]; a per-row parameter (of A) has cs 0, a per-column
 * one (of B) rs 0, a scalar all strides 0.  Absent: operand -1, dt 0. */
typedef struct st_lq_mm_op {
    int operand;
    st_dtype dt;
    int64_t rs, cs, bs[ST_LQ_BATCH];
} st_lq_mm_op;

/* the operands of st_lq_matmul.o, in the order the kernels take them */
enum { ST_LQ_Y, ST_LQ_A, ST_LQ_B, ST_LQ_AZ, ST_LQ_BZ, ST_LQ_AS, ST_LQ_BS, ST_LQ_YS, ST_LQ_YZ, ST_LQ_BIAS, ST_LQ_MM_OPS };

typedef struct st_lq_matmul {
    int nb;                          /* batch dims (y's leading ones) */
    int64_t bn[ST_LQ_BATCH];         /* their sizes */
    int64_t m, n, k, batches;        /* batches: the product of bn */
    /* y, a, b, a_zp, b_zp, a_scale, b_scale, y_scale, y_zp, and
     * QLinearMatMul's int32 bias per column (the QDQ fusion's Gemm) */
    st_lq_mm_op o[ST_LQ_MM_OPS];
} st_lq_matmul;

/* A scalar or per-channel parameter of a conv: step 0 when one value.
 * Absent: operand -1, dt 0. */
typedef struct st_lq_param {
    int operand;
    st_dtype dt;
    int64_t step;
} st_lq_param;

/* A ConvInteger / QLinearConv with its spatial dims right-aligned to
 * three (the missing leading ones of size 1, stride 0). */
typedef struct st_lq_conv {
    int64_t nimg, groups, cg, mg;    /* images, groups, in / out channels per group */
    int64_t is[3], os[3], k[3], s[3], d[3], pb[3];
    /* N, C, spatial strides of x, w, y */
    int64_t xs[5], ws[5], ys[5];
    int x, w, y;                     /* operand indices */
    st_lq_param xz, wz, bias, xsc, wsc, ysc, yz;
} st_lq_conv;

/* The batch dims of a quantized matmul of ranks a, b into y (1-D A and B
 * contribute no row / column dim). */
int st_lq_matmul_batch_dims(int a_rank, int b_rank, int y_rank);

/* k's MatMulInteger / QLinearMatMul (state st_qmatmul_state). */
void st_lower_qmatmul(const st_kctx *k, st_lq_matmul *p);
/* k's ConvInteger / QLinearConv (state st_qconv_state). */
void st_lower_qconv(const st_kctx *k, st_lq_conv *p);

/* ---- what accepts() checks, the same on every device backend ---- */

/* DynamicQuantizeLinear: an f32, f16 or bf16 input. */
bool st_lq_accepts_dynq(const st_knode *n, char *why, size_t len);
/* MatMulInteger / QLinearMatMul: at most ST_LQ_BATCH batch dims, and
 * st_lq_accepts_operands. */
bool st_lq_accepts_qmatmul(const st_knode *n, char *why, size_t len);
/* ConvInteger / QLinearConv: the QDQ fusion's requantization type
 * (state q_type) 8-bit. */
bool st_lq_accepts_requant(const st_knode *n, char *why, size_t len);
/* Every present operand 8-bit, but QLinear*'s scales (inputs 1, 4, 6: f32,
 * f16, bf16), their int32 bias (input 8) and output 0 (8-bit, or int32
 * for the Integer ops). */
bool st_lq_accepts_operands(const st_knode *n, char *why, size_t len, bool qlinear);

#ifdef __cplusplus
}
#endif

#endif
