/*
 * rnn.cl — RNN, GRU and LSTM as one persistent kernel per direction (host
 * side: k_rnn.c).  A direction is one work-group that walks the time
 * steps itself, with a work-group barrier between steps, so a sequence is
 * one enqueue and never a host loop.  Its work-items share the (batch,
 * hidden unit) pairs; each computes its unit's gate pre-activations as
 * dot products of x_t with W's rows and of h_{t-1} with R's rows, then
 * the cell update, by the CPU's formulas (backends/cpu/k_misc_rnn.c:
 * gates i, o, f, c for LSTM, z, r, h for GRU, peepholes, clip,
 * input_forget, linear_before_reset, sequence_lens, reverse), in f32.
 *
 * The states live in a scratch buffer of the command (5 * B * H floats
 * per direction: h twice, ping-ponged between steps, c, and GRU's z and
 * r * h), read back into Y_h and Y_c at the end.
 */

/* Where an operand's element [a, b, c, d] lies: offset plus strides by
 * the operand's role (k_rnn.c fills them, 0 for absent dims). */
typedef struct st_rnn_od {
    long off, dt, s[4];
} st_rnn_od;

/* Same layout as st_cl_rnn_p in k_rnn.c. */
typedef struct st_rnn_p {
    st_rnn_od x, w, r, b, sl, h0, c0, p, y, yh, yc;
    long T, B, I, H, cell, rev_single, dirs, has_clip, lbr, input_forget;
    long has_b, has_sl, has_h0, has_c0, has_p, has_y, has_yh, has_yc;
    long act_fn[2][3];
    float act_a[2][3], act_b[2][3];
    float clip, pad_;
} st_rnn_p;

inline float rnn_act(int fn, float a, float b, float x)
{
    switch (fn) {
    case 0: return x > 0 ? x : 0;                       /* Relu */
    case 1: return tanh(x);
    case 2: return 1.0f / (1.0f + exp(-x));             /* Sigmoid */
    case 3: return a * x + b;                           /* Affine */
    case 4: return x < 0 ? a * x : x;                   /* LeakyRelu */
    case 5: return x > a ? x : 0;                       /* ThresholdedRelu */
    case 6: return a * tanh(b * x);                     /* ScaledTanh */
    case 7: return clamp(a * x + b, 0.0f, 1.0f);        /* HardSigmoid */
    case 8: return x < 0 ? a * (exp(x) - 1) : x;        /* Elu */
    case 9: return x / (1 + fabs(x));                   /* Softsign */
    case 10: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); /* Softplus */
    }
    return x;
}

#define ACT(d, k, v) rnn_act((int)p.act_fn[d][k], p.act_a[d][k], p.act_b[d][k], (v))
#define CLIP(v) (p.has_clip ? clamp((v), -p.clip, p.clip) : (v))

/* x_t[b] . W[dir, row]  +  h[b] . R[dir, row] */
inline float rnn_gate(gcp x, gcp w, gcp r, global const float *h, const st_rnn_p *p, long dir, long t, long b, long row)
{
    float acc = 0.0f;
    long xo = p->x.off + t * p->x.s[0] + b * p->x.s[1], wo = p->w.off + dir * p->w.s[0] + row * p->w.s[1];
    for (long k = 0; k < p->I; k++) acc += ld_f(x, xo + k * p->x.s[2], (int)p->x.dt) * ld_f(w, wo + k * p->w.s[2], (int)p->w.dt);
    long ro = p->r.off + dir * p->r.s[0] + row * p->r.s[1];
    if (h)
        for (long k = 0; k < p->H; k++) acc += h[b * p->H + k] * ld_f(r, ro + k * p->r.s[2], (int)p->r.dt);
    return acc;
}

/* h . R[dir, row] alone (GRU's candidate without linear_before_reset) */
inline float rnn_hr(gcp r, global const float *h, const st_rnn_p *p, long dir, long b, long row)
{
    float acc = 0.0f;
    long ro = p->r.off + dir * p->r.s[0] + row * p->r.s[1];
    for (long k = 0; k < p->H; k++) acc += h[b * p->H + k] * ld_f(r, ro + k * p->r.s[2], (int)p->r.dt);
    return acc;
}

/* The biases of gate row `row`: Wb + Rb (BIAS_BOTH), Rb or Wb alone */
#define BIAS_BOTH 0
#define BIAS_R 1
#define BIAS_W 2
inline float rnn_bias(gcp bb, const st_rnn_p *p, long dir, long row, int which)
{
    if (!p->has_b) return 0.0f;
    long GH = p->H * (p->cell == 2 ? 4 : p->cell == 1 ? 3 : 1), o = p->b.off + dir * p->b.s[0];
    float wb = ld_f(bb, o + row * p->b.s[1], (int)p->b.dt), rb = ld_f(bb, o + (GH + row) * p->b.s[1], (int)p->b.dt);
    return which == BIAS_R ? rb : which == BIAS_W ? wb : wb + rb;
}

inline long rnn_len(gcp sl, const st_rnn_p *p, long b)
{
    /* the CPU refuses a length outside [0, T]; a kernel cannot, so clamps */
    return p->has_sl ? clamp(ld_l(sl, p->sl.off + b * p->sl.s[0], (int)p->sl.dt), 0L, p->T) : p->T;
}

