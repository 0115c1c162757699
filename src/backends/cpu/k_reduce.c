/*
 * k_reduce.c — CPU kernels of the reduce family: the ten ReduceX ops,
 * ArgMax/ArgMin, TopK and CumSum.
 *
 * A reduction splits the input's shape into outer positions (one output
 * each) and rows (the reduced axes, see rows.h).  f32, f16 and bf16
 * accumulate in f32, in 8 lanes over a run of the row (vectorisable, and
 * more accurate than one running sum), combined in a fixed order:
 *   - row mode: one output at a time; its row is read run by run, packed
 *     f32 runs in place, anything else converted a chunk at a time.  This
 *     is the common case (ReduceMean over the last axis).
 *   - column mode: when neighbouring outputs read neighbouring inputs
 *     (the innermost kept axis is packed: ReduceMean over the tokens of
 *     [B, T, C]), a block of outputs accumulates together, one packed
 *     slice of the input per reduced position, instead of striding
 *     through memory once per output.
 * ReduceLogSumExp subtracts each output's max first and exponentiates
 * with fastmath.h's vectorised exp.
 * f64 accumulates in double and integers in int64 (sum, product, max,
 * min, L1, sum of squares; mean divides at the end), one element at a
 * time.  Each output's value is summed in the same order whatever the
 * thread count: tasks own whole outputs and are cut by size alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/fastmath.h"
#include "backends/cpu/k_reduce.h"
#include "runtime/pool.h"
#include "backends/common/rows.h"
#include "ops/index_math.h"
#include "ops/reduce.h"

#define CHUNK 512          /* elements converted to f32 at a time */
#define COL_BLOCK 64       /* outputs a column-mode unit accumulates together */
#define TASK_ELEMS 32768   /* input elements per task, about */
#define LANES 8

/* What one element contributes, and how contributions combine. */
enum { A_SUM, A_ABS, A_SQ, A_EXP, A_PROD, A_MAX, A_MIN };

static int acc_kind(int kind)
{
    switch (kind) {
    case ST_R_L1: return A_ABS;
    case ST_R_L2:
    case ST_R_SUM_SQUARE: return A_SQ;
    case ST_R_PROD: return A_PROD;
    case ST_R_MAX: return A_MAX;
    case ST_R_MIN: return A_MIN;
    default: return A_SUM; /* SUM, MEAN, LOG_SUM; LOG_SUM_EXP is A_MAX then A_EXP */
    }
}

/* Strides of y (the reduced output) over x's shape: 0 on reduced axes. */
static void output_strides(const st_operand *x, const st_operand *y, uint32_t mask, bool keepdims, int64_t *ys)
{
    int yd = 0;
    for (int d = 0; d < x->rank; d++) {
        if (mask >> d & 1) {
            ys[d] = 0;
            if (keepdims) yd++;
        } else {
            ys[d] = y->strides[yd++];
        }
    }
}

/* ---- f32 accumulation ---- */

static float identity_f32(int a)
{
    switch (a) {
    case A_PROD: return 1.0f;
    case A_MAX: return -INFINITY;
    case A_MIN: return INFINITY;
    default: return 0.0f;
    }
}

/* NaN wins max and min, as numpy's reductions propagate it. */
static inline float join_f32(int a, float acc, float v)
{
    switch (a) {
    case A_PROD: return acc * v;
    case A_MAX: return ((v > acc) | (v != v)) ? v : acc;
    case A_MIN: return ((v < acc) | (v != v)) ? v : acc;
    default: return acc + v;
    }
}

static inline float pre_f32(int a, float v, float shift)
{
    switch (a) {
    case A_ABS: return fabsf(v);
    case A_SQ: return v * v;
    case A_EXP: return st_exp_neg_f32(v - shift);
    default: return v;
    }
}

