/* graph.c — freeing the IR and reading node attributes. */
#include "graph/graph.h"
#include "graph/derive.h"

#include <stdlib.h>
#include <string.h>

void st_const_free(st_const *c)
{
    if (!c) return;
    free(c->data);
    free(c);
}

static void attr_free(st_attr *a)
{
    free(a->name);
    free(a->s);
    st_const_free(a->t);
    free(a->floats);
    free(a->ints);
    if (a->strings)
        for (int i = 0; i < a->n; i++) free(a->strings[i]);
    free(a->strings);
    if (a->tensors)
        for (int i = 0; i < a->n; i++) free(a->tensors[i].data);
    free(a->tensors);
    st_graph_free(a->g);
}

void st_node_clear(st_node *n)
{
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->in);
    free(n->out);
    free(n->implicit);
    for (int a = 0; a < n->n_attrs; a++) attr_free(&n->attrs[a]);
    free(n->attrs);
    memset(n, 0, sizeof *n);
}

void st_graph_free(st_graph *g)
{
    if (!g) return;
    if (g->derived) {
        st_graph_free_derived(g);
        return;
    }
    for (int i = 0; i < g->n_values; i++) {
        st_value *v = &g->values[i];
        free(v->name);
        for (int d = 0; d < ST_MAX_RANK; d++) free(v->dim_names[d]);
        st_const_free(v->init);
    }
    for (int i = 0; i < g->n_nodes; i++) st_node_clear(&g->nodes[i]);
    for (int i = 0; i < g->n_opsets; i++) free(g->opsets[i].domain);
    free(g->opsets);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->outer);
    free(g->outer_src);
    free(g->producer_name);
    free(g);
}

const st_graph *st_attr_graph(const st_node *n, const char *name)
{
    const st_attr *a = st_node_attr(n, name);
    return a && a->type == ST_ATTR_GRAPH ? a->g : NULL;
}

const st_attr *st_node_attr(const st_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t st_attr_int(const st_node *n, const char *name, int64_t dflt)
{
    const st_attr *a = st_node_attr(n, name);
    return a && a->type == ST_ATTR_INT ? a->i : dflt;
}

float st_attr_float(const st_node *n, const char *name, float dflt)
{
    const st_attr *a = st_node_attr(n, name);
    if (a && a->type == ST_ATTR_FLOAT) return a->f;
    if (a && a->type == ST_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *st_attr_string(const st_node *n, const char *name, const char *dflt)
{
    const st_attr *a = st_node_attr(n, name);
    return a && a->type == ST_ATTR_STRING ? a->s : dflt;
}

const int64_t *st_attr_ints(const st_node *n, const char *name, int *count)
{
    const st_attr *a = st_node_attr(n, name);
    if (a && a->type == ST_ATTR_INTS) {
        *count = a->n;
        return a->ints;
    }
    *count = 0;
    return NULL;
}

const float *st_attr_floats(const st_node *n, const char *name, int *count)
{
    const st_attr *a = st_node_attr(n, name);
    if (a && a->type == ST_ATTR_FLOATS) {
        *count = a->n;
        return a->floats;
    }
    *count = 0;
    return NULL;
}

int64_t st_const_numel(const st_const *c)
{
    int64_t n = 1;
    for (int i = 0; i < c->rank; i++) n *= c->dims[i];
    return n;
}
