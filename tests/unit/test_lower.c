/*
 * test_lower.c — the lowering layer (src/ops/lower_rnn.c,
 * src/ops/lower_qlinear.c, src/ops/lower_index.c) against the ONNX spec's index formulas.
 *
 * Why a unit test: the CUDA host code copies these structs into its
 * launches, and CUDA cannot run here, so the numbers it would launch with
 * are checked on the host.  Each case builds operands with random strided
 * layouts (dims in a random memory order, padded, at an offset), lowers
 * them, and checks every field against what the test computes on its own:
 * an element's offset by the spec's layout of the operand (RNN's layout 0
 * or 1; numpy broadcasting for QLinearAdd / Mul; a Concat input's place in
 * the output; the index family's numpy / ONNX formulas for Expand, Tile,
 * DepthToSpace, SpaceToDepth, Gather, GatherElements, ScatterElements,
 * GatherND, ScatterND and Einsum) through the view's strides, for every
 * element, never by re-running the implementation's arithmetic.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/dtype.h"
#include "core/view.h"
#include "ops/index.h"
#include "ops/kernel.h"
#include "ops/lower_index.h"
#include "ops/lower_qlinear.h"
#include "ops/lower_rnn.h"
#include "ops/misc.h"
#include "ops/ops.h"
#include "ops/qlinear.h"

static test_rng rng = {20261203};
/* operands point into this block: only their addresses are compared */
static char arena[1 << 16];

/* A random strided layout of `sizes`: the dims in a random memory order,
 * each padded by 0..2 elements, the first element at a random offset. */
static void layout(st_operand *o, st_dtype dt, int rank, const int64_t *sizes)
{
    memset(o, 0, sizeof *o);
    o->dtype = dt;
    o->rank = rank;
    int order[ST_MAX_RANK];
    for (int d = 0; d < rank; d++) order[d] = d;
    for (int d = rank - 1; d > 0; d--) {
        int e = (int)rng_range(&rng, 0, d), t = order[d];
        order[d] = order[e];
        order[e] = t;
    }
    int64_t step = 1;
    for (int q = rank - 1; q >= 0; q--) {
        int d = order[q];
        o->sizes[d] = sizes[d];
        o->strides[d] = step;
        step *= sizes[d] + rng_range(&rng, 0, 2);
    }
    for (int d = rank; d < ST_MAX_RANK; d++) o->sizes[d] = 1;
    o->data = arena + rng_range(&rng, 0, 4096);
}

static int64_t dot(int n, const int64_t *idx, const int64_t *s)
{
    int64_t e = 0;
    for (int d = 0; d < n; d++) e += idx[d] * s[d];
    return e;
}

/* Advances a row-major multi-index over sizes; false after the last. */
static bool next(int rank, const int64_t *sizes, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static int64_t numel(int rank, const int64_t *sizes)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sizes[d];
    return n;
}

/* ================= RNN, GRU, LSTM ================= */

typedef struct rnn_case {
    int cell, dirs, layout;
    bool reverse, has_b, has_sl, has_h0, has_c0, has_p, has_y, has_yh, has_yc;
    int64_t T, B, I, H;
} rnn_case;

/* The ONNX spec's shapes, in the node's layout (layout 1: X [B, T, I],
 * Y [B, T, D, H], states [B, D, H]). */
static void rnn_shapes(const rnn_case *c, int64_t sh[11][4], int *rk)
{
    int64_t G = c->cell == ST_CELL_LSTM ? 4 : c->cell == ST_CELL_GRU ? 3 : 1, D = c->dirs;
    int64_t x0[3] = {c->T, c->B, c->I}, x1[3] = {c->B, c->T, c->I};
    int64_t y0[4] = {c->T, D, c->B, c->H}, y1[4] = {c->B, c->T, D, c->H};
    int64_t s0[3] = {D, c->B, c->H}, s1[3] = {c->B, D, c->H};
    int64_t w[3] = {D, G * c->H, c->I}, r[3] = {D, G * c->H, c->H}, b[2] = {D, 2 * G * c->H}, p[2] = {D, 3 * c->H};
    int64_t sl[1] = {c->B};
    const int64_t *src[11] = {c->layout ? x1 : x0, w, r, b, sl, c->layout ? s1 : s0, c->layout ? s1 : s0, p,
                              c->layout ? y1 : y0, c->layout ? s1 : s0, c->layout ? s1 : s0};
    const int ranks[11] = {3, 3, 3, 2, 1, 3, 3, 2, 4, 3, 3};
    for (int i = 0; i < 11; i++) {
        rk[i] = ranks[i];
        memcpy(sh[i], src[i], (size_t)ranks[i] * sizeof(int64_t));
    }
}

/* Offset of element (t, dir, b, i) of Y by the spec (either layout). */
static int64_t spec_y(const rnn_case *c, const st_operand *y, int64_t t, int64_t d, int64_t b, int64_t i)
{
    int64_t i0[4] = {t, d, b, i}, i1[4] = {b, t, d, i};
    return dot(4, c->layout ? i1 : i0, y->strides);
}

/* Offset of element (dir, b, i) of a state (h0, c0, Y_h, Y_c). */
static int64_t spec_state(const rnn_case *c, const st_operand *v, int64_t d, int64_t b, int64_t i)
{
    int64_t i0[3] = {d, b, i}, i1[3] = {b, d, i};
    return dot(3, c->layout ? i1 : i0, v->strides);
}

/* Offset of element (t, b, i) of X. */
static int64_t spec_x(const rnn_case *c, const st_operand *x, int64_t t, int64_t b, int64_t i)
{
    int64_t i0[3] = {t, b, i}, i1[3] = {b, t, i};
    return dot(3, c->layout ? i1 : i0, x->strides);
}

static int64_t low(const st_lrnn_op *o, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * o->s[0] + b * o->s[1] + c * o->s[2] + d * o->s[3];
}

static void check_absent(const st_lrnn_op *o, const char *what)
{
    CHECKF(o->operand == -1 && o->dt == 0 && o->s[0] == 0 && o->s[1] == 0 && o->s[2] == 0 && o->s[3] == 0, "%s not absent", what);
}

