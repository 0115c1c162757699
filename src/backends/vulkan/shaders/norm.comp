// norm.comp — LayerNormalization of each row (rows.glsl): mean and
// variance in f32 (two passes over the row), then (x - mean) * rstd *
// scale + bias, scale and bias contiguous over the row (one work-group
// of 64 per row).
//   [54] epsilon, [55] scale offset, [56] bias present, [57] bias offset
#version 450
#include "common.glsl"
#include "rows.glsl"
#define WG 64
layout(local_size_x = WG) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
layout(std430, binding = 3) readonly buffer Sb { T sc[]; };
layout(std430, binding = 4) readonly buffer Bb { T bi[]; };
shared float red[WG];

float reduce_sum(float v, int t)
{
    red[t] = v;
    barrier();
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}

void main()
{
    int o = row_id();
    if (o >= p[0]) return;
    int L = p[1], t = int(gl_LocalInvocationID.x);
    int xo = outer_off(o, 0), yo = outer_off(o, 1);
    float s = 0.0;
    for (int r = t; r < L; r += WG) s += float(x[xo + row_off(r, 0)]);
    float mean = reduce_sum(s, t) / float(L);
    float q = 0.0;
    for (int r = t; r < L; r += WG) {
        float d = float(x[xo + row_off(r, 0)]) - mean;
        q += d * d;
    }
    float rstd = 1.0 / sqrt(reduce_sum(q, t) / float(L) + pf(54));
    for (int r = t; r < L; r += WG) {
        float v = (float(x[xo + row_off(r, 0)]) - mean) * rstd * float(sc[p[55] + r]);
        if (p[56] != 0) v += float(bi[p[57] + r]);
        y[yo + row_off(r, 1)] = T(v);
    }
}
