/*
 * plan.c — buffers, lifetimes and arena offsets, and the pass driver.
 *
 * Owns: plan->buffers, arena_bytes, naive_bytes, storages, and the final
 * values[].view offsets and .storage.  Each root value (a graph input or a
 * command's packed output) is one buffer; views and placed Concat inputs
 * share their root's buffer.  A buffer is live from the first node that
 * writes any of its bytes to the last node that reads any of them (graph
 * outputs: to the end).  Buffers whose lives overlap get disjoint bytes;
 * others may share (greedy by size: largest first, lowest gap that fits).
 *
 * Reuse is safe without any special ordering (rule 6): the hazard DAG is
 * built on these final offsets, so a command that writes reused bytes is
 * ordered after every earlier reader and writer of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strings.h"
#include "graph/derive.h"
#include "graph/model.h"
#include "plan/plan.h"



void *st_plan_alloc(st_plan *p, uint64_t bytes)
{
    if (p->n_owned == p->cap_owned) {
        int cap = p->cap_owned ? p->cap_owned * 2 : 32;
        void **o = realloc(p->owned, (size_t)cap * sizeof *o);
        if (!o) return NULL;
        p->owned = o;
        p->cap_owned = cap;
    }
    /* 64-byte alignment suits every SIMD width the kernels use */
    void *d = NULL;
    if (posix_memalign(&d, ST_ALIGN, bytes ? (bytes + ST_ALIGN - 1) / ST_ALIGN * ST_ALIGN : ST_ALIGN) != 0) return NULL;
    p->owned[p->n_owned++] = d;
    return d;
}

static uint64_t value_bytes(const st_pvalue *pv) { return st_pvalue_bytes(pv); }

static int by_size_desc(const void *a, const void *b)
{
    const st_buffer *x = *(st_buffer *const *)a, *y = *(st_buffer *const *)b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->first - y->first;
}

static int by_offset(const void *a, const void *b)
{
    const st_buffer *x = *(st_buffer *const *)a, *y = *(st_buffer *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

st_status st_plan_buffers(st_plan *p)
{
    const st_graph *g = p->g;
    int *buf_of_root = malloc(((size_t)p->n_values + 1) * sizeof *buf_of_root);
    p->buffers = calloc((size_t)p->n_values + (size_t)p->n_transfers + 1, sizeof *p->buffers);
    if (!buf_of_root || !p->buffers) {
        free(buf_of_root);
        return st_error(ST_ERR_NOMEM, "out of memory planning buffers");
    }
    for (int v = 0; v < p->n_values; v++) {
        buf_of_root[v] = -1;
        st_pvalue *pv = &p->values[v];
        if (pv->kind != ST_PV_INPUT && pv->kind != ST_PV_ROOT) continue;
        st_buffer *b = &p->buffers[p->n_buffers];
        b->value = v;
        b->size = (value_bytes(pv) + ST_ALIGN - 1) / ST_ALIGN * ST_ALIGN;
        b->first = pv->kind == ST_PV_INPUT ? -1 : pv->producer;
        /* inputs keep their bytes to the end, so a run whose inputs did not
         * change need not upload them again (exec/session.c) */
        b->last = pv->kind == ST_PV_INPUT ? p->n_nodes : b->first;
        b->device = st_plan_value_device(p, v);
        buf_of_root[v] = p->n_buffers++;
    }
    /* every value in a buffer widens its life: producers (placed inputs are
     * written before their Concat runs) and last readers (views' readers) */
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_DEAD || pv->kind == ST_PV_CONST || pv->buffer < 0) continue;
        int bi = buf_of_root[pv->buffer];
        if (bi < 0) return st_error(ST_ERR_INTERNAL, "value '%s' has no root buffer", g->values[v].name);
        pv->buffer = bi;
        st_buffer *b = &p->buffers[bi];
        int prod = pv->kind == ST_PV_INPUT ? -1 : pv->producer;
        if (prod < b->first) b->first = prod;
        if (pv->last_use > b->last) b->last = pv->last_use;
    }
    free(buf_of_root);
    /* a transfer's copy lives from the transfer (just before its first
     * reader) to its last reader, in the arena of the device it is on */
    for (int t = 0; t < p->n_transfers; t++) {
        st_transfer *tr = &p->transfers[t];
        st_buffer *b = &p->buffers[p->n_buffers];
        int64_t lo, hi;
        st_view_extent(&tr->view, &lo, &hi);
        b->value = -1 - t;
        b->size = ((uint64_t)hi + ST_ALIGN - 1) / ST_ALIGN * ST_ALIGN;
        b->first = tr->first;
        b->last = tr->last;
        b->device = tr->to;
        tr->buffer = p->n_buffers++;
    }

    st_buffer **order = malloc(((size_t)p->n_buffers + 1) * sizeof *order);
    st_buffer **live = malloc(((size_t)p->n_buffers + 1) * sizeof *live);
    if (!order || !live) {
        free(order);
        free(live);
        return st_error(ST_ERR_NOMEM, "out of memory planning buffers");
    }
    for (int i = 0; i < p->n_buffers; i++) order[i] = &p->buffers[i];
    qsort(order, (size_t)p->n_buffers, sizeof *order, by_size_desc);
    p->arena_bytes = 0;
    p->host_arena_bytes = 0;
    p->naive_bytes = 0;
    for (int i = 0; i < p->n_buffers; i++) {
        st_buffer *b = order[i];
        p->naive_bytes += b->size;
        int nl = 0;
        for (int j = 0; j < i; j++)
            if (order[j]->device == b->device && order[j]->first <= b->last && b->first <= order[j]->last)
                live[nl++] = order[j];
        qsort(live, (size_t)nl, sizeof *live, by_offset);
        uint64_t off = 0;
        for (int j = 0; j < nl; j++) {
            if (live[j]->offset >= off + b->size) break; /* the gap before it fits */
            uint64_t end = live[j]->offset + live[j]->size;
            if (end > off) off = end;
        }
        b->offset = off;
        uint64_t *peak = b->device == ST_DEV_HOST ? &p->host_arena_bytes : &p->arena_bytes;
        if (off + b->size > *peak) *peak = off + b->size;
    }
    free(order);
    free(live);

    /* storages[0] is the main arena, storages[1] the host arena */
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_DEAD || pv->kind == ST_PV_CONST || pv->kind == ST_PV_STRUCT) continue;
        pv->view.offset += (int64_t)p->buffers[pv->buffer].offset;
        pv->storage = p->buffers[pv->buffer].device == ST_DEV_HOST ? 1 : 0;
    }
    for (int t = 0; t < p->n_transfers; t++)
        p->transfers[t].view.offset += (int64_t)p->buffers[p->transfers[t].buffer].offset;
    return ST_OK;
}

