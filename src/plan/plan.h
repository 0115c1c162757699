/*
 * plan.h — a model specialized to one set of input shapes, ready to run.
 *
 * A plan is built in passes, each owning some fields:
 *   passes/specialize.c concrete dtypes and shapes, constant folding
 *                       (shape sub-graphs fold here), dead-node removal
 *   passes/fuse.c       activations folded into the op that feeds them
 *   passes/fuse_affine.c  for backends with ST_CAP_CONV_AFFINE: affine ops
 *                       around them too
 *   passes/fuse_qdq.c   for backends with ST_CAP_QDQ: a QDQ model's
 *                       DQ -> op -> Q groups as integer kernels
 *   passes/fuse_attention.c  for backends with ST_CAP_ATTENTION: MatMul ->
 *                       scale -> mask -> Softmax -> MatMul as one command
 *   passes/fuse_matmul.c  for backends with ST_CAP_MATMUL_EPI: the bias Add
 *                       and activation after a MatMul or Gemm in its epilogue
 *   passes/fuse_add_norm.c  for backends with ST_CAP_ADD_NORM: a residual
 *                       Add -> LayerNormalization as one command
 *   plan/place.c        which device runs each node, and its kernel
 *   passes/concat.c     which Concat inputs are written in place
 *   passes/views.c      which nodes are pure views, and every value's layout
 *   plan/transfer.c     the copies between devices a mixed plan needs
 *   plan/plan.c         buffers, lifetimes, arena offsets, and
 *                       the kernels' prepare() state
 * The session (session/session.c) then owns the plan and the hazard DAG that
 * runtime/dag.c builds from it.
 *
 * Devices: ST_DEV_MAIN is the session's backend; ST_DEV_HOST is the CPU,
 * which runs the nodes the main backend's kernel table refuses (a "mixed"
 * plan).  In a CPU session the two are one and every node is MAIN.
 *
 * Every value ends up as a view {storage, byte offset, strides} (rule 1):
 * a constant in its own storage, anything computed in the session's arena.
 * A *root* value owns a buffer in the arena; a *view* value (a slice, a
 * transpose, a Concat input written in place) is a view of a root's bytes.
 */
#ifndef ST_PLAN_H
#define ST_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/kernel.h"
#include "ops/op.h"

struct st_model;

enum { ST_DEV_MAIN = 0, ST_DEV_HOST = 1, ST_DEV_COUNT = 2 };

/* What the plan is for: the kernel tables it places nodes on. */
typedef struct st_plan_target {
    const st_kernel_table *main;    /* the session backend's table */
    const void *main_device;        /* its backend object (accepts may look at it) */
    const st_kernel_table *host;    /* the CPU's: folding, and the fallback */
    const void *host_device;
    bool mixed;                     /* main is not the CPU, so HOST is a second device */
    bool strict;                    /* no fallback: a node main refuses is an error */
    /* mixed, and main's storages are mapped into host memory without a copy
     * (st_backend.host_mapped): every value lives on main, host nodes read
     * and write it in place, and no transfers are made (plan/transfer.c) */
    bool shared;
    bool precision_strict;          /* st_session_set_precision_policy(STRICT) (passes/precision.c) */
    /* The passes plan building runs (passes/pipeline.c, st_passes): handed
     * in, so that plan/ calls no pass by name (passes sit above plan). */
    const struct st_pass_pipeline *passes;
} st_plan_target;

typedef enum st_pv_kind {
    ST_PV_DEAD = 0,      /* not needed for any output */
    ST_PV_CONST,         /* initializer or folded: host data in t.data */
    ST_PV_INPUT,         /* a graph input: a root buffer the host writes */
    ST_PV_ROOT,          /* computed by a command into its own buffer */
    ST_PV_VIEW,          /* a view of another value's bytes (base) */
    ST_PV_STRUCT         /* a sequence or optional: no bytes of its own; its elements
                            are values of their own (passes/sequence.c) */
} st_pv_kind;

typedef struct st_pvalue {
    st_tinfo t;          /* planned dtype (after precision) and concrete shape */
    st_dtype model_dtype;/* the dtype the model declares, which the user sees */
    st_pv_kind kind;
    int base;            /* ST_PV_VIEW: the value viewed; -1 otherwise */
    int concat;          /* placed: the Concat node whose output holds it, else -1 */
    int64_t concat_start;/* placed: where along the Concat's axis its slot starts */
    int buffer;          /* root buffer holding the bytes (-1 for constants) */
    int storage;         /* index into plan->storages */
    st_view view;        /* final layout; view.storage is set when storages exist */
    st_view host_view;   /* a mixed plan's constant read on the host: its bytes where they lie */
    bool resolved;       /* layout computed (passes/views.c) */
    int last_use;        /* last node reading it (n_nodes for graph outputs) */
    int producer;        /* node whose command writes it: the graph's producer, or the
                            node an activation was fused into (passes/fuse.c) */
} st_pvalue;

