/*
 * norm.h — the parameter block of the norm family (norm.c's shape rules
 * fill it, backends/cpu/k_norm.c reads it).
 */
#ifndef ST_OPS_NORM_H
#define ST_OPS_NORM_H

#include <stdbool.h>
#include <stdint.h>

typedef enum st_norm_kind {
    ST_N_SOFTMAX,
    ST_N_LOG_SOFTMAX,
    ST_N_HARDMAX,
    ST_N_LAYER_NORM,
    ST_N_BATCH_NORM,
    ST_N_INSTANCE_NORM,
    ST_N_LP_NORM,
    ST_N_MVN,
    ST_N_LRN,
    ST_N_GROUP_NORM
} st_norm_kind;

typedef struct st_norm_state {
    int kind;              /* st_norm_kind */
    uint32_t mask;         /* the axes one row spans (a softmax row, a normalised group) */
    int axis;              /* LayerNorm: the first normalised axis */
    float epsilon;
    int p;                 /* LpNormalization: 1 or 2 */
    bool spatial;          /* BatchNormalization: parameters per channel (else per element of dims[1:]) */
    int64_t size;          /* LRN; GroupNormalization: num_groups */
    bool per_group;        /* GroupNormalization before opset 21: scale and bias per group, not channel */
    float alpha, beta, bias;
    /* strata's AddLayerNormalization (ai.strata; passes/fuse_add_norm.c
     * makes it of Add -> LayerNormalization): input 1 is added to x first,
     * Scale and B are inputs 2 and 3, and output 1 (optional) is the sum */
    bool residual;
} st_norm_state;

#endif
