/*
 * k_attention.c — the CPU kernel of strata's FusedAttention (ops/linalg.h):
 * softmax(mask(scale(Q K^T))) V without the [..., Tq, Tk] scores in memory.
 *
 * One task per leading index (one head of one sequence).  On the AVX-512
 * path K^T and V are packed into the GEMM's panels once per task; then Q
 * is taken a block of rows at a time: the block's scores (at most
 * ATT_BLOCK_FLOATS, so they stay in L2) come from the GEMM micro-kernel,
 * are scaled, masked and softmaxed in place, and multiplied by V straight
 * into the output rows.  The unfused graph writes the scores to memory and
 * reads them back four times (MatMul, mask Add, Softmax, MatMul) and packs
 * K^T and V once per 64-row tile; here they pass through the cache once.
 * Without AVX-512 both products go through st_sgemm (OpenBLAS), as
 * MatMul's do.
 *
 * Rounding: a score is the MatMul kernel's product (one FMA chain over dh,
 * in order), then rounded by the scale and by the mask as the separate
 * Mul/Div and Add/Where round it; the softmax is a vector one on AVX-512
 * (att_softmax512: other bits than the Softmax kernel's, within 1e-6 of
 * it) and k_norm_math.h's operations in its order elsewhere; the second
 * product sums over Tk in MatMul's k blocks.
 * Results do not depend on the thread count: a task owns its output rows.
 *
 * The operands come through their layouts first (st_att_layout,
 * linalg.h): nn.MultiheadAttention's heads are strided views of the QKV
 * projection's slices, and the output is written straight into the
 * out-projection's [T*B, H*dv] input, where the exported graph copied each
 * through a Reshape.  A fused scale of Q (Q / sqrt(dh) in that export) is
 * applied to each row block as it is copied into scratch for the product.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/cpu/fastmath.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "runtime/pool.h"
#include "runtime/scratch.h"
#include "backends/cpu/vmath.h"
#include "ops/linalg.h"

/* scores per row block: 128 KB, well inside a core's L2 with the packed
 * K^T and V beside it */
#define ATT_BLOCK_FLOATS 32768
#define ATT_LANES 8

typedef struct att_job {
    const st_attention_state *s;
    const st_operand *q, *kt, *v, *m, *o;
    int lead;                      /* leading dims (rank - 2) */
    int64_t tq, tk, dh, dv;
    int64_t mstr[ST_MAX_RANK];     /* the mask's strides over the scores' shape (0: broadcast) */
    int64_t rows;                  /* Q rows per block */
    bool fast;
    int failed;                    /* a task ran out of memory (set atomically) */
} att_job;

/* The softmax of a row whose max is mx, on AVX-512: e^(x - mx) as
 * 2^((x - mx) log2 e) (vmath.h's v_exp2, about 2e-7 relative) in fused
 * multiply-adds, summed in 16 lanes, then one reciprocal.  The scalar
 * loops below (k_norm_math.h's order) compile without contraction and
 * were 6% of a 512-token encoder.  The exponent is kept above -160,
 * where 2^t is 0, so a masked -inf gives 0; NaN passes, and a row
 * whose every score is -inf gives NaN, as Softmax does. */
ST_VMATH static void att_softmax512(float *s, int64_t n, float mx)
{
    const __m512 l2e = _mm512_set1_ps(1.44269504088896341f), lo = _mm512_set1_ps(-160.0f);
    const __m512 off = _mm512_set1_ps(mx * 1.44269504088896341f);
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, s + i);
        /* max(lo, t): t when t is NaN */
        __m512 e = v_exp2(_mm512_max_ps(lo, _mm512_fmsub_ps(x, l2e, off)));
        acc = _mm512_mask_add_ps(acc, m, acc, e);
        _mm512_mask_storeu_ps(s + i, m, e);
    }
    __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(acc));
    for (i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(s + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), inv));
    }
}

/* One row of scores, in place: scale, mask, softmax.  mrow is the mask's
 * row (NULL: none), ms its stride along the keys. */
