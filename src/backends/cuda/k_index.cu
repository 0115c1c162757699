/*
 * k_index.cu — the index family on CUDA: Pad (and CenterCropPad), Expand,
 * Tile, DepthToSpace/SpaceToDepth (strided copies over a re-described
 * iteration space, as backends/cpu/k_index_copy.c), Gather and
 * GatherElements (one walk), ScatterElements, GatherND,
 * ScatterND, OneHot, Range, CumSum and TopK.  Each mirrors the OpenCL
 * kernel of the same name (backends/opencl/index.cl, pad.cl), which the
 * node tests check on PoCL, and the CPU kernel's rule.  The launch
 * geometry (the copies' re-descriptions, the walks' strides, the tuple
 * splits, Einsum's label strides, Pad's parameters) comes from
 * ops/lower_index.h, as the OpenCL arguments' does.
 *
 * The element rules (an index's wrap and bounds, the scatter reduction,
 * Pad's source, OneHot, Trilu, CumSum, TopK's order, Einsum's walk) are
 * ops/index_math.h's, which the CPU and OpenCL kernels compile too.
 *
 * An index out of range (which the CPU reports as an error) is flagged
 * through ctx->dev_error, reported when the run is waited for, as
 * k_shape.cu's Gather does.
 */
#include "backends/cuda/common.cuh"
#include "ops/index_math.h"
extern "C" {
#include "ops/index.h"
#include "ops/lower_index.h"
#include "ops/ops.h"
#include "ops/reduce.h"
}

#define THREADS 256

/* An operand as the kernels here take it: sizes and element strides. */
struct ix_td {
    int rank;
    st_dtype dt;
    int64_t n[ST_MAX_RANK], s[ST_MAX_RANK];
};

static ix_td td_of(const st_operand *o)
{
    ix_td t;
    memset(&t, 0, sizeof t);
    t.rank = o->rank;
    t.dt = o->dtype;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        t.n[d] = d < o->rank ? o->sizes[d] : 1;
        t.s[d] = d < o->rank ? o->strides[d] : 0;
    }
    return t;
}

__device__ __forceinline__ void ix_coords(const ix_td &t, int64_t i, int64_t *c)
{
    for (int d = t.rank - 1; d >= 0; d--) {
        c[d] = i % t.n[d];
        i /= t.n[d];
    }
}

/* Moves one element of es bytes (any dtype). */
__device__ __forceinline__ void ix_mv(char *y, int64_t iy, const char *x, int64_t ix, int es)
{
    switch (es) {
    case 1: y[iy] = x[ix]; break;
    case 2: ((uint16_t *)y)[iy] = ((const uint16_t *)x)[ix]; break;
    case 4: ((uint32_t *)y)[iy] = ((const uint32_t *)x)[ix]; break;
    default: ((uint64_t *)y)[iy] = ((const uint64_t *)x)[ix]; break;
    }
}

__device__ __forceinline__ int ix_es(st_dtype t)
{
    switch (t) {
    case ST_U8: case ST_I8: case ST_BOOL: return 1;
    case ST_U16: case ST_I16: case ST_F16: case ST_BF16: return 2;
    case ST_I64: case ST_U64: case ST_F64: return 8;
    default: return 4;
    }
}

