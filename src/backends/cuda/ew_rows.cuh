/*
 * ew_rows.cuh — the fast path of the elementwise kernels: operands of one
 * float dtype (f32, f16 or bf16), walked as rows of the coalesced shape.
 *
 * The generic kernels (k_elementwise.cu) find each element's offsets with
 * 64-bit division over every dim and switch on the dtype per load: on an
 * H200 a ViT-S Add of two 4.8 MB operands took 86 us where moving the
 * bytes takes 4.  Here the innermost dim of the walk is the row and the
 * (at most three) outer dims are divided once per chunk of a row in 32
 * bits; a thread takes VEC consecutive row elements, loaded 16 bytes at a
 * time where an operand's row is contiguous and aligned, or one value where
 * it is broadcast along the row (stride 0).  Any other inner stride (a
 * transposed view) runs with VEC 1, still with the cheap index math.
 * Arithmetic is the generic kernels' own (st_unary_f, st_binary_f in f32),
 * so results keep their bits.
 */
#ifndef ST_CUDA_EW_ROWS_CUH
#define ST_CUDA_EW_ROWS_CUH

#include "backends/cuda/common.cuh"

#define ST_EWR_MAXOPS 3   /* output + two inputs */
#define ST_EWR_OUTER 3

struct st_ewr {
    int nops, orank;
    uint32_t n_chunks, cpr;             /* chunks, chunks per row */
    uint32_t osize[ST_EWR_OUTER];
    int64_t ostride[ST_EWR_MAXOPS][ST_EWR_OUTER];
    int64_t istride[ST_EWR_MAXOPS];     /* along the row */
    char *ptr[ST_EWR_MAXOPS];
};

template <typename T> __device__ __forceinline__ float st_to_f(T v);
template <> __device__ __forceinline__ float st_to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float st_to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float st_to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T st_from_f(float v);
template <> __device__ __forceinline__ float st_from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st_from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st_from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T, int VEC> struct alignas(sizeof(T) * VEC) st_vec {
    T v[VEC];
};

/* Loads VEC row elements of operand k at element offset off into f. */
template <typename T, int VEC>
__device__ __forceinline__ void st_ewr_load(const st_ewr &a, int k, int64_t off, float *f)
{
    const T *p = (const T *)a.ptr[k] + off;
    if (a.istride[k] == 0) {
        float v = st_to_f<T>(*p);
#pragma unroll
        for (int e = 0; e < VEC; e++) f[e] = v;
    } else if (VEC > 1) {
        st_vec<T, VEC> v = *(const st_vec<T, VEC> *)p;
#pragma unroll
        for (int e = 0; e < VEC; e++) f[e] = st_to_f<T>(v.v[e]);
    } else {
        f[0] = st_to_f<T>(*p);
    }
}

/* The chunk's offsets: chunk c is row c / cpr, elements from (c % cpr) * VEC. */
template <int VEC>
__device__ __forceinline__ void st_ewr_offsets(const st_ewr &a, uint32_t c, int64_t *off)
{
    uint32_t row = c / a.cpr, col = (c - row * a.cpr) * VEC;
    for (int k = 0; k < a.nops; k++) off[k] = (int64_t)col * a.istride[k];
    for (int d = a.orank - 1; d >= 0; d--) {
        uint32_t q = row / a.osize[d], i = row - q * a.osize[d];
        row = q;
        for (int k = 0; k < a.nops; k++) off[k] += (int64_t)i * a.ostride[k][d];
    }
}

