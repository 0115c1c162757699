/*
 * vk_barrier.c — the barrier builder: which byte ranges a buffer memory
 * barrier before a dispatch must cover, from the DAG.
 *
 * Vulkan orders nothing by itself: two dispatches of one command buffer
 * may overlap unless a barrier between them says otherwise, and a
 * VkBufferMemoryBarrier2 names a buffer, an offset and a size.  The
 * tracker keeps, per command buffer, the accesses recorded since the last
 * barrier that covered them.  Before each dispatch it compares the
 * dispatch's bindings with them:
 *   - an earlier access of the same command (a kernel of several
 *     dispatches), or of a DAG ancestor, that conflicts (overlapping
 *     bytes, one of them a write): the barrier covers exactly the overlap
 *     (with --hazard-mode storage, the whole buffer: what a runtime that
 *     tracks buffers would do);
 *   - one of a command the DAG leaves unordered whose footprints do not
 *     conflict either: the overlap exists only because a descriptor
 *     covers a strided view's extent (two interleaved slots of a concat),
 *     and the API cannot say "every other run of bytes", so that overlap
 *     is ordered too (counted as an "api" range);
 *   - one of a command the DAG leaves unordered whose footprints do
 *     conflict: the DAG missed a hazard (--hazard-mode base-pointer); no
 *     barrier, so the device really runs the pair unordered and the
 *     sanitizer and synchronization validation have something to catch.
 * Independent dispatches (disjoint bytes, or reads only) get no barrier.
 * A barrier's execution dependency covers every earlier command, so the
 * accesses inside the ranges it covers are dropped from the tracker
 * (trimmed where they stick out): later dispatches need not wait for them
 * again, which keeps the barriers few and the tracker small.
 *
 * The ancestor relation is computed once per DAG as a bit matrix (commands
 * are numbered in a topological order, so one pass in order suffices).
 */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"
#include "core/status.h"
#include "runtime/dag.h"

st_status st_vk_ancestors(const st_dag *d, uint64_t **out, int *words)
{
    int n = d->n_cmds, w = (n + 63) / 64;
    if (w == 0) w = 1;
    uint64_t *a = calloc((size_t)(n ? n : 1) * (size_t)w, sizeof *a);
    if (!a) return st_error(ST_ERR_NOMEM, "out of memory for the ancestors of %d commands", n);
    for (int c = 0; c < n; c++) {
        const st_cmd *cmd = &d->cmds[c];
        uint64_t *row = a + (size_t)c * w;
        for (int k = 0; k < cmd->n_pred; k++) {
            int p = d->preds[cmd->pred_first + k];
            const uint64_t *prow = a + (size_t)p * w;
            for (int i = 0; i < w; i++) row[i] |= prow[i];
            row[p / 64] |= 1ull << (p % 64);
        }
    }
    *out = a;
    *words = w;
    return ST_OK;
}

static bool is_ancestor(const st_vk_tracker *t, int p, int c)
{
    return t->anc && (t->anc[(size_t)c * t->words + p / 64] >> (p % 64)) & 1;
}

/* Whether the DAG's footprints of commands a and b conflict (rule 3). */
static bool fp_conflict(const st_dag *d, int a, int b)
{
    const st_cmd *ca = &d->cmds[a], *cb = &d->cmds[b];
    for (int i = 0; i < ca->n_fp; i++) {
        const st_fp *x = &d->fps[ca->fp_first + i];
        for (int j = 0; j < cb->n_fp; j++) {
            const st_fp *y = &d->fps[cb->fp_first + j];
            if (x->storage == y->storage && (x->write || y->write) && x->lo < y->hi && y->lo < x->hi) return true;
        }
    }
    return false;
}

static int push_range(st_vk_range *out, int n, int cap, const st_storage *s, int64_t lo, int64_t hi, bool w)
{
    /* merge with a range of the same buffer it touches */
    for (int i = 0; i < n; i++)
        if (out[i].s == s && lo <= out[i].hi && out[i].lo <= hi) {
            if (lo < out[i].lo) out[i].lo = lo;
            if (hi > out[i].hi) out[i].hi = hi;
            out[i].after_write |= w;
            return n;
        }
    if (n >= cap) return -1;
    out[n] = (st_vk_range){s, lo, hi, w};
    return n + 1;
}

static bool reserve(st_vk_tracker *t, int more)
{
    if (t->n + more <= t->cap) return true;
    int cap = t->cap ? t->cap * 2 : 64;
    while (cap < t->n + more) cap *= 2;
    st_vk_access *a = realloc(t->acc, (size_t)cap * sizeof *a);
    if (!a) return false;
    t->acc = a;
    t->cap = cap;
    return true;
}

/* Drops the parts of tracked accesses that lie inside range r. */
static bool retire(st_vk_tracker *t, const st_vk_range *r)
{
    for (int i = 0; i < t->n; i++) {
        st_vk_access *a = &t->acc[i];
        if (a->s != r->s || a->hi <= r->lo || r->hi <= a->lo) continue;
        bool left = a->lo < r->lo, right = a->hi > r->hi;
        if (left && right) { /* split: keep both ends */
            if (!reserve(t, 1)) return false;
            a = &t->acc[i];
            st_vk_access tail = *a;
            tail.lo = r->hi;
            a->hi = r->lo;
            t->acc[t->n++] = tail;
        } else if (left) {
            a->hi = r->lo;
        } else if (right) {
            a->lo = r->hi;
        } else {
            t->acc[i--] = t->acc[--t->n];
        }
    }
    return true;
}

int st_vk_tracker_add(st_vk_tracker *t, int cmd, const st_vk_access *acc, int n, st_vk_range *out, int cap)
{
    int nr = 0;
    for (int k = 0; k < n; k++) {
        const st_vk_access *b = &acc[k];
        for (int i = 0; i < t->n; i++) {
            const st_vk_access *a = &t->acc[i];
            if (a->s != b->s || !(a->write || b->write) || a->hi <= b->lo || b->hi <= a->lo) continue;
            int64_t lo = a->lo > b->lo ? a->lo : b->lo, hi = a->hi < b->hi ? a->hi : b->hi;
            bool ordered = a->cmd == cmd || is_ancestor(t, a->cmd, cmd);
            if (!ordered && t->dag && fp_conflict(t->dag, a->cmd, cmd)) {
                t->missed++;
                continue;
            }
            if (ordered) t->edge_ranges++;
            else t->api_ranges++;
            if (ordered && t->whole) {
                lo = 0;
                hi = (int64_t)a->s->size;
            }
            nr = push_range(out, nr, cap, a->s, lo, hi, a->write);
            if (nr < 0) return -1;
        }
    }
    for (int i = 0; i < nr; i++)
        if (!retire(t, &out[i])) return -1;
    if (!reserve(t, n)) return -1;
    for (int k = 0; k < n; k++) {
        t->acc[t->n] = acc[k];
        t->acc[t->n++].cmd = cmd;
    }
    if (nr) {
        t->barriers++;
        t->ranges += nr;
    }
    return nr;
}

void st_vk_tracker_reset(st_vk_tracker *t) { t->n = 0; }

void st_vk_tracker_free(st_vk_tracker *t)
{
    free(t->acc);
    t->acc = NULL;
    t->n = t->cap = 0;
}
