/*
 * k_pad.c — host side of Pad and CenterCropPad on OpenCL (pad.cl).  The
 * shape rule has already turned the pads (attribute or input) into
 * per-axis begin/end counts (ops/index.h); the kernel maps every output
 * element to its source, so a model's Pad no longer sends its tensor to
 * the CPU and back (M-LSD's three zero pads did, in a plan otherwise on
 * the device).
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/index.h"
#include "ops/lower_index.h"

/* Same layout as st_pad_p in pad.cl. */
typedef struct st_cl_pad_p {
    cl_long mode, has_value;
    cl_long begin[8], end[8];
    cl_ulong value_bits;
} st_cl_pad_p;
_Static_assert(sizeof(st_cl_pad_p) == 19 * 8, "st_cl_pad_p has no padding");

st_status st_cl_pad(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    st_lower_pad lp;
    st_lower_pad_of(k, &lp);
    size_t global = (size_t)lp.total;
    if (!global) return ST_OK;
    if (lp.rank == 0) return st_cl_copy_view(c, y, x, NULL, true);
    st_cl_pad_p p;
    memset(&p, 0, sizeof p);
    p.mode = lp.mode;
    for (int a = 0; a < lp.rank; a++) {
        p.begin[a] = lp.begin[a];
        p.end[a] = lp.end[a];
    }
    /* x is a placeholder argument when the value is not an operand */
    const st_view *v = lp.value_operand >= 0 ? &k->views[lp.value_operand] : x;
    p.has_value = lp.value_operand >= 0;
    p.value_bits = lp.value_bits;
    st_cl_td yd, xd, vd;
    ST_TRY(st_cl_td_of(y, &yd));
    ST_TRY(st_cl_td_of(x, &xd));
    ST_TRY(st_cl_td_of(v, &vd));
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_pad, &kern));
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), vm = st_cl_mem(v);
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yd), ST_CLA(xm), ST_CLA(xd), ST_CLA(vm), ST_CLA(vd), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_pad, 7, args));
    size_t inner = (size_t)y->sizes[y->rank - 1];
    size_t grid[2] = {inner, global / inner};
    return st_cl_run(c, kern, ST_CLK_pad, 2, grid, NULL, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

/* The dtype rules are ops/lower_index.h's, shared with CUDA. */
static bool pad_accepts(const st_knode *n, char *why, size_t len)
{
    const st_view *y = &n->views[n->n_in];
    if (y->rank > 8) return st_kernel_refuse(why, len, "Pad of rank %d", y->rank);
    if (st_dtype_size(y->dtype) > 8 || y->dtype == ST_STRING)
        return st_kernel_refuse(why, len, "Pad of %s data", st_dtype_name(y->dtype));
    if (!st_lidx_accepts(n, "OpenCL", ST_MAX_RANK, why, len)) return false;
    return st_cl_accepts_fp64(n, why, len);
}

const st_kernel st_cl_k_pad[] = {
    {"Pad", "", ST_DT_ALL, st_cl_pad, pad_accepts, NULL, NULL},
    {"CenterCropPad", "", ST_DT_ALL, st_cl_pad, pad_accepts, NULL, NULL},
    {NULL}
};
