/*
 * k_rnn.c — host side of RNN, GRU and LSTM on OpenCL (rnn.cl): one
 * enqueue per node, a work-group per direction that walks the time steps
 * with barriers, its states in a scratch buffer kept in the command's
 * slot.  Before it, an LSTM (the Silero VAD v4's) sent its tensors to the
 * host and back on every run.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/misc.h"

#define RNN_LOCAL 64

/* Same layouts as st_rnn_od and st_rnn_p in rnn.cl (8-byte members, then
 * the floats, 8-byte aligned as a whole). */
typedef struct st_cl_rnn_od {
    cl_long off, dt, s[4];
} st_cl_rnn_od;

typedef struct st_cl_rnn_p {
    st_cl_rnn_od x, w, r, b, sl, h0, c0, p, y, yh, yc;
    cl_long T, B, I, H, cell, rev_single, dirs, has_clip, lbr, input_forget;
    cl_long has_b, has_sl, has_h0, has_c0, has_p, has_y, has_yh, has_yc;
    cl_long act_fn[2][3];
    cl_float act_a[2][3], act_b[2][3];
    cl_float clip, pad_;
} st_cl_rnn_p;
_Static_assert(sizeof(st_cl_rnn_p) == 11 * 48 + 18 * 8 + 6 * 8 + 12 * 4 + 8, "st_cl_rnn_p has no padding");

/* The view of operand i when it is given (an optional one may be absent). */
static const st_view *opt(const st_kctx *k, int i, bool out)
{
    int n = out ? k->n_out : k->n_in;
    if (i >= n) return NULL;
    const st_view *v = &k->views[out ? k->n_in + i : i];
    return v->rank >= 0 && v->storage ? v : NULL;
}

/* od from v, its strides picked in the order `pick` (-1: none). */
static cl_long od_of(const st_view *v, st_cl_rnn_od *od, const int pick[4])
{
    memset(od, 0, sizeof *od);
    if (!v) return 0;
    od->off = v->offset / (int64_t)st_dtype_size(v->dtype);
    od->dt = v->dtype;
    for (int i = 0; i < 4; i++) od->s[i] = pick[i] >= 0 && pick[i] < v->rank ? v->strides[pick[i]] : 0;
    return 1;
}

static st_status cl_rnn(const st_kctx *k)
{
    const st_rnn_state *s = k->state;
    st_cl_ctx *c = k->dev;
    const st_view *x = &k->views[0];
    int lay = s->layout;
    st_cl_rnn_p p;
    memset(&p, 0, sizeof p);
    p.T = x->sizes[lay ? 1 : 0];
    p.B = x->sizes[lay ? 0 : 1];
    p.I = x->sizes[2];
    p.H = s->hidden;
    p.cell = s->cell;
    p.rev_single = s->reverse;
    p.dirs = s->dirs;
    p.has_clip = s->has_clip;
    p.clip = s->clip;
    p.lbr = s->linear_before_reset;
    p.input_forget = s->input_forget;
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 3; j++) {
            p.act_fn[d][j] = s->act[d][j].fn;
            p.act_a[d][j] = s->act[d][j].alpha;
            p.act_b[d][j] = s->act[d][j].beta;
        }
    bool lstm = s->cell == ST_CELL_LSTM;
    const st_view *w = opt(k, 1, false), *r = opt(k, 2, false), *b = opt(k, 3, false), *sl = opt(k, 4, false);
    const st_view *h0 = opt(k, 5, false), *c0 = lstm ? opt(k, 6, false) : NULL, *pp = lstm ? opt(k, 7, false) : NULL;
    const st_view *y = opt(k, 0, true), *yh = opt(k, 1, true), *yc = lstm ? opt(k, 2, true) : NULL;
    const int xs[4] = {lay ? 1 : 0, lay ? 0 : 1, 2, -1}, ws[4] = {0, 1, 2, -1}, vs[4] = {0, 1, -1, -1};
    const int ss[4] = {lay ? 1 : 0, lay ? 0 : 1, 2, -1}, ys[4] = {lay ? 1 : 0, lay ? 2 : 1, lay ? 0 : 2, 3};
    const int ls[4] = {0, -1, -1, -1};
    od_of(x, &p.x, xs);
    od_of(w, &p.w, ws);
    od_of(r, &p.r, ws);
    p.has_b = od_of(b, &p.b, vs);
    p.has_sl = od_of(sl, &p.sl, ls);
    p.has_h0 = od_of(h0, &p.h0, ss);
    p.has_c0 = od_of(c0, &p.c0, ss);
    p.has_p = od_of(pp, &p.p, vs);
    p.has_y = od_of(y, &p.y, ys);
    p.has_yh = od_of(yh, &p.yh, ss);
    p.has_yc = od_of(yc, &p.yc, ss);
    if (p.B == 0 || p.H == 0) return ST_OK;
    if (!c->slot->data) {
        cl_int err;
        size_t bytes = (size_t)(p.dirs * 5 * p.B * p.H) * sizeof(float);
        cl_mem m = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        ST_TRY(st_cl_check(err, "clCreateBuffer (RNN states)"));
        c->slot->data = m;
        c->slot->release = st_cl_release_mem;
    }
    cl_mem xm = st_cl_mem(x), scratch = (cl_mem)c->slot->data;
    /* an absent operand is bound to x's buffer and never touched */
#define MEM(v) ((v) ? st_cl_mem(v) : xm)
    cl_mem ym = MEM(y), yhm = MEM(yh), ycm = MEM(yc), wm = MEM(w), rm = MEM(r), bm = MEM(b), slm = MEM(sl), h0m = MEM(h0),
           c0m = MEM(c0), pm = MEM(pp);
#undef MEM
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_rnn, &kern));
    st_cl_arg args[] = {ST_CLA(ym), ST_CLA(yhm), ST_CLA(ycm), ST_CLA(xm), ST_CLA(wm), ST_CLA(rm), ST_CLA(bm),
                        ST_CLA(slm), ST_CLA(h0m), ST_CLA(c0m), ST_CLA(pm), ST_CLA(scratch), {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_rnn, 13, args));
    size_t global = (size_t)(RNN_LOCAL * p.dirs), local = RNN_LOCAL;
    return st_cl_run(c, kern, ST_CLK_rnn, 1, &global, &local, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

static bool rnn_accepts(const st_knode *n, char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0 || i == 4) continue; /* sequence_lens is an integer */
        if (v->dtype != ST_F32 && v->dtype != ST_F16 && v->dtype != ST_BF16)
            return st_kernel_refuse(why, len, "%s of %s data is not implemented on OpenCL (f32, f16, bf16 are)", n->op->name,
                                    st_dtype_name(v->dtype));
    }
    if (n->n_in > 4 && n->views[4].rank >= 0 && st_dtype_is_float(n->views[4].dtype))
        return st_kernel_refuse(why, len, "%s with float sequence_lens", n->op->name);
    return true;
}

const st_kernel st_cl_k_rnn[] = {
    {"RNN", "", ST_DT_FLOATS, cl_rnn, rnn_accepts, NULL, NULL},
    {"GRU", "", ST_DT_FLOATS, cl_rnn, rnn_accepts, NULL, NULL},
    {"LSTM", "", ST_DT_FLOATS, cl_rnn, rnn_accepts, NULL, NULL},
    {NULL}
};
