// conv.comp — Conv (1 or 2 spatial dims) as an implicit GEMM,
// register-blocked through shared memory (tile.glsl): per group, output
// channels x output positions (batch folded into the positions) =
// weights [mg x cg*kh*kw] times the input's im2col columns, which are
// never stored: each step of K stages a TM x 16 slice of weights and a
// 16 x 64 slice of input taps (zero past the pads).  Bias and the fused
// activation are applied before the one store.  Built with TM 64
// (conv_*) and 16 (conv_s_*, for 16 or fewer channels per group);
// depthwise-like convs take conv_direct.comp instead.
//   p: [0] N, [1] C, [2] H, [3] W, [4] OC, [5] OH, [6] OW, [7] KH, [8] KW,
//      [9] sh, [10] sw, [11] ph, [12] pw, [13] dh, [14] dw, [15] groups,
//      [16] cg, [17] mg, x: [18] off, [19..22] strides n, c, h, w;
//      w: [23] off, [24..27] m, c, kh, kw; y: [28] off, [29..32];
//      bias: [33] present, [34] off, [35] stride; [36] act, [37] a, [38] b
#version 450
#include "common.glsl"
#include "tile.glsl"
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
layout(std430, binding = 3) readonly buffer Wb { T w[]; };
layout(std430, binding = 4) readonly buffer Bb { T bias[]; };

void main()
{
    int H = p[2], W = p[3], OH = p[5], OW = p[6], KH = p[7], KW = p[8];
    int cg = p[16], mg = p[17];
    int g = int(gl_WorkGroupID.z);
    int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y), l = ty * WX + tx;
    int P = p[0] * OH * OW, KK = KH * KW, K = cg * KK;
    int m0 = int(gl_WorkGroupID.y) * TM, n0 = int(gl_WorkGroupID.x) * TN;
    int ak = l % TK, ar = l / TK, bn = l % TN, br = l / TN;
    // the output position whose input taps this invocation loads: the
    // corner of its window and its image's first channel of the group
    int lpos = n0 + bn;
    bool pos_in = lpos < P;
    int ih0 = 0, iw0 = 0, xb = 0;
    if (pos_in) {
        int ow = lpos % OW, t = lpos / OW, oh = t % OH, n = t / OH;
        ih0 = oh * p[9] - p[11];
        iw0 = ow * p[10] - p[12];
        xb = p[18] + n * p[19] + g * cg * p[20];
    }
    int wb = p[23] + (g * mg + m0) * p[24];
    float acc[RM][RN];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) acc[i][j] = 0.0;
    for (int k0 = 0; k0 < K; k0 += TK) {
        // weights: column k0 + ak (one (c, kh, kw) for all this invocation's rows)
        int kw_ = k0 + ak;
        int c = kw_ / KK, r = kw_ - c * KK, kh = r / KW, kx = r - kh * KW;
        int wo = wb + c * p[25] + kh * p[26] + kx * p[27];
        for (int i = 0; i < A_LOADS; i++) {
            int row = ar + i * A_ROW_STEP;
            float v = 0.0;
            if (m0 + row < mg && kw_ < K) v = float(w[wo + row * p[24]]);
            sa[ak][row] = v;
        }
        // input taps: rows k0 + br + i * B_ROW_STEP of column lpos
        for (int i = 0; i < B_LOADS; i++) {
            int row = br + i * B_ROW_STEP, kx_ = k0 + row;
            float xv = 0.0;
            if (pos_in && kx_ < K) {
                int c2 = kx_ / KK, r2 = kx_ - c2 * KK, kh2 = r2 / KW, kx2 = r2 - kh2 * KW;
                int ih = ih0 + kh2 * p[13], iw = iw0 + kx2 * p[14];
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) xv = float(x[xb + c2 * p[20] + ih * p[21] + iw * p[22]]);
            }
            sb[row][bn] = xv;
        }
        barrier();
        TILE_FMA(acc, tx, ty)
        barrier();
    }
    for (int j = 0; j < RN; j++) {
        int pos = n0 + tx + j * WX;
        if (pos >= P) break;
        int ow = pos % OW, t = pos / OW, oh = t % OH, n = t / OH;
        int yo = p[28] + n * p[29] + oh * p[31] + ow * p[32];
        for (int i = 0; i < RM; i++) {
            int m = m0 + ty + i * WY;
            if (m >= mg) break;
            int oc = g * mg + m;
            float v = acc[i][j];
            if (p[33] != 0) v += float(bias[p[34] + oc * p[35]]);
            y[yo + oc * p[30]] = T(st_act(p[36], v, pf(37), pf(38), 0.0));
        }
    }
}
