/*
 * k_elementwise.cu — CUDA kernels of the elementwise ops: unary maps
 * (and Clip), binary ops with broadcasting, Sum/Max/Min/Mean, Where and
 * Cast.  Every operand is strided (stride 0 on broadcast dims, any output
 * strides: rule 5).  f32, f16 and bf16 compute in f32; integer types in
 * int64 with the CPU's wrapping semantics; f64 in f32 is not accepted (the
 * rows' CPU kernels handle f64 models, which do not run on CUDA).
 */
#include "backends/cuda/ew_rows.cuh"

#define THREADS 256

static bool float_class(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* ---- unary ---- */

struct unary_args {
    st_walk w;
    const void *x;
    void *y;
    st_dtype xt, yt;
    int code;
    float a, b, g, lo, hi;
    bool flt;
};

__global__ void unary_kernel(unary_args p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(p.w, i, off);
        if (p.flt) {
            float v = st_unary_f(p.code, st_ldf(p.xt, p.x, off[1]), p.a, p.b, p.g, p.lo, p.hi);
            if (p.code == ST_U_ISINF) {
                float x = st_ldf(p.xt, p.x, off[1]);
                v = isinf(x) && ((x > 0 && p.a != 0.0f) || (x < 0 && p.b != 0.0f)) ? 1.0f : 0.0f;
            }
            st_stf(p.yt, p.y, off[0], v);
        } else {
            int64_t x = st_ldi(p.xt, p.x, off[1]), v = x;
            switch ((st_unary)p.code) {
            case ST_U_RELU: v = x > 0 ? x : 0; break;
            case ST_U_NEG: v = (int64_t)(0 - (uint64_t)x); break;
            case ST_U_ABS: v = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; break;
            case ST_U_SIGN: v = (x > 0) - (x < 0); break;
            case ST_U_CLIP: v = x < (int64_t)p.lo ? (int64_t)p.lo : x > (int64_t)p.hi ? (int64_t)p.hi : x; break;
            case ST_U_NOT: v = x == 0; break;
            case ST_U_BITWISE_NOT: v = ~x; break;
            default: break;
            }
            st_sti(p.yt, p.y, off[0], v);
        }
    }
}

static st_status launch_unary(const st_kctx *k, int code, float a, float b, float g, float lo, float hi)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    unary_args p;
    p.w = st_walk2(y->rank, y->sizes, y->strides, x->strides);
    if (p.w.n == 0) return ST_OK;
    p.x = x->data;
    p.y = y->data;
    p.xt = x->dtype;
    p.yt = y->dtype;
    p.code = code;
    p.a = a;
    p.b = b;
    p.g = g;
    p.lo = lo;
    p.hi = hi;
    p.flt = float_class(x->dtype) || x->dtype == ST_BOOL;
    if (float_class(x->dtype) && x->dtype == y->dtype && code != ST_U_ISINF && code != ST_U_ISNAN) {
        void *ptr[2] = {y->data, x->data};
        if (st_ew_fast(st_stream(k), x->dtype, 1, p.w, ptr, code, a, b, g, lo, hi)) return ST_OK;
    }
    unary_kernel<<<st_blocks(p.w.n, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

extern "C" st_status st_cuda_unary(const st_kctx *k)
{
    const st_ew_state *s = (const st_ew_state *)k->state;
    float a = s->alpha, b = s->beta;
    if (s->code == ST_U_ISINF) {
        a = (float)s->detect_pos;
        b = (float)s->detect_neg;
    }
    return launch_unary(k, s->code, a, b, s->gamma, 0.0f, 0.0f);
}

/* Bounds given as inputs are scalars in device memory; the bounds enter
 * the kernel by value, so they are read with a tiny kernel instead: the
 * clip kernel takes pointers and reads them itself. */
struct clip_args {
    st_walk w;
    const void *x, *lo, *hi;
    void *y;
    st_dtype t;
    float flo, fhi;
};

__global__ void clip_kernel(clip_args p)
{
    float lo = p.lo ? st_ldf(p.t, p.lo, 0) : p.flo, hi = p.hi ? st_ldf(p.t, p.hi, 0) : p.fhi;
    int64_t ilo = p.lo ? st_ldi(p.t, p.lo, 0) : INT64_MIN, ihi = p.hi ? st_ldi(p.t, p.hi, 0) : INT64_MAX;
    bool flt = st_is_f32_class(p.t);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(p.w, i, off);
        if (flt) {
            float v = st_ldf(p.t, p.x, off[1]);
            v = v < lo ? lo : v; /* then max: max wins where min > max, as ops/scalar_math.h */
            st_stf(p.t, p.y, off[0], v > hi ? hi : v);
        } else {
            int64_t v = st_ldi(p.t, p.x, off[1]);
            v = v < ilo ? ilo : v;
            st_sti(p.t, p.y, off[0], v > ihi ? ihi : v);
        }
    }
}