/* Folds n packed values into acc. */
static float acc_row_f32(int a, const float *v, int64_t n, float acc, float shift)
{
    float l[LANES];
    float id = identity_f32(a);
    for (int q = 0; q < LANES; q++) l[q] = id;
    int64_t i = 0, m = n - n % LANES;
    switch (a) {
    case A_SUM:
        for (; i < m; i += LANES)
            for (int q = 0; q < LANES; q++) l[q] += v[i + q];
        break;
    case A_ABS:
        for (; i < m; i += LANES)
            for (int q = 0; q < LANES; q++) l[q] += fabsf(v[i + q]);
        break;
    case A_SQ:
        for (; i < m; i += LANES)
            for (int q = 0; q < LANES; q++) l[q] += v[i + q] * v[i + q];
        break;
    case A_EXP:
        for (; i < m; i += LANES)
            for (int q = 0; q < LANES; q++) l[q] += st_exp_neg_f32(v[i + q] - shift);
        break;
    case A_PROD:
        for (; i < m; i += LANES)
            for (int q = 0; q < LANES; q++) l[q] *= v[i + q];
        break;
    case A_MAX: return join_f32(a, acc, st_max_f32(v, n));
    case A_MIN: return join_f32(a, acc, st_min_f32(v, n));
    }
    for (; i < n; i++) l[0] = join_f32(a, l[0], pre_f32(a, v[i], shift));
    for (int q = 0; q < LANES; q++) acc = join_f32(a, acc, l[q]);
    return acc;
}

/* acc[j] = join(acc[j], pre(v[j])) for a block of outputs. */
static void acc_col_f32(int a, const float *v, float *acc, int64_t nb, const float *shift)
{
    int64_t j;
    switch (a) {
    case A_SUM: for (j = 0; j < nb; j++) acc[j] += v[j]; break;
    case A_ABS: for (j = 0; j < nb; j++) acc[j] += fabsf(v[j]); break;
    case A_SQ: for (j = 0; j < nb; j++) acc[j] += v[j] * v[j]; break;
    case A_EXP: for (j = 0; j < nb; j++) acc[j] += st_exp_neg_f32(v[j] - shift[j]); break;
    case A_PROD: for (j = 0; j < nb; j++) acc[j] *= v[j]; break;
    case A_MAX: for (j = 0; j < nb; j++) acc[j] = ((v[j] > acc[j]) | (v[j] != v[j])) ? v[j] : acc[j]; break;
    case A_MIN: for (j = 0; j < nb; j++) acc[j] = ((v[j] < acc[j]) | (v[j] != v[j])) ? v[j] : acc[j]; break;
    }
}

static float finish_f32(int kind, float acc, int64_t n, float shift)
{
    switch (kind) {
    case ST_R_MEAN: return acc / (float)n;
    case ST_R_L2: return sqrtf(acc);
    case ST_R_LOG_SUM: return logf(acc);
    case ST_R_LOG_SUM_EXP: return isfinite(shift) ? logf(acc) + shift : shift;
    default: return acc;
    }
}


/* ---- the job ---- */

typedef struct reduce_job {
    const st_reduce_state *s;
    const st_operand *x, *y;
    st_rows r;                 /* operand 0: x, 1: y over x's shape */
    bool column;
    int64_t cn, cblocks;       /* column mode: innermost outer dim and its blocks */
    int64_t units, per_task;
    st_status err;
} reduce_job;

/* One pass over the row at xoff: everything it holds, folded. */
static float row_pass_f32(const reduce_job *j, int64_t xoff, int a, float shift, float *buf)
{
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    float acc = identity_f32(a);
    st_row_runs it;
    int64_t off, n, step;
    st_row_runs_init(&it, &j->r, 0);
    while (st_row_runs_next(&it, &off, &n, &step)) {
        const char *p = (const char *)x->data + (xoff + off) * (int64_t)es;
        if (x->dtype == ST_F32 && step == 1) {
            acc = acc_row_f32(a, (const float *)p, n, acc, shift);
            continue;
        }
        for (int64_t c = 0; c < n; c += CHUNK) {
            int64_t m = n - c < CHUNK ? n - c : CHUNK;
            st_load_strided_f32(x->dtype, p + c * step * (int64_t)es, step, m, buf);
            acc = acc_row_f32(a, buf, m, acc, shift);
        }
    }
    return acc;
}

