/*
 * quantize.h — what `strata quantize` (cmd_quantize.c) and its model
 * rewriter (qdq_rewrite.c) share: the float model as protobuf-c parsed
 * it, which tensors get an 8-bit scale, and their calibrated ranges.
 *
 * The scheme is ONNX Runtime's static QDQ default for CPUs: activations
 * u8 with a zero point (ranges always hold 0, so 0 is exact), weights s8
 * symmetric (zero point 0), per tensor or per output channel, conv biases
 * int32 at x_scale * w_scale.  What is quantized: Conv and MatMul with
 * constant weights, and the elementwise and data-movement ops (Add, Mul,
 * Sigmoid, Relu, Concat, MaxPool, nearest Resize, Slice, Split, Reshape,
 * Transpose, ...) on f32 tensors that lead to one: a network's
 * post-processing after its last conv stays f32.  A data-movement op's
 * input and outputs share one scale (the union of their ranges), so it
 * runs on the bytes.
 */
#ifndef ST_TOOL_QUANTIZE_H
#define ST_TOOL_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx.pb-c.h"

typedef struct qz_tensor {
    const char *name;
    int producer;          /* node index, -1 for inputs and initializers */
    int init;              /* initializer index, or -1 */
    bool wanted;           /* a candidate for a scale (calibrated) */
    bool is_f32;           /* seen as f32 in calibration */
    bool quant;            /* gets Q -> DQ in the output */
    int group;             /* union-find parent: tensors that share one scale */
    float lo, hi;          /* calibrated range (min, max over the data) */
    bool seen;
    uint32_t *hist;        /* percentile: counts over [lo, hi] */
} qz_tensor;

typedef enum { QZ_MINMAX, QZ_PERCENTILE } qz_method;

typedef struct qz_model {
    Onnx__ModelProto *mp;
    Onnx__GraphProto *g;
    int n_tensors, cap;
    qz_tensor *t;
    int *node_quant;       /* per node: 1 when quantized */
    bool per_channel;
    int opset;             /* of the default domain */
    /* allocations made for the output model, freed with it */
    void **owned;
    int n_owned, cap_owned;
} qz_model;

#define QZ_HIST_BINS 2048

/* Parses the model and marks the candidate tensors; 0 or 1 after the
 * one-line error. */
int qz_load(qz_model *q, const void *data, size_t size, const char *path, bool per_channel);
void qz_free(qz_model *q);
int qz_find(const qz_model *q, const char *name);

/* The float model with every candidate tensor as an extra graph output,
 * packed (malloc'd) for st_model_load_memory. */
void *qz_calibration_model(qz_model *q, size_t *size);

/* After calibration: which nodes and tensors are quantized (candidates
 * seen as f32), data-movement groups joined. */
void qz_decide(qz_model *q);

/* Packs the QDQ model (malloc'd); NULL with the error printed. */
void *qz_write(qz_model *q, size_t *size);

/* A tensor's u8 scale and zero point from its range (that of its group). */
void qz_params(const qz_model *q, int t, float *scale, uint8_t *zp);

#endif
