/* linalg.h — MatMul and Gemm parameters, and the shared GEMM entry. */
#ifndef ST_OPS_LINALG_H
#define ST_OPS_LINALG_H

#include <stdbool.h>
#include <stdint.h>

#include "strata.h"
#include "ops/elementwise.h"

typedef struct st_matmul_state {
    bool trans_a, trans_b;
    float alpha, beta;
    /* Set only for backends with ST_CAP_MATMUL_EPI (passes/fuse_matmul.c):
     * the output becomes act(y + bias[j]) per output column j, the bias
     * Add and activation that followed the product folded into it.  bias:
     * n_bias (the output's last dim) f32 values owned by the plan, or
     * NULL; act: st_epilogue (0: none). */
    const float *bias;
    int64_t n_bias;
    st_epilogue act;
} st_matmul_state;

/* strata's FusedAttention (domain ai.strata): what passes/fuse_attention.c
 * makes of an exported attention, softmax(mask(scale(Q K^T))) V, with
 *   inputs  Q [..., Tq, dh], KT [..., dh, Tk], V [..., Tk, dv] (the same
 *           leading dims, all f32 or all f16) and an optional mask M
 *           that broadcasts to the scores [..., Tq, Tk]: f32 or the
 *           operands' dtype, added (mask_kind ADD), or
 *           bool and chosen by (mask_kind WHERE: a score becomes `fill`
 *           where M is fill_when, as masked_fill exports through Where)
 *   output  [..., Tq, dv]
 * Each step rounds as the separate ops do (the score, then the scale,
 * then the mask), so the scores are those the unfused graph computes;
 * the scores are never stored whole (backends/cpu/k_attention.c,
 * backends/cuda/k_attention.cu, backends/opencl/attention.cl). */
enum { ST_ATT_SCALE_NONE = 0, ST_ATT_SCALE_MUL, ST_ATT_SCALE_DIV };
enum { ST_ATT_MASK_NONE = 0, ST_ATT_MASK_ADD, ST_ATT_MASK_WHERE };

/* How the kernel sees one operand when the fusion pass took the layout
 * ops around it in (passes/fuse_attention.c): the operand as passed (say
 * the [T, B, H*dh] slice of a QKV projection that the exported graph
 * Reshapes to [T, B*H, dh], a copy, then Transposes) is first split into
 * finer dims (view dim k of size size[k] comes from operand dim from[k];
 * the dims one operand dim splits into are consecutive, outermost first),
 * then permuted: the kernel's dim c is view dim perm[c].  A split and a
 * permutation of a strided operand are always strides again, so no byte
 * moves.  n 0: the operand is taken as it is. */
typedef struct st_att_layout {
    int n;                       /* the kernel's rank; 0: no layout */
    int8_t from[ST_MAX_RANK];
    int8_t perm[ST_MAX_RANK];
    int64_t size[ST_MAX_RANK];
} st_att_layout;

enum { ST_ATT_Q = 0, ST_ATT_KT, ST_ATT_V, ST_ATT_MASK, ST_ATT_OUT, ST_ATT_N_OPERANDS };

typedef struct st_attention_state {
    int scale_kind;      /* ST_ATT_SCALE_*: score * scale or score / scale */
    float scale;
    int mask_kind;       /* ST_ATT_MASK_* (input 3 present unless NONE) */
    float fill;          /* WHERE: the value a masked score takes */
    bool fill_when;      /* WHERE: the mask value that selects fill */
    /* Q * q_scale or Q / q_scale (ST_ATT_SCALE_*) before the product,
     * rounded per element as the separate Mul/Div rounds it: what
     * nn.MultiheadAttention exports (Q / sqrt(dh)) */
    int q_scale_kind;
    float q_scale;
    /* the operands' layouts (ST_ATT_Q .. ST_ATT_OUT); when any is set,
     * every present operand has one of the same rank, so the leading dims
     * agree (the exported [B*H] split into [B, H]) */
    st_att_layout lay[ST_ATT_N_OPERANDS];
} st_attention_state;

#endif
