/*
 * dag.c — commands with footprints, and edges from byte-range overlap.
 *
 * Edges come from an interval index per storage: a sorted array of
 * disjoint segments, each remembering its last writer and the readers
 * since that write.  A command's read depends on the last writer of every
 * overlapping segment (RAW); its write depends on that writer (WAW) and on
 * every reader since (WAR).  Finding the k segments an operand overlaps
 * costs O(log S + k); inserting or removing segments is a memmove, O(S),
 * where S is the number of segments of that storage (at most twice the
 * footprints seen so far, in practice the live values of the arena).
 * Transitive reduction then keeps only edges no other path implies, using
 * ancestor bitsets: O(C^2 / 64) bits of work and memory for C commands.
 */
#include "runtime/dag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/model.h"

/* ---- the interval index ---- */

typedef struct seg {
    int64_t lo, hi;
    int writer;              /* -1: no write seen */
    int nr, cap;
    int *readers;
} seg;

typedef struct segmap {
    seg *v;
    int n, cap;
} segmap;

static bool seg_insert(segmap *m, int at, seg s)
{
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 16;
        seg *v = realloc(m->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        m->v = v;
        m->cap = cap;
    }
    if (at < m->n) memmove(m->v + at + 1, m->v + at, (size_t)(m->n - at) * sizeof *m->v);
    m->v[at] = s;
    m->n++;
    return true;
}