static st_status init_values(st_plan *p)
{
    const st_graph *g = p->g;
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        const st_value *gv = &g->values[v];
        pv->base = -1;
        pv->concat = -1;
        pv->buffer = -1;
        pv->storage = -1;
        pv->last_use = -1;
        pv->producer = gv->producer;
        if (gv->init) {
            pv->kind = ST_PV_CONST;
            pv->t.present = true;
            pv->t.dtype = gv->init->dtype;
            pv->t.rank = gv->init->rank;
            memcpy(pv->t.dims, gv->init->dims, sizeof pv->t.dims);
            pv->t.data = gv->init->data;
            pv->model_dtype = gv->init->dtype;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        /* a sequence or optional input is made by a list node of the
         * plan's graph from the tensors it holds (passes/sequence.c) */
        if (p->in_elems[i] != ST_IN_TENSOR) continue;
        st_pvalue *pv = &p->values[g->inputs[i]];
        pv->kind = ST_PV_INPUT;
        pv->t.present = true;
        pv->t.dtype = g->values[g->inputs[i]].dtype;
        pv->model_dtype = pv->t.dtype;
        pv->t.rank = p->in_rank[i];
        memcpy(pv->t.dims, p->in_dims[i], sizeof pv->t.dims);
        if (p->value_inputs[i]) {
            size_t n = (size_t)st_numel(pv->t.rank, pv->t.dims);
            void *d = st_plan_alloc(p, st_values_bytes(pv->t.dtype, n, p->in_data[i]));
            if (!d) return st_error(ST_ERR_NOMEM, "out of memory planning");
            st_values_copy(pv->t.dtype, d, n, p->in_data[i]);
            p->value_data[i] = d;
            pv->kind = ST_PV_CONST;
            pv->t.data = d;
        }
    }
    for (int k = p->n_inputs; k < p->n_slots; k++) {
        int v = p->slot_value[k - p->n_inputs];
        st_pvalue *pv = &p->values[v];
        pv->kind = ST_PV_INPUT;
        pv->t.present = true;
        pv->t.dtype = g->values[v].dtype;
        pv->model_dtype = pv->t.dtype;
        pv->t.rank = p->in_rank[k];
        memcpy(pv->t.dims, p->in_dims[k], sizeof pv->t.dims);
    }
    return ST_OK;
}

static void release_nodes(st_plan *p)
{
    /* a plan whose node array failed to allocate has n_nodes set already */
    for (int i = 0; p->nodes && i < p->n_nodes; i++) {
        st_pnode *pn = &p->nodes[i];
        if (pn->prepared && pn->kernel && pn->kernel->release) pn->kernel->release(pn->priv);
        pn->prepared = false;
        pn->priv = NULL;
        free(pn->state);
        free(pn->skip);
        free(pn->in);
    }
}

