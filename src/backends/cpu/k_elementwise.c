/*
 * k_elementwise.c — CPU kernels of the elementwise ops.
 *
 * All take strided, broadcast operands (stride 0 on broadcast dims) and a
 * strided output.  Work is split by rows of the walk that
 * ops/lower_elementwise.h lowers (the dims in the output's memory order,
 * merged where every operand is contiguous), and the fast paths below are
 * chosen by its class.
 * Floating types (f32, f16, bf16) compute in f32 on blocks: a block is
 * loaded (a no-op for unit-stride f32), transformed by one tight loop, and
 * stored, so the dtype and stride handling stays out of the math.  f64
 * computes in double and integers in int64, element by element.
 */
#include <math.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/common/cvt_half.h"
#include "backends/cpu/fastmath.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "runtime/pool.h"
#include "backends/common/rows.h"
#include "ops/elementwise.h"
#include "ops/lower_elementwise.h"
#include "ops/scalar_math.h"

#define BLOCK 256
#define ROWS_PER_TASK_MIN_ELEMS 16384

/* ---- block load/store ---- */

static const float *load_block(st_dtype dt, const char *base, int64_t step, int64_t n, float *scratch)
{
    if (dt == ST_F32 && step == 1) return (const float *)base;
    if (step == 0) {
        float v = st_load_f32(dt, base);
        for (int64_t i = 0; i < n; i++) scratch[i] = v;
        return scratch;
    }
    /* f16 and bf16 rows convert sixteen lanes a vector (cvt_half.c) */
    st_cvt_row_to_f32(scratch, dt, base, step, n);
    return scratch;
}

static float *out_block(st_dtype dt, char *base, int64_t step, float *scratch)
{
    return dt == ST_F32 && step == 1 ? (float *)base : scratch;
}

static void store_block(st_dtype dt, char *base, int64_t step, int64_t n, const float *v)
{
    if (dt == ST_F32 && step == 1) return; /* computed in place */
    st_cvt_row_from_f32(dt, base, step, v, n);
}

/* ---- the math ---- */

/* vectorisable erf, within 5e-7 relative (fastmath.h) */
static inline float erf_f(float x) { return st_erf_f32(x); }

/* Cloned for AVX-512 (selected at load time through an ifunc, by cpuid)
 * and for baseline x86-64.  The math is ops/scalar_math.h's, one loop
 * per op so that GCC vectorises each once the function is inlined; tanh
 * and erf (and the GELUs built on them) use fastmath.h's vectorisable
 * forms instead of libm's, held to scalar_math.h's by
 * tests/unit/test_scalar_math.c. */
