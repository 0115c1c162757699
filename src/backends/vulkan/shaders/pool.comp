// pool.comp — MaxPool / AveragePool / their global forms over 1 or 2
// spatial dims, one output element per work-item.
//   p: [0] n, [1] C, [2] H, [3] W, [4] OH, [5] OW, [6] KH, [7] KW, [8] sh,
//      [9] sw, [10] ph, [11] pw, [12] dh, [13] dw, [14] is_max,
//      [15] count_include_pad, [16] pe_h, [17] pe_w,
//      x: [18] off, [19..22] strides n, c, h, w; y: [23] off, [24..27]
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    int C = p[1], H = p[2], W = p[3], OH = p[4], OW = p[5];
    int ow = i % OW, t = i / OW, oh = t % OH;
    t /= OH;
    int c = t % C, n = t / C;
    int xb = p[18] + n * p[19] + c * p[20];
    bool is_max = p[14] != 0;
    float acc = is_max ? -1.0 / 0.0 : 0.0;
    int count = 0, padded = 0;
    for (int kh = 0; kh < p[6]; kh++) {
        int ih = oh * p[8] - p[10] + kh * p[12];
        bool inpad_h = ih >= -p[10] && ih < H + p[16];
        for (int kw = 0; kw < p[7]; kw++) {
            int iw = ow * p[9] - p[11] + kw * p[13];
            if (inpad_h && iw >= -p[11] && iw < W + p[17]) padded++;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            float v = float(x[xb + ih * p[21] + iw * p[22]]);
            if (is_max) acc = max(acc, v);
            else acc += v;
            count++;
        }
    }
    if (!is_max) acc /= float(p[15] != 0 ? padded : count);
    y[p[23] + n * p[24] + c * p[25] + oh * p[26] + ow * p[27]] = T(acc);
}
