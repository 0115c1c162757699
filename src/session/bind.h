/* bind.h — binding a plan to the session's arenas and constants (bind.c). */
#ifndef ST_BIND_H
#define ST_BIND_H

#include "plan/plan.h"

struct st_backend;

/* Points the plan at its arenas and makes its constant storages: on the
 * main backend b for what main-device commands read, wrapped on the host
 * (backend host) for what host commands read. */
st_status st_plan_bind(st_plan *p, struct st_backend *b, struct st_backend *host, st_storage *arena,
                       st_storage *host_arena);

#endif
