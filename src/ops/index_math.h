/*
 * index_math.h — the index family's element rules, written once for
 * every backend: which element an index selects (negative indices wrap,
 * anything outside the axis selects none), the reduction ScatterElements
 * and ScatterND apply to a written element, the element Pad reads, the
 * element OneHot turns on, the columns Trilu keeps, the element CumSum
 * visits s-th, the order TopK sorts in, and Einsum's label strides and
 * element walk.
 *
 * The same text compiles as C (the CPU's kernels, backends/cpu/
 * k_index_*.c, k_reduce.c, k_einsum.c, and the lowering, ops/
 * lower_index.c), as CUDA (backends/cuda/k_index.cu) and as OpenCL C
 * (cmake/embed_opencl.cmake puts it in the program after ops/codes.h,
 * common.cl and ops/scalar_math.h; index.cl and pad.cl call it), as
 * ops/scalar_math.h does for the elementwise math: plain functions, the
 * preprocessor, C casts, no headers in OpenCL.  Why: each backend wrote
 * these rules out again (Pad's source index three times, the scatter
 * reduction four), and the copies had drifted: the devices compared
 * uint64 elements as signed in a max / min reduction and OpenCL reduced
 * float64 elements in float.
 *
 * Integers are 64-bit (st_im_i64); a dtype's elements widen to it as
 * ops/scalar_math.h's do (unsigned ones zero-extended, so only uint64 needs
 * the unsigned order, which `uns` selects).
 */
#ifndef ST_OPS_INDEX_MATH_H
#define ST_OPS_INDEX_MATH_H

#if defined(__OPENCL_VERSION__)
#define ST_IM_FN inline
typedef long st_im_i64;
typedef ulong st_im_u64;
/* the modes as C and CUDA name them (ops/index.h's enums) */
#define ST_IM_PAD_(name) ST_PAD_##name,
#define ST_IM_RED_(name) ST_RED_##name,
enum st_im_pad_mode { ST_PAD_MODES(ST_IM_PAD_) };
enum st_im_scatter_red { ST_SCATTER_REDS(ST_IM_RED_) };
#undef ST_IM_PAD_
#undef ST_IM_RED_
#else
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
#include "ops/index.h"
#ifdef __cplusplus
}
#endif
#if defined(__CUDACC__)
#define ST_IM_FN static __device__ __host__ __forceinline__
#else
#define ST_IM_FN static inline
#endif
typedef int64_t st_im_i64;
typedef uint64_t st_im_u64;
#endif

/* ---- one index into an axis: Gather, GatherElements, ScatterElements,
 * GatherND and ScatterND's tuples, CumSum's axis input ---- */

/* The element index v selects on an axis of dim elements (negative:
 * counted from the end), or -1 when v is outside [-dim, dim). */
ST_IM_FN st_im_i64 st_im_index(st_im_i64 v, st_im_i64 dim)
{
    if (v < 0) v += dim;
    return v >= 0 && v < dim ? v : -1;
}

/* ---- ScatterElements' and ScatterND's reduction ----
 * a: the element already in y, b: the update (NONE: b replaces a).  Max
 * and min keep a unless b is strictly beyond it, so a NaN update leaves a
 * number in place and a NaN in y stays.  Floats compute in the type the
 * caller loads them as: f32 (for f32, f16 and bf16 it rounds as the
 * dtype's own arithmetic would: 24 bits hold twice a 16-bit float's
 * significand and two more, so add and multiply round the same either
 * way) or f64, never f64 elements in f32. */
#define ST_IM_REDUCE_DEFINE(S, T)                                                                                      \
    ST_IM_FN T st_im_reduce_##S(int red, T a, T b)                                                                     \
    {                                                                                                                  \
        switch (red) {                                                                                                 \
        case ST_RED_ADD: return a + b;                                                                                 \
        case ST_RED_MUL: return a * b;                                                                                 \
        case ST_RED_MAX: return b > a ? b : a;                                                                         \
        case ST_RED_MIN: return b < a ? b : a;                                                                         \
        default: return b;                                                                                             \
        }                                                                                                              \
    }
ST_IM_REDUCE_DEFINE(f32, float)
#if !defined(__OPENCL_VERSION__) || defined(ST_FP64)
ST_IM_REDUCE_DEFINE(f64, double)
#endif

