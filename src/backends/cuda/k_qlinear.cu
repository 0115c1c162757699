/*
 * k_qlinear.cu — the quantized elementwise ops on CUDA: QLinearLookup,
 * QLinearConcat, QLinearAdd and QLinearMul, the ops a QDQ model's
 * elementwise groups fuse into (passes/fuse_qdq.c), bit-identical with
 * the CPU's backends/cpu/k_qlinear.c and OpenCL's k_qlinear.c:
 *   - Lookup: y = table[x], the table the fusion computed with the CPU's
 *     kernels;
 *   - Concat: each input through a table of its requantization,
 *     q_round((float)(x - x_zp) * x_scale / y_scale) + y_zp, built on the
 *     host with the CPU's arithmetic;
 *   - Add / Mul: (float)(a - a_zp) * a_scale, the same for b, the float op,
 *     then / c_scale quantized; every step rounded on its own (__fmul_rn,
 *     __fadd_rn, __fdiv_rn: no contraction into an fma, IEEE division).
 * Why on the device: without them a fused QDQ model bounced its int8
 * tensors to the CPU for each of these ops, so CUDA did not declare
 * ST_CAP_QDQ and ran QDQ models unfused, f32 between Q/DQ pairs, whose
 * float convs round boundary values differently from ONNX Runtime's
 * integer ones (the H200 QDQ YOLOv8n: up to 6.97, about 3 output steps).
 *
 * Scales and zero points are read on the host once, when the command is
 * prepared: the fusion makes these ops from constant ones only, and an
 * exported model's are initializers; accepts refuses others (they run on
 * the CPU).
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cuda/common.cuh"
#include "ops/qlinear.h"

#define THREADS 256
/* QLinearConcat inputs (scale and zero point inputs included) accepts takes */
#define QCONCAT_MAX_IN 3002

struct qtab {
    uint8_t t[256];
};

struct qbin_p {
    float sa, sb, sc;
    int za, zb, zc;
    bool a_signed, c_signed, mul;
};

/* What prepare read: the binary ops' parameters, or the tables (the
 * lookup's one, one per Concat input). */
struct ql_priv {
    qbin_p bin;
    int n_tab;
    qtab tab[1];
};

static bool is8(st_dtype t) { return t == ST_U8 || t == ST_I8; }

static bool present(const st_knode *n, int i) { return i < n->n_in && n->views[i].rank >= 0; }

/* Input i, when present, is a constant of the type it must have (f32
 * scale, 8-bit zero point). */
static bool const_param(const st_knode *n, int i, bool scale, char *why, size_t len)
{
    if (!present(n, i)) return scale ? st_kernel_refuse(why, len, "no scale at input %d", i) : true;
    if (!n->data[i]) return st_kernel_refuse(why, len, "a scale or zero point (input %d) computed at run time", i);
    st_dtype t = n->views[i].dtype;
    if (scale ? t != ST_F32 : !is8(t)) return st_kernel_refuse(why, len, "a %s scale or zero point (input %d)", st_dtype_name(t), i);
    return true;
}

static float scale_of(const st_knode *n, int i) { return st_load_f32(n->views[i].dtype, n->data[i]); }
static int32_t zp_of(const st_knode *n, int i)
{
    return present(n, i) && n->data[i] ? (int32_t)st_load_i64(n->views[i].dtype, n->data[i]) : 0;
}

/* Every operand but the parameters is 8-bit. */
static bool bytes_only(const st_knode *n, const bool *param, char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++)
        if (n->views[i].rank >= 0 && !(i < n->n_in && param[i]) && !is8(n->views[i].dtype))
            return st_kernel_refuse(why, len, "a %s operand %d", st_dtype_name(n->views[i].dtype), i);
    return true;
}

static bool accepts_qbinary(const st_knode *n, char *why, size_t len)
{
    const bool param[8] = {false, true, true, false, true, true, true, true};
    if (n->n_in != 8 && n->n_in != 7) return st_kernel_refuse(why, len, "%d inputs", n->n_in);
    for (int i = 1; i < 8; i++)
        if (param[i] && !const_param(n, i, i == 1 || i == 4 || i == 6, why, len)) return false;
    return bytes_only(n, param, why, len);
}

