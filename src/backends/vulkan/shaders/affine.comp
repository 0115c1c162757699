// affine.comp — y = x * a[c] + b[c] per channel c (dim 1):
// BatchNormalization at inference, its four constant parameters folded
// into a and b at plan time (k_rows.c), carried in the parameter block.
//   p: [0] n, [1] C, [2] inner (elements per channel per image),
//      [3..20] y's st_td, [21..38] x's, [39..39+C) a, then C of b
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    int C = p[1], c = (i / p[2]) % C;
    y[td_index(3, i)] = T(float(x[td_index(21, i)]) * pf(39 + c) + pf(39 + C + c));
}