/* First segment whose hi > x. */
static int seg_find(const segmap *m, int64_t x)
{
    int lo = 0, hi = m->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (m->v[mid].hi <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool readers_copy(seg *dst, const seg *src)
{
    dst->readers = NULL;
    dst->cap = dst->nr = src->nr;
    if (!src->nr) return true;
    dst->readers = malloc((size_t)src->nr * sizeof *dst->readers);
    if (!dst->readers) return false;
    memcpy(dst->readers, src->readers, (size_t)src->nr * sizeof *dst->readers);
    return true;
}

/* Splits the segment containing x (strictly inside) into two at x. */
static bool seg_split(segmap *m, int64_t x)
{
    int i = seg_find(m, x);
    if (i >= m->n || m->v[i].lo >= x) return true;
    seg right = m->v[i];
    right.lo = x;
    if (!readers_copy(&right, &m->v[i])) return false;
    if (!seg_insert(m, i + 1, right)) {
        free(right.readers);
        return false;
    }
    m->v[i].hi = x;
    return true;
}

static bool add_reader(seg *s, int c)
{
    if (s->nr && s->readers[s->nr - 1] == c) return true;
    if (s->nr == s->cap) {
        int cap = s->cap ? s->cap * 2 : 4;
        int *r = realloc(s->readers, (size_t)cap * sizeof *r);
        if (!r) return false;
        s->readers = r;
        s->cap = cap;
    }
    s->readers[s->nr++] = c;
    return true;
}

static bool seg_write(segmap *m, int64_t lo, int64_t hi, int c)
{
    if (!seg_split(m, lo) || !seg_split(m, hi)) return false;
    int i = seg_find(m, lo), j = i;
    while (j < m->n && m->v[j].lo < hi) free(m->v[j++].readers);
    if (j < m->n) memmove(m->v + i, m->v + j, (size_t)(m->n - j) * sizeof *m->v);
    m->n -= j - i;
    return seg_insert(m, i, (seg){lo, hi, c, 0, 0, NULL});
}

static bool seg_read(segmap *m, int64_t lo, int64_t hi, int c)
{
    if (!seg_split(m, lo) || !seg_split(m, hi)) return false;
    int64_t at = lo;
    int i = seg_find(m, lo);
    while (at < hi) {
        if (i < m->n && m->v[i].lo <= at) {
            if (!add_reader(&m->v[i], c)) return false;
            at = m->v[i].hi;
            i++;
            continue;
        }
        int64_t end = i < m->n && m->v[i].lo < hi ? m->v[i].lo : hi;
        seg s = {at, end, -1, 0, 0, NULL};
        if (!add_reader(&s, c) || !seg_insert(m, i, s)) {
            free(s.readers);
            return false;
        }
        at = end;
        i++;
    }
    return true;
}

/* ---- building ---- */

typedef struct edge_list {
    int *from, *to;
    int n, cap;
} edge_list;

static bool edge_add(edge_list *e, int from, int to)
{
    if (e->n == e->cap) {
        int cap = e->cap ? e->cap * 2 : 256;
        int *f = realloc(e->from, (size_t)cap * sizeof *f);
        if (!f) return false;
        e->from = f;
        int *t = realloc(e->to, (size_t)cap * sizeof *t);
        if (!t) return false;
        e->to = t;
        e->cap = cap;
    }
    e->from[e->n] = from;
    e->to[e->n] = to;
    e->n++;
    return true;
}

/* The bytes the hazard mode believes a footprint touches. */
static void mode_range(st_hazard_mode mode, const st_fp *f, int64_t *lo, int64_t *hi)
{
    switch (mode) {
    case ST_HAZARD_STORAGE: *lo = 0; *hi = INT64_MAX; break;
    /* the seed's bug: only views that start at the same address meet */
    case ST_HAZARD_BASE_POINTER: *lo = f->lo; *hi = f->lo + 1; break;
    default: *lo = f->lo; *hi = f->hi; break;
    }
}

const st_op_def st_op_transfer = {.name = "Transfer", .domain = "strata", .types = ST_DT_ALL};

static int count_cmds(const st_plan *p)
{
    int n = p->n_transfers;
    for (int i = 0; i < p->n_nodes; i++) n += p->nodes[i].kind == ST_PN_EXEC;
    return n;
}

/* Each operand's bytes: with `fine`, its exact runs when there are at most
 * ST_FP_MAX_RUNS of them (rule 3's optimisation: the writers of two
 * interleaved halves of a concat are then not ordered), else its extent.
 * fp has room for ST_FP_MAX_RUNS entries per operand. */
static void default_footprint(int n_in, int n_out, const st_view *views, const bool *skip, bool fine,
                              st_footprint *fp, int *nfp)
{
    st_range runs[ST_FP_MAX_RUNS];
    for (int k = 0; k < n_in + n_out; k++) {
        if (!views[k].storage || (k < n_in && skip && skip[k])) continue;
        int n = fine ? st_view_runs(&views[k], ST_FP_MAX_RUNS, runs) : 0;
        if (n == 0) {
            st_view_extent(&views[k], &runs[0].lo, &runs[0].hi);
            n = 1;
        }
        for (int r = 0; r < n; r++) fp[(*nfp)++] = (st_footprint){k, k >= n_in, runs[r].lo, runs[r].hi};
    }
}

static int storage_index(const st_plan *p, const st_storage *s)
{
    for (int i = 0; s && i < p->n_storages; i++)
        if (p->storages[i] == s) return i;
    return -1;
}

/* The view command cmd (on device d) reads value v through: the value's
 * own, a constant's host copy, or the transfer of it to d. */
static st_view input_view(const st_plan *p, int v, int d)
{
    const st_pvalue *pv = &p->values[v];
    if (pv->kind == ST_PV_CONST) return d == ST_DEV_HOST && p->target.mixed ? pv->host_view : pv->view;
    const st_transfer *t = p->target.mixed ? st_plan_transfer_of(p, v, d) : NULL;
    return t ? t->view : pv->view;
}

/* Fills cmd's footprints (into d->fps, grown as needed) from its views. */
static bool add_footprints(const st_plan *p, st_dag *d, st_cmd *cmd, int c, st_footprint *tmp, bool fine,
                           int *cap)
{
    int nfp = 0;
    if (cmd->op->footprint) nfp = cmd->op->footprint(cmd->state, cmd->n_in, cmd->n_out, cmd->views, cmd->skip, tmp);
    else default_footprint(cmd->n_in, cmd->n_out, cmd->views, cmd->skip, fine, tmp, &nfp);
    if (d->n_fps + nfp > *cap) {
        int want = 2 * (d->n_fps + nfp);
        st_fp *grown = realloc(d->fps, (size_t)want * sizeof *grown);
        if (!grown) return false;
        d->fps = grown;
        *cap = want;
    }
    cmd->fp_first = d->n_fps;
    for (int f = 0; f < nfp; f++) {
        if (tmp[f].hi <= tmp[f].lo) continue; /* an empty tensor touches nothing */
        st_fp *fp = &d->fps[d->n_fps++];
        fp->cmd = c;
        fp->operand = tmp[f].operand;
        fp->write = tmp[f].write;
        fp->lo = tmp[f].lo;
        fp->hi = tmp[f].hi;
        fp->storage = storage_index(p, cmd->views[tmp[f].operand].storage);
    }
    cmd->n_fp = d->n_fps - cmd->fp_first;
    return true;
}

static st_status make_commands(const st_plan *p, st_dag *d, bool fine)
{
    const st_graph *g = p->g;
    int n_views = 2 * p->n_transfers, most = 2;
    for (int i = 0; i < g->n_nodes; i++)
        if (p->nodes[i].kind == ST_PN_EXEC) {
            int n_in;
            st_plan_in(p, &g->nodes[i], i, &n_in);
            n_views += n_in + g->nodes[i].n_out;
            if (n_in + g->nodes[i].n_out > most) most = n_in + g->nodes[i].n_out;
        }
    d->view_pool = calloc((size_t)n_views + 1, sizeof *d->view_pool);
    /* an op's footprint rule may give two ranges per operand, the default
     * rule up to ST_FP_MAX_RUNS; most operands take one */
    int cap = 2 * n_views + 1;
    d->fps = calloc((size_t)cap, sizeof *d->fps);
    st_footprint *tmp = calloc((size_t)most * ST_FP_MAX_RUNS + 1, sizeof *tmp);
    if (!d->view_pool || !d->fps || !tmp) {
        free(tmp);
        return st_error(ST_ERR_NOMEM, "out of memory building commands");
    }
    int vi = 0, c = 0, t = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_EXEC) continue;
        /* the transfers whose first reader this is run just before it */
        for (; t < p->n_transfers && p->transfers[t].first <= i; t++) {
            const st_transfer *tr = &p->transfers[t];
            st_cmd *cmd = &d->cmds[c];
            cmd->node = -1 - t;
            cmd->gnode = &tr->node;
            cmd->op = &st_op_transfer;
            cmd->device = ST_DEV_MAIN;  /* the device backend copies either way */
            cmd->n_in = cmd->n_out = 1;
            cmd->views = d->view_pool + vi;
            cmd->views[0] = p->values[tr->value].view;
            cmd->views[1] = tr->view;
            vi += 2;
            if (!add_footprints(p, d, cmd, c, tmp, fine, &cap)) {
                free(tmp);
                return st_error(ST_ERR_NOMEM, "out of memory building commands");
            }
            ((st_transfer *)tr)->cmd = c;
            c++;
        }
        const st_node *n = &g->nodes[i];
        const st_pnode *pn = &p->nodes[i];
        st_cmd *cmd = &d->cmds[c];
        int n_in;
        const int *in = st_plan_in(p, n, i, &n_in);
        cmd->node = i;
        cmd->gnode = n;
        cmd->op = st_plan_op(p, n, i);
        cmd->state = pn->state;
        cmd->device = pn->device;
        cmd->run = pn->kernel ? pn->kernel->run : NULL;
        cmd->priv = pn->priv;
        cmd->n_in = n_in;
        cmd->n_out = n->n_out;
        cmd->skip = pn->skip;
        cmd->views = d->view_pool + vi;
        for (int k = 0; k < n_in + n->n_out; k++) {
            int v = k < n_in ? in[k] : st_plan_out(p, n, i, k - n_in);
            if (v < 0) continue;
            cmd->views[k] = k < n_in ? input_view(p, v, pn->device) : p->values[v].view;
        }
        vi += n_in + n->n_out;
        if (!cmd->run) {
            free(tmp);
            return st_error(ST_ERR_INTERNAL, "node '%s' (%s) has no kernel after placement", n->name, cmd->op->name);
        }
        if (!add_footprints(p, d, cmd, c, tmp, fine, &cap)) {
            free(tmp);
            return st_error(ST_ERR_NOMEM, "out of memory building commands");
        }
        c++;
    }
    free(tmp);
    return ST_OK;
}

