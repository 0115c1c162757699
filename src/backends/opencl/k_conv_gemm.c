/*
 * k_conv_gemm.c — host side of Conv as an implicit GEMM on a GPU
 * (conv_gemm.cl): picks a tile and a split of K per problem, so that a
 * small image with deep K still gives every compute unit work, then
 * launches the tile kernel and, when K is split, st_conv_splitk.
 *
 * The choice is a rough model, deliberately simple: a problem of M
 * channels x P pixels x Z (image, group) pairs makes ceil(M/TM) ceil(P/TN)
 * Z S work-groups; `slots` = compute units x fill of them run at once.
 * Its time is the number of waves times one work-group's K walk
 * ((steps + 2) x (16 RM RN + 48): the products of a step plus a fixed
 * cost for loads and barriers), plus, for S > 1, a second launch and the
 * partial sums' traffic.  The env knobs (opencl.c reads them) force any
 * part of it, so a GPU run can A/B the choices:
 *   STRATA_OPENCL_CONV_TILE=64x64|64x32|32x64|32x32|16x64  (channels x pixels)
 *   STRATA_OPENCL_SPLITK=N     K split in N (1: never), else the model's
 *   STRATA_OPENCL_CONV_CUS=N   compute units to plan for (default the device's)
 *   STRATA_OPENCL_CONV_FILL=N  resident work-groups per compute unit (default 2)
 *   STRATA_OPENCL_CONV_LOG=1   print each Conv's choice to stderr, once per command
 *
 * The choice and the partial-sum buffer live in the command's slot, made
 * on its first run (the plan fixes the shapes; a different shape remakes
 * them).  Every offset must fit 32 bits for the kernel's int math; where
 * one does not, st_cl_conv_tiled says so and k_conv.c runs the 64-bit
 * st_conv_gemm instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/conv.h"

#define CG_K 16
#define CG_W 16

/* Same layout as st_cg_p in conv_gemm.cl. */
typedef struct st_cl_cg_p {
    cl_int M, K, P, Z;
    cl_int groups, cg, kh, kw, kvol, ow, ih, iw, s1, s2, d1, d2, pb1, pb2;
    cl_int xo, xs0, xs1, xs3, xs4;
    cl_int wo, ws0, ws1, ws3, ws4;
    cl_int yo, ys0, ys1, ys3, ys4;
    cl_int bo, bs, has_b;
    cl_int x_dt, w_dt, y_dt, b_dt, act;
    cl_int kchunk, splits;
    cl_int cstep, astep, bstep;
    cl_float act_a, act_b;
} st_cl_cg_p;
_Static_assert(sizeof(st_cl_cg_p) == 48 * 4, "st_cl_cg_p has no padding");

/* The tile kernels, in the order the model prefers them on a tie. */
static const struct cg_tile {
    st_clk id;
    int rm, rn;
    const char *name;
} TILES[] = {
    {ST_CLK_conv_t64x64, 4, 4, "64x64"}, {ST_CLK_conv_t64x32, 4, 2, "64x32"}, {ST_CLK_conv_t32x64, 2, 4, "32x64"},
    {ST_CLK_conv_t32x32, 2, 2, "32x32"}, {ST_CLK_conv_t16x64, 1, 4, "16x64"},
};
#define N_TILES ((int)(sizeof TILES / sizeof *TILES))

int st_cl_conv_tile_index(const char *name)
{
    for (int i = 0; i < N_TILES; i++)
        if (strcmp(name, TILES[i].name) == 0) return i;
    return -1;
}

const char *st_cl_conv_tile_names(void) { return "64x64, 64x32, 32x64, 32x32 or 16x64"; }

/* What a command keeps between runs (its slot). */
typedef struct cg_slot {
    int64_t key[4];  /* M, P, K, Z the choice was made for */
    int tile, splits;
    cl_mem part;     /* splits x Z x M x P floats, NULL when splits == 1 */
} cg_slot;

