/*
 * k_rnn.cu — RNN, GRU and LSTM on CUDA as one persistent kernel per
 * direction: a block walks the time steps itself, with __syncthreads()
 * between steps (which also makes the block's global writes visible to
 * it), so a sequence is one launch and never a host loop.  The logic is
 * backends/opencl/rnn.cl's, line for line (the node tests check that one
 * on PoCL), and the CPU's formulas (backends/cpu/k_misc_rnn.c), in f32.
 * The sizes and per-role strides are OpenCL's too: ops/lower_rnn.c
 * computes them once.
 *
 * The states (5 * B * H floats per direction: h twice, ping-ponged, c,
 * and GRU's z and r * h) live in the stream's workspace, which commands
 * on one stream use one after the other; accepts checks they fit.
 */
#include "backends/cuda/common.cuh"
extern "C" {
#include "ops/lower_rnn.h"
#include "ops/misc.h"
}

#define RNN_THREADS 256

/* An operand's element [a, b, c, d]: pointer plus strides by role. */
struct rnn_od {
    const void *p;
    st_dtype dt;
    int64_t s[4];
};

struct rnn_p {
    rnn_od x, w, r, b, sl, h0, c0, pp, y, yh, yc;
    int64_t T, B, I, H;
    int cell, dirs;
    bool rev_single, has_clip, lbr, input_forget;
    int act_fn[2][3];
    float act_a[2][3], act_b[2][3];
    float clip;
};

__device__ __forceinline__ float rnn_act(int fn, float a, float b, float x)
{
    switch (fn) {
    case ST_ACT_RELU: return x > 0 ? x : 0;
    case ST_ACT_TANH: return tanhf(x);
    case ST_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ST_ACT_AFFINE: return a * x + b;
    case ST_ACT_LEAKY_RELU: return x < 0 ? a * x : x;
    case ST_ACT_THRESHOLDED_RELU: return x > a ? x : 0;
    case ST_ACT_SCALED_TANH: return a * tanhf(b * x);
    case ST_ACT_HARD_SIGMOID: return fminf(fmaxf(a * x + b, 0.0f), 1.0f);
    case ST_ACT_ELU: return x < 0 ? a * (expf(x) - 1) : x;
    case ST_ACT_SOFTSIGN: return x / (1 + fabsf(x));
    case ST_ACT_SOFTPLUS: return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
    }
    return x;
}

#define ACT(d, k, v) rnn_act(p.act_fn[d][k], p.act_a[d][k], p.act_b[d][k], (v))
#define CLIP(v) (p.has_clip ? fminf(fmaxf((v), -p.clip), p.clip) : (v))
#define BIAS_BOTH 0
#define BIAS_R 1
#define BIAS_W 2

/* x_t[b] . W[dir, row]  +  h[b] . R[dir, row] (h may be NULL) */
__device__ float rnn_gate(const rnn_p &p, const float *h, int64_t dir, int64_t t, int64_t b, int64_t row)
{
    float acc = 0.0f;
    int64_t xo = t * p.x.s[0] + b * p.x.s[1], wo = dir * p.w.s[0] + row * p.w.s[1];
    for (int64_t k = 0; k < p.I; k++) acc += st_ldf(p.x.dt, p.x.p, xo + k * p.x.s[2]) * st_ldf(p.w.dt, p.w.p, wo + k * p.w.s[2]);
    int64_t ro = dir * p.r.s[0] + row * p.r.s[1];
    if (h)
        for (int64_t k = 0; k < p.H; k++) acc += h[b * p.H + k] * st_ldf(p.r.dt, p.r.p, ro + k * p.r.s[2]);
    return acc;
}

__device__ float rnn_hr(const rnn_p &p, const float *h, int64_t dir, int64_t b, int64_t row)
{
    float acc = 0.0f;
    int64_t ro = dir * p.r.s[0] + row * p.r.s[1];
    for (int64_t k = 0; k < p.H; k++) acc += h[b * p.H + k] * st_ldf(p.r.dt, p.r.p, ro + k * p.r.s[2]);
    return acc;
}

__device__ float rnn_bias(const rnn_p &p, int64_t dir, int64_t row, int which)
{
    if (!p.b.p) return 0.0f;
    int64_t GH = p.H * (p.cell == ST_CELL_LSTM ? 4 : p.cell == ST_CELL_GRU ? 3 : 1), o = dir * p.b.s[0];
    float wb = st_ldf(p.b.dt, p.b.p, o + row * p.b.s[1]), rb = st_ldf(p.b.dt, p.b.p, o + (GH + row) * p.b.s[1]);
    return which == BIAS_R ? rb : which == BIAS_W ? wb : wb + rb;
}

