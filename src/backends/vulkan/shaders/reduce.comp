// reduce.comp — ReduceSum / Mean / Max / Min / SumSquare / L1 / L2 of
// each row (rows.glsl) into one element, one work-group of 64 per row.
//   [54] kind (k_rows.c's VK_R_), y's row strides unused
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
    int L = p[1], t = int(gl_LocalInvocationID.x), kind = p[54];
    bool mx = kind == 2, mn = kind == 3;
    float acc = mx ? -1.0 / 0.0 : mn ? 1.0 / 0.0 : 0.0;
    int xo = outer_off(o, 0);
    for (int r = t; r < L; r += WG) {
        float v = float(x[xo + row_off(r, 0)]);
        if (mx) acc = max(acc, v);
        else if (mn) acc = min(acc, v);
        else if (kind == 4 || kind == 6) acc += v * v;
        else if (kind == 5) acc += abs(v);
        else acc += v;
    }
    red[t] = acc;
    barrier();
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = mx ? max(red[t], red[t + s]) : mn ? min(red[t], red[t + s]) : red[t] + red[t + s];
        barrier();
    }
    if (t != 0) return;
    float v = red[0];
    if (kind == 1) v /= float(L);
    if (kind == 6) v = sqrt(v);
    y[outer_off(o, 1)] = T(v);
}
