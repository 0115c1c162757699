// conv_direct.comp — Conv (1 or 2 spatial dims) one output element per
// work-item, its window read straight from global memory.  For convs
// whose per-group GEMM is too thin to tile: depthwise ones have one
// output channel and a K of kh*kw per group, so conv.comp's 16-row tile
// would compute 15 rows of zeros and stage a barely used K slice for
// every few multiply-adds.  Same parameter block as conv.comp, plus
//   [39] the number of outputs (N * OC * OH * OW).
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
layout(std430, binding = 3) readonly buffer Wb { T w[]; };
layout(std430, binding = 4) readonly buffer Bb { T bias[]; };

void main()
{
    int i = gid1();
    if (i >= p[39]) return;
    int H = p[2], W = p[3], OC = p[4], OH = p[5], OW = p[6], KH = p[7], KW = p[8];
    int cg = p[16], mg = p[17];
    // ow fastest: neighbouring work-items read neighbouring input columns
    int ow = i % OW, t = i / OW, oh = t % OH;
    t /= OH;
    int oc = t % OC, n = t / OC, g = oc / mg;
    int ih0 = oh * p[9] - p[11], iw0 = ow * p[10] - p[12];
    int xb = p[18] + n * p[19] + g * cg * p[20], wb = p[23] + oc * p[24];
    float acc = 0.0;
    for (int c = 0; c < cg; c++)
        for (int kh = 0; kh < KH; kh++) {
            int ih = ih0 + kh * p[13];
            if (ih < 0 || ih >= H) continue;
            int xr = xb + c * p[20] + ih * p[21], wr = wb + c * p[25] + kh * p[26];
            for (int kx = 0; kx < KW; kx++) {
                int iw = iw0 + kx * p[14];
                if (iw >= 0 && iw < W) acc += float(w[wr + kx * p[27]]) * float(x[xr + iw * p[22]]);
            }
        }
    if (p[33] != 0) acc += float(bias[p[34] + oc * p[35]]);
    y[p[28] + n * p[29] + oc * p[30] + oh * p[31] + ow * p[32]] = T(st_act(p[36], acc, pf(37), pf(38), 0.0));
}
