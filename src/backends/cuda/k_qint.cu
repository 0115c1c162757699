/*
 * k_qint.cu — the integer quantization ops on CUDA: DynamicQuantizeLinear,
 * MatMulInteger / QLinearMatMul and ConvInteger / QLinearConv, 8-bit,
 * bit-identical with the CPU backend (backends/cpu/k_misc_quant.c and
 * gemm_s8.c's scalar epilogue) and with the OpenCL kernels (qint.cl):
 *   - sums of (x - x_zp) * (w - w_zp) in uint32 (int32 with wrap-around),
 *     plus QLinearConv's int32 bias;
 *   - requantization with the multiplier (a_scale * b_scale) / y_scale as
 *     one f32 expression per element, (float)sum * multiplier rounded
 *     once (__fmul_rn / __fdiv_rn: no contraction, IEEE division), rintf
 *     (half to even), NaN to 0, clamped to the range less the zero
 *     point, plus the zero point;
 *   - DynamicQuantizeLinear's range over [min(x, 0), max(x, 0)] (NaN
 *     ignored, as the CPU's compares are), scale = (max - min) / 255, the
 *     zero point the quantized -min / scale, then each x / scale.
 * Why: a dynamically quantized model (ORT's quantize_dynamic) is
 * DynamicQuantizeLinear -> ConvInteger / MatMulInteger -> Cast -> Mul per
 * layer; without these kernels its every conv ran on the CPU with two
 * transfers around it.  The convs, and the matmuls whose A has one zero
 * point and scale and whose B is not batched, run as qconv_igemm.cu's
 * tensor-core implicit GEMM where it takes them (not cuDNN/cuBLASLt int8:
 * those want NHWC / 4-aligned channels and have no zero points); the rest
 * (depthwise-like convs, per-row A parameters, batched B) run on the
 * direct kernels here, one output per thread, which are also the exact
 * reference the GEMM is tested against.  Padding contributes nothing (the
 * spec pads with x's zero point): padded taps are skipped.  What the QDQ
 * fusion (passes/fuse_qdq.c) adds is taken too: QLinearConv's
 * requantization type and table (the elementwise ops that followed the
 * conv), QLinearMatMul's int32 bias per column (a Gemm's).  The
 * geometry (sizes, strides, each parameter's step) and the accepts checks
 * are the OpenCL backend's too: ops/lower_qint.c computes them once.
 */
#include "backends/cuda/qint.cuh"
#include "ops/lower_qint.h"
#include "ops/misc.h"

#define THREADS 256
#define QMM_BATCH ST_LQ_BATCH
/* DynamicQuantizeLinear's partial ranges (one per block), in the
 * stream's workspace: 2 floats each, then the scale and zero point */
#define DYNQ_BLOCKS 256

/* What the OpenCL kernels refuse too (ops/lower_qint.c). */
static bool accepts_qconv(const st_knode *n, char *why, size_t len)
{
    return st_lq_accepts_requant(n, why, len) && st_lq_accepts_operands(n, why, len, ((const st_qconv_state *)n->state)->qlinear);
}

/* ---- DynamicQuantizeLinear ---- */

__global__ void dynq_range(st_walk w, const void *x, st_dtype xt, float *mm)
{
    __shared__ float smn[THREADS], smx[THREADS];
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        float v = st_ldf(xt, x, off[0]);
        if (v < mn) mn = v;
        if (v > mx) mx = v;
    }
    smn[threadIdx.x] = mn;
    smx[threadIdx.x] = mx;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if ((int)threadIdx.x < h) {
            if (smn[threadIdx.x + h] < smn[threadIdx.x]) smn[threadIdx.x] = smn[threadIdx.x + h];
            if (smx[threadIdx.x + h] > smx[threadIdx.x]) smx[threadIdx.x] = smx[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mm[2 * blockIdx.x] = smn[0];
        mm[2 * blockIdx.x + 1] = smx[0];
    }
}

/* One thread: the blocks' range, the scale and zero point (kept after the
 * parts for dynq_apply) and the scalar outputs where present. */
__global__ void dynq_params(float *mm, int parts, void *ys, st_dtype yst, uint8_t *yz)
{
    float mn = 0.0f, mx = 0.0f;
    for (int g = 0; g < parts; g++) {
        if (mm[2 * g] < mn) mn = mm[2 * g];
        if (mm[2 * g + 1] > mx) mx = mm[2 * g + 1];
    }
    float scale = __fdiv_rn(mx - mn, 255.0f);
    int zp = scale != 0.0f ? requant(__fdiv_rn(0.0f - mn, scale), 0, 0, 255) : 0;
    mm[2 * parts] = scale;
    mm[2 * parts + 1] = (float)zp;
    if (ys) st_stf(yst, ys, 0, scale);
    if (yz) *yz = (uint8_t)zp;
}

