/*
 * k_sample.c — host side of GridSample (2-D) on OpenCL (sample.cl).
 */
#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/misc.h"

/* Same layout as st_gs_p in sample.cl. */
typedef struct st_cl_gs_p {
    cl_long mode, padding, align;
} st_cl_gs_p;

static st_status cl_gridsample(const st_kctx *k)
{
    const st_gridsample_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *g = &k->views[1], *y = &k->views[k->n_in];
    int64_t n = st_view_numel(y);
    if (n == 0) return ST_OK;
    st_cl_td yd, xd, gd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    ST_TRY(st_cl_td_of(g, &gd));
    st_cl_gs_p p = {s->mode, s->padding, s->align_corners};
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), gm = st_cl_mem(g);
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_gridsample, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(gm), ST_CLA(gd), ST_CLA(p)};
    ST_TRY(st_cl_set_args(kern, ST_CLK_gridsample, 7, args));
    size_t global = (size_t)n;
    return st_cl_run(c, kern, ST_CLK_gridsample, 1, &global, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

static bool gridsample_accepts(const st_knode *n, char *why, size_t len)
{
    if (n->views[0].rank != 4) return st_kernel_refuse(why, len, "GridSample over %d spatial dims", n->views[0].rank - 2);
    return st_cl_accepts_f32_family(n, why, len);
}

const st_kernel st_cl_k_sample[] = {
    {"GridSample", "", ST_DT_FLOATS, cl_gridsample, gridsample_accepts, NULL, NULL},
    {NULL}
};
