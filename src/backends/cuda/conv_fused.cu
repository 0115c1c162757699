/*
 * conv_fused.cu — a channels-last Conv with its bias and activation as one
 * cuDNN operation graph (the backend API: convolution, then a pointwise
 * add of the bias, then ReLU or SiLU, then the add of a residual R and an
 * activation after it where passes/fuse_conv_add.c folded them in), so
 * the sum never leaves the conv kernel.  The separate epilogue pass it replaces read and wrote every
 * conv output once more: 0.96 ms of YOLOv8n's 3.6 at batch 32 in f16 on
 * an H200, and 63 of its 272 launches at batch 1.
 *
 * On by default (STRATA_CUDA_CONV_FUSED=0 turns it off).  On an H200 in
 * f16 it took YOLOv8n at batch 32 from 3.62 to 2.68 ms and ResNet-50 from
 * 2.50 to 1.84, and at batch 1 with every conv output channels-last
 * YOLOv8n from 0.81 to 0.45 (bench/RESULTS.md, 2026-12-04, fourth
 * session).  The price is time to the first result: cuDNN compiles its
 * runtime-fusion kernels on the first run of each conv shape (YOLOv8n b32:
 * 11 s on a cold machine, 4 s with the driver's JIT cache warm).  Taken
 * only for f16/bf16 operands with X and Y channels-last and a KRSC filter
 * (k_conv.cu makes the copy); anything cuDNN refuses falls back to the
 * unfused path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/conv_fused.h"

/* A descriptor with its type, destroyed by cf_free's list. */
enum { CF_MAXD = 40 };

struct st_cf_plan {
    cudnnBackendDescriptor_t d[CF_MAXD];  /* every descriptor made, destroyed in reverse */
    int nd;
    cudnnBackendDescriptor_t plan;        /* the execution plan, one of d[] */
    int64_t ws;                           /* its workspace bytes */
    /* the plans built to choose from (st_cf_build's max_cands), with
     * their position in the heuristic's list and their workspace */
    cudnnBackendDescriptor_t cand[ST_CF_MAX_CANDS];
    int cand_at[ST_CF_MAX_CANDS];
    int64_t cand_ws[ST_CF_MAX_CANDS];
    int n_cand;
    bool has_b, has_r;
    int64_t align[5];                     /* what the plan was built for (st_cf_problem.align) */
};

/* uids of the graph's tensors; the virtual ones after the conv are
 * UID_V, UID_V + 1, ... */
enum { UID_X = 1, UID_W, UID_B, UID_Y, UID_R, UID_V };

static st_status ok(cudnnStatus_t e, const char *what)
{
    if (e == CUDNN_STATUS_SUCCESS) return ST_OK;
    return st_error(ST_ERR_BACKEND, "cuda: fused conv: %s: %s", what, cudnnGetErrorString(e));
}

static st_status make(st_cf_plan *p, cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t *out, const char *what)
{
    if (p->nd == CF_MAXD) return st_error(ST_ERR_INTERNAL, "cuda: fused conv: too many descriptors");
    ST_TRY(ok(cudnnBackendCreateDescriptor(t, out), what));
    p->d[p->nd++] = *out;
    return ST_OK;
}

static cudnnStatus_t set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n,
                         const void *v)
{
    return cudnnBackendSetAttribute(d, a, t, n, v);
}