#define MAP(expr) for (i = 0; i < n; i++) y[i] = (expr)
ST_CLONES
static void unary_f32(const st_ew_state *s, const float *x, float *y, int64_t n, float lo, float hi)
{
    float a = s->alpha, b = s->beta, g = s->gamma;
    int flags = (s->detect_pos ? ST_SM_INF_POS : 0) | (s->detect_neg ? ST_SM_INF_NEG : 0);
    int64_t i;
    switch ((st_unary)s->code) {
    case ST_U_RELU: MAP(st_sm_relu_f32(x[i])); break;
    case ST_U_SIGMOID: MAP(st_sm_sigmoid_f32(x[i])); break;
    case ST_U_SILU: MAP(st_sm_silu_f32(x[i])); break;
    case ST_U_TANH: MAP(st_tanh_f32(x[i])); break; /* fastmath.h, 3e-7 */
    case ST_U_EXP: MAP(st_sm_exp_f32(x[i])); break;
    case ST_U_LOG: MAP(st_sm_log_f32(x[i])); break;
    case ST_U_SQRT: MAP(st_sm_sqrt_f32(x[i])); break;
    case ST_U_NEG: MAP(st_sm_neg_f32(x[i])); break;
    case ST_U_ABS: MAP(st_sm_abs_f32(x[i])); break;
    case ST_U_RECIPROCAL: MAP(st_sm_reciprocal_f32(x[i])); break;
    case ST_U_FLOOR: MAP(st_sm_floor_f32(x[i])); break;
    case ST_U_CEIL: MAP(st_sm_ceil_f32(x[i])); break;
    case ST_U_ROUND: MAP(st_sm_round_f32(x[i])); break;
    case ST_U_ERF: MAP(erf_f(x[i])); break;
    case ST_U_SIN: MAP(st_sm_sin_f32(x[i])); break;
    case ST_U_COS: MAP(st_sm_cos_f32(x[i])); break;
    case ST_U_TAN: MAP(st_sm_tan_f32(x[i])); break;
    case ST_U_ASIN: MAP(st_sm_asin_f32(x[i])); break;
    case ST_U_ACOS: MAP(st_sm_acos_f32(x[i])); break;
    case ST_U_ATAN: MAP(st_sm_atan_f32(x[i])); break;
    case ST_U_SINH: MAP(st_sm_sinh_f32(x[i])); break;
    case ST_U_COSH: MAP(st_sm_cosh_f32(x[i])); break;
    case ST_U_ASINH: MAP(st_sm_asinh_f32(x[i])); break;
    case ST_U_ACOSH: MAP(st_sm_acosh_f32(x[i])); break;
    case ST_U_ATANH: MAP(st_sm_atanh_f32(x[i])); break;
    case ST_U_SIGN: MAP(st_sm_sign_f32(x[i])); break;
    case ST_U_LEAKY_RELU: MAP(st_sm_leaky_relu_f32(x[i], a)); break;
    case ST_U_HARD_SIGMOID: MAP(st_sm_hard_sigmoid_f32(x[i], a, b)); break;
    case ST_U_HARD_SWISH: MAP(st_sm_hard_swish_f32(x[i])); break;
    case ST_U_ELU: MAP(st_sm_elu_f32(x[i], a)); break;
    case ST_U_SELU: MAP(st_sm_selu_f32(x[i], a, g)); break;
    case ST_U_CELU: MAP(st_sm_celu_f32(x[i], a)); break;
    case ST_U_SOFTPLUS: MAP(st_sm_softplus_f32(x[i])); break;
    case ST_U_SOFTSIGN: MAP(st_sm_softsign_f32(x[i])); break;
    case ST_U_THRESHOLDED_RELU: MAP(st_sm_thresholded_relu_f32(x[i], a)); break;
    case ST_U_MISH: MAP(st_sm_mish_f32(x[i])); break;
    case ST_U_GELU: MAP(0.5f * x[i] * (1.0f + erf_f(x[i] * 0.70710678118654752f))); break;
    case ST_U_GELU_TANH: MAP(0.5f * x[i] * (1.0f + st_tanh_f32(st_sm_gelu_tanh_arg_f32(x[i])))); break;
    case ST_U_ISNAN: MAP(st_sm_isnan_f32(x[i])); break;
    case ST_U_ISINF: MAP(st_sm_isinf_f32(x[i], flags)); break;
    case ST_U_CLIP: MAP(st_sm_clip_f32(x[i], lo, hi)); break;
    case ST_U_NOT: MAP(st_sm_not_f32(x[i])); break;
    case ST_U_BITWISE_NOT: /* integers only (the rule refuses floats): unary_i64 */
        MAP(x[i]);
        break;
    }
}

static double unary_f64(const st_ew_state *s, double x, double lo, double hi)
{
    int flags = (s->detect_pos ? ST_SM_INF_POS : 0) | (s->detect_neg ? ST_SM_INF_NEG : 0);
    return st_sm_unary_f64(s->code, x, s->alpha, s->beta, s->gamma, lo, hi, flags);
}

static int64_t unary_i64(const st_ew_state *s, int64_t x, int64_t lo, int64_t hi)
{
    return st_sm_unary_i64(s->code, x, lo, hi);   /* the store keeps the type's low bits */
}

void st_epilogue_f32(const st_epilogue *e, float *x, int64_t n)
{
    if (!e->act) return;
    st_ew_state s = {0};
    s.code = e->act - 1;
    s.alpha = e->alpha;
    s.beta = e->beta;
    unary_f32(&s, x, x, n, e->alpha, e->beta);
}

/* Long rows split into pieces of the budget (st_row_tasks, rows.h), a
 * multiple of BLOCK. */
#define PIECE ROWS_PER_TASK_MIN_ELEMS

/* ---- unary driver ---- */

typedef struct unary_job {
    const st_kctx *k;
    const st_ew_state *s;
    bool vec;                /* Sigmoid and SiLU: the AVX-512 forms (gemm_avx512.c), not libm per element */
    st_epilogue vact;
    st_iter it;
    st_row_tasks tasks;
    double lo, hi;
} unary_job;

