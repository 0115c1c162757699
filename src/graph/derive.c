/* derive.c — derived graphs (derive.h). */
#include "graph/derive.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/view.h"

static int *dup_ids(const int *ids, int n)
{
    int *d = malloc(((size_t)n + 1) * sizeof *d);
    if (d && n) memcpy(d, ids, (size_t)n * sizeof *d);
    return d;
}

st_graph *st_graph_derive(const st_graph *src)
{
    st_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    *g = *src;
    g->derived = true;
    g->refs = 1;
    /* a graph derived from a derived graph borrows what that one owns */
    g->base = src->derived ? (st_graph *)src : NULL;
    if (g->base) g->base->refs++;
    g->owned = NULL;
    g->n_owned = g->cap_owned = 0;
    g->cap_values = src->n_values + 1;
    g->cap_nodes = src->n_nodes + 1;
    g->values = malloc((size_t)g->cap_values * sizeof *g->values);
    g->nodes = calloc((size_t)g->cap_nodes, sizeof *g->nodes);
    g->inputs = dup_ids(src->inputs, src->n_inputs);
    g->outputs = dup_ids(src->outputs, src->n_outputs);
    g->outer = g->outer_src = NULL;
    g->n_outer = 0;
    g->n_nodes = 0;
    if (!g->values || !g->nodes || !g->inputs || !g->outputs) {
        st_graph_free_derived(g);
        return NULL;
    }
    memcpy(g->values, src->values, (size_t)src->n_values * sizeof *g->values);
    for (int i = 0; i < src->n_nodes; i++) {
        st_node *n = &g->nodes[i];
        const st_node *s = &src->nodes[i];
        *n = *s;
        n->in = dup_ids(s->in, s->n_in);
        n->out = dup_ids(s->out, s->n_out);
        n->implicit = dup_ids(s->implicit, s->n_implicit);
        n->implicit_src = s->implicit_src ? dup_ids(s->implicit_src, s->n_implicit) : NULL;
        g->n_nodes++;
        if (!n->in || !n->out || !n->implicit || (s->implicit_src && !n->implicit_src)) {
            st_graph_free_derived(g);
            return NULL;
        }
    }
    return g;
}

void st_graph_free_derived(st_graph *g)
{
    if (!g || --g->refs > 0) return;
    for (int i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i].in);
        free(g->nodes[i].out);
        free(g->nodes[i].implicit);
        free(g->nodes[i].implicit_src);
    }
    for (int i = 0; i < g->n_owned; i++) free(g->owned[i]);
    free(g->owned);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    st_graph *base = g->base;
    free(g);
    st_graph_free_derived(base);
}

void *st_graph_own(st_graph *g, void *p)
{
    if (!p) return NULL;
    if (g->n_owned == g->cap_owned) {
        int cap = g->cap_owned ? g->cap_owned * 2 : 64;
        void **o = realloc(g->owned, (size_t)cap * sizeof *o);
        if (!o) {
            free(p);
            return NULL;
        }
        g->owned = o;
        g->cap_owned = cap;
    }
    g->owned[g->n_owned++] = p;
    return p;
}

char *st_graph_strf(st_graph *g, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t n = strlen(buf) + 1;
    char *s = malloc(n);
    if (s) memcpy(s, buf, n);
    return st_graph_own(g, s);
}

int st_graph_add_value(st_graph *g, const char *name)
{
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values * 2 + 16;
        st_value *v = realloc(g->values, (size_t)cap * sizeof *v);
        if (!v) return -1;
        g->values = v;
        g->cap_values = cap;
    }
    char *nm = st_graph_strf(g, "%s", name);
    if (!nm) return -1;
    st_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = nm;
    v->rank = -1;
    v->producer = -1;
    for (int d = 0; d < ST_MAX_RANK; d++) v->dims[d] = -1;
    return g->n_values++;
}

int st_graph_add_const(st_graph *g, const char *name, st_dtype dtype, int rank, const int64_t *dims, const void *data)
{
    int v = st_graph_add_value(g, name);
    if (v < 0) return -1;
    st_const *c = st_graph_own(g, calloc(1, sizeof *c));
    if (!c) return -1;
    c->dtype = dtype;
    c->rank = rank;
    for (int d = 0; d < rank; d++) c->dims[d] = dims[d];
    c->bytes = (uint64_t)st_numel(rank, dims) * st_dtype_size(dtype);
    c->data = st_graph_own(g, malloc(c->bytes ? c->bytes : 1));
    if (!c->data) return -1;
    if (c->bytes) memcpy(c->data, data, c->bytes);
    st_value *vv = &g->values[v];
    vv->init = c;
    vv->dtype = dtype;
    vv->rank = rank;
    for (int d = 0; d < rank; d++) vv->dims[d] = dims[d];
    return v;
}

bool st_graph_splice(st_graph *g, int at, int n)
{
    int need = g->n_nodes + n - 1;
    if (need + 1 > g->cap_nodes) {
        int cap = need * 2 + 16;
        st_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return false;
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    st_node *old = &g->nodes[at];
    free(old->in);
    free(old->out);
    free(old->implicit);
    free(old->implicit_src);
    memmove(g->nodes + at + n, g->nodes + at + 1, (size_t)(g->n_nodes - at - 1) * sizeof *g->nodes);
    memset(g->nodes + at, 0, (size_t)n * sizeof *g->nodes);
    g->n_nodes = need;
    return true;
}

bool st_graph_insert(st_graph *g, int at, int n)
{
    if (g->n_nodes + n + 1 > g->cap_nodes) {
        int cap = (g->n_nodes + n) * 2 + 16;
        st_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return false;
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    memmove(g->nodes + at + n, g->nodes + at, (size_t)(g->n_nodes - at) * sizeof *g->nodes);
    memset(g->nodes + at, 0, (size_t)n * sizeof *g->nodes);
    g->n_nodes += n;
    return true;
}

void st_graph_relink(st_graph *g)
{
    for (int v = 0; v < g->n_values; v++) g->values[v].producer = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_out; k++)
            if (g->nodes[i].out[k] >= 0) {
                g->values[g->nodes[i].out[k]].producer = i;
                g->values[g->nodes[i].out[k]].producer_slot = k;
            }
}

static void free_node_ids(st_node *n)
{
    free(n->in);
    free(n->out);
    free(n->implicit);
    free(n->implicit_src);
}

void st_graph_drop_front(st_graph *g, int n)
{
    for (int i = 0; i < n; i++) free_node_ids(&g->nodes[i]);
    memmove(g->nodes, g->nodes + n, (size_t)(g->n_nodes - n) * sizeof *g->nodes);
    g->n_nodes -= n;
    st_graph_relink(g);
}

void st_graph_drop_back(st_graph *g, int n)
{
    for (int i = n; i < g->n_nodes; i++) free_node_ids(&g->nodes[i]);
    g->n_nodes = n;
    st_graph_relink(g);
}