typedef enum st_pn_kind {
    ST_PN_DEAD = 0,      /* output unused */
    ST_PN_FOLDED,        /* evaluated at plan time */
    ST_PN_VIEW,          /* pure view: no command */
    ST_PN_EXEC,          /* runs as a command */
    ST_PN_FUSED          /* absorbed into another node's command (passes/fuse.c) */
} st_pn_kind;

typedef struct st_pnode {
    st_pn_kind kind;
    void *state;         /* from the op's shape rule */
    bool *skip;          /* Concat: per input, true when written in place */
    int n_placed;
    int cmd;             /* command index, -1 if none */
    int out0;            /* value the command writes as output 0 (an activation fused
                            into it moves its output here), -1: the node's own */
    /* A rewritten node (passes/fuse.c: a decomposed HardSwish becomes one
     * HardSwish) runs this op on these inputs; NULL: the node's own. */
    const st_op_def *op;
    int *in;
    int n_in;
    int device;          /* ST_DEV_MAIN or ST_DEV_HOST (plan/place.c) */
    const st_kernel *kernel;  /* the entry that runs it on that device */
    void *priv;          /* the kernel's prepare() state */
    bool prepared;
} st_pnode;

typedef struct st_buffer {
    uint64_t size;       /* bytes */
    int first, last;     /* node index range during which the bytes are live */
    uint64_t offset;     /* in its device's arena */
    int value;           /* the root value, or -1 - t for transfer t's copy */
    int device;          /* whose arena */
} st_buffer;

/* A copy of a value's bytes onto the other device, for the nodes there
 * that read it (plan/transfer.c).  One per (value, device): consecutive
 * nodes on the host share the copy in, and a value they make and read
 * among themselves never leaves the host. */
typedef struct st_transfer {
    int value;           /* the value copied (a root or a view) */
    int to;              /* the device the copy is on */
    int first, last;     /* first and last node on `to` that read it; the
                            transfer command runs just before `first` */
    int buffer;
    st_view view;        /* the copy: the value's layout over its own bytes */
    int cmd;             /* command index, -1 if none */
    st_node node;        /* a name for messages and the DAG: "x@cpu" */
    char name[96];
} st_transfer;

