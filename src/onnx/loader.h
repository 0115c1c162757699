/*
 * loader.h — ONNX protobuf to graph IR.
 *
 * The C code for onnx.proto is generated at build time by protoc-c from the
 * system's /usr/include/onnx/onnx.proto.  The loader checks everything a
 * hostile file can get wrong (sizes, names, cycles, external paths) and
 * reports it as ST_ERR_MODEL with a message naming the tensor or node;
 * unknown ops load fine and are refused when a session is created, so that
 * `strata inspect` still works on such a model.
 */
#ifndef ST_LOADER_H
#define ST_LOADER_H

#include <stddef.h>

#include "graph/graph.h"

/* The newest ai.onnx opset whose semantics strata implements. */
#define ST_MAX_OPSET 21

st_status st_onnx_load(const void *data, size_t size, const char *base_dir, st_graph **out);
/* Refuses a file whose subgraphs or types nest deeper than strata plans,
 * before the (recursive) unpacker could overflow its stack (depth.c). */
st_status st_onnx_check_depth(const void *data, size_t size);
/* A serialized TensorProto, as the ONNX test data stores inputs and outputs.
 * *name receives a malloc'd copy of the tensor's name (may be empty). */
st_status st_onnx_load_tensor(const void *data, size_t size, st_const **out, char **name);

#endif
