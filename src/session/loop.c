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
 *
 * A device that can repeat a DAG until a value it computes says stop
 * (CUDA's conditional WHILE node, st_exec_vt.loop) runs the rest of the
 * loop after the first iteration as one graph, when that iteration shows
 * it can: the body is one plan of the device alone, the iterations keep
 * its input shapes (so the same plan and slots serve them all, and the
 * plan did not depend on the data that changes), and there are no scan
 * outputs to stack.  Each device iteration copies the carried outputs into
 * the inputs' slots before the body runs (through scratch where one
 * overlaps another's slot), so it reads what the previous iteration left
 * and the body's DAG, hazards and sanitizer checks are those of any run
 * of its plan; the host waits once for the whole loop and reads the
 * carried values from the last iteration's outputs.  Otherwise, or with
 * STRATA_CUDA_COND=0, the loop stays here.  STRATA_LOOP_VERBOSE=1 prints
 * which way each Loop ran; inspect --plan says it for the last one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/backend.h"
#include "session/bound.h"
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

/* Whether planned value pv has bytes in a slot (a buffer a command or the
 * host writes), in a contiguous layout. */
static bool in_slot(const st_pvalue *pv)
{
    return (pv->kind == ST_PV_INPUT || pv->kind == ST_PV_ROOT || pv->kind == ST_PV_VIEW) && pv->view.storage &&
           st_view_is_contiguous(&pv->view);
}

static bool same_tensor(const st_pvalue *a, const st_pvalue *b)
{
    if (a->t.dtype != b->t.dtype || a->t.rank != b->t.rank) return false;
    for (int d = 0; d < a->t.rank; d++)
        if (a->t.dims[d] != b->t.dims[d]) return false;
    return true;
}

/* The rest of loop l on the device, after iteration it of body plan bp
 * ran: spec's copies (from, to: room for n_carried + 1), or false with
 * why. */
static bool device_spec(const st_loop *l, const st_plan *bp, int64_t it, int64_t trips, st_view *from, st_view *to,
                        st_exec_loop *spec, char *why, size_t n)
{
    const st_graph *bg = l->body->g;
    int nc = l->n_carried;
    if (l->n_scan) return snprintf(why, n, "it has scan outputs, which grow each iteration"), false;
    if (bp->model != l->body || bp->loop)
        return snprintf(why, n, "its body runs in stages (it waits for data it computes)"), false;
    if (bp->n_inputs != bg->n_inputs) return snprintf(why, n, "its body's inputs are not plain tensors"), false;
    /* what changes between iterations must not have been planned on */
    for (int i = 0; i < 2 + nc; i++)
        if (bp->value_inputs[i] || bp->in_elems[i] != ST_IN_TENSOR)
            return snprintf(why, n, "its body's plan depends on the data of '%s'", bg->values[bg->inputs[i]].name), false;
    const st_pvalue *cond = &bp->values[bg->outputs[0]], *cin = &bp->values[bg->inputs[1]],
                    *iter = &bp->values[bg->inputs[0]];
    if (!in_slot(cond) || cond->t.dtype != ST_BOOL || st_numel(cond->t.rank, cond->t.dims) != 1)
        return snprintf(why, n, "its condition is not one bool in a slot"), false;
    if (iter->kind != ST_PV_DEAD && (!in_slot(iter) || (iter->t.dtype != ST_I64 && iter->t.dtype != ST_I32)))
        return snprintf(why, n, "its iteration number is planned as %s", st_dtype_name(iter->t.dtype)), false;
    int k = 0;
    if (cin->kind != ST_PV_DEAD) {
        if (!in_slot(cin) || !same_tensor(cin, cond)) return snprintf(why, n, "its condition input has no slot"), false;
        from[k] = cond->view;
        to[k++] = cin->view;
    }
    for (int j = 0; j < nc; j++) {
        const st_pvalue *o = &bp->values[bg->outputs[1 + j]], *i = &bp->values[bg->inputs[2 + j]];
        const char *name = bg->values[bg->inputs[2 + j]].name;
        if (!in_slot(o)) return snprintf(why, n, "carried value '%s' comes out of no slot (a constant?)", name), false;
        if (i->kind == ST_PV_DEAD) continue; /* the body does not read it: its output is the value */
        if (!in_slot(i)) return snprintf(why, n, "carried value '%s' has no input slot", name), false;
        if (!same_tensor(o, i)) return snprintf(why, n, "carried value '%s' changes shape or type", name), false;
        from[k] = o->view;
        to[k++] = i->view;
    }
    /* a source that overlaps another copy's destination (a value passed on
     * unchanged is a view of its input's slot) must be read before that
     * copy writes: the executor then copies every source aside first */
    bool staged = false;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            int64_t alo, ahi, blo, bhi;
            st_view_extent(&from[a], &alo, &ahi);
            st_view_extent(&to[b], &blo, &bhi);
            bool same = a == b && alo == blo && from[a].storage == to[b].storage;
            if (!same && from[a].storage == to[b].storage && alo < bhi && blo < ahi) staged = true;
        }
    *spec = (st_exec_loop){0};
    spec->name = l->name;
    spec->n_copy = k;
    spec->from = from;
    spec->to = to;
    spec->iter = iter->kind == ST_PV_DEAD ? NULL : &iter->view;
    spec->cond = &cond->view;
    spec->next = it + 1;
    spec->end = trips < 0 ? INT64_MAX : trips;
    spec->max = ST_MAX_LOOP_ITERATIONS;
    spec->staged = staged;
    spec->ran = it + 1;
    return true;
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
    /* after the first iteration, the rest may run on the device */
    st_view *from = malloc(((size_t)nc + 1) * sizeof *from), *to = malloc(((size_t)nc + 1) * sizeof *to);
    if (!from || !to) r = st_error(ST_ERR_NOMEM, "out of memory running Loop '%s'", l->name);
    bool on_device = false, staged = false;
    const char *how = "";
    int64_t waits = 0;
    char why[400] = "";
    /* the run this loop belongs to: a cancel or its deadline ends the loop
     * between iterations, where nothing of it is pending (the body's
     * executor also stops between commands, but an iteration whose
     * commands have all started would otherwise lead to the next) */
    const st_run_ref run = st_session_run_ref(s);
    int64_t it = 0;
    for (; r == ST_OK && cond && (trips < 0 || it < trips); it++) {
        if (it == ST_MAX_LOOP_ITERATIONS) {
            r = st_error(ST_ERR_UNSUPPORTED, "Loop '%s': more than %lld iterations (its condition never turned false)",
                         l->name, (long long)ST_MAX_LOOP_ITERATIONS);
            break;
        }
        char where[200];
        snprintf(where, sizeof where, "before iteration %lld of Loop '%.120s'", (long long)it, l->name);
        r = st_run_check_at(&run, where);
        if (r != ST_OK) break;
        uint64_t mark = st_session_pin_mark(s);
        r = st_bound_scalar(&in[0], ST_I64, it);
        if (r == ST_OK) r = st_bound_scalar(&in[1], ST_BOOL, cond != 0);
        const st_plan *bp = NULL;
        if (r == ST_OK) r = st_session_run_model(s, l->body, in, &bp);
        if (r == ST_OK) waits++;
        /* the iteration's results: the condition, the carried values (the
         * next iteration's inputs), one slice per scan output */
        if (r == ST_OK) r = st_bound_read(bp, bg->outputs[0], "the body's condition", &x);
        if (r == ST_OK) cond = scalar_of(&x) != 0;
        for (int j = 0; j < nc && r == ST_OK; j++) r = st_bound_read(bp, bg->outputs[1 + j], l->name, &in[2 + j]);
        for (int k = 0; k < l->n_scan && r == ST_OK; k++) {
            r = st_bound_read(bp, bg->outputs[1 + nc + k], l->name, &x);
            if (r == ST_OK) r = append_slice(&out[nc + k], &x, it, l->name, k, limit);
        }
        st_exec_loop spec;
        if (r == ST_OK && it == 0 && cond && (trips < 0 || it + 1 < trips) &&
            device_spec(l, bp, it, trips, from, to, &spec, why, sizeof why)) {
            r = st_session_loop_device(s, bp, &spec);
            if (r == ST_ERR_UNSUPPORTED) { /* nothing ran: the host goes on */
                const char *msg = st_last_error(), *at = strstr(msg, "stays on the host: ");
                snprintf(why, sizeof why, "%s", at ? at + strlen("stays on the host: ") : msg);
                r = ST_OK;
            } else {
                on_device = r == ST_OK;
                how = spec.how ? spec.how : "on the device";
                staged = spec.staged;
                waits++;
                it = spec.ran - 1; /* the for's it++ makes it the count */
                cond = 0;
                if (r == ST_OK && spec.over)
                    r = st_error(ST_ERR_UNSUPPORTED, "Loop '%s': more than %lld iterations (its condition never turned "
                                 "false)", l->name, (long long)ST_MAX_LOOP_ITERATIONS);
                /* the carried values are the last iteration's outputs */
                for (int j = 0; j < nc && r == ST_OK; j++)
                    r = st_bound_read(bp, bg->outputs[1 + j], l->name, &in[2 + j]);
            }
        }
        st_session_unpin_after(s, mark);
    }
    if (r == ST_OK) {
        char note[600];
        if (on_device)
            snprintf(note, sizeof note, "Loop '%.120s': %lld iterations: 1 on the host, then %lld %s%s; the host waited "
                     "%lld times", l->name, (long long)it, (long long)(it - 1), how,
                     staged ? ", the carried values copied through scratch" : "", (long long)waits);
        else
            snprintf(note, sizeof note, "Loop '%.120s': %lld iterations on the host, one at a time; the host waited "
                     "%lld times%s%s", l->name, (long long)it, (long long)waits, why[0] ? " (" : "",
                     why[0] ? why : "");
        if (!on_device && why[0]) strcat(note, ")");
        st_session_note_loop(s, note);
        const char *v = getenv("STRATA_LOOP_VERBOSE");
        if (v && *v && strcmp(v, "0") != 0) fprintf(stderr, "strata: %s\n", note);
    }
    free(from);
    free(to);
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