static void row_output_f32(const reduce_job *j, int64_t o, float *buf)
{
    int64_t offs[2];
    st_rows_offsets(&j->r, o, offs);
    int kind = j->s->kind;
    float acc, shift = 0.0f;
    if (kind == ST_R_LOG_SUM_EXP) {
        /* log-sum-exp shifted by the max; a max of +-inf or NaN is the
         * answer itself (what log(sum(exp(x))) gives) */
        shift = row_pass_f32(j, offs[0], A_MAX, 0.0f, buf);
        acc = isfinite(shift) ? row_pass_f32(j, offs[0], A_EXP, shift, buf) : 1.0f;
    } else {
        acc = row_pass_f32(j, offs[0], acc_kind(kind), 0.0f, buf);
    }
    st_store_f32(j->y->dtype, (char *)j->y->data + offs[1] * (int64_t)st_dtype_size(j->y->dtype),
                 finish_f32(kind, acc, j->r.row_len, shift));
}

/* Folds every reduced position into acc[0..nb) for nb neighbouring outputs
 * whose inputs are packed next to each other. */
static void col_pass_f32(const reduce_job *j, int64_t xoff, int a, const float *shift, float *acc, int64_t nb, float *buf)
{
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    float id = identity_f32(a);
    for (int64_t q = 0; q < nb; q++) acc[q] = id;
    st_row_runs it;
    int64_t off, n, step;
    st_row_runs_init(&it, &j->r, 0);
    while (st_row_runs_next(&it, &off, &n, &step)) {
        for (int64_t i = 0; i < n; i++) {
            const char *p = (const char *)x->data + (xoff + off + i * step) * (int64_t)es;
            const float *v = (const float *)p;
            if (x->dtype != ST_F32) {
                st_load_strided_f32(x->dtype, p, 1, nb, buf);
                v = buf;
            }
            acc_col_f32(a, v, acc, nb, shift);
        }
    }
}

static void col_unit_f32(const reduce_job *j, int64_t u, float *buf)
{
    int64_t rest = u / j->cblocks, j0 = (u % j->cblocks) * COL_BLOCK;
    int64_t nb = j->cn - j0 < COL_BLOCK ? j->cn - j0 : COL_BLOCK;
    int64_t offs[2];
    st_rows_offsets(&j->r, rest * j->cn + j0, offs);
    int kind = j->s->kind;
    float acc[COL_BLOCK], shift[COL_BLOCK];
    if (kind == ST_R_LOG_SUM_EXP) {
        /* the shift is each output's max; a non-finite max is the answer
         * (finish_f32); +inf keeps that output's exp pass in range */
        float sh[COL_BLOCK];
        col_pass_f32(j, offs[0], A_MAX, NULL, shift, nb, buf);
        for (int64_t q = 0; q < nb; q++) sh[q] = isfinite(shift[q]) ? shift[q] : INFINITY;
        col_pass_f32(j, offs[0], A_EXP, sh, acc, nb, buf);
    } else {
        for (int64_t q = 0; q < nb; q++) shift[q] = 0.0f;
        col_pass_f32(j, offs[0], acc_kind(kind), NULL, acc, nb, buf);
    }
    const st_operand *y = j->y;
    size_t es = st_dtype_size(y->dtype);
    int64_t ys = j->r.outer_strides[1][j->r.outer_rank - 1];
    for (int64_t q = 0; q < nb; q++)
        st_store_f32(y->dtype, (char *)y->data + (offs[1] + q * ys) * (int64_t)es, finish_f32(kind, acc[q], j->r.row_len, shift[q]));
}

/* ---- f64 and integers: element by element ---- */

static double identity_f64(int a)
{
    switch (a) {
    case A_PROD: return 1.0;
    case A_MAX: return -INFINITY;
    case A_MIN: return INFINITY;
    default: return 0.0;
    }
}

