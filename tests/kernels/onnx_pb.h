/*
 * onnx_pb.h — just enough of a protobuf writer to make one-node ONNX
 * models in memory for the kernel sweep (tests/kernels/kernel_sweep.c),
 * so that it needs neither Python nor the onnx package on the GPU
 * machine.  Field numbers are those of onnx.proto.
 */
#ifndef ST_TEST_ONNX_PB_H
#define ST_TEST_ONNX_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb_buf {
    uint8_t *p;
    size_t n, cap;
} pb_buf;

void pb_free(pb_buf *b);
void pb_varint(pb_buf *b, int field, int64_t v);
void pb_fixed32(pb_buf *b, int field, const void *four_bytes);
void pb_bytes(pb_buf *b, int field, const void *data, size_t n);
void pb_string(pb_buf *b, int field, const char *s);
/* Appends fields already encoded (another buffer's whole contents). */
void pb_append(pb_buf *b, const pb_buf *fields);
/* Appends sub as a length-delimited field and frees it. */
void pb_message(pb_buf *b, int field, pb_buf *sub);

/* AttributeProto builders, appended to a NodeProto under construction. */
void pb_attr_int(pb_buf *node, const char *name, int64_t v);
void pb_attr_float(pb_buf *node, const char *name, float v);
void pb_attr_ints(pb_buf *node, const char *name, const int64_t *v, int n);
void pb_attr_floats(pb_buf *node, const char *name, const float *v, int n);
void pb_attr_string(pb_buf *node, const char *name, const char *s);

/* A ValueInfoProto (graph input or output); rank < 0 leaves the shape out. */
void pb_value_info(pb_buf *graph, int field, const char *name, int dtype, int rank, const int64_t *dims);
/* A TensorProto initializer with raw data. */
void pb_initializer(pb_buf *graph, const char *name, int dtype, int rank, const int64_t *dims, const void *raw,
                    size_t bytes);
/* Wraps a GraphProto into a ModelProto (ir_version 8, the ONNX opset
 * given and ai.strata 1) and frees the graph. */
void pb_model(pb_buf *model, pb_buf *graph, int opset);

#endif
