/*
 * conv_gemm.cl — Conv as an implicit GEMM on a GPU, with the tile size
 * and the split of K chosen per problem (k_conv_gemm.c):
 *
 *     Y[m, q] = act(bias[m] + sum_k W[m, k] X'[k, q])
 *
 * per (image, group), k = (c, kh, kw), q = (oh, ow); the im2col matrix X'
 * is never built.  A work-group is always 16x16 work-items; each computes
 * RM x RN outputs, so the tile is (16 RM) channels x (16 RN) pixels:
 * st_conv_t64x64 down to st_conv_t16x64.  Small tiles and split K exist
 * because a deep conv over a small image (20x20 pixels, 80 channels,
 * K = 2304) makes only a dozen 64x64 tiles: a dozen work-groups on a GPU
 * of 132 compute units, each walking all of K alone.
 *
 * With splits > 1, work-group (z, s) sums only K range s and writes its
 * raw partial sums to `part` ([s][z][m][q], f32); st_conv_splitk then adds
 * the splits in a fixed order, the bias and the activation, once, and
 * does the strided store.  With splits == 1 the tile kernel does that
 * epilogue itself.
 *
 * Index math is 32-bit (the host checks every offset fits, else it runs
 * conv.cl's 64-bit st_conv_gemm).  The (c, kh, kw) of a work-item's K row
 * advances by counters, and its pixels' window origins are computed once,
 * so the gather has no division.  The next K step's global loads are
 * issued into registers before the current step's products, so their
 * latency overlaps the arithmetic.  Accumulation is f32 for every dtype.
 */

/* Same layout as st_cl_cg_p in k_conv_gemm.c: 4-byte members only. */
typedef struct st_cg_p {
    int M, K, P, Z;
    int groups, cg, kh, kw, kvol, ow, ih, iw, s1, s2, d1, d2, pb1, pb2;
    int xo, xs0, xs1, xs3, xs4;
    int wo, ws0, ws1, ws3, ws4;
    int yo, ys0, ys1, ys3, ys4;
    int bo, bs, has_b;
    int x_dt, w_dt, y_dt, b_dt, act;
    int kchunk, splits;
    int cstep, astep, bstep;
    float act_a, act_b;
} st_cg_p;

#define CG_K 16 /* K per step */
#define CG_W 16 /* work-group side */

/* Moves (c, a, b), a K index as (channel, kernel row, kernel column), on by
 * CG_K = cstep * kvol + astep * kw + bstep. */
inline void cg_advance(const st_cg_p *p, int *c, int *a, int *b)
{
    *b += p->bstep;
    *a += p->astep;
    *c += p->cstep;
    if (*b >= p->kw) {
        *b -= p->kw;
        (*a)++;
    }
    if (*a >= p->kh) {
        *a -= p->kh;
        (*c)++;
    }
}

/* Element i of an operand of dtype DT, a literal at every call: the
 * branches fold away and f16 is one 2-byte load and a convert, with no
 * run-time dtype switch in the gather.  DT 0 is the generic kernel's
 * (operands of different dtypes): the run-time code dt decides. */
inline float cg_ld(gcp m, int i, const int DT, int dt)
{
    if (DT == DT_F32) return ((global const float *)m)[i];
    if (DT == DT_F16) return vload_half(i, (global const half *)m);
    if (DT == DT_BF16) return bf16_to_f(((global const ushort *)m)[i]);
    return dt == DT_F32 ? ((global const float *)m)[i] : ld_f(m, i, dt);
}

inline void cg_st(gp m, int i, const int DT, int dt, float v)
{
    if (DT == DT_F32)
        ((global float *)m)[i] = v;
    else if (DT == DT_F16)
        vstore_half_rte(v, i, (global half *)m);
    else if (DT == DT_BF16)
        ((global ushort *)m)[i] = f_to_bf16(v);
    else
        st_f(m, i, dt, v);
}

/* The epilogue of one output: bias, activation, strided store; y is of
 * dtype DT (0: p->y_dt). */
inline void cg_store(gp y, gcp bias, const st_cg_p *p, int z, int m, int q, float v, const int DT)
{
    int n = z / p->groups, g = z - n * p->groups, oc = g * (p->M) + m;
    int oy = q / p->ow, ox = q - oy * p->ow;
    if (p->has_b) v += ld_f(bias, p->bo + oc * p->bs, p->b_dt);
    cg_st(y, p->yo + n * p->ys0 + oc * p->ys1 + oy * p->ys3 + ox * p->ys4, DT, p->y_dt, act_f(p->act, v, p->act_a, p->act_b));
}