static double pass_f64(const reduce_job *j, int64_t xoff, int a, double shift)
{
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    double acc = identity_f64(a);
    st_row_runs it;
    int64_t off, n, step;
    st_row_runs_init(&it, &j->r, 0);
    while (st_row_runs_next(&it, &off, &n, &step)) {
        const char *p = (const char *)x->data + (xoff + off) * (int64_t)es;
        for (int64_t i = 0; i < n; i++) {
            double v = st_load_f64(x->dtype, p + i * step * (int64_t)es);
            switch (a) {
            case A_SUM: acc += v; break;
            case A_ABS: acc += fabs(v); break;
            case A_SQ: acc += v * v; break;
            case A_EXP: acc += exp(v - shift); break;
            case A_PROD: acc *= v; break;
            case A_MAX: acc = ((v > acc) | (v != v)) ? v : acc; break;
            case A_MIN: acc = ((v < acc) | (v != v)) ? v : acc; break;
            }
        }
    }
    return acc;
}

/* Integer accumulation wraps (in uint64) rather than overflowing. */
static uint64_t pass_int(const reduce_job *j, int64_t xoff, int a)
{
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    bool uns = x->dtype == ST_U64;
    uint64_t acc = a == A_PROD ? 1 : a == A_MAX ? (uns ? 0 : (uint64_t)INT64_MIN)
                                   : a == A_MIN ? (uns ? UINT64_MAX : (uint64_t)INT64_MAX) : 0;
    st_row_runs it;
    int64_t off, n, step;
    st_row_runs_init(&it, &j->r, 0);
    while (st_row_runs_next(&it, &off, &n, &step)) {
        const char *p = (const char *)x->data + (xoff + off) * (int64_t)es;
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)st_load_i64(x->dtype, p + i * step * (int64_t)es);
            bool gt = uns ? v > acc : (int64_t)v > (int64_t)acc, lt = uns ? v < acc : (int64_t)v < (int64_t)acc;
            switch (a) {
            case A_SUM: acc += v; break;
            case A_ABS: acc += !uns && (int64_t)v < 0 ? 0 - v : v; break;
            case A_SQ: acc += v * v; break;
            case A_PROD: acc *= v; break;
            case A_MAX: if (gt) acc = v; break;
            case A_MIN: if (lt) acc = v; break;
            }
        }
    }
    return acc;
}

static void generic_output(const reduce_job *j, int64_t o)
{
    int64_t offs[2];
    st_rows_offsets(&j->r, o, offs);
    const st_operand *x = j->x, *y = j->y;
    char *yp = (char *)y->data + offs[1] * (int64_t)st_dtype_size(y->dtype);
    int kind = j->s->kind;
    int64_t n = j->r.row_len;
    bool integer = !st_dtype_is_float(x->dtype);
    if (integer && kind != ST_R_L2 && kind != ST_R_LOG_SUM && kind != ST_R_LOG_SUM_EXP) {
        uint64_t acc = pass_int(j, offs[0], acc_kind(kind));
        if (kind == ST_R_MEAN) {
            double sum = x->dtype == ST_U64 ? (double)acc : (double)(int64_t)acc;
            st_store_f64(y->dtype, yp, sum / (double)n);
        } else {
            st_store_i64(y->dtype, yp, (int64_t)acc);
        }
        return;
    }
    double acc, shift = 0.0;
    if (kind == ST_R_LOG_SUM_EXP) {
        double mx = pass_f64(j, offs[0], A_MAX, 0.0);
        shift = isfinite(mx) ? mx : 0.0;
        acc = pass_f64(j, offs[0], A_EXP, shift);
    } else {
        acc = pass_f64(j, offs[0], acc_kind(kind), 0.0);
    }
    switch (kind) {
    case ST_R_MEAN: acc /= (double)n; break;
    case ST_R_L2: acc = sqrt(acc); break;
    case ST_R_LOG_SUM: acc = log(acc); break;
    case ST_R_LOG_SUM_EXP: acc = log(acc) + shift; break;
    default: break;
    }
    st_store_f64(y->dtype, yp, acc);
}

