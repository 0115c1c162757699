/*
 * sequence.c — the op rows of the sequence and optional ops.
 *
 * A sequence is a plan-time structure in strata: a list of tensor values,
 * and an optional is "absent" or one value.  These ops have no shape rule
 * of their own and no kernel: planning lowers each into what it does to
 * that structure (passes/sequence.c) — SequenceAt into a view of the
 * element, ConcatFromSequence into a Concat, SplitToSequence into a Split,
 * SequenceLength and OptionalHasElement into constants — and the nodes it
 * writes have their own rows.  The rows exist so that models using the ops
 * load; a sequence node that reaches shape inference is a bug.
 */
#include "ops/ops.h"

static st_status infer_sequence(st_infer *c)
{
    return st_infer_error(c, ST_ERR_INTERNAL, "a sequence or optional node reached shape inference without being lowered");
}

#define SEQ_OP(name, opset) {name, "", opset, ST_OP_SEQUENCE, infer_sequence, NULL, NULL}

const st_op_def st_ops_sequence[] = {
    SEQ_OP("SequenceConstruct", 11),
    SEQ_OP("SequenceEmpty", 11),
    SEQ_OP("SequenceInsert", 11),
    SEQ_OP("SequenceErase", 11),
    SEQ_OP("SequenceAt", 11),
    SEQ_OP("SequenceLength", 11),
    SEQ_OP("SplitToSequence", 11),
    SEQ_OP("ConcatFromSequence", 11),
    SEQ_OP("Optional", 15),
    SEQ_OP("OptionalHasElement", 15),
    SEQ_OP("OptionalGetElement", 15),
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