__device__ __forceinline__ bool ix_isf(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

#define GRID_LOOP(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---- copies over a re-described shape (y sizes, y strides, x strides) ---- */

__global__ void ix_copy_kernel(st_lower_copy p, int es, const char *x, char *y)
{
    GRID_LOOP(i, p.total)
    {
        int64_t r = i, oy = 0, ox = 0;
        for (int d = p.rank - 1; d >= 0; d--) {
            int64_t c = r % p.n[d];
            r /= p.n[d];
            oy += c * p.ys[d];
            ox += c * p.xs[d];
        }
        ix_mv(y, oy, x, ox, es);
    }
}

/* Input 0 to output 0 as the lowered copy p. */
static st_status copy_lowered(const st_kctx *k, const st_lower_copy *p)
{
    if (p->total == 0) return ST_OK;
    ix_copy_kernel<<<st_blocks(p->total, THREADS), THREADS, 0, st_stream(k)>>>(*p, (int)st_dtype_size(k->out[0].dtype),
                                                                               (const char *)k->in[0].data, (char *)k->out[0].data);
    return ST_OK;
}

/* y = x element for element (the scatters' first step; a scalar Pad). */
static st_status copy_same(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    st_lower_copy p;
    memset(&p, 0, sizeof p);
    p.rank = y->rank > 0 ? y->rank : 1;
    for (int d = 0; d < p.rank; d++) {
        p.n[d] = d < y->rank ? y->sizes[d] : 1;
        p.ys[d] = d < y->rank ? y->strides[d] : 0;
        p.xs[d] = d < y->rank ? x->strides[d] : 0;
    }
    p.total = st_operand_numel(y);
    return copy_lowered(k, &p);
}

static st_status cuda_expand(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_expand(k, &p);
    return copy_lowered(k, &p);
}

static st_status cuda_tile(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_tile(k, &p);
    return copy_lowered(k, &p);
}

static st_status cuda_depth_to_space(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_depth_to_space(k, &p);
    return copy_lowered(k, &p);
}

static st_status cuda_space_to_depth(const st_kctx *k)
{
    st_lower_copy p;
    st_lower_space_to_depth(k, &p);
    return copy_lowered(k, &p);
}

/* ---- Pad, CenterCropPad (pad.cl's rule) ---- */

__global__ void pad_kernel(st_lower_pad p, int es, ix_td yd, ix_td xd, char *y, const char *x, const char *v)
{
    GRID_LOOP(i, p.total)
    {
        int64_t c[ST_MAX_RANK];
        ix_coords(yd, i, c);
        int64_t oy = 0, ox = 0;
        bool inside = true;
        for (int d = 0; d < yd.rank; d++) {
            oy += c[d] * yd.s[d];
            int64_t s = st_im_pad_source(p.mode, c[d], p.begin[d], p.end[d], xd.n[d]);
            inside &= s >= 0;
            ox += s * xd.s[d];
        }
        if (inside) {
            ix_mv(y, oy, x, ox, es);
        } else if (v) {
            ix_mv(y, oy, v, 0, es);
        } else {
            uint64_t e = p.value_bits;
            switch (es) {
            case 1: ((uint8_t *)y)[oy] = (uint8_t)e; break;
            case 2: ((uint16_t *)y)[oy] = (uint16_t)e; break;
            case 4: ((uint32_t *)y)[oy] = (uint32_t)e; break;
            default: ((uint64_t *)y)[oy] = e; break;
            }
        }
    }
}

static st_status cuda_pad(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    st_lower_pad p;
    st_lower_pad_of(k, &p);
    if (p.total == 0) return ST_OK;
    if (p.rank == 0) return copy_same(k);
    const char *v = p.value_operand >= 0 ? (const char *)k->in[p.value_operand].data : NULL;
    pad_kernel<<<st_blocks(p.total, THREADS), THREADS, 0, st_stream(k)>>>(p, (int)st_dtype_size(y->dtype), td_of(y), td_of(x),
                                                                          (char *)y->data, (const char *)x->data, v);
    return ST_OK;
}

/* ---- Gather, GatherElements: one walk (ops/lower_index.h) ---- */

__global__ void gather_walk_kernel(st_lower_gather p, st_dtype it, int es, char *y, const char *x, const void *ix, int *err, int cmd)
{
    GRID_LOOP(i, p.total)
    {
        int64_t r = i, oy = 0, oi = 0, ox = 0;
        for (int d = p.rank - 1; d >= 0; d--) {
            int64_t c = r % p.n[d];
            r /= p.n[d];
            ox += c * p.s[ST_LG_DATA][d];
            oy += c * p.s[ST_LG_PEER][d];
            oi += c * p.s[ST_LG_INDEX][d];
        }
        int64_t v = st_im_index(st_ldi(it, ix, oi), p.dim);
        if (v < 0) {
            /* a kernel cannot fail a graph: flag it for the executor's wait */
            atomicCAS(err, 0, cmd + 1);
            continue;
        }
        ix_mv(y, oy, x, ox + v * p.data_axis, es);
    }
}

static st_status gather_walk(const st_kctx *k, const st_lower_gather *p)
{
    if (p->total == 0) return ST_OK;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    gather_walk_kernel<<<st_blocks(p->total, THREADS), THREADS, 0, st_stream(k)>>>(
        *p, ix->dtype, (int)st_dtype_size(y->dtype), (char *)y->data, (const char *)x->data, ix->data, ctx->dev_error, ctx->cmd);
    return ST_OK;
}

/* Declared in cuda_ctx.h: k_shape.cu's table lists Gather beside the views. */
extern "C" st_status st_cuda_gather(const st_kctx *k)
{
    st_lower_gather p;
    st_lower_gather_of(k, &p);
    return gather_walk(k, &p);
}

static st_status cuda_gather_elements(const st_kctx *k)
{
    st_lower_gather p;
    st_lower_gather_elements(k, &p);
    return gather_walk(k, &p);
}

/* y[oy] = y[oy] reduced with u[ou] (ops/index_math.h): floats in f32
 * (f64 is not accepted here), integers in 64 bits, uint64 ordered as
 * unsigned. */
__device__ __forceinline__ void ix_reduce(int red, st_dtype yt, char *y, int64_t oy, st_dtype ut, const char *u, int64_t ou, int es)
{
    if (red == ST_RED_NONE) ix_mv(y, oy, u, ou, es);
    else if (ix_isf(yt)) st_stf(yt, y, oy, st_im_reduce_f32(red, st_ldf(yt, y, oy), st_ldf(ut, u, ou)));
    else st_sti(yt, y, oy, st_im_reduce_i64(red, st_ldi(yt, y, oy), st_ldi(ut, u, ou), yt == ST_U64));
}

/* ---- ScatterND: y = x, then thread j applies every tuple to slice element j, in order ---- */

__global__ void scatter_nd_kernel(ix_td yd, ix_td id, ix_td ud, int red, char *y, const void *ix, const char *u, int64_t slice,
                                  int *err, int cmd)
{
    int q = id.rank, m = (int)id.n[q - 1], sr = yd.rank - m;
    int64_t tuples = 1;
    for (int d = 0; d < q - 1; d++) tuples *= id.n[d];
    int es = (int)ix_es(yd.dt);
    GRID_LOOP(j, slice)
    {
        int64_t sy = 0, su = 0, r = j;
        for (int d = sr - 1; d >= 0; d--) {
            int64_t c = r % yd.n[m + d];
            r /= yd.n[m + d];
            sy += c * yd.s[m + d];
            su += c * ud.s[q - 1 + d];
        }
        for (int64_t t = 0; t < tuples; t++) {
            int64_t oi = 0, ou = su, rr = t;
            for (int d = q - 2; d >= 0; d--) {
                int64_t c = rr % id.n[d];
                rr /= id.n[d];
                oi += c * id.s[d];
                ou += c * ud.s[d];
            }
            int64_t oy = sy;
            bool ok = true;
            for (int c = 0; c < m; c++) {
                int64_t v = st_im_index(st_ldi(id.dt, ix, oi + c * id.s[q - 1]), yd.n[c]);
                ok &= v >= 0;
                oy += v * yd.s[c];
            }
            if (!ok) {
                atomicCAS(err, 0, cmd + 1);
                continue;
            }
            ix_reduce(red, yd.dt, y, oy, ud.dt, u, ou, es);
        }
    }
}

static st_status cuda_scatter_nd(const st_kctx *k)
{
    const st_index_state *s = (const st_index_state *)k->state;
    const st_operand *ix = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    ST_TRY(copy_same(k));
    st_lower_nd p;
    st_lower_scatter_nd(k, &p);
    if (p.items == 0) return ST_OK;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    scatter_nd_kernel<<<st_blocks(p.items, THREADS), THREADS, 0, st_stream(k)>>>(
        td_of(y), td_of(ix), td_of(u), s->reduction, (char *)y->data, ix->data, (const char *)u->data, p.items, ctx->dev_error, ctx->cmd);
    return ST_OK;
}

/* ---- OneHot: y[c] = c[axis] == index[c without axis] ? on : off ---- */

__global__ void one_hot_kernel(ix_td yd, ix_td id, int axis, bool neg_ok, char *y, const void *ix, const char *v, int64_t von,
                               int64_t total)
{
    int es = (int)ix_es(yd.dt);
    GRID_LOOP(i, total)
    {
        int64_t c[ST_MAX_RANK];
        ix_coords(yd, i, c);
        int64_t oy = 0, oi = 0;
        for (int d = 0, e = 0; d < yd.rank; d++) {
            oy += c[d] * yd.s[d];
            if (d != axis) oi += c[d] * id.s[e++];
        }
        int64_t depth = yd.n[axis];
        int64_t kk = ix_isf(id.dt) ? (int64_t)st_ldf(id.dt, ix, oi) : st_ldi(id.dt, ix, oi);
        ix_mv(y, oy, v, st_im_one_hot(kk, depth, neg_ok) == c[axis] ? von : 0, es);
    }
}

static st_status cuda_one_hot(const st_kctx *k)
{
    const st_index_state *s = (const st_index_state *)k->state;
    const st_operand *ix = &k->in[0], *v = &k->in[2], *y = &k->out[0];
    int64_t total = st_operand_numel(y);
    if (total == 0) return ST_OK;
    one_hot_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(td_of(y), td_of(ix), s->axis, s->flag, (char *)y->data,
                                                                            ix->data, (const char *)v->data, v->strides[0], total);
    return ST_OK;
}

/* ---- Range: y[i] = start + i * delta, start and delta read on the device ---- */

__global__ void range_kernel(st_dtype yt, int64_t ys, void *y, st_dtype at, const void *a, st_dtype dt, const void *dl, int64_t n)
{
    GRID_LOOP(i, n)
    {
        if (ix_isf(yt)) st_stf(yt, y, i * ys, st_ldf(at, a, 0) + (float)i * st_ldf(dt, dl, 0));
        else st_sti(yt, y, i * ys, st_ldi(at, a, 0) + i * st_ldi(dt, dl, 0));
    }
}

static st_status cuda_range(const st_kctx *k)
{
    const st_operand *a = &k->in[0], *dl = &k->in[2], *y = &k->out[0];
    int64_t n = y->sizes[0];
    if (n == 0) return ST_OK;
    range_kernel<<<st_blocks(n, THREADS), THREADS, 0, st_stream(k)>>>(y->dtype, y->strides[0], y->data, a->dtype, a->data, dl->dtype,
                                                                      dl->data, n);
    return ST_OK;
}

/* ---- along an axis: CumSum, TopK ---- */

/* Offsets of line `line` of x and y along axis (the other dims enumerate lines). */
__device__ __forceinline__ void ix_line(const ix_td &xd, const ix_td &yd, int axis, int64_t line, int64_t *ox, int64_t *oy)
{
    int64_t a = 0, b = 0;
    for (int d = xd.rank - 1; d >= 0; d--) {
        if (d == axis) continue;
        int64_t c = line % xd.n[d];
        line /= xd.n[d];
        a += c * xd.s[d];
        b += c * yd.s[d];
    }
    *ox = a;
    *oy = b;
}

__global__ void cumsum_kernel(ix_td yd, ix_td xd, int axis, st_dtype at, const void *ap, bool excl, bool rev, void *y, const void *x,
                              int64_t total)
{
    int r = xd.rank;
    if (axis < 0) {
        axis = (int)st_im_index(st_ldi(at, ap, 0), r);
        if (axis < 0) return;
    }
    int64_t n = xd.n[axis];
    if (n == 0) return;
    int64_t lines = total / n;
    GRID_LOOP(line, lines)
    {
        int64_t ox, oy;
        ix_line(xd, yd, axis, line, &ox, &oy);
        int64_t xs = xd.s[axis], ys = yd.s[axis];
        if (ix_isf(xd.dt)) {
            float acc = 0.0f;
            for (int64_t s = 0; s < n; s++) {
                int64_t i = st_im_cumsum_at(s, n, rev);
                float v = st_ldf(xd.dt, x, ox + i * xs);
                if (!excl) acc += v;
                st_stf(yd.dt, y, oy + i * ys, acc);
                if (excl) acc += v;
            }
        } else {
            uint64_t acc = 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t i = st_im_cumsum_at(s, n, rev);
                uint64_t v = (uint64_t)st_ldi(xd.dt, x, ox + i * xs);
                if (!excl) acc += v;
                st_sti(yd.dt, y, oy + i * ys, (int64_t)acc);
                if (excl) acc += v;
            }
        }
    }
}