static void unary_rows(void *arg, int64_t task)
{
    const unary_job *j = arg;
    const st_operand *x = &j->k->in[0], *y = &j->k->out[0];
    st_iter it = j->it;
    int64_t r0, r1, i0, i1;
    st_row_tasks_span(&j->tasks, it.inner, task, &r0, &r1, &i0, &i1);
    st_iter_seek(&it, r0);
    size_t xs = st_dtype_size(x->dtype), ys = st_dtype_size(y->dtype);
    bool flt = x->dtype == ST_F32 || x->dtype == ST_F16 || x->dtype == ST_BF16 || x->dtype == ST_BOOL;
    float sx[BLOCK], sy[BLOCK];
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it)) {
        const char *xb = (const char *)x->data + it.off[1] * (int64_t)xs;
        char *yb = (char *)y->data + it.off[0] * (int64_t)ys;
        if (flt && y->dtype != ST_F64) {
            for (int64_t i = i0; i < i1; i += BLOCK) {
                int64_t n = i1 - i < BLOCK ? i1 - i : BLOCK;
                const float *xv = load_block(x->dtype, xb + i * it.step[1] * (int64_t)xs, it.step[1], n, sx);
                float *yv = out_block(y->dtype, yb + i * it.step[0] * (int64_t)ys, it.step[0], sy);
                if (!j->vec || !st_vec_act(&j->vact, xv, yv, n)) unary_f32(j->s, xv, yv, n, (float)j->lo, (float)j->hi);
                store_block(y->dtype, yb + i * it.step[0] * (int64_t)ys, it.step[0], n, yv);
            }
        } else if (x->dtype == ST_F64) {
            for (int64_t i = i0; i < i1; i++)
                st_store_f64(y->dtype, yb + i * it.step[0] * (int64_t)ys,
                             unary_f64(j->s, st_load_f64(x->dtype, xb + i * it.step[1] * (int64_t)xs), j->lo, j->hi));
        } else {
            for (int64_t i = i0; i < i1; i++)
                st_store_i64(y->dtype, yb + i * it.step[0] * (int64_t)ys,
                             unary_i64(j->s, st_load_i64(x->dtype, xb + i * it.step[1] * (int64_t)xs), (int64_t)j->lo,
                                       (int64_t)j->hi));
        }
    }
}

/* When the innermost (coalesced) dim is short, as in a slice [..., 0:2]
 * of YOLOv5's [.., 85] head, rows of 2 elements cost more in iterator and
 * block overhead than in arithmetic: make the longest dim the inner one
 * instead (a strided row is gathered into the block).  Elementwise results
 * do not depend on the order elements are visited. */
static void long_inner(st_iter *it)
{
    if (it->rank < 2 || it->inner >= 16) return;
    int last = it->rank - 1, d = 0;
    for (int i = 1; i < last; i++)
        if (it->sizes[i] > it->sizes[d]) d = i;
    if (it->sizes[d] < 4 * it->inner) return;
    int64_t t = it->sizes[d];
    it->sizes[d] = it->sizes[last];
    it->sizes[last] = t;
    for (int k = 0; k < it->nops; k++) {
        t = it->strides[k][d];
        it->strides[k][d] = it->strides[k][last];
        it->strides[k][last] = t;
        it->step[k] = it->strides[k][last];
    }
    it->inner = it->sizes[last];
}

/* A unary op on f32 whose input is a transposed view: the packed output's
 * last dim (length L) steps through the input with a long stride, and
 * another dim d (length D) is unit-stride in the input, as in YOLOv5's
 * head (a [.., 85, H*W] conv output read as [.., H*W, 85]).  Row by row,
 * every element of a row would come from its own cache line, and the lines
 * of one row (a multiple of 1 KB apart) crowd a few L1 sets.  Instead a
 * task takes 16 positions along d at a time: for each of the L inputs it
 * reads 16 consecutive floats, transposes them into a 16 x L block (16 x 16
 * at a time in registers, st_transpose16), and
 * applies the op to the block, which is 16 whole output rows.  Elementwise,
 * so the results are those of the row-by-row path. */
#define TR_ROWS 16
#define TR_BLOCKS 4            /* 16-row blocks per task */

typedef struct tr_job {
    const unary_job *u;
    int rank, d, last;
    int64_t nouter, dblocks;   /* tasks: outer positions x groups of TR_BLOCKS blocks */
} tr_job;