ST_CLONES static void att_row(float *s, int64_t n, const st_attention_state *st, const void *mrow, int64_t ms, bool fast)
{
    if (st->scale_kind == ST_ATT_SCALE_MUL)
        for (int64_t i = 0; i < n; i++) s[i] = s[i] * st->scale;
    else if (st->scale_kind == ST_ATT_SCALE_DIV)
        for (int64_t i = 0; i < n; i++) s[i] = s[i] / st->scale;
    if (mrow && st->mask_kind == ST_ATT_MASK_ADD) {
        const float *m = mrow;
        for (int64_t i = 0; i < n; i++) s[i] = s[i] + m[i * ms];
    } else if (mrow && st->mask_kind == ST_ATT_MASK_WHERE) {
        const uint8_t *c = mrow;
        uint8_t when = st->fill_when;
        for (int64_t i = 0; i < n; i++)
            if ((c[i * ms] != 0) == when) s[i] = st->fill;
    }
    if (n == 0) return;
    float mx = st_max_f32(s, n);
    if (fast) {
        att_softmax512(s, n, mx);
        return;
    }
    /* k_norm_math.h's softmax, step for step */
    for (int64_t i = 0; i < n; i++) s[i] = st_exp_neg_f32(s[i] - mx);
    float l[ATT_LANES] = {0};
    int64_t i = 0, full = n - n % ATT_LANES;
    for (; i < full; i += ATT_LANES)
        for (int q = 0; q < ATT_LANES; q++) l[q] += s[i + q];
    float sum = 0;
    for (; i < n; i++) sum += s[i];
    for (int q = 0; q < ATT_LANES; q++) sum += l[q];
    float inv = 1.0f / sum;
    for (i = 0; i < n; i++) s[i] *= inv;
}

/* Element offsets of leading index t in each operand (the mask's with
 * its broadcast strides). */
static void lead_offsets(const att_job *j, int64_t t, int64_t *qo, int64_t *ko, int64_t *vo, int64_t *oo, int64_t *mo)
{
    *qo = *ko = *vo = *oo = *mo = 0;
    for (int d = j->lead - 1; d >= 0; d--) {
        int64_t n = j->o->sizes[d], x = t % n;
        t /= n;
        *qo += x * j->q->strides[d];
        *ko += x * j->kt->strides[d];
        *vo += x * j->v->strides[d];
        *oo += x * j->o->strides[d];
        *mo += x * j->mstr[d];
    }
}

/* B[k, n] (element (p, c) at b[p * rs + c * cs]) packed whole the way
 * st_gemm_prepack_b lays it out (its k blocks, each all n columns), into
 * dst, which holds packed_floats(k, n) floats. */
static size_t packed_floats(int64_t k, int64_t n)
{
    return k > 0 && n > 0 ? (size_t)((n + ST_GEMM_NR - 1) / ST_GEMM_NR * ST_GEMM_NR * k) : 0;
}

static void pack_whole(const float *b, int64_t rs, int64_t cs, int64_t k, int64_t n, float *dst)
{
    if (k <= 0 || n <= 0) return;
    int64_t cols = (n + ST_GEMM_NR - 1) / ST_GEMM_NR * ST_GEMM_NR, kcb = st_gemm_kc(k);
    for (int64_t k0 = 0; k0 < k; k0 += kcb)
        st_gemm_pack_b(b + k0 * rs, rs, cs, k - k0 < kcb ? k - k0 : kcb, n, dst + k0 * cols);
}

/* dst[i * dh + c] = Q[i, c] * or / q_scale, for m rows.  Cloned and
 * with a unit-stride loop of its own, so the divisions vectorise: as a
 * scalar loop they made the layout form 10% slower than main's separate
 * Div at 512 tokens. */
ST_CLONES static void att_scale_rows(float *restrict dst, const float *restrict q, int64_t rs, int64_t cs, int64_t m,
                                     int64_t dh, const st_attention_state *st)
{
    float c = st->q_scale;
    bool div = st->q_scale_kind == ST_ATT_SCALE_DIV;
    for (int64_t i = 0; i < m; i++) {
        const float *restrict src = q + i * rs;
        float *restrict d = dst + i * dh;
        if (cs == 1 && div)
            for (int64_t k = 0; k < dh; k++) d[k] = src[k] / c;
        else if (cs == 1)
            for (int64_t k = 0; k < dh; k++) d[k] = src[k] * c;
        else if (div)
            for (int64_t k = 0; k < dh; k++) d[k] = src[k * cs] / c;
        else
            for (int64_t k = 0; k < dh; k++) d[k] = src[k * cs] * c;
    }
}

