// conv_cm.comp — conv.comp's implicit GEMM on tensor cores: f16 weights
// and input taps, f32 accumulation, through cooperative matrices
// (GL_NV_cooperative_matrix: glslang 11 has no GL_KHR_cooperative_matrix
// yet; the KHR form would run it on AMD's and Intel's drivers too).
// Built f16 only; vk_coopmat.c says on which devices and convs it runs.
//
// A work-group of 128 invocations (4 subgroups of 32, checked on the
// host) computes a 64 x 64 block of one group's output (channels x
// positions, batch folded into the positions).  Each K step stages a
// 64 x 32 slice of the weights (A, [m][k]) and a 32 x 64 slice of the
// input taps (B, [k][n], zero past the pads) in shared memory as f16, as
// conv.comp does (the im2col columns are never stored), and each
// subgroup multiplies its 32 x 32 quarter as 2 x 2 fragments of 16 x 16
// (2 x 4 of 16 x 8 in the FN=8 build) with two 16-deep k fragments.  Everything outside M, N or K is staged
// as zeros, so every invocation runs every cooperative-matrix operation
// (they must be reached by the whole subgroup) and the zeros add nothing.
//
// The epilogue stores the accumulators to a shared f32 tile, then each
// invocation takes one output position and 32 of its channels: the bias
// and the fused activation, and the store through the output's strides
// (a Concat's slot: only the view's own elements are written).  Split K
// as conv.comp: work-group z is (group, split), a split writes raw f32
// sums to the command's scratch and conv_splitk.comp adds them.
//
// The next step's global loads are issued into registers before the
// current step's products, as in conv.comp.
//   p: conv.comp's block; [40] K per split is a multiple of this TK (32)
//
// Built a second time with -DST_CM_EMULATE (conv_cm_emu_f16): the same
// staging, epilogue and split, with each invocation's products computed
// one by one in place of the fragments, so that a device without
// cooperative matrices (lavapipe, in CI) tests every index of this file
// but the fragments' (STRATA_VULKAN_COOPMAT=emulate).
#version 450
#ifndef ST_CM_EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
#include "common.glsl"

#define TM 64
#define TN 64
#define TK 32
#define NT 128
// Row pitches of the shared tiles, in elements.  A fragment load wants
// its rows 16-byte aligned (the pitches and every fragment's first
// element are multiples of 8 halves or 4 floats), and the padding puts
// the 8 rows of one 16-byte-per-row load phase on 8 different groups of
// 4 banks: 40 halves is 20 words a row (banks 0, 20, 8, 28, ...), 72
// halves 36 words and 68 floats 68 words (4 apart).
#define SA_LD 40
#define SB_LD 72
#define SC_LD 68

layout(local_size_x = NT) in;
layout(std430, binding = 1) writeonly buffer Yb { T y[]; };
layout(std430, binding = 2) readonly buffer Xb { T x[]; };
layout(std430, binding = 3) readonly buffer Wb { T w[]; };
layout(std430, binding = 4) readonly buffer Bb { T bias[]; };
layout(std430, binding = 5) writeonly buffer Pb { float part[]; };

shared float16_t sa[TM * SA_LD];
shared float16_t sb[TK * SB_LD];
shared float sc[TM * SC_LD];

// A: invocation l loads column l % TK of rows l / TK + i * A_ROW_STEP;
// B: column l % TN of the B_LOADS consecutive rows from (l / TN) B_LOADS,
// so one (c, kh, kw) counter stepped by one serves all of them
#define A_LOADS (TM * TK / NT)
#define A_ROW_STEP (NT / TK)
#define B_LOADS (TK * TN / NT)

// The fragment shape MxNxK: 16x16x16, or 16x8x16 with -DFN=8
// (conv_cm_n8_f16) where the driver lists only that one (the NV
// extension's first drivers did); a subgroup's 32 x 32 quarter is then
// 2 x JN fragments of 16 x FN.
#ifndef FN
#define FN 16
#endif
#define JN (32 / FN)
#define frag_a fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define frag_b fcoopmatNV<16, gl_ScopeSubgroup, 16, FN>
#define frag_c fcoopmatNV<32, gl_ScopeSubgroup, 16, FN>
// outputs an invocation reads in the epilogue, and computes when emulated
#define OUT_N (TM * TN / NT)

int H, W, KH, KW, KK, kend, mg, m0, ak, ar, br, ih0, iw0, xb, wb;
bool pos_in;
// TK and TK - B_LOADS as (channels, kernel rows, kernel columns), each
// digit below its base (see advance)
int cs, as, bs, cj, aj, bj;
// the K index of the A column and of the first B row loaded next, as
// (c, kh, kw) beside it
int ka, kac, kah, kaw, kb, kbc, kbh, kbw;

#include "conv_k.glsl"

// The next step's slices into registers: zero past M, K's range and the
// pads (an if per load, never ?:, as tile.glsl says why), then every
// index on by TK.
void load(out T ra[A_LOADS], out T rb[B_LOADS])
{
    int wo = wb + kac * p[25] + kah * p[26] + kaw * p[27];
    for (int i = 0; i < A_LOADS; i++) {
        int row = ar + i * A_ROW_STEP;
        ra[i] = T(0.0);
        if (m0 + row < mg && ka < kend) ra[i] = w[wo + row * p[24]];
    }
    ka += TK;
    advance(kac, kah, kaw, cs, as, bs);
    for (int i = 0; i < B_LOADS; i++) {
        rb[i] = T(0.0);
        if (pos_in && kb < kend) {
            int ih = ih0 + kbh * p[13], iw = iw0 + kbw * p[14];
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) rb[i] = x[xb + kbc * p[20] + ih * p[21] + iw * p[22]];
        }
        kb++;
        advance(kbc, kbh, kbw, 0, 0, 1);
    }
    kb += TK - B_LOADS;
    advance(kbc, kbh, kbw, cj, aj, bj);
}

