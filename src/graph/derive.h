/*
 * derive.h — derived graphs: a plan's private copy of a graph, which
 * control-flow expansion (passes/control.c) rewrites by splicing a body's
 * nodes in place of the node that runs it.
 *
 * A derived graph owns its arrays (values, nodes, the nodes' id lists) and
 * borrows everything else (names, attributes, constants, subgraphs) from
 * the model's graphs, which outlive it (the plan keeps the model).  What
 * expansion makes (a value's name, an iteration's constant, a new node's
 * attributes) is recorded in owned[] and freed with the graph.  Value ids
 * of the graph it derives from keep their meaning; node ids after a splice
 * point shift.
 */
#ifndef ST_DERIVE_H
#define ST_DERIVE_H

#include "core/status.h"
#include "graph/graph.h"

st_graph *st_graph_derive(const st_graph *g);
/* Drops one holder of a derived graph (st_graph_free does this for a
 * derived graph); the last frees it.  A graph derived from a derived graph
 * holds that one, whose names and constants it may borrow.  Holders are
 * the plan and session objects of one session, so one thread at a time. */
void st_graph_free_derived(st_graph *g);
/* Removes nodes [0, n) (the first stage of a staged plan, plan/stage.c):
 * their values lose their producer. */
void st_graph_drop_front(st_graph *g, int n);
/* Removes nodes [n, end). */
void st_graph_drop_back(st_graph *g, int n);

/* Records p as owned by g (freed with it); returns p, or NULL (and frees
 * p) when out of memory. */
void *st_graph_own(st_graph *g, void *p);
/* A copy of the formatted string owned by g, or NULL. */
char *st_graph_strf(st_graph *g, const char *fmt, ...) ST_PRINTF(2, 3);

/* A new value named name (owned copy), or -1 when out of memory. */
int st_graph_add_value(st_graph *g, const char *name);
/* A new constant value holding a copy of data, or -1. */
int st_graph_add_const(st_graph *g, const char *name, st_dtype dtype, int rank, const int64_t *dims, const void *data);
/* Makes room for n nodes at index at (n >= 1), replacing node at: nodes
 * after it move up by n - 1 and every value's producer follows.  The new
 * slots are zeroed; the caller fills them (id lists through st_graph_own
 * are not needed: a derived graph frees every node's in, out and implicit
 * arrays).  Returns false when out of memory. */
bool st_graph_splice(st_graph *g, int at, int n);
/* Makes room for n zeroed nodes before index at (which may be n_nodes),
 * without replacing any; the caller fills them and relinks.  Returns
 * false when out of memory. */
bool st_graph_insert(st_graph *g, int at, int n);
/* Recomputes every value's producer from the nodes' outputs. */
void st_graph_relink(st_graph *g);

#endif
