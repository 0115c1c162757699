/*
 * k_shape.c — CPU kernels of the layout ops: the copy a view op makes when
 * it cannot be a pure view, Concat's copies of inputs not in place, Gather
 * with an index tensor, Shape and Size.
 */
#include <string.h>

#include "backends/cpu/kernels.h"
#include "runtime/pool.h"
#include "ops/concat.h"
#include "ops/index_math.h"
#include "ops/ops.h"

/* st_copy_strided spread over the pool: the coalesced rows of the copy in
 * tasks of about COPY_TASK_ELEMS elements (a copy moves bytes, so how it
 * is split cannot change them).  Small copies run inline. */
#define COPY_TASK_ELEMS 65536

typedef struct copy_job {
    const st_operand *dst, *src;
    st_iter it;
    int64_t rows, per_task;
} copy_job;

static void copy_rows(void *arg, int64_t t)
{
    const copy_job *j = arg;
    st_iter it = j->it;
    int64_t r0 = t * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
    st_iter_seek(&it, r0);
    size_t ds = st_dtype_size(j->dst->dtype), ss = st_dtype_size(j->src->dtype);
    if (j->dst->dtype == j->src->dtype && it.step[0] == 1 && it.step[1] == 1) {
        /* packed rows of one dtype (a slice of a last-dim concat, YOLOv5's
         * 81 of 85): a memcpy each, without a row operand per call */
        for (int64_t r = r0; r < r1; r++, st_iter_next(&it))
            memcpy((char *)j->dst->data + it.off[0] * (int64_t)ds, (const char *)j->src->data + it.off[1] * (int64_t)ss,
                   (size_t)it.inner * ds);
        return;
    }
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it)) {
        /* one row as a copy of its own (st_copy_strided takes the fast paths) */
        st_operand d = *j->dst, s = *j->src;
        d.data = (char *)j->dst->data + it.off[0] * (int64_t)ds;
        s.data = (char *)j->src->data + it.off[1] * (int64_t)ss;
        d.rank = s.rank = 1;
        d.sizes[0] = s.sizes[0] = it.inner;
        d.strides[0] = it.step[0];
        s.strides[0] = it.step[1];
        st_copy_strided(&d, &s);
    }
}

static void copy_piece(void *arg, int64_t t)
{
    const copy_job *j = arg;
    size_t ds = st_dtype_size(j->dst->dtype), ss = st_dtype_size(j->src->dtype);
    int64_t i0 = t * COPY_TASK_ELEMS, n = j->it.inner - i0 < COPY_TASK_ELEMS ? j->it.inner - i0 : COPY_TASK_ELEMS;
    st_operand d = *j->dst, s = *j->src;
    d.data = (char *)j->dst->data + (j->it.off[0] + i0 * j->it.step[0]) * (int64_t)ds;
    s.data = (char *)j->src->data + (j->it.off[1] + i0 * j->it.step[1]) * (int64_t)ss;
    d.rank = s.rank = 1;
    d.sizes[0] = s.sizes[0] = n;
    d.strides[0] = j->it.step[0];
    s.strides[0] = j->it.step[1];
    st_copy_strided(&d, &s);
}

static void par_copy(st_pool *pool, const st_operand *dst, const st_operand *src)
{
    int64_t n = st_operand_numel(dst);
    if (n < 2 * COPY_TASK_ELEMS || dst->rank > ST_MAX_RANK) {
        st_copy_strided(dst, src);
        return;
    }
    copy_job j = {dst, src, {0}, 0, 0};
    if (!st_iter_init(&j.it, dst->rank, dst->sizes, 2, (const int64_t *[]){dst->strides, src->strides})) return;
    j.rows = st_iter_rows(&j.it);
    if (j.rows == 1) {
        /* one long run: in pieces of COPY_TASK_ELEMS */
        st_parallel_for(pool, (j.it.inner + COPY_TASK_ELEMS - 1) / COPY_TASK_ELEMS, copy_piece, &j);
        return;
    }
    j.per_task = COPY_TASK_ELEMS / (j.it.inner > 0 ? j.it.inner : 1);
    if (j.per_task < 1) j.per_task = 1;
    st_parallel_for(pool, (j.rows + j.per_task - 1) / j.per_task, copy_rows, &j);
}

/* A view op that runs (folded, or its layout cannot be a view): apply the
 * op's own view rule to the input operand and copy.  Reshape-like rules
 * fail on layouts that mix dims; then the elements are copied in
 * row-major order, which is what a reshape means. */
st_status st_cpu_view_copy(const st_kctx *k)
{
    const st_operand *x = &k->in[0];
    for (int o = 0; o < k->n_out; o++) {
        const st_operand *y = &k->out[o];
        if (!y->data && st_operand_numel(y) > 0) continue; /* omitted output */
        st_view in = {0};
        in.dtype = x->dtype;
        in.rank = x->rank;
        memcpy(in.sizes, x->sizes, sizeof in.sizes);
        memcpy(in.strides, x->strides, sizeof in.strides);
        st_view res;
        if (k->node->op->view(k->state, o, &in, &res)) {
            st_operand src = st_operand_of(&res, (char *)x->data);
            par_copy(k->pool, y, &src);
            continue;
        }
        /* row-major order: view the output with the input's shape.  A
         * non-packed output cannot take that view, so go through a packed
         * copy only when it must. */
        st_view yv = {0};
        yv.dtype = y->dtype;
        yv.rank = y->rank;
        memcpy(yv.sizes, y->sizes, sizeof yv.sizes);
        memcpy(yv.strides, y->strides, sizeof yv.strides);
        if (!st_view_reshape(&yv, x->rank, x->sizes))
            return st_error(ST_ERR_INTERNAL, "reshape into a non-packed output");
        st_operand dst = st_operand_of(&yv, y->data);
        par_copy(k->pool, &dst, x);
    }
    return ST_OK;
}