static st_status cuda_cumsum(const st_kctx *k)
{
    const st_reduce_state *s = (const st_reduce_state *)k->state;
    const st_operand *x = &k->in[0], *a = &k->in[1], *y = &k->out[0];
    int64_t total = st_operand_numel(x);
    if (total == 0) return ST_OK;
    cumsum_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(td_of(y), td_of(x), s->axis, a->dtype, a->data, s->exclusive,
                                                                           s->reverse, y->data, x->data, total);
    return ST_OK;
}

/* Order of the values at oa and ob (ops/index_math.h): NaN above every
 * number (numpy's sort), uint64 unsigned. */
__device__ __forceinline__ int ix_cmp(const ix_td &xd, const void *x, int64_t oa, int64_t ob)
{
    if (ix_isf(xd.dt)) return st_im_cmp_f32(st_ldf(xd.dt, x, oa), st_ldf(xd.dt, x, ob));
    return st_im_cmp_i64(st_ldi(xd.dt, x, oa), st_ldi(xd.dt, x, ob), xd.dt == ST_U64);
}

/* One thread per line; output j is the best element after output j - 1
 * in the total order (value, then lower index): O(k n), no scratch. */
__global__ void topk_kernel(ix_td vd, ix_td id, ix_td xd, int axis, bool largest, char *v, void *ix, const char *x, int64_t lines)
{
    int64_t n = xd.n[axis], k = vd.n[axis];
    int es = (int)ix_es(xd.dt);
    GRID_LOOP(line, lines)
    {
        int64_t ox, ov, oi, dummy;
        ix_line(xd, vd, axis, line, &ox, &ov);
        ix_line(xd, id, axis, line, &dummy, &oi);
        int64_t xs = xd.s[axis], prev = -1;
        for (int64_t j = 0; j < k; j++) {
            int64_t best = -1;
            for (int64_t i = 0; i < n; i++) {
                /* i must come after prev in the output, and before the best so far */
                if (prev >= 0 && !st_im_topk_before(ix_cmp(xd, x, ox + prev * xs, ox + i * xs), largest, prev, i)) continue;
                if (best >= 0 && !st_im_topk_before(ix_cmp(xd, x, ox + i * xs, ox + best * xs), largest, i, best)) continue;
                best = i;
            }
            prev = best;
            ix_mv(v, ov + j * vd.s[axis], x, ox + best * xs, es);
            st_sti(id.dt, ix, oi + j * id.s[axis], best);
        }
    }
}

