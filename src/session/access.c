/*
 * access.c — host reads and writes of tensors, waiting for exactly the
 * commands whose footprints overlap the bytes involved (rule 4).
 *
 * The wait is by byte range of the storage, whatever offset the view
 * starts at: a view at offset 96 into a buffer waits for the writer of
 * those bytes, which is the check the seed report's backend skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "core/status.h"
#include "session/session.h"

void st_tracker_release(st_tracker *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

st_status st_tracker_wait_range(st_tracker *t, const st_storage *s, int64_t lo, int64_t hi, bool for_write)
{
    if (!t) return ST_OK;
    pthread_mutex_lock(&t->mu);
    st_status r = st_tracker_wait_range_locked(t, s, lo, hi, for_write);
    pthread_mutex_unlock(&t->mu);
    return r;
}

st_status st_tracker_wait_range_locked(st_tracker *t, const st_storage *s, int64_t lo, int64_t hi, bool for_write)
{
    st_status r = ST_OK;
    if (t->dag && t->exec) {
        int *cmds = malloc(((size_t)t->dag->n_cmds + 1) * sizeof *cmds);
        if (!cmds) {
            r = t->exec->vt->wait(t->exec, NULL, -1); /* no memory for the list: wait for all */
        } else {
            int n = st_dag_overlapping(t->dag, s, lo, hi, for_write, cmds);
            if (n > 0) r = t->exec->vt->wait(t->exec, cmds, n);
            free(cmds);
        }
    }
    return r;
}

st_status st_tensor_new(const st_view *v, st_dtype model_dtype, st_tracker *tracker, st_tensor **out)
{
    st_tensor *t = calloc(1, sizeof *t);
    if (!t) return st_error(ST_ERR_NOMEM, "out of memory creating a tensor");
    t->view = *v;
    t->model_dtype = model_dtype;
    st_storage_retain(v->storage);
    if (tracker) {
        atomic_fetch_add(&tracker->refs, 1);
        t->tracker = tracker;
    }
    *out = t;
    return ST_OK;
}

void st_tensor_free(st_tensor *t)
{
    if (!t) return;
    st_storage_release(t->view.storage);
    st_tracker_release(t->tracker);
    free(t);
}

st_dtype st_tensor_dtype(const st_tensor *t) { return t ? t->model_dtype : ST_UNDEFINED; }
int st_tensor_rank(const st_tensor *t) { return t ? t->view.rank : -1; }
int64_t st_tensor_dim(const st_tensor *t, int i) { return t && i >= 0 && i < t->view.rank ? t->view.sizes[i] : -1; }
int64_t st_tensor_numel(const st_tensor *t) { return t ? st_view_numel(&t->view) : 0; }

static st_status check_io(const st_tensor *t, st_dtype dtype, const void *p, size_t bytes, const char *fn)
{
    if (!t || (!p && bytes)) return st_error(ST_ERR_INVALID_ARG, "%s: NULL argument", fn);
    if (!st_dtype_valid(dtype)) return st_error(ST_ERR_DTYPE, "%s: invalid dtype %d", fn, (int)dtype);
    if (t->view.dtype == ST_STRING)
        return st_error(ST_ERR_DTYPE, "%s: the tensor holds strings (st_tensor_read_strings reads them)", fn);
    if (dtype == ST_STRING)
        return st_error(ST_ERR_DTYPE, "%s: the tensor holds %s, which is not read or written as strings", fn,
                        st_dtype_name(t->model_dtype));
    bool tf = st_dtype_is_float(t->view.dtype), df = st_dtype_is_float(dtype);
    if (tf != df && dtype != t->model_dtype)
        return st_error(ST_ERR_DTYPE, "%s: tensor holds %s, cannot convert to or from %s", fn,
                        st_dtype_name(t->model_dtype), st_dtype_name(dtype));
    uint64_t need = (uint64_t)st_view_numel(&t->view) * st_dtype_size(dtype);
    if (bytes != need)
        return st_error(ST_ERR_INVALID_ARG, "%s: buffer has %zu bytes, the tensor needs %llu (%lld x %s)", fn, bytes,
                        (unsigned long long)need, (long long)st_view_numel(&t->view), st_dtype_name(dtype));
    return ST_OK;
}

/* The view's bytes [lo, hi) staged on the host, with an operand over them. */
static st_status stage(const st_view *v, int64_t lo, int64_t hi, void **buf, st_operand *op)
{
    *buf = malloc((size_t)(hi - lo) + 1);
    if (!*buf) return st_error(ST_ERR_NOMEM, "out of memory staging %lld bytes", (long long)(hi - lo));
    st_view rel = *v;
    rel.offset = v->offset - lo;
    *op = st_operand_of(&rel, *buf);
    return ST_OK;
}

/* A host access holds the tracker's lock from the wait to the end of the
 * copy: a run of the same session started from another thread cannot
 * submit (or poison, or upload into the arena) in between, so a read sees
 * one run's bytes, never a mix of two. */
static st_status lock_current(const st_tensor *t, const char *fn)
{
    if (!t->tracker) return ST_OK;
    pthread_mutex_lock(&t->tracker->mu);
    if (t->tracker->plan != t->plan) {
        /* another thread's run is the contract's "call made while another
         * thread is inside the session"; this thread's is a stale tensor */
        bool other = !pthread_equal(t->tracker->runner, t->owner);
        pthread_mutex_unlock(&t->tracker->mu);
        return st_error(other ? ST_ERR_BUSY : ST_ERR_INVALID_ARG,
                        "%s: the session has run since %swith other input shapes or failed, so this tensor's bytes "
                        "hold other values; get the output again", fn, other ? "on another thread " : "");
    }
    return ST_OK;
}

