/* runctl.c — cancelling a run and its deadline (runctl.h). */
#include "exec/runctl.h"

#include <stdio.h>
#include <time.h>

#include "core/status.h"

uint64_t st_run_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

st_run_ref st_run_current(const st_run_ctl *ctl)
{
    st_run_ref r = {ctl, 0, 0};
    if (ctl) {
        r.run = atomic_load(&ctl->run);
        r.deadline = atomic_load(&ctl->deadline);
    }
    return r;
}

st_status st_run_check(const st_run_ref *r, const char *node, const char *op)
{
    if (!r || !r->ctl) return ST_OK;
    char where[200];
    if (node) snprintf(where, sizeof where, "before node '%.120s' (%.40s) started", node, op ? op : "?");
    else snprintf(where, sizeof where, "before it was submitted");
    if (atomic_load_explicit(&r->ctl->cancel, memory_order_relaxed) == r->run)
        return st_error(ST_ERR_CANCELLED, "run %llu was cancelled (st_session_cancel) %s", (unsigned long long)r->run, where);
    if (r->deadline) {
        uint64_t now = st_run_now_ns();
        if (now > r->deadline)
            return st_error(ST_ERR_TIMEOUT, "run %llu passed its deadline by %.3f ms %s", (unsigned long long)r->run,
                            (double)(now - r->deadline) * 1e-6, where);
    }
    return ST_OK;
}
