/*
 * k_conv.h — what the CPU conv files share (shape rule: ops/conv.c):
 *   k_conv.c       the dispatch, the portable im2col + GEMM path, f64, and
 *                  prepare (packed weights, the Winograd choice)
 *   k_conv_fast.c  the AVX-512 implicit GEMM on a staged input
 *   k_conv_dw.c    depthwise convs on that staging
 *   k_winograd.c   Winograd F(2x2, 3x3) and F(4x4, 3x3)
 *   k_pool.c       the pools
 */
#ifndef ST_CPU_K_CONV_H
#define ST_CPU_K_CONV_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_bf16.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "ops/conv.h"

/* A Conv command's prepare() state: its constant weights as f32 in the
 * GEMM's packed layout (gemm.h, st_gemm_pack_a), each group's rows in
 * blocks of ST_GEMM_MR; or, for a 3x3 stride-1 conv that runs as Winograd
 * F(n x n, 3x3), n = wino_n, the (n + 2)^2 transformed filters G g G^T,
 * each packed the same way.  NULL pointers: the kernel reads (or packs)
 * the W input at run time. */
typedef struct st_cpu_conv_prep {
    float *packed_w;
    /* bf16 weights of a conv on bf16 data, on a CPU with avx512_bf16: the
     * weights in the bf16 GEMM's pair-interleaved layout (gemm_bf16.h),
     * per group ceil(M/g / MR) blocks, instead of packed_w */
    uint32_t *packed_bf16;
    float *wino_u;
    int wino_n;
} st_cpu_conv_prep;

#define ST_CONV_TILE 512

typedef struct conv_job {
    const st_cpu_conv_prep *prep;    /* NULL: nothing prepared */
    const st_kctx *k;
    const st_conv_state *s;
    const st_operand *x, *w, *b, *y;
    st_mat wm;                       /* all weights as [M, C/g * K] */
    st_gemm_epi epi;                 /* bias, fused affines and activation, per output channel */
    int64_t cg, mg, kvol, pixels, tiles;
    int64_t in_sp[3], out_sp[3];
    bool pointwise;                  /* 1x1, stride 1, no pad: X is the column block */
    bool y_packed;                   /* output pixels contiguous and f32 */
    st_status err;
} conv_job;

/* The AVX-512 path (k_conv_fast.c, k_conv_dw.c, k_winograd.c): */
/*
 * Work is split into tasks of (image, group, band, block of output
 * channels).  A band is a run of output rows; the task first *stages* the
 * input rows its band reads, for the group's channels, into an f32 buffer
 * small enough to stay in L2: padded, and split into stride phases, so that
 * phase (ry, rx) of channel c holds Xpad[i * sy + ry][q * sx + rx] at
 * [i * pws + q] (Xpad: the input with its begin pads, i counted from the
 * band's first row).  In those coordinates every kernel tap (c, ky, kx)
 * reads a *contiguous* run of the staged plane for a run of consecutive
 * output positions p = oy * pws + ox: the tap's B row is the plane shifted
 * by a constant, off[k].  The GEMM reads B in place (no im2col, no index
 * arithmetic per element) and every conv becomes a stride-1 one.  Output
 * positions with ox >= ow (pws - ow per row) are computed and dropped when
 * a tile is copied out; where pws == ow and the output's pixels are packed
 * f32 the kernel stores straight into it.
 * A 1x1 stride-1 unpadded conv stages runs of pixels instead of rows (a
 * plain copy, which also keeps the GEMM's B rows off the 4 KB-aliased
 * strides of large planes).  Staging reads the input once (plus a band's
 * halo), whatever its strides and float dtype.
 */

#define ST_FCONV_TILE 192          /* output positions per GEMM call: 4 panels */
#define ST_FCONV_STAGE 196608      /* floats a band's staging may take (768 KB) */
#define ST_FCONV_MIN_TASKS 16
/* Output channels are split only below this many (image, group, band)
 * units: each split stages the band again, and 8 or more equal tasks share
 * out well on two cores (the 40x40 and 20x20 stride-2 convs, 10 to 14
 * bands, -6 to -13% without the second staging). */
#define ST_FCONV_MIN_UNITS 8
/* Outputs a depthwise task aims at (several channels of a small plane). */
#define ST_DW_TASK_ELEMS 16384

typedef struct fconv {
    const st_cpu_conv_prep *prep;
    const st_conv_state *s;
    const st_operand *x, *y;
    const float *w;            /* [M, K] row-major, row stride lda */
    const uint32_t *abf;       /* bf16 compute: A packed for gemm_bf16.h, or NULL */
    int64_t abf_stride;        /* words between its blocks of MR rows */
    int64_t lda, K;
    st_gemm_epi epi;           /* per output channel */
    int64_t N, G, cg, mg, C;
    int64_t h, w_, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
    int xd;                    /* index of the innermost spatial dim */
    bool pointwise, x_direct, y_direct, rows_direct, depthwise;
    int64_t qy, qx;            /* the largest tap shift in staged rows and columns */
    int64_t pws;               /* staged row width (positions per output row) */
    int64_t band;              /* output rows per band (pointwise: positions) */
    int64_t bands, plane, chan;/* staged floats per phase plane and per channel */
    int64_t *off;              /* per k (c, ky, kx) of a group */
    int64_t stage_floats, mchunk, mchunks, mblocks;
    int64_t dwc;               /* depthwise: channels per task */
    /* Winograd F(2x2, 3x3) (st_conv_state.wino_u set at plan time) */
    const float *wu;
    int wn;                           /* outputs per tile side: 2 or 4 */
    int64_t tiles_x, lqp, tp, wtr;    /* tile columns, staged row stride, tile stride, tile rows per band */
    int64_t msub;                     /* output channels per GEMM pass of a task (V reused) */
    st_status err;
} fconv;

bool st_conv_spatial_packed(const st_operand *o, int nsp);
size_t st_conv_stage_bytes(const fconv *f);
/* Stages channels [c0, c0 + cg) of image n for the band starting at output
 * row (pointwise: position) b0 into dst. */
void st_conv_stage_band(const fconv *f, int64_t n, int64_t c0, int64_t b0, float *dst);
/* Runs the conv on the fast path; returns false (having done nothing) when
 * the shapes or dtypes are not ones it takes. */
bool st_conv_fast(const st_kctx *k, const conv_job *j, st_status *err);
void st_conv_dw_task(void *arg, int64_t t);
bool st_conv_wino(const st_kctx *k, fconv *f, st_status *err);
/* Which Winograd tile a conv with weights of dims wd and output dims yd
 * runs with, 0 for none; and the transformed filters for it. */
int st_conv_wino_tile(const st_conv_state *s, const int64_t *wd, int yrank, const int64_t *yd);
float *st_conv_wino_pack(const st_conv_state *s, st_dtype wt, const void *w, const int64_t *wd, int n);

#endif
