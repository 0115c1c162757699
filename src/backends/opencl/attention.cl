/*
 * attention.cl — strata's FusedAttention (ops/linalg.h),
 * softmax(mask(scale(Q K^T))) V, streamed: the [Tq, Tk] scores never go to
 * global memory.
 *
 * A work-group of ATT_BQ work-items takes ATT_BQ query rows of one head
 * (leading index) and one chunk of at most ATT_DV output columns; each
 * work-item owns one query row.  Keys are taken ATT_BK at a time: the
 * group stages K^T's tile (ATT_DC of dh at a time) and then V's tile in
 * local memory, each work-item makes its ATT_BK scores in registers and
 * folds them into a running max m, a running sum l and its output row
 * (online softmax: when m grows, l and the row are scaled by e^(m_old -
 * m_new)).  The row is divided by l at the end.
 *
 * Semantics are the unfused graph's (and backends/cpu/k_attention.c's):
 * each score is rounded, then scaled (x * c or x / c), then masked (+ M,
 * or `fill` where the bool mask equals fill_when), as the separate ops
 * round it; NaN propagates through the max; a row whose scores are all
 * -inf gives NaN (l = 0 and 0 / 0), as Softmax's e^(-inf - -inf) does;
 * Tk = 0 gives zeros, as the CPU kernel does.  While m is -inf the
 * exponent's base is taken as 0, so that masked keys before the first
 * finite one weigh 0 instead of e^(-inf + inf) = NaN.
 *
 * Q, K^T, V, the output and the mask are read and written through their
 * own element strides (a transposed K, a padded output; the mask's are 0
 * where it broadcasts), so no operand is copied first.
 */

#define ATT_BQ 64
#define ATT_BK 32
#define ATT_DC 32
#define ATT_DV 64
#define ATT_LEAD 6

#define ATT_SCALE_MUL 1
#define ATT_SCALE_DIV 2
#define ATT_MASK_ADD 1
#define ATT_MASK_WHERE 2

/* Same layout as st_cl_att_p in k_attention.c. */
typedef struct st_att_p {
    long tq, tk, dh, dv, lead;
    long ln[ATT_LEAD];
    long qs[ATT_LEAD], ks[ATT_LEAD], vs[ATT_LEAD], os[ATT_LEAD], ms[ATT_LEAD];
    long qo, ko, vo, oo, mo;
    long q_rs, q_cs, k_rs, k_cs, v_rs, v_cs, o_rs, o_cs, m_rs, m_cs;
    long scale_kind, mask_kind, fill_when, has_mask;
    float scale, fill;
} st_att_p;

kernel __attribute__((reqd_work_group_size(ATT_BQ, 1, 1))) void st_attention(global float *o, global const float *q,
                                                                            global const float *kt,
                                                                            global const float *v, gcp mask, st_att_p p)
{
    local float kl[ATT_BK][ATT_DC + 1];
    local float vl[ATT_BK][ATT_DV];
    const int t = get_local_id(0);
    const long i = get_group_id(0) * ATT_BQ + t;  /* this work-item's query row */
    const bool live = i < p.tq;
    const long c0 = get_group_id(2) * ATT_DV;      /* the output columns' chunk */
    const int nc = (int)min((long)ATT_DV, p.dv - c0);
    /* the leading index's offsets */
    long h = get_group_id(1), qo = p.qo, ko = p.ko, vo = p.vo, oo = p.oo, mo = p.mo;
    for (int d = (int)p.lead - 1; d >= 0; d--) {
        long x, r;
        DIVMOD(h, p.ln[d], x, r);
        qo += r * p.qs[d];
        ko += r * p.ks[d];
        vo += r * p.vs[d];
        oo += r * p.os[d];
        mo += r * p.ms[d];
        h = x;
    }
    if (live) {
        qo += i * p.q_rs;
        mo += i * p.m_rs;
        oo += i * p.o_rs;
    }
    float acc[ATT_DV];
    for (int c = 0; c < ATT_DV; c++) acc[c] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (long j0 = 0; j0 < p.tk; j0 += ATT_BK) {
        const int nk = (int)min((long)ATT_BK, p.tk - j0);
        float s[ATT_BK];
        for (int j = 0; j < ATT_BK; j++) s[j] = 0.0f;
        /* scores: Q row . K^T columns, ATT_DC of dh at a time */
        for (long p0 = 0; p0 < p.dh; p0 += ATT_DC) {
            const int np = (int)min((long)ATT_DC, p.dh - p0);
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int e = t; e < ATT_BK * ATT_DC; e += ATT_BQ) {
                int j = e / ATT_DC, c = e % ATT_DC;
                kl[j][c] = j < nk && c < np ? kt[ko + (p0 + c) * p.k_rs + (j0 + j) * p.k_cs] : 0.0f;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (live)
                for (int c = 0; c < np; c++) {
                    float qv = q[qo + (p0 + c) * p.q_cs];
                    for (int j = 0; j < ATT_BK; j++) s[j] = fma(qv, kl[j][c], s[j]);
                }
        }
        /* scale, mask, and the tile's max (loops of constant length, so
         * s stays in registers on a GPU; keys past Tk weigh 0) */
        float mt = m;
        for (int j = 0; j < ATT_BK; j++) {
            float x = s[j];
            if (p.scale_kind == ATT_SCALE_MUL) x = x * p.scale;
            else if (p.scale_kind == ATT_SCALE_DIV) x = x / p.scale;
            if (p.has_mask && live && j < nk) {
                long at = mo + (j0 + j) * p.m_cs;
                if (p.mask_kind == ATT_MASK_ADD) x = x + ((global const float *)mask)[at];
                else if ((mask[at] != 0) == (p.fill_when != 0)) x = p.fill;
            }
            s[j] = x;
            if (j < nk) mt = ((x > mt) | (x != x)) ? x : mt;
        }
        /* e^(s - base) with base 0 while every score so far is -inf */
        const float base = mt == -INFINITY ? 0.0f : mt;
        const float corr = exp(m - base);
        l *= corr;
        for (int c = 0; c < ATT_DV; c++) acc[c] *= corr;
        m = mt;
        for (int j = 0; j < ATT_BK; j++) {
            s[j] = j < nk ? exp(s[j] - base) : 0.0f;
            l += s[j];
        }
        /* V's tile, then the row += P V */
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = t; e < ATT_BK * ATT_DV; e += ATT_BQ) {
            int j = e / ATT_DV, c = e % ATT_DV;
            vl[j][c] = j < nk && c < nc ? v[vo + (j0 + j) * p.v_rs + (c0 + c) * p.v_cs] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < ATT_BK; j++) {
            float pj = s[j];
            for (int c = 0; c < ATT_DV; c++) acc[c] = fma(pj, vl[j][c], acc[c]);
        }
    }
    if (!live) return;
    for (int c = 0; c < nc; c++) o[oo + (c0 + c) * p.o_cs] = p.tk == 0 ? 0.0f : acc[c] / l;
}
