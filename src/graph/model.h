/*
 * model.h — a loaded model: the immutable graph plus a reference count, so
 * sessions (and through them, storages wrapping its weights) keep it alive
 * after the caller's st_model_free.
 */
#ifndef ST_MODEL_H
#define ST_MODEL_H

#include <stdatomic.h>

#include "core/status.h"
#include "graph/graph.h"

struct st_model {
    atomic_int refs;
    st_graph *g;
    char *path;          /* for messages; "<memory>" when loaded from memory */
    /* A later stage of a staged plan (plan/stage.c): the model it was cut
     * from, held because the stage's graph borrows from it. */
    const struct st_model *parent;
};

void st_model_retain(const struct st_model *m);
void st_model_release(const struct st_model *m);
/* A model for the rest of parent's graph after a stage: takes g (a derived
 * graph) and holds parent.  On failure g is freed. */
st_status st_model_stage(const struct st_model *parent, st_graph *g, struct st_model **out);

#endif