__global__ void dynq_apply(st_walk w, uint8_t *y, const void *x, st_dtype xt, const float *mm, int parts)
{
    float scale = mm[2 * parts];
    int zp = (int)mm[2 * parts + 1];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < w.n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[ST_CUDA_MAXOPS];
        st_walk_offsets(w, i, off);
        y[off[0]] = (uint8_t)(scale != 0.0f ? requant(__fdiv_rn(st_ldf(xt, x, off[1]), scale), zp, 0, 255) : zp);
    }
}

static st_status st_cuda_dynamic_quantize(const st_kctx *k)
{
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    float *mm = (float *)ctx->workspace;
    st_walk wx = st_walk1(x->rank, x->sizes, x->strides);
    int parts = (int)st_blocks(wx.n, THREADS);
    if (parts > DYNQ_BLOCKS) parts = DYNQ_BLOCKS;
    cudaStream_t s = st_stream(k);
    dynq_range<<<parts, THREADS, 0, s>>>(wx, x->data, x->dtype, mm);
    void *ys = k->n_out > 1 ? k->out[1].data : NULL;
    uint8_t *yz = k->n_out > 2 ? (uint8_t *)k->out[2].data : NULL;
    dynq_params<<<1, 1, 0, s>>>(mm, parts, ys, ys ? k->out[1].dtype : ST_F32, yz);
    st_walk w = st_walk2(y->rank, y->sizes, y->strides, x->strides);
    if (w.n == 0) return ST_OK;
    dynq_apply<<<st_blocks(w.n, THREADS), THREADS, 0, s>>>(w, (uint8_t *)y->data, x->data, x->dtype, mm, parts);
    return ST_OK;
}

/* ---- MatMulInteger, QLinearMatMul ---- */

/* An operand's element (batch b, row i, column j) is at
 * data + sum(b[d] * bs[d]) + i * rs + j * cs; a per-row parameter (of A)
 * has cs 0, a per-column one (of B) rs 0, a scalar all strides 0.
 * data NULL: absent. */
struct qmm_op {
    const void *data;
    st_dtype dt;
    int64_t rs, cs, bs[QMM_BATCH];
};

struct qmm_args {
    int nb;
    int64_t bn[QMM_BATCH], m, n, k, total;
    void *y;
    /* y, a, b, a_zp, b_zp, a_scale, b_scale, y_scale, y_zp, and
     * QLinearMatMul's int32 bias per column (data NULL: none) */
    qmm_op o[10];
};

__device__ __forceinline__ int64_t qmm_at(const qmm_op &o, const int64_t *b, int64_t i, int64_t j)
{
    return b[0] * o.bs[0] + b[1] * o.bs[1] + b[2] * o.bs[2] + b[3] * o.bs[3] + i * o.rs + j * o.cs;
}

__global__ void qmatmul_kernel(qmm_args p)
{
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < p.total; idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = idx % p.n, t = idx / p.n, i = t % p.m;
        t /= p.m;
        int64_t bi[QMM_BATCH] = {0, 0, 0, 0};
        for (int d = p.nb - 1; d >= 0; d--) {
            bi[d] = t % p.bn[d];
            t /= p.bn[d];
        }
        const qmm_op &oy = p.o[0], &oa = p.o[1], &ob = p.o[2];
        bool sa = oa.dt == ST_I8, sb = ob.dt == ST_I8;
        int za = p.o[3].data ? (int)st_ldi(p.o[3].dt, p.o[3].data, qmm_at(p.o[3], bi, i, j)) : 0;
        int zb = p.o[4].data ? (int)st_ldi(p.o[4].dt, p.o[4].data, qmm_at(p.o[4], bi, i, j)) : 0;
        int64_t pa = qmm_at(oa, bi, i, 0), pb = qmm_at(ob, bi, 0, j);
        uint32_t acc = 0;
        for (int64_t q = 0; q < p.k; q++)
            acc += (uint32_t)((ld8(oa.data, pa + q * oa.cs, sa) - za) * (ld8(ob.data, pb + q * ob.rs, sb) - zb));
        int64_t off = qmm_at(oy, bi, i, j);
        if (oy.dt == ST_I32) {
            ((int32_t *)p.y)[off] = (int32_t)acc;
            continue;
        }
        if (p.o[9].data) acc += (uint32_t)st_ldi(p.o[9].dt, p.o[9].data, qmm_at(p.o[9], bi, i, j));
        float s = __fmul_rn(st_ldf(p.o[5].dt, p.o[5].data, qmm_at(p.o[5], bi, i, j)),
                            st_ldf(p.o[6].dt, p.o[6].data, qmm_at(p.o[6], bi, i, j)));
        s = __fdiv_rn(s, st_ldf(p.o[7].dt, p.o[7].data, 0));
        int zy = p.o[8].data ? (int)st_ldi(p.o[8].dt, p.o[8].data, 0) : 0;
        bool s8 = oy.dt == ST_I8;
        ((uint8_t *)p.y)[off] = (uint8_t)requant(__fmul_rn((float)(int32_t)acc, s), zy, s8 ? -128 : 0, s8 ? 127 : 255);
    }
}

