/*
 * bound.h — host copies of the values a session feeds a plan: the
 * caller's inputs, a staged plan's results passed to its next stage
 * (plan/stage.c), a while loop's carried values between iterations
 * (session/loop.c).
 */
#ifndef ST_BOUND_H
#define ST_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "runtime/runctl.h"
#include "plan/plan.h"

struct st_session;
struct st_model;
struct st_exec_loop;

typedef struct bound_input {
    bool set;
    st_dtype dtype;           /* the model's dtype: data is converted on binding */
    int rank;
    int64_t dims[ST_MAX_RANK];
    void *data;
    size_t bytes, cap;
    /* what is already in the arena: these bytes, for this plan and arena
     * (input buffers are never reused within a run, see plan/plan.c) */
    bool uploaded;
    uint64_t up_plan;
    uint64_t up_arena;
    /* A sequence or optional input (passes/sequence.c): the tensors it
     * holds, each bound like a tensor input (an optional's tensor is bound
     * in this one), or absent; n_elems: a sequence's length.  Only the
     * caller's inputs hold these: what a stage or a loop passes on is
     * tensors (plan/stage.c). */
    int n_elems, cap_elems;
    struct bound_input *elems;
    bool absent;
} bound_input;

/* Frees b[0..n) (a sequence's elements too) and b. */
void st_bound_free(bound_input *b, int n);
/* Makes room for bytes in b (what names the value, for the message). */
st_status st_bound_reserve(bound_input *b, size_t bytes, const char *what);
/* b = value v of plan p, read to the host in its model dtype (the run
 * that computed it is done). */
st_status st_bound_read(const st_plan *p, int v, const char *what, bound_input *b);
/* b = a copy of src's shape and bytes. */
st_status st_bound_copy(bound_input *b, const bound_input *src, const char *what);
/* b = the scalar x in dtype dt (an integer or bool). */
st_status st_bound_scalar(bound_input *b, st_dtype dt, int64_t x);

/* Runs model m (the session's, a later stage's, a loop body) on inputs
 * bound, every stage, and waits for it: *last is the plan of its last
 * stage, valid until the session plans again (session/session.c). */
st_status st_session_run_model(struct st_session *s, const struct st_model *m, bound_input *bound, const st_plan **last);

/* The plans a run uses are pinned in the session's cache; a loop unpins
 * each iteration's once it has read their results, so that iterations do
 * not fill the cache: mark before, unpin after. */
uint64_t st_session_pin_mark(const struct st_session *s);
void st_session_unpin_after(struct st_session *s, uint64_t mark);
/* The session's memory limit (bytes). */
uint64_t st_session_memory_limit(const struct st_session *s);
/* The run in progress, for st_run_check between a loop's iterations
 * (runtime/runctl.h). */
st_run_ref st_session_run_ref(const struct st_session *s);

/* Runs the rest of a while loop on the device, as one graph, when the
 * session's executor can (st_exec_vt.loop): body is the plan of the
 * iteration that just ran.  ST_ERR_UNSUPPORTED, with nothing run and the
 * reason in the message, when it cannot. */
st_status st_session_loop_device(struct st_session *s, const st_plan *body, struct st_exec_loop *l);
/* Records how a while loop ran (the outermost one's), for inspect. */
void st_session_note_loop(struct st_session *s, const char *note);

/* Runs loop stage p's Loop (p ran and was waited for): out[j] are the
 * Loop's outputs, carried values then stacked scan outputs (session/loop.c). */
st_status st_loop_run(struct st_session *s, const st_plan *p, bound_input *out);

#endif
