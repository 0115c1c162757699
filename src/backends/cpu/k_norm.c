/*
 * k_norm.c — the CPU kernel of the norm family: Softmax, LogSoftmax,
 * Hardmax, LayerNormalization, BatchNormalization (inference),
 * InstanceNormalization, LpNormalization, MeanVarianceNormalization, LRN,
 * GroupNormalization.
 *
 * Every one of them maps each row of x (the axes in st_norm_state.mask,
 * see rows.h) to the same row of y.  A task takes a fixed number of rows
 * (set by the row length alone, so results do not depend on the thread
 * count).  A row that is packed f32 in memory is read, or written, in
 * place: a softmax or LayerNorm over the last axis of an f32 tensor runs
 * its tight loops straight on the tensors.  Any other row (strided, f16,
 * bf16, f64) is gathered into a packed buffer, computed there and
 * scattered back.  f32/f16/bf16 compute in f32, f64 in double; the row
 * math itself is in k_norm_math.h.
 *
 * AddLayerNormalization (ai.strata) is a LayerNorm of x + r: each row's
 * sum is made in the task's scratch (and stored when the sum is an
 * output too), rounded to f32 as a separate Add rounds it, and normalised
 * from there, so the tensor of sums is never written and read back.
 *
 * Parameters are prepared once per call in the compute type: LayerNorm's
 * Scale and B broadcast to a packed row, BatchNorm's four inputs folded
 * into y = x * a[c] + b[c], InstanceNorm's scale and B per channel.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/clones.h"
#include "backends/cpu/fastmath.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/k_norm.h"
#include "runtime/pool.h"
#include "runtime/scratch.h"
#include "backends/common/rows.h"
#include "backends/cpu/vmath.h"
#include "ops/norm.h"

#define TASK_ELEMS 32768   /* elements per task, about */
#define NORM_TASK_ELEMS 8192 /* per task of a row-at-a-time loop */
#define NORM_LANES 8

typedef struct norm_job {
    const st_norm_state *s;
    const char *name;                       /* the node's, for messages */
    const st_operand *x, *y, *mean, *inv;   /* mean, inv: LayerNorm's optional outputs, or NULL */
    const st_operand *res, *sum;            /* AddLayerNormalization: r, and the optional sum output */
    st_rows r;                              /* operands 0 x, 1 y, 2 mean, 3 inv over x's shape
                                               (AddLayerNormalization: 2 res, 3 sum) */
    bool dbl;                               /* compute in double */
    bool fast;                              /* AVX-512 (st_gemm_fast) */
    void *scale, *bias;                     /* compute-type parameters (see the header) */
    int64_t groups;                         /* parameter sets; a row's set is its number % groups */
    int64_t cg;                             /* GroupNormalization: channels per group */
    int64_t per_task;
    st_status err;
} norm_job;

static void store_f32(st_dtype t, void *p, float v) { st_store_f32(t, p, v); }

/* The max of a row (NaN if any is NaN); f32 has a vectorised one. */
static double max_f64(const double *v, int64_t n)
{
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = ((v[i] > mx) | (v[i] != v[i])) ? v[i] : mx;
    return mx;
}
static void store_f64(st_dtype t, void *p, double v) { st_store_f64(t, p, v); }

#define T float
#define SFX(name) name##_f32
#define EXP_NEG st_exp_neg_f32
#define MAX_ROW st_max_f32
#define LOG logf
#define SQRT sqrtf
#define POW powf
#define FABS fabsf
#define STORE store_f32
#define NORM_VEC ST_CLONES static
#include "backends/cpu/k_norm_math.h"
#undef NORM_VEC
#undef T
#undef SFX
#undef EXP_NEG
#undef MAX_ROW
#undef LOG
#undef SQRT
#undef POW
#undef FABS
#undef STORE

#define T double
#define SFX(name) name##_f64
#define EXP_NEG exp
#define MAX_ROW max_f64
#define LOG log
#define SQRT sqrt
#define POW pow
#define FABS fabs
#define STORE store_f64
#define NORM_VEC static
#include "backends/cpu/k_norm_math.h"
#undef NORM_VEC
#undef T
#undef SFX
#undef EXP_NEG
#undef MAX_ROW
#undef LOG
#undef SQRT
#undef POW
#undef FABS
#undef STORE

