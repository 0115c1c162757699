/*
 * index.h — the parameter blocks that the index family's shape rules
 * (ops/index.c) parse from attributes and its CPU kernels
 * (backends/cpu/k_index_copy.c, k_index_gather.c) read.  Everything a kernel can take from its
 * operands' shapes (Expand's and Tile's factors, Range's length, ...) is
 * not repeated here, so a kernel never disagrees with the shapes it runs on.
 */
#ifndef ST_OPS_INDEX_H
#define ST_OPS_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/codes.h"
#include "strata.h"

/* Numbered by ops/codes.h's lists, which the OpenCL kernels read too. */
#define ST_PAD_ENUM_(name) ST_PAD_##name,
typedef enum st_pad_mode { ST_PAD_MODES(ST_PAD_ENUM_) } st_pad_mode;
#undef ST_PAD_ENUM_

/* Scatter reductions (ScatterND, ScatterElements). */
#define ST_RED_ENUM_(name) ST_RED_##name,
typedef enum st_scatter_red { ST_SCATTER_REDS(ST_RED_ENUM_) } st_scatter_red;
#undef ST_RED_ENUM_

/* Pad, and CenterCropPad (a Pad whose pads its shape input decides).
 * Negative pads crop first; the other modes then read the cropped
 * extent, as ONNX Runtime does (numpy, ONNX's reference, has no crop). */
typedef struct st_pad_state {
    int mode;                       /* st_pad_mode */
    int64_t begin[ST_MAX_RANK], end[ST_MAX_RANK]; /* may be negative: a crop */
    bool value_input;               /* opset >= 11: the value is input 2 when present */
    double value;                   /* opset < 11: the 'value' attribute */
} st_pad_state;

typedef struct st_const_state {
    st_dtype dtype;                 /* ConstantOfShape's value attribute */
    unsigned char value[8];
} st_const_state;

typedef struct st_index_state {
    int axis;                       /* normalised; Compress: -1 flattens */
    int64_t k;                      /* EyeLike's diagonal */
    bool flag;                      /* Trilu: upper; OneHot: negative indices allowed; Unique: sorted;
                                       DepthToSpace: CRD mode; NMS: center_point_box */
    int reduction;                  /* st_scatter_red */
    int64_t n;                      /* GatherND: batch_dims; DepthToSpace/SpaceToDepth: blocksize */
} st_index_state;

/* Einsum: labels per operand after parsing.  Letters are labels 0..51,
 * the dims an ellipsis stands for are ST_EIN_ELL + i (i counted from the
 * ellipsis's first dim, right-aligned across operands). */
#define ST_EIN_ELL 52
#define ST_EIN_LABELS (ST_EIN_ELL + ST_MAX_RANK)
#define ST_EIN_MAX_IN 16

typedef struct st_einsum_state {
    int n_in;
    int rank[ST_EIN_MAX_IN];
    int8_t label[ST_EIN_MAX_IN][ST_MAX_RANK];
    int out_rank;
    int8_t out_label[ST_MAX_RANK];
    int64_t size[ST_EIN_LABELS];    /* each label's extent (broadcast) */
} st_einsum_state;

#endif
