/*
 * resize.h — the parameter block that the Resize/Upsample shape rule
 * (ops/resize.c) builds and the CPU kernel (backends/cpu/k_resize.c) reads.
 *
 * Resize is separable: every output coordinate on an axis maps to a few
 * input coordinates with weights (1 tap for nearest, 2 for linear, 4 for
 * cubic, more for antialiased downscaling: about 2 / scale and 4 / scale),
 * whatever the coordinate transformation mode.  Input and output
 * shapes are fixed when the shape rule runs, so the rule computes those
 * taps once, in double as the ONNX reference does, and the kernel only
 * gathers and weighs.  ConvTranspose reuses st_conv_state (ops/conv.h).
 */
#ifndef ST_OPS_RESIZE_H
#define ST_OPS_RESIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "strata.h"

/* One tap of one output coordinate on one axis. */
typedef struct st_resize_tap {
    int64_t idx;         /* input coordinate, clamped into [0, in) */
    double wd;           /* weight (f64 data) */
    float wf;            /* the same weight for f32/f16/bf16 data */
    bool outside;        /* tf_crop_and_resize: this output coordinate is outside the input */
} st_resize_tap;

typedef struct st_resize_state {
    int rank;
    bool nearest;        /* one tap per coordinate, weight 1: copies elements, any dtype */
    bool crop;           /* tf_crop_and_resize: an outside coordinate gives `extrapolation` */
    double extrapolation;
    int64_t in[ST_MAX_RANK], out[ST_MAX_RANK];
    int ntaps[ST_MAX_RANK];        /* per axis: 1 for nearest and for axes left as they are */
    int64_t first[ST_MAX_RANK];    /* per axis: its first entry in taps[]; coordinate x, tap t at first + x * ntaps + t */
    int64_t rep;                   /* > 1: the last axis is nearest upsampling by this integer factor (idx = x / rep) */
    int64_t n_taps;
    st_resize_tap taps[];
} st_resize_state;

#endif
