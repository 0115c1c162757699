// copy.comp — y = x element by element, each walked by its own shape in
// row-major order (a transpose, a reshape that needs a copy, a slot of a
// concat).  -DST_C16: 2-byte elements, else 4-byte (8-byte ones are copied
// as two 4-byte halves, an extra innermost dim).  Bits only: no dtype
// conversion.
//   p: [0] n, [1..18] y's st_td, [19..36] x's
#version 450
#ifdef ST_C16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#define E uint16_t
#else
#define E uint
#endif
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Y { E y[]; };
layout(std430, binding = 2) readonly buffer X { E x[]; };

void main()
{
    int i = gid1();
    if (i >= p[0]) return;
    y[td_index(1, i)] = x[td_index(19, i)];
}
