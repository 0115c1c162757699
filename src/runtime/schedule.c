/* schedule.c — the schedule policy (schedule.h). */
#include "runtime/schedule.h"

void st_sched_init(st_sched *s, const st_session_options *o)
{
    s->random = o->schedule == ST_SCHEDULE_RANDOM;
    s->rng = o->seed;
}

uint64_t st_sched_next(st_sched *s)
{
    /* splitmix64: small, seedable, and good enough to shuffle schedules */
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int st_sched_below(st_sched *s, int n) { return (int)(st_sched_next(s) % (uint64_t)n); }

int st_sched_pick(st_sched *s, const int *ready, int n)
{
    if (s->random) return st_sched_below(s, n);
    int pick = 0;
    for (int i = 1; i < n; i++)
        if (ready[i] < ready[pick]) pick = i;
    return pick;
}

bool st_sched_hold(st_sched *s) { return s->random && st_sched_next(s) % 2 == 0; }

bool st_sched_release_now(st_sched *s) { return st_sched_next(s) % 3 == 0; }

void st_sched_order(st_sched *s, const st_dag *d, int *order, int *scratch)
{
    if (!s->random) {
        for (int c = 0; c < d->n_cmds; c++) order[c] = c;
        return;
    }
    int *remaining = scratch, *ready = scratch + d->n_cmds;
    int n_ready = 0, k = 0;
    for (int c = 0; c < d->n_cmds; c++) {
        remaining[c] = d->cmds[c].n_pred;
        if (!d->cmds[c].n_pred) ready[n_ready++] = c;
    }
    while (n_ready) {
        int pick = st_sched_below(s, n_ready);
        int c = ready[pick];
        ready[pick] = ready[--n_ready];
        order[k++] = c;
        const st_cmd *cmd = &d->cmds[c];
        for (int i = 0; i < cmd->n_succ; i++) {
            int x = d->succs[cmd->succ_first + i];
            if (--remaining[x] == 0) ready[n_ready++] = x;
        }
    }
}
