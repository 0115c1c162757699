/*
 * activation.cl — the unary ops in f32, shared by the unary kernel
 * (elementwise.cl) and by the kernels that apply a fused activation before
 * storing (GEMM, Conv: st_epilogue).  Compiled right after common.cl.
 *
 * The codes are st_unary's, from the one list in ops/codes.h (embedded
 * first in the program), so the numbering is the host's by construction.
 */

#define U_ENUM_(name) U_##name,
enum st_unary_code { ST_UNARY_CODES(U_ENUM_) };

/* One unary op in f32: ops/scalar_math.h's (embedded before this file),
 * the CPU's and CUDA's math.  lo/hi: Clip's bounds (the epilogue passes
 * its alpha/beta there too, as the CPU's st_epilogue_f32 does); flags:
 * IsInf's detect_positive (1) and detect_negative (2). */
inline float unary_f(int code, float x, float a, float b, float g, float lo, float hi, int flags)
{
    return st_sm_unary_f32(code, x, a, b, g, lo, hi, flags);
}

/* A fused activation (st_epilogue: act = code + 1, 0 for none). */
inline float act_f(int act, float x, float a, float b)
{
    return act ? unary_f(act - 1, x, a, b, 0.0f, a, b, 0) : x;
}