/* After an expansion the graph has more values and nodes. */
static st_status plan_fit(st_plan *p)
{
    if (p->g->n_values > p->n_values) {
        st_pvalue *v = realloc(p->values, ((size_t)p->g->n_values + 1) * sizeof *v);
        if (!v) return st_error(ST_ERR_NOMEM, "out of memory planning");
        p->values = v;
    }
    if (p->g->n_nodes > p->n_nodes) {
        st_pnode *n = realloc(p->nodes, ((size_t)p->g->n_nodes + 1) * sizeof *n);
        if (!n) return st_error(ST_ERR_NOMEM, "out of memory planning");
        p->nodes = n;
    }
    p->n_values = p->g->n_values;
    p->n_nodes = p->g->n_nodes;
    memset(p->values, 0, (size_t)p->n_values * sizeof *p->values);
    memset(p->nodes, 0, (size_t)p->n_nodes * sizeof *p->nodes);
    return ST_OK;
}

static void plan_reset(st_plan *p)
{
    release_nodes(p);
    for (int i = 0; i < p->n_owned; i++) free(p->owned[i]);
    p->n_owned = 0;
    p->folded_bytes = 0;
    free(p->buffers);
    p->buffers = NULL;
    p->n_buffers = 0;
    memset(p->values, 0, (size_t)p->n_values * sizeof *p->values);
    memset(p->nodes, 0, (size_t)p->n_nodes * sizeof *p->nodes);
}

st_status st_plan_own_graph(st_plan *p)
{
    if (p->own_g) return ST_OK;
    p->own_g = st_graph_derive(p->g);
    if (!p->own_g) return st_error(ST_ERR_NOMEM, "out of memory copying the graph");
    p->g = p->own_g;
    return ST_OK;
}

/* Whether the attention pass runs for the session backend: when its table
 * asks for it (ST_CAP_ATTENTION: the CPU, OpenCL), or, with
 * STRATA_ATTENTION_FUSION=1, when the table has a FusedAttention kernel
 * it does not ask for by default (CUDA: slower there than the unfused
 * graph on the sizes measured; the switch is for checking and timing it). */
static bool attention_fusion(const st_kernel_table *t)
{
    if (t->caps & ST_CAP_ATTENTION) return true;
    const char *e = getenv("STRATA_ATTENTION_FUSION");
    const st_op_def *fa = st_op_find("ai.strata", "FusedAttention");
    return e && strcmp(e, "1") == 0 && fa && st_kernel_dtypes(t, fa) != 0;
}

