/*
 * op_table.c — the op table: one row per ONNX op, kept with its family.
 *
 * Each family file in src/ops/ (elementwise.c, shape.c, linalg.c, conv.c,
 * ...) ends with its rows: the op's shape rule, view rule and footprint
 * rule (see op.h).  Kernels are not in the rows: each backend's kernel
 * table (ops/kernel.h, backends/<name>/table.c) has a line per kernel
 * naming the op.  Adding an op is one row plus its rules, and one table
 * line beside each kernel; a new family is one more entry in FAMILIES.
 */
#include <string.h>

#include "ops/ops.h"

static const st_op_def *const FAMILIES[] = {
    st_ops_elementwise,
    st_ops_shape,
    st_ops_linalg,
    st_ops_conv,
    st_ops_reduce,
    st_ops_norm,
    st_ops_index,
    st_ops_resize,
    st_ops_misc,
    st_ops_control,
    st_ops_sequence,
    st_ops_text,
    st_ops_qlinear,
};

#define N_FAMILIES ((int)(sizeof FAMILIES / sizeof *FAMILIES))

const st_op_def *st_op_find(const char *domain, const char *name)
{
    const char *d = domain && strcmp(domain, "ai.onnx") != 0 ? domain : "";
    for (int f = 0; f < N_FAMILIES; f++)
        for (const st_op_def *op = FAMILIES[f]; op->name; op++)
            if (strcmp(op->name, name) == 0 && strcmp(op->domain, d) == 0) return op;
    return NULL;
}

int st_op_count(void)
{
    int n = 0;
    for (int f = 0; f < N_FAMILIES; f++)
        for (const st_op_def *op = FAMILIES[f]; op->name; op++) n++;
    return n;
}

const st_op_def *st_op_at(int index)
{
    for (int f = 0; f < N_FAMILIES; f++)
        for (const st_op_def *op = FAMILIES[f]; op->name; op++)
            if (index-- == 0) return op;
    return NULL;
}