typedef struct st_plan {
    const struct st_model *model;
    /* The graph planned: the model's, or the plan's own copy once control
     * flow was expanded into it (passes/control.c).  Value ids of the
     * model's graph keep their meaning in it; node ids may not. */
    const st_graph *g;
    st_graph *own_g;
    bool expanded;               /* set by specialize: the graph changed, plan again */
    uint64_t serial;             /* unique within its session (never reused, unlike addresses) */
    st_dtype precision;
    /* the input shapes this plan was built for: one slot per graph input,
     * then one per tensor that a sequence or optional input holds, in
     * input order (in_elems[i]: ST_IN_TENSOR, ST_IN_ABSENT or how many
     * tensors input i holds; slot_value: the value each of those slots is
     * in the plan's graph, passes/sequence.c) */
    int n_inputs;
    int n_slots;
    int *in_rank;
    int64_t (*in_dims)[ST_MAX_RANK];
    int *in_elems;
    int *slot_value;
    /* Inputs whose values the plan depends on: small inputs that a shape
     * rule needs as data (a Reshape's shape fed as a graph input).
     * Their values are part of the plan's key and they are constants. */
    bool *value_inputs;
    const void *const *in_data;   /* the bound data, during planning only */
    void **value_data;            /* copies of the value inputs' data */
    int needs_values;             /* set by specialize: replan with more value inputs */
    /* A staged plan (plan/stage.c): specialization reached node `cut`,
     * which needs data the graph computes (an If's condition, the boxes
     * NonMaxSuppression keeps), so this plan runs the nodes before it and
     * next_g, the rest of the graph, is planned at run time on their
     * results.  cut_note says where it stopped ("" in a plan that runs
     * the whole graph). */
    int cut, cut_value;
    bool cut_loop;                /* the cut is a Loop whose body computes its condition */
    st_graph *next_g;
    char cut_note[200];           /* what stopped it, for inspect */
    /* A loop stage: after this plan runs, the session runs the Loop's body
     * one iteration at a time (session/loop.c), then plans next_g on its
     * results and this plan's outputs. */
    struct st_loop *loop;

    int n_values;
    st_pvalue *values;
    int n_nodes;
    st_pnode *nodes;
    void **owned;        /* constant data the plan allocated */
    int n_owned, cap_owned;
    /* Folding builds constants on the host at plan time; a ConstantOfShape
     * or Expand of a hostile shape must be refused, not attempted.  The
     * bytes folded so far count against the session's memory limit. */
    uint64_t memory_limit;   /* 0: no limit */
    uint64_t folded_bytes;

    st_plan_target target;
    st_transfer *transfers;
    int n_transfers;

    st_buffer *buffers;
    int n_buffers;
    uint64_t arena_bytes;    /* peak of the main arena, after reuse */
    uint64_t host_arena_bytes; /* a mixed plan's host arena */
    uint64_t naive_bytes;    /* sum of every buffer */
    uint64_t const_bytes;

    /* storages[0] is the main arena, storages[1] the host arena (NULL
     * unless the plan is mixed); the rest hold constants commands read */
    st_storage **storages;
    int n_storages;

    bool sanitize;
    st_hazard_mode hazard_mode;

    /* The mixed-precision policy (passes/precision.c): under a lower
     * precision, keep_f32[v] marks the values that stay f32 (n_keep_f32
     * of them have a flag; NULL: none).  It survives the replans that
     * follow the pass's own rewrite, which sets precision_planned. */
    bool precision_strict;       /* --precision-policy strict: every float value lowered */
    bool precision_planned;
    bool *keep_f32;
    int n_keep_f32;
    int n_kept_nodes, n_precision_casts;   /* for inspect */
} st_plan;

#define ST_VALUE_INPUT_MAX 4096
/* A later stage's input that a rule needs as data was computed by the
 * stage before and is on the host already: larger ones are taken. */
#define ST_STAGE_VALUE_MAX (1 << 22)

/* A Loop run one iteration at a time stops with an error after this many
 * iterations: a condition that never turns false would otherwise run until
 * the memory of the scan outputs ran out.  A counted loop with more trips
 * than this is refused at plan time. */
#define ST_MAX_LOOP_ITERATIONS ((int64_t)1 << 24)

/* A Loop run by the session one iteration at a time, because its body
 * computes its own condition (a while loop) or it has too many trips to
 * unroll (passes/control.c, st_control_runtime_loop).  Value ids are the stage
 * graph's (the plan's g before the split); -1 where the Loop omits one. */
typedef struct st_loop {
    const char *name;             /* the Loop node's, for messages */
    struct st_model *body;        /* the body as a model: inputs are the iteration
                                     number, the condition, the carried values, then
                                     the outer values it reads */
    int m, cond;                  /* trip count and condition inputs */
    int n_carried, n_scan, n_outer;
    int *init;                    /* [n_carried] initial carried values */
    int *outer;                   /* [n_outer] values the body reads from outside */
    int *out;                     /* [n_carried + n_scan] the Loop's outputs */
} st_loop;

void st_loop_free(st_loop *l);

/* Splits a plan whose specialization stopped at p->cut: p->g keeps the
 * nodes before it, their results that the rest reads become its outputs,
 * and p->next_g gets the rest (plan/stage.c). */
st_status st_plan_split(st_plan *p);
/* The plan's own copy of its graph, made on first use (graph/derive.h). */
st_status st_plan_own_graph(st_plan *p);

/* How a graph input is bound (st_plan_build's in_elems): a tensor, an
 * empty optional, or else the number of tensors the sequence or optional
 * input holds, whose shapes and data follow the graph inputs' slots in
 * in_rank, in_dims and in_data. */
#define ST_IN_TENSOR (-1)
#define ST_IN_ABSENT (-2)
/* The most tensors a sequence may hold: the plan writes a node or a value
 * per element. */
#define ST_MAX_SEQUENCE 100000

/* Builds the whole plan for the given input shapes; in_data (the bound
 * inputs) lets the plan specialize on small integer inputs' values.
 * in_elems: per graph input, ST_IN_TENSOR or what it holds (NULL: every
 * input is a tensor). */
st_status st_plan_build(const struct st_model *m, const st_plan_target *t, const st_session_options *o,
                        const int *in_rank, const int64_t (*in_dims)[ST_MAX_RANK], const void *const *in_data,
                        const int *in_elems, st_plan **out);
