/*
 * graph.h — the graph IR that the loader builds and sessions specialize.
 *
 * A graph is values and nodes.  Values are named edges: graph inputs,
 * initializers (constants with data), and node outputs.  Nodes are sorted
 * topologically when the graph is built, so iterating nodes in order is a
 * valid execution order; every value has at most one producer.
 *
 * Control-flow nodes (If, Loop, Scan) hold their bodies as subgraph
 * attributes: graphs of their own whose outer-scope references are listed
 * (st_graph.outer) and appear on the node as implicit inputs.
 *
 * The graph is immutable once built: sessions on many threads read it and
 * never write it.  Each session keeps its own specialized copy of shapes
 * and layouts (passes/specialize.c, plan/plan.h).
 */
#ifndef ST_GRAPH_H
#define ST_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"

struct st_op_def;
struct st_graph;

/* Host tensor data: an initializer, a Constant node's value, an attribute
 * tensor.  data is packed row-major in dtype. */
typedef struct st_const {
    st_dtype dtype;
    int rank;
    int64_t dims[ST_MAX_RANK];
    void *data;
    uint64_t bytes;
} st_const;

typedef enum st_attr_type {
    ST_ATTR_UNDEFINED = 0,
    ST_ATTR_FLOAT = 1,
    ST_ATTR_INT = 2,
    ST_ATTR_STRING = 3,
    ST_ATTR_TENSOR = 4,
    ST_ATTR_GRAPH = 5,
    ST_ATTR_FLOATS = 6,
    ST_ATTR_INTS = 7,
    ST_ATTR_STRINGS = 8,
    ST_ATTR_TENSORS = 9,
    ST_ATTR_GRAPHS = 10,
    ST_ATTR_SPARSE_TENSOR = 11,
    ST_ATTR_SPARSE_TENSORS = 12,
    ST_ATTR_TYPE_PROTO = 13,
    ST_ATTR_TYPE_PROTOS = 14
} st_attr_type;

typedef struct st_attr {
    char *name;
    st_attr_type type;
    float f;
    int64_t i;
    char *s;             /* ST_ATTR_STRING (NUL-terminated copy) */
    st_const *t;         /* ST_ATTR_TENSOR */
    int n;               /* element count of the list kinds */
    float *floats;
    int64_t *ints;
    char **strings;
    st_const *tensors;
    struct st_graph *g;  /* ST_ATTR_GRAPH: a subgraph (If's branches, Loop's and Scan's body) */
} st_attr;

typedef struct st_value {
    char *name;
    st_dtype dtype;                  /* ST_UNDEFINED when the model does not say */
    int rank;                        /* -1 when unknown */
    int64_t dims[ST_MAX_RANK];       /* -1: symbolic or unknown */
    char *dim_names[ST_MAX_RANK];    /* a symbolic dim's name, or NULL */
    st_const *init;                  /* initializer or Constant data; NULL otherwise */
    int producer;                    /* node index, -1 for inputs and constants */
    int producer_slot;               /* which output of the producer */
    bool is_input, is_output;
    /* A sequence or optional (declared so: a graph input or output, a
     * subgraph's input, value_info): dtype, rank and dims then describe
     * its element tensor.  Planning goes by the ops that make a value, not
     * by this (passes/sequence.c); the API reports it for graph inputs and
     * outputs. */
    st_value_kind kind;
} st_value;

typedef struct st_node {
    char *name;                      /* the node's name, or "<op_type>_<index>" */
    char *op_type;
    char *domain;                    /* "" for ai.onnx */
    int opset;                       /* the model's opset for the node's domain */
    int n_in, n_out;
    int *in;                         /* value ids; -1 for an omitted optional input */
    int *out;                        /* value ids; -1 for an omitted optional output */
    int n_attrs;
    st_attr *attrs;
    const struct st_op_def *op;
    /* Values of this graph that the node's subgraphs read by name (their
     * outer-scope references, nested ones included): dependencies of the
     * node like its inputs, for ordering and liveness. */
    int n_implicit;
    int *implicit;
    /* In a derived graph, a node copied from a subgraph: its implicit
     * inputs' ids in that subgraph (the ids its own subgraphs' outer_src
     * name); NULL when they are the ids of this graph. */
    int *implicit_src;
} st_node;

typedef struct st_opset {
    char *domain;
    int64_t version;
} st_opset;

typedef struct st_graph {
    st_value *values;
    int n_values;
    st_node *nodes;
    int n_nodes;
    int *inputs;                     /* graph inputs that are not initializers */
    int n_inputs;
    int *outputs;
    int n_outputs;
    st_opset *opsets;
    int n_opsets;
    int64_t ir_version;
    char *producer_name;
    /* A subgraph: the values it reads from enclosing scopes, each standing
     * for the enclosing graph's value of the same name (outer_src[i] there;
     * the enclosing node lists them as its implicit inputs). */
    int n_outer;
    int *outer;
    int *outer_src;
    int depth;                       /* 0 for the model's graph */
    /* A derived graph (graph/derive.c): a plan's private copy that
     * control-flow expansion rewrites.  Its arrays and the nodes' id lists
     * are its own; names, attributes and constants are borrowed from the
     * model's graphs, except what it made (owned). */
    bool derived;
    int refs;                        /* a derived graph: its holders (graph/derive.h) */
    struct st_graph *base;           /* a derived graph derived from another: held, since
                                        names and constants may be borrowed from it */
    void **owned;
    int n_owned, cap_owned;
    int cap_values, cap_nodes;
} st_graph;

/* How deep subgraphs may nest (an If in a Loop in an If ...): a hostile
 * file nesting them thousands deep gets a clear error, not a stack
 * overflow in the recursive passes. */
#define ST_MAX_GRAPH_DEPTH 64

void st_graph_free(st_graph *g);
/* Frees what a node owns (names, lists, attributes) and zeroes it. */
void st_node_clear(st_node *n);
void st_const_free(st_const *c);

const st_attr *st_node_attr(const st_node *n, const char *name);
int64_t st_attr_int(const st_node *n, const char *name, int64_t dflt);
float st_attr_float(const st_node *n, const char *name, float dflt);
const char *st_attr_string(const st_node *n, const char *name, const char *dflt);
/* The list attribute's elements, or NULL (and *count = 0) when absent. */
const int64_t *st_attr_ints(const st_node *n, const char *name, int *count);
const float *st_attr_floats(const st_node *n, const char *name, int *count);
/* A subgraph attribute, or NULL. */
const struct st_graph *st_attr_graph(const st_node *n, const char *name);

int64_t st_const_numel(const st_const *c);

#endif
