/*
 * reduce.c — (being written) shape rules of the reduce family.
 */
#include "ops/ops.h"

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_reduce[] = {
    {NULL, NULL, 0, 0, NULL, NULL, NULL, NULL}
};
