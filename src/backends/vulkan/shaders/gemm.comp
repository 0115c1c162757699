// gemm.comp — C = act(alpha * A B + beta * bias) for a batch of matrices,
// register-blocked through shared memory (tile.glsl): a 16 x 16
// work-group computes a TM x 64 block of C, each invocation RM x 4 of it,
// stepping through K 16 at a time.  Every operand is strided (a
// transposed operand is a swap of its strides), batch dims broadcast by 0
// strides.  Built with TM 64 (gemm_*) and 16 (gemm_s_*, for M <= 16).
// Split K as conv.comp's: work-group z is (batch, split); with more than
// one split each writes its raw f32 sums of K range [s kchunk, (s + 1)
// kchunk) to the command's scratch (binding 5, [s][batch][m][n]) and
// gemm_splitk.comp adds them in split order, then alpha, the bias, the
// activation and the strided store.
//   p: [0] M, [1] N, [2] K, [3] batch dims (<= 4), [4..7] their sizes
//      A: [8] off, [9] s_m, [10] s_k, [11..14] batch strides
//      B: [15] off, [16] s_k, [17] s_n, [18..21]
//      C: [22] off, [23] s_m, [24] s_n, [25..28]
//      bias: [29] present, [30] off, [31] s_m, [32] s_n
//      [33] alpha, [34] beta, [35] act, [36] act a, [37] act b,
//      [38] splits, [39] K per split (a multiple of TK), [40] batches
#version 450
#include "common.glsl"
#include "tile.glsl"
layout(std430, binding = 1) writeonly buffer Cb { T c[]; };
layout(std430, binding = 2) readonly buffer Ab { T a[]; };
layout(std430, binding = 3) readonly buffer Bb { T b[]; };
layout(std430, binding = 4) readonly buffer Db { T bias[]; };
layout(std430, binding = 5) writeonly buffer Pb { float part[]; };

void main()
{
    int M = p[0], N = p[1], K = p[2], nbd = p[3];
    int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y), l = ty * WX + tx;
    int m0 = int(gl_WorkGroupID.y) * TM, n0 = int(gl_WorkGroupID.x) * TN;
    // the batch: gl_WorkGroupID.z in row-major order of the batch dims
    int splits = p[38], z = int(gl_WorkGroupID.z), batch = z / splits, s = z - batch * splits;
    int kbeg = s * p[39], kend = min(K, kbeg + p[39]);
    int bi = batch, ao = p[8], bo = p[15], co = p[22];
    for (int d = nbd - 1; d >= 0; d--) {
        int n = p[4 + d], q = bi / n, i = bi - q * n;
        ao += i * p[11 + d];
        bo += i * p[18 + d];
        co += i * p[25 + d];
        bi = q;
    }
    int sam = p[9], sak = p[10], sbk = p[16], sbn = p[17];
    int ak = l % TK, ar = l / TK, bn = l % TN, br = l / TN;
    bool bn_in = n0 + bn < N;
    int bcol = bo + (n0 + bn) * sbn;
    float acc[RM][RN];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) acc[i][j] = 0.0;
    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        int ka = k0 + ak;
        for (int i = 0; i < A_LOADS; i++) {
            int r = ar + i * A_ROW_STEP, gm = m0 + r;
            float v = 0.0;
            if (gm < M && ka < kend) v = float(a[ao + gm * sam + ka * sak]);
            SA_SET(ak, r, v);
        }
        for (int i = 0; i < B_LOADS; i++) {
            int r = br + i * B_ROW_STEP, gk = k0 + r;
            float v = 0.0;
            if (bn_in && gk < kend) v = float(b[bcol + gk * sbk]);
            SB_SET(r, bn, v);
        }
        barrier();
        TILE_FMA(acc, tx, ty)
        barrier();
    }
    float alpha = pf(33), beta = pf(34);
    for (int i = 0; i < RM; i++) {
        int row = m0 + OUT_ROW(ty, i);
        if (row >= M) break;
        for (int j = 0; j < RN; j++) {
            int col = n0 + OUT_COL(tx, j);
            if (col >= N) break;
            if (splits > 1) {
                part[((s * p[40] + batch) * M + row) * N + col] = acc[i][j];
                continue;
            }
            float v = alpha * acc[i][j];
            if (p[29] != 0) v += beta * float(bias[p[30] + row * p[31] + col * p[32]]);
            c[co + row * p[23] + col * p[24]] = T(st_act(p[35], v, pf(36), pf(37), 0.0));
        }
    }
}