/* NIN inputs (1: unary with its parameters, 2: binary) into operand 0. */
template <typename T, int VEC, int NIN>
__global__ void st_ewr_kernel(st_ewr a, int code, float p0, float p1, float p2, float lo, float hi)
{
    for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < a.n_chunks; c += gridDim.x * blockDim.x) {
        int64_t off[ST_EWR_MAXOPS];
        st_ewr_offsets<VEC>(a, c, off);
        float x[VEC], y[VEC];
        st_ewr_load<T, VEC>(a, 1, off[1], x);
        if (NIN == 2) {
            st_ewr_load<T, VEC>(a, 2, off[2], y);
#pragma unroll
            for (int e = 0; e < VEC; e++) x[e] = st_binary_f(code, x[e], y[e]);
        } else {
            /* not unrolled: st_unary_f's switch copied VEC times made the module four times larger */
#pragma unroll 1
            for (int e = 0; e < VEC; e++) x[e] = st_unary_f(code, x[e], p0, p1, p2, lo, hi);
        }
        T *out = (T *)a.ptr[0] + off[0];
        if (VEC > 1) {
            st_vec<T, VEC> v;
#pragma unroll
            for (int e = 0; e < VEC; e++) v.v[e] = st_from_f<T>(x[e]);
            *(st_vec<T, VEC> *)out = v;
        } else {
            for (int e = 0; e < VEC; e++) out[e * a.istride[0]] = st_from_f<T>(x[e]);
        }
    }
}

/* The unary ops that models run most often, with the op code a template
 * argument: st_unary_f's switch then folds away and the VEC elements
 * unroll.  Under the generic kernel's per-element switch an f16 Sigmoid
 * ran at half of PyTorch's bandwidth (YOLOv8n at batch 32, H200).  The
 * math is the same function, so results keep their bits. */
#define ST_EWR_HOT_UNARY(X) X(ST_U_SIGMOID) X(ST_U_SILU) X(ST_U_GELU) X(ST_U_GELU_TANH) X(ST_U_RELU) X(ST_U_TANH) \
    X(ST_U_ERF) X(ST_U_EXP)

template <typename T, int VEC, int CODE>
__global__ void st_ewr_unary_kernel(st_ewr a, float p0, float p1, float p2, float lo, float hi)
{
    for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < a.n_chunks; c += gridDim.x * blockDim.x) {
        int64_t off[ST_EWR_MAXOPS];
        st_ewr_offsets<VEC>(a, c, off);
        float x[VEC];
        st_ewr_load<T, VEC>(a, 1, off[1], x);
        st_vec<T, VEC> v;
#pragma unroll
        for (int e = 0; e < VEC; e++) v.v[e] = st_from_f<T>(st_unary_f(CODE, x[e], p0, p1, p2, lo, hi));
        *(st_vec<T, VEC> *)((T *)a.ptr[0] + off[0]) = v;
    }
}

/* Fills a from a coalesced walk (operand 0 the output) when it fits the
 * fast path: at most ST_EWR_OUTER outer dims, 32-bit chunk counts and
 * row lengths.  *vec: the widest width (16 bytes of T, down to 1; with
 * any_width false, 16 bytes or 1) for which every contiguous row operand
 * is aligned at every row start. */
static inline bool st_ewr_make(const st_walk &w, void *const *ptr, size_t es, st_ewr *a, int *vec, bool any_width)
{
    if (w.n == 0 || w.rank - 1 > ST_EWR_OUTER || w.nops > ST_EWR_MAXOPS) return false;
    memset(a, 0, sizeof *a);
    a->nops = w.nops;
    a->orank = w.rank - 1;
    int64_t len = w.size[w.rank - 1];
    if (w.n >= ((int64_t)1 << 31)) return false;
    int v = (int)(16 / es);
    for (int k = 0; k < w.nops; k++) {
        a->ptr[k] = (char *)ptr[k];
        a->istride[k] = w.stride[k][w.rank - 1];
        if (a->istride[k] != 1 && !(a->istride[k] == 0 && k > 0)) v = 1;
        for (int d = 0; d < a->orank; d++) a->ostride[k][d] = w.stride[k][d];
    }
    for (int d = 0; d < a->orank; d++) a->osize[d] = (uint32_t)w.size[d];
    /* a vector must start 16-byte aligned in every row of every contiguous operand */
    while (v > 1) {
        bool ok = len % v == 0;
        for (int k = 0; k < w.nops && ok; k++) {
            if (a->istride[k] == 0) continue;
            if ((uintptr_t)ptr[k] % (v * es)) ok = false;
            for (int d = 0; d < a->orank; d++)
                if ((a->ostride[k][d] * (int64_t)es) % (v * (int64_t)es)) ok = false;
        }
        if (ok) break;
        v = any_width ? v / 2 : 1;
    }
    *vec = v;
    a->cpr = (uint32_t)(len / v);
    a->n_chunks = (uint32_t)(w.n / v);
    return true;
}

