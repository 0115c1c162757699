/*
 * k_rnn.c — host side of RNN, GRU and LSTM on OpenCL (rnn.cl): one
 * enqueue per node, a work-group per direction that walks the time steps
 * with barriers, its states in a scratch buffer kept in the command's
 * slot.  Before it, an LSTM (the Silero VAD v4's) sent its tensors to the
 * host and back on every run.  The sizes and per-role strides are the
 * CUDA backend's too: ops/lower_rnn.c computes them once.
 */
#include <string.h>

#include "backends/opencl/cl_internal.h"
#include "core/status.h"
#include "ops/lower_rnn.h"

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

/* The view of lowered operand o (ops/lower_rnn.h), NULL when absent. */
static const st_view *view_of(const st_kctx *k, const st_lrnn_op *o) { return o->operand < 0 ? NULL : &k->views[o->operand]; }

/* od from lowered operand o: its element offset and strides; 1 when
 * present (the kernel's has_* flags), else 0 and all zero. */
static cl_long od_of(const st_kctx *k, const st_lrnn_op *o, st_cl_rnn_od *od)
{
    memset(od, 0, sizeof *od);
    const st_view *v = view_of(k, o);
    if (!v) return 0;
    od->off = v->offset / (int64_t)st_dtype_size(v->dtype);
    od->dt = o->dt;
    for (int i = 0; i < 4; i++) od->s[i] = o->s[i];
    return 1;
}

static st_status cl_rnn(const st_kctx *k)
{
    st_cl_ctx *c = k->dev;
    st_lower_rnn q;
    st_lower_rnn_of(k, &q);
    st_cl_rnn_p p;
    memset(&p, 0, sizeof p);
    p.T = q.T;
    p.B = q.B;
    p.I = q.I;
    p.H = q.H;
    p.cell = q.cell;
    p.rev_single = q.reverse;
    p.dirs = q.dirs;
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
    od_of(k, &q.o[ST_LRNN_X], &p.x);
    od_of(k, &q.o[ST_LRNN_W], &p.w);
    od_of(k, &q.o[ST_LRNN_R], &p.r);
    p.has_b = od_of(k, &q.o[ST_LRNN_B], &p.b);
    p.has_sl = od_of(k, &q.o[ST_LRNN_SL], &p.sl);
    p.has_h0 = od_of(k, &q.o[ST_LRNN_H0], &p.h0);
    p.has_c0 = od_of(k, &q.o[ST_LRNN_C0], &p.c0);
    p.has_p = od_of(k, &q.o[ST_LRNN_P], &p.p);
    p.has_y = od_of(k, &q.o[ST_LRNN_Y], &p.y);
    p.has_yh = od_of(k, &q.o[ST_LRNN_YH], &p.yh);
    p.has_yc = od_of(k, &q.o[ST_LRNN_YC], &p.yc);
    if (p.B == 0 || p.H == 0) return ST_OK;
    if (!c->slot->data) {
        cl_int err;
        size_t bytes = (size_t)(p.dirs * 5 * p.B * p.H) * sizeof(float);
        cl_mem m = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
        ST_TRY(st_cl_check(err, "clCreateBuffer (RNN states)"));
        c->slot->data = m;
        c->slot->release = st_cl_release_mem;
    }
    /* an absent operand is bound to x's buffer and never touched */
    cl_mem xm = st_cl_mem(&k->views[0]), scratch = (cl_mem)c->slot->data, mem[ST_LRNN_OPS];
    for (int i = 0; i < ST_LRNN_OPS; i++) {
        const st_view *v = view_of(k, &q.o[i]);
        mem[i] = v ? st_cl_mem(v) : xm;
    }
    cl_kernel kern;
    ST_TRY(st_cl_kernel(c, ST_CLK_rnn, &kern));
    st_cl_arg args[] = {ST_CLA(mem[ST_LRNN_Y]),  ST_CLA(mem[ST_LRNN_YH]), ST_CLA(mem[ST_LRNN_YC]), ST_CLA(mem[ST_LRNN_X]),
                        ST_CLA(mem[ST_LRNN_W]),  ST_CLA(mem[ST_LRNN_R]),  ST_CLA(mem[ST_LRNN_B]),  ST_CLA(mem[ST_LRNN_SL]),
                        ST_CLA(mem[ST_LRNN_H0]), ST_CLA(mem[ST_LRNN_C0]), ST_CLA(mem[ST_LRNN_P]),  ST_CLA(scratch),
                        {sizeof p, &p}};
    ST_TRY(st_cl_set_args(kern, ST_CLK_rnn, 13, args));
    size_t global = (size_t)(RNN_LOCAL * p.dirs), local = RNN_LOCAL;
    return st_cl_run(c, kern, ST_CLK_rnn, 1, &global, &local, true);
}

/* ---- the kernel table entries of this file (opencl/table.c) ---- */

static bool rnn_accepts(const st_knode *n, char *why, size_t len) { return st_lrnn_accepts_dtypes(n, "OpenCL", why, len); }

const st_kernel st_cl_k_rnn[] = {
    {"RNN", "", ST_DT_FLOATS, cl_rnn, rnn_accepts, NULL, NULL},
    {"GRU", "", ST_DT_FLOATS, cl_rnn, rnn_accepts, NULL, NULL},
    {"LSTM", "", ST_DT_FLOATS, cl_rnn, rnn_accepts, NULL, NULL},
    {NULL}
};