static st_status find_edges(const st_dag *d, st_hazard_mode mode, int n_storages, edge_list *e)
{
    segmap *maps = calloc((size_t)n_storages + 1, sizeof *maps);
    int *mark = malloc(((size_t)d->n_cmds + 1) * sizeof *mark);
    st_status s = ST_OK;
    if (!maps || !mark) s = st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
    for (int c = 0; c < d->n_cmds && s == ST_OK; c++) mark[c] = -1;
    for (int c = 0; c < d->n_cmds && s == ST_OK; c++) {
        const st_cmd *cmd = &d->cmds[c];
        /* edges first, from the state before this command */
        for (int f = cmd->fp_first; f < cmd->fp_first + cmd->n_fp && s == ST_OK; f++) {
            const st_fp *fp = &d->fps[f];
            segmap *m = &maps[fp->storage];
            int64_t lo, hi;
            mode_range(mode, fp, &lo, &hi);
            for (int i = seg_find(m, lo); i < m->n && m->v[i].lo < hi; i++) {
                const seg *sg = &m->v[i];
                if (sg->writer >= 0 && sg->writer != c && mark[sg->writer] != c) {
                    mark[sg->writer] = c;
                    if (!edge_add(e, sg->writer, c)) s = st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
                }
                if (!fp->write) continue;
                for (int r = 0; r < sg->nr; r++) {
                    int rd = sg->readers[r];
                    if (rd == c || mark[rd] == c) continue;
                    mark[rd] = c;
                    if (!edge_add(e, rd, c)) s = st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
                }
            }
        }
        /* then record this command's accesses: reads before writes, so an
         * operand both read and written ends up owned by the write */
        for (int pass = 0; pass < 2 && s == ST_OK; pass++)
            for (int f = cmd->fp_first; f < cmd->fp_first + cmd->n_fp; f++) {
                const st_fp *fp = &d->fps[f];
                if (fp->write != (pass == 1)) continue;
                int64_t lo, hi;
                mode_range(mode, fp, &lo, &hi);
                bool ok = fp->write ? seg_write(&maps[fp->storage], lo, hi, c)
                                    : seg_read(&maps[fp->storage], lo, hi, c);
                if (!ok) {
                    s = st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
                    break;
                }
            }
    }
    if (maps)
        for (int i = 0; i < n_storages; i++) {
            for (int j = 0; j < maps[i].n; j++) free(maps[i].v[j].readers);
            free(maps[i].v);
        }
    free(maps);
    free(mark);
    return s;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Builds the successor CSR from the predecessor CSR. */
static st_status build_succs(st_dag *d)
{
    free(d->succs);
    d->succs = malloc(((size_t)d->n_edges + 1) * sizeof *d->succs);
    if (!d->succs) return st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
    for (int c = 0; c < d->n_cmds; c++) d->cmds[c].n_succ = 0;
    for (int c = 0; c < d->n_cmds; c++)
        for (int k = 0; k < d->cmds[c].n_pred; k++) d->cmds[d->preds[d->cmds[c].pred_first + k]].n_succ++;
    int at = 0;
    for (int c = 0; c < d->n_cmds; c++) {
        d->cmds[c].succ_first = at;
        at += d->cmds[c].n_succ;
        d->cmds[c].n_succ = 0;
    }
    for (int c = 0; c < d->n_cmds; c++)
        for (int k = 0; k < d->cmds[c].n_pred; k++) {
            st_cmd *pc = &d->cmds[d->preds[d->cmds[c].pred_first + k]];
            d->succs[pc->succ_first + pc->n_succ++] = c;
        }
    return ST_OK;
}

/* Ancestor bitsets: bit p of anc[c] is set when a path leads from p to c. */
static uint64_t *ancestors(const st_dag *d, size_t *words_out)
{
    size_t words = ((size_t)d->n_cmds + 63) / 64;
    uint64_t *anc = calloc((size_t)d->n_cmds * words + 1, sizeof *anc);
    if (!anc) return NULL;
    for (int c = 0; c < d->n_cmds; c++) {
        uint64_t *a = anc + (size_t)c * words;
        for (int k = 0; k < d->cmds[c].n_pred; k++) {
            int p = d->preds[d->cmds[c].pred_first + k];
            const uint64_t *b = anc + (size_t)p * words;
            for (size_t w = 0; w <= (size_t)p / 64; w++) a[w] |= b[w];
            a[p / 64] |= 1ull << (p % 64);
        }
    }
    *words_out = words;
    return anc;
}

static st_status reduce(st_dag *d)
{
    size_t words;
    uint64_t *anc = ancestors(d, &words);
    if (!anc) return st_error(ST_ERR_NOMEM, "out of memory reducing the hazard DAG");
    int w = 0;
    for (int c = 0; c < d->n_cmds; c++) {
        st_cmd *cmd = &d->cmds[c];
        int first = w;
        for (int k = 0; k < cmd->n_pred; k++) {
            int p = d->preds[cmd->pred_first + k];
            bool implied = false;
            for (int j = 0; j < cmd->n_pred && !implied; j++) {
                int q = d->preds[cmd->pred_first + j];
                if (q != p && q > p && (anc[(size_t)q * words + (size_t)p / 64] >> (p % 64) & 1)) implied = true;
            }
            if (!implied) d->preds[w++] = p;
        }
        cmd->pred_first = first;
        cmd->n_pred = w - first;
    }
    d->n_edges = w;
    free(anc);
    return build_succs(d);
}

st_status st_dag_build(st_plan *p, st_hazard_mode mode, st_dag **out)
{
    st_dag *d = calloc(1, sizeof *d);
    if (!d) return st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
    d->n_cmds = count_cmds(p);
    d->cmds = calloc((size_t)d->n_cmds + 1, sizeof *d->cmds);
    d->n_storages = p->n_storages;
    d->storages = p->storages;
    edge_list e = {0};
    st_status s = d->cmds ? make_commands(p, d, mode == ST_HAZARD_RANGES) : st_error(ST_ERR_NOMEM, "out of memory building commands");
    if (s == ST_OK) s = find_edges(d, mode, p->n_storages, &e);
    if (s == ST_OK) {
        /* predecessor CSR, sorted and unique per command */
        d->preds = malloc(((size_t)e.n + 1) * sizeof *d->preds);
        if (!d->preds) s = st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
    }
    if (s == ST_OK) {
        for (int c = 0; c < d->n_cmds; c++) d->cmds[c].n_pred = 0;
        for (int i = 0; i < e.n; i++) d->cmds[e.to[i]].n_pred++;
        int at = 0;
        for (int c = 0; c < d->n_cmds; c++) {
            d->cmds[c].pred_first = at;
            at += d->cmds[c].n_pred;
            d->cmds[c].n_pred = 0;
        }
        for (int i = 0; i < e.n; i++) {
            st_cmd *cmd = &d->cmds[e.to[i]];
            d->preds[cmd->pred_first + cmd->n_pred++] = e.from[i];
        }
        for (int c = 0; c < d->n_cmds; c++)
            qsort(d->preds + d->cmds[c].pred_first, (size_t)d->cmds[c].n_pred, sizeof(int), cmp_int);
        d->n_edges = d->n_edges_found = e.n;
        s = reduce(d);
    }
    free(e.from);
    free(e.to);
    if (s != ST_OK) {
        st_dag_free(d);
        return s;
    }
    for (int c = 0; c < d->n_cmds; c++)
        if (d->cmds[c].node >= 0) p->nodes[d->cmds[c].node].cmd = c;
    const st_graph *g = p->g;
    d->host = calloc((size_t)(g->n_inputs + g->n_outputs) + 1, sizeof *d->host);
    if (!d->host) {
        st_dag_free(d);
        return st_error(ST_ERR_NOMEM, "out of memory building the hazard DAG");
    }
    for (int i = 0; i < g->n_inputs + g->n_outputs; i++) {
        const st_pvalue *pv = &p->values[i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs]];
        if (pv->kind == ST_PV_DEAD || pv->storage < 0) continue;
        st_fp *f = &d->host[d->n_host++];
        f->cmd = -1;
        f->storage = pv->storage;
        st_view_extent(&pv->view, &f->lo, &f->hi);
    }
    *out = d;
    return ST_OK;
}

