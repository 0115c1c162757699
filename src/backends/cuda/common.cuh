/*
 * common.cuh — what every CUDA kernel file shares: dtype loads and stores
 * (f16 and bf16 are computed in f32), the strided index walk, the
 * elementwise math by op code (the same codes and semantics as the CPU's
 * k_elementwise.c), and launch helpers.
 */
#ifndef ST_CUDA_COMMON_CUH
#define ST_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_ctx.h"
extern "C" {
#include "core/view.h"
#include "ops/elementwise.h"
#include "ops/lower_elementwise.h"
#include "ops/scalar_math.h"
}

#define ST_CUDA_MAXOPS ST_LEW_OPS

/* Up to ST_CUDA_MAXOPS operands walked over one (coalesced) shape: the
 * kernels' copy of ops/lower_elementwise.h's walk (st_lower_ew), which
 * orders the dims by operand 0's strides, largest first (a channels-last
 * tensor viewed as NCHW, passes/channels_last.c, then walks its
 * contiguous channels as the row, not its pixels at a stride of C), and
 * merges dims that are contiguous in every operand.  Every walk maps
 * elements independently, so any order gives the same results. */
struct st_walk {
    int rank;
    int nops;
    int64_t n;
    int64_t size[ST_MAX_RANK];
    int64_t stride[ST_CUDA_MAXOPS][ST_MAX_RANK];
};

static inline st_walk st_walk_of(const st_lower_ew &l)
{
    st_walk w;
    memset(&w, 0, sizeof w);
    w.rank = l.rank;
    w.nops = l.nops;
    w.n = l.n;
    for (int d = 0; d < l.rank; d++) {
        w.size[d] = l.sizes[d];
        for (int k = 0; k < l.nops; k++) w.stride[k][d] = l.strides[k][d];
    }
    return w;
}

/* A walk from per-operand strides over `sizes` (operand 0 is usually the
 * output), as they are: already broadcast. */
static inline st_walk st_walk_make(int rank, const int64_t *sizes, int nops, const int64_t *const *strides)
{
    st_lower_ew l;
    st_lower_ew_make(&l, rank, sizes, nops, strides);
    return st_walk_of(l);
}

/* The walk of an elementwise node: y, and n_in inputs broadcast (numpy)
 * into y's shape. */
static inline st_walk st_walk_ew(const st_operand *y, int n_in, const st_operand *const *in)
{
    st_lower_ew l;
    st_lower_ew_operands(&l, y, n_in, in);
    return st_walk_of(l);
}

/* The same, for 1 to 4 operands given one by one (C++ has no compound
 * literals). */
static inline st_walk st_walk1(int rank, const int64_t *sizes, const int64_t *s0)
{
    const int64_t *ss[1] = {s0};
    return st_walk_make(rank, sizes, 1, ss);
}
static inline st_walk st_walk2(int rank, const int64_t *sizes, const int64_t *s0, const int64_t *s1)
{
    const int64_t *ss[2] = {s0, s1};
    return st_walk_make(rank, sizes, 2, ss);
}
static inline st_walk st_walk3(int rank, const int64_t *sizes, const int64_t *s0, const int64_t *s1, const int64_t *s2)
{
    const int64_t *ss[3] = {s0, s1, s2};
    return st_walk_make(rank, sizes, 3, ss);
}
static inline st_walk st_walk4(int rank, const int64_t *sizes, const int64_t *s0, const int64_t *s1, const int64_t *s2,
                               const int64_t *s3)
{
    const int64_t *ss[4] = {s0, s1, s2, s3};
    return st_walk_make(rank, sizes, 4, ss);
}

/* Element offsets of linear index i in each operand. */
__device__ __forceinline__ void st_walk_offsets(const st_walk &w, int64_t i, int64_t *off)
{
    for (int k = 0; k < w.nops; k++) off[k] = 0;
    for (int d = w.rank - 1; d >= 0; d--) {
        int64_t c = i % w.size[d];
        i /= w.size[d];
        for (int k = 0; k < w.nops; k++) off[k] += c * w.stride[k][d];
    }
}

