/*
 * bind.c — a built plan meets the session's memory: its values point at
 * the arenas, and the constants its commands read get storages on the
 * device that reads them.
 *
 * Owns: plan->storages (filled here, released by st_plan_free) and every
 * value's view.storage.  It lives in src/exec, beside the session that
 * calls it, because it is the one step of planning that talks to a
 * backend (allocation and upload); the passes in src/plan and src/passes
 * see the backends only as kernel tables.
 */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/backend.h"
#include "session/bind.h"

/* Wraps each constant that host commands read where it lies (no copy). */
static st_status wrap_consts(st_plan *p, st_backend *host, const bool *read, bool main_view)
{
    const st_graph *g = p->g;
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        if (pv->kind != ST_PV_CONST || !read[v]) continue;
        uint64_t bytes = st_pvalue_bytes(pv);
        p->const_bytes += bytes;
        char label[48];
        snprintf(label, sizeof label, "const '%.36s'", g->values[v].name);
        st_storage *st = NULL;
        ST_TRY(host->storage_wrap(host, (void *)pv->t.data, bytes, label, &st));
        p->storages[p->n_storages++] = st;
        st_view *view = main_view ? &pv->view : &pv->host_view;
        if (!main_view) {
            *view = pv->view;
            view->offset = 0;
        }
        view->storage = st;
        if (main_view) pv->storage = p->n_storages - 1;
    }
    return ST_OK;
}

st_status st_plan_bind(st_plan *p, st_backend *b, st_backend *host, st_storage *arena, st_storage *host_arena)
{
    const st_graph *g = p->g;
    /* storages[0] and [1] are the arenas; then one per constant a command
     * reads (a device holds them all in one) */
    int n_const = 0;
    for (int v = 0; v < p->n_values; v++) n_const += p->values[v].kind == ST_PV_CONST;
    p->storages = calloc(2 * (size_t)n_const + 3, sizeof *p->storages);
    bool *read_main = calloc(2 * ((size_t)p->n_values + 1), sizeof *read_main);
    if (!p->storages || !read_main) {
        free(read_main);
        return st_error(ST_ERR_NOMEM, "out of memory binding the plan");
    }
    bool *read_host = read_main + p->n_values + 1;
    st_storage_retain(arena);
    p->storages[0] = arena;
    if (host_arena) st_storage_retain(host_arena);
    p->storages[1] = host_arena;
    p->n_storages = 2;
    for (int i = 0; i < g->n_nodes; i++) {
        if (p->nodes[i].kind != ST_PN_EXEC) continue;
        int n_in;
        const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
        for (int k = 0; k < n_in; k++)
            if (in[k] >= 0) (p->nodes[i].device == ST_DEV_HOST ? read_host : read_main)[in[k]] = true;
    }
    st_status s = ST_OK;
    if (b->storage_wrap) {
        /* host memory: each constant is wrapped where it lies, no copy */
        s = wrap_consts(p, b, read_main, true);
    } else {
        /* a device: every constant its commands read in one allocation,
         * uploaded once; what host commands read stays where it lies */
        uint64_t total = 0;
        for (int v = 0; v < p->n_values; v++)
            if (p->values[v].kind == ST_PV_CONST && read_main[v]) {
                p->values[v].view.offset = (int64_t)total;
                total += (st_pvalue_bytes(&p->values[v]) + ST_ALIGN - 1) / ST_ALIGN * ST_ALIGN;
            }
        st_storage *st = NULL;
        if (total) s = b->storage_alloc(b, total, "constants", &st);
        for (int v = 0; v < p->n_values && s == ST_OK && st; v++) {
            st_pvalue *pv = &p->values[v];
            if (pv->kind != ST_PV_CONST || !read_main[v]) continue;
            uint64_t bytes = st_pvalue_bytes(pv);
            p->const_bytes += bytes;
            s = b->write(b, st, (uint64_t)pv->view.offset, pv->t.data, bytes);
            pv->storage = p->n_storages;
            pv->view.storage = st;
        }
        if (st) p->storages[p->n_storages++] = st;
        if (s == ST_OK) s = wrap_consts(p, host, read_host, false);
    }
    free(read_main);
    if (s != ST_OK) return s;
    for (int v = 0; v < p->n_values; v++) {
        st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_DEAD || pv->kind == ST_PV_CONST || pv->kind == ST_PV_STRUCT) continue;
        pv->view.storage = pv->storage == 1 ? host_arena : arena;
    }
    for (int t = 0; t < p->n_transfers; t++)
        p->transfers[t].view.storage = p->transfers[t].to == ST_DEV_HOST ? host_arena : arena;
    return ST_OK;
}

