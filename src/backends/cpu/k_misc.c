/*
 * k_misc.c — CPU kernels of the misc family's small ops: Dropout
 * (inference), NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss,
 * MaxUnpool, ReverseSequence, Shrink and Det.  The other misc kernels are
 * in k_misc_rnn.c, k_misc_quant.c, k_misc_sample.c and k_misc_signal.c.
 *
 * The losses compute each position's loss and weight in double into a
 * per-position array (tasks of LOSS_TASK positions), and a reduction then
 * adds that array on one thread in index order, so the sum is the same
 * for every thread count.  Labels are checked before any task runs.
 *
 * MaxUnpool scatters on one thread in input order, so duplicate indices
 * resolve the same way on every run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/k_misc.h"
#include "runtime/pool.h"
#include "ops/misc.h"

#define LOSS_TASK 256
#define ROW_TASK_ELEMS 16384

/* ---- Dropout ---- */

/* Every element of o set to one (true, or 1.0 for the old float mask). */
static void fill_ones(const st_operand *o)
{
    size_t es = st_dtype_size(o->dtype);
    char one[8];
    st_store_f64(o->dtype, one, 1.0);
    st_iter it;
    for (bool more = st_iter_init(&it, o->rank, o->sizes, 1, (const int64_t *[]){o->strides}); more; more = st_iter_next(&it)) {
        char *p = (char *)o->data + it.off[0] * (int64_t)es;
        for (int64_t i = 0; i < it.inner; i++) memcpy(p + i * it.step[0] * (int64_t)es, one, es);
    }
}

