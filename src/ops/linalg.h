/* linalg.h — MatMul and Gemm parameters, and the shared GEMM entry. */
#ifndef ST_OPS_LINALG_H
#define ST_OPS_LINALG_H

#include <stdbool.h>

typedef struct st_matmul_state {
    bool trans_a, trans_b;
    float alpha, beta;
} st_matmul_state;

/* strata's FusedAttention (domain ai.strata): what passes/fuse_attention.c
 * makes of an exported attention, softmax(mask(scale(Q K^T))) V, with
 *   inputs  Q [..., Tq, dh], KT [..., dh, Tk], V [..., Tk, dv] (the same
 *           leading dims, f32) and an optional mask M that broadcasts to
 *           the scores [..., Tq, Tk]: f32 and added (mask_kind ADD), or
 *           bool and chosen by (mask_kind WHERE: a score becomes `fill`
 *           where M is fill_when, as masked_fill exports through Where)
 *   output  [..., Tq, dv]
 * Each step rounds as the separate ops do (the score, then the scale,
 * then the mask), so the scores are those the unfused graph computes;
 * the scores are never stored whole (backends/cpu/k_attention.c,
 * backends/cuda/k_attention.cu, backends/opencl/attention.cl). */
enum { ST_ATT_SCALE_NONE = 0, ST_ATT_SCALE_MUL, ST_ATT_SCALE_DIV };
enum { ST_ATT_MASK_NONE = 0, ST_ATT_MASK_ADD, ST_ATT_MASK_WHERE };

typedef struct st_attention_state {
    int scale_kind;      /* ST_ATT_SCALE_*: score * scale or score / scale */
    float scale;
    int mask_kind;       /* ST_ATT_MASK_* (input 3 present unless NONE) */
    float fill;          /* WHERE: the value a masked score takes */
    bool fill_when;      /* WHERE: the mask value that selects fill */
} st_attention_state;

#endif