static void rnn_one(const rnn_case *c)
{
    bool lstm = c->cell == ST_CELL_LSTM;
    int64_t sh[11][4];
    int rk[11];
    rnn_shapes(c, sh, rk);
    /* inputs X W R B sequence_lens initial_h initial_c P, outputs Y Y_h Y_c */
    st_operand ops[11];
    bool present[11] = {true, true, true, c->has_b, c->has_sl, c->has_h0, c->has_c0, c->has_p, c->has_y, c->has_yh, c->has_yc};
    for (int i = 0; i < 11; i++) {
        layout(&ops[i], i == 4 ? ST_I32 : (i % 2 ? ST_F16 : ST_F32), rk[i], sh[i]);
        if (!present[i]) ops[i].data = NULL;
    }
    int n_in = lstm ? 8 : 6, n_out = lstm ? 3 : 2;
    st_operand in[8], out[3];
    for (int i = 0; i < n_in; i++) in[i] = ops[i];
    for (int j = 0; j < n_out; j++) out[j] = ops[8 + j];
    st_rnn_state s;
    memset(&s, 0, sizeof s);
    s.cell = c->cell;
    s.dirs = c->dirs;
    s.reverse = c->reverse;
    s.gates = lstm ? 4 : c->cell == ST_CELL_GRU ? 3 : 1;
    s.hidden = c->H;
    s.layout = c->layout;
    s.has_clip = c->T % 2 == 1;
    s.clip = 2.5f;
    s.linear_before_reset = c->cell == ST_CELL_GRU && c->B % 2 == 0;
    s.input_forget = lstm && c->I % 2 == 0;
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 3; j++) {
            s.act[d][j].fn = (int)rng_range(&rng, 0, 10);
            s.act[d][j].alpha = (float)rng_range(&rng, 1, 9) / 8;
            s.act[d][j].beta = (float)rng_range(&rng, 1, 9) / 16;
        }
    st_kctx k;
    memset(&k, 0, sizeof k);
    k.state = &s;
    k.n_in = n_in;
    k.n_out = n_out;
    k.in = in;
    k.out = out;
    st_lower_rnn p;
    memset(&p, 0x5a, sizeof p); /* poisoned: every field must be written */
    st_lower_rnn_of(&k, &p);

    char tag[128];
    snprintf(tag, sizeof tag, "cell %d dirs %d rev %d layout %d", c->cell, c->dirs, c->reverse, c->layout);
    CHECKF(p.T == c->T && p.B == c->B && p.I == c->I && p.H == c->H, "%s: sizes", tag);
    CHECKF(p.cell == c->cell && p.dirs == c->dirs && p.reverse == c->reverse, "%s: cell / dirs / reverse", tag);
    CHECKF(p.has_clip == s.has_clip && p.clip == s.clip && p.lbr == s.linear_before_reset && p.input_forget == s.input_forget,
           "%s: attributes", tag);
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 3; j++)
            CHECKF(p.act_fn[d][j] == s.act[d][j].fn && p.act_a[d][j] == s.act[d][j].alpha && p.act_b[d][j] == s.act[d][j].beta,
                   "%s: activation [%d][%d]", tag, d, j);

    /* which operand each role is, and its dtype */
    const int roles[11] = {ST_LRNN_X, ST_LRNN_W, ST_LRNN_R, ST_LRNN_B, ST_LRNN_SL, ST_LRNN_H0, ST_LRNN_C0, ST_LRNN_P,
                           ST_LRNN_Y, ST_LRNN_YH, ST_LRNN_YC};
    for (int i = 0; i < 11; i++) {
        const st_lrnn_op *o = &p.o[roles[i]];
        bool lstm_only = i == 6 || i == 7 || i == 10;
        if (!present[i] || (lstm_only && !lstm)) {
            check_absent(o, tag);
            continue;
        }
        int want = i < 8 ? i : n_in + (i - 8);
        CHECKF(o->operand == want && o->dt == ops[i].dtype, "%s: operand %d is %d (want %d)", tag, i, o->operand, want);
    }

    /* every element's offset, by the spec's layouts */
    int64_t G = s.gates, D = c->dirs;
    const st_lrnn_op *o;
    o = &p.o[ST_LRNN_X];
    for (int64_t t = 0; t < c->T; t++)
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t i = 0; i < c->I; i++) CHECKF(low(o, t, b, i, 0) == spec_x(c, &ops[0], t, b, i), "%s: X", tag);
    for (int wr = 1; wr <= 2; wr++) {
        o = &p.o[wr == 1 ? ST_LRNN_W : ST_LRNN_R];
        int64_t cols = wr == 1 ? c->I : c->H;
        for (int64_t d = 0; d < D; d++)
            for (int64_t r = 0; r < G * c->H; r++)
                for (int64_t q = 0; q < cols; q++) {
                    int64_t idx[3] = {d, r, q};
                    CHECKF(low(o, d, r, q, 0) == dot(3, idx, ops[wr].strides), "%s: %s", tag, wr == 1 ? "W" : "R");
                }
    }
    if (c->has_b)
        for (int64_t d = 0; d < D; d++)
            for (int64_t e = 0; e < 2 * G * c->H; e++) {
                int64_t idx[2] = {d, e};
                CHECKF(low(&p.o[ST_LRNN_B], d, e, 0, 0) == dot(2, idx, ops[3].strides), "%s: B", tag);
            }
    if (lstm && c->has_p)
        for (int64_t d = 0; d < D; d++)
            for (int64_t e = 0; e < 3 * c->H; e++) {
                int64_t idx[2] = {d, e};
                CHECKF(low(&p.o[ST_LRNN_P], d, e, 0, 0) == dot(2, idx, ops[7].strides), "%s: P", tag);
            }
    if (c->has_sl)
        for (int64_t b = 0; b < c->B; b++) CHECKF(low(&p.o[ST_LRNN_SL], b, 0, 0, 0) == b * ops[4].strides[0], "%s: sequence_lens", tag);
    const int st_roles[4] = {ST_LRNN_H0, ST_LRNN_C0, ST_LRNN_YH, ST_LRNN_YC}, st_ops[4] = {5, 6, 9, 10};
    for (int q = 0; q < 4; q++) {
        if (p.o[st_roles[q]].operand < 0) continue;
        for (int64_t d = 0; d < D; d++)
            for (int64_t b = 0; b < c->B; b++)
                for (int64_t i = 0; i < c->H; i++)
                    CHECKF(low(&p.o[st_roles[q]], d, b, i, 0) == spec_state(c, &ops[st_ops[q]], d, b, i), "%s: state %d", tag, q);
    }
    if (c->has_y)
        for (int64_t t = 0; t < c->T; t++)
            for (int64_t d = 0; d < D; d++)
                for (int64_t b = 0; b < c->B; b++)
                    for (int64_t i = 0; i < c->H; i++)
                        CHECKF(low(&p.o[ST_LRNN_Y], t, d, b, i) == spec_y(c, &ops[8], t, d, b, i), "%s: Y", tag);
    CHECKF(st_lrnn_scratch_floats(&s, c->B) == 5 * D * c->B * c->H, "%s: scratch", tag);
}

static void test_rnn(void)
{
    int n = 0;
    for (int cell = 0; cell < 3; cell++)
        for (int dir = 0; dir < 3; dir++)      /* forward, reverse, bidirectional */
            for (int lay = 0; lay < 2; lay++)
                for (int opt = 0; opt < 4; opt++) {
                    rnn_case c;
                    memset(&c, 0, sizeof c);
                    c.cell = cell;
                    c.dirs = dir == 2 ? 2 : 1;
                    c.reverse = dir == 1;
                    c.layout = lay;
                    /* opt 0: nothing optional; 3: everything; 1, 2: some */
                    c.has_b = opt & 1;
                    c.has_h0 = opt & 2;
                    c.has_sl = opt == 3 || opt == 1;
                    c.has_c0 = opt >= 2;
                    c.has_p = opt == 3;
                    c.has_y = opt != 1;
                    c.has_yh = opt != 2;
                    c.has_yc = opt == 3;
                    c.T = rng_range(&rng, 1, 4);
                    c.B = rng_range(&rng, 1, 3);
                    c.I = rng_range(&rng, 1, 4);
                    c.H = rng_range(&rng, 1, 3);
                    rnn_one(&c);
                    n++;
                }
    printf("rnn: %d cases\n", n);
}

