/*
 * control.c — the op rows of the control-flow ops: If, Loop, Scan and
 * SequenceMap.
 *
 * They have no shape rule of their own and no kernel: planning expands
 * each into the nodes of its body once its behaviour is known
 * (passes/control.c), and the body's nodes have their own rows.  The rows
 * exist so that a model using them loads and plans; a control node that
 * reaches shape inference unexpanded is a bug.
 */
#include "ops/ops.h"

static st_status infer_control(st_infer *c)
{
    return st_infer_error(c, ST_ERR_INTERNAL, "a control-flow node reached shape inference without being expanded");
}

const st_op_def st_ops_control[] = {
    {"If", "", 1, ST_OP_CONTROL, infer_control, NULL, NULL},
    {"Loop", "", 1, ST_OP_CONTROL, infer_control, NULL, NULL},
    {"Scan", "", 8, ST_OP_CONTROL, infer_control, NULL, NULL},
    {"SequenceMap", "", 17, ST_OP_CONTROL, infer_control, NULL, NULL},
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
