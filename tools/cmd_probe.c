/*
 * cmd_probe.c — `strata probe --backend opencl|vulkan [--runs N]`: the
 * seed report's standalone experiment, run on this machine's OpenCL
 * device as a diagnostic (Vulkan's: backends/vulkan/vk_probe.c).
 *
 * The report found that a second buffer object over a parent's memory (a
 * Metal no-copy alias) is not ordered against work on the parent, even in
 * one serial encoder.  OpenCL's equivalent alias is clCreateSubBuffer.
 * Each run here writes a buffer's tail with one kernel and copies the
 * whole buffer out with another, in one queue, and counts the runs where
 * the copy saw stale data:
 *   (a) the write goes through a sub-buffer over the tail;
 *   (b) the write goes through the parent at an element offset (how
 *       strata binds every view, rule 1 of docs/architecture.md);
 * each on an in-order queue (where OpenCL orders the two kernels) and on
 * an out-of-order queue with no events between them (where nothing does:
 * the hazard strata's DAG and event wait lists exist for).  A last row
 * runs (b) out of order with the write's event in the copy's wait list,
 * which is what the OpenCL executor does.  This is the one place strata
 * makes a sub-buffer, on purpose, to measure the hazard; the probe
 * measures and never fails on a stale count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

#ifdef ST_HAVE_VULKAN
#include "backends/registry.h"
#include "core/status.h"
#endif

#ifdef ST_HAVE_OPENCL
#include "backends/opencl/cl_internal.h"
#include "backends/registry.h"
#include "core/status.h"

static const char *probe_src =
    "kernel void fill(global float *out, long off, float v) { long i = get_global_id(0); out[off + i] = v + (float)i; }\n"
    "kernel void copy(global float *out, global const float *in) { long i = get_global_id(0); out[i] = in[i]; }\n";

typedef struct probe {
    st_cl_device *d;
    cl_program prog;
    cl_kernel fill, copy;
    size_t half, n;           /* the tail is [n - half, n) */
} probe;

enum { VIA_ALIAS, VIA_OFFSET };

/* One run; returns 1 if the copy saw stale data, 0 if not, -1 on error. */
static int run_once(probe *p, cl_command_queue q, int via, bool with_event, float v, float *host)
{
    cl_int err;
    cl_context ctx = p->d->context;
    size_t bytes = p->n * sizeof(float), tail = (p->n - p->half) * sizeof(float);
    cl_mem parent = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem dst = err == CL_SUCCESS ? clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
    cl_mem alias = NULL;
    int result = -1;
    if (err != CL_SUCCESS) goto done;
    float zero = 0.0f;
    if ((err = clEnqueueFillBuffer(q, parent, &zero, sizeof zero, 0, bytes, 0, NULL, NULL)) != CL_SUCCESS ||
        (err = clEnqueueFillBuffer(q, dst, &zero, sizeof zero, 0, bytes, 0, NULL, NULL)) != CL_SUCCESS ||
        (err = clFinish(q)) != CL_SUCCESS)
        goto done;
    cl_long off = 0;
    cl_mem target = parent;
    if (via == VIA_ALIAS) {
        cl_buffer_region region = {tail, p->half * sizeof(float)};
        alias = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        if (err != CL_SUCCESS) goto done;
        target = alias;
    } else {
        off = (cl_long)(p->n - p->half);
    }
    clSetKernelArg(p->fill, 0, sizeof target, &target);
    clSetKernelArg(p->fill, 1, sizeof off, &off);
    clSetKernelArg(p->fill, 2, sizeof v, &v);
    clSetKernelArg(p->copy, 0, sizeof dst, &dst);
    clSetKernelArg(p->copy, 1, sizeof parent, &parent);
    cl_event wrote = NULL;
    size_t gw = p->half, gc = p->n;
    if ((err = clEnqueueNDRangeKernel(q, p->fill, 1, NULL, &gw, NULL, 0, NULL, with_event ? &wrote : NULL)) != CL_SUCCESS)
        goto done;
    err = clEnqueueNDRangeKernel(q, p->copy, 1, NULL, &gc, NULL, with_event ? 1 : 0, with_event ? &wrote : NULL, NULL);
    if (wrote) clReleaseEvent(wrote);
    if (err != CL_SUCCESS || (err = clFinish(q)) != CL_SUCCESS) goto done;
    if ((err = clEnqueueReadBuffer(q, dst, CL_TRUE, 0, bytes, host, 0, NULL, NULL)) != CL_SUCCESS) goto done;
    result = 0;
    for (size_t i = 0; i < p->half; i++)
        if (host[p->n - p->half + i] != v + (float)i) {
            result = 1;
            break;
        }
done:
    if (result < 0) st_cl_check(err, via == VIA_ALIAS ? "probe (sub-buffer pattern)" : "probe (offset pattern)");
    if (alias) clReleaseMemObject(alias);
    if (dst) clReleaseMemObject(dst);
    if (parent) clReleaseMemObject(parent);
    return result;
}

