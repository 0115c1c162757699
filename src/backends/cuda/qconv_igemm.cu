/*
 * qconv_igemm.cu — ConvInteger / QLinearConv on CUDA as an implicit GEMM on
 * the tensor cores (mma.sync m16n8k32, u8 x u8 -> s32, sm_80+), exact:
 * bit-identical with k_qint.cu's direct kernel, which it replaces where it
 * takes a conv (st_qconv_igemm_takes), and so with the CPU.  k_qint.cu
 * also runs MatMulInteger / QLinearMatMul through it, as 1x1 convs.
 *
 * Why: the direct kernel computes one output per thread and reloads x and
 * w for it over the whole K; a dynamically quantized 1024x1024 IS-Net
 * spent 96% of its CUDA time there (636 ms a run on an H200, against
 * 15.9 ms for its fp16 version through cuDNN).  cuDNN / cuBLASLt int8 do
 * not serve: they have no zero points and want NHWC with 4-aligned
 * channels.
 *
 * Per group: Y[m][n] = sum over k of (W[m][k] - w_zp[m]) * (X[k][n] - x_zp),
 * M = the group's output channels, N = images x output positions,
 * K = the group's input channels x kernel window; X is never materialized
 * (each tile of it is gathered from x, "im2col" on the fly).
 *
 * Zero points: both operands enter the MMA unsigned (a signed byte b maps
 * to b + 128 = b ^ 0x80, and so does its zero point), so
 *   sum (x - zx)(w - zw) = S - zw * Sx - zx * Sw + K * zx * zw
 * with S = sum x * w (the MMA), Sx = sum x per column n and Sw = sum w per
 * row m, which the threads that load the tiles add up as they load.  All
 * of it is int32 arithmetic modulo 2^32 (the MMA accumulates without
 * saturation), so it equals the direct kernel's wrapped sum exactly.  A
 * padded tap loads x's zero point (and counts in Sx), so it contributes
 * (zx - zx) * (w - zw) = 0 as the spec's padding does; a k past K loads 0
 * into both tiles and counts nowhere.
 *
 * Tiles: 64 output channels x 128 positions x 64 of K per block of 256
 * threads (8 warps of 32 x 32); shared-memory rows of 80 bytes, so that a
 * warp's fragment loads (8 rows x 4 words) fall into 32 distinct banks.
 * The next K tile is loaded into registers while the MMAs run on this one.
 */
#include <atomic>

#include "backends/cuda/qint.cuh"

#define IG_BM 64
#define IG_BN 128
#define IG_BK 64
#define IG_LD 80
#define IG_THREADS 256
#define IG_MAX_SPLIT 16

/* A position in K: input channel c of the group, window tap (k0, k1, k2). */
struct ig_kpos {
    int c, k0, k1, k2;
};

__device__ __forceinline__ ig_kpos ig_kdecode(int k, int k1n, int k2n, int win)
{
    ig_kpos q;
    q.c = k / win;
    int r = k - q.c * win;
    q.k2 = r % k2n;
    r /= k2n;
    q.k1 = r % k1n;
    q.k0 = r / k1n;
    return q;
}

__device__ __forceinline__ void ig_kstep(ig_kpos &q, int k0n, int k1n, int k2n)
{
    if (++q.k2 == k2n) {
        q.k2 = 0;
        if (++q.k1 == k1n) {
            q.k1 = 0;
            if (++q.k0 == k0n) {
                q.k0 = 0;
                q.c++;
            }
        }
    }
}

__device__ __forceinline__ void ig_mma(uint32_t *c, const uint32_t *a, const uint32_t *b)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    /* never launched below sm_80: st_qconv_igemm_takes checks the
     * architecture the kernel was built for */
    (void)c, (void)a, (void)b;
#endif
}

/* Block (x, y, z): positions x * 128.., channels y * 64.. of group
 * z / nsplit, K tiles (z % nsplit) * kts.. (all of K when nsplit is 1).
 * part NULL: the block stores its outputs; else it adds its share of the
 * sums into part[channel * N + position] for qconv_split_finish. */
