/*
 * conv_s8.h — int8 convolution (ConvInteger, QLinearConv) on the int8
 * GEMM core: an implicit GEMM over a staged copy of the input.
 *
 * C[M, pixels] = W[M, C/g * taps] * X's patches, per image and group.  W is
 * the GEMM's broadcast side, packed once (st_conv_s8_pack: the caller owns
 * the result, so it can live in a backend's prepare step).  Its k runs over
 * (channel quad, tap, channel in the quad): a vpdpbusd quad is 4 channels of
 * one tap.  X is staged per task in the same order: channel quads
 * interleaved (4 bytes per position), padded with the input's zero point,
 * split into stride phases, and flipped (x ^ 0x80) when its type is W's.
 * In those coordinates every tap reads a contiguous run of the staged
 * plane for a run of output positions, so the GEMM reads B in place
 * through one offset per quad (no im2col).
 */
#ifndef ST_CPU_CONV_S8_H
#define ST_CPU_CONV_S8_H

#include "backends/cpu/gemm_s8.h"
#include "core/view.h"

/* The window, 1 to 3 spatial dims (Conv's attributes, pads resolved). */
typedef struct st_conv_s8_window {
    int nsp;
    int64_t k[3], s[3], d[3], pb[3];
    int64_t group;
} st_conv_s8_window;

/* Packs W [M, C/group, k...] (u8 or s8, any strides).  NULL when out of
 * memory; free with st_gemm_s8_packed_free. */
st_s8_packed *st_conv_s8_pack(const st_operand *w, const st_conv_s8_window *win);

typedef struct st_conv_s8_args {
    const st_conv_s8_window *win;
    const st_operand *x;            /* [N, C, spatial...], u8 or s8, any strides */
    int32_t x_zp;                   /* X's zero point (0 when absent) */
    const st_s8_packed *w;          /* st_conv_s8_pack of W */
    const int32_t *w_zp;            /* W's zero point per output channel (step 1) or one (step 0); NULL: 0 */
    int64_t w_zp_step;
    const int32_t *bias;            /* per output channel, added to the int32 sum; NULL: none */
    st_s8_out out;                  /* and y's dtype: I32, U8, I8 or F32 */
    const float *scale;             /* per output channel, for U8/S8/F32 (st_s8_epi's row_scale) */
    const float *fbias;             /* F32: per output channel, added after the scaling; NULL: none */
    int32_t y_zp;                   /* U8/S8 */
    const int32_t *lut;             /* U8/S8: st_s8_epi's lut, or NULL */
    const st_operand *y;            /* [N, M, spatial...], any strides */
} st_conv_s8_args;

/* Runs the conv on the pool (tasks of image, group, output slice, band of
 * output rows and block of output channels, a function of the shapes). */
st_status st_conv_s8(st_pool *pool, const st_conv_s8_args *a);

#endif
