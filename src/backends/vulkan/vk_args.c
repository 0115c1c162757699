/*
 * vk_args.c — turning views into the shaders' parameters (st_td, 18 ints:
 * element offset, rank, sizes[8], strides[8]), and the accepts helpers
 * the kernel tables share.
 *
 * The shaders index with 32-bit ints (GLSL's int; 64-bit integers are an
 * optional feature), so a node whose element counts or strides do not fit
 * is refused at plan time and runs on the CPU.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"
#include "core/status.h"

bool st_vk_fits(const st_view *v)
{
    if (v->rank < 0) return true;
    if (v->rank > ST_MAX_RANK) return false;
    int64_t n = st_view_numel(v);
    if (n > INT32_MAX) return false;
    for (int d = 0; d < v->rank; d++)
        if (v->strides[d] > INT32_MAX || v->strides[d] < -INT32_MAX) return false;
    int64_t lo, hi;
    st_view_extent(v, &lo, &hi);
    return (hi - lo) / (int64_t)(st_dtype_size(v->dtype) ? st_dtype_size(v->dtype) : 1) < INT32_MAX;
}

st_status st_vk_bind_yx(const st_kctx *k, st_vk_bind bind[2], int64_t *n)
{
    const st_vk_ctx *c = k->dev;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    *n = st_view_numel(y);
    if (*n == 0) return ST_OK;
    ST_TRY(st_vk_bind_view(c, y, true, &bind[0]));
    return st_vk_bind_view(c, x, false, &bind[1]);
}

st_status st_vk_td(const st_view *v, int32_t elem, int32_t *td)
{
    memset(td, 0, ST_VK_TD * sizeof *td);
    td[0] = elem;
    td[1] = v->rank;
    for (int d = 0; d < v->rank; d++) {
        td[2 + d] = (int32_t)v->sizes[d];
        td[10 + d] = (int32_t)v->strides[d];
    }
    return ST_OK;
}

st_status st_vk_td_broadcast(const st_view *x, const st_view *y, int32_t elem, int32_t *td)
{
    memset(td, 0, ST_VK_TD * sizeof *td);
    if (x->rank > y->rank) return st_error(ST_ERR_INTERNAL, "vulkan: broadcast of rank %d into rank %d", x->rank, y->rank);
    td[0] = elem;
    td[1] = y->rank;
    int lead = y->rank - x->rank;
    for (int d = 0; d < y->rank; d++) {
        td[2 + d] = (int32_t)y->sizes[d];
        int xd = d - lead;
        td[10 + d] = xd >= 0 && x->sizes[xd] != 1 ? (int32_t)x->strides[xd] : 0;
    }
    return ST_OK;
}

void st_vk_td_coalesce(int32_t *const *tds, int n)
{
    int32_t *t0 = tds[0];
    int rank = t0[1], out = 0;
    int32_t sz[ST_MAX_RANK], st[8][ST_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (t0[2 + d] == 1) continue; /* a unit dim steps nowhere */
        bool merge = out > 0;
        for (int k = 0; k < n && merge; k++) merge = st[k][out - 1] == tds[k][10 + d] * t0[2 + d];
        if (merge) {
            sz[out - 1] *= t0[2 + d];
            for (int k = 0; k < n; k++) st[k][out - 1] = tds[k][10 + d];
        } else {
            sz[out] = t0[2 + d];
            for (int k = 0; k < n; k++) st[k][out] = tds[k][10 + d];
            out++;
        }
    }
    if (out == 0) { /* a single element */
        sz[0] = 1;
        for (int k = 0; k < n; k++) st[k][0] = 0;
        out = 1;
    }
    for (int k = 0; k < n; k++) {
        tds[k][1] = out;
        for (int d = 0; d < ST_MAX_RANK; d++) {
            tds[k][2 + d] = d < out ? sz[d] : 0;
            tds[k][10 + d] = d < out ? st[k][d] : 0;
        }
    }
}

void st_vk_td_walk(const st_view *y, int n_in, const st_view *const *in, const int32_t *elem, int32_t *const *tds)
{
    st_lower_ew w;
    st_lower_ew_views(&w, y, n_in, in);
    for (int k = 0; k < w.nops; k++) {
        int32_t *td = tds[k];
        memset(td, 0, ST_VK_TD * sizeof *td);
        td[0] = elem[k];
        td[1] = w.rank;
        /* st_vk_fits held every size and stride to int32; a merged dim
         * is at most the element count, a stride one of the operand's */
        for (int d = 0; d < w.rank; d++) {
            td[2 + d] = (int32_t)w.sizes[d];
            td[10 + d] = (int32_t)w.strides[k][d];
        }
    }
}

bool st_vk_accepts_float(const st_knode *n, char *why, size_t len)
{
    const st_vk_device *d = n->device;
    st_dtype t = ST_UNDEFINED;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        if (v->dtype != ST_F32 && v->dtype != ST_F16)
            return st_kernel_refuse(why, len, "%s of %s data runs on the CPU (the Vulkan shaders take f32 and f16)",
                                    n->op->name, st_dtype_name(v->dtype));
        if (v->dtype == ST_F16 && d && !d->f16)
            return st_kernel_refuse(why, len, "f16 needs shaderFloat16 and 16-bit storage, which '%s' lacks", d->name);
        if (t != ST_UNDEFINED && v->dtype != t)
            return st_kernel_refuse(why, len, "mixed %s and %s operands", st_dtype_name(t), st_dtype_name(v->dtype));
        t = v->dtype;
        if (!st_vk_fits(v)) return st_kernel_refuse(why, len, "an operand too large for 32-bit indexing");
    }
    return true;
}

bool st_vk_accepts_to_bool(const st_knode *n, char *why, size_t len)
{
    const st_vk_device *d = n->device;
    for (int o = 0; o < n->n_out; o++) {
        const st_view *v = &n->views[n->n_in + o];
        if (v->rank < 0) continue;
        if (v->dtype != ST_BOOL)
            return st_kernel_refuse(why, len, "%s with a %s output runs on the CPU", n->op->name,
                                    st_dtype_name(v->dtype));
        if (!st_vk_fits(v)) return st_kernel_refuse(why, len, "an operand too large for 32-bit indexing");
    }
    if (d && !d->b8) return st_kernel_refuse(why, len, "bool outputs need 8-bit storage, which '%s' lacks", d->name);
    st_knode m = *n; /* the inputs alone: f32 or f16, one dtype */
    m.n_out = 0;
    return st_vk_accepts_float(&m, why, len);
}