static void unary_tr_task(void *arg, int64_t task)
{
    const tr_job *t = arg;
    const unary_job *j = t->u;
    const st_iter *it = &j->it;
    const float *x = j->k->in[0].data;
    float *y = j->k->out[0].data;
    int64_t o = task / t->dblocks, g = task % t->dblocks;
    /* the outer position o, row-major over the dims other than d and last */
    int64_t xo = 0, yo = 0, rem = o;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (i == t->d || i == t->last) continue;
        int64_t c = rem % it->sizes[i];
        rem /= it->sizes[i];
        yo += c * it->strides[0][i];
        xo += c * it->strides[1][i];
    }
    int64_t L = it->sizes[t->last], D = it->sizes[t->d];
    int64_t xsl = it->strides[1][t->last], ysl = it->strides[0][t->last], ysd = it->strides[0][t->d];
    float buf[TR_ROWS * BLOCK];
    bool fast = st_gemm_fast();
    for (int64_t d0 = g * TR_BLOCKS * TR_ROWS; d0 < D && d0 < (g + 1) * TR_BLOCKS * TR_ROWS; d0 += TR_ROWS) {
        int64_t nd = D - d0 < TR_ROWS ? D - d0 : TR_ROWS;
        if (fast)
            for (int64_t i0 = 0; i0 < L; i0 += 16)
                st_transpose16(x + xo + i0 * xsl + d0, xsl, (int)(L - i0 < 16 ? L - i0 : 16), (int)nd, buf + i0, L);
        else
            for (int64_t i = 0; i < L; i++) {
                const float *xp = x + xo + i * xsl + d0;
                for (int64_t l = 0; l < nd; l++) buf[l * L + i] = xp[l];
            }
        if (ysl == 1 && ysd == L) {
            float *out = y + yo + d0 * ysd;
            if (!j->vec || !st_vec_act(&j->vact, buf, out, nd * L)) unary_f32(j->s, buf, out, nd * L, (float)j->lo, (float)j->hi);
        } else {
            for (int64_t l = 0; l < nd; l++) {
                float *row = buf + l * L;
                if (!j->vec || !st_vec_act(&j->vact, row, row, L)) unary_f32(j->s, row, row, L, (float)j->lo, (float)j->hi);
                float *out = y + yo + (d0 + l) * ysd;
                for (int64_t i = 0; i < L; i++) out[i * ysl] = row[i];
            }
        }
    }
}

/* Takes the op when its shapes fit (see above); false: nothing done.
 * Only a general walk can: every other class reads the input at unit
 * stride along the row. */
static bool unary_transposed(const st_kctx *k, const unary_job *j, st_lew_class cls)
{
    const st_iter *it = &j->it;
    if (cls != ST_LEW_GENERAL || k->in[0].dtype != ST_F32 || k->out[0].dtype != ST_F32 || it->rank < 2) return false;
    int last = it->rank - 1, d = -1;
    int64_t L = it->sizes[last];
    if (it->strides[1][last] == 1 || it->strides[0][last] != 1 || L < 2 || L > BLOCK) return false;
    for (int i = 0; i < last; i++)
        if (it->strides[1][i] == 1 && it->sizes[i] >= TR_ROWS) d = i;
    if (d < 0) return false;
    tr_job t = {j, it->rank, d, last, 1, 0};
    for (int i = 0; i < last; i++)
        if (i != d) t.nouter *= it->sizes[i];
    t.dblocks = (it->sizes[d] + TR_BLOCKS * TR_ROWS - 1) / (TR_BLOCKS * TR_ROWS);
    st_parallel_for(k->pool, t.nouter * t.dblocks, unary_tr_task, &t);
    return true;
}

static st_status run_unary(const st_kctx *k, const st_ew_state *s, double lo, double hi)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    unary_job j = {k, s, false, {0}, {0}, {0}, lo, hi};
    j.vec = s->code == ST_U_SIGMOID || s->code == ST_U_SILU || s->code == ST_U_GELU;
    j.vact.act = s->code + 1;
    st_lower_ew w;
    st_lower_ew_operands(&w, y, 1, (const st_operand *[]){x});
    if (!st_lower_ew_iter(&w, &j.it)) return ST_OK;
    if (unary_transposed(k, &j, w.cls)) return ST_OK;
    long_inner(&j.it);
    j.tasks = st_row_tasks_of(st_iter_rows(&j.it), j.it.inner, PIECE);
    st_parallel_for(k->pool, st_row_tasks_count(&j.tasks), unary_rows, &j);
    return ST_OK;
}