bool st_dag_touches_host(const st_dag *d, int c)
{
    const st_cmd *cmd = &d->cmds[c];
    for (int i = cmd->fp_first; i < cmd->fp_first + cmd->n_fp; i++)
        for (int h = 0; h < d->n_host; h++) {
            const st_fp *f = &d->fps[i], *x = &d->host[h];
            if (f->storage == x->storage && f->lo < x->hi && x->lo < f->hi) return true;
        }
    return false;
}

int st_dag_edge_hazards(const st_dag *d, int from, int to, st_fp *shared)
{
    static const int rank[] = {0, 3, 1, 0, 2}; /* by mask bit: RAW first, then WAW, then WAR */
    const st_cmd *a = &d->cmds[from], *b = &d->cmds[to];
    int mask = 0, best = 0;
    for (int i = a->fp_first; i < a->fp_first + a->n_fp; i++)
        for (int j = b->fp_first; j < b->fp_first + b->n_fp; j++) {
            const st_fp *x = &d->fps[i], *y = &d->fps[j];
            if (x->storage != y->storage || x->hi <= y->lo || y->hi <= x->lo || !(x->write || y->write)) continue;
            int kind = x->write && y->write ? ST_HAZ_WAW : x->write ? ST_HAZ_RAW : ST_HAZ_WAR;
            mask |= kind;
            if (shared && rank[kind] > best) {
                best = rank[kind];
                *shared = (st_fp){to, y->storage, y->operand, y->write, x->lo > y->lo ? x->lo : y->lo,
                                  x->hi < y->hi ? x->hi : y->hi};
            }
        }
    return mask;
}