/* s = x + r over a row: one f32 add per element, as an Add node. */
ST_CLONES static void add_row(const float *x, const float *r, float *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) s[i] = x[i] + r[i];
}

/* One f32 LayerNorm row: x packed, y packed (may be x), scale and bias
 * (NULL: none) packed rows; the row's mean and 1/stddev come back.
 * Two-pass variance.  On AVX-512 the sums run in two 16-lane registers,
 * folded by a fixed tree: the generic NORM_LANES sum (one 8-wide chain of
 * dependent adds, folded through memory) with a normalising loop built
 * without AVX-512 made a 256-wide row cost about 200 ns, and LayerNorms
 * 11% of a transformer encoder. */
ST_VMATH static void ln_row512(const float *x, float *y, int64_t n, const float *sc, const float *bi, float eps,
                               float *mean_out, float *inv_out)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    }
    for (; i + 16 <= n; i += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    __mmask16 tm = (__mmask16)((1u << (n - i)) - 1u);
    if (i < n) a1 = _mm512_add_ps(a1, _mm512_maskz_loadu_ps(tm, x + i));
    float mean = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) / (float)n;
    __m512 vm = _mm512_set1_ps(mean);
    a0 = _mm512_setzero_ps();
    a1 = _mm512_setzero_ps();
    for (i = 0; i + 32 <= n; i += 32) {
        __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm), d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vm);
        a0 = _mm512_fmadd_ps(d0, d0, a0);
        a1 = _mm512_fmadd_ps(d1, d1, a1);
    }
    for (; i + 16 <= n; i += 16) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
        a0 = _mm512_fmadd_ps(d, d, a0);
    }
    if (i < n) {
        __m512 d = _mm512_maskz_sub_ps(tm, _mm512_maskz_loadu_ps(tm, x + i), vm);
        a1 = _mm512_fmadd_ps(d, d, a1);
    }
    float inv = 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) / (float)n + eps);
    __m512 vi = _mm512_set1_ps(inv);
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : tm;
        __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm), vi);
        __m512 s = _mm512_maskz_loadu_ps(m, sc + i);
        t = bi ? _mm512_fmadd_ps(t, s, _mm512_maskz_loadu_ps(m, bi + i)) : _mm512_mul_ps(t, s);
        _mm512_mask_storeu_ps(y + i, m, t);
    }
    *mean_out = mean;
    *inv_out = inv;
}

/* The same without AVX-512, in k_norm_math.h's lanes and order. */
static void ln_row_plain(const float *x, float *y, int64_t n, const float *sc, const float *bi, float eps,
                         float *mean_out, float *inv_out)
{
    float mean = sum_f32(x, n) / (float)n;
    float inv = 1.0f / sqrtf(sum_sq_dev_f32(x, n, mean) / (float)n + eps);
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * sc[i] + (bi ? bi[i] : 0.0f);
    *mean_out = mean;
    *inv_out = inv;
}

/* A LayerNorm row in f32 (the compute type of f32, f16 and bf16). */
static void ln_row(const norm_job *j, const int64_t *offs, const float *x, float *y)
{
    float mean, inv;
    if (j->fast) ln_row512(x, y, j->r.row_len, j->scale, j->bias, (float)j->s->epsilon, &mean, &inv);
    else ln_row_plain(x, y, j->r.row_len, j->scale, j->bias, (float)j->s->epsilon, &mean, &inv);
    if (j->mean) st_store_f32(j->mean->dtype, (char *)j->mean->data + offs[2] * (int64_t)st_dtype_size(j->mean->dtype), mean);
    if (j->inv) st_store_f32(j->inv->dtype, (char *)j->inv->data + offs[3] * (int64_t)st_dtype_size(j->inv->dtype), inv);
}