/* A 4-D tensor: dims [N, C, H, W] with the given element strides. */
static st_status tensor(st_cf_plan *p, cudnnBackendDescriptor_t *out, int64_t uid, cudnnDataType_t dt, const int64_t *dims,
                        const int64_t *strides, bool virt, int64_t align)
{
    ST_TRY(make(p, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out, "tensor descriptor"));
    cudnnStatus_t e = set(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(*out);
    return ok(e, "tensor descriptor");
}

/* y = mode(x [, b]) as a pointwise operation, math in f32. */
static st_status pointwise(st_cf_plan *p, cudnnBackendDescriptor_t *op, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                           cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y)
{
    cudnnBackendDescriptor_t pw;
    ST_TRY(make(p, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw, "pointwise descriptor"));
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    cudnnStatus_t e = set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    if (e == CUDNN_STATUS_SUCCESS) e = set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (e == CUDNN_STATUS_SUCCESS && mode == CUDNN_POINTWISE_SWISH_FWD) {
        double beta = 1.0; /* x * sigmoid(1 * x): SiLU */
        e = set(pw, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &beta);
    }
    if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(pw);
    ST_TRY(ok(e, "pointwise descriptor"));
    ST_TRY(make(p, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op, "pointwise operation"));
    e = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (e == CUDNN_STATUS_SUCCESS && b) e = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (e == CUDNN_STATUS_SUCCESS) e = set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(*op);
    return ok(e, "pointwise operation");
}

/* Whether an engine keeps f32 accumulation: no reduced-precision
 * reduction and no down-converted inputs. */
static bool keeps_precision(cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t eng;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) return false;
    int64_t n = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    bool good = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) ==
                    CUDNN_STATUS_SUCCESS &&
                cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                         CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) == CUDNN_STATUS_SUCCESS;
    for (int64_t i = 0; good && i < n; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
            notes[i] == CUDNN_NUMERICAL_NOTE_FFT || notes[i] == CUDNN_NUMERICAL_NOTE_WINOGRAD)
            good = false;
    cudnnBackendDestroyDescriptor(eng);
    return good;
}

