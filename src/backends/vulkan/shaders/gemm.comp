// gemm.comp — C = act(alpha * A B + beta * bias) for a batch of matrices,
// tiled through shared memory: a 16 x 16 work-group computes a 16 x 16
// block of C, stepping through K 16 at a time with one tile of A and one
// of B in shared memory.  Every operand is strided (a transposed operand
// is a swap of its strides), batch dims broadcast by 0 strides.
//   p: [0] M, [1] N, [2] K, [3] batch dims (<= 4), [4..7] their sizes
//      A: [8] off, [9] s_m, [10] s_k, [11..14] batch strides
//      B: [15] off, [16] s_k, [17] s_n, [18..21]
//      C: [22] off, [23] s_m, [24] s_n, [25..28]
//      bias: [29] present, [30] off, [31] s_m, [32] s_n
//      [33] alpha, [34] beta, [35] act, [36] act a, [37] act b
#version 450
#include "common.glsl"
#define TS 16
layout(local_size_x = TS, local_size_y = TS) in;
layout(std430, binding = 1) writeonly buffer Cb { T c[]; };
layout(std430, binding = 2) readonly buffer Ab { T a[]; };
layout(std430, binding = 3) readonly buffer Bb { T b[]; };
layout(std430, binding = 4) readonly buffer Db { T bias[]; };

shared float ta[TS][TS + 1];
shared float tb[TS][TS + 1];

void main()
{
    int M = p[0], N = p[1], K = p[2], nbd = p[3];
    int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    int col = int(gl_WorkGroupID.x) * TS + tx, row = int(gl_WorkGroupID.y) * TS + ty;
    // the batch: gl_WorkGroupID.z in row-major order of the batch dims
    int bi = int(gl_WorkGroupID.z), ao = p[8], bo = p[15], co = p[22];
    for (int d = nbd - 1; d >= 0; d--) {
        int n = p[4 + d], q = bi / n, i = bi - q * n;
        ao += i * p[11 + d];
        bo += i * p[18 + d];
        co += i * p[25 + d];
        bi = q;
    }
    float acc = 0.0;
    for (int k0 = 0; k0 < K; k0 += TS) {
        int ka = k0 + tx, kb = k0 + ty;
        int ar = int(gl_WorkGroupID.y) * TS + ty;
        ta[ty][tx] = ar < M && ka < K ? float(a[ao + ar * p[9] + ka * p[10]]) : 0.0;
        tb[ty][tx] = col < N && kb < K ? float(b[bo + kb * p[16] + col * p[17]]) : 0.0;
        barrier();
        for (int k = 0; k < TS; k++) acc += ta[ty][k] * tb[k][tx];
        barrier();
    }
    if (row >= M || col >= N) return;
    float v = pf(33) * acc;
    if (p[29] != 0) v += pf(34) * float(bias[p[30] + row * p[31] + col * p[32]]);
    c[co + row * p[23] + col * p[24]] = T(st_act(p[35], v, pf(36), pf(37), 0.0));
}
