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

/* Same layout as st_pad_p in pad.cl. */
typedef struct st_cl_pad_p {
    cl_long mode, has_value;
    cl_long begin[8], end[8];
    cl_ulong value_bits;
} st_cl_pad_p;
_Static_assert(sizeof(st_cl_pad_p) == 19 * 8, "st_cl_pad_p has no padding");

/* Input 2 (opset >= 11) holds the constant when it is given. */
static bool value_given(const st_pad_state *s, int n_in, const st_view *views)
{
    return s->value_input && n_in > 2 && views[2].rank >= 0;
}

st_status st_cl_pad(const st_kctx *k)
{
    const st_pad_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    size_t global = (size_t)st_view_numel(y);
    if (!global) return ST_OK;
    if (y->rank == 0) return st_cl_copy_view(c, y, x, NULL, true);
    st_cl_pad_p p;
    memset(&p, 0, sizeof p);
    p.mode = s->mode;
    for (int a = 0; a < y->rank; a++) {
        p.begin[a] = s->begin[a];
        p.end[a] = s->end[a];
    }
    const st_view *v = x; /* a placeholder argument when the value is not an operand */
    if (value_given(s, k->n_in, k->views) && k->views[2].storage) {
        v = &k->views[2];
        p.has_value = 1;
    } else {
        unsigned char val[16] = {0};
        st_store_f64(y->dtype, val, s->value); /* as the CPU kernel: 0 unless the attribute set it */
        memcpy(&p.value_bits, val, 8);
    }
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

static bool pad_accepts(const st_knode *n, char *why, size_t len)
{
    const st_pad_state *s = n->state;
    const st_view *x = &n->views[0], *y = &n->views[n->n_in];
    if (y->rank > 8) return st_kernel_refuse(why, len, "Pad of rank %d", y->rank);
    if (st_dtype_size(y->dtype) > 8 || y->dtype == ST_STRING)
        return st_kernel_refuse(why, len, "Pad of %s data", st_dtype_name(y->dtype));
    if (x->dtype != y->dtype)
        return st_kernel_refuse(why, len, "Pad from %s to %s", st_dtype_name(x->dtype), st_dtype_name(y->dtype));
    if (value_given(s, n->n_in, n->views) && n->views[2].dtype != y->dtype)
        return st_kernel_refuse(why, len, "Pad with a %s constant for %s data", st_dtype_name(n->views[2].dtype),
                                st_dtype_name(y->dtype));
    return st_cl_accepts_fp64(n, why, len);
}

const st_kernel st_cl_k_pad[] = {
    {"Pad", "", ST_DT_ALL, st_cl_pad, pad_accepts, NULL, NULL},
    {"CenterCropPad", "", ST_DT_ALL, st_cl_pad, pad_accepts, NULL, NULL},
    {NULL}
};