st_status st_cpu_unary(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    return run_unary(k, s, 0, 0);
}

st_status st_cpu_clip(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    bool flt = st_dtype_is_float(k->in[0].dtype);
    double lo = flt ? s->alpha : (double)INT64_MIN, hi = flt ? s->beta : (double)INT64_MAX;
    if (!flt) { /* integer clip without bounds: the type's range */
        lo = -9.2e18;
        hi = 9.2e18;
    }
    if (k->n_in > 1 && k->in[1].data) lo = st_load_f64(k->in[1].dtype, k->in[1].data);
    if (k->n_in > 2 && k->in[2].data) hi = st_load_f64(k->in[2].dtype, k->in[2].data);
    if (flt) {
        /* the f32 path computes in float: keep the bounds representable */
        if (lo < -3.402823466e38) lo = -INFINITY;
        if (hi > 3.402823466e38) hi = INFINITY;
    }
    return run_unary(k, s, lo, hi);
}

/* ---- binary ---- */

ST_CLONES
static void binary_f32(int code, const float *a, const float *b, float *y, int64_t n)
{
    int64_t i;
    /* each case calls scalar_math.h with a constant code, so its switch
     * folds away and the loop vectorises; float Mod is fmod (ONNX asks
     * fmod=1 for floats) */
#define BIN(c) case c: MAP(st_sm_binary_f32(c, a[i], b[i], 1)); break;
    switch ((st_binary)code) {
    BIN(ST_B_ADD) BIN(ST_B_SUB) BIN(ST_B_MUL) BIN(ST_B_DIV) BIN(ST_B_POW) BIN(ST_B_MOD) BIN(ST_B_MAX) BIN(ST_B_MIN)
    BIN(ST_B_MEAN) BIN(ST_B_EQUAL) BIN(ST_B_LESS) BIN(ST_B_GREATER) BIN(ST_B_LESS_EQUAL) BIN(ST_B_GREATER_EQUAL)
    BIN(ST_B_AND) BIN(ST_B_OR) BIN(ST_B_XOR) BIN(ST_B_PRELU)
    default: MAP(0.0f); break;   /* integer ops: binary_i64 */
    }
#undef BIN
}
#undef MAP

static double binary_f64(int code, double a, double b, bool fmod_mode)
{
    return st_sm_binary_f64(code, a, b, fmod_mode);
}

static int64_t binary_i64(int code, int64_t a, int64_t b, bool fmod_mode, bool is_unsigned)
{
    return st_sm_binary_i64(code, a, b, fmod_mode, is_unsigned);
}

typedef struct binary_job {
    const st_operand *a, *b, *y;
    int code;
    bool fmod_mode;
    st_iter it;
    st_row_tasks tasks;
} binary_job;

static bool f32_class(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

static void binary_rows(void *arg, int64_t task)
{
    const binary_job *j = arg;
    const st_operand *a = j->a, *b = j->b, *y = j->y;
    st_iter it = j->it;
    int64_t r0, r1, i0, i1;
    st_row_tasks_span(&j->tasks, it.inner, task, &r0, &r1, &i0, &i1);
    st_iter_seek(&it, r0);
    size_t as = st_dtype_size(a->dtype), bs = st_dtype_size(b->dtype), ys = st_dtype_size(y->dtype);
    bool flt = f32_class(a->dtype) && f32_class(b->dtype);
    bool dbl = !flt && (st_dtype_is_float(a->dtype) || st_dtype_is_float(b->dtype));
    bool uns = !st_dtype_is_signed(a->dtype) && a->dtype != ST_BOOL;
    float sa[BLOCK], sb[BLOCK], sy[BLOCK];
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it)) {
        const char *ab = (const char *)a->data + it.off[1] * (int64_t)as;
        const char *bb = (const char *)b->data + it.off[2] * (int64_t)bs;
        char *yb = (char *)y->data + it.off[0] * (int64_t)ys;
        if (flt) {
            for (int64_t i = i0; i < i1; i += BLOCK) {
                int64_t n = i1 - i < BLOCK ? i1 - i : BLOCK;
                const float *av = load_block(a->dtype, ab + i * it.step[1] * (int64_t)as, it.step[1], n, sa);
                const float *bv = load_block(b->dtype, bb + i * it.step[2] * (int64_t)bs, it.step[2], n, sb);
                float *yv = out_block(y->dtype, yb + i * it.step[0] * (int64_t)ys, it.step[0], sy);
                binary_f32(j->code, av, bv, yv, n);
                store_block(y->dtype, yb + i * it.step[0] * (int64_t)ys, it.step[0], n, yv);
            }
        } else if (dbl) {
            for (int64_t i = i0; i < i1; i++) {
                double va = st_load_f64(a->dtype, ab + i * it.step[1] * (int64_t)as);
                double vb = st_load_f64(b->dtype, bb + i * it.step[2] * (int64_t)bs);
                st_store_f64(y->dtype, yb + i * it.step[0] * (int64_t)ys, binary_f64(j->code, va, vb, j->fmod_mode));
            }
        } else {
            for (int64_t i = i0; i < i1; i++) {
                int64_t va = st_load_i64(a->dtype, ab + i * it.step[1] * (int64_t)as);
                int64_t vb = st_load_i64(b->dtype, bb + i * it.step[2] * (int64_t)bs);
                st_store_i64(y->dtype, yb + i * it.step[0] * (int64_t)ys, binary_i64(j->code, va, vb, j->fmod_mode, uns));
            }
        }
    }
}

