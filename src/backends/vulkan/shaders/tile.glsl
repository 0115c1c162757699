// tile.glsl — the register-blocked tile that gemm.comp and conv.comp
// share.  A 16 x 16 work-group computes a TM x TN block of the output;
// each invocation holds an RM x RN block of it in registers (rows
// ty + 16 i, columns tx + 16 j: neighbouring invocations touch
// neighbouring shared-memory words and output columns).  K is walked TK
// at a time: the work-group stages a TM x TK slice of A and a TK x TN
// slice of B in shared memory, then every invocation does RM * RN
// multiply-adds per RM + RN shared reads, where a one-output-per-
// invocation tile does one per two; that ratio, and a barrier per TK
// steps of RM * RN outputs instead of one, is the whole gain.
//
// TM and TN are 64 unless the build says otherwise (-DTM=16 for the _s_
// variants, CMakeLists.txt: for a small M the rows past M would be
// computed for nothing; conv.comp's _tRxC variants for the per-problem
// tile choice of vk_tiles.c; any multiple of 16 that divides NT works).  The includer provides the two
// loaders, which are where the operands differ (strided matrices, or the
// input patches of a Conv), and the epilogue.
// A loader guards each load with an if, not ?:, because glslang may turn
// ?: into OpSelect, which evaluates both sides: a slot past M, N or K
// would read past the operand's view, which no bound check catches.
#ifndef TM
#define TM 64
#endif
#ifndef TN
#define TN 64
#endif
#define TK 16
#define WX 16
#define WY 16
#define NT (WX * WY)
#define RM (TM / WY)
#define RN (TN / WX)

layout(local_size_x = WX, local_size_y = WY) in;

// [k][m] and [k][n]: the inner loop reads one row of each per k.  A row
// of sa is padded by one word: the loaders store A down its columns (16
// invocations of a warp, 16 k's of one m), which without the pad all hit
// one shared-memory bank (a 16-way conflict on NVIDIA, every step).
shared float sa[TK][TM + 1];
shared float sb[TK][TN];

// Which slots of the two slices invocation l loads (NT is a multiple of
// TK and TN, so an invocation always loads the same A column and B
// column, and the loaders can work their index arithmetic out once):
//   A: column l % TK, rows l / TK + i * (NT / TK), i < TM * TK / NT
//   B: column l % TN, rows l / TN + i * (NT / TN), i < TK * TN / NT
#define A_LOADS (TM * TK / NT)
#define B_LOADS (TK * TN / NT)
#define A_ROW_STEP (NT / TK)
#define B_ROW_STEP (NT / TN)

// acc += sa^T sb over one staged slice
#define TILE_FMA(acc, tx, ty)                                       \
    for (int k_ = 0; k_ < TK; k_++) {                               \
        float av_[RM], bv_[RN];                                     \
        for (int i_ = 0; i_ < RM; i_++) av_[i_] = sa[k_][ty + i_ * WY]; \
        for (int j_ = 0; j_ < RN; j_++) bv_[j_] = sb[k_][tx + j_ * WX]; \
        for (int i_ = 0; i_ < RM; i_++)                             \
            for (int j_ = 0; j_ < RN; j_++) acc[i_][j_] += av_[i_] * bv_[j_]; \
    }