static bool accepts_qlookup(const st_knode *n, char *why, size_t len)
{
    const st_qlut_state *s = (const st_qlut_state *)n->state;
    if (s->kind != 2) return st_kernel_refuse(why, len, "QLinearSigmoid / QLinearLeakyRelu");
    if (!s->has_table && !(present(n, 1) && n->data[1])) return st_kernel_refuse(why, len, "a table computed at run time");
    const bool param[2] = {false, true};
    return bytes_only(n, param, why, len);
}

static bool accepts_qconcat(const st_knode *n, char *why, size_t len)
{
    bool param[QCONCAT_MAX_IN];
    if (n->n_in > QCONCAT_MAX_IN) return st_kernel_refuse(why, len, "%d inputs (at most %d)", n->n_in, QCONCAT_MAX_IN);
    for (int i = 0; i < n->n_in; i++) {
        param[i] = i < 2 || (i - 2) % 3 != 0;
        if (param[i] && !const_param(n, i, i == 0 || (i >= 2 && (i - 2) % 3 == 1), why, len)) return false;
    }
    return bytes_only(n, param, why, len);
}

/* QuantizeLinear's rounding, as the CPU's q_round (host). */
static uint8_t q_round(float v, int32_t zp, bool u8)
{
    int32_t lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
    float r = isnan(v) ? 0.0f : rintf(v);
    if (r < (float)(lo - zp)) return (uint8_t)lo;
    if (r > (float)(hi - zp)) return (uint8_t)hi;
    return (uint8_t)((int32_t)r + zp);
}

static st_status prepare(const st_knode *n, void **priv)
{
    const char *op = n->op->name;
    bool concat = strcmp(op, "QLinearConcat") == 0, lookup = strcmp(op, "QLinearLookup") == 0;
    int n_tab = concat ? (n->n_in - 2) / 3 : 1;
    ql_priv *q = (ql_priv *)calloc(1, sizeof *q + (size_t)n_tab * sizeof(qtab));
    if (!q) return st_error(ST_ERR_NOMEM, "node '%s': out of memory for %s's parameters", n->node->name, op);
    q->n_tab = n_tab;
    if (lookup) {
        const st_qlut_state *s = (const st_qlut_state *)n->state;
        for (int b = 0; b < 256; b++)
            q->tab[0].t[b] = s->has_table ? s->table[b] : ((const uint8_t *)n->data[1])[b * n->views[1].strides[0]];
    } else if (concat) {
        bool yu = n->views[n->n_in].dtype == ST_U8;
        float ys = scale_of(n, 0);
        int32_t yz = zp_of(n, 1);
        for (int k = 0; k < n_tab; k++) {
            int x = 2 + 3 * k;
            bool xu = n->views[x].dtype == ST_U8;
            float xs = scale_of(n, x + 1);
            int32_t xz = zp_of(n, x + 2);
            for (int b = 0; b < 256; b++) {
                int32_t v = xu ? b : (int32_t)(int8_t)(uint8_t)b;
                float f = (float)(v - xz) * xs;
                q->tab[k].t[b] = q_round(f / ys, yz, yu);
            }
        }
    } else {
        const st_qbinary_state *s = (const st_qbinary_state *)n->state;
        q->bin.sa = scale_of(n, 1);
        q->bin.za = zp_of(n, 2);
        q->bin.sb = scale_of(n, 4);
        q->bin.zb = zp_of(n, 5);
        q->bin.sc = scale_of(n, 6);
        q->bin.zc = zp_of(n, 7);
        q->bin.a_signed = n->views[0].dtype == ST_I8;
        q->bin.c_signed = n->views[n->n_in].dtype == ST_I8;
        q->bin.mul = s->op == ST_QL_MUL;
    }
    *priv = q;
    return ST_OK;
}

static void release(void *priv) { free(priv); }

/* ---- y = table[x] ---- */

__global__ void qlut_kernel(st_walk w, uint8_t *y, const uint8_t *x, qtab t)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        y[off[0]] = t.t[x[off[1]]];
    }
}