static void norm_task(void *arg, int64_t t)
{
    norm_job *j = arg;
    const st_rows *r = &j->r;
    int64_t o0 = t * j->per_task, o1 = o0 + j->per_task < r->n_outer ? o0 + j->per_task : r->n_outer;
    int64_t n = r->row_len;
    size_t es = j->dbl ? sizeof(double) : sizeof(float);
    /* an input row and an output row, for rows that are not packed f32
     * (and for a residual's row and the sum) */
    char *buf = st_scratch_take((j->res ? 4 : 2) * (size_t)n * es + 16); /* the worker's, kept (scratch.h) */
    if (!buf) {
        j->err = st_error(ST_ERR_NOMEM, "out of memory in node '%s'", j->name);
        return;
    }
    st_rows_walk w;
    st_rows_seek(r, o0, &w);
    for (int64_t o = o0; o < o1; o++, st_rows_step(r, &w)) {
        const int64_t *offs = w.offs;
        if (!j->dbl) {
            float *xin = st_rows_direct_f32(r, 0, j->x, offs[0]), *yout = st_rows_direct_f32(r, 1, j->y, offs[1]);
            float *bx = (float *)buf, *by = bx + n;
            if (!xin) {
                st_rows_load_f32(r, 0, j->x, offs[0], bx);
                xin = bx;
            }
            if (j->res) {
                /* x + r into the sum's row (the output's own where it is
                 * packed, else scratch), then normalised from there */
                float *br = by + n, *bs = br + n;
                float *rin = st_rows_direct_f32(r, 2, j->res, offs[2]);
                if (!rin) {
                    st_rows_load_f32(r, 2, j->res, offs[2], br);
                    rin = br;
                }
                float *sd = j->sum ? st_rows_direct_f32(r, 3, j->sum, offs[3]) : NULL, *t = sd ? sd : bs;
                add_row(xin, rin, t, n);
                if (j->sum && !sd) st_rows_store_f32(r, 3, j->sum, offs[3], t);
                xin = t;
            }
            bool scatter = !yout || yout == xin;
            if (scatter) yout = by;
            if (j->s->kind == ST_N_LAYER_NORM) ln_row(j, offs, xin, yout);
            else row_f32(j, o, offs, xin, yout);
            if (scatter) st_rows_store_f32(r, 1, j->y, offs[1], yout);
        } else {
            double *bx = (double *)buf, *by = bx + n;
            st_rows_load_f64(r, 0, j->x, offs[0], bx);
            row_f64(j, o, offs, bx, by);
            st_rows_store_f64(r, 1, j->y, offs[1], by);
        }
    }
    st_scratch_give(buf);
}

/* Softmax along an axis that is not the innermost one (YOLO's DFL: a
 * softmax over 16 values 8400 apart): 16 neighbouring rows at a time, one
 * per vector lane, when the rows' innermost outer dim is unit-stride in x
 * and y.  Each lane computes exactly what a row at a time would (max, then
 * e^(x - max) summed in order, then scaled): the same bits for any split. */
typedef struct lane_job {
    const st_rows *r;
    const st_operand *x, *y;
    int64_t sx, sy, inner, blocks, per_task;
    bool log;
} lane_job;

ST_CLONES
static void softmax_lanes(const float *x, float *y, int64_t n, int64_t sx, int64_t sy, int64_t cnt, bool log_kind)
{
    float mx[16], sum[16];
    for (int64_t l = 0; l < 16; l++) mx[l] = -INFINITY, sum[l] = 0.0f;
    for (int64_t i = 0; i < n; i++)
        for (int64_t l = 0; l < cnt; l++) {
            float v = x[i * sx + l];
            /* NaN anywhere makes the max NaN (as st_max_f32 does) */
            mx[l] = v > mx[l] || v != v ? v : mx[l];
        }
    for (int64_t i = 0; i < n; i++)
        for (int64_t l = 0; l < cnt; l++) {
            float e = st_exp_neg_f32(x[i * sx + l] - mx[l]);
            if (!log_kind) y[i * sy + l] = e;
            sum[l] += e;
        }
    if (log_kind) {
        for (int64_t l = 0; l < cnt; l++) sum[l] = mx[l] + logf(sum[l]);
        for (int64_t i = 0; i < n; i++)
            for (int64_t l = 0; l < cnt; l++) y[i * sy + l] = x[i * sx + l] - sum[l];
        return;
    }
    for (int64_t l = 0; l < cnt; l++) sum[l] = 1.0f / sum[l];
    for (int64_t i = 0; i < n; i++)
        for (int64_t l = 0; l < cnt; l++) y[i * sy + l] *= sum[l];
}