static void att_fail(att_job *j) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); }

static void att_task(void *arg, int64_t t)
{
    att_job *j = arg;
    const st_attention_state *st = j->s;
    int r = j->lead + 2;
    int64_t qo, ko, vo, oo, mo;
    lead_offsets(j, t, &qo, &ko, &vo, &oo, &mo);
    const float *q = (const float *)j->q->data + qo, *kt = (const float *)j->kt->data + ko;
    const float *v = (const float *)j->v->data + vo;
    float *o = (float *)j->o->data + oo;
    int64_t qrs = j->q->strides[r - 2], qcs = j->q->strides[r - 1];
    int64_t ors = j->o->strides[r - 2], ocs = j->o->strides[r - 1];
    int64_t tq = j->tq, tk = j->tk, dh = j->dh, dv = j->dv, rows = j->rows;
    size_t msz = j->m ? st_dtype_size(j->m->dtype) : 0;
    /* the output block goes straight into o when its rows are unit-stride */
    bool direct = ocs == 1 || dv == 1;
    /* the scores block, the output block when it cannot go in place, and
     * on AVX-512 the packed K^T and V: the worker's kept scratch
     * (scratch.h), so a warm run allocates nothing */
    size_t n_sc = (size_t)(rows * (tk > 0 ? tk : 1)), n_ob = direct ? 0 : (size_t)(rows * dv);
    size_t n_kp = j->fast ? packed_floats(dh, tk) : 0, n_vp = j->fast ? packed_floats(tk, dv) : 0;
    /* a block of scaled Q rows, when Q's scale was fused in */
    bool qscaled = st->q_scale_kind != ST_ATT_SCALE_NONE;
    size_t n_qb = qscaled ? (size_t)(rows * dh) : 0;
    n_sc = (n_sc + 15) / 16 * 16;
    n_ob = (n_ob + 15) / 16 * 16;
    n_kp = (n_kp + 15) / 16 * 16;
    n_vp = (n_vp + 15) / 16 * 16;
    float *sc = st_scratch_take((n_sc + n_ob + n_kp + n_vp + n_qb) * sizeof *sc);
    float *own_q = NULL, *own_k = NULL, *own_v = NULL;   /* portable: copies st_mat_f32 made */
    st_mat km = {0}, vm = {0}, qm = {0};
    if (!sc) goto nomem;
    float *ob = sc + n_sc, *kp = ob + n_ob, *vp = kp + n_kp, *qb = vp + n_vp;
    if (j->fast) {
        pack_whole(kt, j->kt->strides[r - 2], j->kt->strides[r - 1], dh, tk, kp);
        pack_whole(v, j->v->strides[r - 2], j->v->strides[r - 1], tk, dv, vp);
    } else {
        if (!qscaled && st_mat_f32(j->q, r - 2, r - 1, qo, &qm, &own_q) != ST_OK) goto nomem;
        if (st_mat_f32(j->kt, r - 2, r - 1, ko, &km, &own_k) != ST_OK) goto nomem;
        if (st_mat_f32(j->v, r - 2, r - 1, vo, &vm, &own_v) != ST_OK) goto nomem;
    }
    for (int64_t i0 = 0; i0 < tq; i0 += rows) {
        int64_t m = tq - i0 < rows ? tq - i0 : rows;
        /* Q's rows of this block, scaled as the separate Mul/Div would
         * (one rounding per element) when that op was fused in */
        const float *qa = q + i0 * qrs;
        int64_t ars = qrs, acs = qcs;
        if (qscaled) {
            att_scale_rows(qb, qa, qrs, qcs, m, dh, st);
            qa = qb;
            ars = dh;
            acs = 1;
        }
        /* scores = Q[i0 .. i0 + m) K^T */
        if (dh == 0 || tk == 0) {
            memset(sc, 0, (size_t)(m * tk) * sizeof *sc);
        } else if (j->fast) {
            if (!st_sgemm_fast_prepacked(qa, ars, acs, kp, tk, 0, 1.0f, 0.0f, sc, tk, m, tk, dh)) goto nomem;
        } else {
            st_mat qa_m = qscaled ? (st_mat){qb, m, dh, dh, 1} : qm;
            if (!qscaled) qa_m.p += i0 * qm.rs;
            qa_m.rows = m;
            if (st_sgemm(&qa_m, false, &km, false, 1.0f, 0.0f, sc, tk, m, tk, dh) != ST_OK) goto nomem;
        }
        for (int64_t i = 0; i < m; i++) {
            const void *mrow = NULL;
            if (j->m) mrow = (const char *)j->m->data + (mo + (i0 + i) * j->mstr[r - 2]) * (int64_t)msz;
            att_row(sc + i * tk, tk, st, mrow, j->mstr[r - 1], j->fast);
        }
        /* out = P V */
        float *dst = direct ? o + i0 * ors : ob;
        int64_t ldd = direct ? ors : dv;
        if (dv == 0) continue;
        if (tk == 0) {
            for (int64_t i = 0; i < m; i++) memset(dst + i * ldd, 0, (size_t)dv * sizeof *dst);
        } else if (j->fast) {
            if (!st_sgemm_fast_prepacked(sc, tk, 1, vp, dv, 0, 1.0f, 0.0f, dst, ldd, m, dv, tk)) goto nomem;
        } else {
            st_mat pm = {sc, m, tk, tk, 1};
            if (st_sgemm(&pm, false, &vm, false, 1.0f, 0.0f, dst, ldd, m, dv, tk) != ST_OK) goto nomem;
        }
        if (!direct)
            for (int64_t i = 0; i < m; i++)
                for (int64_t c = 0; c < dv; c++) o[(i0 + i) * ors + c * ocs] = ob[i * dv + c];
    }
    goto done;
nomem:
    att_fail(j);
done:
    st_scratch_give(sc);
    free(own_q);
    free(own_k);
    free(own_v);
}

