/*
 * ops.h — the shape rules, view rules and footprint rules that the op
 * table (op_table.c) refers to, and the parameter blocks that more than
 * one file reads.
 */
#ifndef ST_OPS_H
#define ST_OPS_H

#include "ops/op.h"

typedef struct st_shape_state {
    int64_t start, end;
} st_shape_state;

typedef struct st_gather_state {
    int axis;
    bool scalar;                    /* a constant scalar index: a view */
    int64_t index;
} st_gather_state;

/* The family tables (rows at the end of each file), NULL-name terminated. */
extern const st_op_def st_ops_elementwise[];
extern const st_op_def st_ops_shape[];
extern const st_op_def st_ops_linalg[];
extern const st_op_def st_ops_conv[];
extern const st_op_def st_ops_reduce[];   /* reduce.c: ReduceX, ArgMax/ArgMin, TopK, CumSum */
extern const st_op_def st_ops_norm[];     /* norm.c: Softmax family, LayerNorm, BatchNorm, ... */
extern const st_op_def st_ops_index[];    /* index.c: Expand, Tile, Pad, Range, Gather/Scatter, NMS, Einsum, ... */
extern const st_op_def st_ops_resize[];   /* resize.c: Resize, Upsample, ConvTranspose */
extern const st_op_def st_ops_misc[];     /* misc.c: losses, recurrent, quantization, signal, ... */
extern const st_op_def st_ops_control[];  /* control.c: If, Loop, Scan */
extern const st_op_def st_ops_text[];     /* text.c: StringNormalizer, TfIdfVectorizer */
extern const st_op_def st_ops_qlinear[];  /* qlinear.c: com.microsoft QLinearAdd, ..., QLinearConcat */

/* elementwise.c */
st_status st_infer_unary(st_infer *c);
st_status st_infer_binary(st_infer *c);
st_status st_infer_variadic(st_infer *c);
st_status st_infer_where(st_infer *c);
st_status st_infer_clip(st_infer *c);
st_status st_infer_cast(st_infer *c);
st_status st_infer_cast_like(st_infer *c);

/* shape.c */
st_status st_infer_shape(st_infer *c);
st_status st_infer_size(st_infer *c);
st_status st_infer_reshape(st_infer *c);
st_status st_infer_flatten(st_infer *c);
st_status st_infer_squeeze(st_infer *c);
st_status st_infer_unsqueeze(st_infer *c);
st_status st_infer_identity(st_infer *c);
st_status st_infer_transpose(st_infer *c);
st_status st_infer_slice(st_infer *c);
st_status st_infer_split(st_infer *c);
st_status st_infer_gather(st_infer *c);
st_status st_infer_concat(st_infer *c);
bool st_view_reshape_rule(const void *state, int out, const st_view *in, st_view *res);
bool st_view_identity_rule(const void *state, int out, const st_view *in, st_view *res);
bool st_view_transpose_rule(const void *state, int out, const st_view *in, st_view *res);
bool st_view_slice_rule(const void *state, int out, const st_view *in, st_view *res);
bool st_view_split_rule(const void *state, int out, const st_view *in, st_view *res);
bool st_view_gather_rule(const void *state, int out, const st_view *in, st_view *res);
int st_footprint_concat(const void *state, int n_in, int n_out, const st_view *views, const bool *skip, st_footprint *fp);

/* linalg.c */
st_status st_infer_matmul(st_infer *c);
st_status st_infer_gemm(st_infer *c);

/* conv.c */
st_status st_infer_conv(st_infer *c);
st_status st_infer_pool(st_infer *c);

#endif