static void unlock_current(const st_tensor *t)
{
    if (t->tracker) pthread_mutex_unlock(&t->tracker->mu);
}

/* An operand over storage the CPU backend owns, read or written where it
 * is: staging a 4 MB output through a fresh buffer cost a copy and a
 * page fault per 4 KB (costly on a VM), a third of the time a Python
 * caller spent reading a segmentation model's 12 outputs. */
static bool host_direct(const st_view *v, st_operand *op)
{
    const st_storage *s = v->storage;
    if (s->backend != st_cpu_backend() || !s->host) return false;
    *op = st_operand_of(v, s->host);
    return true;
}

/* The caller's packed buffer p as an operand of dtype over t's shape. */
static st_operand packed_operand(const st_tensor *t, st_dtype dtype, void *p)
{
    st_view packed;
    st_view_init(&packed, dtype, t->view.rank, t->view.sizes);
    return st_operand_of(&packed, p);
}

static st_status tensor_read_locked(const st_tensor *t, st_dtype dtype, void *dst, int64_t lo, int64_t hi)
{
    if (t->tracker) ST_TRY(st_tracker_wait_range_locked(t->tracker, t->view.storage, lo, hi, false));
    st_operand src, d = packed_operand(t, dtype, dst);
    void *buf = NULL;
    st_status s = ST_OK;
    if (!host_direct(&t->view, &src)) {
        st_backend *b = t->view.storage->backend;
        ST_TRY(stage(&t->view, lo, hi, &buf, &src));
        s = b->read(b, t->view.storage, (uint64_t)lo, buf, (uint64_t)(hi - lo));
    }
    if (s == ST_OK) st_copy_strided(&d, &src);
    free(buf);
    return s;
}

st_status st_tensor_read(const st_tensor *t, st_dtype dtype, void *dst, size_t dst_bytes)
{
    ST_TRY(check_io(t, dtype, dst, dst_bytes, "st_tensor_read"));
    int64_t lo, hi;
    st_view_extent(&t->view, &lo, &hi);
    if (hi <= lo) return ST_OK;
    ST_TRY(lock_current(t, "st_tensor_read"));
    st_status s = tensor_read_locked(t, dtype, dst, lo, hi);
    unlock_current(t);
    return s;
}

static st_status tensor_write_locked(st_tensor *t, st_dtype dtype, const void *src, int64_t lo, int64_t hi)
{
    if (t->tracker) ST_TRY(st_tracker_wait_range_locked(t->tracker, t->view.storage, lo, hi, true));
    st_operand dst, sop = packed_operand(t, dtype, (void *)src);
    if (host_direct(&t->view, &dst)) {
        st_copy_strided(&dst, &sop);
        return ST_OK;
    }
    st_backend *b = t->view.storage->backend;
    void *buf;
    ST_TRY(stage(&t->view, lo, hi, &buf, &dst));
    /* a strided view leaves gaps in [lo, hi): read them first so the write
     * puts back exactly what it found there */
    st_status s = st_view_is_contiguous(&t->view) ? ST_OK : b->read(b, t->view.storage, (uint64_t)lo, buf, (uint64_t)(hi - lo));
    if (s == ST_OK) {
        st_copy_strided(&dst, &sop);
        s = b->write(b, t->view.storage, (uint64_t)lo, buf, (uint64_t)(hi - lo));
    }
    free(buf);
    return s;
}

st_status st_tensor_write(st_tensor *t, st_dtype dtype, const void *src, size_t src_bytes)
{
    ST_TRY(check_io(t, dtype, src, src_bytes, "st_tensor_write"));
    int64_t lo, hi;
    st_view_extent(&t->view, &lo, &hi);
    if (hi <= lo) return ST_OK;
    ST_TRY(lock_current(t, "st_tensor_write"));
    st_status s = tensor_write_locked(t, dtype, src, lo, hi);
    unlock_current(t);
    return s;
}

/* A string tensor is a host constant that no command writes (strings are
 * folded at plan time, core/strings.h): its storage holds the pointers,
 * and the characters they point to, for as long as the tensor lives. */
st_status st_tensor_read_strings(const st_tensor *t, const char **dst, size_t count)
{
    if (!t || (count && !dst)) return st_error(ST_ERR_INVALID_ARG, "st_tensor_read_strings: NULL argument");
    if (t->view.dtype != ST_STRING)
        return st_error(ST_ERR_DTYPE, "st_tensor_read_strings: the tensor holds %s, not strings", st_dtype_name(t->model_dtype));
    int64_t n = st_view_numel(&t->view);
    if ((uint64_t)n != count)
        return st_error(ST_ERR_INVALID_ARG, "st_tensor_read_strings: room for %zu strings, the tensor has %lld", count,
                        (long long)n);
    const char *const *base = t->view.storage->host;
    if (!base || t->tracker) return st_error(ST_ERR_INTERNAL, "st_tensor_read_strings: strings outside host memory");
    int64_t idx[ST_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t at = t->view.offset / (int64_t)sizeof(char *);
        for (int d = 0; d < t->view.rank; d++) at += idx[d] * t->view.strides[d];
        dst[i] = base[at];
        for (int d = t->view.rank - 1; d >= 0 && ++idx[d] == t->view.sizes[d]; d--) idx[d] = 0;
    }
    return ST_OK;
}