static st_status cuda_topk(const st_kctx *k)
{
    const st_reduce_state *s = (const st_reduce_state *)k->state;
    const st_operand *x = &k->in[0], *v = &k->out[0], *ix = &k->out[1];
    if (!v->data || !ix->data) return st_error(ST_ERR_INTERNAL, "node '%s' (TopK): an output is missing", k->node->name);
    int64_t n = x->sizes[s->axis];
    if (v->sizes[s->axis] == 0 || n == 0) return ST_OK;
    int64_t lines = st_operand_numel(x) / n;
    topk_kernel<<<st_blocks(lines, THREADS), THREADS, 0, st_stream(k)>>>(td_of(v), td_of(ix), td_of(x), s->axis, s->largest, (char *)v->data,
                                                                         ix->data, (const char *)x->data, lines);
    return ST_OK;
}

/* ---- NonZero: fills the [rank, count] output planned from the data ---- */

/* One thread walks x in row-major order (the order the indices come in)
 * and stops at the planned count (index.cl's st_nonzero). */
__global__ void nonzero_kernel(ix_td yd, ix_td xd, void *y, const void *x, int64_t total)
{
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    int64_t found = 0, cap = yd.n[1];
    for (int64_t i = 0; i < total && found < cap; i++) {
        int64_t c[ST_MAX_RANK], o = 0;
        ix_coords(xd, i, c);
        for (int d = 0; d < xd.rank; d++) o += c[d] * xd.s[d];
        bool nz = ix_isf(xd.dt) ? st_ldf(xd.dt, x, o) != 0.0f : st_ldi(xd.dt, x, o) != 0;
        if (!nz) continue;
        for (int d = 0; d < xd.rank; d++) st_sti(yd.dt, y, d * yd.s[0] + found * yd.s[1], c[d]);
        found++;
    }
}