/* An RNN node's accepts: f16 data taken, f64 and float sequence_lens
 * refused, with the device named. */
static void test_rnn_accepts(void)
{
    static const st_op_def op = {.name = "LSTM"};
    st_rnn_state s;
    memset(&s, 0, sizeof s);
    s.cell = ST_CELL_LSTM;
    s.dirs = 1;
    s.hidden = 4;
    s.layout = 1;
    st_view v[11];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 11; i++) {
        v[i].rank = 3;
        v[i].dtype = ST_F16;
        for (int d = 0; d < 3; d++) v[i].sizes[d] = 2 + d;
    }
    v[4].rank = 1;
    v[4].dtype = ST_I32;
    v[6].rank = -1;
    st_knode n;
    memset(&n, 0, sizeof n);
    n.op = &op;
    n.state = &s;
    n.n_in = 8;
    n.n_out = 3;
    n.views = v;
    char why[256] = "";
    CHECKF(st_lrnn_accepts_dtypes(&n, "CUDA", why, sizeof why), "f16 LSTM refused: %s", why);
    CHECK(st_lrnn_batch(&n) == 2);     /* layout 1: X's dim 0 */
    v[2].dtype = ST_F64;
    CHECK(!st_lrnn_accepts_dtypes(&n, "OpenCL", why, sizeof why));
    CHECK_MSG(why, st_dtype_name(ST_F64));
    CHECK_MSG(why, "OpenCL");
    v[2].dtype = ST_F32;
    v[4].dtype = ST_F32;
    CHECK(!st_lrnn_accepts_dtypes(&n, "CUDA", why, sizeof why));
    CHECK_MSG(why, "sequence_lens");
}

/* ================= QLinearAdd / Mul, Lookup, Concat ================= */

/* The offset of element idx (of y's shape) of x by numpy broadcasting:
 * x's dims right-aligned, index 0 on its size-1 dims. */
static int64_t spec_bcast(const st_operand *x, int yrank, const int64_t *idx)
{
    int64_t e = 0;
    for (int d = 0; d < x->rank; d++) {
        int64_t i = idx[yrank - x->rank + d];
        e += (x->sizes[d] == 1 ? 0 : i) * x->strides[d];
    }
    return e;
}

static void qbinary_one(int yrank, const int64_t *ys, int arank, const int64_t *as, int brank, const int64_t *bs)
{
    st_operand in[8], out[1];
    memset(in, 0, sizeof in);
    layout(&out[0], ST_U8, yrank, ys);
    layout(&in[0], ST_U8, arank, as);
    layout(&in[3], ST_U8, brank, bs);
    int64_t one[1] = {1};
    for (int i = 1; i < 8; i++)
        if (i != 3) layout(&in[i], i == 1 || i == 4 || i == 6 ? ST_F32 : ST_U8, 0, one);
    st_qbinary_state s = {ST_QL_ADD};
    st_kctx k;
    memset(&k, 0, sizeof k);
    k.state = &s;
    k.n_in = 8;
    k.n_out = 1;
    k.in = in;
    k.out = out;
    st_lql_walk w;
    memset(&w, 0x5a, sizeof w);
    st_lower_qbinary_walk(&k, &w);
    CHECK(w.rank == yrank && w.y_off == 0 && w.count == numel(yrank, ys));
    CHECK(w.operand[ST_LQL_Y] == 8 && w.operand[ST_LQL_A] == 0 && w.operand[ST_LQL_B] == 3);
    for (int d = 0; d < yrank; d++) CHECK(w.n[d] == ys[d]);
    int64_t idx[ST_MAX_RANK] = {0};
    if (w.count)
        do {
            CHECKF(dot(yrank, idx, w.s[ST_LQL_Y]) == dot(yrank, idx, out[0].strides), "qbinary y");
            CHECKF(dot(yrank, idx, w.s[ST_LQL_A]) == spec_bcast(&in[0], yrank, idx), "qbinary a (rank %d of %d)", arank, yrank);
            CHECKF(dot(yrank, idx, w.s[ST_LQL_B]) == spec_bcast(&in[3], yrank, idx), "qbinary b (rank %d of %d)", brank, yrank);
        } while (next(yrank, ys, idx));

    /* the same operands as a lookup: x is input 0, no b */
    k.n_in = 2;
    st_lower_qunary_walk(&k, &w);
    CHECK(w.operand[ST_LQL_Y] == 2 && w.operand[ST_LQL_A] == 0 && w.operand[ST_LQL_B] == -1);
    for (int d = 0; d < yrank; d++) CHECK(w.s[ST_LQL_B][d] == 0);
    memset(idx, 0, sizeof idx);
    if (w.count)
        do CHECKF(dot(yrank, idx, w.s[ST_LQL_A]) == spec_bcast(&in[0], yrank, idx), "qlookup x");
        while (next(yrank, ys, idx));
}

static void test_qbinary(void)
{
    int64_t y3[3] = {2, 3, 4}, y4[4] = {2, 1, 3, 5};
    int64_t a_full[3] = {2, 3, 4}, b_vec[1] = {4}, b_col[2] = {3, 1}, a_mid[3] = {1, 3, 1}, b_one[1] = {1};
    int64_t a4[4] = {2, 1, 3, 1}, b4[3] = {1, 3, 5}, y0[2] = {0, 3};
    qbinary_one(3, y3, 3, a_full, 3, a_full);
    qbinary_one(3, y3, 3, a_full, 1, b_vec);
    qbinary_one(3, y3, 3, a_mid, 2, b_col);
    qbinary_one(3, y3, 1, b_one, 3, a_full);
    qbinary_one(4, y4, 4, a4, 3, b4);
    qbinary_one(2, y0, 2, y0, 1, b_one);           /* empty: count 0 */
    /* y of rank 0 (a scalar op) */
    int64_t none[1] = {1};
    qbinary_one(0, none, 0, none, 0, none);
}