const char *st_dag_hazard_name(int mask)
{
    static const char *names[8] = {"order", "RAW", "WAR", "RAW+WAR", "WAW", "RAW+WAW", "WAR+WAW", "RAW+WAR+WAW"};
    return names[mask & 7];
}

void st_dag_free(st_dag *d)
{
    if (!d) return;
    free(d->host);
    free(d->cmds);
    free(d->fps);
    free(d->preds);
    free(d->succs);
    free(d->view_pool);
    free(d);
}

int st_dag_overlapping(const st_dag *d, const st_storage *s, int64_t lo, int64_t hi, bool for_write, int *out)
{
    int n = 0, last = -1;
    for (int i = 0; i < d->n_fps; i++) {
        const st_fp *f = &d->fps[i];
        if (d->storages[f->storage] != s || f->hi <= lo || hi <= f->lo) continue;
        if (!for_write && !f->write) continue;
        if (f->cmd == last) continue;
        /* fps are grouped by command, so a repeat is always the previous one */
        out[n++] = last = f->cmd;
    }
    return n;
}

void st_dag_remove_edge(st_dag *d, int cmd, int pred_index)
{
    st_cmd *c = &d->cmds[cmd];
    int at = c->pred_first + pred_index;
    memmove(d->preds + at, d->preds + at + 1, (size_t)(d->n_edges - at - 1) * sizeof *d->preds);
    c->n_pred--;
    for (int k = cmd + 1; k < d->n_cmds; k++) d->cmds[k].pred_first--;
    d->n_edges--;
    build_succs(d);
}