kernel void st_rnn(gp y, gp yh, gp yc, gcp x, gcp w, gcp r, gcp bb, gcp sl, gcp h0, gcp c0, gcp pp,
                   global float *scratch, st_rnn_p p)
{
    long dir = get_group_id(0), lid = get_local_id(0), L = get_local_size(0);
    long B = p.B, H = p.H, BH = B * H, T = p.T;
    bool rev = p.dirs == 2 ? dir == 1 : p.rev_single != 0;
    int d = (int)dir;
    global float *hs = scratch + dir * 5 * BH, *cs = hs + 2 * BH, *zs = hs + 3 * BH, *rhs = hs + 4 * BH;
    for (long e = lid; e < BH; e += L) {
        long b = e / H, i = e % H;
        hs[e] = p.has_h0 ? ld_f(h0, p.h0.off + dir * p.h0.s[0] + b * p.h0.s[1] + i * p.h0.s[2], (int)p.h0.dt) : 0.0f;
        cs[e] = p.has_c0 ? ld_f(c0, p.c0.off + dir * p.c0.s[0] + b * p.c0.s[1] + i * p.c0.s[2], (int)p.c0.dt) : 0.0f;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    int cur = 0;
    for (long step = 0; step < T; step++) {
        global float *hc = hs + cur * BH, *hn = hs + (1 - cur) * BH;
        if (p.cell == 1 && !p.lbr) {
            /* GRU: z and r first, the candidate reads r * h of every unit */
            for (long e = lid; e < BH; e += L) {
                long b = e / H, i = e % H, len = rnn_len(sl, &p, b);
                if (step >= len) continue;
                long t = rev ? len - 1 - step : step;
                zs[e] = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, i) + rnn_bias(bb, &p, dir, i, BIAS_BOTH)));
                float rr = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, H + i) + rnn_bias(bb, &p, dir, H + i, BIAS_BOTH)));
                rhs[e] = rr * hc[e];
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
        for (long e = lid; e < BH; e += L) {
            long b = e / H, i = e % H, len = rnn_len(sl, &p, b);
            float hv = hc[e];
            if (step < len) {
                long t = rev ? len - 1 - step : step;
                if (p.cell == 0) {
                    hv = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, i) + rnn_bias(bb, &p, dir, i, BIAS_BOTH)));
                } else if (p.cell == 1) {
                    float z, cand;
                    if (p.lbr) {
                        z = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, i) + rnn_bias(bb, &p, dir, i, BIAS_BOTH)));
                        float rr = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, H + i) + rnn_bias(bb, &p, dir, H + i, BIAS_BOTH)));
                        float xpart = rnn_gate(x, w, r, 0, &p, dir, t, b, 2 * H + i);
                        float hpart = rnn_hr(r, hc, &p, dir, b, 2 * H + i) + rnn_bias(bb, &p, dir, 2 * H + i, BIAS_R);
                        float wb = rnn_bias(bb, &p, dir, 2 * H + i, BIAS_W);
                        cand = ACT(d, 1, CLIP(xpart + rr * hpart + wb));
                    } else {
                        z = zs[e];
                        cand = ACT(d, 1, CLIP(rnn_gate(x, w, r, 0, &p, dir, t, b, 2 * H + i) + rnn_hr(r, rhs, &p, dir, b, 2 * H + i) +
                                              rnn_bias(bb, &p, dir, 2 * H + i, BIAS_BOTH)));
                    }
                    hv = (1 - z) * cand + z * hv;
                } else {
                    float cp = cs[e];
                    long po = p.p.off + dir * p.p.s[0];
                    float pi = p.has_p ? ld_f(pp, po + i * p.p.s[1], (int)p.p.dt) : 0.0f;
                    float pov = p.has_p ? ld_f(pp, po + (H + i) * p.p.s[1], (int)p.p.dt) : 0.0f;
                    float pf = p.has_p ? ld_f(pp, po + (2 * H + i) * p.p.s[1], (int)p.p.dt) : 0.0f;
                    float gi = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, i) + rnn_bias(bb, &p, dir, i, BIAS_BOTH) + pi * cp));
                    float gf = p.input_forget ? 1 - gi
                                              : ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, 2 * H + i) +
                                                               rnn_bias(bb, &p, dir, 2 * H + i, BIAS_BOTH) + pf * cp));
                    float gc = ACT(d, 1, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, 3 * H + i) + rnn_bias(bb, &p, dir, 3 * H + i, BIAS_BOTH)));
                    float cn = gf * cp + gi * gc;
                    float go = ACT(d, 0, CLIP(rnn_gate(x, w, r, hc, &p, dir, t, b, H + i) + rnn_bias(bb, &p, dir, H + i, BIAS_BOTH) + pov * cn));
                    cs[e] = cn;
                    hv = go * ACT(d, 2, cn);
                }
                if (p.has_y) st_f(y, p.y.off + t * p.y.s[0] + dir * p.y.s[1] + b * p.y.s[2] + i * p.y.s[3], (int)p.y.dt, hv);
            }
            hn[e] = hv;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        cur = 1 - cur;
    }
    global float *hf = hs + cur * BH;
    for (long e = lid; e < BH; e += L) {
        long b = e / H, i = e % H, len = rnn_len(sl, &p, b);
        if (p.has_y)
            for (long t = len; t < T; t++) st_f(y, p.y.off + t * p.y.s[0] + dir * p.y.s[1] + b * p.y.s[2] + i * p.y.s[3], (int)p.y.dt, 0.0f);
        if (p.has_yh) st_f(yh, p.yh.off + dir * p.yh.s[0] + b * p.yh.s[1] + i * p.yh.s[2], (int)p.yh.dt, len == 0 ? 0.0f : hf[e]);
        if (p.has_yc) st_f(yc, p.yc.off + dir * p.yc.s[0] + b * p.yc.s[1] + i * p.yc.s[2], (int)p.yc.dt, len == 0 ? 0.0f : cs[e]);
    }
}