static const st_operand *opt_in(const st_kctx *k, int i) { return i < k->n_in && k->in[i].data ? &k->in[i] : NULL; }

/* The device address of operand i (ops/lower_qint.h's numbering), NULL
 * when absent (-1). */
static const void *operand_data(const st_kctx *k, int i)
{
    return i < 0 ? NULL : i < k->n_in ? k->in[i].data : k->out[i - k->n_in].data;
}

/* A lowered scalar or per-channel parameter as the kernels take it:
 * address and dtype (U8 when absent, never read). */
static void param_of(const st_kctx *k, int operand, st_dtype dt, const void **data, st_dtype *out_dt)
{
    *data = operand_data(k, operand);
    *out_dt = operand < 0 ? ST_U8 : dt;
}

/* A per-column parameter of B (n columns) as one value (step 0) or a
 * vector along its last dim; false for anything else (per batch). */
static bool col_param(const st_operand *v, int64_t n, const void **data, st_dtype *dt, int64_t *step)
{
    *data = v ? v->data : NULL;
    *dt = v ? v->dtype : ST_U8;
    *step = 0;
    if (!v || st_operand_numel(v) == 1) return true;
    if (st_operand_numel(v) != n || v->sizes[v->rank - 1] != n) return false;
    *step = v->strides[v->rank - 1];
    return true;
}

/* A MatMulInteger / QLinearMatMul (lowered as q) as qconv_igemm.cu's
 * GEMM, so that the common dynamically quantized form (activations A
 * with one zero point and scale, weights B [K, N] with one or one per
 * column) runs on the tensor cores: Y^T = B^T A^T is a 1x1 conv over the
 * rows of A, whose output channels are B's columns (w = B^T, w_zp and
 * w_scale per column), input channels K (x = A^T, x_zp and x_scale A's)
 * and images A's one batch dim, if any; a bias per column is the conv's
 * per output channel.  False where that does not fit: A's parameters per
 * row, B batched, or more than one batch dim. */
