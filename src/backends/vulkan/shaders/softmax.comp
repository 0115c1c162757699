// softmax.comp — Softmax / LogSoftmax of each row (rows.glsl), one
// work-group of 64 per row: the max, then the sum of exp(x - max), each
// reduced in shared memory.  [54]: 0 softmax, 1 log-softmax.
#version 450
#include "common.glsl"
#include "rows.glsl"
#define WG 64
layout(local_size_x = WG) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
shared float red[WG];

void main()
{
    int o = row_id();
    if (o >= p[0]) return;
    int L = p[1], t = int(gl_LocalInvocationID.x);
    int xo = outer_off(o, 0), yo = outer_off(o, 1);
    float m = -1.0 / 0.0;
    for (int r = t; r < L; r += WG) m = max(m, float(x[xo + row_off(r, 0)]));
    red[t] = m;
    barrier();
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = max(red[t], red[t + s]);
        barrier();
    }
    m = red[0];
    barrier();
    float sum = 0.0;
    for (int r = t; r < L; r += WG) sum += exp(float(x[xo + row_off(r, 0)]) - m);
    red[t] = sum;
    barrier();
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
    }
    sum = red[0];
    bool lg = p[54] != 0;
    float ls = log(sum);
    for (int r = t; r < L; r += WG) {
        float v = float(x[xo + row_off(r, 0)]) - m;
        y[yo + row_off(r, 1)] = T(lg ? v - ls : exp(v) / sum);
    }
}