static void lane_task(void *arg, int64_t t)
{
    const lane_job *j = arg;
    int64_t b0 = t * j->per_task, b1 = b0 + j->per_task < j->blocks ? b0 + j->per_task : j->blocks;
    int64_t nb = (j->inner + 15) / 16;
    for (int64_t b = b0; b < b1; b++) {
        int64_t q = b / nb, l0 = (b % nb) * 16, cnt = j->inner - l0 < 16 ? j->inner - l0 : 16;
        int64_t offs[4];
        st_rows_offsets(j->r, q * j->inner + l0, offs);
        softmax_lanes((const float *)j->x->data + offs[0], (float *)j->y->data + offs[1], j->r->row_len, j->sx, j->sy,
                      cnt, j->log);
    }
}

static bool softmax_by_lanes(norm_job *j, st_pool *pool)
{
    const st_rows *r = &j->r;
    int64_t sx, sy;
    if ((j->s->kind != ST_N_SOFTMAX && j->s->kind != ST_N_LOG_SOFTMAX) || j->x->dtype != ST_F32 ||
        j->y->dtype != ST_F32 || r->outer_rank < 1 || !st_rows_flat(r, 0, &sx) || !st_rows_flat(r, 1, &sy))
        return false;
    int d = r->outer_rank - 1;
    if (r->outer_strides[0][d] != 1 || r->outer_strides[1][d] != 1 || r->outer_sizes[d] < 16 || sx == 1) return false;
    /* x and y must not overlap unless they are the same elements */
    lane_job lj = {r, j->x, j->y, sx, sy, r->outer_sizes[d], 0, 0, j->s->kind == ST_N_LOG_SOFTMAX};
    if (j->x->data == j->y->data && sx != sy) return false;
    lj.blocks = r->n_outer / lj.inner * ((lj.inner + 15) / 16);
    lj.per_task = TASK_ELEMS / (16 * (r->row_len > 0 ? r->row_len : 1));
    if (lj.per_task < 1) lj.per_task = 1;
    st_parallel_for(pool, (lj.blocks + lj.per_task - 1) / lj.per_task, lane_task, &lj);
    return true;
}

/* Element i (row-major) of a small operand, in double. */
static double load_flat(const st_operand *p, int64_t i)
{
    int64_t off = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        off += (i % p->sizes[d]) * p->strides[d];
        i /= p->sizes[d];
    }
    return st_load_f64(p->dtype, (const char *)p->data + off * (int64_t)st_dtype_size(p->dtype));
}

/* LayerNorm's Scale or B broadcast to the normalised dims [axis, rank)
 * as one packed row of the compute type: the operand itself when it
 * already is one (*owned false: an f32 [C] constant, the usual case, so a
 * warm run allocates nothing for it), else a malloc'd copy. */
static void *pack_row(const norm_job *j, const st_operand *p, bool *owned)
{
    const st_operand *x = j->x;
    int axis = j->s->axis, rr = x->rank - axis;
    st_view v;
    st_view_init(&v, j->dbl ? ST_F64 : ST_F32, rr, x->sizes + axis);
    st_operand src = *p;
    src.rank = rr;
    bool packed = p->dtype == v.dtype;
    int64_t run = 1;
    for (int i = rr - 1; i >= 0; i--) {
        int pi = i - (rr - p->rank);
        src.sizes[i] = x->sizes[axis + i];
        src.strides[i] = pi < 0 || p->sizes[pi] == 1 ? 0 : p->strides[pi];
        if (src.sizes[i] != 1 && src.strides[i] != run) packed = false;
        run *= src.sizes[i];
    }
    *owned = !packed;
    if (packed) return (void *)p->data;
    void *buf = malloc((size_t)(j->r.row_len > 0 ? j->r.row_len : 1) * st_dtype_size(v.dtype));
    if (!buf) return NULL;
    st_operand dst = st_operand_of(&v, buf);
    st_copy_strided(&dst, &src);
    return buf;
}