st_status st_plan_build(const st_model *m, const st_plan_target *t, const st_session_options *o,
                        const int *in_rank, const int64_t (*in_dims)[ST_MAX_RANK], const void *const *in_data,
                        const int *in_elems, st_plan **out)
{
    const st_graph *g = m->g;
    st_plan *p = calloc(1, sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory planning");
    p->model = m;
    st_model_retain(m); /* a later stage's model lives as long as its plans */
    p->g = m->g;
    p->target = *t;
    p->precision = o->precision ? o->precision : ST_F32;
    p->precision_strict = t->precision_strict;
    p->sanitize = o->sanitize != 0;
    p->hazard_mode = o->hazard_mode;
    p->memory_limit = o->memory_limit;
    p->n_inputs = g->n_inputs;
    p->n_slots = g->n_inputs;
    for (int i = 0; in_elems && i < g->n_inputs; i++)
        if (in_elems[i] > 0) p->n_slots += in_elems[i];
    p->in_elems = malloc(((size_t)g->n_inputs + 1) * sizeof *p->in_elems);
    p->slot_value = malloc(((size_t)(p->n_slots - g->n_inputs) + 1) * sizeof *p->slot_value);
    p->in_rank = malloc(((size_t)p->n_slots + 1) * sizeof *p->in_rank);
    p->in_dims = malloc(((size_t)p->n_slots + 1) * sizeof *p->in_dims);
    p->value_inputs = calloc((size_t)g->n_inputs + 1, sizeof *p->value_inputs);
    p->value_data = calloc((size_t)g->n_inputs + 1, sizeof *p->value_data);
    p->n_values = g->n_values;
    p->values = calloc((size_t)g->n_values + 1, sizeof *p->values);
    p->n_nodes = g->n_nodes;
    p->nodes = calloc((size_t)g->n_nodes + 1, sizeof *p->nodes);
    if (!p->in_rank || !p->in_dims || !p->values || !p->nodes || !p->value_inputs || !p->value_data || !p->in_elems ||
        !p->slot_value) {
        st_plan_free(p);
        return st_error(ST_ERR_NOMEM, "out of memory planning");
    }
    for (int i = 0; i < p->n_slots; i++) {
        p->in_rank[i] = in_rank[i];
        memcpy(p->in_dims[i], in_dims[i], sizeof p->in_dims[i]);
    }
    bool lists = false;
    for (int i = 0; i < g->n_inputs; i++) {
        p->in_elems[i] = in_elems ? in_elems[i] : ST_IN_TENSOR;
        lists |= p->in_elems[i] != ST_IN_TENSOR;
    }
    p->in_data = in_data;
    /* strings never enter an arena: a plan knows their values (core/strings.h) */
    for (int i = 0; i < g->n_inputs; i++) p->value_inputs[i] = g->values[g->inputs[i]].dtype == ST_STRING;
    st_status s = ST_OK;
    /* the tensors that sequence and optional inputs hold are values of
     * the plan's own graph, made once (they keep their ids on replans) */
    if (lists) s = st_sequence_inputs(p);
    if (s == ST_OK && lists) s = plan_fit(p);
    if (s != ST_OK) {
        st_plan_free(p);
        return s;
    }
    /* each retry makes at least one more input a known value, or expands
     * one more control-flow node into its body (the graph's size is
     * bounded, passes/control.c), so this ends */
    p->cut = -1;
    for (;;) {
        p->needs_values = 0;
        p->expanded = false;
        p->cut = -1;
        p->cut_loop = false;
        s = init_values(p);
        if (s == ST_OK) s = st_specialize(p);
        if (s != ST_OK && p->cut >= 0) {
            /* the first stage is planned again on its own (and stops no
             * more: the nodes it keeps specialized before the cut) */
            s = p->next_g ? st_error(ST_ERR_INTERNAL, "a stage of the plan was cut twice") : st_plan_split(p);
            if (s != ST_OK) break;
            p->expanded = true;
        }
        if (s == ST_OK && !p->expanded) break;
        if (s != ST_OK && !p->needs_values) break;
        plan_reset(p);
        s = plan_fit(p);
        if (s != ST_OK) break;
    }
    p->in_data = NULL;
    if (s == ST_OK) s = st_sequence_outputs(p);
    if (s == ST_OK) s = st_pass_fuse(p);
    if (s == ST_OK && (t->main->caps & ST_CAP_CONV_AFFINE)) s = st_pass_fuse_affine(p);
    if (s == ST_OK && (t->main->caps & ST_CAP_QDQ)) s = st_pass_fuse_qdq(p);
    if (s == ST_OK && attention_fusion(t->main))
        s = st_pass_fuse_attention(p, (t->main->caps & ST_CAP_ATTENTION_VIEWS) != 0);
    if (s == ST_OK && (t->main->caps & ST_CAP_MATMUL_EPI)) s = st_pass_fuse_matmul(p);
    if (s == ST_OK && (t->main->caps & ST_CAP_ADD_NORM)) s = st_pass_fuse_add_norm(p);
    /* devices and kernels, concat placement and the final layout */
    if (s == ST_OK) s = st_plan_place(p);
    if (s == ST_OK) s = st_plan_transfers(p);
    if (s == ST_OK) s = st_plan_buffers(p);
    if (s == ST_OK) s = st_plan_prepare(p);
    if (s != ST_OK) {
        st_plan_free(p);
        return s;
    }
    *out = p;
    return ST_OK;
}

bool st_plan_matches(const st_plan *p, const int *in_rank, const int64_t (*in_dims)[ST_MAX_RANK],
                     const void *const *in_data, const int *in_elems)
{
    const st_graph *g = p->g;
    for (int i = 0; i < p->n_inputs; i++)
        if (p->in_elems[i] != (in_elems ? in_elems[i] : ST_IN_TENSOR)) return false;
    for (int i = 0; i < p->n_slots; i++) {
        if (p->in_rank[i] != in_rank[i]) return false;
        for (int d = 0; d < in_rank[i]; d++)
            if (p->in_dims[i][d] != in_dims[i][d]) return false;
        if (i < p->n_inputs && p->value_inputs[i] &&
            !st_values_equal(g->values[g->inputs[i]].dtype, (size_t)st_numel(in_rank[i], in_dims[i]), p->value_data[i],
                             in_data[i]))
            return false;
    }
    return true;
}

void st_plan_free(st_plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_storages; i++) st_storage_release(p->storages[i]);
    free(p->storages);
    release_nodes(p);
    for (int i = 0; i < p->n_owned; i++) free(p->owned[i]);
    free(p->owned);
    free(p->nodes);
    free(p->values);
    free(p->buffers);
    free(p->transfers);
    free(p->in_rank);
    free(p->in_dims);
    free(p->in_elems);
    free(p->slot_value);
    free(p->value_inputs);
    free(p->value_data);
    st_graph_free(p->next_g);
    st_loop_free(p->loop);
    st_graph_free(p->own_g);
    free(p->keep_f32);
    st_model_release(p->model);
    free(p);
}