__global__ void __launch_bounds__(IG_THREADS) qconv_igemm_kernel(qconv_args p, int K, long long N, int nsplit, int kts, uint32_t *part)
{
    __shared__ __align__(16) uint8_t as[IG_BM * IG_LD];
    __shared__ __align__(16) uint8_t bs[IG_BN * IG_LD];
    __shared__ uint32_t sx_part[2][IG_BN];
    __shared__ uint32_t sw_row[IG_BM];
    __shared__ long long ybase[IG_BN];

    const int tid = threadIdx.x, grp = blockIdx.z / nsplit, split = blockIdx.z % nsplit;
    const int mg = (int)p.mg, cg = (int)p.cg;
    const int m0 = blockIdx.y * IG_BM;
    const long long n0 = (long long)blockIdx.x * IG_BN;
    const int k0n = (int)p.k[0], k1n = (int)p.k[1], k2n = (int)p.k[2], win = k0n * k1n * k2n;
    const uint32_t flipx = p.x_dt == ST_I8 ? 0x80u : 0u, flipw = p.w_dt == ST_I8 ? 0x80u : 0u;
    const uint32_t zxu = (uint32_t)((p.xz ? (int)st_ldi(p.xz_dt, p.xz, 0) : 0) + (flipx ? 128 : 0));
    const uint8_t *x = (const uint8_t *)p.x, *w = (const uint8_t *)p.w;

    /* B loader: column bn_l of the tile (a position), K half bh */
    const int bn_l = tid % IG_BN, bh = tid / IG_BN;
    const long long n = n0 + bn_l;
    const bool nvalid = n < N;
    int st0, st1, st2;
    long long xbase;
    {
        long long r = nvalid ? n : 0;
        long long o2 = r % p.os[2];
        r /= p.os[2];
        long long o1 = r % p.os[1];
        r /= p.os[1];
        long long o0 = r % p.os[0], img = r / p.os[0];
        st0 = (int)(o0 * p.s[0] - p.pb[0]);
        st1 = (int)(o1 * p.s[1] - p.pb[1]);
        st2 = (int)(o2 * p.s[2] - p.pb[2]);
        xbase = img * p.xs[0] + (long long)grp * cg * p.xs[1];
        if (bh == 0) ybase[bn_l] = img * p.ys[0] + o0 * p.ys[2] + o1 * p.ys[3] + o2 * p.ys[4];
    }
    const int is0 = (int)p.is[0], is1 = (int)p.is[1], is2 = (int)p.is[2];
    const int d0 = (int)p.d[0], d1 = (int)p.d[1], d2 = (int)p.d[2];
    uint32_t sx = 0;

    /* A loader: row am of the tile (an output channel), K quarter aq */
    const int am = tid / 4, aq = tid % 4;
    const bool mvalid = m0 + am < mg;
    const long long wbase = (long long)(grp * mg + m0 + am) * p.ws[0];
    uint32_t sw = 0;

    uint32_t areg[4], breg[8];
    auto load = [&](int kt) {
        int kb = kt * IG_BK + bh * 32;
        ig_kpos q = ig_kdecode(kb, k1n, k2n, win);
#pragma unroll
        for (int j = 0; j < 8; j++) breg[j] = 0;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            if (nvalid && kb + j < K) {
                int i0 = st0 + q.k0 * d0, i1 = st1 + q.k1 * d1, i2 = st2 + q.k2 * d2;
                uint32_t v = zxu;
                if ((unsigned)i0 < (unsigned)is0 && (unsigned)i1 < (unsigned)is1 && (unsigned)i2 < (unsigned)is2)
                    v = x[xbase + q.c * p.xs[1] + i0 * p.xs[2] + i1 * p.xs[3] + i2 * p.xs[4]] ^ flipx;
                sx += v;
                breg[j / 4] |= v << (8 * (j % 4));
                ig_kstep(q, k0n, k1n, k2n);
            }
        }
        kb = kt * IG_BK + aq * 16;
        q = ig_kdecode(kb, k1n, k2n, win);
#pragma unroll
        for (int j = 0; j < 4; j++) areg[j] = 0;
#pragma unroll
        for (int j = 0; j < 16; j++) {
            if (mvalid && kb + j < K) {
                uint32_t v = w[wbase + q.c * p.ws[1] + q.k0 * p.ws[2] + q.k1 * p.ws[3] + q.k2 * p.ws[4]] ^ flipw;
                sw += v;
                areg[j / 4] |= v << (8 * (j % 4));
                ig_kstep(q, k0n, k1n, k2n);
            }
        }
    };

    const int warp = tid / 32, lane = tid % 32, wm = warp & 1, wn = warp >> 1, gq = lane >> 2, tq = lane & 3;
    uint32_t acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0;

    const int kt_lo = split * kts, kt_hi = min((K + IG_BK - 1) / IG_BK, kt_lo + kts);
    /* this block's count of K, for the K * zx * zw term */
    const int kcount = max(0, min(K, kt_hi * IG_BK) - kt_lo * IG_BK);
    if (kt_lo < kt_hi) load(kt_lo);
    for (int kt = kt_lo; kt < kt_hi; kt++) {
        *(uint4 *)&bs[bn_l * IG_LD + bh * 32] = make_uint4(breg[0], breg[1], breg[2], breg[3]);
        *(uint4 *)&bs[bn_l * IG_LD + bh * 32 + 16] = make_uint4(breg[4], breg[5], breg[6], breg[7]);
        *(uint4 *)&as[am * IG_LD + aq * 16] = make_uint4(areg[0], areg[1], areg[2], areg[3]);
        __syncthreads();
        if (kt + 1 < kt_hi) load(kt + 1);
#pragma unroll
        for (int ks = 0; ks < IG_BK / 32; ks++) {
            uint32_t af[2][4], bf[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const uint8_t *a = &as[(wm * 32 + mi * 16 + gq) * IG_LD + ks * 32 + tq * 4];
                af[mi][0] = *(const uint32_t *)a;
                af[mi][1] = *(const uint32_t *)(a + 8 * IG_LD);
                af[mi][2] = *(const uint32_t *)(a + 16);
                af[mi][3] = *(const uint32_t *)(a + 8 * IG_LD + 16);
            }
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                const uint8_t *b = &bs[(wn * 32 + ni * 8 + gq) * IG_LD + ks * 32 + tq * 4];
                bf[ni][0] = *(const uint32_t *)b;
                bf[ni][1] = *(const uint32_t *)(b + 16);
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) ig_mma(acc[mi][ni], af[mi], bf[ni]);
        }
        __syncthreads();
    }

    /* the sums' corrections: Sx per column from the two K halves, Sw per
     * row from the 4 adjacent lanes that loaded it */
    sx_part[bh][bn_l] = sx;
    sw += __shfl_xor_sync(0xffffffffu, sw, 1);
    sw += __shfl_xor_sync(0xffffffffu, sw, 2);
    if (aq == 0) sw_row[am] = sw;
    __syncthreads();

    const uint32_t flipzw = flipw ? 128u : 0u;
