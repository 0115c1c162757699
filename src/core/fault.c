/* fault.c — the device fault hook (fault.h). */
#include "core/fault.h"

#include <stdatomic.h>
#include <stddef.h>

static _Atomic(st_fault_fn) hook;

void st_fault_set_hook(st_fault_fn fn) { atomic_store(&hook, fn); }

bool st_fault_hit(st_fault_site site, const char *what, uint64_t bytes)
{
    st_fault_fn fn = atomic_load_explicit(&hook, memory_order_acquire);
    return fn && fn(site, what ? what : "", bytes);
}

const char *st_fault_site_name(st_fault_site site)
{
    switch (site) {
    case ST_FAULT_DEVICE_ALLOC: return "device allocation";
    case ST_FAULT_LAUNCH: return "kernel launch";
    case ST_FAULT_CL_BUILD: return "OpenCL program build";
    case ST_FAULT_CL_RESOURCES: return "OpenCL enqueue";
    case ST_FAULT_HOST_MAP: return "host mapping";
    case ST_FAULT_SITES: break;
    }
    return "unknown fault site";
}
