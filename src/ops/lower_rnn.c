/*
 * lower_rnn.c — RNN, GRU and LSTM's sizes and per-role strides for the
 * backends, and the dtype checks the device accepts() share
 * (ops/lower_rnn.h says why).
 */
#include <string.h>

#include "ops/lower_rnn.h"

/* input i or output i (out) when the node has it: an omitted optional
 * operand has no data */
static int opt(const st_kctx *k, int i, bool out)
{
    if (i >= (out ? k->n_out : k->n_in)) return -1;
    const st_operand *o = out ? &k->out[i] : &k->in[i];
    return o->data ? (out ? k->n_in + i : i) : -1;
}

/* Operand oi's strides picked by role: role r is dim pick[r] (-1: none). */
static void role_strides(const st_kctx *k, int oi, const int pick[4], st_lrnn_op *p)
{
    memset(p, 0, sizeof *p);
    p->operand = oi;
    if (oi < 0) return;
    const st_operand *o = oi < k->n_in ? &k->in[oi] : &k->out[oi - k->n_in];
    p->dt = o->dtype;
    for (int r = 0; r < 4; r++) p->s[r] = pick[r] >= 0 && pick[r] < o->rank ? o->strides[pick[r]] : 0;
}

void st_lower_rnn_of(const st_kctx *k, st_lower_rnn *p)
{
    const st_rnn_state *s = k->state;
    const st_operand *x = &k->in[0];
    int lay = s->layout;
    memset(p, 0, sizeof *p);
    p->T = x->sizes[lay ? 1 : 0];
    p->B = x->sizes[lay ? 0 : 1];
    p->I = x->sizes[2];
    p->H = s->hidden;
    p->cell = s->cell;
    p->dirs = s->dirs;
    p->reverse = s->reverse;
    p->has_clip = s->has_clip;
    p->clip = s->clip;
    p->lbr = s->linear_before_reset;
    p->input_forget = s->input_forget;
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 3; j++) {
            p->act_fn[d][j] = s->act[d][j].fn;
            p->act_a[d][j] = s->act[d][j].alpha;
            p->act_b[d][j] = s->act[d][j].beta;
        }
    bool lstm = s->cell == ST_CELL_LSTM;
    /* roles to dims: layout 1 puts batch first in X, the states and Y */
    const int xs[4] = {lay ? 1 : 0, lay ? 0 : 1, 2, -1}, ws[4] = {0, 1, 2, -1}, vs[4] = {0, 1, -1, -1};
    const int ss[4] = {lay ? 1 : 0, lay ? 0 : 1, 2, -1}, ys[4] = {lay ? 1 : 0, lay ? 2 : 1, lay ? 0 : 2, 3};
    const int ls[4] = {0, -1, -1, -1};
    role_strides(k, 0, xs, &p->o[ST_LRNN_X]);
    role_strides(k, opt(k, 1, false), ws, &p->o[ST_LRNN_W]);
    role_strides(k, opt(k, 2, false), ws, &p->o[ST_LRNN_R]);
    role_strides(k, opt(k, 3, false), vs, &p->o[ST_LRNN_B]);
    role_strides(k, opt(k, 4, false), ls, &p->o[ST_LRNN_SL]);
    role_strides(k, opt(k, 5, false), ss, &p->o[ST_LRNN_H0]);
    role_strides(k, lstm ? opt(k, 6, false) : -1, ss, &p->o[ST_LRNN_C0]);
    role_strides(k, lstm ? opt(k, 7, false) : -1, vs, &p->o[ST_LRNN_P]);
    role_strides(k, opt(k, 0, true), ys, &p->o[ST_LRNN_Y]);
    role_strides(k, opt(k, 1, true), ss, &p->o[ST_LRNN_YH]);
    role_strides(k, lstm ? opt(k, 2, true) : -1, ss, &p->o[ST_LRNN_YC]);
}

int64_t st_lrnn_scratch_floats(const st_rnn_state *s, int64_t batch) { return (int64_t)s->dirs * 5 * batch * s->hidden; }

int64_t st_lrnn_batch(const st_knode *n)
{
    const st_rnn_state *s = n->state;
    return n->views[0].sizes[s->layout ? 0 : 1];
}

bool st_lrnn_accepts_dtypes(const st_knode *n, const char *device, char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const st_view *v = &n->views[i];
        if (v->rank < 0 || i == 4) continue; /* sequence_lens is an integer */
        if (v->dtype != ST_F32 && v->dtype != ST_F16 && v->dtype != ST_BF16)
            return st_kernel_refuse(why, len, "%s of %s data is not implemented on %s (f32, f16, bf16 are)", n->op->name,
                                    st_dtype_name(v->dtype), device);
    }
    if (n->n_in > 4 && n->views[4].rank >= 0 && st_dtype_is_float(n->views[4].dtype))
        return st_kernel_refuse(why, len, "%s with float sequence_lens", n->op->name);
    return true;
}