#pragma unroll
    for (int mi = 0; mi < 2; mi++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int ml = wm * 32 + mi * 16 + gq + h * 8;
            if (m0 + ml >= mg) continue;
            const long long m = (long long)grp * mg + m0 + ml;
            const uint32_t zwu = (uint32_t)(p.wz ? (int)st_ldi(p.wz_dt, p.wz, m * p.wz_step) : 0) + flipzw;
            const uint32_t corr = (uint32_t)kcount * zxu * zwu - zxu * sw_row[ml];
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int nl = wn * 32 + ni * 8 + tq * 2 + e;
                    if (n0 + nl >= N) continue;
                    uint32_t s = acc[mi][ni][h * 2 + e] - zwu * (sx_part[0][nl] + sx_part[1][nl]) + corr;
                    if (part)
                        atomicAdd(&part[m * N + n0 + nl], s);
                    else
                        qconv_store(p, s, m, ybase[nl] + m * p.ys[1]);
                }
            }
        }
    }
}

/* Split K's outputs: the sums are complete in part, channel-major. */
__global__ void qconv_split_finish(qconv_args p, long long N, const uint32_t *part)
{
    long long total = p.groups * p.mg * N;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        long long m = i / N, r = i % N;
        long long o2 = r % p.os[2];
        r /= p.os[2];
        long long o1 = r % p.os[1];
        r /= p.os[1];
        long long o0 = r % p.os[0], img = r / p.os[0];
        qconv_store(p, part[i], m, img * p.ys[0] + m * p.ys[1] + o0 * p.ys[2] + o1 * p.ys[3] + o2 * p.ys[4]);
    }
}

