/* model.c — loading models and describing their inputs and outputs. */
#include "graph/model.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/status.h"
#include "onnx/loader.h"

void st_model_retain(const st_model *m) { atomic_fetch_add(&((st_model *)m)->refs, 1); }

void st_model_release(const st_model *m)
{
    st_model *mm = (st_model *)m;
    if (!mm || atomic_fetch_sub(&mm->refs, 1) != 1) return;
    st_graph_free(mm->g);
    free(mm->path);
    const st_model *parent = mm->parent;
    free(mm);
    st_model_release(parent);
}

static st_status wrap(st_graph *g, const char *path, st_model **out)
{
    st_model *m = calloc(1, sizeof *m);
    char *p = strdup(path);
    if (!m || !p) {
        free(m);
        free(p);
        st_graph_free(g);
        return st_error(ST_ERR_NOMEM, "out of memory creating the model");
    }
    atomic_init(&m->refs, 1);
    m->g = g;
    m->path = p;
    *out = m;
    return ST_OK;
}

st_status st_model_stage(const st_model *parent, st_graph *g, st_model **out)
{
    ST_TRY(wrap(g, parent->path, out));
    st_model_retain(parent);
    (*out)->parent = parent;
    return ST_OK;
}

st_status st_model_load_memory(const void *data, size_t size, const char *base_dir, st_model **out)
{
    if (!out || (!data && size)) return st_error(ST_ERR_INVALID_ARG, "st_model_load_memory: NULL argument");
    *out = NULL;
    st_graph *g;
    ST_TRY(st_onnx_load(data, size, base_dir, &g));
    return wrap(g, "<memory>", out);
}

st_status st_model_load(const char *path, st_model **out)
{
    if (!path || !out) return st_error(ST_ERR_INVALID_ARG, "st_model_load: NULL argument");
    *out = NULL;
    void *data;
    size_t size;
    ST_TRY(st_file_read(path, &data, &size));
    char *dir_buf = strdup(path);
    if (!dir_buf) {
        free(data);
        return st_error(ST_ERR_NOMEM, "out of memory loading '%s'", path);
    }
    st_graph *g;
    st_status s = st_onnx_load(data, size, dirname(dir_buf), &g);
    free(dir_buf);
    free(data);
    if (s != ST_OK) return st_error_prefix(s, "loading '%s': ", path);
    return wrap(g, path, out);
}

void st_model_free(st_model *m) { st_model_release(m); }

int st_model_input_count(const st_model *m) { return m ? m->g->n_inputs : 0; }
int st_model_output_count(const st_model *m) { return m ? m->g->n_outputs : 0; }

static void fill_info(const st_value *v, st_value_info *info)
{
    memset(info, 0, sizeof *info);
    info->name = v->name;
    info->dtype = v->dtype;
    info->rank = v->rank;
    for (int i = 0; i < v->rank && i < ST_MAX_RANK; i++) {
        info->dims[i] = v->dims[i];
        info->dim_names[i] = v->dim_names[i];
    }
}

st_status st_model_input_info(const st_model *m, int index, st_value_info *info)
{
    if (!m || !info) return st_error(ST_ERR_INVALID_ARG, "st_model_input_info: NULL %s", m ? "info" : "model");
    if (index < 0 || index >= m->g->n_inputs)
        return st_error(ST_ERR_INVALID_ARG, "st_model_input_info: index %d is out of range (the model has %d inputs)", index,
                        m->g->n_inputs);
    fill_info(&m->g->values[m->g->inputs[index]], info);
    return ST_OK;
}

st_status st_model_output_info(const st_model *m, int index, st_value_info *info)
{
    if (!m || !info) return st_error(ST_ERR_INVALID_ARG, "st_model_output_info: NULL %s", m ? "info" : "model");
    if (index < 0 || index >= m->g->n_outputs)
        return st_error(ST_ERR_INVALID_ARG, "st_model_output_info: index %d is out of range (the model has %d outputs)", index,
                        m->g->n_outputs);
    fill_info(&m->g->values[m->g->outputs[index]], info);
    return ST_OK;
}

st_value_kind st_model_input_kind(const st_model *m, int index)
{
    if (!m || index < 0 || index >= m->g->n_inputs) return ST_KIND_TENSOR;
    return m->g->values[m->g->inputs[index]].kind;
}

st_value_kind st_model_output_kind(const st_model *m, int index)
{
    if (!m || index < 0 || index >= m->g->n_outputs) return ST_KIND_TENSOR;
    return m->g->values[m->g->outputs[index]].kind;
}
