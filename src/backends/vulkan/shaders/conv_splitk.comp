// conv_splitk.comp — split K's second pass for conv.comp: one output per
// invocation, the splits' f32 partial sums ([s][oc][pos], the command's
// scratch) added in split order, so every run gives the same sum (no
// atomics), then the bias, the fused activation and the strided store
// (into a Concat's slot like conv.comp's own epilogue).
//   p: conv.comp's block (OC [4], OH [5], OW [6], y [28..32], bias
//      [33..35], act [36..38], splits [39], P [41])
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Pb { float part[]; };
layout(std430, binding = 3) readonly buffer Bb { T bias[]; };

void main()
{
    int i = gid1(), P = p[41], OC = p[4], plane = OC * P;
    if (i >= plane) return;
    int oc = i / P, pos = i - oc * P;
    float v = 0.0;
    for (int s = 0; s < p[39]; s++) v += part[s * plane + i];
    if (p[33] != 0) v += float(bias[p[34] + oc * p[35]]);
    int OW = p[6], OH = p[5];
    int ow = pos % OW, t = pos / OW, oh = t % OH, n = t / OH;
    y[p[28] + n * p[29] + oc * p[30] + oh * p[31] + ow * p[32]] = T(st_act(p[36], v, pf(37), pf(38), 0.0));
}
