/*
 * misc.c — (being written) shape rules of the misc family.
 */
#include "ops/ops.h"

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_misc[] = {
    {.name = NULL}
};