static st_status cuda_nonzero(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    nonzero_kernel<<<1, 1, 0, st_stream(k)>>>(td_of(y), td_of(x), y->data, x->data, st_operand_numel(x));
    return ST_OK;
}

/* ---- Einsum: one thread per output element sums the product of the
 * inputs over every value of the labels the output lacks (f32), as
 * index.cl's st_einsum ---- */

struct ein_p {
    st_lower_einsum g;              /* ops/index_math.h's walk */
    const void *x[ST_IM_EIN_IN];
    st_dtype dt[ST_IM_EIN_IN], ydt;
};

__global__ void einsum_kernel(ein_p p, void *y)
{
    int64_t terms = st_im_einsum_terms(&p.g);
    GRID_LOOP(i, p.g.total)
    {
        int64_t base[ST_IM_EIN_IN], oy;
        st_im_einsum_out(&p.g, i, &oy, base);
        float acc = 0.0f;
        for (int64_t s = 0; s < terms; s++) {
            int64_t o[ST_IM_EIN_IN];
            st_im_einsum_term(&p.g, s, base, o);
            float v = 1.0f;
            for (int k = 0; k < p.g.n_in; k++) v *= st_ldf(p.dt[k], p.x[k], o[k]);
            acc += v;
        }
        st_stf(p.ydt, y, oy, acc);
    }
}

