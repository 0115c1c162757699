/*
 * k_shape.c — host side of the shape family on OpenCL (the layout copies): a view op that
 * runs as a copy (its layout cannot be a view, or it is an output the
 * planner wants materialised) and Concat's inputs not already in place.
 * Both are st_copy launches (copy.cl) on views of the operands' own
 * cl_mem at their offsets; nothing is ever given a buffer of its own.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/concat.h"

/* The op's view rule applied to the input view gives the elements to
 * copy; a reshape that the strides cannot express copies in row-major
 * order (the copy kernel walks x and y by their own shapes). */
st_status st_cl_view_copy(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0];
    for (int o = 0; o < k->n_out; o++) {
        const st_view *y = &k->views[k->n_in + o];
        if (!y->storage) continue; /* omitted output */
        st_view res;
        if (k->node->op->view && k->node->op->view(k->state, o, x, &res)) ST_TRY(st_cl_copy_view(c, y, &res, NULL, false));
        else ST_TRY(st_cl_copy_view(c, y, x, NULL, false));
    }
    return ST_OK;
}

/* Each input not in place is copied into its slot of the output; the
 * copies are independent (disjoint slots), so they are not chained. */
st_status st_cl_concat(const st_kctx *k)
{
    const st_concat_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *y = &k->views[k->n_in];
    int64_t start = 0;
    for (int i = 0; i < k->n_in; i++) {
        const st_view *x = &k->views[i];
        int64_t len = x->sizes[s->axis];
        if (!(k->skip && k->skip[i]) && len > 0 && st_view_numel(x) > 0) {
            st_view slot = *y;
            slot.sizes[s->axis] = len;
            slot.offset = y->offset + start * y->strides[s->axis] * (int64_t)st_dtype_size(y->dtype);
            ST_TRY(st_cl_copy_view(c, &slot, x, NULL, false));
        }
        start += len;
    }
    return ST_OK;
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

#define VIEW_COPY(name) {name, "", ST_DT_ALL, st_cl_view_copy, st_cl_accepts_fp64, NULL, NULL}
const st_kernel st_cl_k_shape[] = {
    VIEW_COPY("Reshape"), VIEW_COPY("Flatten"), VIEW_COPY("Squeeze"), VIEW_COPY("Unsqueeze"),
    VIEW_COPY("Identity"), VIEW_COPY("Transpose"), VIEW_COPY("Slice"), VIEW_COPY("Split"),
    {"Concat", "", ST_DT_ALL, st_cl_concat, st_cl_accepts_fp64, NULL, NULL},
    {NULL}
};