static void cg_slot_release(void *data)
{
    cg_slot *s = data;
    if (s->part) clReleaseMemObject(s->part);
    free(s);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The model of the header: the tile and split for M x P x K x Z. */
static void cg_choose(const st_cl_device *d, int64_t M, int64_t P, int64_t K, int64_t Z, int *tile, int *splits)
{
    int64_t ksteps = cdiv(K, CG_K);
    int64_t slots = (int64_t)(d->conv_cus > 0 ? d->conv_cus : 1) * (d->conv_fill > 0 ? d->conv_fill : 2);
    double best = 0;
    bool first = true;
    *tile = 0;
    *splits = 1;
    for (int t = 0; t < N_TILES; t++) {
        if (d->conv_tile >= 0 && t != d->conv_tile) continue;
        int64_t base = cdiv(M, CG_W * TILES[t].rm) * cdiv(P, CG_W * TILES[t].rn) * Z;
        /* a split walks at least 4 steps (64 of K), 16 splits at most */
        int64_t s0 = 1, s1 = ksteps / 4 < 16 ? ksteps / 4 : 16;
        if (s1 < 1) s1 = 1;
        if (d->conv_splitk > 0) s0 = s1 = d->conv_splitk < ksteps ? d->conv_splitk : ksteps;
        for (int64_t s = s0; s <= s1; s++) {
            int64_t steps = cdiv(ksteps, s), se = cdiv(ksteps, steps); /* no empty split */
            double cost = (double)cdiv(base * se, slots) * (double)(steps + 2) * (16.0 * TILES[t].rm * TILES[t].rn + 48);
            if (se > 1) cost += 2000 + (double)se * (double)(M * P * Z) / 500;
            if (first || cost < best) {
                first = false;
                best = cost;
                *tile = t;
                *splits = (int)se;
            }
        }
    }
}

/* |offset| + the span of a view's dims, in elements: every index the
 * kernel forms from it lies within this of 0. */
static int64_t reach(const st_view *v)
{
    int64_t r = v->offset / (int64_t)st_dtype_size(v->dtype);
    if (r < 0) r = -r;
    for (int i = 0; i < v->rank; i++) r += (v->sizes[i] > 0 ? v->sizes[i] - 1 : 0) * (v->strides[i] < 0 ? -v->strides[i] : v->strides[i]);
    return r;
}

#define LIM ((int64_t)1 << 30)

st_status st_cl_conv_tiled(const st_kctx *k, bool *ran)
{
    *ran = false;
    st_cl_ctx *c = k->dev;
    const st_conv_state *s = k->state;
    const st_view *x = &k->views[0], *w = &k->views[1], *y = &k->views[k->n_in];
    const st_view *b = k->n_in > 2 && k->in[2].data ? &k->views[2] : NULL;
    int nsp = s->nsp, h = nsp == 2 ? 0 : -1; /* index of H among the spatial dims (-1: a 1-D conv) */
    int64_t Z = x->sizes[0] * s->group, cg = x->sizes[1] / s->group, M = y->sizes[1] / s->group;
    int64_t kh = h < 0 ? 1 : s->k[0], kw = s->k[nsp - 1], K = cg * kh * kw;
    int64_t oh = h < 0 ? 1 : y->sizes[2], ow = y->sizes[1 + nsp], P = oh * ow;
    int64_t ih = h < 0 ? 1 : x->sizes[2], iw = x->sizes[1 + nsp];
    int64_t xs3 = h < 0 ? 0 : x->strides[2], xs4 = x->strides[1 + nsp];
    int64_t ws3 = h < 0 ? 0 : w->strides[2], ws4 = w->strides[1 + nsp];
    int64_t ys3 = h < 0 ? 0 : y->strides[2], ys4 = y->strides[1 + nsp];
    int64_t sh = h < 0 ? 1 : s->s[0], sw = s->s[nsp - 1], dh = h < 0 ? 1 : s->d[0], dw = s->d[nsp - 1];
    int64_t ph = h < 0 ? 0 : s->pb[0], pw = s->pb[nsp - 1];
    if (M * P * Z == 0) {
        *ran = true;
        return ST_OK;
    }
    /* int32 math: every operand's reach, and a window's overhang past
     * the input (pads, dilated taps) in input strides */
    int64_t over = (ph + dh * kh) * (xs3 < 0 ? -xs3 : xs3) + (pw + dw * kw) * (xs4 < 0 ? -xs4 : xs4);
    if (reach(x) >= LIM || reach(w) >= LIM || reach(y) >= LIM || (b && reach(b) >= LIM) || over >= LIM || K >= LIM ||
        16 * M * P * Z >= LIM)
        return ST_OK;

    cg_slot *sl = c->slot->data;
    int64_t key[4] = {M, P, K, Z};
    if (sl && memcmp(sl->key, key, sizeof key) != 0) {
        cg_slot_release(sl);
        c->slot->data = sl = NULL;
        c->slot->release = NULL;
    }
    if (!sl) {
        sl = calloc(1, sizeof *sl);
        if (!sl) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for the Conv's tile choice", k->node->name);
        memcpy(sl->key, key, sizeof key);
        cg_choose(c->dev, M, P, K, Z, &sl->tile, &sl->splits);
        if (sl->splits > 1) {
            cl_int err;
            size_t bytes = (size_t)(sl->splits * Z * M * P) * sizeof(float);
            sl->part = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
            if (err != CL_SUCCESS) {
                free(sl);
                return st_cl_check(err, "clCreateBuffer (Conv split-K partial sums)");
            }
        }
        c->slot->data = sl;
        c->slot->release = cg_slot_release;
        if (c->dev->conv_log)
            fprintf(stderr, "strata: opencl Conv '%s': M %lld, P %lld, K %lld, Z %lld: tile %s, split %d (%d compute units x %d)\n",
                    k->node->name, (long long)M, (long long)P, (long long)K, (long long)Z, TILES[sl->tile].name, sl->splits,
                    c->dev->conv_cus, c->dev->conv_fill);
    }

    st_cl_cg_p p;
    memset(&p, 0, sizeof p);
    p.M = (cl_int)M;
    p.K = (cl_int)K;
    p.P = (cl_int)P;
    p.Z = (cl_int)Z;
    p.groups = (cl_int)s->group;
    p.cg = (cl_int)cg;
    p.kh = (cl_int)kh;
    p.kw = (cl_int)kw;
    p.kvol = (cl_int)(kh * kw);
    p.ow = (cl_int)ow;
    p.ih = (cl_int)ih;
    p.iw = (cl_int)iw;
    p.s1 = (cl_int)sh;
    p.s2 = (cl_int)sw;
    p.d1 = (cl_int)dh;
    p.d2 = (cl_int)dw;
    p.pb1 = (cl_int)ph;
    p.pb2 = (cl_int)pw;
    p.xo = (cl_int)(x->offset / (int64_t)st_dtype_size(x->dtype));
    p.xs0 = (cl_int)x->strides[0];
    p.xs1 = (cl_int)x->strides[1];
    p.xs3 = (cl_int)xs3;
    p.xs4 = (cl_int)xs4;
    p.wo = (cl_int)(w->offset / (int64_t)st_dtype_size(w->dtype));
    p.ws0 = (cl_int)w->strides[0];
    p.ws1 = (cl_int)w->strides[1];
    p.ws3 = (cl_int)ws3;
    p.ws4 = (cl_int)ws4;
    p.yo = (cl_int)(y->offset / (int64_t)st_dtype_size(y->dtype));
    p.ys0 = (cl_int)y->strides[0];
    p.ys1 = (cl_int)y->strides[1];
    p.ys3 = (cl_int)ys3;
    p.ys4 = (cl_int)ys4;
    if (b) {
        p.has_b = 1;
        p.bo = (cl_int)(b->offset / (int64_t)st_dtype_size(b->dtype));
        p.bs = (cl_int)b->strides[0];
        p.b_dt = b->dtype;
    } else {
        p.b_dt = ST_F32;
    }
    p.x_dt = x->dtype;
    p.w_dt = w->dtype;
    p.y_dt = y->dtype;
    p.act = s->epi.act;
    p.act_a = s->epi.alpha;
    p.act_b = s->epi.beta;
    /* K per split: whole steps, so the counters advance by CG_K */
    p.splits = sl->splits;
    p.kchunk = (cl_int)(cdiv(cdiv(K, CG_K), sl->splits) * CG_K);
    p.cstep = (cl_int)(CG_K / (kh * kw));
    p.astep = (cl_int)(CG_K % (kh * kw) / kw);
    p.bstep = (cl_int)(CG_K % (kh * kw) % kw);

    const struct cg_tile *t = &TILES[sl->tile];
    cl_mem ym = st_cl_mem(y), xm = st_cl_mem(x), wm = st_cl_mem(w), bm = b ? st_cl_mem(b) : NULL, pm = sl->part;
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, t->id, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(xm), ST_CLA(wm), ST_CLA(bm), ST_CLA(pm), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, t->id, 6, args));
    size_t global[3] = {(size_t)(cdiv(P, CG_W * t->rn) * CG_W), (size_t)(cdiv(M, CG_W * t->rm) * CG_W),
                        (size_t)(Z * sl->splits)};
    size_t local[3] = {CG_W, CG_W, 1};
    ST_TRY(st_cl_run(c, kern, t->id, 3, global, local, true));
    if (sl->splits > 1) {
        ST_TRY(st_cl_kernel(c, ST_CLK_conv_splitk, &kern));
        st_cl_arg sargs[] = {ST_CLA(ym), ST_CLA(bm), ST_CLA(pm), {sizeof p, &p}};
        ST_TRY(st_cl_set_args(kern, ST_CLK_conv_splitk, 4, sargs));
        size_t g2[3] = {(size_t)P, (size_t)M, (size_t)Z};
        ST_TRY(st_cl_run(c, kern, ST_CLK_conv_splitk, 3, g2, NULL, true));
    }
    *ran = true;
    return ST_OK;
}