static st_status cuda_einsum(const st_kctx *k)
{
    const st_operand *y = &k->out[0];
    ein_p p;
    memset(&p, 0, sizeof p);
    st_lower_einsum_of(k, &p.g);
    if (p.g.total == 0) return ST_OK;
    for (int i = 0; i < p.g.n_in; i++) {
        p.x[i] = k->in[i].data;
        p.dt[i] = k->in[i].dtype;
    }
    p.ydt = y->dtype;
    einsum_kernel<<<st_blocks(p.g.total, THREADS), THREADS, 0, st_stream(k)>>>(p, y->data);
    return ST_OK;
}

/* ---- ScatterElements, GatherND, Trilu, EyeLike, ConstantOfShape
 * (index.cl's st_scatter_elements, st_gather_nd, st_trilu, st_fill_diag) ---- */

/* One thread per line of the indices along the axis, its updates in
 * index order: duplicates (which meet only within a line) resolve as on
 * the CPU. */
__global__ void scatter_elements_kernel(ix_td yd, ix_td id, ix_td ud, int axis, int red, char *y, const void *ix, const char *u,
                                        int64_t lines, int *err, int cmd)
{
    int64_t n = id.n[axis], dim = yd.n[axis];
    int es = ix_es(yd.dt);
    GRID_LOOP(line, lines)
    {
        int64_t oi = 0, ou = 0, oy = 0, r = line;
        for (int d = id.rank - 1; d >= 0; d--) {
            if (d == axis) continue;
            int64_t c = r % id.n[d];
            r /= id.n[d];
            oi += c * id.s[d];
            ou += c * ud.s[d];
            oy += c * yd.s[d];
        }
        for (int64_t j = 0; j < n; j++) {
            int64_t v = st_im_index(st_ldi(id.dt, ix, oi + j * id.s[axis]), dim);
            if (v < 0) {
                atomicCAS(err, 0, cmd + 1);
                continue;
            }
            ix_reduce(red, yd.dt, y, oy + v * yd.s[axis], ud.dt, u, ou + j * ud.s[axis], es);
        }
    }
}

static st_status cuda_scatter_elements(const st_kctx *k)
{
    const st_index_state *s = (const st_index_state *)k->state;
    const st_operand *ix = &k->in[1], *u = &k->in[2], *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    ST_TRY(copy_same(k));
    st_lower_gather w;
    st_lower_scatter_elements(k, &w);
    int64_t lines = w.lines;
    if (lines == 0) return ST_OK;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    scatter_elements_kernel<<<st_blocks(lines, THREADS), THREADS, 0, st_stream(k)>>>(td_of(y), td_of(ix), td_of(u), s->axis, s->reduction,
                                                                                     (char *)y->data, ix->data, (const char *)u->data,
                                                                                     lines, ctx->dev_error, ctx->cmd);
    return ST_OK;
}

/* y = [index tuples (q - 1 dims), slice of x past b + m dims]; the first
 * b (batch) dims are shared. */
