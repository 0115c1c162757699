// conv.comp — Conv (1 or 2 spatial dims) as an implicit GEMM, tiled
// through shared memory: per group, output channels x output positions
// (batch folded into the positions) = weights [mg x cg*kh*kw] times the
// input's im2col columns, which are never stored: each 16 x 16 work-group
// loads a 16 x 16 tile of weights and one of input taps per step of K.
// Bias and the fused activation are applied before the one store.
//   p: [0] N, [1] C, [2] H, [3] W, [4] OC, [5] OH, [6] OW, [7] KH, [8] KW,
//      [9] sh, [10] sw, [11] ph, [12] pw, [13] dh, [14] dw, [15] groups,
//      [16] cg, [17] mg, x: [18] off, [19..22] strides n, c, h, w;
//      w: [23] off, [24..27] m, c, kh, kw; y: [28] off, [29..32];
//      bias: [33] present, [34] off, [35] stride; [36] act, [37] a, [38] b
#version 450
#include "common.glsl"
#define TS 16
layout(local_size_x = TS, local_size_y = TS) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
layout(std430, binding = 3) readonly buffer Wb { T w[]; };
layout(std430, binding = 4) readonly buffer Bb { T bias[]; };

shared float tw[TS][TS + 1];
shared float tx_[TS][TS + 1];

void main()
{
    int H = p[2], W = p[3], OH = p[5], OW = p[6], KH = p[7], KW = p[8];
    int cg = p[16], mg = p[17];
    int g = int(gl_WorkGroupID.z);
    int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
    int P = p[0] * OH * OW, KK = KH * KW, K = cg * KK;
    int pos = int(gl_WorkGroupID.x) * TS + lx;     // this thread's output position
    int m = int(gl_WorkGroupID.y) * TS + ly;       // and output channel (in the group)
    // the input position the column tile row ly loads from (position of column lx)
    int lpos = int(gl_WorkGroupID.x) * TS + lx;
    int n_ = 0, oh = 0, ow = 0;
    if (lpos < P) {
        ow = lpos % OW;
        int t = lpos / OW;
        oh = t % OH;
        n_ = t / OH;
    }
    int xb = p[18] + n_ * p[19] + g * cg * p[20];
    int wm = int(gl_WorkGroupID.y) * TS + ly;      // weight row this thread loads
    float acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += TS) {
        // weights: row wm, column k0 + lx
        int kw_ = k0 + lx;
        float wv = 0.0;
        if (wm < mg && kw_ < K) {
            int c = kw_ / KK, r = kw_ - c * KK, kh = r / KW, kx = r - kh * KW;
            wv = float(w[p[23] + (g * mg + wm) * p[24] + c * p[25] + kh * p[26] + kx * p[27]]);
        }
        tw[ly][lx] = wv;
        // input taps: row k0 + ly, column lpos
        int kx_ = k0 + ly;
        float xv = 0.0;
        if (lpos < P && kx_ < K) {
            int c = kx_ / KK, r = kx_ - c * KK, kh = r / KW, kx = r - kh * KW;
            int ih = oh * p[9] - p[11] + kh * p[13], iw = ow * p[10] - p[12] + kx * p[14];
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) xv = float(x[xb + c * p[20] + ih * p[21] + iw * p[22]]);
        }
        tx_[ly][lx] = xv;
        barrier();
        for (int k = 0; k < TS; k++) acc += tw[ly][k] * tx_[k][lx];
        barrier();
    }
    if (m >= mg || pos >= P) return;
    int ow2 = pos % OW, t2 = pos / OW, oh2 = t2 % OH, n2 = t2 / OH;
    int oc = g * mg + m;
    float v = acc;
    if (p[33] != 0) v += float(bias[p[34] + oc * p[35]]);
    y[p[28] + n2 * p[29] + oc * p[30] + oh2 * p[31] + ow2 * p[32]] = T(st_act(p[36], v, pf(37), pf(38), 0.0));
}
