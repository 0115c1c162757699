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

/* A strided view with at most this many contiguous runs has them as its
 * footprints (rule 3's finer footprint), a view with more its extent. */
#define ST_FP_MAX_RUNS 256

typedef struct st_fp {
    int cmd;
    int storage;             /* index into the plan's storages */
    int operand;
    bool write;
    int64_t lo, hi;          /* bytes */
} st_fp;

typedef struct st_cmd {
    int node;                /* plan node, or -1 - t for transfer t */
    const st_node *gnode;    /* the graph node (a transfer's own, plan.h) */
    const st_op_def *op;     /* st_op_transfer for a transfer */
    const void *state;
    int device;              /* ST_DEV_MAIN or ST_DEV_HOST (plan.h) */
    st_kernel_fn run;        /* NULL for a transfer: the main backend's transfer() runs it */
    void *priv;              /* the kernel's prepare() state */
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

/* The op of a transfer command (plan/transfer.c): input 0 is the bytes on
 * one device, output 0 the copy on the other, with the same layout. */
extern const st_op_def st_op_transfer;

/* Builds commands and edges for plan p: each node that runs, and before
 * the first node that reads its copy, each transfer.  mode chooses how
 * conflicts are found; only ST_HAZARD_RANGES is both correct and precise. */
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

/* Why the edge from -> to exists: the hazards between their footprints,
 * a mask of ST_HAZ_* (0 when only a coarser hazard mode ordered them),
 * and in *shared (may be NULL) the bytes of one shared range of the
 * strongest kind, RAW before WAW before WAR (for profiles and drawings). */
enum { ST_HAZ_RAW = 1, ST_HAZ_WAR = 2, ST_HAZ_WAW = 4 };
int st_dag_edge_hazards(const st_dag *d, int from, int to, st_fp *shared);
/* "RAW", "RAW+WAR", ...; "order" for 0. */
const char *st_dag_hazard_name(int mask);

/* Whether command c touches any byte in d->host. */
bool st_dag_touches_host(const st_dag *d, int c);

/* A kernel's run-time refusal of a node its accepts took is a bug
 * (ops/kernel.h): executors report it as ST_ERR_INTERNAL. */
static inline st_status st_cmd_status(st_status s) { return s == ST_ERR_UNSUPPORTED ? ST_ERR_INTERNAL : s; }

/* For the mutation test: drops edge index e (into preds) and rebuilds the
 * successor lists. */
void st_dag_remove_edge(st_dag *d, int cmd, int pred_index);

#endif
