/*
 * kernel.h — what a backend's kernel table is, as the planner sees it.
 *
 * Each backend owns one kernel table (src/backends/<name>/): a list of
 * entries {op, dtypes, run, accepts, prepare, release}.  The op rows in
 * src/ops/ say what an op *is* (shape, view and footprint rules); a table
 * says which of those ops a backend can *run*, and on what.  Nothing here
 * is backend code: the types are shared so that the planner (src/plan/)
 * can ask a table without including a backend header.
 *
 * Planning asks, for every node that runs, the session backend's table
 * first and the CPU's second (plan/place.c):
 *   - dtypes: a mask of the dtypes the kernel takes for the node's type
 *     operand (the op row's t_operand: input 0 for most ops).  The op x backend x
 *     dtype coverage matrix (`strata inspect --ops`) is read from it.
 *   - accepts(n, why): optional finer limits, seen with the node's real
 *     dtypes, ranks, strides, attributes and constant inputs.  A kernel
 *     never refuses at run time what its accepts took; a kernel that does
 *     is a bug the executors report as ST_ERR_INTERNAL.
 *   - prepare(n, &priv) / release(priv): optional backend-private state
 *     made once per command when its plan is bound (packed weights, the
 *     Winograd choice, descriptors, compiled programs) and handed to run
 *     as k->priv.
 * One op may have several entries (a fast path and a general one): the
 * first that takes the node wins.
 */
#ifndef ST_KERNEL_H
#define ST_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/op.h"

/* What accepts and prepare see of one node, at plan time. */
typedef struct st_knode {
    const st_node *node;            /* name and attributes */
    const st_op_def *op;            /* the op it runs (fusion may have rewritten it) */
    const void *state;              /* the shape rule's parsed attributes */
    int n_in, n_out;
    /* The operands' layouts: dtype, rank, sizes and strides, as planned
     * (views[i] for inputs, views[n_in + j] for outputs).  An omitted
     * optional operand has rank -1.  The storage is not known yet. */
    const st_view *views;
    const void *const *data;        /* per input: host data when constant, else NULL */
    const bool *skip;               /* Concat: inputs written in place, or NULL */
    const void *device;             /* the backend asking (opaque here; its own code casts it) */
} st_knode;

typedef struct st_kernel {
    const char *op;                 /* the op row's name */
    const char *domain;             /* "" for ai.onnx */
    uint32_t dtypes;                /* ST_DT mask of the type operand (op.h) */
    st_kernel_fn run;
    bool (*accepts)(const st_knode *n, char *why, size_t len);
    st_status (*prepare)(const st_knode *n, void **priv);
    void (*release)(void *priv);
} st_kernel;

/* What a backend can do beyond running its kernels, for passes that
 * rewrite a plan for one backend's kernels only. */
enum {
    /* Conv kernels take per-channel affine maps around their activation
     * (st_conv_state.ch_scale ... post_shift): passes/fuse_affine.c */
    ST_CAP_CONV_AFFINE = 1 << 0,
    /* The int8 kernels a QDQ model's groups fuse into (QLinearConv, ...,
     * QLinearLookup): passes/fuse_qdq.c */
    ST_CAP_QDQ = 1 << 1,
    /* FusedAttention, which a transformer's MatMul -> scale -> mask ->
     * Softmax -> MatMul becomes: passes/fuse_attention.c */
    ST_CAP_ATTENTION = 1 << 2,
    /* that FusedAttention kernel also takes st_att_layout and Q's scale
     * (ops/linalg.h), so the pass may fold the head Reshapes around it */
    ST_CAP_ATTENTION_VIEWS = 1 << 3,
    /* MatMul and Gemm kernels take a per-column bias and an activation
     * (st_matmul_state.bias, .act): passes/fuse_matmul.c */
    ST_CAP_MATMUL_EPI = 1 << 4,
    /* AddLayerNormalization, which an Add read only by a LayerNorm
     * becomes: passes/fuse_add_norm.c */
    ST_CAP_ADD_NORM = 1 << 5,
    /* FusedAttention also for chains in f16 (a session's lowered
     * precision), where the table's kernel takes f16: CUDA's tensor-core
     * kernel, which beats the unfused graph there although its f32
     * kernel does not */
    ST_CAP_ATTENTION_F16 = 1 << 6,
    /* the MatMul epilogue (ST_CAP_MATMUL_EPI) also for f16 and bf16
     * products (a session's lowered precision): CUDA's, where the bias
     * rides in cuBLASLt's epilogue instead of a pass of its own */
    ST_CAP_MATMUL_EPI_LP = 1 << 7,
    /* 4-D values that a chain of transposes wants NHWC are stored
     * channels-last (passes/channels_last.c): CUDA's convolutions (cuDNN,
     * its depthwise kernel) and element-wise kernels take those strides
     * at full speed */
    ST_CAP_CHANNELS_LAST = 1 << 8,
    /* Conv kernels take a residual R as input 3 and an activation after
     * adding it (st_conv_state.residual, .epi2): passes/fuse_conv_add.c */
    ST_CAP_CONV_RESIDUAL = 1 << 9,
};

/* A backend's whole table: families of entries, each ending with a NULL
 * op, the way src/ops/op_table.c lists the op rows. */
typedef struct st_kernel_table {
    const char *backend;            /* "cpu", "cuda", "opencl" */
    unsigned caps;                  /* ST_CAP_* */
    int n_families;
    const st_kernel *const *families;
} st_kernel_table;

/* The type operand's dtype (the op row's t_operand; an absent input
 * falls back to output 0), ST_UNDEFINED if there is none. */
st_dtype st_knode_type(const st_knode *n);
/* The first entry of t for n's op that takes n, or NULL with the reason
 * written to why ("no kernel for TopK", "float64: the kernel takes ..."). */
const st_kernel *st_kernel_find(const st_kernel_table *t, const st_knode *n, char *why, size_t len);
/* Whether t has any entry for op (for the coverage matrix). */
uint32_t st_kernel_dtypes(const st_kernel_table *t, const st_op_def *op);
/* Every entry, in order, for tests and `strata inspect --ops`. */
int st_kernel_count(const st_kernel_table *t);
const st_kernel *st_kernel_at(const st_kernel_table *t, int index);

/* For accepts: formats why and returns false. */
bool st_kernel_refuse(char *why, size_t len, const char *fmt, ...) ST_PRINTF(3, 4);

#endif
