/* view.c — view arithmetic, strided copies and the n-d iterator. */
#include "core/view.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void st_strides_contiguous(int rank, const int64_t *sizes, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= sizes[i] > 0 ? sizes[i] : 1;
    }
}

int64_t st_numel(int rank, const int64_t *sizes)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

void st_view_init(st_view *v, st_dtype dtype, int rank, const int64_t *sizes)
{
    memset(v, 0, sizeof *v);
    v->dtype = dtype;
    v->rank = rank;
    for (int i = 0; i < rank; i++) v->sizes[i] = sizes[i];
    st_strides_contiguous(rank, v->sizes, v->strides);
}

bool st_view_is_channels_last(const st_view *v)
{
    if (v->rank != 4) return false;
    const int64_t *n = v->sizes, *s = v->strides;
    /* more than one channel and pixel: otherwise it is NCHW as much */
    if (n[1] < 2 || n[2] * n[3] < 2) return false;
    return s[1] == 1 && (n[3] == 1 || s[3] == n[1]) && (n[2] == 1 || s[2] == n[1] * n[3]) && (n[0] == 1 || s[0] == n[1] * n[2] * n[3]);
}

void st_view_init_channels_last(st_view *v, st_dtype dtype, const int64_t *sizes)
{
    st_view_init(v, dtype, 4, sizes);
    v->strides[1] = 1;
    v->strides[3] = sizes[1];
    v->strides[2] = sizes[1] * sizes[3];
    v->strides[0] = sizes[1] * sizes[2] * sizes[3];
}

int64_t st_view_numel(const st_view *v) { return st_numel(v->rank, v->sizes); }

bool st_view_is_contiguous(const st_view *v)
{
    int64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        if (v->sizes[i] == 1) continue; /* the stride of a unit dim never matters */
        if (v->sizes[i] == 0) return true;
        if (v->strides[i] != s) return false;
        s *= v->sizes[i];
    }
    return true;
}

void st_view_extent(const st_view *v, int64_t *lo, int64_t *hi)
{
    int64_t es = (int64_t)st_dtype_size(v->dtype);
    int64_t mn = 0, mx = 0;
    for (int i = 0; i < v->rank; i++) {
        if (v->sizes[i] == 0) {
            *lo = *hi = v->offset;
            return;
        }
        int64_t d = (v->sizes[i] - 1) * v->strides[i];
        if (d < 0) mn += d;
        else mx += d;
    }
    *lo = v->offset + mn * es;
    *hi = v->offset + (mx + 1) * es;
}

