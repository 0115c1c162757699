/*
 * onnx_pb.c — the protobuf writer of onnx_pb.h.  Wire types: 0 varint,
 * 2 length-delimited, 5 fixed32.  Repeated scalars are written unpacked,
 * which every protobuf reader takes.
 */
#include "onnx_pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(pb_buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "onnx_pb: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void raw_varint(pb_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    int n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    put(b, tmp, (size_t)n);
}

static void tag(pb_buf *b, int field, int wire) { raw_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }

void pb_free(pb_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

void pb_varint(pb_buf *b, int field, int64_t v)
{
    tag(b, field, 0);
    raw_varint(b, (uint64_t)v);   /* negative: ten bytes of two's complement, as protobuf does */
}

void pb_fixed32(pb_buf *b, int field, const void *four_bytes)
{
    tag(b, field, 5);
    put(b, four_bytes, 4);        /* little-endian host */
}

void pb_bytes(pb_buf *b, int field, const void *data, size_t n)
{
    tag(b, field, 2);
    raw_varint(b, n);
    if (n) put(b, data, n);
}

void pb_string(pb_buf *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

void pb_append(pb_buf *b, const pb_buf *fields)
{
    if (fields->n) put(b, fields->p, fields->n);
}

void pb_message(pb_buf *b, int field, pb_buf *sub)
{
    pb_bytes(b, field, sub->p, sub->n);
    pb_free(sub);
}

/* AttributeProto: name 1, f 2, i 3, s 4, floats 7, ints 8, type 20 */
enum { ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_STRING = 3, ATTR_FLOATS = 6, ATTR_INTS = 7 };

static void attr_done(pb_buf *node, pb_buf *a, int type)
{
    pb_varint(a, 20, type);
    pb_message(node, 5, a);
}

void pb_attr_int(pb_buf *node, const char *name, int64_t v)
{
    pb_buf a = {0};
    pb_string(&a, 1, name);
    pb_varint(&a, 3, v);
    attr_done(node, &a, ATTR_INT);
}

void pb_attr_float(pb_buf *node, const char *name, float v)
{
    pb_buf a = {0};
    pb_string(&a, 1, name);
    pb_fixed32(&a, 2, &v);
    attr_done(node, &a, ATTR_FLOAT);
}

void pb_attr_ints(pb_buf *node, const char *name, const int64_t *v, int n)
{
    pb_buf a = {0};
    pb_string(&a, 1, name);
    for (int i = 0; i < n; i++) pb_varint(&a, 8, v[i]);
    attr_done(node, &a, ATTR_INTS);
}

void pb_attr_floats(pb_buf *node, const char *name, const float *v, int n)
{
    pb_buf a = {0};
    pb_string(&a, 1, name);
    for (int i = 0; i < n; i++) pb_fixed32(&a, 7, &v[i]);
    attr_done(node, &a, ATTR_FLOATS);
}

void pb_attr_string(pb_buf *node, const char *name, const char *s)
{
    pb_buf a = {0};
    pb_string(&a, 1, name);
    pb_string(&a, 4, s);
    attr_done(node, &a, ATTR_STRING);
}

/* ValueInfoProto: name 1, type 2; TypeProto: tensor_type 1; Tensor:
 * elem_type 1, shape 2; TensorShapeProto: dim 1; Dimension: dim_value 1 */
void pb_value_info(pb_buf *graph, int field, const char *name, int dtype, int rank, const int64_t *dims)
{
    pb_buf vi = {0}, type = {0}, tensor = {0};
    pb_string(&vi, 1, name);
    pb_varint(&tensor, 1, dtype);
    if (rank >= 0) {
        pb_buf shape = {0};
        for (int i = 0; i < rank; i++) {
            pb_buf dim = {0};
            pb_varint(&dim, 1, dims[i]);
            pb_message(&shape, 1, &dim);
        }
        pb_message(&tensor, 2, &shape);
    }
    pb_message(&type, 1, &tensor);
    pb_message(&vi, 2, &type);
    pb_message(graph, field, &vi);
}

/* TensorProto: dims 1, data_type 2, name 8, raw_data 9; GraphProto: initializer 5 */
void pb_initializer(pb_buf *graph, const char *name, int dtype, int rank, const int64_t *dims, const void *raw,
                    size_t bytes)
{
    pb_buf t = {0};
    for (int i = 0; i < rank; i++) pb_varint(&t, 1, dims[i]);
    pb_varint(&t, 2, dtype);
    pb_string(&t, 8, name);
    pb_bytes(&t, 9, raw, bytes);
    pb_message(graph, 5, &t);
}

/* ModelProto: ir_version 1, graph 7, opset_import 8; OperatorSetIdProto:
 * domain 1, version 2 */
void pb_model(pb_buf *model, pb_buf *graph, int opset)
{
    pb_varint(model, 1, 8);
    pb_buf os = {0};
    pb_string(&os, 1, "");
    pb_varint(&os, 2, opset);
    pb_message(model, 8, &os);
    pb_buf os2 = {0};
    pb_string(&os2, 1, "ai.strata");
    pb_varint(&os2, 2, 1);
    pb_message(model, 8, &os2);
    pb_string(graph, 2, "kernel_sweep");
    pb_message(model, 7, graph);
}