void st_cf_free(st_cf_plan *p)
{
    if (!p) return;
    for (int i = p->nd - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(p->d[i]);
    free(p);
}

int st_cf_mode(void)
{
    const char *e = getenv("STRATA_CUDA_CONV_FUSED");
    if (e && strcmp(e, "0") == 0) return ST_CF_OFF;
    if (e && strcmp(e, "noswish") == 0) return ST_CF_NOSWISH;
    return ST_CF_ON;
}

st_status st_cf_build(cudnnHandle_t h, const st_cf_problem *q, size_t ws_limit, int at, int max_cands, st_cf_plan **out)
{
    *out = NULL;
    st_cf_plan *p = (st_cf_plan *)calloc(1, sizeof *p);
    if (!p) return st_error(ST_ERR_NOMEM, "out of memory");
    p->has_b = q->has_b;
    p->has_r = q->has_r;
    memcpy(p->align, q->align, sizeof p->align);
    cudnnDataType_t dt = q->dtype == ST_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
    int64_t k = q->ydims[1], c = q->xdims[1];
    int64_t wdims[4] = {k, c, q->kh, q->kw}, wstr[4] = {q->kh * q->kw * c, 1, q->kw * c, c};
    int64_t bdims[4] = {1, k, 1, 1}, bstr[4] = {k, 1, k, k}; /* [1, K, 1, 1] laid out NHWC */
    /* the virtual sums: packed channels-last, f32 */
    int64_t vstr[4] = {q->ydims[1] * q->ydims[2] * q->ydims[3], 1, q->ydims[3] * q->ydims[1], q->ydims[1]};
    /* the pointwise steps after the conv, in order: + bias, act, + R, act2 */
    struct step {
        cudnnPointwiseMode_t mode;
        cudnnBackendDescriptor_t operand;
    } steps[4];
    int n_steps = 0;
    cudnnBackendDescriptor_t tx, tw, tb = NULL, tr = NULL, ty, conv, op_conv, ops[5];
    int64_t nops = 0;
    st_status r = tensor(p, &tx, UID_X, dt, q->xdims, q->xstrides, false, q->align[0]);
    if (r == ST_OK) r = tensor(p, &tw, UID_W, dt, wdims, wstr, false, q->align[1]);
    if (r == ST_OK && q->has_b) r = tensor(p, &tb, UID_B, dt, bdims, bstr, false, q->align[2]);
    if (r == ST_OK && q->has_r) r = tensor(p, &tr, UID_R, dt, q->ydims, q->rstrides, false, q->align[4]);
    if (r == ST_OK) r = tensor(p, &ty, UID_Y, dt, q->ydims, q->ystrides, false, q->align[3]);
    if (r != ST_OK) goto fail;
    if (q->has_b) steps[n_steps++] = (struct step){CUDNN_POINTWISE_ADD, tb};
    if (q->act != ST_CF_NONE)
        steps[n_steps++] = (struct step){q->act == ST_CF_RELU ? CUDNN_POINTWISE_RELU_FWD : CUDNN_POINTWISE_SWISH_FWD, NULL};
    if (q->has_r) steps[n_steps++] = (struct step){CUDNN_POINTWISE_ADD, tr};
    if (q->has_r && q->act2 != ST_CF_NONE)
        steps[n_steps++] = (struct step){q->act2 == ST_CF_RELU ? CUDNN_POINTWISE_RELU_FWD : CUDNN_POINTWISE_SWISH_FWD, NULL};
    /* the convolution, into Y itself when nothing follows it, else into
     * the first of the f32 virtual tensors the steps pass along */
    {
        cudnnBackendDescriptor_t cur = ty;
        if (n_steps && (r = tensor(p, &cur, UID_V, f32, q->ydims, vstr, true, 16)) != ST_OK) goto fail;
        if ((r = make(p, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv, "convolution descriptor")) != ST_OK) goto fail;
        int64_t sp = 2;
        cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        cudnnStatus_t e = set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
        if (e == CUDNN_STATUS_SUCCESS) e = set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
        if (e == CUDNN_STATUS_SUCCESS) e = set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sp);
        if (e == CUDNN_STATUS_SUCCESS) e = set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, q->dilations);
        if (e == CUDNN_STATUS_SUCCESS) e = set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, q->strides);
        if (e == CUDNN_STATUS_SUCCESS) e = set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, q->pre);
        if (e == CUDNN_STATUS_SUCCESS) e = set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, q->post);
        if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(conv);
        if ((r = ok(e, "convolution descriptor")) != ST_OK) goto fail;
        if ((r = make(p, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op_conv, "convolution operation")) != ST_OK)
            goto fail;
        float one = 1.0f, zero = 0.0f;
        e = set(op_conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx);
        if (e == CUDNN_STATUS_SUCCESS) e = set(op_conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw);
        if (e == CUDNN_STATUS_SUCCESS) e = set(op_conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cur);
        if (e == CUDNN_STATUS_SUCCESS)
            e = set(op_conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
        if (e == CUDNN_STATUS_SUCCESS) e = set(op_conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &one);
        if (e == CUDNN_STATUS_SUCCESS) e = set(op_conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &zero);
        if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(op_conv);
        if ((r = ok(e, "convolution operation")) != ST_OK) goto fail;
        ops[nops++] = op_conv;
        for (int i = 0; i < n_steps; i++) {
            cudnnBackendDescriptor_t next = ty;
            if (i + 1 < n_steps && (r = tensor(p, &next, UID_V + 1 + i, f32, q->ydims, vstr, true, 16)) != ST_OK) goto fail;
            if ((r = pointwise(p, &ops[nops], steps[i].mode, cur, steps[i].operand, next)) != ST_OK) goto fail;
            nops++;
            cur = next;
        }
    }
    {
        cudnnBackendDescriptor_t graph, heur;
        if ((r = make(p, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph, "operation graph")) != ST_OK) goto fail;
        cudnnStatus_t e = set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops);
        if (e == CUDNN_STATUS_SUCCESS) e = set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(graph);
        if ((r = ok(e, "operation graph")) != ST_OK) goto fail;
        if ((r = make(p, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur, "engine heuristics")) != ST_OK) goto fail;
        cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
        e = set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
        if (e == CUDNN_STATUS_SUCCESS) e = set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
        if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(heur);
        if ((r = ok(e, "engine heuristics")) != ST_OK) goto fail;
        /* the heuristic's configs in order; the first max_cands that
         * build, keep f32 accumulation and fit the workspace are kept
         * (only the one at position `at` when at >= 0), the first of
         * them to run */
        enum { NCFG = 16 };
        cudnnBackendDescriptor_t cfg[NCFG];
        int made = 0;
        for (; made < NCFG; made++)
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[made]) != CUDNN_STATUS_SUCCESS) break;
        int64_t got = 0;
        e = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, made, &got, cfg);
        const char *last = e == CUDNN_STATUS_SUCCESS ? "no engine config" : cudnnGetErrorString(e);
        if (max_cands < 1) max_cands = 1;
        if (max_cands > ST_CF_MAX_CANDS) max_cands = ST_CF_MAX_CANDS;
        for (int64_t i = 0; e == CUDNN_STATUS_SUCCESS && i < got && i < made && p->n_cand < max_cands; i++) {
            if ((at >= 0 && i != at) || !keeps_precision(cfg[i])) continue;
            cudnnBackendDescriptor_t plan;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) continue;
            int64_t ws = 0, n = 0;
            cudnnStatus_t f = set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
            if (f == CUDNN_STATUS_SUCCESS) f = set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
            if (f == CUDNN_STATUS_SUCCESS) f = cudnnBackendFinalize(plan);
            if (f == CUDNN_STATUS_SUCCESS)
                f = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws);
            if (f == CUDNN_STATUS_SUCCESS && ws >= 0 && (size_t)ws <= ws_limit && p->nd < CF_MAXD) {
                p->d[p->nd++] = plan;
                p->cand[p->n_cand] = plan;
                p->cand_at[p->n_cand] = (int)i;
                p->cand_ws[p->n_cand++] = ws;
                if (!p->plan) {
                    p->plan = plan;
                    p->ws = ws;
                }
            } else {
                last = f == CUDNN_STATUS_SUCCESS ? "workspace too large" : cudnnGetErrorString(f);
                cudnnBackendDestroyDescriptor(plan);
            }
        }
        for (int i = 0; i < made; i++) cudnnBackendDestroyDescriptor(cfg[i]);
        if (!p->plan) {
            r = st_error(ST_ERR_BACKEND, "cuda: fused conv: no engine ran the graph (%s)", last);
            goto fail;
        }
    }
    *out = p;
    return ST_OK;