static void concat_one(int rank, const int64_t *ys, int axis, int nx, const int64_t *along)
{
    st_operand in[2 + 3 * 4], out[1];
    memset(in, 0, sizeof in);
    int64_t sizes[ST_MAX_RANK], one[1] = {1}, total = 0;
    for (int t = 0; t < nx; t++) total += along[t];
    memcpy(sizes, ys, (size_t)rank * sizeof *sizes);
    sizes[axis] = total;
    layout(&out[0], ST_I8, rank, sizes);
    layout(&in[0], ST_F32, 0, one);
    layout(&in[1], ST_I8, 0, one);
    for (int t = 0; t < nx; t++) {
        sizes[axis] = along[t];
        layout(&in[2 + 3 * t], ST_I8, rank, sizes);
        layout(&in[3 + 3 * t], ST_F32, 0, one);
        layout(&in[4 + 3 * t], ST_I8, 0, one);
    }
    st_qconcat_state s = {axis};
    st_kctx k;
    memset(&k, 0, sizeof k);
    k.state = &s;
    k.n_in = 2 + 3 * nx;
    k.n_out = 1;
    k.in = in;
    k.out = out;
    CHECK(st_lql_concat_count(k.n_in) == nx);
    int64_t before = 0;
    for (int t = 0; t < nx; t++) {
        st_lql_walk w;
        memset(&w, 0x5a, sizeof w);
        st_lower_qconcat_walk(&k, t, &w);
        const st_operand *x = &in[2 + 3 * t];
        CHECK(w.rank == rank && w.count == numel(rank, x->sizes));
        CHECK(w.operand[ST_LQL_Y] == k.n_in && w.operand[ST_LQL_A] == 2 + 3 * t && w.operand[ST_LQL_B] == -1);
        for (int d = 0; d < rank; d++) CHECK(w.n[d] == x->sizes[d]);
        /* x's element idx is y's element idx shifted along the axis by the
         * inputs before it */
        int64_t idx[ST_MAX_RANK] = {0};
        if (w.count)
            do {
                int64_t yi[ST_MAX_RANK];
                memcpy(yi, idx, sizeof yi);
                yi[axis] += before;
                CHECKF(w.y_off + dot(rank, idx, w.s[ST_LQL_Y]) == dot(rank, yi, out[0].strides), "concat y, input %d axis %d", t, axis);
                CHECKF(dot(rank, idx, w.s[ST_LQL_A]) == dot(rank, idx, x->strides), "concat x, input %d", t);
            } while (next(rank, x->sizes, idx));
        before += along[t];
    }
}

static void test_qconcat(void)
{
    int64_t ys[4] = {2, 3, 4, 2};
    int64_t al3[3] = {1, 3, 2}, al2[2] = {2, 1}, al4[4] = {2, 0, 1, 3};
    for (int axis = 0; axis < 4; axis++) concat_one(4, ys, axis, 3, al3);
    concat_one(2, ys, 1, 2, al2);
    concat_one(3, ys, 2, 4, al4);  /* an empty input among them */
    concat_one(1, ys, 0, 2, al2);
}

/* ---- parameters, tables and accepts (the knode side) ---- */

typedef struct qnode {
    st_view v[16];
    const void *data[16];
    st_knode n;
} qnode;

static void qnode_init(qnode *q, const char *name, const void *state, int n_in)
{
    static st_op_def ops[3] = {{.name = "QLinearAdd"}, {.name = "QLinearLookup"}, {.name = "QLinearConcat"}};
    memset(q, 0, sizeof *q);
    for (int i = 0; i < 16; i++) {
        q->v[i].rank = 0;
        q->v[i].dtype = ST_U8;
        q->v[i].sizes[0] = 1;
    }
    q->n.op = strcmp(name, "QLinearAdd") == 0 ? &ops[0] : strcmp(name, "QLinearLookup") == 0 ? &ops[1] : &ops[2];
    q->n.state = state;
    q->n.n_in = n_in;
    q->n.n_out = 1;
    q->n.views = q->v;
    q->n.data = q->data;
}

static void param(qnode *q, int i, st_dtype dt, const void *data)
{
    q->v[i].dtype = dt;
    q->data[i] = data;
}

/* QuantizeLinear (saturate(round_half_even(x / scale) + zero_point)) of
 * DequantizeLinear ((x - zero_point) * scale), in f32 as the spec's
 * float path, for one byte. */
static uint8_t spec_requant(int32_t x, int32_t xz, float xs, float ys, int32_t yz, bool yu)
{
    float f = (float)(x - xz) * xs;
    float r = nearbyintf(f / ys);      /* the default rounding: half to even */
    double v = (double)r + yz, lo = yu ? 0 : -128, hi = yu ? 255 : 127;
    v = v < lo ? lo : v > hi ? hi : v;
    return (uint8_t)(int32_t)v;
}

static void test_qparams(void)
{
    static const float sa = 0.05f, sb = 0.125f, sc = 0.2f, ys = 0.1f, xs0 = 0.03f, xs1 = 0.4f;
    static const uint8_t za = 128, zc = 200;
    static const int8_t yz = -5, xz0 = 7, xz1 = -100;
    /* QLinearMul, i8 a and b, u8 y, zero point of b absent */
    st_qbinary_state bs = {ST_QL_MUL};
    qnode q;
    qnode_init(&q, "QLinearAdd", &bs, 8);
    param(&q, 0, ST_I8, NULL);
    param(&q, 1, ST_F32, &sa);
    param(&q, 2, ST_U8, &za);
    param(&q, 3, ST_I8, NULL);
    param(&q, 4, ST_F32, &sb);
    q.v[5].rank = -1;
    param(&q, 6, ST_F32, &sc);
    param(&q, 7, ST_U8, &zc);
    q.v[8].dtype = ST_U8;
    char why[256] = "";
    CHECKF(st_lql_accepts_binary(&q.n, why, sizeof why), "refused: %s", why);
    st_lql_binary b;
    memset(&b, 0x5a, sizeof b);
    st_lower_qbinary_params(&q.n, &b);
    CHECK(b.sa == sa && b.sb == sb && b.sc == sc);
    CHECK(b.za == 128 && b.zb == 0 && b.zc == 200);
    CHECK(b.a_signed && !b.c_signed && b.mul);
    /* a scale computed at run time, an f16 scale, an int32 data operand */
    q.data[4] = NULL;
    CHECK(!st_lql_accepts_binary(&q.n, why, sizeof why));
    CHECK_MSG(why, "run time");
    q.data[4] = &sb;
    q.v[6].dtype = ST_F16;
    CHECK(!st_lql_accepts_binary(&q.n, why, sizeof why));
    q.v[6].dtype = ST_F32;
    q.v[3].dtype = ST_I32;
    CHECK(!st_lql_accepts_binary(&q.n, why, sizeof why));
    CHECK_MSG(why, "operand 3");

    /* QLinearConcat: y i8 (scale ys, zero point yz), two inputs u8 / i8 */
    st_qconcat_state cs = {0};
    qnode_init(&q, "QLinearConcat", &cs, 8);
    param(&q, 0, ST_F32, &ys);
    param(&q, 1, ST_I8, &yz);
    param(&q, 2, ST_U8, NULL);
    param(&q, 3, ST_F32, &xs0);
    param(&q, 4, ST_I8, &xz0);
    param(&q, 5, ST_I8, NULL);
    param(&q, 6, ST_F32, &xs1);
    param(&q, 7, ST_I8, &xz1);
    q.v[8].dtype = ST_I8;
    CHECKF(st_lql_accepts_concat(&q.n, why, sizeof why), "refused: %s", why);
    uint8_t tab[256];
    st_lower_qconcat_table(&q.n, 0, tab);
    for (int x = 0; x < 256; x++) CHECKF(tab[x] == spec_requant(x, xz0, xs0, ys, yz, false), "concat table 0 [%d]", x);
    st_lower_qconcat_table(&q.n, 1, tab);
    for (int x = 0; x < 256; x++)
        CHECKF(tab[x] == spec_requant((int8_t)(uint8_t)x, xz1, xs1, ys, yz, false), "concat table 1 [%d]", x);
    q.data[6] = NULL;
    CHECK(!st_lql_accepts_concat(&q.n, why, sizeof why));

    /* QLinearLookup: the table as input 1, strided; then the state's */
    static st_qlut_state ls;
    memset(&ls, 0, sizeof ls);
    ls.kind = 2;
    static uint8_t strided[512];
    for (int i = 0; i < 512; i++) strided[i] = (uint8_t)(i * 37 + 11);
    qnode_init(&q, "QLinearLookup", &ls, 2);
    q.v[1].rank = 1;
    q.v[1].sizes[0] = 256;
    q.v[1].strides[0] = 2;
    param(&q, 1, ST_U8, strided);
    CHECKF(st_lql_accepts_lookup(&q.n, why, sizeof why), "refused: %s", why);
    st_lower_qlookup_table(&q.n, tab);
    for (int x = 0; x < 256; x++) CHECK(tab[x] == strided[2 * x]);
    ls.has_table = true;
    for (int x = 0; x < 256; x++) ls.table[x] = (uint8_t)(255 - x);
    q.data[1] = NULL;
    CHECK(st_lql_accepts_lookup(&q.n, why, sizeof why));
    st_lower_qlookup_table(&q.n, tab);
    for (int x = 0; x < 256; x++) CHECK(tab[x] == 255 - x);
    ls.has_table = false;
    CHECK(!st_lql_accepts_lookup(&q.n, why, sizeof why));
    ls.kind = 0;
    CHECK(!st_lql_accepts_lookup(&q.n, why, sizeof why));
}

