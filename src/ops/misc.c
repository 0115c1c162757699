/*
 * misc.c — shape rules of the misc family: the ops that fit no other
 * family.
 *   - Dropout (inference), NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
 *   - RNN, GRU, LSTM
 *   - QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 *     MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
 *   - GridSample, RoiAlign, MaxUnpool, ReverseSequence, Shrink, Det
 *   - HannWindow, HammingWindow, BlackmanWindow, DFT, STFT, MelWeightMatrix
 * Parameter blocks: ops/misc.h.  Kernels: backends/cpu/k_misc.c (losses and
 * small ops), k_misc_rnn.c, k_misc_quant.c, k_misc_sample.c, k_misc_signal.c.
 *
 * Inputs that decide an output shape (MaxUnpool's output_shape, a window's
 * size, DFT's dft_length, STFT's frame_step and frame_length, the mel
 * matrix's bin counts) are read at plan time; so are Dropout's ratio and
 * training_mode, because training with a nonzero ratio is random and
 * strata refuses it when planning rather than failing a run.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/misc.h"
#include "ops/ops.h"

static const st_dtype FLOATS[] = {ST_F32, ST_F16, ST_BF16, ST_F64, 0};
static const st_dtype INDEX_TYPES[] = {ST_I64, ST_I32, 0};
static const st_dtype QUANT_TYPES[] = {ST_U8, ST_I8, 0};

static bool has_in(const st_infer *c, int i) { return i < c->n_in && c->in[i].present; }
static bool has_out(const st_infer *c, int i) { return i < c->n_out && c->out[i].present; }

static st_status need_in(const st_infer *c, int i, const char *what)
{
    if (!has_in(c, i)) return st_infer_error(c, ST_ERR_MODEL, "needs input %d (%s)", i, what);
    return ST_OK;
}

static int64_t numel_of(const st_tinfo *t) { return st_numel(t->rank, t->dims); }

static void set_out(st_infer *c, int k, st_dtype t, int rank, const int64_t *dims)
{
    st_tinfo *o = &c->out[k];
    o->dtype = t;
    o->rank = rank;
    for (int d = 0; d < rank; d++) o->dims[d] = dims[d];
}

/* A constant one-element input (any numeric dtype) as a double. */
static st_status const_scalar(const st_infer *c, int i, const char *what, double *v)
{
    ST_TRY(st_infer_need_const(c, i));
    if (numel_of(&c->in[i]) != 1)
        return st_infer_error(c, ST_ERR_SHAPE, "%s (input %d) must hold one value, it has %lld", what, i, (long long)numel_of(&c->in[i]));
    *v = st_load_f64(c->in[i].dtype, c->in[i].data);
    return ST_OK;
}

/* A constant one-element integer input. */
static st_status const_int(const st_infer *c, int i, const char *what, int64_t *v)
{
    int64_t vals[1];
    int n;
    ST_TRY(st_infer_dtype(c, i, INDEX_TYPES));
    ST_TRY(st_infer_need_const(c, i));
    if (numel_of(&c->in[i]) != 1)
        return st_infer_error(c, ST_ERR_SHAPE, "%s (input %d) must hold one value, it has %lld", what, i, (long long)numel_of(&c->in[i]));
    ST_TRY(st_infer_const_ints(c, i, vals, 1, &n));
    *v = vals[0];
    return ST_OK;
}

/* Optional input i, when present, must have input `like`'s dtype. */
static st_status same_dtype(const st_infer *c, int i, int like, const char *what)
{
    if (has_in(c, i) && c->in[i].dtype != c->in[like].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "%s (input %d) is %s; input %d is %s", what, i, st_dtype_name(c->in[i].dtype), like,
                              st_dtype_name(c->in[like].dtype));
    return ST_OK;
}

/* ASCII case-insensitive equality (activation names are not case-checked by exporters). */
static bool name_is(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a, y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (x != y) return false;
    }
    return *a == *b;
}

/* ==== Dropout ==== */

