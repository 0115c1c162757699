// affine.comp — BatchNormalization at inference, per channel c (dim 1).
// Its four parameters are constants folded at plan time (k_rows.c) into
// a[c] = scale / sqrt(var + eps) and b[c] = B - mean * a[c], carried in
// the parameter block: y = x * a[c] + b[c].  Or (-DST_BN_RT, the _rt
// variant) they are operands computed at run time, bound as buffers of T
// and read per element (a few loads from cache, no pass to fold them):
// y = (x - mean[c]) * (scale[c] / sqrt(var[c] + eps)) + B[c].
//   p: [0] n, [1] C, [2] inner (elements per channel per image),
//      [3..20] y's st_td, [21..38] x's; then
//      constant: [39..39+C) a, then C of b;
//      _rt: [39] eps (float bits), [40..43] the element offsets of scale,
//      B, mean and var, [44..47] their strides
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Y { T y[]; };
layout(std430, binding = 2) readonly buffer X { T x[]; };
#ifdef ST_BN_RT
layout(std430, binding = 3) readonly buffer S { T scale[]; };
layout(std430, binding = 4) readonly buffer Bias { T bias[]; };
layout(std430, binding = 5) readonly buffer M { T mean[]; };
layout(std430, binding = 6) readonly buffer V { T var[]; };
#endif

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    int C = p[1], c = (i / p[2]) % C;
    float v = float(x[td_index(21, i)]);
#ifdef ST_BN_RT
    float a = float(scale[p[40] + c * p[44]]) / sqrt(float(var[p[43] + c * p[47]]) + pf(39));
    float r = (v - float(mean[p[42] + c * p[46]])) * a + float(bias[p[41] + c * p[45]]);
#else
    float r = v * pf(39 + c) + pf(39 + C + c);
#endif
    y[td_index(3, i)] = T(r);
}