fail:
    st_cf_free(p);
    return r;
}

bool st_cf_fits(const st_cf_plan *p, const void *x, const void *w, const void *b, const void *y, const void *r)
{
    return st_cf_align(x) >= p->align[0] && st_cf_align(w) >= p->align[1] && (!p->has_b || st_cf_align(b) >= p->align[2]) &&
           st_cf_align(y) >= p->align[3] && (!p->has_r || st_cf_align(r) >= p->align[4]);
}

st_status st_cf_run(cudnnHandle_t h, const st_cf_plan *p, const void *x, const void *w, const void *b, void *y, const void *r,
                    void *ws)
{
    cudnnBackendDescriptor_t vp;
    ST_TRY(ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp), "variant pack"));
    void *ptrs[5] = {(void *)x, (void *)w, y};
    int64_t uids[5] = {UID_X, UID_W, UID_Y};
    int64_t n = 3;
    if (p->has_b) ptrs[n] = (void *)b, uids[n++] = UID_B;
    if (p->has_r) ptrs[n] = (void *)r, uids[n++] = UID_R;
    cudnnStatus_t e = set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (e == CUDNN_STATUS_SUCCESS) e = set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (e == CUDNN_STATUS_SUCCESS) e = set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendFinalize(vp);
    if (e == CUDNN_STATUS_SUCCESS) e = cudnnBackendExecute(h, p->plan, vp);
    cudnnBackendDestroyDescriptor(vp);
    return ok(e, "cudnnBackendExecute");
}

size_t st_cf_workspace(const st_cf_plan *p) { return (size_t)p->ws; }

int st_cf_candidates(const st_cf_plan *p) { return p->n_cand; }

int st_cf_candidate_at(const st_cf_plan *p, int i) { return p->cand_at[i]; }

void st_cf_choose(st_cf_plan *p, int i)
{
    p->plan = p->cand[i];
    p->ws = p->cand_ws[i];
}

int64_t st_cf_align(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int64_t al = 16;
    while (al > 1 && a % (uintptr_t)al) al /= 2;
    return al;
}
