/*
 * k_misc.h — CPU kernels of the misc family (shape rules: ops/misc.c):
 *   k_misc.c         Dropout, the two losses, MaxUnpool, ReverseSequence, Shrink, Det
 *   k_misc_rnn.c     RNN, GRU, LSTM
 *   k_misc_quant.c   the quantization ops
 *   k_misc_sample.c  GridSample, AffineGrid, RoiAlign
 *   k_misc_signal.c  the windows, DFT, STFT, MelWeightMatrix
 */
#ifndef ST_CPU_K_MISC_H
#define ST_CPU_K_MISC_H

#include "ops/op.h"

/* k_misc.c */
st_status st_cpu_dropout(const st_kctx *k);
st_status st_cpu_loss(const st_kctx *k);          /* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss */
st_status st_cpu_maxunpool(const st_kctx *k);
st_status st_cpu_reverse_sequence(const st_kctx *k);
st_status st_cpu_shrink(const st_kctx *k);
st_status st_cpu_det(const st_kctx *k);

/* k_misc_rnn.c */
st_status st_cpu_rnn(const st_kctx *k);           /* RNN, GRU, LSTM */

/* k_misc_quant.c */
st_status st_cpu_quantize(const st_kctx *k);
st_status st_cpu_dequantize(const st_kctx *k);
st_status st_cpu_dynamic_quantize(const st_kctx *k);
st_status st_cpu_qmatmul(const st_kctx *k);       /* MatMulInteger, QLinearMatMul */
st_status st_cpu_qconv(const st_kctx *k);         /* ConvInteger, QLinearConv */

/* k_misc_sample.c */
st_status st_cpu_gridsample(const st_kctx *k);
st_status st_cpu_affine_grid(const st_kctx *k);
st_status st_cpu_roialign(const st_kctx *k);

/* k_misc_signal.c */
st_status st_cpu_window(const st_kctx *k);        /* HannWindow, HammingWindow, BlackmanWindow */
st_status st_cpu_dft(const st_kctx *k);
st_status st_cpu_stft(const st_kctx *k);
st_status st_cpu_mel_weight(const st_kctx *k);

/* Shared by the k_misc*.c files. */
static inline char *st_misc_at(const st_operand *o, int64_t off)
{
    return (char *)o->data + off * (int64_t)st_dtype_size(o->dtype);
}

/* Element offset of a row-major flat index of o's shape (dims [from, rank)). */
static inline int64_t st_misc_offset(const st_operand *o, int from, int64_t flat)
{
    int64_t off = 0;
    for (int d = o->rank - 1; d >= from; d--) {
        off += (flat % o->sizes[d]) * o->strides[d];
        flat /= o->sizes[d];
    }
    return off;
}

#endif
