// tile.glsl — the register-blocked tile that gemm.comp and conv.comp
// share.  A 16 x 16 work-group computes a TM x TN block of the output;
// each invocation holds an RM x RN block of it in registers (rows
// ty RM + i, columns tx RN + j: OUT_ROW, OUT_COL), consecutive, so that
// the inner loop reads each k's RM values of A and RN of B as one vec4
// (or half of one) each from shared memory: on NVIDIA a shared load
// issues at a quarter of the rate of an FMA, and with one scalar load
// per value a 4x4 block did 8 loads per 16 FMAs, a 2x2 one 4 per 4, so
// the loads, not the arithmetic, set the pace.  K is walked TK
// at a time: the work-group stages a TM x TK slice of A and a TK x TN
// slice of B in shared memory, then every invocation does RM * RN
// multiply-adds per RM + RN shared reads, where a one-output-per-
// invocation tile does one per two; that ratio, and a barrier per TK
// steps of RM * RN outputs instead of one, is the whole gain.
//
// TM and TN are 64 unless the build says otherwise (-DTM=16 for the _s_
// variants, CMakeLists.txt: for a small M the rows past M would be
// computed for nothing; conv.comp's _tRxC variants for the per-problem
// tile choice of vk_tiles.c; 16, 32 or 64).  The includer provides the
// two loaders (storing through SA_SET, SB_SET), which are where the operands differ (strided matrices, or the
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

// [k][m / 4] and [k][n / 4], as vec4s.  A row of sa is padded by one
// vec4: the loaders store A down its columns (16 invocations of a warp,
// 16 k's of one m), which without the pad all hit one shared-memory bank
// (a 16-way conflict on NVIDIA, every step); with it, 2-way at most.
shared vec4 sa[TK][TM / 4 + 1];
shared vec4 sb[TK][TN / 4];
#define SA_SET(k, m, v) sa[k][(m) >> 2][(m) & 3] = (v)
#define SB_SET(k, n, v) sb[k][(n) >> 2][(n) & 3] = (v)
#define OUT_ROW(ty, i) ((ty) * RM + (i))
#define OUT_COL(tx, j) ((tx) * RN + (j))

// one k's RM values of A and RN of B for invocation (tx, ty)
#if RM == 4
#define TILE_A(k_, ty, av_) { vec4 q_ = sa[k_][ty]; av_[0] = q_.x; av_[1] = q_.y; av_[2] = q_.z; av_[3] = q_.w; }
#elif RM == 2
#define TILE_A(k_, ty, av_) { vec4 q_ = sa[k_][(ty) >> 1]; bool h_ = ((ty) & 1) != 0; \
                              av_[0] = h_ ? q_.z : q_.x; av_[1] = h_ ? q_.w : q_.y; }
#else
#define TILE_A(k_, ty, av_) { av_[0] = sa[k_][(ty) >> 2][(ty) & 3]; }
#endif
#if RN == 4
#define TILE_B(k_, tx, bv_) { vec4 q_ = sb[k_][tx]; bv_[0] = q_.x; bv_[1] = q_.y; bv_[2] = q_.z; bv_[3] = q_.w; }
#elif RN == 2
#define TILE_B(k_, tx, bv_) { vec4 q_ = sb[k_][(tx) >> 1]; bool h_ = ((tx) & 1) != 0; \
                              bv_[0] = h_ ? q_.z : q_.x; bv_[1] = h_ ? q_.w : q_.y; }
#else
#define TILE_B(k_, tx, bv_) { bv_[0] = sb[k_][(tx) >> 2][(tx) & 3]; }
#endif

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
        TILE_A(k_, ty, av_)                                         \
        TILE_B(k_, tx, bv_)                                         \
        for (int i_ = 0; i_ < RM; i_++)                             \
            for (int j_ = 0; j_ < RN; j_++) acc[i_][j_] += av_[i_] * bv_[j_]; \
    }
