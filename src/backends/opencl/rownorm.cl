/*
 * rownorm.cl — LayerNormalization, InstanceNormalization and
 * GroupNormalization on the device (host side: k_rownorm.c): one
 * work-group per normalised row, which sums the row (mean), then the
 * squared deviations (variance: two passes, never E[x^2] - E[x]^2, which
 * cancels), then writes y = (x - mean) / sqrt(var + eps) * scale + bias.
 * The three ops differ only in what a row is and where its scale comes
 * from, which k_rownorm.c encodes as one shape with strides per operand:
 * the first `outer` dims enumerate rows, the others span one.
 */

#define RN_LOCAL 64

/* Same layout as st_cl_rownorm_p in k_rownorm.c. */
typedef struct st_rownorm_p {
    long rank, outer;
    long n[MAX_RANK];
    long s[6][MAX_RANK];   /* x, y, scale, bias, mean, inv_std */
    long off[6], dt[6];
    long has_bias, has_mean, has_inv;
    float eps, pad_;
} st_rownorm_p;

/* Offsets of inner element j of the row for operands 0..3. */
inline void rn_inner(const st_rownorm_p *p, long j, long *o)
{
    o[0] = o[1] = o[2] = o[3] = 0;
    for (int d = (int)p->rank - 1; d >= (int)p->outer; d--) {
        long q, r;
        DIVMOD(j, p->n[d], q, r);
        j = q;
        for (int k = 0; k < 4; k++) o[k] += r * p->s[k][d];
    }
}

inline float rn_sum(local float *red, float v)
{
    int lid = (int)get_local_id(0);
    red[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = RN_LOCAL / 2; h > 0; h >>= 1) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float t = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return t;
}

kernel void st_rownorm(gp y, gcp x, gcp sc, gcp bi, gp mean, gp inv, st_rownorm_p p)
{
    local float red[RN_LOCAL];
    long row = get_group_id(0), lid = get_local_id(0);
    long len = 1, base[6] = {0, 0, 0, 0, 0, 0};
    for (int d = (int)p.outer; d < (int)p.rank; d++) len *= p.n[d];
    long r = row;
    for (int d = (int)p.outer - 1; d >= 0; d--) {
        long q, c;
        DIVMOD(r, p.n[d], q, c);
        r = q;
        for (int k = 0; k < 6; k++) base[k] += c * p.s[k][d];
    }
    for (int k = 0; k < 6; k++) base[k] += p.off[k];
    int tx = (int)p.dt[0];
    float acc = 0.0f;
    for (long j = lid; j < len; j += RN_LOCAL) {
        long o[4];
        rn_inner(&p, j, o);
        acc += ld_f(x, base[0] + o[0], tx);
    }
    float mu = rn_sum(red, acc) / (float)len;
    acc = 0.0f;
    for (long j = lid; j < len; j += RN_LOCAL) {
        long o[4];
        rn_inner(&p, j, o);
        float dv = ld_f(x, base[0] + o[0], tx) - mu;
        acc += dv * dv;
    }
    float is = 1.0f / sqrt(rn_sum(red, acc) / (float)len + p.eps);
    for (long j = lid; j < len; j += RN_LOCAL) {
        long o[4];
        rn_inner(&p, j, o);
        float v = (ld_f(x, base[0] + o[0], tx) - mu) * is * ld_f(sc, base[2] + o[2], (int)p.dt[2]);
        if (p.has_bias) v += ld_f(bi, base[3] + o[3], (int)p.dt[3]);
        st_f(y, base[1] + o[1], (int)p.dt[1], v);
    }
    if (lid == 0 && p.has_mean) st_f(mean, base[4], (int)p.dt[4], mu);
    if (lid == 0 && p.has_inv) st_f(inv, base[5], (int)p.dt[5], is);
}
