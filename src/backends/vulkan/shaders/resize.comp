// resize.comp — Resize of the last two axes from the taps the shape rule
// computed (ops/resize.h: per output coordinate, input coordinates and
// weights, whatever the mode), carried in the parameter block; the
// leading axes are planes left as they are.
//   p: [0] n, [1] OH, [2] OW, [3] taps per row coordinate, [4] per column
//      coordinate, [5] where the row taps start in p, [6] the column taps,
//      x: [7] off, [8] plane stride, [9] h, [10] w; y: [11] off, [12..14];
//      a tap is (input coordinate, weight bits)
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    int OH = p[1], OW = p[2], nh = p[3], nw = p[4];
    int ow = i % OW, t = i / OW, oh = t % OH, pl = t / OH;
    int xb = p[7] + pl * p[8];
    float acc = 0.0;
    for (int a = 0; a < nh; a++) {
        int th = p[5] + 2 * (oh * nh + a);
        float wr = 0.0;
        int ih = p[th];
        for (int b = 0; b < nw; b++) {
            int tw = p[6] + 2 * (ow * nw + b);
            wr += pf(tw + 1) * float(x[xb + ih * p[9] + p[tw] * p[10]]);
        }
        acc += pf(th + 1) * wr;
    }
    y[p[11] + pl * p[12] + oh * p[13] + ow * p[14]] = T(acc);
}
