/*
 * k_shape.c — the shape family on Vulkan (copy.comp): a view op that runs
 * as a copy (its layout cannot be a view, or the planner wants it
 * materialised) and Concat's inputs not already in place.  Bits are
 * copied in 4-byte or 2-byte elements (8-byte ones as two 4-byte halves,
 * an extra innermost dim), each side walked by its own shape and strides,
 * always through views of the operands' own buffers at their offsets.
 */
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "ops/concat.h"

/* v's descriptor in units of the copy's element (4 or 2 bytes). */
static void copy_td(const st_view *v, int32_t elem, int unit, int32_t *td)
{
    st_vk_td(v, elem, td);
    int per = (int)st_dtype_size(v->dtype) / unit;
    if (per == 2) { /* an 8-byte element: two halves, innermost */
        td[0] = elem * 2;
        int r = v->rank;
        for (int d = 0; d < r; d++) td[10 + d] *= 2;
        td[2 + r] = 2;
        td[10 + r] = 1;
        td[1] = r + 1;
    }
}

/* y = x bit for bit, both walked in row-major order by their own shapes. */
st_status st_vk_copy_view(st_vk_ctx *c, const st_view *y, const st_view *x)
{
    int64_t n = st_view_numel(y);
    if (n == 0) return ST_OK;
    size_t es = st_dtype_size(y->dtype);
    int unit = es == 2 ? 2 : 4;
    st_vk_bind bind[2];
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    ST_TRY(st_vk_bind_view(c, x, false, &bind[1]));
    int32_t p[1 + 2 * ST_VK_TD];
    p[0] = (int32_t)(n * (int64_t)(es / unit));
    copy_td(y, bind[0].elem, unit, p + 1);
    copy_td(x, bind[1].elem, unit, p + 1 + ST_VK_TD);
    bool same = p[2] == p[1 + ST_VK_TD + 1];
    for (int d = 0; d < p[2] && same; d++) same = p[3 + d] == p[1 + ST_VK_TD + 2 + d];
    if (same) st_vk_td_coalesce((int32_t *const[]){p + 1, p + 1 + ST_VK_TD}, 2);
    uint32_t groups[3];
    st_vk_grid1(c, p[0], 256, groups);
    return st_vk_dispatch(c, unit == 2 ? ST_VKS_copy16 : ST_VKS_copy32, p, (int)(sizeof p / sizeof *p), 2, bind, groups);
}

/* The op's view rule applied to the input view gives the elements to
 * copy; a reshape that strides cannot express copies in row-major order. */
static st_status vk_view_copy(const st_kctx *k)
{
    const st_view *x = &k->views[0];
    for (int o = 0; o < k->n_out; o++) {
        const st_view *y = &k->views[k->n_in + o];
        if (!y->storage) continue; /* omitted output */
        st_view res;
        if (k->node->op->view && k->node->op->view(k->state, o, x, &res)) ST_TRY(st_vk_copy_view(k->dev, y, &res));
        else ST_TRY(st_vk_copy_view(k->dev, y, x));
    }
    return ST_OK;
}

/* Each input not in place is copied into its slot of the output: the
 * slots are disjoint, so the copies get no barrier between them (the
 * builder sees their byte ranges), unless a strided slot's extent
 * overlaps another's. */
static st_status vk_concat(const st_kctx *k)
{
    const st_concat_state *s = k->state;
    const st_view *y = &k->views[k->n_in];
    int64_t start = 0;
    for (int i = 0; i < k->n_in; i++) {
        const st_view *x = &k->views[i];
        int64_t len = x->sizes[s->axis];
        if (!(k->skip && k->skip[i]) && len > 0 && st_view_numel(x) > 0) {
            st_view slot = *y;
            slot.sizes[s->axis] = len;
            slot.offset = y->offset + start * y->strides[s->axis] * (int64_t)st_dtype_size(y->dtype);
            ST_TRY(st_vk_copy_view(k->dev, &slot, x));
        }
        start += len;
    }
    return ST_OK;
}

/* Bits of 2, 4 or 8 bytes (2 only with 16-bit storage), one dtype. */
static bool copy_accepts(const st_knode *n, char *why, size_t len)
{
    const st_vk_device *d = n->device;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        if (strcmp(n->op->name, "Concat") != 0 && i > 0 && i < n->n_in) continue; /* shape inputs (Reshape's, Slice's) */
        size_t es = st_dtype_size(v->dtype);
        if (v->dtype == ST_STRING || (es != 2 && es != 4 && es != 8))
            return st_kernel_refuse(why, len, "%s of %s data runs on the CPU", n->op->name, st_dtype_name(v->dtype));
        if (es == 2 && d && !d->f16) return st_kernel_refuse(why, len, "2-byte elements need 16-bit storage");
        if (es == 8 && v->rank >= ST_MAX_RANK) return st_kernel_refuse(why, len, "8-byte elements of rank %d", v->rank);
        if (v->dtype != n->views[0].dtype) return st_kernel_refuse(why, len, "mixed dtypes");
        if (!st_vk_fits(v) || st_view_numel(v) * (int64_t)(es / 2) > INT32_MAX)
            return st_kernel_refuse(why, len, "an operand too large for 32-bit indexing");
    }
    return true;
}

/* ---- the kernel table entries of this file (vulkan/table.c) ---- */

#define COPY_DT (ST_DT_ALL & ~(ST_DT(ST_BOOL) | ST_DT(ST_I8) | ST_DT(ST_U8) | ST_DT(ST_STRING)))
#define VIEW_COPY(name) {name, "", COPY_DT, vk_view_copy, copy_accepts, NULL, NULL}
const st_kernel st_vk_k_shape[] = {
    VIEW_COPY("Reshape"), VIEW_COPY("Flatten"), VIEW_COPY("Squeeze"), VIEW_COPY("Unsqueeze"),
    VIEW_COPY("Identity"), VIEW_COPY("Transpose"), VIEW_COPY("Slice"), VIEW_COPY("Split"),
    {"Concat", "", COPY_DT, vk_concat, copy_accepts, NULL, NULL},
    {NULL}
};