__global__ void gather_nd_kernel(ix_td yd, ix_td xd, ix_td id, int b, char *y, const char *x, const void *ix, int64_t total, int *err,
                                 int cmd)
{
    int q = id.rank, m = (int)id.n[q - 1], es = ix_es(yd.dt);
    GRID_LOOP(i, total)
    {
        int64_t c[ST_MAX_RANK];
        ix_coords(yd, i, c);
        int64_t oy = 0, oi = 0, ox = 0;
        for (int d = 0; d < yd.rank; d++) oy += c[d] * yd.s[d];
        for (int d = 0; d < q - 1; d++) oi += c[d] * id.s[d];
        for (int d = 0; d < b; d++) ox += c[d] * xd.s[d];
        bool ok = true;
        for (int j = 0; j < m; j++) {
            int64_t v = st_im_index(st_ldi(id.dt, ix, oi + j * id.s[q - 1]), xd.n[b + j]);
            ok &= v >= 0;
            ox += v * xd.s[b + j];
        }
        if (!ok) {
            atomicCAS(err, 0, cmd + 1);
            continue;
        }
        for (int e = 0; q - 1 + e < yd.rank; e++) ox += c[q - 1 + e] * xd.s[b + m + e];
        ix_mv(y, oy, x, ox, es);
    }
}

static st_status cuda_gather_nd(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    st_lower_nd p;
    st_lower_gather_nd(k, &p);
    int64_t total = p.items;
    if (total == 0) return ST_OK;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    gather_nd_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(td_of(y), td_of(x), td_of(ix), p.b, (char *)y->data,
                                                                              (const char *)x->data, ix->data, total, ctx->dev_error, ctx->cmd);
    return ST_OK;
}

__global__ void trilu_kernel(ix_td yd, ix_td xd, st_dtype kt, const void *kp, bool upper, char *y, const char *x, int64_t total)
{
    int es = ix_es(yd.dt);
    int64_t kk = kp ? st_ldi(kt, kp, 0) : 0;
    GRID_LOOP(i, total)
    {
        int64_t c[ST_MAX_RANK], oy = 0, ox = 0;
        ix_coords(yd, i, c);
        for (int d = 0; d < yd.rank; d++) {
            oy += c[d] * yd.s[d];
            ox += c[d] * xd.s[d];
        }
        if (st_im_trilu_keep(c[yd.rank - 2], c[yd.rank - 1], kk, yd.n[yd.rank - 1], upper)) {
            ix_mv(y, oy, x, ox, es);
        } else {
            uint64_t zero = 0;
            ix_mv(y, oy, (const char *)&zero, 0, es);
        }
    }
}

static st_status cuda_trilu(const st_kctx *k)
{
    const st_index_state *s = (const st_index_state *)k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    const st_operand *kv = k->n_in > 1 && k->in[1].data ? &k->in[1] : NULL;
    int64_t total = st_operand_numel(y);
    if (total == 0) return ST_OK;
    trilu_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(td_of(y), td_of(x), kv ? kv->dtype : ST_I64, kv ? kv->data : NULL,
                                                                          s->flag, (char *)y->data, (const char *)x->data, total);
    return ST_OK;
}

/* EyeLike (diag_only: the value on diagonal k, 0 elsewhere) and
 * ConstantOfShape (the value everywhere); bits: the value in y's dtype. */
__global__ void fill_diag_kernel(ix_td yd, int64_t kk, bool diag_only, uint64_t bits, char *y, int64_t total)
{
    int es = ix_es(yd.dt);
    GRID_LOOP(i, total)
    {
        int64_t c[ST_MAX_RANK], oy = 0;
        ix_coords(yd, i, c);
        for (int d = 0; d < yd.rank; d++) oy += c[d] * yd.s[d];
        uint64_t e = !diag_only || c[1] - c[0] == kk ? bits : 0;
        ix_mv(y, oy, (const char *)&e, 0, es);
    }
}

static st_status fill(const st_kctx *k, int64_t kk, bool diag_only, const unsigned char *val)
{
    const st_operand *y = &k->out[0];
    int64_t total = st_operand_numel(y);
    if (total == 0) return ST_OK;
    uint64_t bits = 0;
    memcpy(&bits, val, st_dtype_size(y->dtype));
    fill_diag_kernel<<<st_blocks(total, THREADS), THREADS, 0, st_stream(k)>>>(td_of(y), kk, diag_only, bits, (char *)y->data, total);
    return ST_OK;
}

static st_status cuda_eye_like(const st_kctx *k)
{
    unsigned char one[16] = {0};
    st_store_f64(k->out[0].dtype, one, 1.0);
    return fill(k, ((const st_index_state *)k->state)->k, true, one);
}