/* Strides of x broadcast to y's shape: right-aligned, 0 where x has size 1. */
void st_broadcast_strides(const st_operand *x, const st_operand *y, int64_t *strides)
{
    st_lower_ew_bcast(x->rank, x->sizes, x->strides, y->rank, strides);
}

static void run_binary(const st_kctx *k, const st_operand *a, const st_operand *b, const st_operand *y, int code,
                       bool fmod_mode)
{
    binary_job j = {a, b, y, code, fmod_mode, {0}, {0}};
    st_lower_ew w;
    st_lower_ew_operands(&w, y, 2, (const st_operand *[]){a, b});
    if (!st_lower_ew_iter(&w, &j.it)) return;
    long_inner(&j.it);
    j.tasks = st_row_tasks_of(st_iter_rows(&j.it), j.it.inner, PIECE);
    st_parallel_for(k->pool, st_row_tasks_count(&j.tasks), binary_rows, &j);
}

st_status st_cpu_binary(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    st_operand lb = k->in[1];
    st_ew_legacy_b(s, &lb.rank, lb.sizes, lb.strides);
    const st_operand *a = &k->in[0], *b = &lb, *y = &k->out[0];
    /* Pow by a constant 2 (YOLOv5's head squares its width and height
     * terms) as a * a: the correctly rounded square, where powf is within
     * an ulp of it, without a libm call per element (as ONNX Runtime does) */
    if (s->code == ST_B_POW && a->dtype == ST_F32 && b->dtype == ST_F32 && y->dtype == ST_F32 &&
        st_operand_numel(b) == 1 && *(const float *)b->data == 2.0f) {
        run_binary(k, a, a, y, ST_B_MUL, false);
        return ST_OK;
    }
    run_binary(k, a, b, y, s->code, s->fmod != 0);
    return ST_OK;
}

/* Sum/Max/Min/Mean fold their inputs pairwise into the output. */
st_status st_cpu_variadic(const st_kctx *k)
{
    const st_ew_state *s = k->state;
    const st_operand *y = &k->out[0];
    int64_t sx[ST_MAX_RANK];
    st_broadcast_strides(&k->in[0], y, sx);
    st_operand x0 = k->in[0];
    x0.rank = y->rank;
    memcpy(x0.sizes, y->sizes, sizeof x0.sizes);
    memcpy(x0.strides, sx, sizeof x0.strides);
    st_copy_strided(y, &x0);
    for (int i = 1; i < k->n_in; i++) run_binary(k, y, &k->in[i], y, s->code, false);
    if (s->code == ST_B_MEAN && k->n_in > 1) {
        st_operand d = *y;
        float inv = (float)k->n_in;
        double invd = (double)k->n_in;
        char buf[8];
        st_store_f64(y->dtype, buf, y->dtype == ST_F64 ? invd : inv);
        d.data = buf;
        d.rank = 0;
        run_binary(k, y, &d, y, ST_B_DIV, false);
    }
    return ST_OK;
}

/* ---- Where ---- */

