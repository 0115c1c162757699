/*
 * schedule.h — the one schedule policy every executor follows.
 *
 * ST_SCHEDULE_DEFAULT runs commands in program order where an executor
 * has a choice.  ST_SCHEDULE_RANDOM (the sanitizer's adversary, rule 7)
 * makes every choice from a seeded generator: which ready command starts
 * next, a random topological order for executors that enqueue the whole
 * DAG up front, which stream a command goes to, and when a finished
 * command's completion is released to its successors (late, the way a GPU
 * may retire work long after it was issued).  Nothing but the DAG orders
 * commands, so a missing edge shows up as a wrong or unstable result.
 * The executors (backends/<name>/) call these; none keeps a copy.
 */
#ifndef ST_EXEC_SCHEDULE_H
#define ST_EXEC_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/dag.h"

typedef struct st_sched {
    bool random;
    uint64_t rng;
} st_sched;

void st_sched_init(st_sched *s, const st_session_options *o);
/* The next number of the seeded sequence (splitmix64). */
uint64_t st_sched_next(st_sched *s);
/* An index into ready[0..n), n > 0: the lowest command in program order,
 * or any one at random. */
int st_sched_pick(st_sched *s, const int *ready, int n);
/* Whether a command that just finished has its completion held back. */
bool st_sched_hold(st_sched *s);
/* Whether one held completion is released now (held ones are released
 * anyway when nothing else is ready); which one: st_sched_below(n). */
bool st_sched_release_now(st_sched *s);
/* A number in [0, n), n > 0. */
int st_sched_below(st_sched *s, int n);
/* A topological order of d into order[0..n_cmds): program order, or a
 * random one.  scratch needs room for 2 * n_cmds ints. */
void st_sched_order(st_sched *s, const st_dag *d, int *order, int *scratch);

#endif