/* Launches the kernel for dtype t (f32, f16 or bf16); false when t is none. */
static inline bool st_ewr_launch(cudaStream_t stream, st_dtype t, int nin, const st_ewr &a, int vec, int code, float p0,
                                 float p1, float p2, float lo, float hi)
{
    const int threads = 256;
    unsigned blocks = st_blocks(a.n_chunks, threads);
#define ST_EWR_GO(T, V)                                                                                                \
    do {                                                                                                               \
        if (nin == 2) st_ewr_kernel<T, V, 2><<<blocks, threads, 0, stream>>>(a, code, p0, p1, p2, lo, hi);             \
        else st_ewr_kernel<T, V, 1><<<blocks, threads, 0, stream>>>(a, code, p0, p1, p2, lo, hi);                      \
    } while (0)
    /* only the full 16-byte width and 1 are built: every width for every
     * op code would double the module again */
#define ST_EWR_HOT(C)                                                                                                  \
    case C: st_ewr_unary_kernel<T_, 16 / sizeof(T_), C><<<blocks, threads, 0, stream>>>(a, p0, p1, p2, lo, hi); return true;
#define ST_EWR_T(T)                                                                                                    \
    do {                                                                                                               \
        typedef T T_;                                                                                                  \
        if (vec == 16 / (int)sizeof(T) && nin == 1 && a.istride[1] == 1) {                                             \
            switch (code) { ST_EWR_HOT_UNARY(ST_EWR_HOT) default: break; }                                             \
        }                                                                                                              \
        if (vec == 16 / (int)sizeof(T)) ST_EWR_GO(T, 16 / sizeof(T));                                                  \
        else ST_EWR_GO(T, 1);                                                                                          \
    } while (0)
    switch (t) {
    case ST_F32: ST_EWR_T(float); return true;
    case ST_F16: ST_EWR_T(__half); return true;
    case ST_BF16: ST_EWR_T(__nv_bfloat16); return true;
    default: return false;
    }
#undef ST_EWR_T
#undef ST_EWR_HOT
#undef ST_EWR_GO
}

/* ---- one input transposed against the output: 32 x 32 tiles ----
 *
 * When an input's unit stride is on another dim than the output's (an
 * NHWC tensor read through an NCHW view: ConvNeXt's permute back before
 * its layer scale), a row walk reads that input a cache line per element:
 * 80 us a launch in ConvNeXt-T at batch 32.  Here a block stages a 32 x 32
 * tile of it in shared memory, read along its own unit dim (D), and then
 * walks the tile along the output's row (I): both sides coalesced. */
struct st_ewt {
    int t;                               /* the transposed input: 1 or 2 */
    int nops;
    uint32_t len_i, len_d, n_rest, tiles_i, tiles_d;
    uint32_t rsize[ST_EWR_OUTER];        /* the other outer dims */
    int rrank;
    int64_t si[ST_EWR_MAXOPS], sd[ST_EWR_MAXOPS], rstride[ST_EWR_MAXOPS][ST_EWR_OUTER];
    char *ptr[ST_EWR_MAXOPS];
};