/* ================= the index family (lower_index.c) ================= */

/* The largest element offset of o (its strides are non-negative). */
static int64_t extent(const st_operand *o)
{
    int64_t e = 0;
    for (int d = 0; d < o->rank; d++) e += (o->sizes[d] - 1) * o->strides[d];
    return e;
}

static void rand_sizes(int rank, int64_t *n, int64_t lo, int64_t hi)
{
    for (int d = 0; d < rank; d++) n[d] = rng_range(&rng, lo, hi);
}

static st_kctx kctx_of(const void *state, int n_in, const st_operand *in, const st_operand *out)
{
    st_kctx k;
    memset(&k, 0, sizeof k);
    k.state = state;
    k.n_in = n_in;
    k.n_out = 1;
    k.in = in;
    k.out = out;
    return k;
}

/* x's offset for y's element at yi, by the op's spec. */
typedef int64_t (*spec_src)(const st_operand *x, const st_operand *y, const int64_t *yi, const void *arg);

/* The lowered copy p visits every element of y exactly once and reads
 * x where the spec says. */
static void check_copy(const char *what, const st_lower_copy *p, const st_operand *x, const st_operand *y, spec_src src, const void *arg)
{
    int64_t ny = numel(y->rank, y->sizes), ey = extent(y) + 1;
    CHECKF(p->total == ny, "%s: total %lld, y has %lld", what, (long long)p->total, (long long)ny);
    static int64_t xmap[1 << 16];
    static int seen[1 << 16];
    if (ey > (1 << 16)) return;
    memset(seen, 0, (size_t)ey * sizeof *seen);
    int64_t idx[ST_LCOPY_RANK] = {0};
    for (int64_t i = 0; i < p->total; i++) {
        int64_t oy = 0, ox = 0;
        for (int d = 0; d < p->rank; d++) {
            oy += idx[d] * p->ys[d];
            ox += idx[d] * p->xs[d];
        }
        if (oy >= 0 && oy < ey) {
            seen[oy]++;
            xmap[oy] = ox;
        } else {
            CHECKF(false, "%s: y offset %lld out of y", what, (long long)oy);
        }
        next(p->rank, p->n, idx);
    }
    int64_t yi[ST_MAX_RANK] = {0};
    for (int64_t i = 0; i < ny; i++) {
        int64_t oy = dot(y->rank, yi, y->strides);
        CHECKF(seen[oy] == 1, "%s: y element %lld written %d times", what, (long long)i, seen[oy]);
        CHECKF(xmap[oy] == src(x, y, yi, arg), "%s: y element %lld reads x at %lld, spec %lld", what, (long long)i,
               (long long)xmap[oy], (long long)src(x, y, yi, arg));
        next(y->rank, y->sizes, yi);
    }
}

static int64_t expand_src(const st_operand *x, const st_operand *y, const int64_t *yi, const void *arg)
{
    (void)arg;
    int64_t xi[ST_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        int64_t c = yi[y->rank - x->rank + d];
        xi[d] = x->sizes[d] == 1 ? 0 : c; /* numpy: a size-1 dim repeats */
    }
    return dot(x->rank, xi, x->strides);
}

static int64_t tile_src(const st_operand *x, const st_operand *y, const int64_t *yi, const void *arg)
{
    (void)y, (void)arg;
    int64_t xi[ST_MAX_RANK];
    for (int d = 0; d < x->rank; d++) xi[d] = yi[d] % x->sizes[d];
    return dot(x->rank, xi, x->strides);
}

/* DepthToSpace: y[n, c, h*b + i, w*b + j] = x[n, (i*b + j)*C + c, h, w]
 * (DCR) or x[n, c*b*b + i*b + j, h, w] (CRD). */
static int64_t d2s_src(const st_operand *x, const st_operand *y, const int64_t *yi, const void *arg)
{
    const st_index_state *s = arg;
    int64_t b = s->n, C = y->sizes[1], i = yi[2] % b, j = yi[3] % b;
    int64_t ch = s->flag ? yi[1] * b * b + i * b + j : (i * b + j) * C + yi[1];
    int64_t xi[4] = {yi[0], ch, yi[2] / b, yi[3] / b};
    return dot(4, xi, x->strides);
}

/* SpaceToDepth: y[n, (i*b + j)*C + c, h, w] = x[n, c, h*b + i, w*b + j]. */
static int64_t s2d_src(const st_operand *x, const st_operand *y, const int64_t *yi, const void *arg)
{
    (void)y;
    const st_index_state *s = arg;
    int64_t b = s->n, C = x->sizes[1], c = yi[1] % C, ij = yi[1] / C;
    int64_t xi[4] = {yi[0], c, yi[2] * b + ij / b, yi[3] * b + ij % b};
    return dot(4, xi, x->strides);
}

