// binary.comp — y = a op b (codes.h VK_B_), a and b broadcast into y's
// shape by their descriptors' strides.  The _b8 variant writes the
// comparisons' bool (one byte an element).
//   p: [0] n, [1] code, [2] Mean's last step: the divisor (float bits),
//      [3..20] y's st_td, [21..38] a's, [39..56] b's
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Y { TY y[]; };
layout(std430, binding = 2) readonly buffer A { T a[]; };
layout(std430, binding = 3) readonly buffer B { T b[]; };

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    float u = float(a[td_index(21, i)]), v = float(b[td_index(39, i)]);
    float r;
    switch (p[1]) {
    case VK_B_ADD: r = u + v; break;
    case VK_B_SUB: r = u - v; break;
    case VK_B_MUL: r = u * v; break;
    case VK_B_DIV: r = st_div(u, v); break;
    case VK_B_MAX: r = max(u, v); break;
    case VK_B_MIN: r = min(u, v); break;
    case VK_B_POW: {
        // GLSL leaves pow of a negative base undefined: an integer
        // exponent gives the sign of the base's odd powers
        float m = pow(abs(u), v);
        r = u >= 0.0 ? m : (floor(v) == v ? (mod(v, 2.0) == 1.0 ? -m : m) : 0.0 / 0.0);
        if (v == 0.0) r = 1.0;
        break;
    }
    case VK_B_PRELU: r = u >= 0.0 ? u : u * v; break;
    // Mod of floats: ONNX asks fmod=1 (C's fmod, the dividend's sign)
    case VK_B_MOD: r = st_fmod(u, v); break;
    // Mean: the sum so far plus the last input, over the input count
    case VK_B_MEAN_LAST: r = st_div(u + v, pf(2)); break;
    // ordered compares: false where either is NaN, as in C
    case VK_B_EQUAL: r = u == v ? 1.0 : 0.0; break;
    case VK_B_LESS: r = u < v ? 1.0 : 0.0; break;
    case VK_B_GREATER: r = u > v ? 1.0 : 0.0; break;
    case VK_B_LESS_EQUAL: r = u <= v ? 1.0 : 0.0; break;
    case VK_B_GREATER_EQUAL: r = u >= v ? 1.0 : 0.0; break;
    default: r = 0.0; break;
    }
    y[td_index(3, i)] = TY_OF(r);
}