template <typename T, int NIN>
__global__ void st_ewt_kernel(st_ewt a, int code, float p0, float p1, float p2, float lo, float hi)
{
    __shared__ float tile[32][33];
    const uint32_t tiles = a.tiles_i * a.tiles_d;
    for (uint32_t b = blockIdx.x; b < tiles * a.n_rest; b += gridDim.x) {
        uint32_t rest = b / tiles, tt = b - rest * tiles, ti = tt % a.tiles_i, td = tt / a.tiles_i;
        int64_t base[ST_EWR_MAXOPS] = {0, 0, 0};
        for (int d = a.rrank - 1; d >= 0; d--) {
            uint32_t q = rest / a.rsize[d], i = rest - q * a.rsize[d];
            rest = q;
            for (int k = 0; k < a.nops; k++) base[k] += (int64_t)i * a.rstride[k][d];
        }
        uint32_t i0 = ti * 32, d0 = td * 32;
        const T *tp = (const T *)a.ptr[a.t] + base[a.t];
        __syncthreads();
        for (uint32_t k = threadIdx.y; k < 32; k += blockDim.y) {
            uint32_t i = i0 + k, d = d0 + threadIdx.x;
            if (i < a.len_i && d < a.len_d) tile[k][threadIdx.x] = st_to_f<T>(tp[(int64_t)i * a.si[a.t] + (int64_t)d * a.sd[a.t]]);
        }
        __syncthreads();
        for (uint32_t k = threadIdx.y; k < 32; k += blockDim.y) {
            uint32_t i = i0 + threadIdx.x, d = d0 + k;
            if (i >= a.len_i || d >= a.len_d) continue;
            float v[2];
            for (int o = 1; o <= NIN; o++)
                v[o - 1] = o == a.t ? tile[threadIdx.x][k]
                                    : st_to_f<T>(((const T *)a.ptr[o])[base[o] + (int64_t)i * a.si[o] + (int64_t)d * a.sd[o]]);
            float r = NIN == 2 ? st_binary_f(code, v[0], v[1]) : st_unary_f(code, v[0], p0, p1, p2, lo, hi);
            ((T *)a.ptr[0])[base[0] + (int64_t)i * a.si[0] + (int64_t)d * a.sd[0]] = st_from_f<T>(r);
        }
    }
}

/* Fills a when the walk has an input whose unit stride is on an outer dim
 * while the output's is on the row, the row at least 8 long. */
static inline bool st_ewt_make(const st_walk &w, void *const *ptr, st_ewt *a)
{
    int r = w.rank;
    if (r < 2 || r - 2 > ST_EWR_OUTER || w.nops > ST_EWR_MAXOPS || w.n >= ((int64_t)1 << 31)) return false;
    if (w.stride[0][r - 1] != 1 || w.size[r - 1] < 8) return false;
    int t = 0, dd = -1;
    for (int k = 1; k < w.nops && !t; k++) {
        if (w.stride[k][r - 1] == 0 || w.stride[k][r - 1] == 1) continue;
        for (int d = 0; d < r - 1; d++)
            if (w.stride[k][d] == 1 && w.size[d] >= 8) {
                t = k;
                dd = d;
            }
    }
    if (!t) return false;
    memset(a, 0, sizeof *a);
    a->t = t;
    a->nops = w.nops;
    a->len_i = (uint32_t)w.size[r - 1];
    a->len_d = (uint32_t)w.size[dd];
    a->tiles_i = (a->len_i + 31) / 32;
    a->tiles_d = (a->len_d + 31) / 32;
    a->n_rest = 1;
    for (int k = 0; k < w.nops; k++) {
        a->ptr[k] = (char *)ptr[k];
        a->si[k] = w.stride[k][r - 1];
        a->sd[k] = w.stride[k][dd];
    }
    for (int d = 0; d < r - 1; d++) {
        if (d == dd) continue;
        a->rsize[a->rrank] = (uint32_t)w.size[d];
        a->n_rest *= (uint32_t)w.size[d];
        for (int k = 0; k < w.nops; k++) a->rstride[k][a->rrank] = w.stride[k][d];
        a->rrank++;
    }
    return (uint64_t)a->tiles_i * a->tiles_d * a->n_rest < ((uint64_t)1 << 32);
}

static inline bool st_ewt_launch(cudaStream_t stream, st_dtype t, int nin, const st_ewt &a, int code, float p0, float p1,
                                 float p2, float lo, float hi)
{
    uint64_t blocks = (uint64_t)a.tiles_i * a.tiles_d * a.n_rest;
    unsigned grid = (unsigned)(blocks > 65535u * 16 ? 65535u * 16 : blocks);
    dim3 threads(32, 8);
#define ST_EWT_T(T)                                                                                                    \
    do {                                                                                                               \
        if (nin == 2) st_ewt_kernel<T, 2><<<grid, threads, 0, stream>>>(a, code, p0, p1, p2, lo, hi);                  \
        else st_ewt_kernel<T, 1><<<grid, threads, 0, stream>>>(a, code, p0, p1, p2, lo, hi);                           \
    } while (0)
    switch (t) {
    case ST_F32: ST_EWT_T(float); return true;
    case ST_F16: ST_EWT_T(__half); return true;
    case ST_BF16: ST_EWT_T(__nv_bfloat16); return true;
    default: return false;
    }
#undef ST_EWT_T
}