st_status st_cpu_dropout(const st_kctx *k)
{
    if (k->out[0].data) st_copy_strided(&k->out[0], &k->in[0]);
    if (k->n_out > 1 && k->out[1].data) fill_ones(&k->out[1]);
    return ST_OK;
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---- */

typedef struct loss_job {
    const st_loss_state *s;
    const st_operand *x, *t, *w, *y, *lp;
    int64_t n, c, d;                  /* input is [n, c, d (flattened)] */
    double *loss, *weight;            /* per position, n * d */
} loss_job;

static void loss_task(void *arg, int64_t task)
{
    const loss_job *j = arg;
    const st_operand *x = j->x, *t = j->t;
    int64_t p0 = task * LOSS_TASK, p1 = p0 + LOSS_TASK < j->n * j->d ? p0 + LOSS_TASK : j->n * j->d;
    for (int64_t p = p0; p < p1; p++) {
        int64_t n = p / j->d, d = p % j->d;
        int64_t xo = n * x->strides[0] + st_misc_offset(x, 2, d);
        int64_t label = st_load_i64(t->dtype, st_misc_at(t, n * t->strides[0] + st_misc_offset(t, 1, d)));
        double lse = 0;
        if (j->s->softmax) {
            double mx = -INFINITY, sum = 0;
            for (int64_t c = 0; c < j->c; c++) {
                double v = st_load_f64(x->dtype, st_misc_at(x, xo + c * x->strides[1]));
                if (v > mx) mx = v;
            }
            for (int64_t c = 0; c < j->c; c++) sum += exp(st_load_f64(x->dtype, st_misc_at(x, xo + c * x->strides[1])) - mx);
            lse = mx + log(sum);
            if (j->lp) {
                const st_operand *lp = j->lp;
                int64_t lo = n * lp->strides[0] + st_misc_offset(lp, 2, d);
                for (int64_t c = 0; c < j->c; c++)
                    st_store_f64(lp->dtype, st_misc_at(lp, lo + c * lp->strides[1]),
                                 st_load_f64(x->dtype, st_misc_at(x, xo + c * x->strides[1])) - lse);
            }
        }
        double loss = 0, w = 0;
        if (!(j->s->has_ignore && label == j->s->ignore_index)) {
            w = j->w ? st_load_f64(j->w->dtype, st_misc_at(j->w, label * j->w->strides[0])) : 1.0;
            loss = -w * (st_load_f64(x->dtype, st_misc_at(x, xo + label * x->strides[1])) - lse);
        }
        j->loss[p] = loss;
        j->weight[p] = w;
        if (j->s->reduction == ST_LOSS_NONE)
            st_store_f64(j->y->dtype, st_misc_at(j->y, n * j->y->strides[0] + st_misc_offset(j->y, 1, d)), loss);
    }
}

st_status st_cpu_loss(const st_kctx *k)
{
    const st_loss_state *s = k->state;
    loss_job j = {s, &k->in[0], &k->in[1], k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL, &k->out[0],
                  k->n_out > 1 && k->out[1].data ? &k->out[1] : NULL, 0, 0, 1, NULL, NULL};
    const st_operand *x = j.x, *t = j.t;
    j.n = x->sizes[0];
    j.c = x->sizes[1];
    for (int d = 2; d < x->rank; d++) j.d *= x->sizes[d];
    int64_t np = j.n * j.d;
    /* every label is a class or the ignored index */
    for (int64_t p = 0; p < np; p++) {
        int64_t label = st_load_i64(t->dtype, st_misc_at(t, (p / j.d) * t->strides[0] + st_misc_offset(t, 1, p % j.d)));
        if (s->has_ignore && label == s->ignore_index) continue;
        if (label < 0 || label >= j.c)
            return st_error(ST_ERR_INVALID_ARG, "label %lld at position %lld is not a class in [0, %lld)", (long long)label, (long long)p,
                            (long long)j.c);
    }
    j.loss = malloc((size_t)(np > 0 ? np : 1) * 2 * sizeof *j.loss);
    if (!j.loss) return st_error(ST_ERR_NOMEM, "out of memory");
    j.weight = j.loss + np;
    st_parallel_for(k->pool, (np + LOSS_TASK - 1) / LOSS_TASK, loss_task, &j);
    if (s->reduction != ST_LOSS_NONE) {
        double sum = 0, wsum = 0;
        for (int64_t p = 0; p < np; p++) {
            sum += j.loss[p];
            wsum += j.weight[p];
        }
        st_store_f64(j.y->dtype, j.y->data, s->reduction == ST_LOSS_SUM ? sum : sum / wsum);
    }
    free(j.loss);
    return ST_OK;
}

/* ---- MaxUnpool ---- */

st_status st_cpu_maxunpool(const st_kctx *k)
{
    const st_maxunpool_state *s = k->state;
    const st_operand *x = &k->in[0], *ix = &k->in[1], *y = &k->out[0];
    size_t es = st_dtype_size(y->dtype), ei = st_dtype_size(ix->dtype);
    int64_t total = y->sizes[0] * y->sizes[1];
    for (int i = 0; i < s->nsp; i++) total *= s->unpooled[i];
    st_iter it;
    for (bool more = st_iter_init(&it, y->rank, y->sizes, 1, (const int64_t *[]){y->strides}); more; more = st_iter_next(&it)) {
        char *p = (char *)y->data + it.off[0] * (int64_t)es;
        for (int64_t i = 0; i < it.inner; i++) memset(p + i * it.step[0] * (int64_t)es, 0, es);
    }
    /* indices are flat positions in the whole unpooled tensor, as MaxPool
     * makes them; a larger output keeps the coordinates */
    for (bool more = st_iter_init(&it, x->rank, x->sizes, 2, (const int64_t *[]){x->strides, ix->strides}); more;
         more = st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t flat = st_load_i64(ix->dtype, (const char *)ix->data + (it.off[1] + i * it.step[1]) * (int64_t)ei);
            if (flat < 0 || flat >= total)
                return st_error(ST_ERR_INVALID_ARG, "index %lld is outside the unpooled tensor's %lld elements", (long long)flat, (long long)total);
            int64_t off = 0;
            for (int d = s->nsp - 1; d >= 0; d--) {
                off += (flat % s->unpooled[d]) * y->strides[2 + d];
                flat /= s->unpooled[d];
            }
            off += (flat % y->sizes[1]) * y->strides[1] + (flat / y->sizes[1]) * y->strides[0];
            st_convert(y->dtype, st_misc_at(y, off), x->dtype, st_misc_at(x, it.off[0] + i * it.step[0]), 1);
        }
    return ST_OK;
}

/* ---- ReverseSequence ---- */

typedef struct revseq_job {
    const st_revseq_state *s;
    const st_operand *x, *y;
    const int64_t *lens;
} revseq_job;

/* The [dims 2..] slice at (batch b, time t) of o. */
static st_operand revseq_slice(const st_operand *o, const st_revseq_state *s, int64_t b, int64_t t)
{
    st_operand r = *o;
    r.data = st_misc_at(o, b * o->strides[s->batch_axis] + t * o->strides[s->time_axis]);
    r.rank = o->rank - 2;
    for (int d = 0; d < ST_MAX_RANK; d++) {
        r.sizes[d] = d + 2 < ST_MAX_RANK ? o->sizes[d + 2] : 1;
        r.strides[d] = d + 2 < ST_MAX_RANK ? o->strides[d + 2] : 0;
    }
    return r;
}

static void revseq_batch(void *arg, int64_t b)
{
    const revseq_job *j = arg;
    int64_t steps = j->x->sizes[j->s->time_axis], len = j->lens[b];
    for (int64_t t = 0; t < steps; t++) {
        st_operand dst = revseq_slice(j->y, j->s, b, t), src = revseq_slice(j->x, j->s, b, t < len ? len - 1 - t : t);
        st_copy_strided(&dst, &src);
    }
}

st_status st_cpu_reverse_sequence(const st_kctx *k)
{
    const st_revseq_state *s = k->state;
    const st_operand *x = &k->in[0], *sl = &k->in[1];
    int64_t batch = x->sizes[s->batch_axis], steps = x->sizes[s->time_axis];
    int64_t *lens = malloc((size_t)(batch > 0 ? batch : 1) * sizeof *lens);
    if (!lens) return st_error(ST_ERR_NOMEM, "out of memory");
    for (int64_t b = 0; b < batch; b++) {
        lens[b] = st_load_i64(sl->dtype, st_misc_at(sl, b * sl->strides[0]));
        if (lens[b] < 0 || lens[b] > steps) {
            long long bad = (long long)lens[b];
            free(lens);
            return st_error(ST_ERR_INVALID_ARG, "sequence_lens[%lld] is %lld; the time axis has %lld steps", (long long)b, bad, (long long)steps);
        }
    }
    revseq_job j = {s, x, &k->out[0], lens};
    st_parallel_for(k->pool, batch, revseq_batch, &j);
    free(lens);
    return ST_OK;
}

/* ---- Shrink ---- */

typedef struct rows_job {
    const st_kctx *k;
    st_iter it;
    int64_t rows, per_task;
} rows_job;

static void shrink_rows(void *arg, int64_t task)
{
    const rows_job *j = arg;
    const st_shrink_state *s = j->k->state;
    const st_operand *x = &j->k->in[0], *y = &j->k->out[0];
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype);
    st_iter it = j->it;
    int64_t r0 = task * j->per_task, r1 = r0 + j->per_task < j->rows ? r0 + j->per_task : j->rows;
    st_iter_seek(&it, r0);
    double lambd = s->lambd, bias = s->bias;
    for (int64_t r = r0; r < r1; r++, st_iter_next(&it))
        for (int64_t i = 0; i < it.inner; i++) {
            double v = st_load_f64(x->dtype, (const char *)x->data + (it.off[1] + i * it.step[1]) * (int64_t)ex);
            double o = v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
            st_store_f64(y->dtype, (char *)y->data + (it.off[0] + i * it.step[0]) * (int64_t)ey, o);
        }
}

