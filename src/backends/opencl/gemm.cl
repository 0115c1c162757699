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
 * A work-group of 16x16 work-items computes a (16 RM) x (16 RN) tile of
 * Y, RM x RN elements each (rows ly + 16 i, columns lx + 16 j, so
 * neighbouring work-items touch neighbouring columns): st_gemm_t64x64
 * down to st_gemm_t16x64, chosen per problem with a split of K
 * (cl_tiles.c), because a 64x64 tile leaves most of a GPU idle on small
 * M x N.  Per step of 16 along K it stages a block of A and one of B in
 * local memory, each loaded along whichever of the operand's dims is
 * contiguous.  With splits > 1, work-group (batch, s) sums only K range s
 * into `part` ([s][batch][m][n], f32) and st_gemm_splitk applies alpha,
 * beta C and the activation once, in a fixed order.
 */

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
    long batches, splits, kchunk;
    float alpha, beta, act_a, act_b;
} st_gemm_p;

/* Batch z's element offsets of A, B and Y. */
inline void gemm_batch(const st_gemm_p *p, long z, long *oa, long *ob, long *oy)
{
    *oa = p->a_off;
    *ob = p->b_off;
    *oy = p->y_off;
    for (int d = (int)p->nb - 1; d >= 0; d--) {
        long q = z / p->bn[d], r = z - q * p->bn[d];
        *oa += r * p->ba[d];
        *ob += r * p->bb[d];
        *oy += r * p->by[d];
        z = q;
    }
}

/* alpha, beta C, the activation and the store of Y[r, col]. */
inline void gemm_store(gp y, gcp c, const st_gemm_p *p, long oy, long r, long col, float acc)
{
    float v = p->alpha * acc;
    if (p->has_c) v += p->beta * ld_f(c, p->c_off + r * p->c_rs + col * p->c_cs, (int)p->c_dt);
    st_f(y, oy + r * p->y_rs + col * p->y_cs, (int)p->y_dt, act_f((int)p->act, v, p->act_a, p->act_b));
}

/* The body of every tile kernel; RM and RN are literals at each call, so
 * acc becomes registers.  As is [GK][16 RM + 1], Bs [GK][16 RN + 1]. */
inline void gemm_tile(gp y, gcp a, gcp b, gcp c, global float *part, const st_gemm_p *p, const int RM, const int RN,
                      local float *As, local float *Bs)
{
    const int TM = GW * RM, TN = GW * RN, AS = TM + 1, BS = TN + 1;
    int lx = get_local_id(0), ly = get_local_id(1), tid = ly * GW + lx;
    long row0 = (long)get_group_id(1) * TM, col0 = (long)get_group_id(0) * TN;
    long zs = get_group_id(2), z = zs / p->splits, s = zs - z * p->splits;
    long kbeg = s * p->kchunk, kend = min(p->k, kbeg + p->kchunk);
    long oa, ob, oy;
    gemm_batch(p, z, &oa, &ob, &oy);
    int adt = (int)p->a_dt, bdt = (int)p->b_dt;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (long k0 = kbeg; k0 < kend; k0 += GK) {
        for (int t = 0; t < RM; t++) {
            int idx = tid + t * GW * GW, r, kk;
            if (p->a_kfast) {
                r = idx / GK;
                kk = idx % GK;
            } else {
                r = idx % TM;
                kk = idx / TM;
            }
            long gr = row0 + r, gk = k0 + kk;
            long ai = oa + gr * p->a_rs + gk * p->a_cs;
            As[kk * AS + r] = (gr < p->m && gk < kend) ? (adt == DT_F32 ? ((global const float *)a)[ai] : ld_f(a, ai, adt)) : 0.0f;
        }
        for (int t = 0; t < RN; t++) {
            int idx = tid + t * GW * GW, cc, kk;
            if (p->b_kfast) {
                cc = idx / GK;
                kk = idx % GK;
            } else {
                cc = idx % TN;
                kk = idx / TN;
            }
            long gc = col0 + cc, gk = k0 + kk;
            long bi = ob + gk * p->b_rs + gc * p->b_cs;
            Bs[kk * BS + cc] = (gk < kend && gc < p->n) ? (bdt == DT_F32 ? ((global const float *)b)[bi] : ld_f(b, bi, bdt)) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < GK; kk++) {
            float av[4], bv[4];
            for (int i = 0; i < RM; i++) av[i] = As[kk * AS + ly + GW * i];
            for (int j = 0; j < RN; j++) bv[j] = Bs[kk * BS + lx + GW * j];
            for (int i = 0; i < RM; i++)
                for (int j = 0; j < RN; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < RM; i++) {
        long r = row0 + ly + GW * i;
        if (r >= p->m) continue;
        for (int j = 0; j < RN; j++) {
            long col = col0 + lx + GW * j;
            if (col >= p->n) continue;
            if (p->splits > 1)
                part[((s * p->batches + z) * p->m + r) * p->n + col] = acc[i][j];
            else
                gemm_store(y, c, p, oy, r, col, acc[i][j]);
        }
    }
}

#define GEMM_TILE(name, RM, RN)                                                                                  \
    kernel __attribute__((reqd_work_group_size(GW, GW, 1))) void name(gp y, gcp a, gcp b, gcp c, global float *part, \
                                                                      st_gemm_p p)                               \
    {                                                                                                            \
        local float As[GK * (GW * RM + 1)];                                                                      \
        local float Bs[GK * (GW * RN + 1)];                                                                      \
        gemm_tile(y, a, b, c, part, &p, RM, RN, As, Bs);                                                         \
    }

GEMM_TILE(st_gemm_t64x64, 4, 4)
GEMM_TILE(st_gemm_t64x32, 4, 2)
GEMM_TILE(st_gemm_t32x64, 2, 4)
GEMM_TILE(st_gemm_t32x32, 2, 2)
GEMM_TILE(st_gemm_t16x64, 1, 4)

/* Split K's second pass: one output per work-item over (col, row, batch),
 * the splits added in order (the same sum on every run). */
kernel void st_gemm_splitk(gp y, gcp c, global const float *part, st_gemm_p p)
{
    long col = get_global_id(0), r = get_global_id(1), z = get_global_id(2);
    if (col >= p.n || r >= p.m) return;
    long plane = p.batches * p.m * p.n, i = (z * p.m + r) * p.n + col;
    float v = 0.0f;
    for (long s = 0; s < p.splits; s++) v += part[s * plane + i];
    long oa, ob, oy;
    gemm_batch(&p, z, &oa, &ob, &oy);
    gemm_store(y, c, &p, oy, r, col, v);
}
