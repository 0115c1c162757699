/*
 * test_kernels.c — the kernel tables agree with the op table.
 *
 * Every entry of every backend's kernel table (ops/kernel.h) must name an
 * op row of the op table, carry a run function and a non-empty dtype mask,
 * and the CPU's table must cover every op row (it is the fallback of every
 * mixed plan).  The CUDA module's table is read without a device when the
 * module loads (it does wherever it was built); OpenCL's when built in.
 * The other half of the contract, that a kernel never refuses at run time
 * what its accepts took, is checked by running: executors turn such a
 * refusal into ST_ERR_INTERNAL, which the conformance runs on each backend
 * report as a failure.  A table that declares ST_CAP_ATTENTION has a
 * FusedAttention entry (the op its pass makes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "check.h"
#include "ops/kernel.h"

static void check_table(const st_kernel_table *t)
{
    int n = st_kernel_count(t);
    CHECKF(n > 0, "backend '%s' has an empty table", t->backend);
    for (int i = 0; i < n; i++) {
        const st_kernel *k = st_kernel_at(t, i);
        const st_op_def *op = st_op_find(k->domain ? k->domain : "", k->op);
        CHECKF(op != NULL, "backend '%s': entry %d names op '%s' (domain '%s'), which the op table lacks", t->backend, i,
               k->op, k->domain ? k->domain : "");
        CHECKF(k->run != NULL, "backend '%s': entry for '%s' has no run function", t->backend, k->op);
        CHECKF(k->dtypes != 0, "backend '%s': entry for '%s' takes no dtype", t->backend, k->op);
        CHECKF(!(k->release && !k->prepare), "backend '%s': entry for '%s' releases what it never prepares", t->backend,
               k->op);
        if (op && op->types)
            CHECKF((k->dtypes & op->types) != 0, "backend '%s': entry for '%s' takes none of the op's dtypes", t->backend,
                   k->op);
    }
    /* a capability that makes a pass rewrite the plan into an op this
     * table must run (passes/fuse_attention.c makes FusedAttention) */
    if (t->caps & ST_CAP_ATTENTION) {
        const st_op_def *fa = st_op_find("ai.strata", "FusedAttention");
        CHECKF(fa && st_kernel_dtypes(t, fa) != 0, "backend '%s' declares ST_CAP_ATTENTION without a FusedAttention kernel",
               t->backend);
    }
    printf("backend %-7s %3d entries\n", t->backend, n);
}

int main(void)
{
    const st_kernel_table *cpu = st_backend_kernels(ST_BACKEND_CPU);
    CHECK(cpu != NULL);
    if (cpu) {
        check_table(cpu);
        /* the CPU runs every op of the op table, in every dtype the op takes */
        for (int i = 0; i < st_op_count(); i++) {
            const st_op_def *op = st_op_at(i);
            /* expanded into their bodies, or lowered, at plan time */
            if (op->flags & (ST_OP_CONTROL | ST_OP_SEQUENCE)) continue;
            uint32_t m = st_kernel_dtypes(cpu, op);
            CHECKF(m != 0, "op '%s' has no CPU kernel", op->name);
            if (op->types) CHECKF((m & op->types) == op->types, "the CPU does not run every dtype op '%s' takes", op->name);
        }
    }
    for (int kind = ST_BACKEND_CUDA; kind <= ST_BACKEND_OPENCL; kind++) {
        const st_kernel_table *t = st_backend_kernels((st_backend_kind)kind);
        if (!t) {
            /* CTest names the module when this build made one: then it must load */
            const char *mod = getenv("STRATA_CUDA_MODULE");
            CHECKF(kind != ST_BACKEND_CUDA || !mod || !*mod, "the CUDA module %s does not load: %s", mod, st_last_error());
            printf("backend %d: not checked (%s)\n", kind, st_last_error());
            continue;
        }
        check_table(t);
    }
    return check_exit("kernel tables");
}