static void test_copies(void)
{
    for (int it = 0; it < 40; it++) {
        st_operand x, y;
        int64_t xn[ST_MAX_RANK], yn[ST_MAX_RANK];
        /* Expand: x right-aligned into y, size-1 dims broadcast */
        int yr = (int)rng_range(&rng, 1, 4), xr = (int)rng_range(&rng, 0, yr);
        rand_sizes(yr, yn, 2, 4);
        for (int d = 0; d < xr; d++) xn[d] = rng_range(&rng, 0, 1) ? 1 : yn[yr - xr + d];
        layout(&x, ST_F32, xr, xn);
        layout(&y, ST_F32, yr, yn);
        st_kctx k = kctx_of(NULL, 1, &x, &y);
        st_lower_copy p;
        st_lower_expand(&k, &p);
        CHECK(p.rank == yr);
        check_copy("Expand", &p, &x, &y, expand_src, NULL);

        /* Tile: y dim = x dim * repeats */
        int r = (int)rng_range(&rng, 1, 3);
        rand_sizes(r, xn, 1, 3);
        for (int d = 0; d < r; d++) yn[d] = xn[d] * rng_range(&rng, 1, 3);
        layout(&x, ST_I8, r, xn);
        layout(&y, ST_I8, r, yn);
        k = kctx_of(NULL, 2, &x, &y);
        st_lower_tile(&k, &p);
        CHECK(p.rank == 2 * r);
        check_copy("Tile", &p, &x, &y, tile_src, NULL);

        /* DepthToSpace, both modes; SpaceToDepth */
        st_index_state s = {0};
        s.n = rng_range(&rng, 2, 3);
        s.flag = it % 2;
        int64_t C = rng_range(&rng, 1, 3), H = rng_range(&rng, 1, 3), W = rng_range(&rng, 1, 3), N = rng_range(&rng, 1, 2);
        int64_t small[4] = {N, C * s.n * s.n, H, W}, big[4] = {N, C, H * s.n, W * s.n};
        layout(&x, ST_F16, 4, small);
        layout(&y, ST_F16, 4, big);
        k = kctx_of(&s, 1, &x, &y);
        st_lower_depth_to_space(&k, &p);
        check_copy(s.flag ? "DepthToSpace CRD" : "DepthToSpace DCR", &p, &x, &y, d2s_src, &s);
        layout(&x, ST_F16, 4, big);
        layout(&y, ST_F16, 4, small);
        k = kctx_of(&s, 1, &x, &y);
        st_lower_space_to_depth(&k, &p);
        check_copy("SpaceToDepth", &p, &x, &y, s2d_src, &s);
    }
    /* a scalar Tile is one element; an empty one nothing */
    st_operand x, y;
    layout(&x, ST_F32, 0, NULL);
    layout(&y, ST_F32, 0, NULL);
    st_kctx k = kctx_of(NULL, 2, &x, &y);
    st_lower_copy p;
    st_lower_tile(&k, &p);
    CHECK(p.rank == 1 && p.n[0] == 1 && p.total == 1 && p.xs[0] == 0 && p.ys[0] == 0);
    int64_t z[2] = {2, 0};
    layout(&x, ST_F32, 2, z);
    layout(&y, ST_F32, 2, z);
    st_lower_tile(&k, &p);
    CHECK(p.total == 0);
}

/* Offsets of walk element wi in each role, and the DATA offset for index v. */
static void walk_at(const st_lower_gather *p, const int64_t *wi, int64_t v, int64_t *data, int64_t *peer, int64_t *index)
{
    *data = v * p->data_axis;
    *peer = *index = 0;
    for (int d = 0; d < p->rank; d++) {
        *data += wi[d] * p->s[ST_LG_DATA][d];
        *peer += wi[d] * p->s[ST_LG_PEER][d];
        *index += wi[d] * p->s[ST_LG_INDEX][d];
    }
}

static void test_gathers(void)
{
    for (int it = 0; it < 40; it++) {
        st_operand x, ix, u, y;
        int64_t xn[ST_MAX_RANK], in[ST_MAX_RANK], yn[ST_MAX_RANK];
        /* Gather: y = x.shape[:a] + ix.shape + x.shape[a+1:] */
        int xr = (int)rng_range(&rng, 1, 3), q = (int)rng_range(&rng, 0, 2);
        st_gather_state gs = {0};
        gs.axis = (int)rng_range(&rng, 0, xr - 1);
        rand_sizes(xr, xn, 2, 4);
        rand_sizes(q, in, 1, 3);
        int yr = 0;
        for (int d = 0; d < gs.axis; d++) yn[yr++] = xn[d];
        for (int d = 0; d < q; d++) yn[yr++] = in[d];
        for (int d = gs.axis + 1; d < xr; d++) yn[yr++] = xn[d];
        layout(&x, ST_F32, xr, xn);
        layout(&ix, ST_I64, q, in);
        layout(&y, ST_F32, yr, yn);
        st_operand g_in[2] = {x, ix};
        st_kctx k = kctx_of(&gs, 2, g_in, &y);
        st_lower_gather p;
        st_lower_gather_of(&k, &p);
        CHECK(p.rank == yr && p.total == numel(yr, yn) && p.dim == xn[gs.axis]);
        CHECK(p.operand[ST_LG_DATA] == 0 && p.operand[ST_LG_PEER] == 2 && p.operand[ST_LG_INDEX] == 1);
        int64_t wi[ST_MAX_RANK] = {0};
        for (int64_t i = 0; i < p.total; i++) {
            int64_t v = rng_range(&rng, 0, p.dim - 1), od, op, oi, xi[ST_MAX_RANK];
            walk_at(&p, wi, v, &od, &op, &oi);
            for (int d = 0; d < xr; d++) xi[d] = d < gs.axis ? wi[d] : d == gs.axis ? v : wi[d + q - 1];
            CHECKF(op == dot(yr, wi, y.strides), "Gather y [%lld]", (long long)i);
            CHECKF(oi == dot(q, wi + gs.axis, ix.strides), "Gather indices [%lld]", (long long)i);
            CHECKF(od == dot(xr, xi, x.strides), "Gather x [%lld]", (long long)i);
            next(yr, yn, wi);
        }

        /* GatherElements: y[c] = x[c with c[a] = index[c]] */
        int r = (int)rng_range(&rng, 1, 4);
        st_index_state es = {0};
        es.axis = (int)rng_range(&rng, 0, r - 1);
        rand_sizes(r, xn, 2, 4);
        for (int d = 0; d < r; d++) in[d] = rng_range(&rng, 1, xn[d]);
        layout(&x, ST_U8, r, xn);
        layout(&ix, ST_I32, r, in);
        layout(&y, ST_U8, r, in);
        st_operand e_in[2] = {x, ix};
        k = kctx_of(&es, 2, e_in, &y);
        st_lower_gather_elements(&k, &p);
        CHECK(p.rank == r && p.axis == es.axis && p.dim == xn[es.axis] && p.total == numel(r, in));
        CHECK(p.line == in[es.axis] && p.lines == p.total / in[es.axis]);
        memset(wi, 0, sizeof wi);
        for (int64_t i = 0; i < p.total; i++) {
            int64_t v = rng_range(&rng, 0, p.dim - 1), od, op, oi, xi[ST_MAX_RANK];
            walk_at(&p, wi, v, &od, &op, &oi);
            memcpy(xi, wi, sizeof xi);
            xi[es.axis] = v;
            CHECKF(op == dot(r, wi, y.strides) && oi == dot(r, wi, ix.strides), "GatherElements y / indices [%lld]", (long long)i);
            CHECKF(od == dot(r, xi, x.strides), "GatherElements x [%lld]", (long long)i);
            next(r, in, wi);
        }

        /* ScatterElements: y[c with c[a] = index[c]] = updates[c], over the indices */
        layout(&x, ST_F32, r, xn);
        layout(&u, ST_F32, r, in);
        layout(&y, ST_F32, r, xn);
        st_operand s_in[3] = {x, ix, u};
        k = kctx_of(&es, 3, s_in, &y);
        st_lower_scatter_elements(&k, &p);
        CHECK(p.operand[ST_LG_DATA] == 3 && p.operand[ST_LG_PEER] == 2 && p.operand[ST_LG_INDEX] == 1);
        CHECK(p.rank == r && p.dim == xn[es.axis] && p.total == numel(r, in) && p.lines == p.total / in[es.axis]);
        memset(wi, 0, sizeof wi);
        for (int64_t i = 0; i < p.total; i++) {
            int64_t v = rng_range(&rng, 0, p.dim - 1), od, op, oi, yi[ST_MAX_RANK];
            walk_at(&p, wi, v, &od, &op, &oi);
            memcpy(yi, wi, sizeof yi);
            yi[es.axis] = v;
            CHECKF(op == dot(r, wi, u.strides) && oi == dot(r, wi, s_in[1].strides), "ScatterElements updates / indices [%lld]",
                   (long long)i);
            CHECKF(od == dot(r, yi, y.strides), "ScatterElements y [%lld]", (long long)i);
            next(r, in, wi);
        }
    }
}