static bool qmm_as_conv(const st_kctx *k, bool qlinear, const st_lq_matmul *q, qconv_args *p)
{
    const st_operand *b = &k->in[qlinear ? 3 : 1], *az = opt_in(k, 2), *bz = opt_in(k, qlinear ? 5 : 3);
    const st_lq_mm_op *oy = &q->o[ST_LQ_Y], *oa = &q->o[ST_LQ_A], *ob = &q->o[ST_LQ_B];
    if (q->nb > 1) return false;
    for (int d = 0; d + 2 < b->rank; d++)
        if (b->sizes[d] != 1) return false;
    if (az && st_operand_numel(az) != 1) return false;
    if (qlinear && st_operand_numel(&k->in[1]) != 1) return false;
    memset(p, 0, sizeof *p);
    if (!col_param(bz, q->n, &p->wz, &p->wz_dt, &p->wz_step)) return false;
    if (qlinear && !col_param(&k->in[4], q->n, &p->wsc, &p->wsc_dt, &p->wsc_step)) return false;
    /* QLinearMatMul's int32 bias per column (the QDQ fusion's Gemm) */
    if (qlinear && !col_param(opt_in(k, 8), q->n, &p->bias, &p->b_dt, &p->b_step)) return false;
    p->total = st_operand_numel(&k->out[0]);
    p->nimg = q->nb ? q->bn[0] : 1;
    p->groups = 1;
    p->cg = q->k;
    p->mg = q->n;
    for (int i = 0; i < 3; i++) {
        p->is[i] = p->os[i] = i == 2 ? q->m : 1;
        p->k[i] = p->s[i] = p->d[i] = 1;
    }
    /* x = A^T: images by A's batch stride, channels along a row of A,
     * pixels down its column; w = B^T; y^T likewise (a 1-D A or B has
     * row / column stride 0 in the lowering) */
    p->xs[0] = oa->bs[0];
    p->xs[1] = oa->cs;
    p->xs[4] = oa->rs;
    p->ws[0] = ob->cs;
    p->ws[1] = ob->rs;
    p->ys[0] = oy->bs[0];
    p->ys[1] = oy->cs;
    p->ys[4] = oy->rs;
    p->x = operand_data(k, oa->operand);
    p->w = operand_data(k, ob->operand);
    p->y = k->out[0].data;
    p->x_dt = oa->dt;
    p->w_dt = ob->dt;
    p->y_dt = oy->dt;
    param_of(k, q->o[ST_LQ_AZ].operand, q->o[ST_LQ_AZ].dt, &p->xz, &p->xz_dt);
    if (qlinear) {
        param_of(k, q->o[ST_LQ_AS].operand, q->o[ST_LQ_AS].dt, &p->xsc, &p->xsc_dt);
        param_of(k, q->o[ST_LQ_YS].operand, q->o[ST_LQ_YS].dt, &p->ysc, &p->ysc_dt);
        param_of(k, q->o[ST_LQ_YZ].operand, q->o[ST_LQ_YZ].dt, &p->yz, &p->yz_dt);
    }
    return true;
}

