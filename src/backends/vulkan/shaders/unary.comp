// unary.comp — y = act(x) (codes.h), x broadcast into y's shape.  The _b8
// variant writes IsNaN's and IsInf's bool (one byte an element).
//   p: [0] n, [1] code, [2..4] alpha, beta, gamma (float bits),
//      [5..22] y's st_td, [23..40] x's
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Y { TY y[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    float v = float(x[td_index(23, i)]);
    y[td_index(5, i)] = TY_OF(st_act(p[1], v, pf(2), pf(3), pf(4)));
}