static void test_nd(void)
{
    for (int it = 0; it < 40; it++) {
        st_operand x, ix, u, y;
        int64_t xn[ST_MAX_RANK], in[ST_MAX_RANK], yn[ST_MAX_RANK];
        /* GatherND: batch b, x [batch, m indexed, slice], indices [batch, tuples, m],
         * y = indices.shape[:-1] + x.shape[b + m:] */
        st_index_state s = {0};
        int b = (int)rng_range(&rng, 0, 1), m = (int)rng_range(&rng, 1, 2), sr = (int)rng_range(&rng, 0, 2);
        int t = (int)rng_range(&rng, 0, 2), xr = b + m + sr, q = b + t + 1;
        s.n = b;
        rand_sizes(xr, xn, 2, 3);
        for (int d = 0; d < b; d++) in[d] = xn[d];
        rand_sizes(t, in + b, 1, 3);
        in[q - 1] = m;
        int yr = 0;
        for (int d = 0; d < q - 1; d++) yn[yr++] = in[d];
        for (int d = b + m; d < xr; d++) yn[yr++] = xn[d];
        layout(&x, ST_F32, xr, xn);
        layout(&ix, ST_I64, q, in);
        layout(&y, ST_F32, yr, yn);
        st_operand g_in[2] = {x, ix};
        st_kctx k = kctx_of(&s, 2, g_in, &y);
        st_lower_nd p;
        st_lower_gather_nd(&k, &p);
        CHECK(p.b == b && p.m == m && p.q == q && p.tuples == numel(q - 1, in) && p.slice_rank == sr);
        CHECK(p.slice == numel(sr, xn + b + m) && p.items == numel(yr, yn));
        int64_t e[ST_MAX_RANK] = {0}, xi[ST_MAX_RANK] = {0}, yi[ST_MAX_RANK] = {0};
        for (int64_t i = 0; i < p.slice; i++) {
            CHECK(p.slice_n[0] == (sr ? xn[b + m] : 0) || sr == 0);
            for (int d = 0; d < sr; d++) {
                xi[b + m + d] = e[d];
                yi[q - 1 + d] = e[d];
            }
            CHECKF(dot(sr, e, p.slice_s[0]) == dot(xr, xi, x.strides), "GatherND slice in x [%lld]", (long long)i);
            CHECKF(dot(sr, e, p.slice_s[1]) == dot(yr, yi, y.strides), "GatherND slice in y [%lld]", (long long)i);
            next(sr, p.slice_n, e);
        }

        /* ScatterND: y = x; y[indices[t]] = updates[t], updates = indices.shape[:-1] + y.shape[m:] */
        int yr2 = m + sr, ur = t + sr;
        rand_sizes(yr2, yn, 2, 3);
        rand_sizes(t, in, 1, 3);
        in[t] = m;
        int64_t un[ST_MAX_RANK];
        for (int d = 0; d < t; d++) un[d] = in[d];
        for (int d = 0; d < sr; d++) un[t + d] = yn[m + d];
        layout(&x, ST_F32, yr2, yn);
        layout(&ix, ST_I64, t + 1, in);
        layout(&u, ST_F32, ur, un);
        layout(&y, ST_F32, yr2, yn);
        st_operand s_in[3] = {x, ix, u};
        k = kctx_of(&s, 3, s_in, &y);
        st_lower_scatter_nd(&k, &p);
        CHECK(p.m == m && p.q == t + 1 && p.tuples == numel(t, in) && p.slice_rank == sr && p.slice == numel(sr, yn + m));
        CHECK(p.items == (numel(ur, un) ? p.slice : 0));
        memset(e, 0, sizeof e);
        memset(yi, 0, sizeof yi);
        int64_t ui[ST_MAX_RANK] = {0};
        for (int64_t i = 0; i < p.slice; i++) {
            for (int d = 0; d < sr; d++) {
                CHECK(p.slice_n[d] == yn[m + d]);
                yi[m + d] = e[d];
                ui[t + d] = e[d];
            }
            CHECKF(dot(sr, e, p.slice_s[0]) == dot(yr2, yi, y.strides), "ScatterND slice in y [%lld]", (long long)i);
            CHECKF(dot(sr, e, p.slice_s[1]) == dot(ur, ui, u.strides), "ScatterND slice in updates [%lld]", (long long)i);
            next(sr, p.slice_n, e);
        }
    }
}

/* Einsum "ii,ijk,1k->kj" style: labels a = 0 (a diagonal in input 0),
 * b = 1, c = 2 (size 1 in input 2: broadcast); output [c, b]; a summed. */