/* y (data, shape and strides of ys) = tab[x], x broadcast to y's shape. */
static void lut(const st_kctx *k, uint8_t *y, const st_operand *ys, const st_operand *x, const qtab *tab)
{
    int64_t sx[ST_MAX_RANK];
    st_bcast(x, ys, sx);
    st_walk w = st_walk2(ys->rank, ys->sizes, ys->strides, sx);
    if (w.n) qlut_kernel<<<st_blocks(w.n, THREADS), THREADS, 0, st_stream(k)>>>(w, y, (const uint8_t *)x->data, *tab);
}

static st_status st_cuda_qlookup(const st_kctx *k)
{
    const ql_priv *q = (const ql_priv *)k->priv;
    lut(k, (uint8_t *)k->out[0].data, &k->out[0], &k->in[0], &q->tab[0]);
    return ST_OK;
}

static st_status st_cuda_qconcat(const st_kctx *k)
{
    const st_qconcat_state *s = (const st_qconcat_state *)k->state;
    const ql_priv *q = (const ql_priv *)k->priv;
    const st_operand *y = &k->out[0];
    int64_t at = 0;
    for (int t = 0; t < q->n_tab; t++) {
        const st_operand *x = &k->in[2 + 3 * t];
        st_operand slot = *y;
        slot.sizes[s->axis] = x->sizes[s->axis];
        slot.data = (uint8_t *)y->data + at * y->strides[s->axis];
        at += x->sizes[s->axis];
        lut(k, (uint8_t *)slot.data, &slot, x, &q->tab[t]);
    }
    return ST_OK;
}

/* ---- QLinearAdd, QLinearMul ---- */

/* round half to even, NaN to 0, saturate to [lo, hi] less zp, add zp */
__device__ __forceinline__ int requant(float f, int zp, int lo, int hi)
{
    float r = isnan(f) ? 0.0f : rintf(f);
    float flo = (float)(lo - zp), fhi = (float)(hi - zp);
    r = r < flo ? flo : r > fhi ? fhi : r;
    return (int)r + zp;
}

__global__ void qbinary_kernel(st_walk w, uint8_t *y, const uint8_t *a, const uint8_t *b, qbin_p p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        int va = p.a_signed ? (int)(int8_t)a[off[1]] : (int)a[off[1]];
        int vb = p.a_signed ? (int)(int8_t)b[off[2]] : (int)b[off[2]];
        float fa = __fmul_rn((float)(va - p.za), p.sa), fb = __fmul_rn((float)(vb - p.zb), p.sb);
        float f = p.mul ? __fmul_rn(fa, fb) : __fadd_rn(fa, fb);
        y[off[0]] = (uint8_t)requant(__fdiv_rn(f, p.sc), p.zc, p.c_signed ? -128 : 0, p.c_signed ? 127 : 255);
    }
}

static st_status st_cuda_qbinary(const st_kctx *k)
{
    const ql_priv *q = (const ql_priv *)k->priv;
    const st_operand *y = &k->out[0], *a = &k->in[0], *b = &k->in[3];
    int64_t sa[ST_MAX_RANK], sb[ST_MAX_RANK];
    st_bcast(a, y, sa);
    st_bcast(b, y, sb);
    st_walk w = st_walk3(y->rank, y->sizes, y->strides, sa, sb);
    if (w.n)
        qbinary_kernel<<<st_blocks(w.n, THREADS), THREADS, 0, st_stream(k)>>>(w, (uint8_t *)y->data, (const uint8_t *)a->data,
                                                                              (const uint8_t *)b->data, q->bin);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

extern "C" const st_kernel st_cuda_k_qlinear[] = {
    {"QLinearAdd", "com.microsoft", ST_CUDA_DT, st_cuda_qbinary, accepts_qbinary, prepare, release},
    {"QLinearMul", "com.microsoft", ST_CUDA_DT, st_cuda_qbinary, accepts_qbinary, prepare, release},
    {"QLinearLookup", "ai.strata", ST_CUDA_DT, st_cuda_qlookup, accepts_qlookup, prepare, release},
    {"QLinearConcat", "com.microsoft", ST_CUDA_DT, st_cuda_qconcat, accepts_qconcat, prepare, release},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