static int range_by_lo(const void *a, const void *b)
{
    const st_range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

int st_view_runs(const st_view *v, int max, st_range *runs)
{
    int64_t es = (int64_t)st_dtype_size(v->dtype), base = v->offset;
    int64_t size[ST_MAX_RANK], stride[ST_MAX_RANK];
    int n = 0;
    /* the dims that move: a reversed dim touches the same bytes as the
     * forward one from its last element; a broadcast dim repeats bytes */
    for (int i = 0; i < v->rank; i++) {
        if (v->sizes[i] == 0) return 0;
        if (v->sizes[i] == 1 || v->strides[i] == 0) continue;
        int64_t s = v->strides[i];
        if (s < 0) {
            base += (v->sizes[i] - 1) * s * es;
            s = -s;
        }
        /* insertion by stride, smallest first */
        int k = n++;
        for (; k > 0 && stride[k - 1] > s; k--) {
            stride[k] = stride[k - 1];
            size[k] = size[k - 1];
        }
        stride[k] = s;
        size[k] = v->sizes[i];
    }
    /* the innermost dims that continue one another make one run */
    int64_t block = 1;
    int first = 0;
    while (first < n && stride[first] == block) block *= size[first++];
    int64_t count = 1;
    for (int k = first; k < n; k++) {
        if (count > max / size[k]) return 0;
        count *= size[k];
    }
    if (count > max) return 0;
    int64_t idx[ST_MAX_RANK] = {0};
    for (int64_t r = 0; r < count; r++) {
        int64_t at = base;
        for (int k = first; k < n; k++) at += idx[k] * stride[k] * es;
        runs[r] = (st_range){at, at + block * es};
        for (int k = first; k < n && ++idx[k] == size[k]; k++) idx[k] = 0;
    }
    qsort(runs, (size_t)count, sizeof *runs, range_by_lo);
    int m = 0;
    for (int64_t r = 0; r < count; r++) {
        if (m > 0 && runs[r].lo <= runs[m - 1].hi) {
            if (runs[r].hi > runs[m - 1].hi) runs[m - 1].hi = runs[r].hi;
        } else {
            runs[m++] = runs[r];
        }
    }
    return m;
}

void st_view_slice(st_view *v, int axis, int64_t start, int64_t step, int64_t count)
{
    assert(axis >= 0 && axis < v->rank);
    if (count > 0) v->offset += start * v->strides[axis] * (int64_t)st_dtype_size(v->dtype);
    /* with one element the step never applies; it may be anything up to
     * INT64_MAX (a Slice's steps are data), so leave the stride alone */
    if (count > 1) v->strides[axis] *= step;
    v->sizes[axis] = count;
}

void st_view_select(st_view *v, int axis, int64_t index)
{
    assert(axis >= 0 && axis < v->rank);
    v->offset += index * v->strides[axis] * (int64_t)st_dtype_size(v->dtype);
    for (int i = axis; i + 1 < v->rank; i++) {
        v->sizes[i] = v->sizes[i + 1];
        v->strides[i] = v->strides[i + 1];
    }
    v->rank--;
}

void st_view_permute(st_view *v, const int *perm)
{
    int64_t sz[ST_MAX_RANK], st[ST_MAX_RANK];
    for (int i = 0; i < v->rank; i++) {
        sz[i] = v->sizes[perm[i]];
        st[i] = v->strides[perm[i]];
    }
    memcpy(v->sizes, sz, sizeof sz);
    memcpy(v->strides, st, sizeof st);
}

void st_view_unsqueeze(st_view *v, int axis)
{
    assert(v->rank < ST_MAX_RANK && axis >= 0 && axis <= v->rank);
    for (int i = v->rank; i > axis; i--) {
        v->sizes[i] = v->sizes[i - 1];
        v->strides[i] = v->strides[i - 1];
    }
    v->sizes[axis] = 1;
    /* any stride works for a unit dim; this one keeps packed views packed */
    v->strides[axis] = axis < v->rank ? v->strides[axis + 1] * v->sizes[axis + 1] : 1;
    v->rank++;
}

void st_view_squeeze(st_view *v, int axis)
{
    assert(axis >= 0 && axis < v->rank && v->sizes[axis] == 1);
    st_view_select(v, axis, 0);
}

/* A view can be reshaped without a copy when each new dim lies inside one
 * "run" of old dims that step through memory evenly.  Runs are found by
 * merging neighbouring old dims whose strides chain (stride[i] ==
 * stride[i+1] * size[i+1]); the new dims must then split each run's element
 * count exactly, and take strides that step through the run. */
bool st_view_reshape(st_view *v, int rank, const int64_t *sizes)
{
    if (st_numel(rank, sizes) != st_view_numel(v)) return false;
    /* an empty view has no elements to place, so any strides express it */
    if (st_view_numel(v) == 0 || st_view_is_contiguous(v)) {
        v->rank = rank;
        memcpy(v->sizes, sizes, (size_t)rank * sizeof *sizes);
        st_strides_contiguous(rank, v->sizes, v->strides);
        return true;
    }
    int64_t run_n[ST_MAX_RANK], run_stride[ST_MAX_RANK];
    int nruns = 0;
    for (int d = 0; d < v->rank; d++) {
        if (v->sizes[d] == 1) continue;
        if (nruns > 0 && run_stride[nruns - 1] == v->strides[d] * v->sizes[d]) {
            run_n[nruns - 1] *= v->sizes[d];
        } else {
            run_n[nruns] = v->sizes[d];
            nruns++;
        }
        run_stride[nruns - 1] = v->strides[d];
    }
    int64_t ns[ST_MAX_RANK];
    int j = 0;
    for (int r = 0; r < nruns; r++) {
        int first = j;
        int64_t p = 1;
        while (j < rank && p < run_n[r]) p *= sizes[j++];
        if (p != run_n[r]) return false;
        int64_t st = run_stride[r];
        for (int k = j - 1; k >= first; k--) {
            ns[k] = st;
            st *= sizes[k];
        }
    }
    for (; j < rank; j++) {
        if (sizes[j] != 1) return false;
        ns[j] = 1;
    }
    v->rank = rank;
    memcpy(v->sizes, sizes, (size_t)rank * sizeof *sizes);
    memcpy(v->strides, ns, (size_t)rank * sizeof *ns);
    return true;
}

st_operand st_operand_of(const st_view *v, void *base)
{
    st_operand o;
    o.data = base ? (char *)base + v->offset : NULL;
    o.dtype = v->dtype;
    o.rank = v->rank;
    for (int i = 0; i < ST_MAX_RANK; i++) {
        o.sizes[i] = i < v->rank ? v->sizes[i] : 1;
        o.strides[i] = i < v->rank ? v->strides[i] : 0;
    }
    return o;
}

bool st_operand_is_contiguous(const st_operand *o)
{
    int64_t s = 1;
    for (int i = o->rank - 1; i >= 0; i--) {
        if (o->sizes[i] == 1) continue;
        if (o->sizes[i] == 0) return true;
        if (o->strides[i] != s) return false;
        s *= o->sizes[i];
    }
    return true;
}

int64_t st_operand_numel(const st_operand *o) { return st_numel(o->rank, o->sizes); }

void st_copy_strided(const st_operand *dst, const st_operand *src)
{
    size_t ds = st_dtype_size(dst->dtype), ss = st_dtype_size(src->dtype);
    if (st_operand_numel(dst) == 0) return;
    if (dst->dtype == src->dtype && st_operand_is_contiguous(dst) && st_operand_is_contiguous(src)) {
        memmove(dst->data, src->data, (size_t)st_operand_numel(dst) * ds);
        return;
    }
    st_iter it;
    for (bool more = st_iter_init(&it, dst->rank, dst->sizes, 2,
                                  (const int64_t *[]){dst->strides, src->strides});
         more; more = st_iter_next(&it)) {
        char *d = (char *)dst->data + it.off[0] * (int64_t)ds;
        const char *s = (const char *)src->data + it.off[1] * (int64_t)ss;
        if (dst->dtype == src->dtype && it.step[0] == 1 && it.step[1] == 1) {
            memmove(d, s, (size_t)it.inner * ds);
        } else if (dst->dtype == src->dtype) {
            for (int64_t i = 0; i < it.inner; i++)
                memcpy(d + i * it.step[0] * (int64_t)ds, s + i * it.step[1] * (int64_t)ss, ds);
        } else if (it.step[0] == 1 && it.step[1] == 1) {
            st_convert(dst->dtype, d, src->dtype, s, (size_t)it.inner); /* a row at a time: vectorised */
        } else {
            for (int64_t i = 0; i < it.inner; i++)
                st_convert(dst->dtype, d + i * it.step[0] * (int64_t)ds, src->dtype,
                           s + i * it.step[1] * (int64_t)ss, 1);
        }
    }
}

bool st_iter_init(st_iter *it, int rank, const int64_t *sizes, int nops,
                  const int64_t *const *strides)
{
    assert(nops <= ST_ITER_MAX && rank <= ST_MAX_RANK);
    memset(it, 0, sizeof *it);
    it->nops = nops;
    /* Drop unit dims, then merge neighbours that are contiguous with each
     * other in every operand, so loops run as long rows. */
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (sizes[d] == 0) it->empty = true;
        if (sizes[d] == 1) continue;
        if (r > 0) {
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (it->strides[k][r - 1] != strides[k][d] * sizes[d]) merge = false;
            if (merge) {
                it->sizes[r - 1] *= sizes[d];
                for (int k = 0; k < nops; k++) it->strides[k][r - 1] = strides[k][d];
                continue;
            }
        }
        it->sizes[r] = sizes[d];
        for (int k = 0; k < nops; k++) it->strides[k][r] = strides[k][d];
        r++;
    }
    if (r == 0) {
        it->sizes[0] = 1;
        r = 1;
    }
    it->rank = r;
    it->inner = it->sizes[r - 1];
    for (int k = 0; k < nops; k++) it->step[k] = it->strides[k][r - 1];
    return !it->empty;
}

bool st_iter_next(st_iter *it)
{
    if (it->empty) return false;
    for (int d = it->rank - 2; d >= 0; d--) {
        it->idx[d]++;
        for (int k = 0; k < it->nops; k++) it->off[k] += it->strides[k][d];
        if (it->idx[d] < it->sizes[d]) return true;
        for (int k = 0; k < it->nops; k++) it->off[k] -= it->strides[k][d] * it->sizes[d];
        it->idx[d] = 0;
    }
    return false;
}

int64_t st_iter_rows(const st_iter *it)
{
    if (it->empty) return 0;
    int64_t r = 1;
    for (int d = 0; d < it->rank - 1; d++) r *= it->sizes[d];
    return r;
}

void st_iter_seek(st_iter *it, int64_t row)
{
    for (int k = 0; k < it->nops; k++) it->off[k] = 0;
    for (int d = it->rank - 2; d >= 0; d--) {
        it->idx[d] = row % it->sizes[d];
        row /= it->sizes[d];
        for (int k = 0; k < it->nops; k++) it->off[k] += it->idx[d] * it->strides[k][d];
    }
}