/* Integers wrap (two's complement, as the dtype's own arithmetic keeps
 * its low bits); uns: the dtype is unsigned, ordered as such. */
ST_IM_FN st_im_i64 st_im_reduce_i64(int red, st_im_i64 a, st_im_i64 b, int uns)
{
    st_im_u64 ua = (st_im_u64)a, ub = (st_im_u64)b;
    switch (red) {
    case ST_RED_ADD: return (st_im_i64)(ua + ub);
    case ST_RED_MUL: return (st_im_i64)(ua * ub);
    case ST_RED_MAX: return (uns ? ub > ua : b > a) ? b : a;
    case ST_RED_MIN: return (uns ? ub < ua : b < a) ? b : a;
    default: return b;
    }
}

/* ---- Pad, CenterCropPad ----
 * The input index that output index o of an axis of n input elements
 * reads, or -1 for the constant.  Negative pads crop first, and the modes
 * then see only the kept elements [lo, lo + m), as ONNX Runtime crops
 * before it pads; reflect does not repeat the edge, and far pads reflect
 * again. */
ST_IM_FN st_im_i64 st_im_pad_source(int mode, st_im_i64 o, st_im_i64 begin, st_im_i64 end, st_im_i64 n)
{
    st_im_i64 lo = begin < 0 ? -begin : 0, m = n - lo - (end < 0 ? -end : 0);
    st_im_i64 i = o - (begin > 0 ? begin : 0);
    if (i >= 0 && i < m) return lo + i;
    if (mode == ST_PAD_CONSTANT || m <= 0) return -1;
    if (mode == ST_PAD_EDGE) return lo + (i < 0 ? 0 : m - 1);
    if (mode == ST_PAD_WRAP) return lo + ((i % m) + m) % m;
    if (m == 1) return lo;
    st_im_i64 p = 2 * (m - 1);
    i %= p;
    if (i < 0) i += p;
    return lo + (i < m ? i : p - i);
}

/* ---- OneHot ----
 * The position along the axis (of depth elements) that index value v
 * turns on, or -1: none, every element is off.  neg_ok: a negative v
 * counts from the end. */
ST_IM_FN st_im_i64 st_im_one_hot(st_im_i64 v, st_im_i64 depth, int neg_ok)
{
    if (v < 0 && !neg_ok) return -1;
    return st_im_index(v, depth);
}

/* ---- Trilu ----
 * Row i of a matrix w columns wide keeps the columns [first, end): those
 * with column - i >= k (upper) or <= k (lower); the rest are 0.  k is
 * clamped first to [-(i + 1), w], where the kept columns stop changing,
 * so no k from the data can overflow i + k. */
ST_IM_FN st_im_i64 st_im_trilu_kclamp(st_im_i64 i, st_im_i64 k, st_im_i64 w)
{
    return k > w ? w : k < -(i + 1) ? -(i + 1) : k;
}

ST_IM_FN st_im_i64 st_im_trilu_first(st_im_i64 i, st_im_i64 k, st_im_i64 w, int upper)
{
    st_im_i64 c = i + st_im_trilu_kclamp(i, k, w);
    return !upper ? 0 : c < 0 ? 0 : c > w ? w : c;
}

ST_IM_FN st_im_i64 st_im_trilu_end(st_im_i64 i, st_im_i64 k, st_im_i64 w, int upper)
{
    st_im_i64 c = i + st_im_trilu_kclamp(i, k, w) + 1;
    return upper ? w : c < 0 ? 0 : c > w ? w : c;
}

/* Whether row i keeps column c (the element-by-element form). */
ST_IM_FN int st_im_trilu_keep(st_im_i64 i, st_im_i64 c, st_im_i64 k, st_im_i64 w, int upper)
{
    return c >= st_im_trilu_first(i, k, w, upper) && c < st_im_trilu_end(i, k, w, upper);
}

/* ---- CumSum ----
 * The position of a line of n elements that step s of the running sum
 * visits (reverse: from the end).  Its axis input is st_im_index(v, rank). */
ST_IM_FN st_im_i64 st_im_cumsum_at(st_im_i64 s, st_im_i64 n, int reverse) { return reverse ? n - 1 - s : s; }

/* ---- TopK (and ArgMax / ArgMin's value order) ----
 * Three-way comparisons of element values: a NaN above every number, as
 * numpy sorts (x != x: isnan without a header). */
