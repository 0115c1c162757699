/*
 * model.h — a loaded model: the immutable graph plus a reference count, so
 * sessions (and through them, storages wrapping its weights) keep it alive
 * after the caller's st_model_free.
 */
#ifndef ST_MODEL_H
#define ST_MODEL_H

#include <stdatomic.h>

#include "graph/graph.h"

struct st_model {
    atomic_int refs;
    st_graph *g;
    char *path;          /* for messages; "<memory>" when loaded from memory */
};

void st_model_retain(const struct st_model *m);
void st_model_release(const struct st_model *m);

#endif