/* The architecture this kernel's code was built for on this process's
 * device (0: none); the MMA needs 80 or more.  Asked once (the first,
 * uncaptured run asks it; streams on several threads may race to store
 * the same value). */
static int igemm_arch(void)
{
    static std::atomic<int> arch{-1};
    int a = arch.load(std::memory_order_relaxed);
    if (a < 0) {
        cudaFuncAttributes fa;
        a = cudaFuncGetAttributes(&fa, qconv_igemm_kernel) == cudaSuccess ? fa.binaryVersion : 0;
        arch.store(a, std::memory_order_relaxed);
    }
    return a;
}

/* Takes a conv whose GEMM has at least 16 output channels per group and
 * K of at least 16, or any number of channels and K of at least 256 (a
 * 1-channel head over 512 channels: its direct kernel had 256 threads
 * each summing 4608 products); below that, as in a depthwise conv, the
 * 64 x 128 tiles are mostly empty and the direct kernel is the better
 * one.  Coordinates must fit in int and the grid in CUDA's limits. */
bool st_qconv_igemm_takes(const qconv_args &p)
{
    int64_t k = p.cg * p.k[0] * p.k[1] * p.k[2];
    int64_t n = p.nimg * p.os[0] * p.os[1] * p.os[2];
    if (!((p.mg >= 16 && k >= 16) || k >= 256) || k > INT32_MAX / 2) return false;
    if ((p.mg + IG_BM - 1) / IG_BM > 65535 || p.groups * IG_MAX_SPLIT > 65535 || (n + IG_BN - 1) / IG_BN > INT32_MAX) return false;
    for (int i = 0; i < 3; i++)
        if (p.is[i] > INT32_MAX / 4 || p.os[i] * p.s[i] > INT32_MAX / 4 || p.k[i] * p.d[i] > INT32_MAX / 4 || p.pb[i] > INT32_MAX / 4)
            return false;
    return igemm_arch() >= 80;
}

/* Split K: where the output tiles are fewer than two waves of blocks
 * (the deep, 32 x 32 layers: 512 channels x 1024 positions are 64
 * blocks for 132 SMs, each looping over K = 4608), the K tiles are
 * shared out over up to IG_MAX_SPLIT blocks, at least 4 tiles each,
 * whose sums add up (atomically: integer addition wraps the same in any
 * order, so the result stays exact) in the stream's workspace, then
 * qconv_split_finish stores them through the same epilogue. */
void st_qconv_igemm(const qconv_args &p, const st_cuda_ctx *ctx)
{
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    int k = (int)(p.cg * p.k[0] * p.k[1] * p.k[2]), kt_n = (k + IG_BK - 1) / IG_BK;
    long long n = p.nimg * p.os[0] * p.os[1] * p.os[2];
    long long tiles = ((n + IG_BN - 1) / IG_BN) * ((p.mg + IG_BM - 1) / IG_BM) * p.groups;
    long long want = 2LL * (ctx->sm_count > 0 ? ctx->sm_count : 1);
    int nsplit = 1;
    size_t bytes = (size_t)(p.groups * p.mg * n) * sizeof(uint32_t);
    if (tiles < want && kt_n >= 8 && bytes <= ctx->workspace_bytes) {
        nsplit = (int)((want + tiles - 1) / tiles);
        if (nsplit > kt_n / 4) nsplit = kt_n / 4;
        if (nsplit > IG_MAX_SPLIT) nsplit = IG_MAX_SPLIT;
    }
    int kts = (kt_n + nsplit - 1) / nsplit;
    nsplit = (kt_n + kts - 1) / kts;
    uint32_t *part = NULL;
    if (nsplit > 1) {
        part = (uint32_t *)ctx->workspace;
        cudaMemsetAsync(part, 0, bytes, stream);
    }
    dim3 grid((unsigned)((n + IG_BN - 1) / IG_BN), (unsigned)((p.mg + IG_BM - 1) / IG_BM), (unsigned)(p.groups * nsplit));
    qconv_igemm_kernel<<<grid, IG_THREADS, 0, stream>>>(p, k, n, nsplit, kts, part);
    if (part) qconv_split_finish<<<st_blocks(p.groups * p.mg * n, 256), 256, 0, stream>>>(p, n, part);
}
