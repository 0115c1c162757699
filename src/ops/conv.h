/* conv.h — the window parameters shared by Conv and the pools. */
#ifndef ST_OPS_CONV_H
#define ST_OPS_CONV_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/elementwise.h"

typedef struct st_conv_state {
    int nsp;                         /* spatial dims, 1..3 */
    int64_t k[3], s[3], d[3];        /* kernel, stride, dilation */
    int64_t pb[3], pe[3];            /* pads at the begin and end */
    int64_t out[3];                  /* output spatial sizes */
    int64_t group;
    bool is_max, count_include_pad;
    int storage_order;
    st_epilogue epi;                 /* fused activation (passes/fuse.c) */
    /* CPU plans only (passes/fuse_cpu.c): per output channel m, the conv's
     * result becomes act((x + bias) * ch_scale[m] + ch_shift[m]) *
     * post_scale[m] + post_shift[m]; NULL pointers are the identity.  Other
     * backends' plans never set them. */
    const float *ch_scale, *ch_shift;
    const float *post_scale, *post_shift;
    /* CPU plans only: the constant weights as f32 in the GEMM's packed
     * layout (backends/cpu/gemm.h, st_gemm_pack_a), each group's rows in
     * blocks of 8; NULL: the kernel reads (or packs) the W input. */
    const float *packed_w;
    /* CPU plans only: for a 3x3 stride-1 conv that runs as Winograd
     * F(n x n, 3x3), n = wino_n (2 or 4), the (n + 2)^2 transformed
     * filters G g G^T, each packed like packed_w (then packed_w is NULL). */
    const float *wino_u;
    int wino_n;
} st_conv_state;

#endif
