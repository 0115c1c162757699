// gemm_splitk.comp — split K's second pass for gemm.comp: one element of
// C per invocation, the splits' f32 partial sums ([s][batch][m][n], the
// command's scratch) added in split order, so every run gives the same
// sum (no atomics), then alpha, beta times the bias, the activation and
// the strided store.
//   p: gemm.comp's block (M [0], N [1], batch dims [3..7], C [22..28],
//      bias [29..32], alpha, beta, act [33..37], splits [38], batches [40])
#version 450
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) writeonly buffer Cb { T c[]; };
layout(std430, binding = 2) readonly buffer Pb { float part[]; };
layout(std430, binding = 3) readonly buffer Db { T bias[]; };

void main()
{
    int i = gid1(), M = p[0], N = p[1], plane = p[40] * M * N;
    if (i >= plane) return;
    int col = i % N, t = i / N, row = t % M, bi = t / M, co = p[22];
    for (int d = p[3] - 1; d >= 0; d--) {
        int n = p[4 + d], q = bi / n;
        co += (bi - q * n) * p[25 + d];
        bi = q;
    }
    float v = 0.0;
    for (int s = 0; s < p[38]; s++) v += part[s * plane + i];
    v *= pf(33);
    if (p[29] != 0) v += pf(34) * float(bias[p[30] + row * p[31] + col * p[32]]);
    c[co + row * p[23] + col * p[24]] = T(st_act(p[35], v, pf(36), pf(37), 0.0));
}
