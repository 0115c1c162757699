/* host.c — running a mixed plan's host commands (host.h). */
#include "runtime/host.h"

#include <stdlib.h>
#include <unistd.h>

#include "runtime/pool.h"
#include "core/status.h"

struct st_host {
    st_pool *pool;
};

st_status st_host_create(const st_session_options *o, st_host **out)
{
    st_host *h = calloc(1, sizeof *h);
    if (!h) return st_error(ST_ERR_NOMEM, "out of memory creating the host executor");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = o->threads > 0 ? o->threads : cores > 0 ? (int)cores : 1;
    st_status r = st_pool_start(n, &h->pool);
    if (r != ST_OK) {
        free(h);
        return st_error_prefix(r, "the host executor: ");
    }
    *out = h;
    return ST_OK;
}

void st_host_destroy(st_host *h)
{
    if (!h) return;
    st_pool_destroy(h->pool);
    free(h);
}

st_status st_host_run(st_host *h, const st_dag *d, int c) { return st_host_run_at(h, d, c, NULL); }

st_status st_host_run_at(st_host *h, const st_dag *d, int c, void *const *base)
{
    const st_cmd *cmd = &d->cmds[c];
    int nops = cmd->n_in + cmd->n_out;
    st_operand ops_buf[32];
    st_operand *ops = nops <= 32 ? ops_buf : malloc((size_t)nops * sizeof *ops);
    if (!ops) return st_error(ST_ERR_NOMEM, "node '%s' (%s): out of memory", cmd->gnode->name, cmd->op->name);
    for (int k = 0; k < nops; k++)
        ops[k] = st_operand_of(&cmd->views[k], base && base[k]       ? base[k]
                                               : cmd->views[k].storage ? cmd->views[k].storage->host
                                                                       : NULL);
    st_kctx k = {cmd->gnode, cmd->state, cmd->n_in, cmd->n_out, ops, ops + cmd->n_in, cmd->skip, h->pool, NULL, NULL, cmd->priv};
    st_status raw = cmd->run(&k), s = st_cmd_status(raw);
    if (ops != ops_buf) free(ops);
    if (s != ST_OK)
        st_error_prefix(s, "node '%s' (%s, on the host): %s", cmd->gnode->name, cmd->op->name,
                        raw != s ? "the kernel refused at run time a node its accepts took: " : "");
    return s;
}
