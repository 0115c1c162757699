/*
 * op.h — what an operator is to strata: one row of the op table.
 *
 * A row gives, for one ONNX op:
 *   - infer:   the shape rule.  From the input dtypes and concrete shapes
 *              (and the data of constant inputs) it computes the outputs'
 *              dtypes and shapes, and parses attributes into `state`, a
 *              single malloc'd block the kernels read.  It runs once per
 *              input-shape signature, never per run.
 *   - view:    optional.  For ops that can be a view of their first input
 *              (Slice, Transpose, Reshape, ...), the output's layout as a
 *              view of the input's layout.  Returning false means the
 *              layout cannot express it, and the node runs as a copy.
 *   - footprint: the bytes each operand touches.  The default (NULL) is
 *              every operand's extent, read for inputs and written for
 *              outputs (rule 3 of docs/architecture.md).
 * The row sits at the end of src/ops/<family>.c, beside the family's shape
 * rules (op_table.c lists the families).  A row names no kernel: each
 * backend's kernel table says which ops it runs (ops/kernel.h), with its
 * entries beside its kernels in src/backends/<name>/k_<family>.*.  Every
 * kernel takes strided inputs and strided outputs (rule 5).
 */
#ifndef ST_OP_H
#define ST_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "core/view.h"
#include "graph/graph.h"

/* What a shape rule sees of one input or output. */
typedef struct st_tinfo {
    bool present;                  /* false: an omitted optional operand */
    st_dtype dtype;
    int rank;
    int64_t dims[ST_MAX_RANK];
    const void *data;              /* packed host data when constant, else NULL */
} st_tinfo;

typedef struct st_infer {
    const st_node *node;
    int opset;
    int n_in, n_out;
    const st_tinfo *in;
    st_tinfo *out;                 /* the rule fills dtype, rank, dims; present is preset */
    void *state;                   /* set by the rule; freed with free() */
    int *missing_const;            /* set to the input a rule needed constant and lacked */
} st_infer;

struct st_pool;

/* What a kernel sees.  in[i].data is NULL for an omitted optional input. */
typedef struct st_kctx {
    const st_node *node;
    const void *state;
    int n_in, n_out;
    const st_operand *in;
    const st_operand *out;
    const bool *skip;              /* per input, or NULL: inputs already in place (Concat) */
    struct st_pool *pool;          /* intra-op parallelism; NULL runs serially */
    /* For device backends: the operands as views (n_in + n_out; an OpenCL
     * kernel binds view.storage's cl_mem at view.offset), and the
     * backend's per-command context (a CUDA stream, an OpenCL queue with
     * the event wait list).  NULL on the CPU. */
    const st_view *views;
    void *dev;
    void *priv;                    /* the kernel's prepare() state, or NULL */
    /* Host memory that lives as long as the plan, for what an output holds
     * beyond its elements (a string's characters, core/strings.h); NULL
     * outside plan-time folding (passes/specialize.c), the only place a
     * node that makes strings runs.  Returns NULL when out of memory or
     * over the session's memory limit. */
    void *(*alloc)(void *ctx, uint64_t bytes);
    void *alloc_ctx;
} st_kctx;

typedef st_status (*st_kernel_fn)(const st_kctx *k);

/* One operand's bytes for the hazard tracker. */
typedef struct st_footprint {
    int operand;                   /* input index, or n_in + output index */
    bool write;
    int64_t lo, hi;                /* bytes relative to the storage base */
} st_footprint;

enum {
    ST_OP_SHAPE_ONLY = 1 << 0,     /* reads only its input's shape (Shape, Size): always foldable */
    ST_OP_NO_FOLD = 1 << 1,        /* never evaluate at plan time (random ops) */
    ST_OP_CONCAT = 1 << 2,         /* candidates for in-place placement of inputs */
    ST_OP_CONTROL = 1 << 3         /* If, Loop, Scan: expanded into their bodies (passes/control.c) */
};

