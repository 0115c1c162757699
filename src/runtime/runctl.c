/* runctl.c — cancelling a run and its deadline (runctl.h). */
#include "runtime/runctl.h"

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

/* What stopped run r, if anything: ST_OK, ST_ERR_CANCELLED or
 * ST_ERR_TIMEOUT (with *late_ns, how late), without a message: this is
 * asked before every command, and the message is only made when needed. */
static st_status stopped(const st_run_ref *r, uint64_t *late_ns)
{
    if (!r || !r->ctl) return ST_OK;
    if (atomic_load_explicit(&r->ctl->cancel, memory_order_relaxed) == r->run) return ST_ERR_CANCELLED;
    if (r->deadline) {
        uint64_t now = st_run_now_ns();
        if (now > r->deadline) {
            *late_ns = now - r->deadline;
            return ST_ERR_TIMEOUT;
        }
    }
    return ST_OK;
}

static st_status report(const st_run_ref *r, st_status why, uint64_t late_ns, const char *where)
{
    if (why == ST_ERR_CANCELLED)
        return st_error(ST_ERR_CANCELLED, "run %llu was cancelled (st_session_cancel) %s", (unsigned long long)r->run, where);
    return st_error(ST_ERR_TIMEOUT, "run %llu passed its deadline by %.3f ms %s", (unsigned long long)r->run,
                    (double)late_ns * 1e-6, where);
}

st_status st_run_check(const st_run_ref *r, const char *node, const char *op)
{
    uint64_t late = 0;
    st_status why = stopped(r, &late);
    if (why == ST_OK) return ST_OK;
    char where[200];
    if (node) snprintf(where, sizeof where, "before node '%.120s' (%.40s) started", node, op ? op : "?");
    else snprintf(where, sizeof where, "before it was submitted");
    return report(r, why, late, where);
}

st_status st_run_check_at(const st_run_ref *r, const char *where)
{
    uint64_t late = 0;
    st_status why = stopped(r, &late);
    return why == ST_OK ? ST_OK : report(r, why, late, where);
}