static void test_einsum(void)
{
    for (int it = 0; it < 20; it++) {
        st_einsum_state s;
        memset(&s, 0, sizeof s);
        int64_t A = rng_range(&rng, 2, 4), B = rng_range(&rng, 2, 4), C = rng_range(&rng, 2, 4);
        s.n_in = 3;
        s.rank[0] = 2, s.label[0][0] = 0, s.label[0][1] = 0;
        s.rank[1] = 3, s.label[1][0] = 0, s.label[1][1] = 1, s.label[1][2] = 2;
        s.rank[2] = 2, s.label[2][0] = 0, s.label[2][1] = 2;
        s.out_rank = 2, s.out_label[0] = 2, s.out_label[1] = 1;
        s.size[0] = A, s.size[1] = B, s.size[2] = C;
        st_operand in[3], y;
        int64_t n0[2] = {A, A}, n1[3] = {A, B, C}, n2[2] = {1, C}, ny[2] = {C, B};
        layout(&in[0], ST_F32, 2, n0);
        layout(&in[1], ST_F32, 3, n1);
        layout(&in[2], ST_F32, 2, n2);
        layout(&y, ST_F32, 2, ny);
        st_kctx k = kctx_of(&s, 3, in, &y);
        st_lower_einsum p;
        st_lower_einsum_of(&k, &p);
        CHECK(p.n_in == 3 && p.out_rank == 2 && p.n_sum == 1 && p.sum_n[0] == A && p.total == C * B);
        CHECK(p.out_n[0] == C && p.out_n[1] == B && p.out_ys[0] == y.strides[0] && p.out_ys[1] == y.strides[1]);
        for (int64_t c = 0; c < C; c++)
            for (int64_t bb = 0; bb < B; bb++)
                for (int64_t a = 0; a < A; a++) {
                    int64_t o[3];
                    for (int i = 0; i < 3; i++) o[i] = c * p.out_s[0][i] + bb * p.out_s[1][i] + a * p.sum_s[0][i];
                    int64_t i0[2] = {a, a}, i1[3] = {a, bb, c}, i2[2] = {0, c};
                    CHECKF(o[0] == dot(2, i0, in[0].strides), "Einsum input 0 (diagonal) at [%lld %lld %lld]", (long long)c,
                           (long long)bb, (long long)a);
                    CHECK(o[1] == dot(3, i1, in[1].strides));
                    CHECK(o[2] == dot(2, i2, in[2].strides));
                }
    }
}

static void test_pad(void)
{
    st_pad_state s;
    memset(&s, 0, sizeof s);
    s.mode = ST_PAD_REFLECT;
    s.begin[0] = 2, s.end[0] = -1, s.begin[1] = 0, s.end[1] = 3;
    s.value = 1.5;
    int64_t xn[2] = {4, 5}, yn[2] = {5, 8};
    st_operand x, y;
    layout(&x, ST_F16, 2, xn);
    layout(&y, ST_F16, 2, yn);
    st_view v[3];
    memset(v, 0, sizeof v);
    v[2].rank = -1;
    st_kctx k = kctx_of(&s, 1, &x, &y);
    k.views = v;
    st_lower_pad p;
    st_lower_pad_of(&k, &p);
    unsigned char bits[8] = {0};
    st_store_f64(ST_F16, bits, 1.5);
    uint64_t want = 0;
    memcpy(&want, bits, 8);
    CHECK(p.rank == 2 && p.mode == ST_PAD_REFLECT && p.value_operand == -1 && p.value_bits == want && p.total == 40);
    CHECK(p.begin[0] == 2 && p.end[0] == -1 && p.begin[1] == 0 && p.end[1] == 3);
    /* opset 11: the constant as input 2 */
    s.value_input = true;
    st_operand in[3] = {x, x, x};
    in[2].rank = 0;
    v[2].rank = 0;
    k = kctx_of(&s, 3, in, &y);
    k.views = v;
    st_lower_pad_of(&k, &p);
    CHECK(p.value_operand == 2 && p.value_bits == 0);
}

static void test_index_accepts(void)
{
    static st_op_def ops[] = {{.name = "Tile"}, {.name = "DepthToSpace"}, {.name = "ScatterND"}, {.name = "Einsum"},
                              {.name = "Expand"}, {.name = "Range"}};
    st_view v[8];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 8; i++) {
        v[i].dtype = ST_F32;
        v[i].rank = 5;
    }
    st_knode n;
    memset(&n, 0, sizeof n);
    n.views = v;
    n.n_in = 2;
    n.n_out = 1;
    char why[256] = "";
    n.op = &ops[0]; /* a rank-5 Tile copies 10 dims */
    CHECK(st_lcopy_rank(&n) == 10);
    CHECK(!st_lidx_accepts(&n, "OpenCL", ST_MAX_RANK, why, sizeof why));
    CHECK_MSG(why, "OpenCL");
    CHECKF(st_lidx_accepts(&n, "CUDA", ST_LCOPY_RANK, why, sizeof why), "refused: %s", why);
    v[2].dtype = ST_F16;
    CHECK(!st_lidx_accepts(&n, "CUDA", ST_LCOPY_RANK, why, sizeof why));
    v[2].dtype = ST_F32;
    n.op = &ops[1];
    CHECK(!st_lidx_accepts(&n, "CUDA", ST_LCOPY_RANK, why, sizeof why));
    v[0].rank = 4;
    CHECK(st_lidx_accepts(&n, "CUDA", ST_LCOPY_RANK, why, sizeof why));
    n.op = &ops[2];
    n.n_in = 3;
    v[2].dtype = ST_I32;
    v[3].dtype = ST_F32;
    CHECK(!st_lidx_accepts(&n, "CUDA", ST_LCOPY_RANK, why, sizeof why));
    CHECK_MSG(why, "updates");
    v[2].dtype = ST_F32;
    CHECK(st_lidx_accepts(&n, "CUDA", ST_LCOPY_RANK, why, sizeof why));
    n.op = &ops[5]; /* Range changes dtype freely */
    v[3].dtype = ST_I64;
    CHECK(st_lidx_accepts(&n, "OpenCL", ST_MAX_RANK, why, sizeof why));
    n.op = &ops[4];
    CHECK(!st_lidx_accepts(&n, "OpenCL", ST_MAX_RANK, why, sizeof why));
    /* Einsum: five inputs are past the device kernels' four */
    static st_einsum_state es;
    memset(&es, 0, sizeof es);
    es.n_in = 5;
    n.op = &ops[3];
    n.state = &es;
    n.n_in = 5;
    CHECK(!st_lidx_accepts(&n, "OpenCL", ST_MAX_RANK, why, sizeof why));
    CHECK_MSG(why, "5 inputs");
    n.n_in = 2;
    es.n_in = 2;
    CHECK(st_lidx_accepts(&n, "OpenCL", ST_MAX_RANK, why, sizeof why));
}

int main(void)
{
    test_rnn();
    test_rnn_accepts();
    test_qbinary();
    test_qconcat();
    test_qparams();
    test_copies();
    test_gathers();
    test_nd();
    test_einsum();
    test_pad();
    test_index_accepts();
    return check_exit("test_lower");
}
