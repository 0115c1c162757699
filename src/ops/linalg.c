/*
 * linalg.c — shape rules of MatMul (numpy matmul: batch broadcasting, 1-D
 * operands promoted and the unit dim dropped again), Gemm, and strata's
 * FusedAttention.  Kernels: backends/cpu/k_linalg.c, k_attention.c (and
 * FusedAttention's on CUDA and OpenCL: cuda/k_attention.cu, opencl/attention.cl).
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

/* FusedAttention (ai.strata; linalg.h says what it computes).  The
 * fusion pass builds the state itself; these attributes are for a model
 * that names the op: scale_kind, scale, mask_kind, fill, fill_when. */
static st_status infer_attention(st_infer *c)
{
    if (c->n_in < 3 || c->n_in > 4 || !c->in[0].present || !c->in[1].present || !c->in[2].present)
        return st_infer_error(c, ST_ERR_MODEL, "expects Q, KT, V and an optional mask");
    const st_tinfo *q = &c->in[0], *kt = &c->in[1], *v = &c->in[2];
    for (int i = 0; i < 3; i++) {
        if (c->in[i].dtype != q->dtype || (q->dtype != ST_F32 && q->dtype != ST_F16))
            return st_infer_error(c, ST_ERR_DTYPE, "input %d is %s; Q, KT and V are all float32 or all float16", i,
                                  st_dtype_name(c->in[i].dtype));
        if (c->in[i].rank < 2 || c->in[i].rank != q->rank)
            return st_infer_error(c, ST_ERR_SHAPE, "Q, KT and V must have one rank >= 2 (got %d, %d, %d)", q->rank, kt->rank,
                                  v->rank);
    }
    int r = q->rank;
    for (int d = 0; d < r - 2; d++)
        if (kt->dims[d] != q->dims[d] || v->dims[d] != q->dims[d])
            return st_infer_error(c, ST_ERR_SHAPE, "Q, KT and V differ in leading dim %d", d);
    if (kt->dims[r - 2] != q->dims[r - 1] || v->dims[r - 2] != kt->dims[r - 1])
        return st_infer_error(c, ST_ERR_SHAPE, "inner dims differ: Q [.., %lld, %lld], KT [.., %lld, %lld], V [.., %lld, %lld]",
                              (long long)q->dims[r - 2], (long long)q->dims[r - 1], (long long)kt->dims[r - 2],
                              (long long)kt->dims[r - 1], (long long)v->dims[r - 2], (long long)v->dims[r - 1]);
    st_attention_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->scale_kind = (int)st_attr_int(c->node, "scale_kind", ST_ATT_SCALE_NONE);
    s->scale = st_attr_float(c->node, "scale", 1.0f);
    s->mask_kind = (int)st_attr_int(c->node, "mask_kind", ST_ATT_MASK_NONE);
    s->fill = st_attr_float(c->node, "fill", 0.0f);
    s->fill_when = st_attr_int(c->node, "fill_when", 1) != 0;
    if (s->scale_kind < ST_ATT_SCALE_NONE || s->scale_kind > ST_ATT_SCALE_DIV)
        return st_infer_error(c, ST_ERR_MODEL, "scale_kind %d is not 0 (none), 1 (multiply) or 2 (divide)", s->scale_kind);
    bool has_mask = c->n_in > 3 && c->in[3].present;
    if (s->mask_kind < ST_ATT_MASK_NONE || s->mask_kind > ST_ATT_MASK_WHERE || has_mask != (s->mask_kind != ST_ATT_MASK_NONE))
        return st_infer_error(c, ST_ERR_MODEL, "mask_kind %d does not match the %s mask input", s->mask_kind,
                              has_mask ? "present" : "absent");
    if (has_mask) {
        const st_tinfo *m = &c->in[3];
        st_dtype want = s->mask_kind == ST_ATT_MASK_ADD ? ST_F32 : ST_BOOL;
        if (m->dtype != want && !(s->mask_kind == ST_ATT_MASK_ADD && m->dtype == q->dtype))
            return st_infer_error(c, ST_ERR_DTYPE, "the mask is %s; mask_kind %d takes %s", st_dtype_name(m->dtype),
                                  s->mask_kind, st_dtype_name(want));
        int64_t sd[ST_MAX_RANK];
        for (int d = 0; d < r - 2; d++) sd[d] = q->dims[d];
        sd[r - 2] = q->dims[r - 2];
        sd[r - 1] = kt->dims[r - 1];
        if (m->rank > r) return st_infer_error(c, ST_ERR_SHAPE, "the mask has rank %d, above the scores' %d", m->rank, r);
        for (int d = 0; d < m->rank; d++) {
            int64_t want_d = sd[r - m->rank + d];
            if (m->dims[d] != 1 && m->dims[d] != want_d)
                return st_infer_error(c, ST_ERR_SHAPE, "the mask's dim %d (%lld) does not broadcast to the scores' %lld", d,
                                      (long long)m->dims[d], (long long)want_d);
        }
    }
    st_tinfo *o = &c->out[0];
    o->dtype = q->dtype;
    o->rank = r;
    for (int d = 0; d < r - 1; d++) o->dims[d] = q->dims[d];
    o->dims[r - 1] = v->dims[r - 1];
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_linalg[] = {
    {"MatMul", "", 1, 0, st_infer_matmul, NULL, NULL, .types = ST_DT_ALL_FLOATS | ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_U32) | ST_DT(ST_U64)},
    {"Gemm", "", 1, 0, st_infer_gemm, NULL, NULL, .types = ST_DT_ALL_FLOATS | ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_U32) | ST_DT(ST_U64)},
    {"FusedAttention", "ai.strata", 1, 0, infer_attention, NULL, NULL, .types = ST_DT(ST_F32) | ST_DT(ST_F16)},
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
