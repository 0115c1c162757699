// conv.comp — Conv (1 or 2 spatial dims) as an implicit GEMM,
// register-blocked through shared memory (tile.glsl): per group, output
// channels x output positions (batch folded into the positions) =
// weights [mg x cg*kh*kw] times the input's im2col columns, which are
// never stored: each step of K stages a TM x 16 slice of weights and a
// 16 x TN slice of input taps (zero past the pads).  Built with TM x TN
// of 64 x 64 (conv_*), 16 x 64 (conv_s_*) and 64 x 32, 32 x 64, 32 x 32
// (conv_tRxC_*); vk_tiles.c picks one per problem.  Depthwise-like convs
// take conv_direct.comp instead.
//
// Split K: work-group z is (group, split); split s walks only K range
// [s kchunk, (s + 1) kchunk).  With one split the tile applies the bias
// and the fused activation before its one store; with more it writes its
// raw f32 sums to the command's scratch (binding 5, [s][oc][pos]) and
// conv_splitk.comp adds the splits in a fixed order (the same result on
// every run: no atomics), then the bias, the activation and the strided
// store.  Accumulation is f32 for f16 too.
//
// The next step's global loads are issued into registers before the
// current step's products, so their latency hides behind the arithmetic.
// The (channel, kernel row, kernel column) of each K index an invocation
// loads is divided out once and then advanced by counters, TK a step:
// integer division costs a GPU some twenty instructions, and a 32x32
// tile does only 64 multiply-adds a step per invocation.
//   p: [0] N, [1] C, [2] H, [3] W, [4] OC, [5] OH, [6] OW, [7] KH, [8] KW,
//      [9] sh, [10] sw, [11] ph, [12] pw, [13] dh, [14] dw, [15] groups,
//      [16] cg, [17] mg, x: [18] off, [19..22] strides n, c, h, w;
//      w: [23] off, [24..27] m, c, kh, kw; y: [28] off, [29..32];
//      bias: [33] present, [34] off, [35] stride; [36] act, [37] a, [38] b;
//      [39] splits, [40] K per split (a multiple of TK), [41] P = N OH OW
#version 450
#include "common.glsl"
#include "tile.glsl"
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
layout(std430, binding = 3) readonly buffer Wb { T w[]; };
layout(std430, binding = 4) readonly buffer Bb { T bias[]; };
layout(std430, binding = 5) writeonly buffer Pb { float part[]; };

// what this invocation loads, worked out once (main)
int H, W, KH, KW, KK, kend, mg, m0, ak, ar, ih0, iw0, xb, wb;
bool pos_in;
// a K step as (channels, kernel rows, kernel columns): TK = cstep KK +
// astep KW + bstep, astep < KH, bstep < KW
int cstep, astep, bstep;
// the K index of the A column and of each B row loaded next, as
// (c, kh, kw) beside it
int ka, kac, kah, kaw;
int kb[B_LOADS], kbc[B_LOADS], kbh[B_LOADS], kbw[B_LOADS];

#include "conv_k.glsl"

// Column ka of the weights (one (c, kh, kw) for all this invocation's
// rows) and rows kb[i] of the input taps of its position, into
// registers, zero past M, K's range and the pads; then every index on
// by a step.
void load(out float ra[A_LOADS], out float rb[B_LOADS])
{
    int wo = wb + kac * p[25] + kah * p[26] + kaw * p[27];
    for (int i = 0; i < A_LOADS; i++) {
        int row = ar + i * A_ROW_STEP;
        ra[i] = 0.0;
        if (m0 + row < mg && ka < kend) ra[i] = float(w[wo + row * p[24]]);
    }
    ka += TK;
    advance(kac, kah, kaw, cstep, astep, bstep);
    for (int i = 0; i < B_LOADS; i++) {
        rb[i] = 0.0;
        if (pos_in && kb[i] < kend) {
            int ih = ih0 + kbh[i] * p[13], iw = iw0 + kbw[i] * p[14];
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) rb[i] = float(x[xb + kbc[i] * p[20] + ih * p[21] + iw * p[22]]);
        }
        kb[i] += TK;
        advance(kbc[i], kbh[i], kbw[i], cstep, astep, bstep);
    }
}

void main()
{
    H = p[2];
    W = p[3];
    KW = p[8];
    int OH = p[5], OW = p[6];
    int cg = p[16];
    mg = p[17];
    int splits = p[39], z = int(gl_WorkGroupID.z), g = z / splits, s = z - g * splits;
    int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y), l = ty * WX + tx;
    int P = p[41];
    KH = p[7];
    KK = KH * KW;
    split_k(TK, cstep, astep, bstep);
    int K = cg * KK, kbeg = s * p[40];
    kend = min(K, kbeg + p[40]);
    m0 = int(gl_WorkGroupID.y) * TM;
    int n0 = int(gl_WorkGroupID.x) * TN;
    ak = l % TK;
    ar = l / TK;
    int bn = l % TN, br = l / TN;
    // the output position whose input taps this invocation loads: the
    // corner of its window and its image's first channel of the group
    int lpos = n0 + bn;
    pos_in = lpos < P;
    ih0 = 0;
    iw0 = 0;
    xb = 0;
    if (pos_in) {
        int ow = lpos % OW, t = lpos / OW, oh = t % OH, n = t / OH;
        ih0 = oh * p[9] - p[11];
        iw0 = ow * p[10] - p[12];
        xb = p[18] + n * p[19] + g * cg * p[20];
    }
    wb = p[23] + (g * mg + m0) * p[24];
    float acc[RM][RN];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++) acc[i][j] = 0.0;
    ka = kbeg + ak;
    split_k(ka, kac, kah, kaw);
    for (int i = 0; i < B_LOADS; i++) {
        kb[i] = kbeg + br + i * B_ROW_STEP;
        split_k(kb[i], kbc[i], kbh[i], kbw[i]);
    }
    float ra[A_LOADS], rb[B_LOADS];
    load(ra, rb);
    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        for (int i = 0; i < A_LOADS; i++) SA_SET(ak, ar + i * A_ROW_STEP, ra[i]);
        for (int i = 0; i < B_LOADS; i++) SB_SET(br + i * B_ROW_STEP, bn, rb[i]);
        barrier();
        if (k0 + TK < kend) load(ra, rb);
        TILE_FMA(acc, tx, ty)
        barrier();
    }
    for (int j = 0; j < RN; j++) {
        int pos = n0 + OUT_COL(tx, j);
        if (pos >= P) break;
        int ow = pos % OW, t = pos / OW, oh = t % OH, n = t / OH;
        int yo = p[28] + n * p[29] + oh * p[31] + ow * p[32];
        for (int i = 0; i < RM; i++) {
            int m = m0 + OUT_ROW(ty, i);
            if (m >= mg) break;
            int oc = g * mg + m;
            float v = acc[i][j];
            if (splits > 1) {
                part[(s * p[4] + oc) * P + pos] = v;
                continue;
            }
            if (p[33] != 0) v += float(bias[p[34] + oc * p[35]]);
            y[yo + oc * p[30]] = T(st_act(p[36], v, pf(37), pf(38), 0.0));
        }
    }
}
