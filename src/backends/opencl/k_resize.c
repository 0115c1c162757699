/*
 * k_resize.c — host side of Resize/Upsample on OpenCL (resize.cl).  The
 * shape rule's tap tables are copied into one read-only buffer the first
 * time the command runs and kept in the command's slot (they depend on
 * the plan only); every launch reads them.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/resize.h"

/* Same layouts as st_tap and st_resize_p in resize.cl. */
typedef struct st_cl_tap {
    cl_long idx;
    cl_ulong wd_bits;
    cl_float wf;
    cl_int outside;
} st_cl_tap;
_Static_assert(sizeof(st_cl_tap) == 24, "st_cl_tap has no padding");

typedef struct st_cl_resize_p {
    cl_long rank, nearest;
    cl_long ntaps[8], first[8];
    cl_ulong ext_bits;
    cl_float ext_f;
    cl_int pad;
} st_cl_resize_p;
_Static_assert(sizeof(st_cl_resize_p) == 19 * 8 + 8, "st_cl_resize_p has no padding");

static st_status upload_taps(st_cl_ctx *c, const st_resize_state *s)
{
    size_t n = s->n_taps > 0 ? (size_t)s->n_taps : 1;
    st_cl_tap *t = calloc(n, sizeof *t);
    if (!t) return st_error(ST_ERR_NOMEM, "out of memory copying Resize's taps");
    for (int64_t i = 0; i < s->n_taps; i++) {
        t[i].idx = s->taps[i].idx;
        memcpy(&t[i].wd_bits, &s->taps[i].wd, 8);
        t[i].wf = s->taps[i].wf;
        t[i].outside = s->taps[i].outside;
    }
    cl_int err;
    cl_mem m = clCreateBuffer(c->dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof *t, t, &err);
    free(t);
    ST_TRY(st_cl_check(err, "clCreateBuffer (Resize taps)"));
    c->slot->data = m;
    c->slot->release = st_cl_release_mem;
    return ST_OK;
}

st_status st_cl_resize(const st_kctx *k)
{
    const st_resize_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    size_t global = (size_t)st_view_numel(y);
    if (!global) return ST_OK;
    if (s->rank == 0) return st_cl_copy_view(c, y, x, NULL, true);
    if (!c->slot->data) ST_TRY(upload_taps(c, s));
    st_cl_resize_p p;
    memset(&p, 0, sizeof p);
    p.rank = s->rank;
    p.nearest = s->nearest;
    for (int a = 0; a < s->rank; a++) {
        p.ntaps[a] = s->ntaps[a];
        p.first[a] = s->first[a];
    }
    unsigned char ext[16] = {0};
    st_store_f64(y->dtype, ext, s->extrapolation);
    memcpy(&p.ext_bits, ext, 8);
    p.ext_f = (float)s->extrapolation;
    st_cl_td yd, xd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_resize, &kern));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), tm = (cl_mem)c->slot->data;
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(tm), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_resize, 6, args));
    size_t grid[2] = {(size_t)y->sizes[s->rank - 1], global / (size_t)y->sizes[s->rank - 1]};
    return st_cl_run(c, kern, ST_CLK_resize, 2, grid, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

static bool resize_accepts(const st_knode *n, char *why, size_t len)
{
    const st_resize_state *s = n->state;
    const st_view *x = &n->views[0];
    if (!s->nearest && !st_dtype_is_float(x->dtype))
        return st_kernel_refuse(why, len, "Resize: interpolating %s data", st_dtype_name(x->dtype));
    if (s->rank > 8) return st_kernel_refuse(why, len, "Resize of rank %d", s->rank);
    if (st_dtype_size(x->dtype) > 8) return st_kernel_refuse(why, len, "Resize of %s data", st_dtype_name(x->dtype));
    return st_cl_accepts_fp64(n, why, len);
}

const st_kernel st_cl_k_resize[] = {
    {"Resize", "", ST_DT_ALL, st_cl_resize, resize_accepts, NULL, NULL},
    {"Upsample", "", ST_DT_ALL, st_cl_resize, resize_accepts, NULL, NULL},
    {NULL}
};