st_status st_cpu_shrink(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    rows_job j = {k, {0}, 0, 0};
    if (!st_iter_init(&j.it, y->rank, y->sizes, 2, (const int64_t *[]){y->strides, x->strides})) return ST_OK;
    j.rows = st_iter_rows(&j.it);
    j.per_task = ROW_TASK_ELEMS / (j.it.inner > 0 ? j.it.inner : 1);
    if (j.per_task < 1) j.per_task = 1;
    st_parallel_for(k->pool, (j.rows + j.per_task - 1) / j.per_task, shrink_rows, &j);
    return ST_OK;
}

/* ---- Det ---- */

typedef struct det_job {
    const st_operand *x, *y;
    int64_t m;
    bool nomem;
} det_job;

static void det_task(void *arg, int64_t b)
{
    det_job *j = arg;
    const st_operand *x = j->x, *y = j->y;
    int64_t m = j->m, nb = x->rank - 2, xo = 0, yo = 0, rem = b;
    for (int d = (int)nb - 1; d >= 0; d--) {
        int64_t i = rem % x->sizes[d];
        rem /= x->sizes[d];
        xo += i * x->strides[d];
        yo += i * y->strides[d];
    }
    double stack[64], *a = m * m <= 64 ? stack : malloc((size_t)(m * m) * sizeof *a);
    if (!a) {
        j->nomem = true;
        return;
    }
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < m; c++)
            a[r * m + c] = st_load_f64(x->dtype, st_misc_at(x, xo + r * x->strides[nb] + c * x->strides[nb + 1]));
    /* LU with partial pivoting: det = sign * prod(diagonal) */
    double det = 1.0;
    for (int64_t col = 0; col < m && det != 0.0; col++) {
        int64_t piv = col;
        for (int64_t r = col + 1; r < m; r++)
            if (fabs(a[r * m + col]) > fabs(a[piv * m + col])) piv = r;
        if (a[piv * m + col] == 0.0) {
            det = 0.0;
            break;
        }
        if (piv != col) {
            for (int64_t c = 0; c < m; c++) {
                double t = a[col * m + c];
                a[col * m + c] = a[piv * m + c];
                a[piv * m + c] = t;
            }
            det = -det;
        }
        double p = a[col * m + col];
        det *= p;
        for (int64_t r = col + 1; r < m; r++) {
            double f = a[r * m + col] / p;
            for (int64_t c = col + 1; c < m; c++) a[r * m + c] -= f * a[col * m + c];
        }
    }
    st_store_f64(y->dtype, st_misc_at(y, yo), det);
    if (a != stack) free(a);
}

