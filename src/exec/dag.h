/*
 * dag.h — commands, their footprints, and the hazard DAG between them.
 *
 * Every node that runs becomes a command.  Each operand of a command has a
 * footprint: (storage, byte range, read or write) on the real, planned
 * offsets (rules 3 and 6).  Two commands conflict when they touch
 * overlapping bytes of one storage and at least one writes; the DAG has a
 * path between every conflicting pair, and (after transitive reduction) no
 * edge that another path already implies, so every edge is needed.
 *
 * Commands are numbered in program order (a topological order of the
 * graph), and every edge goes from a lower to a higher number.
 */
#ifndef ST_DAG_H
#define ST_DAG_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"

typedef struct st_fp {
    int cmd;
    int storage;             /* index into the plan's storages */
    int operand;
    bool write;
    int64_t lo, hi;          /* bytes */
} st_fp;

typedef struct st_cmd {
    int node;                /* plan node */
    const st_node *gnode;
    const st_op_def *op;
    const void *state;
    int n_in, n_out;
    st_view *views;          /* n_in + n_out; storage NULL for an omitted operand */
    const bool *skip;        /* Concat: inputs already in place */
    int fp_first, n_fp;
    int pred_first, n_pred;  /* into dag->preds */
    int succ_first, n_succ;  /* into dag->succs */
} st_cmd;

typedef struct st_dag {
    int n_cmds;
    st_cmd *cmds;
    int n_fps;
    st_fp *fps;
    int n_edges;
    int *preds;              /* CSR by command: predecessor ids */
    int *succs;              /* CSR by command: successor ids */
    int n_edges_found;       /* before transitive reduction */
    int n_storages;
    st_storage **storages;   /* borrowed from the plan */
    st_view *view_pool;
    /* The bytes the host can reach through the API (graph inputs and
     * outputs): a device executor records host-visible events only for
     * commands that touch them. */
    int n_host;
    st_fp *host;             /* cmd is -1 */
} st_dag;

/* Builds commands and edges for plan p.  mode chooses how conflicts are
 * found; only ST_HAZARD_RANGES is both correct and precise. */
st_status st_dag_build(st_plan *p, st_hazard_mode mode, st_dag **out);
void st_dag_free(st_dag *d);

/* Fills out with the commands whose footprints overlap bytes [lo, hi) of
 * storage s: writers only when a host read asks, readers and writers when
 * a host write asks (rule 4).  Returns the count (at most d->n_cmds). */
int st_dag_overlapping(const st_dag *d, const st_storage *s, int64_t lo, int64_t hi, bool for_write, int *out);

/* The sanitizer's static proof (rule 7): every pair of commands whose true
 * byte ranges conflict is ordered by a path in the DAG.  Independent of
 * how the edges were made.  On a violation returns ST_ERR_HAZARD naming
 * both commands, the storage and the shared bytes. */
st_status st_dag_check(const st_dag *d);

/* Whether command c touches any byte in d->host. */
bool st_dag_touches_host(const st_dag *d, int c);

/* For the mutation test: drops edge index e (into preds) and rebuilds the
 * successor lists. */
void st_dag_remove_edge(st_dag *d, int cmd, int pred_index);

#endif