typedef struct where_job {
    const st_operand *c, *x, *yv, *out;
    st_iter it;
    int64_t rows, rows_per_task;
} where_job;

static void where_rows(void *arg, int64_t task)
{
    const where_job *j = arg;
    st_iter it = j->it;
    int64_t r0 = task * j->rows_per_task, r1 = r0 + j->rows_per_task;
    if (r1 > j->rows) r1 = j->rows;
    st_iter_seek(&it, r0);
    size_t es = st_dtype_size(j->out->dtype);
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            bool pick = ((const uint8_t *)j->c->data)[it.off[1] + i * it.step[1]] != 0;
            const char *src = pick ? (const char *)j->x->data + (it.off[2] + i * it.step[2]) * (int64_t)es
                                   : (const char *)j->yv->data + (it.off[3] + i * it.step[3]) * (int64_t)es;
            memcpy((char *)j->out->data + (it.off[0] + i * it.step[0]) * (int64_t)es, src, es);
        }
}

st_status st_cpu_where(const st_kctx *k)
{
    const st_operand *out = &k->out[0];
    where_job j = {&k->in[0], &k->in[1], &k->in[2], out, {0}, 0, 0};
    st_lower_ew w;
    st_lower_ew_operands(&w, out, 3, (const st_operand *[]){&k->in[0], &k->in[1], &k->in[2]});
    if (!st_lower_ew_iter(&w, &j.it)) return ST_OK;
    j.rows = st_iter_rows(&j.it);
    j.rows_per_task = st_rows_per_task(j.it.inner, ROWS_PER_TASK_MIN_ELEMS);
    st_parallel_for(k->pool, (j.rows + j.rows_per_task - 1) / j.rows_per_task, where_rows, &j);
    return ST_OK;
}

/* ---- Cast ---- */

/* Packed f16/bf16 <-> f32 and int32 -> f32 run the vector conversions
 * (cvt_half.h, the same bits as st_convert) over fixed chunks on the pool
 * when the walk is one contiguous row (both operands dense in one layout);
 * everything else goes element by element through st_copy_strided. */
#define CAST_CHUNK 65536

typedef struct cast_job {
    st_cvt_fn fn;
    char *y;
    const char *x;
    size_t ey, ex;
    int64_t n;
} cast_job;

static void cast_chunk(void *arg, int64_t t)
{
    const cast_job *j = arg;
    int64_t i = t * CAST_CHUNK, n = j->n - i < CAST_CHUNK ? j->n - i : CAST_CHUNK;
    j->fn(j->y + i * (int64_t)j->ey, j->x + i * (int64_t)j->ex, n);
}

st_status st_cpu_cast(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    st_cvt_fn fn = st_cvt_vec(y->dtype, x->dtype);
    st_lower_ew w;
    st_lower_ew_operands(&w, y, 1, (const st_operand *[]){x});
    if (fn && w.cls == ST_LEW_CONTIGUOUS) {
        cast_job j = {fn, y->data, x->data, st_dtype_size(y->dtype), st_dtype_size(x->dtype), w.n};
        st_parallel_for(k->pool, (j.n + CAST_CHUNK - 1) / CAST_CHUNK, cast_chunk, &j);
        return ST_OK;
    }
    st_copy_strided(y, x);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

#define UNARY_K(name, code, types, a, b, g) {#name, "", ST_DT_ALL, st_cpu_unary, NULL, NULL, NULL},
#define BINARY_K(name, code, types, to_bool) {#name, "", ST_DT_ALL, st_cpu_binary, NULL, NULL, NULL},
#define VARIADIC_K(name, code, types) {#name, "", ST_DT_ALL, st_cpu_variadic, NULL, NULL, NULL},
const st_kernel st_cpu_k_elementwise[] = {
    ST_UNARY_OPS(UNARY_K)
    ST_BINARY_OPS(BINARY_K)
    ST_VARIADIC_OPS(VARIADIC_K)
    {"Where", "", ST_DT_ALL, st_cpu_where, NULL, NULL, NULL},
    {"Clip", "", ST_DT_ALL, st_cpu_clip, NULL, NULL, NULL},
    {"Cast", "", ST_DT_ALL, st_cpu_cast, NULL, NULL, NULL},
    {"CastLike", "", ST_DT_ALL, st_cpu_cast, NULL, NULL, NULL},
    {NULL}
};
