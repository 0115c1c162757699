/*
 * loop.c — a Loop whose body computes its own condition (a while loop),
 * run by the session one iteration at a time.
 *
 * Planning cannot unroll such a Loop: how many iterations run is only
 * known by running them.  plan/stage.c cuts the plan at the Loop and makes
 * the body a model of its own, whose inputs are the iteration number, the
 * condition, the carried values and the outer values the body reads.  An
 * iteration is an ordinary run of that model (planned once per set of
 * input shapes and cached, with the memory model, the sanitizer and the
 * DAG as for any plan); between iterations the condition and the carried
 * values come back to the host, and each scan output's slice is appended
 * to a host buffer.  The Loop's results then feed the next stage.
 *
 * The cost is a host round trip per iteration, which is what runtimes
 * that interpret Loop pay too; a Loop whose condition stays true (a
 * counted loop) is unrolled at plan time instead (passes/control.c).
 */
#include <stdlib.h>
#include <string.h>

#include "exec/bound.h"
#include "graph/model.h"

/* The single element of bound value b as an integer. */
static int64_t scalar_of(const bound_input *b)
{
    if (st_dtype_is_float(b->dtype)) return (int64_t)st_load_f64(b->dtype, b->data);
    return st_load_i64(b->dtype, b->data);
}

static st_status read_scalar(const st_plan *p, int v, const char *what, const char *loop, int64_t *out)
{
    bound_input b = {0};
    st_status r = st_bound_read(p, v, what, &b);
    if (r == ST_OK && st_numel(b.rank, b.dims) != 1)
        r = st_error(ST_ERR_SHAPE, "Loop '%s': %s has %lld elements, not one", loop, what,
                     (long long)st_numel(b.rank, b.dims));
    if (r == ST_OK) *out = scalar_of(&b);
    free(b.data);
    return r;
}

/* Appends slice x (one iteration's scan output k) to acc, whose rows so
 * far are `rows`; every slice must have the first one's shape. */
static st_status append_slice(bound_input *acc, const bound_input *x, int64_t rows, const char *loop, int k,
                              uint64_t limit)
{
    /* a slice of strings is a block whose pointers point into itself
     * (core/strings.h): appending its bytes would leave them pointing into
     * the slice the next iteration overwrites */
    if (x->dtype == ST_STRING)
        return st_error(ST_ERR_UNSUPPORTED, "Loop '%s': scan output %d holds strings, which a while loop does not stack",
                        loop, k);
    if (rows == 0) {
        acc->dtype = x->dtype;
        acc->rank = x->rank + 1;
        if (acc->rank > ST_MAX_RANK)
            return st_error(ST_ERR_UNSUPPORTED, "Loop '%s': scan output %d stacks to rank %d, over %d", loop, k,
                            acc->rank, ST_MAX_RANK);
        for (int d = 0; d < x->rank; d++) acc->dims[d + 1] = x->dims[d];
        acc->bytes = 0;
    } else {
        bool same = x->dtype == acc->dtype && x->rank + 1 == acc->rank;
        for (int d = 0; same && d < x->rank; d++) same = x->dims[d] == acc->dims[d + 1];
        if (!same)
            return st_error(ST_ERR_SHAPE, "Loop '%s': scan output %d changes shape at iteration %lld", loop, k,
                            (long long)rows);
    }
    if (acc->bytes + x->bytes > limit)
        return st_error(ST_ERR_NOMEM, "Loop '%s': scan output %d passes the memory limit of %llu bytes after %lld "
                        "iterations", loop, k, (unsigned long long)limit, (long long)rows);
    ST_TRY(st_bound_reserve(acc, acc->bytes + x->bytes, loop));
    if (x->bytes) memcpy((char *)acc->data + acc->bytes, x->data, x->bytes);
    acc->bytes += x->bytes;
    acc->dims[0] = rows + 1;
    acc->set = true;
    acc->uploaded = false;
    return ST_OK;
}