/* The operand x as the kernel sees it through layout l (linalg.h): its
 * dims split, then permuted; strides only.  False when x's sizes are not
 * what the plan's layout was made for. */
static bool att_view(const st_operand *x, const st_att_layout *l, st_operand *out)
{
    *out = *x;
    if (l->n == 0) return true;
    if (l->n > ST_MAX_RANK) return false;
    int64_t es[ST_MAX_RANK], made[ST_MAX_RANK];
    for (int d = 0; d < x->rank; d++) made[d] = 1;
    /* innermost first: a split dim's inner parts step by the operand's stride */
    for (int e = l->n - 1; e >= 0; e--) {
        int d = l->from[e];
        if (d < 0 || d >= x->rank) return false;
        es[e] = x->strides[d] * made[d];
        made[d] *= l->size[e];
    }
    for (int d = 0; d < x->rank; d++)
        if (made[d] != x->sizes[d]) return false;
    out->rank = l->n;
    for (int c = 0; c < l->n; c++) {
        int e = l->perm[c];
        if (e < 0 || e >= l->n) return false;
        out->sizes[c] = l->size[e];
        out->strides[c] = es[e];
    }
    return true;
}

/* f16 operands (a plan that fused an f16 graph: CUDA's tensor-core path
 * makes them, and a saved model may carry them) go through f32 copies:
 * each f16 operand is widened, exactly, into a packed buffer of its view's
 * shape, the f32 kernel runs on those, and the output is rounded to f16
 * once at the end.  Scores and the softmax stay in f32, as the GPU
 * kernels keep them; the unfused f16 graph rounds each intermediate, so
 * the fused result is the more accurate one. */
static void att_walk(const st_operand *x, float *packed, bool to_packed)
{
    int r = x->rank;
    int64_t n = st_numel(r, x->sizes), idx[ST_MAX_RANK] = {0};
    uint16_t *h = x->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < r; d++) off += idx[d] * x->strides[d];
        if (to_packed)
            packed[i] = st_f16_to_f32(h[off]);
        else
            h[off] = st_f32_to_f16(packed[i]);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < x->sizes[d]) break;
            idx[d] = 0;
        }
    }
}

/* ops[i] replaced by a packed f32 copy when it is f16; the copy's buffer
 * goes to bufs[i] (the output's is only allocated, and written back by
 * the caller). */
static bool att_widen(st_operand *x, float **buf, bool is_out)
{
    if (x->dtype != ST_F16) return true;
    int64_t n = st_numel(x->rank, x->sizes);
    *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof **buf);
    if (!*buf) return false;
    if (!is_out) att_walk(x, *buf, true);
    x->data = *buf;
    x->dtype = ST_F32;
    st_strides_contiguous(x->rank, x->sizes, x->strides);
    return true;
}