/* Per-group parameters in the compute type: BatchNorm folds its four
 * inputs to a = scale / sqrt(var + eps), b = B - mean * a. */
static st_status prepare_groups(norm_job *j, const st_kctx *k)
{
    int64_t g = j->groups;
    size_t es = j->dbl ? sizeof(double) : sizeof(float);
    j->scale = malloc((size_t)g * es + 1);
    j->bias = malloc((size_t)g * es + 1);
    if (!j->scale || !j->bias) return st_error(ST_ERR_NOMEM, "out of memory in node '%s'", k->node->name);
    for (int64_t c = 0; c < g; c++) {
        double a = load_flat(&k->in[1], c), b = load_flat(&k->in[2], c);
        if (j->s->kind == ST_N_BATCH_NORM) {
            double mean = load_flat(&k->in[3], c), var = load_flat(&k->in[4], c);
            if (j->dbl) {
                a = a / sqrt(var + (double)j->s->epsilon);
            } else {
                /* as an f32 model computes it */
                a = (float)a / sqrtf((float)var + j->s->epsilon);
            }
            b = b - mean * a;
        }
        if (j->dbl) {
            ((double *)j->scale)[c] = a;
            ((double *)j->bias)[c] = b;
        } else {
            ((float *)j->scale)[c] = (float)a;
            ((float *)j->bias)[c] = (float)b;
        }
    }
    return ST_OK;
}

/* GroupNormalization's scale and bias per channel in the compute type
 * (a per-group parameter, before opset 21, spread over its channels). */
static st_status prepare_channels(norm_job *j, const st_kctx *k)
{
    int64_t ch = j->groups * j->cg;
    size_t es = j->dbl ? sizeof(double) : sizeof(float);
    j->scale = malloc((size_t)ch * es + 1);
    j->bias = malloc((size_t)ch * es + 1);
    if (!j->scale || !j->bias) return st_error(ST_ERR_NOMEM, "out of memory in node '%s'", k->node->name);
    for (int64_t c = 0; c < ch; c++) {
        int64_t p = j->s->per_group ? c / j->cg : c;
        double a = load_flat(&k->in[1], p), b = load_flat(&k->in[2], p);
        if (j->dbl) {
            ((double *)j->scale)[c] = a;
            ((double *)j->bias)[c] = b;
        } else {
            ((float *)j->scale)[c] = (float)a;
            ((float *)j->bias)[c] = (float)b;
        }
    }
    return ST_OK;
}

/* GroupNormalization's rows: x and y seen as [N, G, C / G, spatial...],
 * a split of the channel axis that strides always express. */
static void group_rows(norm_job *j)
{
    const st_operand *x = j->x, *y = j->y;
    int64_t sizes[ST_MAX_RANK], xs[ST_MAX_RANK], ys[ST_MAX_RANK], zero[ST_MAX_RANK] = {0};
    int r = x->rank + 1;
    for (int d = 0, e = 0; d < x->rank; d++, e++) {
        sizes[e] = x->sizes[d];
        xs[e] = x->strides[d];
        ys[e] = y->strides[d];
        if (d == 1) {
            sizes[e] = j->groups;
            xs[e] = x->strides[1] * j->cg;
            ys[e] = y->strides[1] * j->cg;
            e++;
            sizes[e] = j->cg;
            xs[e] = x->strides[1];
            ys[e] = y->strides[1];
        }
    }
    st_rows_init(&j->r, r, sizes, j->s->mask, 4, (const int64_t *[]){xs, ys, zero, zero});
}