/* Whether plan p is valid for these bound inputs. */
bool st_plan_matches(const st_plan *p, const int *in_rank, const int64_t (*in_dims)[ST_MAX_RANK],
                     const void *const *in_data, const int *in_elems);
/* st_plan_bind (session/bind.h) then gives it storages. */
void st_plan_free(st_plan *p);

/* Whether value v stays f32 under the plan's lower precision
 * (passes/precision.c decides; specialization's lowering and the plan
 * JSON read it). */
static inline bool st_plan_keeps_f32(const st_plan *p, int v)
{
    return p->keep_f32 && v >= 0 && v < p->n_keep_f32 && p->keep_f32[v];
}

/* One pass of the pipeline: it runs when the main kernel table has every
 * capability in caps and gate (if any) agrees. */
typedef struct st_pass {
    const char *name;
    uint32_t caps;                                 /* ST_CAP_* all required; 0: none */
    bool (*gate)(const st_kernel_table *main);     /* a further condition, or NULL */
    st_status (*run)(st_plan *p);
} st_pass;

/* What plan building calls of the passes, declared in one place
 * (passes/pipeline.c): the steps woven into building (sequence inputs,
 * specialization in its retry loop, the layout placement repeats, a
 * stage cut's list nodes, two graph queries) and the table of rewriting
 * passes walked in order once the plan is specialized. */
typedef struct st_pass_pipeline {
    st_status (*sequence_inputs)(st_plan *p);
    st_status (*specialize)(st_plan *p);
    void (*layout_reset)(st_plan *p);
    st_status (*layout)(st_plan *p);
    void (*place_concats)(st_plan *p);
    int (*sequence_defer)(st_graph *g, int cut);
    const st_node *(*sequence_node)(const st_graph *g, int v);
    int (*outer_value)(const st_node *n, int src);
    const st_pass *passes;
    int n_passes;
} st_pass_pipeline;

st_status st_plan_place(st_plan *p);
st_status st_plan_transfers(st_plan *p);
st_status st_plan_prepare(st_plan *p);
st_status st_plan_buffers(st_plan *p);

/* The device whose memory holds value v's bytes (its root's producer's);
 * -1 for a constant, which lies on the host and is copied to the main
 * device when main-device commands read it. */
int st_plan_value_device(const st_plan *p, int v);
/* What kernel tables see of node i (plan/place.c): its operands' layouts
 * as they stand.  views and data need room for n_in + n_out entries. */
void st_plan_knode(const st_plan *p, int i, int device, st_view *views, const void **data, st_knode *out);
/* The transfer of value v to device d, or NULL. */
const st_transfer *st_plan_transfer_of(const st_plan *p, int v, int d);

/* Alignment of buffers in an arena and of constants in a device's
 * constant storage. */
#define ST_ALIGN 64

/* The bytes of a value's planned dtype and shape. */
static inline uint64_t st_pvalue_bytes(const st_pvalue *pv)
{
    return (uint64_t)st_numel(pv->t.rank, pv->t.dims) * st_dtype_size(pv->t.dtype);
}

/* Plan-owned memory for a constant. */
void *st_plan_alloc(st_plan *p, uint64_t bytes);

/* The op node i's command runs and the values it reads (fusion may have
 * rewritten both). */
static inline const st_op_def *st_plan_op(const st_plan *p, const st_node *n, int i)
{
    return p->nodes[i].op ? p->nodes[i].op : n->op;
}

static inline const int *st_plan_in(const st_plan *p, const st_node *n, int i, int *count)
{
    if (p->nodes[i].in) {
        *count = p->nodes[i].n_in;
        return p->nodes[i].in;
    }
    *count = n->n_in;
    return n->in;
}

/* Node i as its command runs it: the graph's node with the op and the
 * inputs that fusion gave it (its outputs are the graph's). */
static inline st_node st_plan_node(const st_plan *p, int i)
{
    st_node n = p->g->nodes[i];
    n.op = st_plan_op(p, &p->g->nodes[i], i);
    n.in = (int *)st_plan_in(p, &p->g->nodes[i], i, &n.n_in);
    return n;
}

/* The value node i's command writes as output k (fusion can redirect 0). */
static inline int st_plan_out(const st_plan *p, const st_node *n, int i, int k)
{
    return k == 0 && p->nodes[i].out0 >= 0 ? p->nodes[i].out0 : n->out[k];
}

#endif