static st_status att_run(const st_kctx *k, st_operand *ops);

static st_status cpu_attention(const st_kctx *k)
{
    const st_attention_state *s = k->state;
    /* the operands as the kernel's loops see them: layouts applied */
    st_operand ops[ST_ATT_N_OPERANDS];
    const st_operand *given[ST_ATT_N_OPERANDS] = {&k->in[0], &k->in[1], &k->in[2], k->n_in > 3 ? &k->in[3] : NULL, &k->out[0]};
    for (int i = 0; i < ST_ATT_N_OPERANDS; i++)
        if (given[i] && !att_view(given[i], &s->lay[i], &ops[i]))
            return st_error(ST_ERR_INTERNAL, "node '%s': operand %d (rank %d) does not fit the planned attention layout",
                            k->node->name, i, given[i]->rank);
    if (k->out[0].dtype != ST_F16) return att_run(k, ops);
    float *bufs[ST_ATT_N_OPERANDS] = {0};
    st_operand out_f16 = ops[ST_ATT_OUT];
    st_status st = ST_OK;
    for (int i = 0; i < ST_ATT_N_OPERANDS && st == ST_OK; i++)
        if (given[i] && given[i]->data && !att_widen(&ops[i], &bufs[i], i == ST_ATT_OUT))
            st = st_error(ST_ERR_NOMEM, "node '%s': out of memory for attention operand %d in f32", k->node->name, i);
    if (st == ST_OK) st = att_run(k, ops);
    if (st == ST_OK) att_walk(&out_f16, bufs[ST_ATT_OUT], false);
    for (int i = 0; i < ST_ATT_N_OPERANDS; i++) free(bufs[i]);
    return st;
}

/* The f32 kernel over operands already through their layouts. */
static st_status att_run(const st_kctx *k, st_operand *ops)
{
    const st_attention_state *s = k->state;
    const st_operand *given[ST_ATT_N_OPERANDS] = {&k->in[0], &k->in[1], &k->in[2], k->n_in > 3 ? &k->in[3] : NULL, &k->out[0]};
    att_job j = {.s = s, .q = &ops[ST_ATT_Q], .kt = &ops[ST_ATT_KT], .v = &ops[ST_ATT_V], .o = &ops[ST_ATT_OUT]};
    j.m = given[ST_ATT_MASK] && given[ST_ATT_MASK]->data ? &ops[ST_ATT_MASK] : NULL;
    if (s->mask_kind == ST_ATT_MASK_NONE) j.m = NULL;
    int r = j.o->rank;
    if (j.q->rank != r || j.kt->rank != r || j.v->rank != r)
        return st_error(ST_ERR_INTERNAL, "node '%s': Q, KT, V and the output have ranks %d, %d, %d, %d", k->node->name,
                        j.q->rank, j.kt->rank, j.v->rank, r);
    j.lead = r - 2;
    j.tq = j.q->sizes[r - 2];
    j.dh = j.q->sizes[r - 1];
    j.tk = j.kt->sizes[r - 1];
    j.dv = j.v->sizes[r - 1];
    int64_t nb = 1;
    for (int d = 0; d < j.lead; d++) nb *= j.o->sizes[d];
    if (nb == 0 || j.tq == 0) return ST_OK;
    if (j.m) {
        /* the scores' shape: the output's with Tk last */
        st_operand scores = *j.o;
        scores.sizes[r - 1] = j.tk;
        st_broadcast_strides(j.m, &scores, j.mstr);
    }
    j.rows = ATT_BLOCK_FLOATS / (j.tk > 0 ? j.tk : 1);
    j.rows = j.rows < ST_GEMM_MR ? ST_GEMM_MR : j.rows / ST_GEMM_MR * ST_GEMM_MR;
    if (j.rows > j.tq) j.rows = j.tq;
    j.fast = st_gemm_fast();
    st_parallel_for(k->pool, nb, att_task, &j);
    if (j.failed) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for attention's packed blocks", k->node->name);
    return ST_OK;
}

const st_kernel st_cpu_k_attention[] = {
    {"FusedAttention", "ai.strata", ST_DT(ST_F32) | ST_DT(ST_F16), cpu_attention, NULL, NULL, NULL},
    {NULL},
};
