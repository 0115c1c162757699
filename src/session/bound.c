/* bound.c — host copies of values fed to plans (bound.h). */
#include "session/bound.h"

#include <stdlib.h>
#include <string.h>

#include "core/strings.h"
#include "session/session.h"

void st_bound_free(bound_input *b, int n)
{
    if (!b) return;
    for (int i = 0; i < n; i++) {
        free(b[i].data);
        for (int k = 0; k < b[i].cap_elems; k++) free(b[i].elems[k].data);
        free(b[i].elems);
    }
    free(b);
}

st_status st_bound_reserve(bound_input *b, size_t bytes, const char *what)
{
    if (bytes + 1 <= b->cap) return ST_OK;
    void *d = realloc(b->data, bytes + 1);
    if (!d) return st_error(ST_ERR_NOMEM, "out of memory holding '%s' (%zu bytes)", what, bytes);
    b->data = d;
    b->cap = bytes + 1;
    return ST_OK;
}

static void set_shape(bound_input *b, st_dtype dt, int rank, const int64_t *dims, size_t bytes)
{
    b->set = true;
    b->uploaded = false;
    b->dtype = dt;
    b->rank = rank;
    memset(b->dims, 0, sizeof b->dims);
    if (rank > 0) memcpy(b->dims, dims, (size_t)rank * sizeof *dims);
    b->bytes = bytes;
}

st_status st_bound_read(const st_plan *p, int v, const char *what, bound_input *b)
{
    const st_pvalue *pv = &p->values[v];
    if (pv->kind == ST_PV_DEAD)
        return st_error(ST_ERR_INTERNAL, "'%s' was not computed by the stage that should pass it on", what);
    size_t n = (size_t)st_numel(pv->t.rank, pv->t.dims), bytes = n * st_dtype_size(pv->model_dtype);
    /* strings (always plan constants) go with their characters: the plan
     * that holds them may be evicted before the next one runs */
    bool str = pv->t.dtype == ST_STRING;
    ST_TRY(st_bound_reserve(b, str ? st_values_bytes(ST_STRING, n, pv->t.data) : bytes, what));
    if (str) {
        st_values_copy(ST_STRING, b->data, n, pv->t.data);
    } else if (pv->kind == ST_PV_CONST) {
        /* constants keep the dtype they were folded in */
        st_convert(pv->model_dtype, b->data, pv->t.dtype, pv->t.data, n);
    } else {
        st_tensor *t;
        ST_TRY(st_tensor_new(&pv->view, pv->model_dtype, NULL, &t));
        st_status r = st_tensor_read(t, pv->model_dtype, b->data, bytes);
        st_tensor_free(t);
        ST_TRY(r);
    }
    set_shape(b, pv->model_dtype, pv->t.rank, pv->t.dims, bytes);
    return ST_OK;
}

st_status st_bound_copy(bound_input *b, const bound_input *src, const char *what)
{
    if (src->dtype == ST_STRING) {
        /* a deep copy: src's pointers point into src's own block */
        size_t n = (size_t)st_numel(src->rank, src->dims);
        ST_TRY(st_bound_reserve(b, st_values_bytes(ST_STRING, n, src->data), what));
        st_values_copy(ST_STRING, b->data, n, src->data);
    } else {
        ST_TRY(st_bound_reserve(b, src->bytes, what));
        if (src->bytes) memcpy(b->data, src->data, src->bytes);
    }
    set_shape(b, src->dtype, src->rank, src->dims, src->bytes);
    return ST_OK;
}

st_status st_bound_scalar(bound_input *b, st_dtype dt, int64_t x)
{
    ST_TRY(st_bound_reserve(b, 8, "a loop's iteration number"));
    st_store_i64(dt, b->data, x);
    set_shape(b, dt, 0, NULL, st_dtype_size(dt));
    return ST_OK;
}
