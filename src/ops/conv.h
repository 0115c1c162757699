/* conv.h — the window parameters shared by Conv, DeformConv, the pools and
 * Col2Im. */
#ifndef ST_OPS_CONV_H
#define ST_OPS_CONV_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/elementwise.h"

typedef struct st_conv_state {
    int nsp;                         /* spatial dims, 1..3 */
    int64_t k[3], s[3], d[3];        /* kernel, stride, dilation */
    int64_t pb[3], pe[3];            /* pads at the begin and end */
    int64_t out[3];                  /* output spatial sizes (Col2Im: the blocks along each dim) */
    int64_t group;
    int64_t offset_group;            /* DeformConv */
    bool is_max, count_include_pad;
    int p;                           /* LpPool's norm; 0 for the other pools */
    int storage_order;
    st_epilogue epi;                 /* fused activation (passes/fuse.c) */
    /* Set only for backends with ST_CAP_CONV_AFFINE (passes/fuse_affine.c):
     * per output channel m, the conv's result becomes act((x + bias) *
     * ch_scale[m] + ch_shift[m]) * post_scale[m] + post_shift[m]; NULL
     * pointers are the identity. */
    const float *ch_scale, *ch_shift;
    const float *post_scale, *post_shift;
    /* Set only for backends with ST_CAP_CONV_RESIDUAL (passes/fuse_conv_add.c):
     * input 3 is R, of Y's shape and dtype, and the result is
     * epi2(epi(conv + bias) + R); the other tables' Conv refuses it. */
    bool residual;
    st_epilogue epi2;
} st_conv_state;

/* Whether the state carries a per-channel affine epilogue. */
static inline bool st_conv_has_affine(const st_conv_state *s)
{
    return s->ch_scale || s->ch_shift || s->post_scale || s->post_shift;
}

/* The affine epilogue as one table of 4 m floats, S, T, PS, PT, the
 * identity (1, 0) where a pair is absent: what the GPU backends upload
 * once and index by channel. */
void st_conv_affine_table(const st_conv_state *s, int64_t m, float *out);

#endif
