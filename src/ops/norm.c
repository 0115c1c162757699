/*
 * norm.c — (being written) shape rules of the norm family.
 */
#include "ops/ops.h"

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_norm[] = {
    {NULL, NULL, 0, 0, NULL, NULL, NULL, NULL}
};