#define ST_IM_CMP_DEFINE(S, T)                                                                                         \
    ST_IM_FN int st_im_cmp_##S(T a, T b)                                                                               \
    {                                                                                                                  \
        int an = a != a, bn = b != b;                                                                                  \
        return an ? (bn ? 0 : 1) : bn ? -1 : (a > b) - (a < b);                                                        \
    }
ST_IM_CMP_DEFINE(f32, float)
#if !defined(__OPENCL_VERSION__) || defined(ST_FP64)
ST_IM_CMP_DEFINE(f64, double)
#endif

ST_IM_FN int st_im_cmp_i64(st_im_i64 a, st_im_i64 b, int uns)
{
    if (uns) return ((st_im_u64)a > (st_im_u64)b) - ((st_im_u64)a < (st_im_u64)b);
    return (a > b) - (a < b);
}

/* Whether the element at index ia comes before the one at ib in TopK's
 * output, cmp comparing their values (st_im_cmp_*, a against b): the
 * larger first (largest) or the smaller, ties to the lower index. */
ST_IM_FN int st_im_topk_before(int cmp, int largest, st_im_i64 ia, st_im_i64 ib)
{
    if (!largest) cmp = -cmp;
    return cmp > 0 || (cmp == 0 && ia < ib);
}

/* ---- Einsum ----
 * An input's stride along a label: the strides of its dims that carry
 * the label add (a repeated label is a diagonal), a dim of 1 adds none (it
 * broadcasts over the label's extent). */
ST_IM_FN st_im_i64 st_im_label_stride(st_im_i64 acc, st_im_i64 size, st_im_i64 stride)
{
    return acc + (size == 1 ? 0 : stride);
}

/* The element walk of the device kernels: output element i sums, over
 * every value of the labels the output lacks, the product of the inputs
 * there.  ops/lower_index.c fills it (st_lower_einsum). */
#define ST_IM_RANK 8       /* ST_MAX_RANK */
#define ST_IM_EIN_IN 4     /* inputs */
#define ST_IM_EIN_SUM 12   /* summed labels */
typedef struct st_im_einsum {
    st_im_i64 n_in, out_rank, n_sum;
    st_im_i64 out_n[ST_IM_RANK], out_ys[ST_IM_RANK];
    st_im_i64 out_s[ST_IM_RANK][ST_IM_EIN_IN];  /* input i's stride along output dim d */
    st_im_i64 sum_n[ST_IM_EIN_SUM];
    st_im_i64 sum_s[ST_IM_EIN_SUM][ST_IM_EIN_IN]; /* input i's stride along summed label j */
    st_im_i64 total;                            /* y's elements */
} st_im_einsum;

/* Output element i: its offset in y (*oy) and each input's offset of its
 * first term (base), from the operands' element [0...]. */
ST_IM_FN void st_im_einsum_out(const st_im_einsum *p, st_im_i64 i, st_im_i64 *oy, st_im_i64 *base)
{
    *oy = 0;
    for (int k = 0; k < ST_IM_EIN_IN; k++) base[k] = 0;
    for (int d = (int)p->out_rank - 1; d >= 0; d--) {
        st_im_i64 c = i % p->out_n[d];
        i /= p->out_n[d];
        *oy += c * p->out_ys[d];
        for (int k = 0; k < ST_IM_EIN_IN; k++) base[k] += c * p->out_s[d][k];
    }
}

/* The terms of an output element; term s's input offsets (o) from base. */
ST_IM_FN st_im_i64 st_im_einsum_terms(const st_im_einsum *p)
{
    st_im_i64 n = 1;
    for (int j = 0; j < (int)p->n_sum; j++) n *= p->sum_n[j];
    return n;
}

ST_IM_FN void st_im_einsum_term(const st_im_einsum *p, st_im_i64 s, const st_im_i64 *base, st_im_i64 *o)
{
    for (int k = 0; k < ST_IM_EIN_IN; k++) o[k] = base[k];
    for (int j = (int)p->n_sum - 1; j >= 0; j--) {
        st_im_i64 c = s % p->sum_n[j];
        s /= p->sum_n[j];
        for (int k = 0; k < ST_IM_EIN_IN; k++) o[k] += c * p->sum_s[j][k];
    }
}

#endif
