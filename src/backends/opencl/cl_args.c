/*
 * cl_args.c — views as kernel arguments: the strided descriptor every
 * kernel takes (st_cl_td, common.cl's st_td), broadcasting and coalescing.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"

st_status st_cl_td_of(const st_view *v, st_cl_td *td)
{
    memset(td, 0, sizeof *td);
    size_t es = st_dtype_size(v->dtype);
    if (es == 0 || v->offset % (int64_t)es)
        return st_error(ST_ERR_INTERNAL, "opencl: a %s view at byte offset %lld is not element-aligned", st_dtype_name(v->dtype),
                        (long long)v->offset);
    td->off = v->offset / (int64_t)es;
    td->dt = v->dtype;
    td->rank = v->rank;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        td->n[d] = d < v->rank ? v->sizes[d] : 1;
        td->s[d] = d < v->rank ? v->strides[d] : 0;
    }
    return ST_OK;
}

st_status st_cl_td_broadcast(const st_view *x, const st_view *y, st_cl_td *td)
{
    ST_TRY(st_cl_td_of(x, td));
    int off = y->rank - x->rank;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        int k = d - off;
        td->n[d] = d < y->rank ? y->sizes[d] : 1;
        td->s[d] = d < y->rank && k >= 0 && x->sizes[k] != 1 ? x->strides[k] : 0;
    }
    td->rank = y->rank;
    return ST_OK;
}

void st_cl_td_coalesce(st_cl_td *tds, int n)
{
    int rank = (int)tds[0].rank, out = 0;
    int64_t sizes[ST_MAX_RANK], strides[8][ST_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (tds[0].n[d] == 1) continue; /* a unit dim moves nothing */
        bool merge = out > 0;
        for (int k = 0; k < n && merge; k++) merge = strides[k][out - 1] == tds[k].s[d] * tds[0].n[d];
        if (merge) {
            sizes[out - 1] *= tds[0].n[d];
            for (int k = 0; k < n; k++) strides[k][out - 1] = tds[k].s[d];
        } else {
            sizes[out] = tds[0].n[d];
            for (int k = 0; k < n; k++) strides[k][out] = tds[k].s[d];
            out++;
        }
    }
    bool empty = false;
    for (int d = 0; d < rank; d++) empty |= tds[0].n[d] == 0;
    if (empty) return; /* nothing runs; keep the shape as it is */
    for (int k = 0; k < n; k++) {
        tds[k].rank = out;
        for (int d = 0; d < ST_MAX_RANK; d++) {
            tds[k].n[d] = d < out ? sizes[d] : 1;
            tds[k].s[d] = d < out ? strides[k][d] : 0;
        }
    }
}

void st_cl_td_walk(const st_lower_ew *w, st_cl_td *tds)
{
    for (int k = 0; k < w->nops; k++) {
        tds[k].rank = w->rank;
        for (int d = 0; d < ST_MAX_RANK; d++) {
            tds[k].n[d] = d < w->rank ? w->sizes[d] : 1;
            tds[k].s[d] = d < w->rank ? w->strides[k][d] : 0;
        }
    }
}

void st_cl_grid(st_cl_td *tds, int n, size_t global[2])
{
    if (tds[0].rank == 0)
        for (int k = 0; k < n; k++) {
            tds[k].rank = 1;
            tds[k].n[0] = 1;
            tds[k].s[0] = 0;
        }
    int64_t inner = tds[0].n[tds[0].rank - 1], total = 1;
    for (int d = 0; d < tds[0].rank; d++) total *= tds[0].n[d];
    global[0] = (size_t)inner;
    global[1] = inner ? (size_t)(total / inner) : 0;
}

bool st_cl_accepts_fp64(const st_knode *n, char *why, size_t len)
{
    const st_cl_device *d = n->device;
    if (d && d->fp64) return true;
    for (int i = 0; i < n->n_in + n->n_out; i++)
        if (n->views[i].rank >= 0 && n->views[i].dtype == ST_F64)
            return st_kernel_refuse(why, len, "float64 needs cl_khr_fp64, which '%s' lacks", d ? d->name : "the device");
    return true;
}

bool st_cl_accepts_f32_family(const st_knode *n, char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        st_dtype t = n->views[i].dtype;
        if (n->views[i].rank >= 0 && t != ST_F32 && t != ST_F16 && t != ST_BF16)
            return st_kernel_refuse(why, len, "%s of %s data is not implemented on OpenCL (f32, f16, bf16 are)",
                                    n->op->name, st_dtype_name(t));
    }
    return true;
}