st_status st_cpu_det(const st_kctx *k)
{
    const st_operand *x = &k->in[0];
    det_job j = {x, &k->out[0], x->sizes[x->rank - 1], false};
    int64_t batch = 1;
    for (int d = 0; d < x->rank - 2; d++) batch *= x->sizes[d];
    st_parallel_for(k->pool, batch, det_task, &j);
    if (j.nomem) return st_error(ST_ERR_NOMEM, "out of memory for a %lldx%lld matrix", (long long)j.m, (long long)j.m);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_misc[] = {
    {"Dropout", "", ST_DT_ALL, st_cpu_dropout, NULL, NULL, NULL},
    {"NegativeLogLikelihoodLoss", "", ST_DT_ALL, st_cpu_loss, NULL, NULL, NULL},
    {"SoftmaxCrossEntropyLoss", "", ST_DT_ALL, st_cpu_loss, NULL, NULL, NULL},
    {"MaxUnpool", "", ST_DT_ALL, st_cpu_maxunpool, NULL, NULL, NULL},
    {"ReverseSequence", "", ST_DT_ALL, st_cpu_reverse_sequence, NULL, NULL, NULL},
    {"Shrink", "", ST_DT_ALL, st_cpu_shrink, NULL, NULL, NULL},
    {"Det", "", ST_DT_ALL, st_cpu_det, NULL, NULL, NULL},
    {NULL}
};