static bool is_f32_family(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

static void reduce_task(void *arg, int64_t t)
{
    reduce_job *j = arg;
    int64_t u0 = t * j->per_task, u1 = u0 + j->per_task < j->units ? u0 + j->per_task : j->units;
    if (!is_f32_family(j->x->dtype)) {
        for (int64_t u = u0; u < u1; u++) generic_output(j, u);
        return;
    }
    float buf[CHUNK > COL_BLOCK ? CHUNK : COL_BLOCK];
    for (int64_t u = u0; u < u1; u++) {
        if (j->column) col_unit_f32(j, u, buf);
        else row_output_f32(j, u, buf);
    }
}

st_status st_cpu_reduce(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    reduce_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.x = &k->in[0];
    j.y = &k->out[0];
    int64_t ys[ST_MAX_RANK];
    uint32_t mask = s->mask & (uint32_t)((1u << j.x->rank) - 1);
    output_strides(j.x, j.y, mask, s->keepdims, ys);
    st_rows_init(&j.r, j.x->rank, j.x->sizes, mask, 2, (const int64_t *[]){j.x->strides, ys});
    if (j.r.n_outer == 0) return ST_OK;
    /* Column mode whenever neighbouring outputs read neighbouring inputs
     * (then the row is not packed, or has one element); either mode is
     * correct for any layout, this only picks the faster. */
    int orank = j.r.outer_rank;
    j.column = is_f32_family(j.x->dtype) && orank > 0 && j.r.outer_strides[0][orank - 1] == 1 && j.r.outer_sizes[orank - 1] > 1;
    if (j.column) {
        j.cn = j.r.outer_sizes[orank - 1];
        j.cblocks = (j.cn + COL_BLOCK - 1) / COL_BLOCK;
        j.units = j.r.n_outer / j.cn * j.cblocks;
        j.per_task = st_rows_per_task(j.r.row_len * COL_BLOCK, TASK_ELEMS);
    } else {
        j.units = j.r.n_outer;
        j.per_task = st_rows_per_task(j.r.row_len, TASK_ELEMS);
    }
    st_parallel_for(k->pool, (j.units + j.per_task - 1) / j.per_task, reduce_task, &j);
    return ST_OK;
}

/* ---- ArgMax, ArgMin ---- */

typedef struct arg_job {
    const st_reduce_state *s;
    const st_operand *x, *y;
    st_rows r;
    int64_t n, step, per_task;
} arg_job;

/* The index of the max (min) of n values; the first one, or the last with
 * select_last_index.  A NaN beats every number, as in numpy's argmax. */
static int64_t arg_float(const arg_job *j, const char *p)
{
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    bool is_max = j->s->kind == ST_R_MAX, last = j->s->select_last;
    int64_t best = 0;
    double b = 0.0;
    for (int64_t i = 0; i < j->n; i++) {
        double a = x->dtype == ST_F32 ? ((const float *)p)[i * j->step] : st_load_f64(x->dtype, p + i * j->step * (int64_t)es);
        if (i == 0) {
            b = a;
            continue;
        }
        if (b != b) {
            if (last && a != a) best = i;
            continue;
        }
        if (a != a || (is_max ? a > b : a < b) || (last && a == b)) {
            b = a;
            best = i;
        }
    }
    return best;
}

/* The same for a packed f32 row, in two passes that vectorise: the
 * extreme value (NaN-propagating), then where it first (last) occurs. */
static int64_t arg_f32_packed(const arg_job *j, const float *v)
{
    int64_t n = j->n;
    bool last = j->s->select_last;
    int a = j->s->kind == ST_R_MAX ? A_MAX : A_MIN;
    float m = acc_row_f32(a, v, n, identity_f32(a), 0.0f);
    if (m != m) {
        if (last) {
            for (int64_t i = n - 1; i >= 0; i--)
                if (v[i] != v[i]) return i;
        }
        for (int64_t i = 0; i < n; i++)
            if (v[i] != v[i]) return i;
    }
    if (last) {
        for (int64_t i = n - 1; i >= 0; i--)
            if (v[i] == m) return i;
    }
    for (int64_t i = 0; i < n; i++)
        if (v[i] == m) return i;
    return 0;
}

static int64_t arg_int(const arg_job *j, const char *p)
{
    const st_operand *x = j->x;
    size_t es = st_dtype_size(x->dtype);
    bool is_max = j->s->kind == ST_R_MAX, last = j->s->select_last, uns = x->dtype == ST_U64;
    int64_t best = 0;
    uint64_t b = 0;
    for (int64_t i = 0; i < j->n; i++) {
        uint64_t a = (uint64_t)st_load_i64(x->dtype, p + i * j->step * (int64_t)es);
        if (i == 0) {
            b = a;
            continue;
        }
        bool gt = uns ? a > b : (int64_t)a > (int64_t)b, lt = uns ? a < b : (int64_t)a < (int64_t)b;
        if ((is_max ? gt : lt) || (last && a == b)) {
            b = a;
            best = i;
        }
    }
    return best;
}

static void arg_task(void *arg, int64_t t)
{
    const arg_job *j = arg;
    int64_t o0 = t * j->per_task, o1 = o0 + j->per_task < j->r.n_outer ? o0 + j->per_task : j->r.n_outer;
    size_t es = st_dtype_size(j->x->dtype);
    bool isf = st_dtype_is_float(j->x->dtype);
    for (int64_t o = o0; o < o1; o++) {
        int64_t offs[2];
        st_rows_offsets(&j->r, o, offs);
        const char *p = (const char *)j->x->data + offs[0] * (int64_t)es;
        int64_t best = !isf ? arg_int(j, p)
                       : j->x->dtype == ST_F32 && j->step == 1 ? arg_f32_packed(j, (const float *)p) : arg_float(j, p);
        st_store_i64(j->y->dtype, (char *)j->y->data + offs[1] * (int64_t)st_dtype_size(j->y->dtype), best);
    }
}

st_status st_cpu_argminmax(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    arg_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.x = &k->in[0];
    j.y = &k->out[0];
    int64_t ys[ST_MAX_RANK];
    output_strides(j.x, j.y, s->mask, s->keepdims, ys);
    st_rows_init(&j.r, j.x->rank, j.x->sizes, s->mask, 2, (const int64_t *[]){j.x->strides, ys});
    j.n = j.x->sizes[s->axis];
    j.step = j.x->strides[s->axis];
    j.per_task = st_rows_per_task(j.n, TASK_ELEMS);
    if (j.r.n_outer == 0 || j.n == 0) return ST_OK;
    st_parallel_for(k->pool, (j.r.n_outer + j.per_task - 1) / j.per_task, arg_task, &j);
    return ST_OK;
}

/* ---- TopK ---- */

typedef struct topk_job {
    const st_reduce_state *s;
    const st_operand *x, *v, *ix;
    st_rows r;                 /* over x's shape with the axis as the row: 0 x, 1 values, 2 indices */
    int64_t n, per_task;
    st_status err;
} topk_job;

typedef struct topk_row {
    const double *kf;          /* float keys */
    const uint64_t *ki;        /* integer keys */
    bool uns, largest;
} topk_row;

/* Does element a come before element b in the output?  By value (NaN
 * above every number, as numpy sorts it), then by the lower index: the
 * devices' order too (ops/index_math.h). */
static bool before(const topk_row *c, int64_t a, int64_t b)
{
    int cmp = c->kf ? st_im_cmp_f64(c->kf[a], c->kf[b]) : st_im_cmp_i64((int64_t)c->ki[a], (int64_t)c->ki[b], c->uns);
    return st_im_topk_before(cmp, c->largest, a, b);
}

/* A heap of the k best so far with the worst on top. */
static void sift_down(const topk_row *c, int64_t *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t w = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(c, h[w], h[l])) w = l;
        if (r < n && before(c, h[w], h[r])) w = r;
        if (w == i) return;
        int64_t t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* The k first elements of [0, n) in output order, into out. */
static void select_k(const topk_row *c, int64_t n, int64_t k, int64_t *h, int64_t *out)
{
    for (int64_t i = 0; i < k; i++) h[i] = i;
    for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(c, h, k, i);
    for (int64_t i = k; i < n; i++) {
        if (before(c, i, h[0])) {
            h[0] = i;
            sift_down(c, h, k, 0);
        }
    }
    for (int64_t m = k; m > 0; m--) {
        out[m - 1] = h[0];
        h[0] = h[m - 1];
        sift_down(c, h, m - 1, 0);
    }
}

static void topk_task(void *arg, int64_t t)
{
    topk_job *j = arg;
    int64_t o0 = t * j->per_task, o1 = o0 + j->per_task < j->r.n_outer ? o0 + j->per_task : j->r.n_outer;
    const st_operand *x = j->x, *v = j->v, *ix = j->ix;
    int axis = j->s->axis;
    int64_t n = j->n, k = j->s->k;
    size_t es = st_dtype_size(x->dtype), ies = st_dtype_size(ix->dtype);
    bool isf = st_dtype_is_float(x->dtype);
    void *keys = malloc((size_t)n * 8 + 8);
    int64_t *h = malloc((size_t)(2 * k + 1) * sizeof *h);
    if (!keys || !h) {
        free(keys);
        free(h);
        j->err = st_error(ST_ERR_NOMEM, "out of memory in TopK");
        return;
    }
    topk_row c = {isf ? keys : NULL, isf ? NULL : keys, x->dtype == ST_U64, j->s->largest};
    for (int64_t o = o0; o < o1; o++) {
        int64_t offs[3];
        st_rows_offsets(&j->r, o, offs);
        const char *xp = (const char *)x->data + offs[0] * (int64_t)es;
        for (int64_t i = 0; i < n; i++) {
            const char *p = xp + i * x->strides[axis] * (int64_t)es;
            if (isf) ((double *)keys)[i] = st_load_f64(x->dtype, p);
            else ((uint64_t *)keys)[i] = (uint64_t)st_load_i64(x->dtype, p);
        }
        select_k(&c, n, k, h, h + k);
        for (int64_t i = 0; i < k; i++) {
            int64_t src = h[k + i];
            memcpy((char *)v->data + (offs[1] + i * v->strides[axis]) * (int64_t)es, xp + src * x->strides[axis] * (int64_t)es, es);
            st_store_i64(ix->dtype, (char *)ix->data + (offs[2] + i * ix->strides[axis]) * (int64_t)ies, src);
        }
    }
    free(keys);
    free(h);
}

st_status st_cpu_topk(const st_kctx *k)
{
    const st_reduce_state *s = k->state;
    topk_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.x = &k->in[0];
    j.v = &k->out[0];
    j.ix = &k->out[1];
    if (!j.v->data || !j.ix->data) return st_error(ST_ERR_INTERNAL, "node '%s' (TopK): an output is missing", k->node->name);
    if (s->k == 0) return ST_OK;
    /* the outputs' outer strides over x's shape: their own, axis aside */
    st_rows_init(&j.r, j.x->rank, j.x->sizes, 1u << s->axis, 3,
                 (const int64_t *[]){j.x->strides, j.v->strides, j.ix->strides});
    j.n = j.x->sizes[s->axis];
    j.per_task = st_rows_per_task(j.n, TASK_ELEMS / 4);
    j.err = ST_OK;
    if (j.r.n_outer == 0) return ST_OK;
    st_parallel_for(k->pool, (j.r.n_outer + j.per_task - 1) / j.per_task, topk_task, &j);
    return j.err;
}

/* ---- CumSum ---- */

typedef struct cumsum_job {
    const st_reduce_state *s;
    const st_operand *x, *y;
    st_rows r;
    int axis;
    int64_t per_task;
} cumsum_job;

static void cumsum_task(void *arg, int64_t t)
{
    const cumsum_job *j = arg;
    int64_t o0 = t * j->per_task, o1 = o0 + j->per_task < j->r.n_outer ? o0 + j->per_task : j->r.n_outer;
    const st_operand *x = j->x, *y = j->y;
    st_dtype dt = x->dtype;
    size_t es = st_dtype_size(dt);
    int64_t n = x->sizes[j->axis], xs = x->strides[j->axis] * (int64_t)es, ys = y->strides[j->axis] * (int64_t)es;
    bool excl = j->s->exclusive, rev = j->s->reverse;
    for (int64_t o = o0; o < o1; o++) {
        int64_t offs[2];
        st_rows_offsets(&j->r, o, offs);
        const char *xp = (const char *)x->data + offs[0] * (int64_t)es;
        char *yp = (char *)y->data + offs[1] * (int64_t)es;
        /* each element is read before its output is written: x may be y */
        if (dt == ST_F32 || dt == ST_F16 || dt == ST_BF16) {
            float acc = 0.0f;
            for (int64_t s = 0; s < n; s++) {
                int64_t i = st_im_cumsum_at(s, n, rev);
                float v = st_load_f32(dt, xp + i * xs);
                if (!excl) acc += v;
                st_store_f32(dt, yp + i * ys, acc);
                if (excl) acc += v;
            }
        } else if (dt == ST_F64) {
            double acc = 0.0;
            for (int64_t s = 0; s < n; s++) {
                int64_t i = st_im_cumsum_at(s, n, rev);
                double v = *(const double *)(xp + i * xs);
                if (!excl) acc += v;
                *(double *)(yp + i * ys) = acc;
                if (excl) acc += v;
            }
        } else {
            uint64_t acc = 0;
            for (int64_t s = 0; s < n; s++) {
                int64_t i = st_im_cumsum_at(s, n, rev);
                uint64_t v = (uint64_t)st_load_i64(dt, xp + i * xs);
                if (!excl) acc += v;
                st_store_i64(dt, yp + i * ys, (int64_t)acc);
                if (excl) acc += v;
            }
        }
    }
}

st_status st_cpu_cumsum(const st_kctx *k)
{
    cumsum_job j;
    memset(&j, 0, sizeof j);
    j.s = k->state;
    j.x = &k->in[0];
    j.y = &k->out[0];
    j.axis = j.s->axis;
    if (j.axis < 0) {
        const st_operand *a = &k->in[1];
        int64_t v = st_load_i64(a->dtype, a->data);
        int64_t r = j.x->rank, at = st_im_index(v, r); /* ops/index_math.h, as the devices read it */
        if (at < 0)
            return st_error(ST_ERR_SHAPE, "node '%s' (CumSum): axis %lld is out of range for rank %lld", k->node->name,
                            (long long)v, (long long)r);
        j.axis = (int)at;
    }
    st_rows_init(&j.r, j.x->rank, j.x->sizes, 1u << j.axis, 2, (const int64_t *[]){j.x->strides, j.y->strides});
    j.per_task = st_rows_per_task(j.x->sizes[j.axis], TASK_ELEMS);
    if (j.r.n_outer == 0) return ST_OK;
    st_parallel_for(k->pool, (j.r.n_outer + j.per_task - 1) / j.per_task, cumsum_task, &j);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_reduce[] = {
    {"ReduceSum", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceMean", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceMax", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceMin", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceProd", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceL1", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceL2", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceLogSum", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceLogSumExp", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ReduceSumSquare", "", ST_DT_ALL, st_cpu_reduce, NULL, NULL, NULL},
    {"ArgMax", "", ST_DT_ALL, st_cpu_argminmax, NULL, NULL, NULL},
    {"ArgMin", "", ST_DT_ALL, st_cpu_argminmax, NULL, NULL, NULL},
    {"TopK", "", ST_DT_ALL, st_cpu_topk, NULL, NULL, NULL},
    {"CumSum", "", ST_DT_ALL, st_cpu_cumsum, NULL, NULL, NULL},
    {NULL}
};