/* R consecutive floats of local memory (R = 1, 2 or 4, a literal; p
 * aligned to R floats) to and from registers, as one vector access: a
 * GPU issues one wide local load where R scalar ones would each cost an
 * instruction, and the local loads, not the FMAs, bound the inner loop. */
inline void cg_put(local float *p, const int R, const float *v)
{
    if (R == 4)
        *(local float4 *)p = (float4)(v[0], v[1], v[2], v[3]);
    else if (R == 2)
        *(local float2 *)p = (float2)(v[0], v[1]);
    else
        p[0] = v[0];
}

inline void cg_get(const local float *p, const int R, float *v)
{
    if (R == 4) {
        float4 t = *(const local float4 *)p;
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
    } else if (R == 2) {
        float2 t = *(const local float2 *)p;
        v[0] = t.x;
        v[1] = t.y;
    } else {
        v[0] = p[0];
    }
}

/* The body of every tile kernel; RM, RN and DT (the dtype of x, w and y,
 * 0 when they differ) are literals at each call, so the arrays below
 * become registers and the loads and stores have no dtype switch.
 *
 * As is [CG_K][16 RM + 4] and Bs [CG_K][16 RN + 4], each row permuted:
 * tile row r = l + 16 i (l < 16, i < RM) sits at l RM + i, so the RM rows
 * one work-item multiplies (and the RM it loads from global memory) are
 * adjacent, one vector access each.  The rows a work-item owns stay
 * l + 16 i, so neighbouring work-items still store neighbouring outputs.
 * The +4 keeps rows 16-byte aligned and puts the 8 work-items of a
 * 128-bit access phase on different banks. */
