/*
 * misc.h — the parameter blocks of the misc family: misc.c's shape rules
 * fill them, the kernels in backends/cpu/k_misc*.c read them.
 */
#ifndef ST_OPS_MISC_H
#define ST_OPS_MISC_H

#include <stdbool.h>
#include <stdint.h>

/* Dropout: inference semantics (or training with ratio 0), so the output
 * is the input and the mask is all true. */
typedef struct st_dropout_state {
    bool mask_bool;                  /* opset >= 10: the mask is bool, before it had the input's dtype */
} st_dropout_state;

enum { ST_LOSS_NONE, ST_LOSS_SUM, ST_LOSS_MEAN };

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. */
typedef struct st_loss_state {
    bool softmax;                    /* SoftmaxCrossEntropyLoss: log-softmax over C first */
    int reduction;                   /* ST_LOSS_* */
    bool has_ignore;
    int64_t ignore_index;
} st_loss_state;

/* ---- RNN, GRU, LSTM ---- */

typedef enum st_rnn_cell { ST_CELL_RNN, ST_CELL_GRU, ST_CELL_LSTM } st_rnn_cell;

typedef enum st_rnn_fn {
    ST_ACT_RELU, ST_ACT_TANH, ST_ACT_SIGMOID, ST_ACT_AFFINE, ST_ACT_LEAKY_RELU, ST_ACT_THRESHOLDED_RELU,
    ST_ACT_SCALED_TANH, ST_ACT_HARD_SIGMOID, ST_ACT_ELU, ST_ACT_SOFTSIGN, ST_ACT_SOFTPLUS
} st_rnn_fn;

typedef struct st_rnn_act {
    int fn;                          /* st_rnn_fn */
    float alpha, beta;
} st_rnn_act;

typedef struct st_rnn_state {
    int cell;                        /* st_rnn_cell */
    int dirs;                        /* 1, or 2 for bidirectional */
    bool reverse;                    /* one direction, run backwards */
    int gates;                       /* 1, 3 or 4 */
    int64_t hidden;
    int layout;                      /* 0: [seq, batch, ...]; 1: [batch, seq, ...] */
    bool has_clip;
    float clip;
    bool linear_before_reset;        /* GRU */
    bool input_forget;               /* LSTM: f = 1 - i */
    st_rnn_act act[2][3];            /* per direction: f, g, h (as many as the cell uses) */
} st_rnn_state;

/* ---- quantization ---- */

/* QuantizeLinear, DequantizeLinear: per tensor (axis -1) or per axis. */
typedef struct st_quant_state {
    int axis;                        /* -1: one scale for the whole tensor */
    int64_t block;                   /* opset 21: > 0, a scale per `block` elements along axis */
} st_quant_state;

/* MatMulInteger, QLinearMatMul: the inputs' positions differ. */
typedef struct st_qmatmul_state {
    bool qlinear;
} st_qmatmul_state;

/* The window of ConvInteger and QLinearConv (1 to 3 spatial dims). */
typedef struct st_qconv_state {
    bool qlinear;
    int nsp;
    int64_t k[3], s[3], d[3], pb[3];
    int64_t group;
    /* Set by the QDQ fusion (passes/fuse_qdq.c) only: the type y_scale and
     * y_zero_point requantize to (0: the output's), and a table the
     * requantized byte goes through before it is stored: the elementwise
     * ops that followed the conv in the QDQ graph. */
    int q_type;                      /* an st_dtype */
    bool has_lut;
    int32_t lut[256];
} st_qconv_state;

/* ---- sampling ---- */

enum { ST_GS_BILINEAR, ST_GS_NEAREST, ST_GS_BICUBIC };
enum { ST_GS_ZEROS, ST_GS_BORDER, ST_GS_REFLECTION };

/* GridSample; AffineGrid reads align_corners only. */
typedef struct st_gridsample_state {
    int mode, padding;
    bool align_corners;
} st_gridsample_state;

typedef struct st_roialign_state {
    bool max_mode;
    bool half_pixel;                 /* coordinate_transformation_mode half_pixel: shift by -0.5 */
    int64_t out_h, out_w, sampling_ratio;
    float spatial_scale;
} st_roialign_state;

/* MaxUnpool: indices are flat positions in the unpooled shape; a larger
 * output_shape keeps each value at the same coordinates. */
typedef struct st_maxunpool_state {
    int nsp;
    int64_t unpooled[3];             /* the spatial dims without output_shape */
} st_maxunpool_state;

typedef struct st_revseq_state {
    int batch_axis, time_axis;
} st_revseq_state;

typedef struct st_shrink_state {
    float bias, lambd;
} st_shrink_state;

/* ---- signal ---- */

enum { ST_WIN_HANN, ST_WIN_HAMMING, ST_WIN_BLACKMAN };

typedef struct st_window_state {
    int kind;
    bool periodic;
} st_window_state;

/* DFT and STFT: a transform of length n along an axis of [batch, ..., 1|2]. */
typedef struct st_dft_state {
    int axis;                        /* DFT: the signal axis of the input */
    int64_t n;                       /* transform length (DFT: dft_length, STFT: frame length) */
    int64_t step;                    /* STFT: frame_step */
    bool inverse, onesided;
} st_dft_state;

#endif