st_status st_loop_run(struct st_session *s, const st_plan *p, bound_input *out)
{
    const st_loop *l = p->loop;
    const st_graph *bg = l->body->g;
    int nc = l->n_carried;
    bound_input *in = calloc((size_t)bg->n_inputs + 1, sizeof *in);
    bound_input x = {0};
    if (!in) return st_error(ST_ERR_NOMEM, "out of memory running Loop '%s'", l->name);
    int64_t trips = -1, cond = 1;
    st_status r = ST_OK;
    if (l->m >= 0) r = read_scalar(p, l->m, "the trip count M", l->name, &trips);
    if (r == ST_OK && l->cond >= 0) r = read_scalar(p, l->cond, "the condition", l->name, &cond);
    if (r == ST_OK && l->m >= 0 && trips < 0) trips = 0; /* a negative trip count runs nothing */
    /* the body's inputs: carried values, then what it reads from outside */
    for (int j = 0; j < nc && r == ST_OK; j++) r = st_bound_read(p, l->init[j], bg->values[bg->inputs[2 + j]].name, &in[2 + j]);
    for (int k = 0; k < l->n_outer && r == ST_OK; k++)
        r = st_bound_read(p, l->outer[k], bg->values[bg->inputs[2 + nc + k]].name, &in[2 + nc + k]);
    uint64_t limit = st_session_memory_limit(s);
    int64_t it = 0;
    for (; r == ST_OK && cond && (trips < 0 || it < trips); it++) {
        if (it == ST_MAX_LOOP_ITERATIONS) {
            r = st_error(ST_ERR_UNSUPPORTED, "Loop '%s': more than %lld iterations (its condition never turned false)",
                         l->name, (long long)ST_MAX_LOOP_ITERATIONS);
            break;
        }
        uint64_t mark = st_session_pin_mark(s);
        r = st_bound_scalar(&in[0], ST_I64, it);
        if (r == ST_OK) r = st_bound_scalar(&in[1], ST_BOOL, cond != 0);
        const st_plan *bp = NULL;
        if (r == ST_OK) r = st_session_run_model(s, l->body, in, &bp);
        /* the iteration's results: the condition, the carried values (the
         * next iteration's inputs), one slice per scan output */
        if (r == ST_OK) r = st_bound_read(bp, bg->outputs[0], "the body's condition", &x);
        if (r == ST_OK) cond = scalar_of(&x) != 0;
        for (int j = 0; j < nc && r == ST_OK; j++) r = st_bound_read(bp, bg->outputs[1 + j], l->name, &in[2 + j]);
        for (int k = 0; k < l->n_scan && r == ST_OK; k++) {
            r = st_bound_read(bp, bg->outputs[1 + nc + k], l->name, &x);
            if (r == ST_OK) r = append_slice(&out[nc + k], &x, it, l->name, k, limit);
        }
        st_session_unpin_after(s, mark);
    }
    for (int j = 0; j < nc && r == ST_OK; j++) r = st_bound_copy(&out[j], &in[2 + j], l->name);
    /* no iteration ran: each scan output is empty, shaped as the body
     * declares its slices (the body never ran to say) */
    for (int k = 0; k < l->n_scan && r == ST_OK && it == 0; k++) {
        const st_value *bo = &bg->values[bg->outputs[1 + nc + k]];
        bool known = bo->dtype != ST_UNDEFINED && bo->rank >= 0 && bo->rank < ST_MAX_RANK;
        for (int d = 0; known && d < bo->rank; d++) known = bo->dims[d] >= 0;
        if (!known) {
            r = st_error(ST_ERR_UNSUPPORTED, "Loop '%s': no iteration ran, and the body does not declare the full shape "
                         "of scan output %d", l->name, k);
            break;
        }
        bound_input *o = &out[nc + k];
        memset(o->dims, 0, sizeof o->dims);
        for (int d = 0; d < bo->rank; d++) o->dims[d + 1] = bo->dims[d];
        o->dtype = bo->dtype;
        o->rank = bo->rank + 1;
        o->bytes = 0;
        o->set = true;
        r = st_bound_reserve(o, 0, l->name);
    }
    free(x.data);
    st_bound_free(in, bg->n_inputs);
    return r;
}