/* The fast paths in order: a transposed input's tiles, else rows. */
static inline bool st_ew_fast(cudaStream_t stream, st_dtype t, int nin, const st_walk &w, void *const *ptr, int code,
                              float p0, float p1, float p2, float lo, float hi)
{
    st_ewt tt;
    if (st_ewt_make(w, ptr, &tt)) return st_ewt_launch(stream, t, nin, tt, code, p0, p1, p2, lo, hi);
    st_ewr r;
    int vec;
    return st_ewr_make(w, ptr, st_dtype_size(t), &r, &vec, false) && st_ewr_launch(stream, t, nin, r, vec, code, p0, p1, p2, lo, hi);
}

/* ---- copies: the same walk on raw elements of 1, 2, 4 or 8 bytes ----
 * (strided copies and GEMM operand packing: no conversion, so any dtype) */

template <typename T, int VEC>
__global__ void st_ewr_copy_kernel(st_ewr a)
{
    for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < a.n_chunks; c += gridDim.x * blockDim.x) {
        int64_t off[ST_EWR_MAXOPS];
        st_ewr_offsets<VEC>(a, c, off);
        const T *src = (const T *)a.ptr[1] + off[1];
        T *dst = (T *)a.ptr[0] + off[0];
        if (VEC > 1 && a.istride[1] == 1) {
            *(st_vec<T, VEC> *)dst = *(const st_vec<T, VEC> *)src;
        } else {
            st_vec<T, VEC> v;
#pragma unroll
            for (int e = 0; e < VEC; e++) v.v[e] = src[e * a.istride[1]];
            if (VEC > 1) *(st_vec<T, VEC> *)dst = v;
            else dst[0] = v.v[0];
        }
    }
}

/* dst = src (same sizes, element size es, any strides), or false when
 * the walk does not fit the fast path. */
static inline bool st_ewr_copy(cudaStream_t s, int rank, const int64_t *sizes, void *dst, const int64_t *dst_strides,
                               const void *src, const int64_t *src_strides, size_t es)
{
    st_walk w = st_walk2(rank, sizes, dst_strides, src_strides);
    st_ewr a;
    int vec;
    void *ptr[2] = {dst, (void *)src};
    if (w.n == 0) return true;
    if (!st_ewr_make(w, ptr, es, &a, &vec, true)) return false;
    const int threads = 256;
    unsigned blocks = st_blocks(a.n_chunks, threads);
#define ST_EWC_T(T)                                                                                                    \
    do {                                                                                                               \
        switch (vec) {                                                                                                 \
        case 16: st_ewr_copy_kernel<T, 16><<<blocks, threads, 0, s>>>(a); break;                                       \
        case 8: st_ewr_copy_kernel<T, 8><<<blocks, threads, 0, s>>>(a); break;                                         \
        case 4: st_ewr_copy_kernel<T, 4><<<blocks, threads, 0, s>>>(a); break;                                         \
        case 2: st_ewr_copy_kernel<T, 2><<<blocks, threads, 0, s>>>(a); break;                                         \
        default: st_ewr_copy_kernel<T, 1><<<blocks, threads, 0, s>>>(a); break;                                        \
        }                                                                                                              \
    } while (0)
    switch (es) {
    case 1: ST_EWC_T(uint8_t); return true;
    case 2: ST_EWC_T(uint16_t); return true;
    case 4: ST_EWC_T(uint32_t); return true;
    case 8: ST_EWC_T(uint64_t); return true;
    default: return false;
    }
#undef ST_EWC_T
}

#endif