static st_status infer_dropout(st_infer *c)
{
    ST_TRY(need_in(c, 0, "data"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    bool training = false;
    double ratio = st_attr_float(c->node, "ratio", 0.5f);
    if (c->opset < 7) {
        training = st_attr_int(c->node, "is_test", 0) == 0;
    } else if (c->opset >= 12) {
        ratio = 0.5;
        if (has_in(c, 2)) {
            double t;
            ST_TRY(const_scalar(c, 2, "training_mode", &t));
            training = t != 0;
        }
        if (has_in(c, 1)) {
            ST_TRY(st_infer_dtype(c, 1, FLOATS));
            if (training) ST_TRY(const_scalar(c, 1, "ratio", &ratio));
        }
    }
    if (!(ratio >= 0 && ratio < 1)) return st_infer_error(c, ST_ERR_MODEL, "ratio %g is outside [0, 1)", ratio);
    if (training && ratio != 0)
        return st_infer_error(c, ST_ERR_UNSUPPORTED,
                              "training mode with ratio %g drops random elements; strata runs Dropout for inference (or ratio 0) only", ratio);
    st_dropout_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->mask_bool = c->opset >= 10;
    const st_tinfo *x = &c->in[0];
    set_out(c, 0, x->dtype, x->rank, x->dims);
    if (has_out(c, 1)) set_out(c, 1, s->mask_bool ? ST_BOOL : x->dtype, x->rank, x->dims);
    return ST_OK;
}

/* The output is the input; the mask, when asked for, needs a kernel. */
static bool dropout_view(const void *state, int out, const st_view *in, st_view *res)
{
    (void)state;
    if (out != 0) return false;
    *res = *in;
    return true;
}

/* ==== NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ==== */

static st_status infer_loss(st_infer *c)
{
    bool sce = strcmp(c->node->op_type, "SoftmaxCrossEntropyLoss") == 0;
    ST_TRY(need_in(c, 0, sce ? "scores" : "input"));
    ST_TRY(need_in(c, 1, sce ? "labels" : "target"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    const st_tinfo *x = &c->in[0], *t = &c->in[1];
    if (x->rank < 2) return st_infer_error(c, ST_ERR_SHAPE, "input 0 has rank %d; it must be [N, C, ...]", x->rank);
    bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int d = 1; ok && d < t->rank; d++) ok = t->dims[d] == x->dims[d + 1];
    if (!ok) return st_infer_error(c, ST_ERR_SHAPE, "input 1 must have input 0's shape without dim 1 (C)");
    if (has_in(c, 2)) {
        ST_TRY(same_dtype(c, 2, 0, "weights"));
        if (c->in[2].rank != 1 || c->in[2].dims[0] != x->dims[1])
            return st_infer_error(c, ST_ERR_SHAPE, "weights must be [C] = [%lld]", (long long)x->dims[1]);
    }
    st_loss_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->softmax = sce;
    const char *red = st_attr_string(c->node, "reduction", "mean");
    if (strcmp(red, "none") == 0) s->reduction = ST_LOSS_NONE;
    else if (strcmp(red, "sum") == 0) s->reduction = ST_LOSS_SUM;
    else if (strcmp(red, "mean") == 0) s->reduction = ST_LOSS_MEAN;
    else return st_infer_error(c, ST_ERR_MODEL, "unknown reduction '%s' (none, sum or mean)", red);
    s->has_ignore = st_node_attr(c->node, "ignore_index") != NULL;
    s->ignore_index = st_attr_int(c->node, "ignore_index", 0);
    if (s->reduction == ST_LOSS_NONE) set_out(c, 0, x->dtype, t->rank, t->dims);
    else set_out(c, 0, x->dtype, 0, NULL);
    if (has_out(c, 1)) {
        if (!sce) return st_infer_error(c, ST_ERR_MODEL, "has one output, not %d", c->n_out);
        set_out(c, 1, x->dtype, x->rank, x->dims);
    }
    return ST_OK;
}

/* ==== RNN, GRU, LSTM ==== */

typedef struct act_def {
    const char *name;
    int fn;
    float alpha, beta;                /* ONNX defaults of the matching ops */
    bool uses_alpha, uses_beta;
} act_def;

static const act_def ACTS[] = {
    {"Relu", ST_ACT_RELU, 0, 0, false, false},
    {"Tanh", ST_ACT_TANH, 0, 0, false, false},
    {"Sigmoid", ST_ACT_SIGMOID, 0, 0, false, false},
    {"Affine", ST_ACT_AFFINE, 1.0f, 0.0f, true, true},
    {"LeakyRelu", ST_ACT_LEAKY_RELU, 0.01f, 0, true, false},
    {"ThresholdedRelu", ST_ACT_THRESHOLDED_RELU, 1.0f, 0, true, false},
    {"ScaledTanh", ST_ACT_SCALED_TANH, 1.0f, 1.0f, true, true},
    {"HardSigmoid", ST_ACT_HARD_SIGMOID, 0.2f, 0.5f, true, true},
    {"Elu", ST_ACT_ELU, 1.0f, 0, true, false},
    {"Softsign", ST_ACT_SOFTSIGN, 0, 0, false, false},
    {"Softplus", ST_ACT_SOFTPLUS, 0, 0, false, false},
};

/* activations, activation_alpha, activation_beta: the names run f, g, h
 * per direction, forward first; alphas and betas are taken in that order
 * by the functions that have the parameter. */
static st_status rnn_activations(st_infer *c, st_rnn_state *s, int per_dir)
{
    static const char *const DEFAULTS[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    const st_attr *a = st_node_attr(c->node, "activations");
    int na = 0, nal = 0, nbe = 0, ia = 0, ib = 0;
    const float *alphas = st_attr_floats(c->node, "activation_alpha", &nal);
    const float *betas = st_attr_floats(c->node, "activation_beta", &nbe);
    if (a) {
        if (a->type != ST_ATTR_STRINGS) return st_infer_error(c, ST_ERR_MODEL, "activations must be a list of strings");
        na = a->n;
        if (na != per_dir && na != per_dir * s->dirs)
            return st_infer_error(c, ST_ERR_MODEL, "activations has %d names; %s takes %d per direction", na, c->node->op_type, per_dir);
    }
    for (int d = 0; d < s->dirs; d++)
        for (int i = 0; i < per_dir; i++) {
            const char *name = a ? a->strings[(d * per_dir + i) % na] : DEFAULTS[per_dir - 1][i];
            const act_def *def = NULL;
            for (size_t k = 0; k < sizeof ACTS / sizeof *ACTS; k++)
                if (name_is(name, ACTS[k].name)) def = &ACTS[k];
            if (!def) return st_infer_error(c, ST_ERR_UNSUPPORTED, "activation '%s' is not supported", name);
            st_rnn_act *act = &s->act[d][i];
            act->fn = def->fn;
            act->alpha = def->alpha;
            act->beta = def->beta;
            if (def->uses_alpha && ia < nal) act->alpha = alphas[ia++];
            if (def->uses_beta && ib < nbe) act->beta = betas[ib++];
        }
    return ST_OK;
}

/* input i must have exactly the dims given */
static st_status check_dims(const st_infer *c, int i, const char *what, int rank, const int64_t *dims)
{
    const st_tinfo *t = &c->in[i];
    bool ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = t->dims[d] == dims[d];
    if (ok) return ST_OK;
    char want[160] = "";
    for (int d = 0; d < rank; d++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "", (long long)dims[d]);
    return st_infer_error(c, ST_ERR_SHAPE, "%s (input %d) must be [%s]", what, i, want);
}

static st_status infer_rnn(st_infer *c)
{
    const char *op = c->node->op_type;
    int cell = strcmp(op, "RNN") == 0 ? ST_CELL_RNN : strcmp(op, "GRU") == 0 ? ST_CELL_GRU : ST_CELL_LSTM;
    static const int GATES[] = {1, 3, 4}, ACTS_PER_DIR[] = {1, 2, 3};
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(need_in(c, 1, "W"));
    ST_TRY(need_in(c, 2, "R"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    static const char *const NAMES[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
    for (int i = 1; i < c->n_in && i < 8; i++)
        if (i != 4) ST_TRY(same_dtype(c, i, 0, NAMES[i]));
    const st_tinfo *x = &c->in[0], *r = &c->in[2];
    if (x->rank != 3) return st_infer_error(c, ST_ERR_SHAPE, "X has rank %d, expected 3", x->rank);
    st_rnn_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->cell = cell;
    s->gates = GATES[cell];
    s->layout = c->opset >= 14 ? (int)st_attr_int(c->node, "layout", 0) : 0;
    if (s->layout != 0 && s->layout != 1) return st_infer_error(c, ST_ERR_MODEL, "layout is %d; it must be 0 or 1", s->layout);
    const char *dir = st_attr_string(c->node, "direction", "forward");
    if (strcmp(dir, "forward") == 0) s->dirs = 1;
    else if (strcmp(dir, "reverse") == 0) s->dirs = 1, s->reverse = true;
    else if (strcmp(dir, "bidirectional") == 0) s->dirs = 2;
    else return st_infer_error(c, ST_ERR_MODEL, "unknown direction '%s'", dir);
    if (r->rank != 3) return st_infer_error(c, ST_ERR_SHAPE, "R has rank %d, expected 3", r->rank);
    s->hidden = st_attr_int(c->node, "hidden_size", r->dims[2]);
    if (s->hidden < 1) return st_infer_error(c, ST_ERR_MODEL, "hidden_size is %lld", (long long)s->hidden);
    int64_t seq = x->dims[s->layout ? 1 : 0], batch = x->dims[s->layout ? 0 : 1], in = x->dims[2];
    int64_t H = s->hidden, GH = s->gates * H, D = s->dirs;
    ST_TRY(check_dims(c, 1, "W", 3, (int64_t[]){D, GH, in}));
    ST_TRY(check_dims(c, 2, "R", 3, (int64_t[]){D, GH, H}));
    if (has_in(c, 3)) ST_TRY(check_dims(c, 3, "B", 2, (int64_t[]){D, 2 * GH}));
    if (has_in(c, 4)) {
        ST_TRY(st_infer_dtype(c, 4, INDEX_TYPES));
        ST_TRY(check_dims(c, 4, "sequence_lens", 1, (int64_t[]){batch}));
    }
    int64_t state_dims[3] = {s->layout ? batch : D, s->layout ? D : batch, H};
    if (has_in(c, 5)) ST_TRY(check_dims(c, 5, "initial_h", 3, state_dims));
    if (cell == ST_CELL_LSTM && has_in(c, 6)) ST_TRY(check_dims(c, 6, "initial_c", 3, state_dims));
    if (cell == ST_CELL_LSTM && has_in(c, 7)) ST_TRY(check_dims(c, 7, "P", 2, (int64_t[]){D, 3 * H}));
    if (st_node_attr(c->node, "clip")) {
        s->has_clip = true;
        s->clip = st_attr_float(c->node, "clip", 0);
        if (!(s->clip > 0)) return st_infer_error(c, ST_ERR_MODEL, "clip is %g; it must be positive", s->clip);
    }
    if (cell == ST_CELL_GRU) s->linear_before_reset = st_attr_int(c->node, "linear_before_reset", 0) != 0;
    if (cell == ST_CELL_LSTM) s->input_forget = st_attr_int(c->node, "input_forget", 0) != 0;
    ST_TRY(rnn_activations(c, s, ACTS_PER_DIR[cell]));
    int n_out = cell == ST_CELL_LSTM ? 3 : 2;
    for (int k = n_out; k < c->n_out; k++)
        if (c->out[k].present) return st_infer_error(c, ST_ERR_MODEL, "has %d outputs, not %d", n_out, c->n_out);
    if (has_out(c, 0)) {
        int64_t y[4] = {seq, D, batch, H}, yb[4] = {batch, seq, D, H};
        set_out(c, 0, x->dtype, 4, s->layout ? yb : y);
    }
    for (int k = 1; k < n_out; k++)
        if (has_out(c, k)) set_out(c, k, x->dtype, 3, state_dims);
    return ST_OK;
}

/* ==== quantization ==== */

/* Scale and zero point of QuantizeLinear / DequantizeLinear: one value,
 * or (opset 13) a 1-D tensor along axis, or (opset 21, block_size > 0)
 * x's shape with ceil(dim / block_size) along axis: one scale per block
 * of that many elements. */
static st_status quant_params(st_infer *c, st_quant_state *s, int xi, int si, int zi)
{
    const st_tinfo *x = &c->in[xi], *sc = &c->in[si];
    ST_TRY(st_infer_dtype(c, si, FLOATS));
    int64_t n = numel_of(sc);
    s->axis = -1;
    s->block = c->opset >= 21 ? st_attr_int(c->node, "block_size", 0) : 0;
    if (s->block < 0) return st_infer_error(c, ST_ERR_MODEL, "block_size is %lld", (long long)s->block);
    if (s->block > 0) {
        int a;
        ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 1), x->rank, &a));
        bool ok = sc->rank == x->rank;
        for (int d = 0; ok && d < x->rank; d++)
            ok = sc->dims[d] == (d == a ? (x->dims[d] + s->block - 1) / s->block : x->dims[d]);
        if (!ok)
            return st_infer_error(c, ST_ERR_SHAPE, "with block_size %lld the scale must have x's shape with ceil(%lld / %lld) on axis %d",
                                  (long long)s->block, (long long)x->dims[a], (long long)s->block, a);
        if (has_in(c, zi)) {
            const st_tinfo *z = &c->in[zi];
            ok = z->rank == sc->rank;
            for (int d = 0; ok && d < sc->rank; d++) ok = z->dims[d] == sc->dims[d];
            if (!ok) return st_infer_error(c, ST_ERR_SHAPE, "the zero point's shape differs from the scale's");
        }
        s->axis = a;
        return ST_OK;
    }
    /* one value is per tensor whatever its rank, as ONNX Runtime reads it */
    if (n != 1) {
        if (c->opset < 13) return st_infer_error(c, ST_ERR_SHAPE, "the scale must be a scalar before opset 13");
        if (sc->rank != 1) return st_infer_error(c, ST_ERR_SHAPE, "the scale must be a scalar or 1-D, it has rank %d", sc->rank);
        int a;
        ST_TRY(st_infer_axis(c, st_attr_int(c->node, "axis", 1), x->rank, &a));
        if (x->rank == 0 || sc->dims[0] != x->dims[a])
            return st_infer_error(c, ST_ERR_SHAPE, "the scale has %lld values; axis %d has %lld", (long long)sc->dims[0], a,
                                  (long long)(x->rank ? x->dims[a] : 1));
        s->axis = a;
    }
    if (has_in(c, zi)) {
        const st_tinfo *z = &c->in[zi];
        if (numel_of(z) != n || (n != 1 && z->rank != 1))
            return st_infer_error(c, ST_ERR_SHAPE, "the zero point's shape differs from the scale's");
    }
    return ST_OK;
}

/* The quantized types: int8 and uint8, and from opset 21 int16 and
 * uint16 (its int4, uint4 and the float8 types of opset 19 are types
 * strata does not hold). */
static st_status quant_type(const st_infer *c, st_dtype t, const char *what)
{
    if (t == ST_U8 || t == ST_I8 || (c->opset >= 21 && (t == ST_U16 || t == ST_I16))) return ST_OK;
    return st_infer_error(c, ST_ERR_DTYPE, "%s is %s; %s", what, st_dtype_name(t),
                          c->opset >= 21 ? "int8, uint8, int16 and uint16 are supported" : "int8 and uint8 are supported");
}

static st_status infer_quantize(st_infer *c)
{
    static const st_dtype X_TYPES[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I32, 0};
    ST_TRY(need_in(c, 0, "x"));
    ST_TRY(need_in(c, 1, "y_scale"));
    ST_TRY(st_infer_dtype(c, 0, X_TYPES));
    st_quant_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    ST_TRY(quant_params(c, s, 0, 1, 2));
    /* the output's type: the zero point's, else (opset 21) output_dtype,
     * else uint8; `saturate` (opset 19) only concerns float8 outputs */
    int64_t want = c->opset >= 21 ? st_attr_int(c->node, "output_dtype", 0) : 0;
    st_dtype t = want ? (st_dtype)want : ST_U8;
    if (has_in(c, 2)) {
        if (want && c->in[2].dtype != (st_dtype)want)
            return st_infer_error(c, ST_ERR_DTYPE, "output_dtype %lld differs from y_zero_point's %s", (long long)want,
                                  st_dtype_name(c->in[2].dtype));
        t = c->in[2].dtype;
    }
    if (want && !st_dtype_valid(t))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "output_dtype %lld (float8, int4 or uint4) is not supported", (long long)want);
    ST_TRY(quant_type(c, t, "the output"));
    set_out(c, 0, t, c->in[0].rank, c->in[0].dims);
    return ST_OK;
}

static st_status infer_dequantize(st_infer *c)
{
    ST_TRY(need_in(c, 0, "x"));
    ST_TRY(need_in(c, 1, "x_scale"));
    if (c->in[0].dtype != ST_I32) ST_TRY(quant_type(c, c->in[0].dtype, "x"));
    st_quant_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    ST_TRY(quant_params(c, s, 0, 1, 2));
    if (has_in(c, 2) && c->in[2].dtype != c->in[0].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "x_zero_point is %s, x is %s", st_dtype_name(c->in[2].dtype), st_dtype_name(c->in[0].dtype));
    /* opset 19: the output takes the scale's type (float16, bfloat16) */
    st_dtype t = c->opset >= 19 ? c->in[1].dtype : ST_F32;
    if (t == ST_F64) return st_infer_error(c, ST_ERR_DTYPE, "x_scale is float64; float32, float16 and bfloat16 are defined");
    set_out(c, 0, t, c->in[0].rank, c->in[0].dims);
    return ST_OK;
}

static st_status infer_dynamic_quantize(st_infer *c)
{
    ST_TRY(need_in(c, 0, "x"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    set_out(c, 0, ST_U8, c->in[0].rank, c->in[0].dims);
    if (has_out(c, 1)) set_out(c, 1, ST_F32, 0, NULL);
    if (has_out(c, 2)) set_out(c, 2, ST_U8, 0, NULL);
    return ST_OK;
}

/* A per-tensor or per-row (A) / per-column (B) parameter of an integer
 * matmul: one value, a 1-D [M] (A) or [N] (B), or A's (B's) shape with a
 * unit column (row). */
static st_status matmul_param(const st_infer *c, int i, int of, bool is_a, const char *what)
{
    const st_tinfo *p = &c->in[i], *m = &c->in[of];
    if (numel_of(p) == 1) return ST_OK;
    int64_t want = is_a ? (m->rank > 1 ? m->dims[m->rank - 2] : 1) : (m->rank > 1 ? m->dims[m->rank - 1] : 1);
    if (p->rank == 1 && p->dims[0] == want) return ST_OK;
    if (p->rank == m->rank && m->rank >= 2) {
        bool ok = true;
        for (int d = 0; d < m->rank; d++) {
            int64_t e = d == m->rank - (is_a ? 1 : 2) ? 1 : m->dims[d];
            if (p->dims[d] != e) ok = false;
        }
        if (ok) return ST_OK;
    }
    return st_infer_error(c, ST_ERR_SHAPE, "%s must be a scalar or hold one value per %s of input %d", what, is_a ? "row" : "column", of);
}

/* numpy matmul shapes of inputs ia and ib (batch dims broadcast). */
static st_status int_matmul_shape(st_infer *c, int ia, int ib, st_dtype out_t)
{
    const st_tinfo *a = &c->in[ia], *b = &c->in[ib];
    ST_TRY(st_infer_dtype(c, ia, QUANT_TYPES));
    ST_TRY(st_infer_dtype(c, ib, QUANT_TYPES));
    if (a->rank < 1 || b->rank < 1) return st_infer_error(c, ST_ERR_SHAPE, "the matrices must have rank >= 1");
    int64_t m = a->rank == 1 ? 1 : a->dims[a->rank - 2], k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2], n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (k != kb) return st_infer_error(c, ST_ERR_SHAPE, "inner dims differ (%lld and %lld)", (long long)k, (long long)kb);
    st_tinfo ba = *a, bb = *b, out = {0};
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    const st_tinfo *ins[2] = {&ba, &bb};
    ST_TRY(st_infer_broadcast(c, 2, ins, &out));
    st_tinfo *o = &c->out[0];
    o->dtype = out_t;
    o->rank = out.rank;
    for (int d = 0; d < out.rank; d++) o->dims[d] = out.dims[d];
    if (a->rank > 1) o->dims[o->rank++] = m;
    if (b->rank > 1) o->dims[o->rank++] = n;
    if (o->rank > ST_MAX_RANK) return st_infer_error(c, ST_ERR_UNSUPPORTED, "output rank %d is too large", o->rank);
    return ST_OK;
}

static st_status infer_matmul_integer(st_infer *c)
{
    ST_TRY(need_in(c, 0, "A"));
    ST_TRY(need_in(c, 1, "B"));
    st_qmatmul_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    for (int i = 2; i < 4; i++)
        if (has_in(c, i)) {
            if (c->in[i].dtype != c->in[i - 2].dtype) return st_infer_error(c, ST_ERR_DTYPE, "input %d's dtype differs from input %d's", i, i - 2);
            ST_TRY(matmul_param(c, i, i - 2, i == 2, i == 2 ? "a_zero_point" : "b_zero_point"));
        }
    return int_matmul_shape(c, 0, 1, ST_I32);
}

static st_status infer_qlinear_matmul(st_infer *c)
{
    static const char *const NAMES[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
    for (int i = 0; i < 8; i++) ST_TRY(need_in(c, i, NAMES[i]));
    st_qmatmul_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->qlinear = true;
    for (int i = 1; i < 8; i++) {
        if (i == 3) continue;
        bool scale = i == 1 || i == 4 || i == 6;
        ST_TRY(st_infer_dtype(c, i, scale ? FLOATS : QUANT_TYPES));
        if (i < 6) ST_TRY(matmul_param(c, i, i < 3 ? 0 : 3, i < 3, NAMES[i]));
        else if (numel_of(&c->in[i]) != 1) return st_infer_error(c, ST_ERR_SHAPE, "%s must hold one value", NAMES[i]);
    }
    if (c->in[2].dtype != c->in[0].dtype || c->in[5].dtype != c->in[3].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "a zero point's dtype differs from its matrix's");
    return int_matmul_shape(c, 0, 3, c->in[7].dtype);
}

/* Conv's window for the integer convolutions (auto_pad, strides,
 * dilations, pads, group), from X and W's spatial dims. */
static st_status qconv_window(st_infer *c, st_qconv_state *s, int xi, int wi)
{
    const st_tinfo *x = &c->in[xi], *w = &c->in[wi];
    ST_TRY(st_infer_dtype(c, xi, QUANT_TYPES));
    ST_TRY(st_infer_dtype(c, wi, QUANT_TYPES));
    if (x->rank < 3 || x->rank > 5) return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; 1 to 3 spatial dims are supported", x->rank);
    if (w->rank != x->rank) return st_infer_error(c, ST_ERR_SHAPE, "W has rank %d, X has rank %d", w->rank, x->rank);
    int n = s->nsp = x->rank - 2, cnt;
    s->group = st_attr_int(c->node, "group", 1);
    int64_t cin = x->dims[1], m = w->dims[0];
    if (s->group < 1 || cin % s->group || m % s->group)
        return st_infer_error(c, ST_ERR_SHAPE, "group %lld does not divide %lld input and %lld output channels", (long long)s->group,
                              (long long)cin, (long long)m);
    if (w->dims[1] != cin / s->group)
        return st_infer_error(c, ST_ERR_SHAPE, "W has %lld input channels per group, X gives %lld", (long long)w->dims[1],
                              (long long)(cin / s->group));
    const int64_t *ks = st_attr_ints(c->node, "kernel_shape", &cnt);
    if (ks && cnt != n) return st_infer_error(c, ST_ERR_MODEL, "kernel_shape has %d values for %d spatial dims", cnt, n);
    int64_t pe[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        if (ks && ks[i] != w->dims[2 + i]) return st_infer_error(c, ST_ERR_SHAPE, "kernel_shape disagrees with W on spatial dim %d", i);
        s->k[i] = w->dims[2 + i];
        s->s[i] = s->d[i] = 1;
        s->pb[i] = 0;
    }
    ST_TRY(st_infer_window_attrs(c, n, s->s, s->d, s->pb, pe));
    const char *ap = st_attr_string(c->node, "auto_pad", "NOTSET");
    st_tinfo *o = &c->out[0];
    o->rank = x->rank;
    o->dims[0] = x->dims[0];
    o->dims[1] = m;
    for (int i = 0; i < n; i++) {
        if (s->k[i] < 1 || s->s[i] < 1 || s->d[i] < 1 || s->pb[i] < 0 || pe[i] < 0)
            return st_infer_error(c, ST_ERR_MODEL, "kernel, strides and dilations must be >= 1 and pads >= 0 (spatial dim %d)", i);
        int64_t ext = (s->k[i] - 1) * s->d[i] + 1, in = x->dims[2 + i], out;
        if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
            out = (in + s->s[i] - 1) / s->s[i];
            int64_t total = (out - 1) * s->s[i] + ext - in;
            if (total < 0) total = 0;
            s->pb[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
        } else if (strcmp(ap, "VALID") == 0) {
            s->pb[i] = 0;
            out = in >= ext ? (in - ext) / s->s[i] + 1 : 0;
        } else if (strcmp(ap, "NOTSET") == 0) {
            int64_t span = in + s->pb[i] + pe[i] - ext;
            if (span < 0) return st_infer_error(c, ST_ERR_SHAPE, "kernel extent %lld exceeds the padded input %lld on spatial dim %d",
                                                (long long)ext, (long long)(in + s->pb[i] + pe[i]), i);
            out = span / s->s[i] + 1;
        } else {
            return st_infer_error(c, ST_ERR_MODEL, "unknown auto_pad '%s'", ap);
        }
        o->dims[2 + i] = out;
    }
    return ST_OK;
}

/* A per-tensor or per-output-channel parameter of W. */
static st_status per_channel(const st_infer *c, int i, int64_t m, const char *what)
{
    const st_tinfo *p = &c->in[i];
    int64_t n = numel_of(p);
    if (n == 1 || (p->rank == 1 && n == m)) return ST_OK;
    return st_infer_error(c, ST_ERR_SHAPE, "%s must be a scalar or hold one value per output channel (%lld)", what, (long long)m);
}

static st_status infer_conv_integer(st_infer *c)
{
    ST_TRY(need_in(c, 0, "x"));
    ST_TRY(need_in(c, 1, "w"));
    st_qconv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    ST_TRY(qconv_window(c, s, 0, 1));
    if (has_in(c, 2)) {
        if (c->in[2].dtype != c->in[0].dtype) return st_infer_error(c, ST_ERR_DTYPE, "x_zero_point's dtype differs from x's");
        if (numel_of(&c->in[2]) != 1) return st_infer_error(c, ST_ERR_SHAPE, "x_zero_point must hold one value");
    }
    if (has_in(c, 3)) {
        if (c->in[3].dtype != c->in[1].dtype) return st_infer_error(c, ST_ERR_DTYPE, "w_zero_point's dtype differs from w's");
        ST_TRY(per_channel(c, 3, c->in[1].dims[0], "w_zero_point"));
    }
    c->out[0].dtype = ST_I32;
    return ST_OK;
}

static st_status infer_qlinear_conv(st_infer *c)
{
    static const char *const NAMES[] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point"};
    for (int i = 0; i < 8; i++) ST_TRY(need_in(c, i, NAMES[i]));
    st_qconv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->qlinear = true;
    ST_TRY(qconv_window(c, s, 0, 3));
    int64_t m = c->in[3].dims[0];
    for (int i = 1; i < 8; i++) {
        if (i == 3) continue;
        ST_TRY(st_infer_dtype(c, i, i == 1 || i == 4 || i == 6 ? FLOATS : QUANT_TYPES));
        if (i == 4 || i == 5) ST_TRY(per_channel(c, i, m, NAMES[i]));
        else if (numel_of(&c->in[i]) != 1) return st_infer_error(c, ST_ERR_SHAPE, "%s must hold one value", NAMES[i]);
    }
    if (c->in[2].dtype != c->in[0].dtype || c->in[5].dtype != c->in[3].dtype)
        return st_infer_error(c, ST_ERR_DTYPE, "a zero point's dtype differs from its tensor's");
    if (has_in(c, 8)) {
        static const st_dtype I32[] = {ST_I32, 0};
        ST_TRY(st_infer_dtype(c, 8, I32));
        ST_TRY(check_dims(c, 8, "B", 1, (int64_t[]){m}));
    }
    c->out[0].dtype = c->in[7].dtype;
    return ST_OK;
}

/* ==== GridSample, RoiAlign, MaxUnpool, ReverseSequence, Shrink, Det ==== */

static st_status infer_gridsample(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(need_in(c, 1, "grid"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    ST_TRY(st_infer_dtype(c, 1, FLOATS));
    const st_tinfo *x = &c->in[0], *g = &c->in[1];
    /* opset 20 defines GridSample on any number of spatial dims (and
     * renames its modes linear and cubic, read below); strata samples
     * 2-D images only */
    if (x->rank != 4)
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; only 2-D sampling ([N, C, H, W]) is supported%s", x->rank,
                              c->opset >= 20 ? ", not the N-D GridSample of opset 20" : "");
    if (g->rank != 4 || g->dims[0] != x->dims[0] || g->dims[3] != 2)
        return st_infer_error(c, ST_ERR_SHAPE, "grid must be [N, H_out, W_out, 2] with N = %lld", (long long)x->dims[0]);
    st_gridsample_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    const char *mode = st_attr_string(c->node, "mode", "bilinear");
    if (strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0) s->mode = ST_GS_BILINEAR;
    else if (strcmp(mode, "nearest") == 0) s->mode = ST_GS_NEAREST;
    else if (strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0) s->mode = ST_GS_BICUBIC;
    else return st_infer_error(c, ST_ERR_MODEL, "unknown mode '%s'", mode);
    const char *pad = st_attr_string(c->node, "padding_mode", "zeros");
    if (strcmp(pad, "zeros") == 0) s->padding = ST_GS_ZEROS;
    else if (strcmp(pad, "border") == 0) s->padding = ST_GS_BORDER;
    else if (strcmp(pad, "reflection") == 0) s->padding = ST_GS_REFLECTION;
    else return st_infer_error(c, ST_ERR_MODEL, "unknown padding_mode '%s'", pad);
    s->align_corners = st_attr_int(c->node, "align_corners", 0) != 0;
    set_out(c, 0, x->dtype, 4, (int64_t[]){x->dims[0], x->dims[1], g->dims[1], g->dims[2]});
    return ST_OK;
}

/* AffineGrid (opset 20): the sampling grid of an affine map theta, [N, 2,
 * 3] for 2-D or [N, 3, 4] for 3-D, over an output of size [N, C, (D,) H,
 * W]: grid [N, (D,) H, W, 2 or 3], the x (width) coordinate first. */
static st_status infer_affine_grid(st_infer *c)
{
    ST_TRY(need_in(c, 0, "theta"));
    ST_TRY(need_in(c, 1, "size"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    const st_tinfo *t = &c->in[0];
    int64_t size[ST_MAX_RANK];
    int n;
    ST_TRY(st_infer_const_ints(c, 1, size, ST_MAX_RANK, &n));
    if (n != 4 && n != 5) return st_infer_error(c, ST_ERR_SHAPE, "size has %d values; [N, C, H, W] or [N, C, D, H, W]", n);
    int sp = n - 2;
    if (t->rank != 3 || t->dims[0] != size[0] || t->dims[1] != sp || t->dims[2] != sp + 1)
        return st_infer_error(c, ST_ERR_SHAPE, "theta must be [%lld, %d, %d] for size of %d values", (long long)size[0], sp, sp + 1, n);
    st_gridsample_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->align_corners = st_attr_int(c->node, "align_corners", 0) != 0;
    int64_t dims[6];
    dims[0] = size[0];
    for (int i = 0; i < sp; i++) {
        if (size[2 + i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "size[%d] is negative", 2 + i);
        dims[1 + i] = size[2 + i];
    }
    dims[1 + sp] = sp;
    set_out(c, 0, t->dtype, sp + 2, dims);
    return ST_OK;
}

static st_status infer_roialign(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(need_in(c, 1, "rois"));
    ST_TRY(need_in(c, 2, "batch_indices"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    ST_TRY(same_dtype(c, 1, 0, "rois"));
    ST_TRY(st_infer_dtype(c, 2, INDEX_TYPES));
    const st_tinfo *x = &c->in[0], *r = &c->in[1];
    if (x->rank != 4) return st_infer_error(c, ST_ERR_SHAPE, "X has rank %d, expected [N, C, H, W]", x->rank);
    if (r->rank != 2 || r->dims[1] != 4) return st_infer_error(c, ST_ERR_SHAPE, "rois must be [num_rois, 4]");
    ST_TRY(check_dims(c, 2, "batch_indices", 1, (int64_t[]){r->dims[0]}));
    st_roialign_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    const char *mode = st_attr_string(c->node, "mode", "avg");
    if (strcmp(mode, "avg") == 0) s->max_mode = false;
    else if (strcmp(mode, "max") == 0) s->max_mode = true;
    else return st_infer_error(c, ST_ERR_MODEL, "unknown mode '%s' (avg or max)", mode);
    /* opset 10 had no attribute and behaved as output_half_pixel */
    const char *ctm = c->opset >= 16 ? st_attr_string(c->node, "coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
    if (strcmp(ctm, "half_pixel") == 0) s->half_pixel = true;
    else if (strcmp(ctm, "output_half_pixel") == 0) s->half_pixel = false;
    else return st_infer_error(c, ST_ERR_MODEL, "unknown coordinate_transformation_mode '%s'", ctm);
    s->out_h = st_attr_int(c->node, "output_height", 1);
    s->out_w = st_attr_int(c->node, "output_width", 1);
    s->sampling_ratio = st_attr_int(c->node, "sampling_ratio", 0);
    s->spatial_scale = st_attr_float(c->node, "spatial_scale", 1.0f);
    if (s->out_h < 1 || s->out_w < 1 || s->sampling_ratio < 0)
        return st_infer_error(c, ST_ERR_MODEL, "output_height and output_width must be >= 1 and sampling_ratio >= 0");
    set_out(c, 0, x->dtype, 4, (int64_t[]){r->dims[0], x->dims[1], s->out_h, s->out_w});
    return ST_OK;
}

static st_status infer_maxunpool(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(need_in(c, 1, "I"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    static const st_dtype I64[] = {ST_I64, 0};
    ST_TRY(st_infer_dtype(c, 1, I64));
    const st_tinfo *x = &c->in[0];
    if (x->rank < 3 || x->rank > 2 + 3) return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; 1 to 3 spatial dims are supported", x->rank);
    ST_TRY(check_dims(c, 1, "I", x->rank, x->dims));
    st_maxunpool_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    int n = s->nsp = x->rank - 2, cnt;
    const int64_t *ks = st_attr_ints(c->node, "kernel_shape", &cnt);
    if (!ks || cnt != n) return st_infer_error(c, ST_ERR_MODEL, "kernel_shape must have %d values", n);
    int64_t st[3] = {1, 1, 1}, pads[6] = {0, 0, 0, 0, 0, 0};
    const int64_t *a;
    if ((a = st_attr_ints(c->node, "strides", &cnt))) {
        if (cnt != n) return st_infer_error(c, ST_ERR_MODEL, "strides has %d values for %d spatial dims", cnt, n);
        memcpy(st, a, (size_t)n * sizeof *a);
    }
    if ((a = st_attr_ints(c->node, "pads", &cnt))) {
        if (cnt != 2 * n) return st_infer_error(c, ST_ERR_MODEL, "pads has %d values for %d spatial dims", cnt, n);
        memcpy(pads, a, (size_t)(2 * n) * sizeof *a);
    }
    int64_t dims[ST_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 0; i < n; i++) {
        if (ks[i] < 1 || st[i] < 1) return st_infer_error(c, ST_ERR_MODEL, "kernel_shape and strides must be >= 1");
        dims[2 + i] = (x->dims[2 + i] - 1) * st[i] - pads[i] - pads[n + i] + ks[i];
        if (dims[2 + i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "the pads leave spatial dim %d negative", i);
        s->unpooled[i] = dims[2 + i];
    }
    if (has_in(c, 2)) {
        int64_t want[ST_MAX_RANK];
        int got;
        ST_TRY(st_infer_const_ints(c, 2, want, ST_MAX_RANK, &got));
        if (got != x->rank) return st_infer_error(c, ST_ERR_SHAPE, "output_shape has %d values; X has rank %d", got, x->rank);
        if (want[0] != dims[0] || want[1] != dims[1]) return st_infer_error(c, ST_ERR_SHAPE, "output_shape must keep X's N and C");
        for (int i = 0; i < n; i++) {
            if (want[2 + i] < dims[2 + i])
                return st_infer_error(c, ST_ERR_SHAPE, "output_shape dim %d is %lld, smaller than the unpooled %lld", 2 + i,
                                      (long long)want[2 + i], (long long)dims[2 + i]);
            dims[2 + i] = want[2 + i];
        }
    }
    set_out(c, 0, x->dtype, x->rank, dims);
    return ST_OK;
}

static st_status infer_reverse_sequence(st_infer *c)
{
    ST_TRY(need_in(c, 0, "input"));
    ST_TRY(need_in(c, 1, "sequence_lens"));
    ST_TRY(st_infer_dtype(c, 1, INDEX_TYPES));
    const st_tinfo *x = &c->in[0];
    if (x->rank < 2) return st_infer_error(c, ST_ERR_SHAPE, "input has rank %d, at least 2 needed", x->rank);
    st_revseq_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->batch_axis = (int)st_attr_int(c->node, "batch_axis", 1);
    s->time_axis = (int)st_attr_int(c->node, "time_axis", 0);
    if (!((s->batch_axis == 0 && s->time_axis == 1) || (s->batch_axis == 1 && s->time_axis == 0)))
        return st_infer_error(c, ST_ERR_MODEL, "batch_axis %d and time_axis %d must be 0 and 1 in some order", s->batch_axis, s->time_axis);
    ST_TRY(check_dims(c, 1, "sequence_lens", 1, (int64_t[]){x->dims[s->batch_axis]}));
    set_out(c, 0, x->dtype, x->rank, x->dims);
    return ST_OK;
}

static st_status infer_shrink(st_infer *c)
{
    static const st_dtype NUMERIC[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_U8, ST_I16, ST_U16, ST_I32, ST_U32, ST_I64, ST_U64, 0};
    ST_TRY(need_in(c, 0, "input"));
    ST_TRY(st_infer_dtype(c, 0, NUMERIC));
    st_shrink_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->bias = st_attr_float(c->node, "bias", 0.0f);
    s->lambd = st_attr_float(c->node, "lambd", 0.5f);
    set_out(c, 0, c->in[0].dtype, c->in[0].rank, c->in[0].dims);
    return ST_OK;
}

static st_status infer_det(st_infer *c)
{
    ST_TRY(need_in(c, 0, "X"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    const st_tinfo *x = &c->in[0];
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return st_infer_error(c, ST_ERR_SHAPE, "X must be [..., M, M]");
    set_out(c, 0, x->dtype, x->rank - 2, x->dims);
    return ST_OK;
}

/* ==== HannWindow, HammingWindow, BlackmanWindow, DFT, STFT, MelWeightMatrix ==== */

/* output_datatype: a numeric TensorProto type. */
static st_status output_datatype(const st_infer *c, st_dtype *t)
{
    int64_t v = st_attr_int(c->node, "output_datatype", ST_F32);
    if (v < 1 || v > 16 || !st_dtype_valid((st_dtype)v) || v == ST_BOOL)
        return st_infer_error(c, ST_ERR_MODEL, "output_datatype %lld is not a numeric type", (long long)v);
    *t = (st_dtype)v;
    return ST_OK;
}

static st_status infer_window(st_infer *c)
{
    const char *op = c->node->op_type;
    ST_TRY(need_in(c, 0, "size"));
    st_window_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->kind = strcmp(op, "HannWindow") == 0 ? ST_WIN_HANN : strcmp(op, "HammingWindow") == 0 ? ST_WIN_HAMMING : ST_WIN_BLACKMAN;
    s->periodic = st_attr_int(c->node, "periodic", 1) != 0;
    int64_t size;
    ST_TRY(const_int(c, 0, "size", &size));
    if (size < 0) return st_infer_error(c, ST_ERR_MODEL, "size is %lld", (long long)size);
    st_dtype t = ST_F32;
    ST_TRY(output_datatype(c, &t));
    set_out(c, 0, t, 1, &size);
    return ST_OK;
}

static st_status infer_dft(st_infer *c)
{
    ST_TRY(need_in(c, 0, "input"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    const st_tinfo *x = &c->in[0];
    /* opset 20 drops the batch dim from the input's description and moves
     * axis from an attribute (default 1) to an optional input (default -2,
     * the last signal dim) */
    bool v20 = c->opset >= 20;
    if (x->rank < (v20 ? 2 : 3) || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return st_infer_error(c, ST_ERR_SHAPE, v20 ? "input must be [signal dims..., 1 or 2]" : "input must be [batch, signal dims..., 1 or 2]");
    st_dft_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    int64_t given = v20 ? -2 : st_attr_int(c->node, "axis", 1);
    if (v20 && has_in(c, 2)) ST_TRY(const_int(c, 2, "axis", &given));
    if (v20 && st_node_attr(c->node, "axis"))
        return st_infer_error(c, ST_ERR_MODEL, "has an axis attribute, which opset 20 replaced with the axis input");
    int64_t axis = given < 0 ? given + x->rank : given;
    if (axis < 0 || axis > x->rank - 2)
        return st_infer_error(c, ST_ERR_SHAPE, "axis %lld is not a signal axis of a rank-%d input", (long long)given, x->rank);
    s->axis = (int)axis;
    s->inverse = st_attr_int(c->node, "inverse", 0) != 0;
    s->onesided = st_attr_int(c->node, "onesided", 0) != 0;
    s->n = x->dims[axis];
    if (has_in(c, 1)) {
        ST_TRY(const_int(c, 1, "dft_length", &s->n));
        if (s->n < 1) return st_infer_error(c, ST_ERR_MODEL, "dft_length is %lld", (long long)s->n);
    }
    if (s->onesided && x->dims[x->rank - 1] == 2) return st_infer_error(c, ST_ERR_MODEL, "onesided output needs a real input");
    if (s->onesided && s->inverse) return st_infer_error(c, ST_ERR_UNSUPPORTED, "an inverse onesided DFT is not supported");
    int64_t dims[ST_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = s->onesided ? s->n / 2 + 1 : s->n;
    dims[x->rank - 1] = 2;
    set_out(c, 0, x->dtype, x->rank, dims);
    return ST_OK;
}

static st_status infer_stft(st_infer *c)
{
    ST_TRY(need_in(c, 0, "signal"));
    ST_TRY(need_in(c, 1, "frame_step"));
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    const st_tinfo *x = &c->in[0];
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return st_infer_error(c, ST_ERR_SHAPE, "signal must be [batch, length, 1 or 2]");
    st_dft_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->axis = 1;
    s->onesided = st_attr_int(c->node, "onesided", 1) != 0;
    ST_TRY(const_int(c, 1, "frame_step", &s->step));
    if (s->step < 1) return st_infer_error(c, ST_ERR_MODEL, "frame_step is %lld", (long long)s->step);
    s->n = -1;
    if (has_in(c, 2)) {
        ST_TRY(same_dtype(c, 2, 0, "window"));
        if (c->in[2].rank != 1) return st_infer_error(c, ST_ERR_SHAPE, "window must be 1-D");
        s->n = c->in[2].dims[0];
    }
    if (has_in(c, 3)) {
        int64_t len;
        ST_TRY(const_int(c, 3, "frame_length", &len));
        if (s->n >= 0 && len != s->n)
            return st_infer_error(c, ST_ERR_SHAPE, "frame_length %lld differs from the window's %lld", (long long)len, (long long)s->n);
        s->n = len;
    }
    if (s->n < 0) return st_infer_error(c, ST_ERR_MODEL, "needs a window or a frame_length");
    if (s->n < 1 || s->n > x->dims[1])
        return st_infer_error(c, ST_ERR_SHAPE, "frame length %lld does not fit a signal of %lld", (long long)s->n, (long long)x->dims[1]);
    if (s->onesided && x->dims[2] == 2) return st_infer_error(c, ST_ERR_MODEL, "onesided output needs a real signal");
    int64_t frames = (x->dims[1] - s->n) / s->step + 1;
    set_out(c, 0, x->dtype, 4, (int64_t[]){x->dims[0], frames, s->onesided ? s->n / 2 + 1 : s->n, 2});
    return ST_OK;
}

static st_status infer_mel_weight(st_infer *c)
{
    static const char *const NAMES[] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"};
    for (int i = 0; i < 5; i++) ST_TRY(need_in(c, i, NAMES[i]));
    for (int i = 2; i < 5; i++)
        if (numel_of(&c->in[i]) != 1) return st_infer_error(c, ST_ERR_SHAPE, "%s must hold one value", NAMES[i]);
    ST_TRY(st_infer_dtype(c, 2, INDEX_TYPES));
    ST_TRY(st_infer_dtype(c, 3, FLOATS));
    ST_TRY(st_infer_dtype(c, 4, FLOATS));
    int64_t bins, len;
    ST_TRY(const_int(c, 0, NAMES[0], &bins));
    ST_TRY(const_int(c, 1, NAMES[1], &len));
    if (bins < 1 || len < 1) return st_infer_error(c, ST_ERR_MODEL, "num_mel_bins and dft_length must be positive");
    st_dtype t = ST_F32;
    ST_TRY(output_datatype(c, &t));
    if (!st_infer_state(c, 1)) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    set_out(c, 0, t, 2, (int64_t[]){len / 2 + 1, bins});
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

/* types: the ONNX type constraint of the type operand (op.h) */
#define MISC_OP(op_name, rule, t) {.name = op_name, .domain = "", .min_opset = 1, .infer = rule, .types = t}
const st_op_def st_ops_misc[] = {
    {.name = "Dropout", .domain = "", .min_opset = 1, .infer = infer_dropout, .view = dropout_view, .types = ST_DT_ALL_FLOATS},
    MISC_OP("NegativeLogLikelihoodLoss", infer_loss, ST_DT_ALL_FLOATS),
    MISC_OP("SoftmaxCrossEntropyLoss", infer_loss, ST_DT_ALL_FLOATS),
    MISC_OP("RNN", infer_rnn, ST_DT_ALL_FLOATS),
    MISC_OP("GRU", infer_rnn, ST_DT_ALL_FLOATS),
    MISC_OP("LSTM", infer_rnn, ST_DT_ALL_FLOATS),
    MISC_OP("QuantizeLinear", infer_quantize, ST_DT_ALL_FLOATS | ST_DT(ST_I32)),
    MISC_OP("DequantizeLinear", infer_dequantize, ST_DT(ST_I8) | ST_DT(ST_U8) | ST_DT(ST_I16) | ST_DT(ST_U16) | ST_DT(ST_I32)),
    MISC_OP("DynamicQuantizeLinear", infer_dynamic_quantize, ST_DT(ST_F32)),
    MISC_OP("MatMulInteger", infer_matmul_integer, ST_DT(ST_I8) | ST_DT(ST_U8)),
    MISC_OP("QLinearMatMul", infer_qlinear_matmul, ST_DT(ST_I8) | ST_DT(ST_U8)),
    MISC_OP("ConvInteger", infer_conv_integer, ST_DT(ST_I8) | ST_DT(ST_U8)),
    MISC_OP("QLinearConv", infer_qlinear_conv, ST_DT(ST_I8) | ST_DT(ST_U8)),
    MISC_OP("GridSample", infer_gridsample, ST_DT_ALL_FLOATS),
    {.name = "AffineGrid", .domain = "", .min_opset = 20, .infer = infer_affine_grid, .types = ST_DT_ALL_FLOATS},
    MISC_OP("RoiAlign", infer_roialign, ST_DT_ALL_FLOATS),
    MISC_OP("MaxUnpool", infer_maxunpool, ST_DT_ALL_FLOATS),
    MISC_OP("ReverseSequence", infer_reverse_sequence, ST_DT_ALL),
    MISC_OP("Shrink", infer_shrink, ST_DT_NUMERIC),
    MISC_OP("Det", infer_det, ST_DT_ALL_FLOATS),
    {.name = "HannWindow", .domain = "", .min_opset = 1, .infer = infer_window, .types = ST_DT_ALL_FLOATS, .t_operand = -1},
    {.name = "HammingWindow", .domain = "", .min_opset = 1, .infer = infer_window, .types = ST_DT_ALL_FLOATS, .t_operand = -1},
    {.name = "BlackmanWindow", .domain = "", .min_opset = 1, .infer = infer_window, .types = ST_DT_ALL_FLOATS, .t_operand = -1},
    MISC_OP("DFT", infer_dft, ST_DT_ALL_FLOATS),
    MISC_OP("STFT", infer_stft, ST_DT_ALL_FLOATS),
    {.name = "MelWeightMatrix", .domain = "", .min_opset = 1, .infer = infer_mel_weight, .types = ST_DT_ALL_FLOATS, .t_operand = -1},
    {.name = NULL}
};