__device__ int64_t rnn_len(const rnn_p &p, int64_t b)
{
    if (!p.sl.p) return p.T;
    /* the CPU refuses a length outside [0, T]; a kernel cannot, so clamps */
    int64_t v = st_ldi(p.sl.dt, p.sl.p, b * p.sl.s[0]);
    return v < 0 ? 0 : v > p.T ? p.T : v;
}

__device__ __forceinline__ void rnn_store(const rnn_od &o, int64_t off, float v) { st_stf(o.dt, (void *)o.p, off, v); }

__global__ void rnn_kernel(rnn_p p, float *scratch)
{
    int64_t dir = blockIdx.x, lid = threadIdx.x, L = blockDim.x;
    int64_t B = p.B, H = p.H, BH = B * H, T = p.T;
    bool rev = p.dirs == 2 ? dir == 1 : p.rev_single;
    int d = (int)dir;
    float *hs = scratch + dir * 5 * BH, *cs = hs + 2 * BH, *zs = hs + 3 * BH, *rhs = hs + 4 * BH;
    for (int64_t e = lid; e < BH; e += L) {
        int64_t b = e / H, i = e % H;
        hs[e] = p.h0.p ? st_ldf(p.h0.dt, p.h0.p, dir * p.h0.s[0] + b * p.h0.s[1] + i * p.h0.s[2]) : 0.0f;
        cs[e] = p.c0.p ? st_ldf(p.c0.dt, p.c0.p, dir * p.c0.s[0] + b * p.c0.s[1] + i * p.c0.s[2]) : 0.0f;
    }
    __syncthreads();
    int cur = 0;
    for (int64_t step = 0; step < T; step++) {
        float *hc = hs + cur * BH, *hn = hs + (1 - cur) * BH;
        if (p.cell == ST_CELL_GRU && !p.lbr) {
            /* GRU: z and r first, the candidate reads r * h of every unit */
            for (int64_t e = lid; e < BH; e += L) {
                int64_t b = e / H, i = e % H, len = rnn_len(p, b);
                if (step >= len) continue;
                int64_t t = rev ? len - 1 - step : step;
                zs[e] = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, i) + rnn_bias(p, dir, i, BIAS_BOTH)));
                float rr = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, H + i) + rnn_bias(p, dir, H + i, BIAS_BOTH)));
                rhs[e] = rr * hc[e];
            }
            __syncthreads();
        }
        for (int64_t e = lid; e < BH; e += L) {
            int64_t b = e / H, i = e % H, len = rnn_len(p, b);
            float hv = hc[e];
            if (step < len) {
                int64_t t = rev ? len - 1 - step : step;
                if (p.cell == ST_CELL_RNN) {
                    hv = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, i) + rnn_bias(p, dir, i, BIAS_BOTH)));
                } else if (p.cell == ST_CELL_GRU) {
                    float z, cand;
                    if (p.lbr) {
                        z = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, i) + rnn_bias(p, dir, i, BIAS_BOTH)));
                        float rr = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, H + i) + rnn_bias(p, dir, H + i, BIAS_BOTH)));
                        float xpart = rnn_gate(p, NULL, dir, t, b, 2 * H + i);
                        float hpart = rnn_hr(p, hc, dir, b, 2 * H + i) + rnn_bias(p, dir, 2 * H + i, BIAS_R);
                        cand = ACT(d, 1, CLIP(xpart + rr * hpart + rnn_bias(p, dir, 2 * H + i, BIAS_W)));
                    } else {
                        z = zs[e];
                        cand = ACT(d, 1, CLIP(rnn_gate(p, NULL, dir, t, b, 2 * H + i) + rnn_hr(p, rhs, dir, b, 2 * H + i) +
                                              rnn_bias(p, dir, 2 * H + i, BIAS_BOTH)));
                    }
                    hv = (1 - z) * cand + z * hv;
                } else {
                    float cp = cs[e];
                    int64_t po = dir * p.pp.s[0];
                    float pi = p.pp.p ? st_ldf(p.pp.dt, p.pp.p, po + i * p.pp.s[1]) : 0.0f;
                    float pov = p.pp.p ? st_ldf(p.pp.dt, p.pp.p, po + (H + i) * p.pp.s[1]) : 0.0f;
                    float pf = p.pp.p ? st_ldf(p.pp.dt, p.pp.p, po + (2 * H + i) * p.pp.s[1]) : 0.0f;
                    float gi = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, i) + rnn_bias(p, dir, i, BIAS_BOTH) + pi * cp));
                    float gf = p.input_forget ? 1 - gi
                                              : ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, 2 * H + i) + rnn_bias(p, dir, 2 * H + i, BIAS_BOTH) +
                                                               pf * cp));
                    float gc = ACT(d, 1, CLIP(rnn_gate(p, hc, dir, t, b, 3 * H + i) + rnn_bias(p, dir, 3 * H + i, BIAS_BOTH)));
                    float cn = gf * cp + gi * gc;
                    float go = ACT(d, 0, CLIP(rnn_gate(p, hc, dir, t, b, H + i) + rnn_bias(p, dir, H + i, BIAS_BOTH) + pov * cn));
                    cs[e] = cn;
                    hv = go * ACT(d, 2, cn);
                }
                if (p.y.p) rnn_store(p.y, t * p.y.s[0] + dir * p.y.s[1] + b * p.y.s[2] + i * p.y.s[3], hv);
            }
            hn[e] = hv;
        }
        __syncthreads();
        cur = 1 - cur;
    }
    float *hf = hs + cur * BH;
    for (int64_t e = lid; e < BH; e += L) {
        int64_t b = e / H, i = e % H, len = rnn_len(p, b);
        if (p.y.p)
            for (int64_t t = len; t < T; t++) rnn_store(p.y, t * p.y.s[0] + dir * p.y.s[1] + b * p.y.s[2] + i * p.y.s[3], 0.0f);
        if (p.yh.p) rnn_store(p.yh, dir * p.yh.s[0] + b * p.yh.s[1] + i * p.yh.s[2], len == 0 ? 0.0f : hf[e]);
        if (p.yc.p) rnn_store(p.yc, dir * p.yc.s[0] + b * p.yc.s[1] + i * p.yc.s[2], len == 0 ? 0.0f : cs[e]);
    }
}

