/*
 * k_resize.c — Resize and Upsample on Vulkan (resize.comp): the last two
 * axes resized by the taps the shape rule computed (ops/resize.h), which
 * travel in the dispatch's parameter block, so every coordinate
 * transformation and nearest mode the rule knows is the CPU's bit for
 * bit in its weights; the leading axes must be left as they are and
 * merge into one plane index.  tf_crop_and_resize runs on the CPU.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/kernels.h"
#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "ops/resize.h"

/* Axis a's taps as (idx, weight bits) pairs into p from *at; the count per coordinate. */
static int put_taps(const st_resize_state *s, int a, int32_t *p, int *at)
{
    int last = s->rank - 1;
    if (a == last && s->rep > 1) {
        for (int64_t x = 0; x < s->out[a]; x++) {
            float w = 1.0f;
            p[(*at)++] = (int32_t)(x / s->rep);
            memcpy(&p[(*at)++], &w, 4);
        }
        return 1;
    }
    int nt = s->ntaps[a];
    for (int64_t x = 0; x < s->out[a]; x++)
        for (int t = 0; t < nt; t++) {
            const st_resize_tap *tp = &s->taps[s->first[a] + x * nt + t];
            p[(*at)++] = (int32_t)tp->idx;
            memcpy(&p[(*at)++], &tp->wf, 4);
        }
    return nt;
}

static int taps_of(const st_resize_state *s, int a) { return a == s->rank - 1 && s->rep > 1 ? 1 : s->ntaps[a]; }

/* The plane stride of v's leading dims (merged), or -1 when they do not merge. */
static int64_t plane_stride(const st_view *v)
{
    int lead = v->rank - 2;
    int64_t stride = 0;
    bool any = false;
    for (int d = lead - 1; d >= 0; d--) {
        if (v->sizes[d] == 1) continue;
        if (!any) {
            stride = v->strides[d];
            any = true;
        } else {
            /* a dim above must step over the ones below */
            int64_t below = 1;
            for (int e = d + 1; e < lead; e++) below *= v->sizes[e];
            if (v->strides[d] != stride * below) return -1;
        }
    }
    return stride;
}

static st_status vk_resize(const st_kctx *k)
{
    st_vk_ctx *c = k->dev;
    const st_resize_state *s = k->state;
    const st_view *x = &k->views[0], *y = &k->views[k->n_in];
    int64_t n;
    st_vk_bind bind[2];
    ST_TRY(st_vk_bind_yx(k, bind, &n));
    if (n == 0) return ST_OK;
    int h = s->rank - 2, w = s->rank - 1;
    int nh = taps_of(s, h), nw = taps_of(s, w);
    int np = 15 + 2 * (int)(s->out[h] * nh + s->out[w] * nw);
    int32_t *p = calloc((size_t)np, sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory for Resize's parameters");
    p[0] = (int32_t)n;
    p[1] = (int32_t)s->out[h];
    p[2] = (int32_t)s->out[w];
    int at = 15;
    p[5] = at;
    p[3] = put_taps(s, h, p, &at);
    p[6] = at;
    p[4] = put_taps(s, w, p, &at);
    p[7] = bind[1].elem;
    p[8] = (int32_t)plane_stride(x);
    p[9] = (int32_t)x->strides[h];
    p[10] = (int32_t)x->strides[w];
    p[11] = bind[0].elem;
    p[12] = (int32_t)plane_stride(y);
    p[13] = (int32_t)y->strides[h];
    p[14] = (int32_t)y->strides[w];
    uint32_t groups[3];
    st_vk_grid1(c, n, 256, groups);
    st_status r = st_vk_dispatch(c, st_vk_is_f16(y) ? ST_VKS_resize_f16 : ST_VKS_resize_f32, p, np, 2, bind, groups);
    free(p);
    return r;
}

static bool resize_accepts(const st_knode *n, char *why, size_t len)
{
    const st_resize_state *s = n->state;
    const st_view *x = &n->views[0], *y = &n->views[n->n_in];
    if (!s || s->rank < 2 || s->crop) return st_kernel_refuse(why, len, "this Resize runs on the CPU");
    for (int a = 0; a < s->rank - 2; a++)
        if (s->in[a] != s->out[a] || s->ntaps[a] != 1) return st_kernel_refuse(why, len, "a Resize of a leading axis");
    if (s->out[s->rank - 2] * taps_of(s, s->rank - 2) + s->out[s->rank - 1] * taps_of(s, s->rank - 1) > 1 << 20)
        return st_kernel_refuse(why, len, "a Resize with too many taps");
    if (plane_stride(x) < 0 || plane_stride(y) < 0) return st_kernel_refuse(why, len, "leading dims that do not merge");
    /* only the data input is data: the rest are constant scales and sizes */
    st_knode m = *n;
    st_view v[2] = {*x, *y};
    m.views = v;
    m.n_in = 1;
    m.n_out = 1;
    return st_vk_accepts_float(&m, why, len);
}

#define FL (ST_DT(ST_F32) | ST_DT(ST_F16))
const st_kernel st_vk_k_resize[] = {
    {"Resize", "", FL, vk_resize, resize_accepts, NULL, NULL},
    {"Upsample", "", FL, vk_resize, resize_accepts, NULL, NULL},
    {NULL}
};
