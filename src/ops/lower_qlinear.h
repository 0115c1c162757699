/*
 * lower_qlinear.h — the quantized elementwise ops lowered once for every
 * backend: QLinearAdd / QLinearMul, QLinearLookup and QLinearConcat as
 * plain numbers.  Two kinds of them:
 *   - the walk: the output's (or a Concat input's slot's) sizes and each
 *     operand's element strides over them, broadcast (right-aligned, 0
 *     where an input has size 1 or lacks the dim), read at run time by the
 *     CUDA launch (backends/cuda/k_qlinear.cu), the OpenCL arguments
 *     (backends/opencl/k_qlinear.c) and the CPU's row loops
 *     (backends/cpu/k_qlinear.c);
 *   - the parameters: scales, zero points and the 256-byte tables, read
 *     once from the constant inputs when a device command is prepared,
 *     with the checks the device accepts() share (the parameters must be
 *     constants of the right types).
 * Why here: the CUDA and OpenCL host sides were the same code twice
 * (checks, parameter reading, tables, the Concat slots), so a fix to one
 * could miss the other, and the three backends stay bit-identical only
 * while they see the same numbers.
 *
 * An operand is named by its index in the kernel's operands (input i: i,
 * output j: n_in + j); a backend turns it into its own address.  The walk
 * reads only shapes (st_kctx's in / out), never the data.
 */
#ifndef ST_OPS_LOWER_QLINEAR_H
#define ST_OPS_LOWER_QLINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the operands of st_lql_walk.s: y, then the one or two inputs read */
enum { ST_LQL_Y, ST_LQL_A, ST_LQL_B, ST_LQL_WALK_OPS };

/* One elementwise walk: element [i0, ...] of operand k lies at
 * sum(i[d] * s[k][d]) from its element [0, ..., 0], y's shifted by y_off
 * (a Concat input's slot within y; 0 otherwise).  count: the elements
 * (0: nothing to launch).  operand[ST_LQL_B] is -1 for a one-input walk,
 * its strides 0. */
typedef struct st_lql_walk {
    int rank;
    int64_t n[ST_MAX_RANK];
    int64_t s[ST_LQL_WALK_OPS][ST_MAX_RANK];
    int64_t y_off, count;
    int operand[ST_LQL_WALK_OPS];
} st_lql_walk;

/* QLinearAdd / QLinearMul: y = a (input 0) op b (input 3). */
void st_lower_qbinary_walk(const st_kctx *k, st_lql_walk *w);
/* One byte in, one byte out (QLinearLookup; on the CPU also
 * QLinearSigmoid / QLinearLeakyRelu): y = f(x), x input 0. */
void st_lower_qunary_walk(const st_kctx *k, st_lql_walk *w);
/* QLinearConcat's t-th input (input 2 + 3 t) into its slot of y: the
 * inputs before it fill y's first sizes along the axis. */
void st_lower_qconcat_walk(const st_kctx *k, int t, st_lql_walk *w);
/* The data inputs of a QLinearConcat of n_in inputs. */
int st_lql_concat_count(int n_in);

/* QLinearAdd / QLinearMul's parameters, as the kernels take them. */
typedef struct st_lql_binary {
    float sa, sb, sc;                /* a's, b's and c's (y's) scale */
    int32_t za, zb, zc;              /* zero points, 0 when absent */
    bool a_signed, c_signed, mul;    /* a (and so b) int8, y int8, QLinearMul */
} st_lql_binary;

/* Read from n's constant inputs (st_lql_accepts_binary took them). */
void st_lower_qbinary_params(const st_knode *n, st_lql_binary *p);
/* QLinearLookup's table: the fusion's own (state) or input 1's. */
void st_lower_qlookup_table(const st_knode *n, uint8_t table[256]);
/* QLinearConcat input t's requantization to y's type, byte by byte, with
 * the CPU's arithmetic: q_round((float)(x - x_zp) * x_scale / y_scale) +
 * y_zp. */
void st_lower_qconcat_table(const st_knode *n, int t, uint8_t table[256]);

/* ---- what accepts() checks, the same on every device backend: the
 * parameters are constants (f32 scales, 8-bit zero points), every other
 * operand 8-bit ---- */

bool st_lql_accepts_binary(const st_knode *n, char *why, size_t len);
/* and QLinearSigmoid / LeakyRelu refused: no device kernel makes their
 * tables */
bool st_lql_accepts_lookup(const st_knode *n, char *why, size_t len);
bool st_lql_accepts_concat(const st_knode *n, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