typedef struct st_op_def {
    const char *name;
    const char *domain;            /* "" for ai.onnx */
    int min_opset;                 /* opsets before this have other semantics */
    unsigned flags;
    st_status (*infer)(st_infer *c);
    bool (*view)(const void *state, int out_index, const st_view *in, st_view *out);
    /* Fills fp (room for 2 * (n_in + n_out) entries) from the operands' views;
     * views[i] for inputs, views[n_in + j] for outputs.  Returns the count. */
    int (*footprint)(const void *state, int n_in, int n_out, const st_view *views, const bool *skip,
                     st_footprint *fp);
    /* The dtypes the op is defined on (ST_DT mask of its type operand: the
     * ONNX type constraint the shape rule enforces), 0 when the rule
     * decides alone.  The coverage matrix is this and each backend's mask. */
    uint32_t types;
    /* The type operand: input t_operand, or output -1 - t_operand when
     * negative (ConstantOfShape's value type is its output's). */
    int t_operand;
} st_op_def;

/* One bit per st_dtype (the ONNX numbering is below 32). */
#define ST_DT(t) (1u << (t))
#define ST_DT_FLOAT16S (ST_DT(ST_F16) | ST_DT(ST_BF16))
#define ST_DT_FLOATS (ST_DT(ST_F32) | ST_DT_FLOAT16S)                  /* f32, f16, bf16 */
#define ST_DT_ALL_FLOATS (ST_DT_FLOATS | ST_DT(ST_F64))
#define ST_DT_SIGNED_INTS (ST_DT(ST_I8) | ST_DT(ST_I16) | ST_DT(ST_I32) | ST_DT(ST_I64))
#define ST_DT_INTS (ST_DT_SIGNED_INTS | ST_DT(ST_U8) | ST_DT(ST_U16) | ST_DT(ST_U32) | ST_DT(ST_U64))
#define ST_DT_SIGNED (ST_DT_ALL_FLOATS | ST_DT_SIGNED_INTS)
#define ST_DT_NUMERIC (ST_DT_ALL_FLOATS | ST_DT_INTS)
#define ST_DT_ALL (ST_DT_NUMERIC | ST_DT(ST_BOOL))

const st_op_def *st_op_find(const char *domain, const char *name);
/* For `strata inspect` and the conformance runner: the table itself. */
int st_op_count(void);
const st_op_def *st_op_at(int index);

/* ---- helpers for shape rules ---- */

/* "node 'Conv_3' (Conv): <message>" */
st_status st_infer_error(const st_infer *c, st_status code, const char *fmt, ...) ST_PRINTF(3, 4);
/* Normalises a possibly negative axis into [0, rank); an error if outside. */
st_status st_infer_axis(const st_infer *c, int64_t axis, int rank, int *out);
/* Numpy-style broadcast of the inputs' shapes into out[0]. */
st_status st_infer_broadcast(const st_infer *c, int n, const st_tinfo *const *ins, st_tinfo *out);
/* Reads a constant integer input (i32 or i64) into vals; count receives
 * its element count.  An error if it is not constant. */
st_status st_infer_const_ints(const st_infer *c, int input, int64_t *vals, int max, int *count);
st_status st_infer_need_const(const st_infer *c, int input);
/* The input's dtype must be one of a zero-terminated list. */
st_status st_infer_dtype(const st_infer *c, int input, const st_dtype *allowed);
/* The same with an ST_DT mask. */
st_status st_infer_dtype_mask(const st_infer *c, int input, uint32_t allowed);
void *st_infer_state(st_infer *c, size_t size);   /* zeroed; freed with the plan */
/* A windowed op's (Conv, ConvTranspose, pools, QLinearConv) strides,
 * dilations and pads attributes for n spatial dims, each written into its
 * array where present (left as the caller set it where absent); pads go
 * to pb (begins) and pe (ends).  Counts must match n (pads 2n). */
st_status st_infer_window_attrs(const st_infer *c, int n, int64_t *s, int64_t *d, int64_t *pb, int64_t *pe);

/* The elements of an operand, in row-major order, as a flat index. */
static inline int64_t st_offset_of(const st_operand *o, const int64_t *idx)
{
    int64_t off = 0;
    for (int i = 0; i < o->rank; i++) off += idx[i] * o->strides[i];
    return off;
}

#endif