inline void conv_tile(gp y, gcp x, gcp w, gcp bias, global float *part, const st_cg_p *p, const int RM, const int RN,
                      const int DT, local float *As, local float *Bs)
{
    const int TM = CG_W * RM, TN = CG_W * RN, AS = TM + 4, BS = TN + 4;
    int lx = get_local_id(0), ly = get_local_id(1), tid = ly * CG_W + lx;
    int row0 = get_group_id(1) * TM, col0 = get_group_id(0) * TN;
    int zs = get_group_id(2), z = zs / p->splits, s = zs - z * p->splits;
    int n = z / p->groups, g = z - n * p->groups;
    int kbeg = s * p->kchunk, kend = min(p->K, kbeg + p->kchunk);
    int xbase = p->xo + n * p->xs0 + g * p->cg * p->xs1;
    int wbase = p->wo + g * p->M * p->ws0;

    /* A (weights): this work-item loads K row ka = tid % 16 of rows
     * tid / 16 + 16 i, so 16 neighbours read 16 neighbouring k */
    int ka = tid % CG_W, ra = tid / CG_W;
    int wrow[4];
    bool win[4];
    for (int i = 0; i < RM; i++) {
        int m = row0 + ra + CG_W * i;
        win[i] = m < p->M;
        wrow[i] = win[i] ? wbase + m * p->ws0 : 0;
    }
    /* B (the gathered input): K row kb = tid / 16 of pixels tid % 16 + 16 j,
     * their window origins fixed for the whole walk */
    int kb = tid / CG_W, cb = tid % CG_W;
    int iy0[4], ix0[4], pb[4];
    for (int j = 0; j < RN; j++) {
        int q = col0 + cb + CG_W * j;
        int oy = q / p->ow, ox = q - oy * p->ow;
        /* a pixel past P gets an origin no window can bring in bounds */
        bool ok = q < p->P;
        iy0[j] = ok ? oy * p->s1 - p->pb1 : -0x3fffffff;
        ix0[j] = ox * p->s2 - p->pb2;
        pb[j] = ok ? xbase + iy0[j] * p->xs3 + ix0[j] * p->xs4 : 0;
    }
    /* (c, kh, kw) of the K index each will load next */
    int gka = kbeg + ka, gkb = kbeg + kb;
    int ca = gka / p->kvol, aa = (gka - ca * p->kvol) / p->kw, ba = gka - ca * p->kvol - aa * p->kw;
    int cb_ = gkb / p->kvol, ab = (gkb - cb_ * p->kvol) / p->kw, bb = gkb - cb_ * p->kvol - ab * p->kw;

    float ra_[4], rb_[4];
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

#define CG_LOAD()                                                                                              \
    do {                                                                                                       \
        int woff = ca * p->ws1 + aa * p->ws3 + ba * p->ws4;                                                    \
        for (int i = 0; i < RM; i++)                                                                           \
            ra_[i] = gka < kend && win[i] ? cg_ld(w, wrow[i] + woff, DT, p->w_dt) : 0.0f;                   \
        int dy = ab * p->d1, dx = bb * p->d2, koff = cb_ * p->xs1 + dy * p->xs3 + dx * p->xs4;                 \
        for (int j = 0; j < RN; j++) {                                                                         \
            bool in = gkb < kend && (uint)(iy0[j] + dy) < (uint)p->ih && (uint)(ix0[j] + dx) < (uint)p->iw;   \
            rb_[j] = in ? cg_ld(x, pb[j] + koff, DT, p->x_dt) : 0.0f;                                             \
        }                                                                                                      \
        gka += CG_K;                                                                                           \
        gkb += CG_K;                                                                                           \
        cg_advance(p, &ca, &aa, &ba);                                                                          \
        cg_advance(p, &cb_, &ab, &bb);                                                                         \
    } while (0)

    CG_LOAD();
    for (int k0 = kbeg; k0 < kend; k0 += CG_K) {
        cg_put(As + ka * AS + ra * RM, RM, ra_);
        cg_put(Bs + kb * BS + cb * RN, RN, rb_);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + CG_K < kend) CG_LOAD();
        for (int kk = 0; kk < CG_K; kk++) {
            float av[4], bv[4];
            cg_get(As + kk * AS + ly * RM, RM, av);
            cg_get(Bs + kk * BS + lx * RN, RN, bv);
            for (int i = 0; i < RM; i++)
                for (int j = 0; j < RN; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#undef CG_LOAD

    for (int i = 0; i < RM; i++) {
        int m = row0 + ly + CG_W * i;
        if (m >= p->M) continue;
        for (int j = 0; j < RN; j++) {
            int q = col0 + lx + CG_W * j;
            if (q >= p->P) continue;
            if (p->splits > 1)
                part[((s * p->Z + z) * p->M + m) * p->P + q] = acc[i][j];
            else
                cg_store(y, bias, p, z, m, q, acc[i][j], DT);
        }
    }
}

#define CG_TILE(name, RM, RN, DT)                                                                              \
    kernel __attribute__((reqd_work_group_size(CG_W, CG_W, 1))) void name(gp y, gcp x, gcp w, gcp bias,       \
                                                                          global float *part, st_cg_p p)      \
    {                                                                                                          \
        local float4 As[CG_K * (CG_W * RM + 4) / 4]; /* float4: 16-byte aligned */                            \
        local float4 Bs[CG_K * (CG_W * RN + 4) / 4];                                                           \
        conv_tile(y, x, w, bias, part, &p, RM, RN, DT, (local float *)As, (local float *)Bs);                  \
    }

/* Every tile in four variants: x, w and y all f32, all f16, all bf16
 * (the dtype fixed at compile time), and the generic one for operands of
 * different dtypes.  k_conv_gemm.c picks by the views' dtypes. */
#define CG_TILES(name, RM, RN)                   \
    CG_TILE(name, RM, RN, 0)                     \
    CG_TILE(name##_f32, RM, RN, DT_F32)          \
    CG_TILE(name##_f16, RM, RN, DT_F16)          \
    CG_TILE(name##_bf16, RM, RN, DT_BF16)

CG_TILES(st_conv_t64x64, 4, 4)
CG_TILES(st_conv_t64x32, 4, 2)
CG_TILES(st_conv_t32x64, 2, 4)
CG_TILES(st_conv_t32x32, 2, 2)
CG_TILES(st_conv_t16x64, 1, 4)

/* Split K's second pass: one output per work-item over (q, m, z), the
 * splits added in order (the same sum on every run). */
kernel void st_conv_splitk(gp y, gcp bias, global const float *part, st_cg_p p)
{
    int q = get_global_id(0), m = get_global_id(1), z = get_global_id(2);
    if (q >= p.P || m >= p.M) return;
    int plane = p.Z * p.M * p.P, i = (z * p.M + m) * p.P + q;
    float v = 0.0f;
    for (int s = 0; s < p.splits; s++) v += part[s * plane + i];
    cg_store(y, bias, &p, z, m, q, v, 0);
}
