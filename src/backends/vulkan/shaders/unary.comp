// unary.comp — y = act(x) (codes.h), x broadcast into y's shape.  The _b8
// variant writes IsNaN's and IsInf's bool (one byte an element).  The
// _clip_rt variant (-DST_CLIP_RT) is Clip with a bound computed at run
// time: min and max are one-element operands bound at 3 and 4, read by
// every invocation (one cached load each, no host round trip to fold
// them); a bound that is absent or constant is a value in p instead.
//   p: [0] n, [1] code, [2..4] alpha, beta, gamma (float bits),
//      [5..22] y's st_td, [23..40] x's;
//      _clip_rt: [2], [3] the element offsets of min and max in their
//      bindings (-1: not bound, take [1] for min, [4] for max: float
//      bits, -inf / +inf where the bound is absent)
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Y { TY y[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };
#ifdef ST_CLIP_RT
layout(std430, binding = 3) readonly buffer Lo { T lo[]; };
layout(std430, binding = 4) readonly buffer Hi { T hi[]; };
#endif

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    float v = float(x[td_index(23, i)]);
#ifdef ST_CLIP_RT
    float a = p[2] < 0 ? pf(1) : float(lo[p[2]]);
    float b = p[3] < 0 ? pf(4) : float(hi[p[3]]);
    y[td_index(5, i)] = TY_OF(st_act(VK_U_CLIP, v, a, b, 0.0));
#else
    y[td_index(5, i)] = TY_OF(st_act(p[1], v, pf(2), pf(3), pf(4)));
#endif
}
