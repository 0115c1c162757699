/*
 * gemm.cl — the tiled GEMM behind MatMul and Gemm, batched and strided:
 *
 *     Y[b] = act(alpha * A[b] @ B[b] + beta * C)
 *
 * A is [M, K], B [K, N], Y [M, N], each with its own row and column
 * strides (a transposed operand is just swapped strides, never a copy),
 * the batch dims with their own strides (0 for a broadcast operand); C is
 * Gemm's bias, broadcast by strides.  Any dtype is loaded as f32 and the
 * products accumulate in f32.
 *
 * A work-group of 16x16 work-items computes a 64x64 tile of Y, 4x4
 * elements each (rows ly + 16 i, columns lx + 16 j, so neighbouring
 * work-items touch neighbouring columns).  Per step of 16 along K it
 * stages a 64x16 block of A and a 16x64 block of B in local memory, each
 * loaded along whichever of the operand's dims is contiguous.
 */

#define GT 64
#define GK 16
#define GW 16

/* Same layout as st_cl_gemm_p in k_linalg.c. */
typedef struct st_gemm_p {
    long m, n, k;
    long a_off, a_rs, a_cs;
    long b_off, b_rs, b_cs;
    long y_off, y_rs, y_cs;
    long c_off, c_rs, c_cs;
    long nb;
    long bn[6], ba[6], bb[6], by[6];
    long a_dt, b_dt, y_dt, c_dt;
    long has_c, act;
    long a_kfast, b_kfast;     /* the operand is contiguous along K */
    float alpha, beta, act_a, act_b;
} st_gemm_p;

kernel __attribute__((reqd_work_group_size(GW, GW, 1))) void st_gemm(gp y, gcp a, gcp b, gcp c, st_gemm_p p)
{
    local float As[GK][GT + 1];
    local float Bs[GK][GT + 1];
    int lx = get_local_id(0), ly = get_local_id(1), tid = ly * GW + lx;
    long row0 = (long)get_group_id(1) * GT, col0 = (long)get_group_id(0) * GT;
    long z = get_global_id(2);
    long oa = p.a_off, ob = p.b_off, oy = p.y_off;
    for (int d = (int)p.nb - 1; d >= 0; d--) {
        long q = z / p.bn[d], r = z - q * p.bn[d];
        oa += r * p.ba[d];
        ob += r * p.bb[d];
        oy += r * p.by[d];
        z = q;
    }
    int adt = (int)p.a_dt, bdt = (int)p.b_dt;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (long k0 = 0; k0 < p.k; k0 += GK) {
        for (int t = 0; t < (GT * GK) / (GW * GW); t++) {
            int idx = tid + t * GW * GW;
            int r, kk;
            if (p.a_kfast) {
                r = idx / GK;
                kk = idx % GK;
            } else {
                r = idx % GT;
                kk = idx / GT;
            }
            long gr = row0 + r, gk = k0 + kk;
            long ai = oa + gr * p.a_rs + gk * p.a_cs;
            As[kk][r] = (gr < p.m && gk < p.k) ? (adt == DT_F32 ? ((global const float *)a)[ai] : ld_f(a, ai, adt)) : 0.0f;
            int cc;
            if (p.b_kfast) {
                cc = idx / GK;
                kk = idx % GK;
            } else {
                cc = idx % GT;
                kk = idx / GT;
            }
            long gc = col0 + cc;
            gk = k0 + kk;
            long bi = ob + gk * p.b_rs + gc * p.b_cs;
            Bs[kk][cc] = (gk < p.k && gc < p.n) ? (bdt == DT_F32 ? ((global const float *)b)[bi] : ld_f(b, bi, bdt)) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < GK; kk++) {
            float av[4], bv[4];
            for (int i = 0; i < 4; i++) av[i] = As[kk][ly + GW * i];
            for (int j = 0; j < 4; j++) bv[j] = Bs[kk][lx + GW * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < 4; i++) {
        long r = row0 + ly + GW * i;
        if (r >= p.m) continue;
        for (int j = 0; j < 4; j++) {
            long col = col0 + lx + GW * j;
            if (col >= p.n) continue;
            float v = p.alpha * acc[i][j];
            if (p.has_c) v += p.beta * ld_f(c, p.c_off + r * p.c_rs + col * p.c_cs, (int)p.c_dt);
            st_f(y, oy + r * p.y_rs + col * p.y_cs, (int)p.y_dt, act_f((int)p.act, v, p.act_a, p.act_b));
        }
    }
}