static st_status cuda_constant_of_shape(const st_kctx *k)
{
    const st_const_state *s = (const st_const_state *)k->state;
    unsigned char v[16] = {0};
    if (s->dtype == k->out[0].dtype) memcpy(v, s->value, st_dtype_size(s->dtype));
    else st_convert(k->out[0].dtype, v, s->dtype, s->value, 1);
    return fill(k, 0, false, v);
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

/* Any dtype of 1 to 8 bytes but float64 (strings live on the host), and
 * the family's shape rules (ops/lower_index.h). */
static bool bytes_accepts(const st_knode *n, char *why, size_t len)
{
    if (!st_lidx_accepts(n, "CUDA", ST_LCOPY_RANK, why, len)) return false;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0) continue;
        if (v->dtype == ST_STRING || st_dtype_size(v->dtype) > 8 || st_dtype_size(v->dtype) == 0)
            return st_kernel_refuse(why, len, "%s of %s data", n->op->name, st_dtype_name(v->dtype));
    }
    return st_cuda_accepts_no_f64(n, why, len);
}

static bool einsum_accepts(const st_knode *n, char *why, size_t len)
{
    if (!st_lidx_accepts(n, "CUDA", ST_LCOPY_RANK, why, len)) return false;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        st_dtype t = n->views[i].dtype;
        if (t != ST_F32 && t != ST_F16 && t != ST_BF16) return st_kernel_refuse(why, len, "Einsum of %s data", st_dtype_name(t));
    }
    return true;
}

static bool out_bytes_accepts(const st_knode *n, char *why, size_t len)
{
    const st_view *y = &n->views[n->n_in];
    if (y->dtype == ST_STRING || y->dtype == ST_F64 || st_dtype_size(y->dtype) > 8 || st_dtype_size(y->dtype) == 0)
        return st_kernel_refuse(why, len, "%s of %s data", n->op->name, st_dtype_name(y->dtype));
    return true;
}

extern "C" const st_kernel st_cuda_k_index[] = {
    {"ScatterElements", "", ST_CUDA_DT, cuda_scatter_elements, bytes_accepts, NULL, NULL},
    {"Scatter", "", ST_CUDA_DT, cuda_scatter_elements, bytes_accepts, NULL, NULL},
    {"GatherND", "", ST_CUDA_DT, cuda_gather_nd, bytes_accepts, NULL, NULL},
    {"Trilu", "", ST_CUDA_DT, cuda_trilu, bytes_accepts, NULL, NULL},
    {"EyeLike", "", ST_CUDA_DT, cuda_eye_like, out_bytes_accepts, NULL, NULL},
    {"ConstantOfShape", "", ST_CUDA_DT, cuda_constant_of_shape, out_bytes_accepts, NULL, NULL},
    {"NonZero", "", ST_CUDA_DT, cuda_nonzero, bytes_accepts, NULL, NULL},
    {"Einsum", "", ST_DT_FLOATS, cuda_einsum, einsum_accepts, NULL, NULL},
    {"Pad", "", ST_CUDA_DT, cuda_pad, bytes_accepts, NULL, NULL},
    {"CenterCropPad", "", ST_CUDA_DT, cuda_pad, bytes_accepts, NULL, NULL},
    {"Expand", "", ST_CUDA_DT, cuda_expand, bytes_accepts, NULL, NULL},
    {"Tile", "", ST_CUDA_DT, cuda_tile, bytes_accepts, NULL, NULL},
    {"DepthToSpace", "", ST_CUDA_DT, cuda_depth_to_space, bytes_accepts, NULL, NULL},
    {"SpaceToDepth", "", ST_CUDA_DT, cuda_space_to_depth, bytes_accepts, NULL, NULL},
    {"GatherElements", "", ST_CUDA_DT, cuda_gather_elements, bytes_accepts, NULL, NULL},
    {"ScatterND", "", ST_CUDA_DT, cuda_scatter_nd, bytes_accepts, NULL, NULL},
    {"OneHot", "", ST_CUDA_DT, cuda_one_hot, bytes_accepts, NULL, NULL},
    {"Range", "", ST_CUDA_DT, cuda_range, bytes_accepts, NULL, NULL},
    {"CumSum", "", ST_CUDA_DT, cuda_cumsum, bytes_accepts, NULL, NULL},
    {"TopK", "", ST_CUDA_DT, cuda_topk, bytes_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