static st_status st_cuda_qmatmul(const st_kctx *k)
{
    const st_qmatmul_state *s = (const st_qmatmul_state *)k->state;
    if (st_operand_numel(&k->out[0]) == 0) return ST_OK;
    st_lq_matmul q;
    st_lower_qmatmul(k, &q);
    qconv_args c;
    if (qmm_as_conv(k, s->qlinear, &q, &c) && st_qconv_igemm_takes(c)) {
        st_qconv_igemm(c, (const st_cuda_ctx *)k->dev);
        return ST_OK;
    }
    qmm_args p;
    memset(&p, 0, sizeof p);
    p.nb = q.nb;
    p.m = q.m;
    p.k = q.k;
    p.n = q.n;
    p.total = q.m * q.n * q.batches;
    for (int d = 0; d < q.nb; d++) p.bn[d] = q.bn[d];
    p.y = k->out[0].data;
    /* absent operands: data NULL, dt 0 */
    for (int i = 0; i < ST_LQ_MM_OPS; i++) {
        const st_lq_mm_op *o = &q.o[i];
        p.o[i].data = operand_data(k, o->operand);
        p.o[i].dt = o->dt;
        p.o[i].rs = o->rs;
        p.o[i].cs = o->cs;
        for (int d = 0; d < QMM_BATCH; d++) p.o[i].bs[d] = o->bs[d];
    }
    qmatmul_kernel<<<st_blocks(p.total, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

/* ---- ConvInteger, QLinearConv ---- */

__global__ void qconv_kernel(qconv_args p)
{
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < p.total; idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t o2 = idx % p.os[2], r = idx / p.os[2];
        int64_t o1 = r % p.os[1];
        r /= p.os[1];
        int64_t o0 = r % p.os[0];
        r /= p.os[0];
        int64_t m = r % (p.groups * p.mg), n = r / (p.groups * p.mg);
        int64_t g = m / p.mg;
        bool sx = p.x_dt == ST_I8, sw = p.w_dt == ST_I8;
        int zx = p.xz ? (int)st_ldi(p.xz_dt, p.xz, 0) : 0;
        int zw = p.wz ? (int)st_ldi(p.wz_dt, p.wz, m * p.wz_step) : 0;
        int64_t st0 = o0 * p.s[0] - p.pb[0], st1 = o1 * p.s[1] - p.pb[1], st2 = o2 * p.s[2] - p.pb[2];
        uint32_t acc = 0;
        for (int64_t c = 0; c < p.cg; c++) {
            int64_t xc = n * p.xs[0] + (g * p.cg + c) * p.xs[1];
            int64_t wc = m * p.ws[0] + c * p.ws[1];
            for (int64_t k0 = 0; k0 < p.k[0]; k0++) {
                int64_t i0 = st0 + k0 * p.d[0];
                if (i0 < 0 || i0 >= p.is[0]) continue;
                for (int64_t k1 = 0; k1 < p.k[1]; k1++) {
                    int64_t i1 = st1 + k1 * p.d[1];
                    if (i1 < 0 || i1 >= p.is[1]) continue;
                    int64_t xr = xc + i0 * p.xs[2] + i1 * p.xs[3], wr = wc + k0 * p.ws[2] + k1 * p.ws[3];
                    for (int64_t k2 = 0; k2 < p.k[2]; k2++) {
                        int64_t i2 = st2 + k2 * p.d[2];
                        if (i2 < 0 || i2 >= p.is[2]) continue;
                        acc += (uint32_t)((ld8(p.x, xr + i2 * p.xs[4], sx) - zx) * (ld8(p.w, wr + k2 * p.ws[4], sw) - zw));
                    }
                }
            }
        }
        qconv_store(p, acc, m, n * p.ys[0] + m * p.ys[1] + o0 * p.ys[2] + o1 * p.ys[3] + o2 * p.ys[4]);
    }
}

static st_status st_cuda_qconv(const st_kctx *k)
{
    const st_qconv_state *s = (const st_qconv_state *)k->state;
    qconv_args p;
    memset(&p, 0, sizeof p);
    p.total = st_operand_numel(&k->out[0]);
    if (p.total == 0) return ST_OK;
    st_lq_conv q;
    st_lower_qconv(k, &q);
    for (int i = 0; i < 3; i++) {
        p.is[i] = q.is[i];
        p.os[i] = q.os[i];
        p.k[i] = q.k[i];
        p.s[i] = q.s[i];
        p.d[i] = q.d[i];
        p.pb[i] = q.pb[i];
    }
    p.nimg = q.nimg;
    p.groups = q.groups;
    p.cg = q.cg;
    p.mg = q.mg;
    for (int i = 0; i < 5; i++) {
        p.xs[i] = q.xs[i];
        p.ws[i] = q.ws[i];
        p.ys[i] = q.ys[i];
    }
    const st_operand *x = &k->in[q.x], *w = &k->in[q.w], *y = &k->out[0];
    p.x = x->data;
    p.w = w->data;
    p.y = y->data;
    p.x_dt = x->dtype;
    p.w_dt = w->dtype;
    p.y_dt = y->dtype;
    param_of(k, q.xz.operand, q.xz.dt, &p.xz, &p.xz_dt);
    param_of(k, q.wz.operand, q.wz.dt, &p.wz, &p.wz_dt);
    param_of(k, q.bias.operand, q.bias.dt, &p.bias, &p.b_dt);
    param_of(k, q.xsc.operand, q.xsc.dt, &p.xsc, &p.xsc_dt);
    param_of(k, q.wsc.operand, q.wsc.dt, &p.wsc, &p.wsc_dt);
    param_of(k, q.ysc.operand, q.ysc.dt, &p.ysc, &p.ysc_dt);
    param_of(k, q.yz.operand, q.yz.dt, &p.yz, &p.yz_dt);
    p.wz_step = q.wz.step;
    p.b_step = q.bias.step;
    p.wsc_step = q.wsc.step;
    p.q_dt = (st_dtype)s->q_type;
    p.has_lut = s->has_lut;
    /* the table's entries are bytes (the CPU stores the low byte too) */
    for (int b = 0; s->has_lut && b < 256; b++) p.lut[b] = (uint8_t)s->lut[b];
    if (st_qconv_igemm_takes(p))
        st_qconv_igemm(p, (const st_cuda_ctx *)k->dev);
    else
        qconv_kernel<<<st_blocks(p.total, THREADS), THREADS, 0, st_stream(k)>>>(p);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

extern "C" const st_kernel st_cuda_k_qint[] = {
    {"DynamicQuantizeLinear", "", ST_CUDA_DT, st_cuda_dynamic_quantize, st_lq_accepts_dynq, NULL, NULL},
    {"MatMulInteger", "", ST_CUDA_DT, st_cuda_qmatmul, st_lq_accepts_qmatmul, NULL, NULL},
    {"QLinearMatMul", "", ST_CUDA_DT, st_cuda_qmatmul, st_lq_accepts_qmatmul, NULL, NULL},
    {"ConvInteger", "", ST_CUDA_DT, st_cuda_qconv, accepts_qconv, NULL, NULL},
    {"QLinearConv", "", ST_CUDA_DT, st_cuda_qconv, accepts_qconv, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