#ifdef ST_CM_EMULATE
// acc[i] += row l / TN + i NT / TN of sa times column l % TN of sb: the
// outputs that invocation l's epilogue takes
void emu_products(inout float acc[OUT_N])
{
    int cn = int(gl_LocalInvocationIndex) % TN, r0 = int(gl_LocalInvocationIndex) / TN;
    for (int k = 0; k < TK; k++) {
        float b = float(sb[k * SB_LD + cn]);
        for (int i = 0; i < OUT_N; i++) acc[i] += float(sa[(r0 + i * (NT / TN)) * SA_LD + k]) * b;
    }
}

void emu_store(float acc[OUT_N])
{
    int cn = int(gl_LocalInvocationIndex) % TN, r0 = int(gl_LocalInvocationIndex) / TN;
    for (int i = 0; i < OUT_N; i++) sc[(r0 + i * (NT / TN)) * SC_LD + cn] = acc[i];
}
#endif

// The bias, the activation and the strided store (or, split, the raw
// sum) of the outputs of position n0 + l % TN, from the shared f32 tile.
void epilogue(int g, int s, int n0, int P)
{
    int cn = int(gl_LocalInvocationIndex) % TN, pos = n0 + cn;
    if (pos >= P) return;
    int OW = p[6], OH = p[5];
    int ow = pos % OW, t = pos / OW, oh = t % OH, n = t / OH;
    int yo = p[28] + n * p[29] + oh * p[31] + ow * p[32];
    for (int r = int(gl_LocalInvocationIndex) / TN; r < TM; r += NT / TN) { // OUT_N rows
        int m = m0 + r;
        if (m >= mg) break;
        int oc = g * mg + m;
        float v = sc[r * SC_LD + cn];
        if (p[39] > 1) {
            part[(s * p[4] + oc) * P + pos] = v;
            continue;
        }
        if (p[33] != 0) v += float(bias[p[34] + oc * p[35]]);
        y[yo + oc * p[30]] = T(st_act(p[36], v, pf(37), pf(38), 0.0));
    }
}

void main()
{
    H = p[2];
    W = p[3];
    KH = p[7];
    KW = p[8];
    KK = KH * KW;
    int OH = p[5], OW = p[6], cg = p[16];
    mg = p[17];
    int splits = p[39], z = int(gl_WorkGroupID.z), g = z / splits, s = z - g * splits;
    int l = int(gl_LocalInvocationIndex);
    int P = p[41], K = cg * KK, kbeg = s * p[40];
    kend = min(K, kbeg + p[40]);
    split_k(TK, cs, as, bs);
    split_k(TK - B_LOADS, cj, aj, bj);
    m0 = int(gl_WorkGroupID.y) * TM;
    int n0 = int(gl_WorkGroupID.x) * TN;
    ak = l % TK;
    ar = l / TK;
    br = l / TN;
    // the output position whose input taps this invocation loads: the
    // corner of its window and its image's first channel of the group
    int lpos = n0 + l % TN;
    pos_in = lpos < P;
    ih0 = 0;
    iw0 = 0;
    xb = 0;
    if (pos_in) {
        int ow = lpos % OW, t = lpos / OW, oh = t % OH, n = t / OH;
        ih0 = oh * p[9] - p[11];
        iw0 = ow * p[10] - p[12];
        xb = p[18] + n * p[19] + g * cg * p[20];
    }
    wb = p[23] + (g * mg + m0) * p[24];
    ka = kbeg + ak;
    split_k(ka, kac, kah, kaw);
    kb = kbeg + br * B_LOADS;
    split_k(kb, kbc, kbh, kbw);
#ifdef ST_CM_EMULATE
    float acc[OUT_N];
    for (int i = 0; i < OUT_N; i++) acc[i] = 0.0;
#else
    // this subgroup's 32 x 32 quarter of the block
    int wm = int(gl_SubgroupID) >> 1, wn = int(gl_SubgroupID) & 1;
    frag_c acc[2][JN];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < JN; j++) acc[i][j] = frag_c(0.0);
#endif
    T ra[A_LOADS], rb[B_LOADS];
    load(ra, rb);
    for (int k0 = kbeg; k0 < kend; k0 += TK) {
        for (int i = 0; i < A_LOADS; i++) sa[(ar + i * A_ROW_STEP) * SA_LD + ak] = ra[i];
        for (int i = 0; i < B_LOADS; i++) sb[(br * B_LOADS + i) * SB_LD + l % TN] = rb[i];
        barrier();
        if (k0 + TK < kend) load(ra, rb);
#ifdef ST_CM_EMULATE
        emu_products(acc);
#else
        for (int kk = 0; kk < TK; kk += 16) {
            frag_a a[2];
            frag_b b[JN];
            for (int i = 0; i < 2; i++) coopMatLoadNV(a[i], sa, uint((wm * 32 + i * 16) * SA_LD + kk), uint(SA_LD), false);
            for (int j = 0; j < JN; j++) coopMatLoadNV(b[j], sb, uint(kk * SB_LD + wn * 32 + j * FN), uint(SB_LD), false);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < JN; j++) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
        }
#endif
        barrier();
    }
#ifdef ST_CM_EMULATE
    emu_store(acc);
#else
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < JN; j++)
            coopMatStoreNV(acc[i][j], sc, uint((wm * 32 + i * 16) * SC_LD + wn * 32 + j * FN), uint(SC_LD), false);
#endif
    barrier();
    epilogue(g, s, n0, P);
}
