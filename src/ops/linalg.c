/*
 * linalg.c — shape rules of MatMul (numpy matmul: batch broadcasting, 1-D
 * operands promoted and the unit dim dropped again) and Gemm.
 * Kernels: backends/cpu/k_linalg.c.
 */
#include "ops/linalg.h"
#include "ops/ops.h"

static const st_dtype MATMUL_TYPES[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I32, ST_I64, ST_U32, ST_U64, 0};

st_status st_infer_matmul(st_infer *c)
{
    if (c->n_in != 2 || !c->in[0].present || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "expects 2 inputs");
    const st_tinfo *a = &c->in[0], *b = &c->in[1];
    ST_TRY(st_infer_dtype(c, 0, MATMUL_TYPES));
    if (a->dtype != b->dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "inputs have different dtypes (%s and %s)", st_dtype_name(a->dtype), st_dtype_name(b->dtype));
    if (a->rank < 1 || b->rank < 1) return st_infer_error(c, ST_ERR_SHAPE, "inputs must have rank >= 1");
    int64_t m = a->rank == 1 ? 1 : a->dims[a->rank - 2], k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (k != kb)
        return st_infer_error(c, ST_ERR_SHAPE, "inner dims differ: A is [..., %lld, %lld], B is [..., %lld, %lld]", (long long)m,
                              (long long)k, (long long)kb, (long long)n);
    /* batch dims broadcast like elementwise ops */
    st_tinfo ba = *a, bb = *b, out = {0};
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    const st_tinfo *ins[2] = {&ba, &bb};
    ST_TRY(st_infer_broadcast(c, 2, ins, &out));
    st_tinfo *o = &c->out[0];
    o->dtype = a->dtype;
    o->rank = out.rank;
    for (int d = 0; d < out.rank; d++) o->dims[d] = out.dims[d];
    if (a->rank > 1) o->dims[o->rank++] = m;
    if (b->rank > 1) o->dims[o->rank++] = n;
    if (o->rank > ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "rank too large");
    st_matmul_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->alpha = 1.0f;
    return ST_OK;
}

st_status st_infer_gemm(st_infer *c)
{
    if (c->n_in < 2 || !c->in[0].present || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "expects 2 or 3 inputs");
    const st_tinfo *a = &c->in[0], *b = &c->in[1];
    ST_TRY(st_infer_dtype(c, 0, MATMUL_TYPES));
    if (a->rank != 2 || b->rank != 2) return st_infer_error(c, ST_ERR_SHAPE, "A and B must be 2-D, got ranks %d and %d", a->rank, b->rank);
    st_matmul_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->trans_a = st_attr_int(c->node, "transA", 0) != 0;
    s->trans_b = st_attr_int(c->node, "transB", 0) != 0;
    s->alpha = st_attr_float(c->node, "alpha", 1.0f);
    s->beta = st_attr_float(c->node, "beta", 1.0f);
    int64_t m = s->trans_a ? a->dims[1] : a->dims[0], k = s->trans_a ? a->dims[0] : a->dims[1];
    int64_t kb = s->trans_b ? b->dims[1] : b->dims[0], n = s->trans_b ? b->dims[0] : b->dims[1];
    if (k != kb) return st_infer_error(c, ST_ERR_SHAPE, "inner dims differ (%lld and %lld)", (long long)k, (long long)kb);
    st_tinfo *o = &c->out[0];
    o->dtype = a->dtype;
    o->rank = 2;
    o->dims[0] = m;
    o->dims[1] = n;
    if (c->n_in > 2 && c->in[2].present) {
        const st_tinfo *cc = &c->in[2];
        if (cc->rank > 2) return st_infer_error(c, ST_ERR_SHAPE, "C has rank %d", cc->rank);
        /* before opset 7, C broadcasts only with broadcast=1 */
        if (c->opset < 7 && !st_attr_int(c->node, "broadcast", 0) && (cc->rank != 2 || cc->dims[0] != m || cc->dims[1] != n))
            return st_infer_error(c, ST_ERR_SHAPE, "C must be [%lld, %lld] without broadcast=1 (before opset 7)", (long long)m,
                                  (long long)n);
        for (int d = 0; d < cc->rank; d++) {
            int64_t want = o->dims[2 - cc->rank + d];
            if (cc->dims[d] != 1 && cc->dims[d] != want)
                return st_infer_error(c, ST_ERR_SHAPE, "C does not broadcast to [%lld, %lld]", (long long)m, (long long)n);
        }
    }
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_linalg[] = {
    {"MatMul", "", 1, 0, st_infer_matmul, NULL, NULL, .types = ST_DT_ALL_FLOATS | ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_U32) | ST_DT(ST_U64)},
    {"Gemm", "", 1, 0, st_infer_gemm, NULL, NULL, .types = ST_DT_ALL_FLOATS | ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_U32) | ST_DT(ST_U64)},
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
