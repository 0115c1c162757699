/*
 * fault.h — where strata lets a test make a device fail on purpose.
 *
 * Host allocations need no hook: the fault tests link strata with
 * -Wl,--wrap for malloc and its relatives (tests/faults/README.md), so
 * every call strata makes fails on demand without a line of strata
 * knowing.  What a wrapper cannot reach is a device, or host memory
 * strata maps itself (core/bigmem.h): a CUDA or OpenCL
 * allocation, a kernel launch, a program build.  At those points the
 * backend asks st_fault_hit() whether to fail, and if so fails through
 * the same path a real failure of that kind takes (an allocation reports
 * the driver's out-of-memory code, a launch is made with a configuration
 * the device refuses, a build is given source that does not compile).
 *
 * No hook is installed outside tests, and then st_fault_hit() is one
 * relaxed atomic load.  These are internal st_ symbols (exported for the
 * CUDA module and the tests), not API.
 */
#ifndef ST_FAULT_H
#define ST_FAULT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum st_fault_site {
    ST_FAULT_DEVICE_ALLOC = 0, /* cudaMalloc, cudaMallocHost, clCreateBuffer: what = the storage's label */
    ST_FAULT_LAUNCH,           /* a kernel launch of a command: what = the node's name */
    ST_FAULT_CL_BUILD,         /* building the OpenCL program from source */
    ST_FAULT_CL_RESOURCES,     /* an OpenCL enqueue answers CL_OUT_OF_RESOURCES: what = the kernel's name */
    ST_FAULT_HOST_MAP,         /* a large host block mapped on its own (core/bigmem.h): what = its label */
    ST_FAULT_SITES
} st_fault_site;

/* Returns true when the operation at site should fail; bytes is the size
 * of an allocation, else 0.  Called from any thread. */
typedef bool (*st_fault_fn)(st_fault_site site, const char *what, uint64_t bytes);

/* Installs fn (NULL removes it).  Tests only. */
void st_fault_set_hook(st_fault_fn fn);
bool st_fault_hit(st_fault_site site, const char *what, uint64_t bytes);
const char *st_fault_site_name(st_fault_site site);

#endif