st_status st_cpu_norm(const st_kctx *k)
{
    const st_norm_state *s = k->state;
    norm_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.name = k->node->name;
    j.x = &k->in[0];
    j.y = &k->out[0];
    const st_operand *x = j.x;
    int pi = 1; /* LayerNorm's Scale (then B) */
    if (s->residual) {
        /* AddLayerNormalization: f32 only (its shape rule says so) */
        if (x->dtype != ST_F32 || k->in[1].dtype != ST_F32 || j.y->dtype != ST_F32)
            return st_error(ST_ERR_DTYPE, "node '%s': AddLayerNormalization takes float32, got %s", k->node->name,
                            st_dtype_name(x->dtype));
        j.res = &k->in[1];
        if (k->n_out > 1 && k->out[1].data) j.sum = &k->out[1];
        pi = 2;
    } else if (s->kind == ST_N_LAYER_NORM) {
        if (k->n_out > 1 && k->out[1].data) j.mean = &k->out[1];
        if (k->n_out > 2 && k->out[2].data) j.inv = &k->out[2];
    }
    /* the per-row outputs over x's shape: their strides on the outer axes */
    int64_t ms[ST_MAX_RANK] = {0}, is[ST_MAX_RANK] = {0};
    uint32_t mask = s->mask & (uint32_t)((1u << x->rank) - 1);
    for (int d = 0; d < x->rank; d++) {
        if (mask >> d & 1) continue;
        if (j.mean) ms[d] = j.mean->strides[d];
        if (j.inv) is[d] = j.inv->strides[d];
    }
    if (s->kind == ST_N_GROUP_NORM) {
        j.groups = s->size;
        j.cg = x->sizes[1] / s->size;
        group_rows(&j);
    } else if (j.res) {
        int64_t zero[ST_MAX_RANK] = {0};
        st_rows_init(&j.r, x->rank, x->sizes, mask, 4,
                     (const int64_t *[]){x->strides, j.y->strides, j.res->strides, j.sum ? j.sum->strides : zero});
    } else {
        st_rows_init(&j.r, x->rank, x->sizes, mask, 4, (const int64_t *[]){x->strides, j.y->strides, ms, is});
    }
    if (j.r.n_outer == 0) return ST_OK;
    j.dbl = x->dtype == ST_F64;
    j.fast = st_gemm_fast();
    st_status st = ST_OK;
    bool own_scale = false, own_bias = false;
    switch (s->kind) {
    case ST_N_LAYER_NORM:
        j.scale = pack_row(&j, &k->in[pi], &own_scale);
        if (!j.scale) st = st_error(ST_ERR_NOMEM, "out of memory in node '%s'", k->node->name);
        if (st == ST_OK && k->n_in > pi + 1 && k->in[pi + 1].data) {
            j.bias = pack_row(&j, &k->in[pi + 1], &own_bias);
            if (!j.bias) st = st_error(ST_ERR_NOMEM, "out of memory in node '%s'", k->node->name);
        }
        break;
    case ST_N_BATCH_NORM:
        j.groups = s->spatial ? x->sizes[1] : st_numel(x->rank - 1, x->sizes + 1);
        st = prepare_groups(&j, k);
        break;
    case ST_N_INSTANCE_NORM:
        j.groups = x->sizes[1];
        st = prepare_groups(&j, k);
        break;
    case ST_N_GROUP_NORM: st = prepare_channels(&j, k); break;
    default: break;
    }
    if (st == ST_OK && softmax_by_lanes(&j, k->pool)) return ST_OK;
    if (st == ST_OK) {
        /* smaller tasks than the other row loops: a LayerNorm of 154
         * rows of 256 made tasks of 128 and 26 rows, and one thread did
         * five sixths of it */
        j.per_task = st_rows_per_task(j.r.row_len, NORM_TASK_ELEMS);
        j.err = ST_OK;
        st_parallel_for(k->pool, (j.r.n_outer + j.per_task - 1) / j.per_task, norm_task, &j);
        st = j.err;
    }
    /* the other kinds' parameters were made for this run (prepare_groups, prepare_channels) */
    if (own_scale || s->kind != ST_N_LAYER_NORM) free(j.scale);
    if (own_bias || s->kind != ST_N_LAYER_NORM) free(j.bias);
    return st;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_norm[] = {
    {"Softmax", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"LogSoftmax", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"Hardmax", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"LayerNormalization", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"BatchNormalization", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"InstanceNormalization", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"LpNormalization", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"MeanVarianceNormalization", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"LRN", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"GroupNormalization", "", ST_DT_ALL, st_cpu_norm, NULL, NULL, NULL},
    {"AddLayerNormalization", "ai.strata", ST_DT(ST_F32), st_cpu_norm, NULL, NULL, NULL},
    {NULL}
};