st_status st_cpu_concat(const st_kctx *k)
{
    const st_concat_state *s = k->state;
    const st_operand *y = &k->out[0];
    int64_t start = 0;
    for (int i = 0; i < k->n_in; i++) {
        const st_operand *x = &k->in[i];
        if (!x->data && st_operand_numel(x) > 0) continue;
        int64_t len = x->sizes[s->axis];
        if (!(k->skip && k->skip[i]) && len > 0) {
            st_operand slot = *y;
            slot.sizes[s->axis] = len;
            slot.data = (char *)y->data + start * y->strides[s->axis] * (int64_t)st_dtype_size(y->dtype);
            par_copy(k->pool, &slot, x);
        }
        start += len;
    }
    return ST_OK;
}

st_status st_cpu_gather(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    int axis = ((const st_gather_state *)k->state)->axis;
    int64_t dim = x->sizes[axis];
    int64_t nidx = st_operand_numel(ix);
    /* y = x[..., idx[j], ...]: for each index, copy a slice */
    int64_t idx[ST_MAX_RANK] = {0};
    for (int64_t j = 0; j < nidx; j++) {
        /* multi-index of j in ix */
        int64_t rem = j;
        for (int d = ix->rank - 1; d >= 0; d--) {
            idx[d] = rem % ix->sizes[d];
            rem /= ix->sizes[d];
        }
        int64_t v = st_load_i64(ix->dtype, (const char *)ix->data + st_offset_of(ix, idx) * (int64_t)st_dtype_size(ix->dtype));
        int64_t at = st_im_index(v, dim); /* ops/index_math.h */
        if (at < 0)
            return st_error(ST_ERR_SHAPE, "gather index %lld is out of range for axis %d of size %lld", (long long)v, axis,
                            (long long)dim);
        v = at;
        st_operand src = *x, dst = *y;
        /* src: x with axis removed at v; dst: y with the index dims fixed */
        src.data = (char *)x->data + v * x->strides[axis] * (int64_t)st_dtype_size(x->dtype);
        for (int d = axis; d + 1 < x->rank; d++) {
            src.sizes[d] = x->sizes[d + 1];
            src.strides[d] = x->strides[d + 1];
        }
        src.rank = x->rank - 1;
        int64_t off = 0;
        for (int d = 0; d < ix->rank; d++) off += idx[d] * y->strides[axis + d];
        dst.data = (char *)y->data + off * (int64_t)st_dtype_size(y->dtype);
        for (int d = 0; d < axis; d++) {
            dst.sizes[d] = y->sizes[d];
            dst.strides[d] = y->strides[d];
        }
        for (int d = axis; d < src.rank; d++) {
            dst.sizes[d] = y->sizes[d + ix->rank];
            dst.strides[d] = y->strides[d + ix->rank];
        }
        dst.rank = src.rank;
        st_copy_strided(&dst, &src);
    }
    return ST_OK;
}

st_status st_cpu_shape(const st_kctx *k)
{
    const st_shape_state *s = k->state;
    const st_operand *y = &k->out[0];
    for (int64_t d = s->start; d < s->end; d++)
        st_store_i64(y->dtype, (char *)y->data + (d - s->start) * y->strides[0] * (int64_t)st_dtype_size(y->dtype),
                     k->in[0].sizes[d]);
    return ST_OK;
}

st_status st_cpu_size(const st_kctx *k)
{
    st_store_i64(k->out[0].dtype, k->out[0].data, st_operand_numel(&k->in[0]));
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

/* A view op that cannot be a view (a reshape of a transposed tensor) copies. */
const st_kernel st_cpu_k_shape[] = {
    /* they read a shape only, which strings have too */
    {"Shape", "", ST_DT_ALL | ST_DT(ST_STRING), st_cpu_shape, NULL, NULL, NULL},
    {"Size", "", ST_DT_ALL | ST_DT(ST_STRING), st_cpu_size, NULL, NULL, NULL},
    {"Reshape", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    {"Flatten", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    {"Squeeze", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    {"Unsqueeze", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    /* strings too: a string moves as its pointer (core/strings.h) */
    {"Identity", "", ST_DT_ALL | ST_DT(ST_STRING), st_cpu_view_copy, NULL, NULL, NULL},
    {"Transpose", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    {"Slice", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    {"Split", "", ST_DT_ALL, st_cpu_view_copy, NULL, NULL, NULL},
    {"Gather", "", ST_DT_ALL, st_cpu_gather, NULL, NULL, NULL},
    {"Concat", "", ST_DT_ALL, st_cpu_concat, NULL, NULL, NULL},
    {NULL}
};
