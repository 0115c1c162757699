/*
 * qlinear.h — the parameter blocks of the quantized elementwise ops
 * (ops/qlinear.c): ONNX Runtime's com.microsoft QLinearAdd, QLinearMul,
 * QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool and
 * QLinearConcat, and strata's own QLinearLookup, which the QDQ fusion
 * (passes/fuse_qdq.c) makes from a chain of elementwise float ops between
 * a DequantizeLinear and a QuantizeLinear.
 */
#ifndef ST_OPS_QLINEAR_H
#define ST_OPS_QLINEAR_H

#include <stdbool.h>
#include <stdint.h>

enum { ST_QL_ADD, ST_QL_MUL };

/* QLinearAdd, QLinearMul */
typedef struct st_qbinary_state {
    int op;                          /* ST_QL_ADD or ST_QL_MUL */
} st_qbinary_state;

/* QLinearSigmoid, QLinearLeakyRelu, QLinearLookup: one byte in, one byte
 * out.  QLinearLookup's table is its input 1, or (made by the fusion
 * pass, which has no value to put it in) this state's. */
typedef struct st_qlut_state {
    int kind;                        /* 0: sigmoid, 1: leaky relu, 2: lookup */
    float alpha;                     /* LeakyRelu */
    bool has_table;
    uint8_t table[256];              /* indexed by the input's stored byte */
} st_qlut_state;

/* QLinearGlobalAveragePool */
typedef struct st_qgap_state {
    bool channels_last;
} st_qgap_state;

/* QLinearConcat */
typedef struct st_qconcat_state {
    int axis;
} st_qconcat_state;

#endif
