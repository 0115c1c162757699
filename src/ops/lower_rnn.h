/*
 * lower_rnn.h — RNN, GRU and LSTM lowered once for every device backend:
 * the sizes (T, B, I, H), the cell's attributes, and each operand's
 * element strides by *role* ([t, b, i] for X, [dir, row, col] for W and
 * R, [dir, index] for B and P, [b] for sequence_lens, [dir, b, i] for the
 * states, [t, dir, b, i] for Y), whichever layout (0: [seq, batch, ...],
 * 1: [batch, seq, ...]) the node has.  Read by the CUDA launch
 * (backends/cuda/k_rnn.cu), the OpenCL arguments (backends/opencl/
 * k_rnn.c) and the CPU kernel (backends/cpu/k_misc_rnn.c), whose accepts()
 * share the dtype checks.  Why here: the layout's permutation of roles to
 * dims was written out twice, per operand, and a slip in one (Y's four
 * roles under layout 1) would make one device disagree with the others.
 *
 * An operand is named by its index in the kernel's operands (input i: i,
 * output j: n_in + j) or -1 when absent; a backend turns the index into
 * its own address.  Only shapes and presence are read (st_kctx's in / out:
 * sizes, strides and whether data is set), never the data.
 */
#ifndef ST_OPS_LOWER_RNN_H
#define ST_OPS_LOWER_RNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/kernel.h"
#include "ops/misc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the operands of st_lower_rnn.o, in the order the kernels take them */
enum { ST_LRNN_X, ST_LRNN_W, ST_LRNN_R, ST_LRNN_B, ST_LRNN_SL, ST_LRNN_H0, ST_LRNN_C0, ST_LRNN_P,
       ST_LRNN_Y, ST_LRNN_YH, ST_LRNN_YC, ST_LRNN_OPS };

/* One operand: element [a, b, c, d] of its roles lies at
 * a * s[0] + b * s[1] + c * s[2] + d * s[3] from its element [0, ...];
 * unused roles have stride 0.  Absent: operand -1, dt 0, strides 0. */
typedef struct st_lrnn_op {
    int operand;
    st_dtype dt;
    int64_t s[4];
} st_lrnn_op;

typedef struct st_lower_rnn {
    int64_t T, B, I, H;              /* steps, batch, input size, hidden size */
    int cell, dirs;                  /* st_rnn_cell; 1 or 2 */
    bool reverse;                    /* one direction, run backwards */
    bool has_clip, lbr, input_forget;
    float clip;
    int act_fn[2][3];                /* per direction: f, g, h */
    float act_a[2][3], act_b[2][3];
    st_lrnn_op o[ST_LRNN_OPS];
} st_lower_rnn;

/* k's RNN / GRU / LSTM (state st_rnn_state).  C0, P and Y_c are absent
 * for RNN and GRU whatever the node lists. */
void st_lower_rnn_of(const st_kctx *k, st_lower_rnn *p);

/* The f32 states a direction-per-group kernel keeps: h twice
 * (ping-ponged), c, and GRU's z and r * h, B * H each per direction. */
int64_t st_lrnn_scratch_floats(const st_rnn_state *s, int64_t batch);
/* The batch of node n (X's dim 1, or dim 0 under layout 1). */
int64_t st_lrnn_batch(const st_knode *n);

/* ---- what accepts() checks, the same on every device backend ---- */

/* Every operand f32, f16 or bf16 but sequence_lens, which is an integer;
 * device names the backend in the message ("CUDA", "OpenCL"). */
bool st_lrnn_accepts_dtypes(const st_knode *n, const char *device, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