__device__ __forceinline__ float st_ldf(st_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case ST_F32: return ((const float *)p)[i];
    case ST_F16: return __half2float(((const __half *)p)[i]);
    case ST_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case ST_F64: return (float)((const double *)p)[i];
    case ST_I32: return (float)((const int32_t *)p)[i];
    case ST_I64: return (float)((const int64_t *)p)[i];
    case ST_I8: return (float)((const int8_t *)p)[i];
    case ST_U8: case ST_BOOL: return (float)((const uint8_t *)p)[i];
    case ST_I16: return (float)((const int16_t *)p)[i];
    case ST_U16: return (float)((const uint16_t *)p)[i];
    case ST_U32: return (float)((const uint32_t *)p)[i];
    case ST_U64: return (float)((const uint64_t *)p)[i];
    default: return 0.0f;
    }
}

__device__ __forceinline__ void st_stf(st_dtype t, void *p, int64_t i, float v)
{
    switch (t) {
    case ST_F32: ((float *)p)[i] = v; break;
    case ST_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    case ST_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    case ST_F64: ((double *)p)[i] = v; break;
    case ST_BOOL: ((uint8_t *)p)[i] = v != 0.0f; break;
    default: break;
    }
}

__device__ __forceinline__ int64_t st_ldi(st_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case ST_I8: return ((const int8_t *)p)[i];
    case ST_U8: case ST_BOOL: return ((const uint8_t *)p)[i];
    case ST_I16: return ((const int16_t *)p)[i];
    case ST_U16: return ((const uint16_t *)p)[i];
    case ST_I32: return ((const int32_t *)p)[i];
    case ST_U32: return ((const uint32_t *)p)[i];
    case ST_I64: return ((const int64_t *)p)[i];
    case ST_U64: return (int64_t)((const uint64_t *)p)[i];
    default: return (int64_t)st_ldf(t, p, i);
    }
}

__device__ __forceinline__ void st_sti(st_dtype t, void *p, int64_t i, int64_t v)
{
    switch (t) {
    case ST_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case ST_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case ST_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case ST_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case ST_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case ST_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case ST_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case ST_I64: ((int64_t *)p)[i] = v; break;
    case ST_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: st_stf(t, p, i, (float)v); break;
    }
}

__device__ __forceinline__ bool st_is_f32_class(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* The unary ops (and fused activations): ops/scalar_math.h's math, the
 * CPU's and OpenCL's.  IsInf detects both signs here: the kernel applies
 * detect_positive/detect_negative itself (k_elementwise.cu). */
__device__ __forceinline__ float st_unary_f(int code, float x, float a, float b, float g, float lo, float hi)
{
    return st_sm_unary_f32(code, x, a, b, g, lo, hi, ST_SM_INF_POS | ST_SM_INF_NEG);
}

/* A fused activation (st_epilogue) applied before a store. */
__device__ __forceinline__ float st_epilogue_f(const st_epilogue &e, float x)
{
    return e.act ? st_unary_f(e.act - 1, x, e.alpha, e.beta, 0.0f, e.alpha, e.beta) : x;
}

/* float Mod is fmod: ONNX asks fmod=1 for floats */
__device__ __forceinline__ float st_binary_f(int code, float a, float b) { return st_sm_binary_f32(code, a, b, 1); }

__device__ __forceinline__ int64_t st_binary_i(int code, int64_t a, int64_t b, bool fmod_mode, bool uns)
{
    return st_sm_binary_i64(code, a, b, fmod_mode, uns);   /* ops/scalar_math.h */
}

/* A knob set to "0" in the environment (STRATA_CUDA_CL_COPY=0 and the
 * like: a fast path turned off to measure it); read where it is used, so
 * one knob can govern kernels in several files. */
static inline bool st_knob_off(const char *name)
{
    const char *e = getenv(name);
    return e && strcmp(e, "0") == 0;
}

static inline cudaStream_t st_stream(const st_kctx *k) { return (cudaStream_t)((const st_cuda_ctx *)k->dev)->stream; }

static inline unsigned st_blocks(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535 * 32 ? 65535 * 32 : (b < 1 ? 1 : b));
}

/* Strides of x broadcast to y's shape (right-aligned, 0 on size-1 dims). */
static inline void st_bcast(const st_operand *x, const st_operand *y, int64_t *s)
{
    st_lower_ew_bcast(x->rank, x->sizes, x->strides, y->rank, s);
}

#endif