static int probe_opencl(int device, int runs)
{
    st_backend *b = st_backend_get(ST_BACKEND_OPENCL, device);
    if (!b) return tool_fail_st("probe");
    probe p = {(st_cl_device *)b, NULL, NULL, NULL, 0, 0};
    st_cl_device *d = p.d;
    /* the tail starts on the device's sub-buffer alignment */
    size_t align = d->addr_align / 8 > sizeof(float) ? d->addr_align / 8 / sizeof(float) : 1;
    p.half = (65536 + align - 1) / align * align;
    p.n = 3 * p.half;
    cl_int err;
    p.prog = clCreateProgramWithSource(d->context, 1, &probe_src, NULL, &err);
    if (err == CL_SUCCESS) err = clBuildProgram(p.prog, 1, &d->device, "", NULL, NULL);
    if (err == CL_SUCCESS) p.fill = clCreateKernel(p.prog, "fill", &err);
    if (err == CL_SUCCESS) p.copy = clCreateKernel(p.prog, "copy", &err);
    if (err != CL_SUCCESS) {
        st_cl_check(err, "building the probe kernels");
        return tool_fail_st("probe");
    }
    cl_program main_prog;
    st_status ps = st_cl_program(d, &main_prog);
    printf("strata probe: the seed report's sub-buffer alias experiment on OpenCL, %d runs per row\n", runs);
    printf("device:   %s (%s), %s, driver %s\n", d->name, d->platform_name, d->version, d->driver);
    printf("queues:   out-of-order %s; strata's executor uses %s; fp16 %s, fp64 %s\n",
           d->out_of_order ? "supported" : "not supported",
           d->out_of_order && !d->ooo_unsafe ? "an out-of-order queue"
           : d->out_of_order ? "an in-order queue (this driver's out-of-order queue is known to crash)"
                             : "an in-order queue",
           d->fp16 ? "yes" : "no", d->fp64 ? "yes" : "no");
    if (ps == ST_OK)
        printf("program:  strata's kernels %s in %.2f s\n", d->program_cached ? "loaded from the disk cache" : "built from source",
               d->program_seconds);
    else
        printf("program:  strata's kernels failed to build: %s\n", st_last_error());
    printf("buffer:   %zu floats; the write covers the last %zu (byte offset %zu)\n\n", p.n, p.half,
           (p.n - p.half) * sizeof(float));
    printf("%-46s %-26s %s\n", "pattern", "queue", "stale runs / runs");
    float *host = malloc(p.n * sizeof *host);
    if (!host) return tool_fail("out of memory");
    struct {
        int via;
        bool ooo, event;
        const char *name, *queue;
    } rows[] = {
        {VIA_ALIAS, false, false, "(a) write via sub-buffer alias, read parent", "in-order"},
        {VIA_OFFSET, false, false, "(b) write via parent + offset, read parent", "in-order"},
        {VIA_ALIAS, true, false, "(a) write via sub-buffer alias, read parent", "out-of-order, no events"},
        {VIA_OFFSET, true, false, "(b) write via parent + offset, read parent", "out-of-order, no events"},
        {VIA_OFFSET, true, true, "(b) write via parent + offset, read parent", "out-of-order + event"},
    };
    int rc = 0;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0] && rc == 0; r++) {
        if (rows[r].ooo && !d->out_of_order) {
            printf("%-46s %-26s %s\n", rows[r].name, rows[r].queue, "(no out-of-order queues)");
            continue;
        }
        cl_command_queue q =
            clCreateCommandQueue(d->context, d->device, rows[r].ooo ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
        if (err != CL_SUCCESS) {
            st_cl_check(err, "clCreateCommandQueue");
            rc = tool_fail_st("probe");
            break;
        }
        int stale = 0;
        for (int i = 0; i < runs; i++) {
            int s = run_once(&p, q, rows[r].via, rows[r].event, 1000.0f + (float)i, host);
            if (s < 0) {
                rc = tool_fail_st("probe");
                break;
            }
            stale += s;
        }
        clReleaseCommandQueue(q);
        if (rc == 0) printf("%-46s %-26s %d / %d\n", rows[r].name, rows[r].queue, stale, runs);
        fflush(stdout);
    }
    free(host);
    clReleaseKernel(p.fill);
    clReleaseKernel(p.copy);
    clReleaseProgram(p.prog);
    return rc;
}
#endif

int st_cmd_probe(int argc, char **argv)
{
    const char *backend = "opencl";
    int runs = 200, device = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (a[0] != '-') return tool_fail("probe: unexpected argument '%s' (strata help probe shows the usage)", a);
        if (tool_option_check("probe", a)) return 1;
        if (!v) return tool_fail("probe: option %s needs a value", a);
        if (!strcmp(a, "--backend")) {
            backend = argv[++i];
        } else if (!strcmp(a, "--runs") || !strcmp(a, "--device")) {
            long x = strtol(argv[++i], &end, 10);
            if (*end || x < (a[2] == 'r' ? 1 : 0) || x > 1000000) return tool_fail("%s needs a number, got '%s'", a, v);
            if (a[2] == 'r') runs = (int)x;
            else device = (int)x;
        } else {
            /* tool_option_check let it through: the table and this parser disagree */
            return tool_fail("probe: option '%s' is in the option table but not parsed (a bug in strata)", a);
        }
    }
    if (!strcmp(backend, "vulkan")) {
#ifdef ST_HAVE_VULKAN
        /* the alias experiment on Vulkan (backends/vulkan/vk_probe.c) */
        st_backend_kind kind;
        if (st_backend_find("vulkan", &kind) != ST_OK) return tool_fail("probe: %s", st_last_error());
        st_backend *b = st_backend_get(kind, device);
        if (!b) return tool_fail("probe: %s", st_last_error());
        int st_vk_probe(st_backend *b, int runs);
        return st_vk_probe(b, runs) == 0 ? 0 : tool_fail("probe: %s", st_last_error());
#else
        return tool_fail("probe: backend 'vulkan' is not built into this strata (configure with -DSTRATA_VULKAN=ON)");
#endif
    }
    if (strcmp(backend, "opencl") != 0)
        return tool_fail("probe: --backend opencl and vulkan have the alias experiment (got '%s')", backend);
#ifdef ST_HAVE_OPENCL
    return probe_opencl(device, runs);
#else
    (void)runs;
    (void)device;
    return tool_fail("probe: backend 'opencl' is not built into this strata (configure with -DSTRATA_OPENCL=ON)");
#endif
}
