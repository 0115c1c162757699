/*
 * passes.h — the plan's passes (each file's header says what it owns),
 * and the pipeline that hands them to plan building (pipeline.c).  Only
 * passes/ and the layers above include this: plan/ reaches the passes
 * through st_plan_target.passes alone.
 */
#ifndef ST_PASSES_H
#define ST_PASSES_H

#include "plan/plan.h"

/* The pipeline, in order (pipeline.c). */
extern const st_pass_pipeline st_passes;

/* Passes, in order (each file's header says what it owns). */
st_status st_specialize(st_plan *p);
st_status st_pass_fuse(st_plan *p);
/* Graph rewrites at the end of specialization, each of which may set
 * p->expanded (plan again on the rewritten graph): decomposed LayerNorm
 * and GELU become the fused ops (passes/fuse_decomposed.c); then, under a
 * lower precision, numerically sensitive nodes are kept in f32 with Cast
 * nodes around them (passes/precision.c). */
st_status st_pass_fuse_decomposed(st_plan *p);
st_status st_pass_precision(st_plan *p);
st_status st_pass_fuse_affine(st_plan *p);
st_status st_pass_fuse_qdq(st_plan *p);
/* views: the kernel takes operand layouts and Q's scale (ST_CAP_ATTENTION_VIEWS) */
/* dtypes: ST_DT() of the chain dtypes to fuse (f32, f16) */
st_status st_pass_fuse_attention(st_plan *p, bool views, uint32_t dtypes);
/* dtypes: ST_DT() of the product dtypes whose epilogue to fuse */
st_status st_pass_fuse_matmul(st_plan *p, uint32_t dtypes);
st_status st_pass_fuse_add_norm(st_plan *p);
/* dtypes: ST_DT() of the conv dtypes whose residual Add to fold */
st_status st_pass_fuse_conv_add(st_plan *p, uint32_t dtypes);
/* Whether value v, written by node `node`, is stored channels-last
 * (passes/channels_last.c; passes/views.c asks it as it lays v out). */
bool st_pass_wants_channels_last(const st_plan *p, int node, int v);
/* Shared by the fusion passes (passes/fuse.c): count[v] = input slots of
 * running nodes that read value v; the only running reader of v (not a
 * graph output), or -1. */
void st_plan_count_readers(const st_plan *p, int *count);
int st_plan_sole_reader(const st_plan *p, const int *count, int v);
/* Whether plan node `node` runs (not folded, fused or dead); whether values
 * a and b have the same planned shape. */
bool st_plan_node_runs(const st_plan *p, int node);
bool st_plan_same_shape(const st_plan *p, int a, int b);
/* The epilogue of node a when it is an activation a producer can apply
 * (Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Clip with
 * constant bounds), else false. */
struct st_epilogue;
bool st_plan_act_of(const st_plan *p, int a, struct st_epilogue *e);
void st_pass_place_concats(st_plan *p);
st_status st_pass_layout(st_plan *p);
/* Undoes st_pass_place_concats and st_pass_layout (plan/place.c lays the
 * plan out twice: to ask the tables with real strides, then for good). */
void st_pass_layout_reset(st_plan *p);
/* Whether node n is If, Loop or Scan; expands control node i into its
 * body in the plan's own graph (passes/control.c). */
bool st_control_op(const st_node *n);
st_status st_control_expand(st_plan *p, int i);
/* Whether node i is a Loop that must run at run time, one iteration at a
 * time: its body computes its condition (plan/stage.c). */
bool st_control_runtime_loop(const st_plan *p, int i);
/* The value id in the node's graph that subgraph reference src of node n
 * stands for (its implicit inputs), or -1. */
int st_control_outer_value(const st_node *n, int src);

/* Sequences and optionals (passes/sequence.c).  st_sequence_inputs makes
 * the values of the tensors that sequence and optional graph inputs hold;
 * st_sequence_touches says whether specialization hands node n to
 * st_sequence_lower, which marks a list node (SequenceConstruct, Optional)
 * as structure, or rewrites node i into what it does to lists and sets
 * p->expanded (*missing: a value it needs as a constant, or -1);
 * st_sequence_outputs makes the tensors that sequence and optional graph
 * outputs hold graph outputs of the plan's graph.  st_sequence_node: the
 * list node that makes value v in g, or NULL when v is a tensor. */
st_status st_sequence_inputs(st_plan *p);
bool st_sequence_touches(const st_plan *p, const st_node *n);
st_status st_sequence_lower(st_plan *p, int i, int *missing);
st_status st_sequence_outputs(st_plan *p);
const st_node *st_sequence_node(const st_graph *g, int v);
/* In a stage split at node cut: moves the list nodes before it to just
 * before it, so that the next stage makes the lists and their tensors
 * cross instead (plan/stage.c).  Returns the new cut. */
int st_sequence_defer(st_graph *g, int cut);

/* Evaluates a node on the host (folding), outputs into plan memory. */
st_status st_fold_node(st_plan *p, int node);

#endif