/* od from lowered operand o (ops/lower_rnn.h): its address and strides */
static void od_of(const st_kctx *k, const st_lrnn_op *o, rnn_od *od)
{
    memset(od, 0, sizeof *od);
    if (o->operand < 0) return;
    od->p = o->operand < k->n_in ? k->in[o->operand].data : k->out[o->operand - k->n_in].data;
    od->dt = o->dt;
    for (int i = 0; i < 4; i++) od->s[i] = o->s[i];
}

static st_status cuda_rnn(const st_kctx *k)
{
    const st_rnn_state *s = (const st_rnn_state *)k->state;
    const st_cuda_ctx *ctx = (const st_cuda_ctx *)k->dev;
    st_lower_rnn q;
    st_lower_rnn_of(k, &q);
    rnn_p p;
    memset(&p, 0, sizeof p);
    p.T = q.T;
    p.B = q.B;
    p.I = q.I;
    p.H = q.H;
    p.cell = q.cell;
    p.dirs = q.dirs;
    p.rev_single = q.reverse;
    p.has_clip = q.has_clip;
    p.clip = q.clip;
    p.lbr = q.lbr;
    p.input_forget = q.input_forget;
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 3; j++) {
            p.act_fn[d][j] = q.act_fn[d][j];
            p.act_a[d][j] = q.act_a[d][j];
            p.act_b[d][j] = q.act_b[d][j];
        }
    rnn_od *od[ST_LRNN_OPS] = {&p.x, &p.w, &p.r, &p.b, &p.sl, &p.h0, &p.c0, &p.pp, &p.y, &p.yh, &p.yc};
    for (int i = 0; i < ST_LRNN_OPS; i++) od_of(k, &q.o[i], od[i]);
    if (p.B == 0 || p.H == 0) return ST_OK;
    if ((size_t)st_lrnn_scratch_floats(s, p.B) * sizeof(float) > ctx->workspace_bytes)
        return st_error(ST_ERR_INTERNAL, "node '%s': RNN states exceed the stream's workspace", k->node->name);
    rnn_kernel<<<(unsigned)p.dirs, RNN_THREADS, 0, st_stream(k)>>>(p, (float *)ctx->workspace);
    return ST_OK;
}

/* ---- the kernel table entries of this file (cuda/table.c) ---- */

static bool rnn_accepts(const st_knode *n, char *why, size_t len)
{
    const st_rnn_state *s = (const st_rnn_state *)n->state;
    if (!st_lrnn_accepts_dtypes(n, "CUDA", why, len)) return false;
    int64_t batch = st_lrnn_batch(n);
    if ((size_t)st_lrnn_scratch_floats(s, batch) * sizeof(float) > ST_CUDA_WORKSPACE)
        return st_kernel_refuse(why, len, "%s states of batch %lld x hidden %lld exceed the CUDA workspace", n->op->name,
                                (long long)batch, (long long)s->hidden);
    return true;
}

extern "C" const st_kernel st_cuda_k_rnn[] = {
    {"RNN", "", ST_DT_FLOATS, cuda_rnn, rnn_accepts, NULL, NULL},
    {"GRU", "", ST_DT_FLOATS, cuda_rnn, rnn_accepts, NULL, NULL},
    {"LSTM", "", ST_DT_FLOATS, cuda_rnn, rnn_accepts, NULL, NULL},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL}
};