extern "C" st_status st_cuda_clip(const st_kctx *k)
{
    const st_ew_state *s = (const st_ew_state *)k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    clip_args p;
    p.w = st_walk2(y->rank, y->sizes, y->strides, x->strides);
    if (p.w.n == 0) return ST_OK;
    p.x = x->data;
    p.y = y->data;
    p.t = x->dtype;
    p.lo = k->n_in > 1 ? k->in[1].data : NULL;
    p.hi = k->n_in > 2 ? k->in[2].data : NULL;
    p.flo = s->alpha;
    p.fhi = s->beta;
    clip_kernel<<<st_blocks(p.w.n, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

/* ---- binary ---- */

struct binary_args {
    st_walk w;
    const void *a, *b;
    void *y;
    st_dtype at, bt, yt;
    int code;
    bool flt, fmod_mode, uns;
};

__global__ void binary_kernel(binary_args p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(p.w, i, off);
        if (p.flt) st_stf(p.yt, p.y, off[0], st_binary_f(p.code, st_ldf(p.at, p.a, off[1]), st_ldf(p.bt, p.b, off[2])));
        else st_sti(p.yt, p.y, off[0], st_binary_i(p.code, st_ldi(p.at, p.a, off[1]), st_ldi(p.bt, p.b, off[2]), p.fmod_mode, p.uns));
    }
}

static st_status launch_binary(const st_kctx *k, const st_operand *a, const st_operand *b, const st_operand *y, int code,
                               bool fmod_mode)
{
    const st_operand *in[2] = {a, b};
    binary_args p;
    p.w = st_walk_ew(y, 2, in);
    if (p.w.n == 0) return ST_OK;
    p.a = a->data;
    p.b = b->data;
    p.y = y->data;
    p.at = a->dtype;
    p.bt = b->dtype;
    p.yt = y->dtype;
    p.code = code;
    p.flt = float_class(a->dtype) && (float_class(b->dtype) || code == ST_B_POW);
    p.fmod_mode = fmod_mode;
    p.uns = a->dtype == ST_U8 || a->dtype == ST_U16 || a->dtype == ST_U32 || a->dtype == ST_U64;
    if (float_class(a->dtype) && a->dtype == b->dtype && a->dtype == y->dtype) {
        void *ptr[3] = {y->data, a->data, b->data};
        if (st_ew_fast(st_stream(k), y->dtype, 2, p.w, ptr, code, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f)) return ST_OK;
    }
    binary_kernel<<<st_blocks(p.w.n, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

extern "C" st_status st_cuda_binary(const st_kctx *k)
{
    const st_ew_state *s = (const st_ew_state *)k->state;
    st_operand b = k->in[1];
    st_ew_legacy_b(s, &b.rank, b.sizes, b.strides);
    return launch_binary(k, &k->in[0], &b, &k->out[0], s->code, s->fmod != 0);
}

/* Mean's final division: y = y / n, in place. */
__global__ void scale_kernel(st_walk w, void *y, st_dtype t, float inv)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        st_stf(t, y, off[0], st_ldf(t, y, off[0]) * inv);
    }
}

extern "C" st_status st_cuda_cast(const st_kctx *k);

extern "C" st_status st_cuda_variadic(const st_kctx *k)
{
    const st_ew_state *s = (const st_ew_state *)k->state;
    const st_operand *y = &k->out[0];
    /* y = in0 broadcast, then y = y op in_i for each further input */
    st_operand x0 = k->in[0];
    int64_t sx[ST_MAX_RANK];
    st_bcast(&k->in[0], y, sx);
    x0.rank = y->rank;
    memcpy(x0.sizes, y->sizes, sizeof x0.sizes);
    memcpy(x0.strides, sx, sizeof x0.strides);
    st_kctx one = *k;
    one.in = &x0;
    one.n_in = 1;
    ST_TRY(st_cuda_cast(&one));
    for (int i = 1; i < k->n_in; i++) ST_TRY(launch_binary(k, y, &k->in[i], y, s->code, false));
    if (s->code == ST_B_MEAN && k->n_in > 1) {
        st_walk w = st_walk1(y->rank, y->sizes, y->strides);
        if (w.n) scale_kernel<<<st_blocks(w.n, THREADS), THREADS, 0, st_stream(k)>>>(w, y->data, y->dtype, 1.0f / (float)k->n_in);
    }
    return ST_OK;
}

/* ---- Where and Cast ---- */

struct where_args {
    st_walk w;
    const uint8_t *c;
    const char *x, *yv;
    char *out;
    int es;
};

__global__ void where_kernel(where_args p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(p.w, i, off);
        const char *src = p.c[off[1]] ? p.x + off[2] * p.es : p.yv + off[3] * p.es;
        char *dst = p.out + off[0] * p.es;
        for (int b = 0; b < p.es; b++) dst[b] = src[b];
    }
}