/* ---- the sanitizer's check ---- */

static int fp_by_storage_lo(const void *a, const void *b)
{
    const st_fp *x = *(st_fp *const *)a, *y = *(st_fp *const *)b;
    if (x->storage != y->storage) return x->storage - y->storage;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

st_status st_dag_check(const st_dag *d)
{
    size_t words;
    uint64_t *anc = ancestors(d, &words);
    const st_fp **sorted = malloc(((size_t)d->n_fps + 1) * sizeof *sorted);
    const st_fp **active = malloc(((size_t)d->n_fps + 1) * sizeof *active);
    if (!anc || !sorted || !active) {
        free(anc);
        free(sorted);
        free(active);
        return st_error(ST_ERR_NOMEM, "out of memory in the sanitizer");
    }
    for (int i = 0; i < d->n_fps; i++) sorted[i] = &d->fps[i];
    qsort(sorted, (size_t)d->n_fps, sizeof *sorted, fp_by_storage_lo);
    /* sweep each storage by start address, keeping the footprints that are
     * still open; every overlapping pair with a write must be ordered */
    st_status s = ST_OK;
    int na = 0;
    for (int i = 0; i < d->n_fps && s == ST_OK; i++) {
        const st_fp *f = sorted[i];
        int keep = 0;
        for (int j = 0; j < na; j++)
            if (active[j]->storage == f->storage && active[j]->hi > f->lo) active[keep++] = active[j];
        na = keep;
        for (int j = 0; j < na && s == ST_OK; j++) {
            const st_fp *a = active[j];
            if (a->cmd == f->cmd || (!a->write && !f->write)) continue;
            int early = a->cmd < f->cmd ? a->cmd : f->cmd, late = a->cmd ^ f->cmd ^ early;
            if (anc[(size_t)late * words + (size_t)early / 64] >> (early % 64) & 1) continue;
            const st_cmd *ce = &d->cmds[early], *cl = &d->cmds[late];
            const st_fp *fe = a->cmd == early ? a : f, *fl = a->cmd == early ? f : a;
            int64_t lo = a->lo > f->lo ? a->lo : f->lo, hi = a->hi < f->hi ? a->hi : f->hi;
            s = st_error(ST_ERR_HAZARD,
                         "sanitizer: commands #%d '%s' (%s, %s) and #%d '%s' (%s, %s) both touch storage %d (%s) bytes [%lld, %lld) but are not ordered",
                         early, ce->gnode->name, ce->op->name, fe->write ? "write" : "read", late, cl->gnode->name,
                         cl->op->name, fl->write ? "write" : "read", f->storage, d->storages[f->storage]->label,
                         (long long)lo, (long long)hi);
        }
        active[na++] = f;
    }
    free(anc);
    free(sorted);
    free(active);
    return s;
}
