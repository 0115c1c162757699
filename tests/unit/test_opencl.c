/*
 * test_opencl.c — the OpenCL backend's storages: one cl_mem each, host
 * copies at offsets, fills, and rule 2's resolver (an address inside a
 * storage, a (cl_mem, offset) pair, and a sub-buffer someone else made
 * over a storage all resolve to the storage and the right offset).
 * Exits 77 (skipped) when the machine has no OpenCL device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "backends/registry.h"
#include "core/status.h"

static int failures;
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

int main(void)
{
    st_backend *b = st_backend_get(ST_BACKEND_OPENCL, 0);
    if (!b) {
        printf("SKIP: %s\n", st_last_error());
        return 77;
    }
    st_cl_device *d = (st_cl_device *)b;
    printf("device: %s (%s), out-of-order queues: %s\n", d->name, d->platform_name, d->out_of_order ? "yes" : "no");

    /* two storages: disjoint synthetic address ranges, one cl_mem each */
    st_storage *s1, *s2, *empty;
    CHECK(b->storage_alloc(b, 1 << 20, "s1", &s1) == ST_OK);
    CHECK(b->storage_alloc(b, 4096, "s2", &s2) == ST_OK);
    CHECK(b->storage_alloc(b, 0, "empty", &empty) == ST_OK);
    CHECK(s1->dev && s2->dev && !empty->dev);
    CHECK(s1->addr + s1->size <= s2->addr || s2->addr + s2->size <= s1->addr);

    /* rule 2: any address inside resolves, by range */
    uint64_t off = 0;
    CHECK(st_storage_resolve(ST_BACKEND_OPENCL, s1->addr, &off) == s1 && off == 0);
    CHECK(st_storage_resolve(ST_BACKEND_OPENCL, s1->addr + 12345, &off) == s1 && off == 12345);
    CHECK(st_storage_resolve(ST_BACKEND_OPENCL, s2->addr + 4095, &off) == s2 && off == 4095);
    CHECK(st_storage_resolve(ST_BACKEND_OPENCL, s2->addr + 4096, &off) != s2);
    CHECK(st_cl_resolve(b, (cl_mem)s1->dev, 96, &off) == s1 && off == 96);

    /* a sub-buffer made elsewhere (interop) resolves to its parent + origin */
    size_t align = d->addr_align / 8 ? d->addr_align / 8 : 128;
    cl_buffer_region region = {4 * align, 256};
    cl_int err;
    cl_mem sub = clCreateSubBuffer((cl_mem)s1->dev, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    CHECK(err == CL_SUCCESS);
    if (err == CL_SUCCESS) {
        CHECK(st_cl_resolve(b, sub, 8, &off) == s1 && off == 4 * align + 8);
        clReleaseMemObject(sub);
    }

    /* host copies and fills at offsets */
    unsigned char buf[4096], back[4096];
    for (int i = 0; i < 4096; i++) buf[i] = (unsigned char)(i * 7 + 3);
    CHECK(b->fill(b, s2, 0, 0xab, 4096) == ST_OK);
    CHECK(b->write(b, s2, 100, buf, 1000) == ST_OK);
    CHECK(b->read(b, s2, 0, back, 4096) == ST_OK);
    int bad = 0;
    for (int i = 0; i < 4096; i++) bad += back[i] != (i >= 100 && i < 1100 ? buf[i - 100] : 0xab);
    CHECK(bad == 0);
    CHECK(b->read(b, s2, 4000, back, 200) != ST_OK); /* outside the storage: an error, not a crash */

    st_storage_release(s1);
    st_storage_release(s2);
    st_storage_release(empty);
    CHECK(st_cl_resolve(b, NULL, 0, &off) == NULL);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("opencl storages: all checks passed\n");
    return 0;
}