extern "C" st_status st_cuda_where(const st_kctx *k)
{
    const st_operand *out = &k->out[0];
    const st_operand *in[3] = {&k->in[0], &k->in[1], &k->in[2]};
    where_args p;
    p.w = st_walk_ew(out, 3, in);
    if (p.w.n == 0) return ST_OK;
    p.c = (const uint8_t *)k->in[0].data;
    p.x = (const char *)k->in[1].data;
    p.yv = (const char *)k->in[2].data;
    p.out = (char *)out->data;
    p.es = (int)st_dtype_size(out->dtype);
    where_kernel<<<st_blocks(p.w.n, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

struct cast_args {
    st_walk w;
    const void *x;
    void *y;
    st_dtype xt, yt;
    bool via_float;
};

__global__ void cast_kernel(cast_args p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(p.w, i, off);
        if (p.via_float) {
            float v = st_ldf(p.xt, p.x, off[1]);
            if (p.yt == ST_F32 || p.yt == ST_F16 || p.yt == ST_BF16 || p.yt == ST_BOOL) st_stf(p.yt, p.y, off[0], v);
            else st_sti(p.yt, p.y, off[0], isnan(v) ? 0 : (int64_t)fmaxf(fminf(v, 9.2e18f), -9.2e18f));
        } else {
            st_sti(p.yt, p.y, off[0], st_ldi(p.xt, p.x, off[1]));
        }
    }
}

extern "C" st_status st_cuda_cast(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    cast_args p;
    p.w = st_walk2(y->rank, y->sizes, y->strides, x->strides);
    if (p.w.n == 0) return ST_OK;
    p.x = x->data;
    p.y = y->data;
    p.xt = x->dtype;
    p.yt = y->dtype;
    p.via_float = float_class(x->dtype) || float_class(y->dtype);
    cast_kernel<<<st_blocks(p.w.n, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

#define UNARY_K(name, code, types, a, b, g) {#name, "", ST_CUDA_DT, st_cuda_unary, st_cuda_accepts_no_f64, NULL, NULL},
#define BINARY_K(name, code, types, to_bool) {#name, "", ST_CUDA_DT, st_cuda_binary, st_cuda_accepts_no_f64, NULL, NULL},
#define VARIADIC_K(name, code, types) {#name, "", ST_CUDA_DT, st_cuda_variadic, st_cuda_accepts_no_f64, NULL, NULL},
extern "C" const st_kernel st_cuda_k_elementwise[] = {
    ST_UNARY_OPS(UNARY_K)
    ST_BINARY_OPS(BINARY_K)
    ST_VARIADIC_OPS(VARIADIC_K)
    {"Where", "", ST_CUDA_DT, st_cuda_where, st_cuda_accepts_no_f64, NULL, NULL},
    {"Clip", "", ST_CUDA_DT, st_cuda_clip, st_cuda_accepts_no_f64, NULL, NULL},
    {"Cast", "", ST_CUDA_DT, st_cuda_cast, st_cuda_accepts_no_f64, NULL, NULL},
    {"CastLike", "", ST_CUDA_DT, st_cuda_cast, st_cuda_accepts_no_f64, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
