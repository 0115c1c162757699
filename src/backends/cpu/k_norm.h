/* k_norm.h — CPU kernel of the norm family (k_norm.c). */
#ifndef ST_CPU_K_NORM_H
#define ST_CPU_K_NORM_H

#include "ops/op.h"

/* Softmax, LogSoftmax, Hardmax, LayerNormalization, BatchNormalization,
 * InstanceNormalization, LpNormalization, MeanVarianceNormalization, LRN:
 * one row engine, the row math chosen by st_norm_state.kind. */
st_status st_cpu_norm(const st_kctx *k);

#endif
