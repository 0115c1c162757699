/*
 * k_resize.c — the CPU kernel of the resize family: Resize and Upsample.
 *
 * Resize walks the output one innermost row at a time.  The tap tables
 * that the shape rule built (ops/resize.h) give, for each output
 * coordinate on each axis, the input coordinates and weights: the outer
 * axes' taps combine into a short list of (source row, weight) per output
 * row, which are blended into one row, and the last axis' taps resample
 * that row (bilinear: two rows blended, then two taps per element; axes
 * left at their size have one tap and cost nothing).  Nearest copies
 * elements (any dtype); a row whose source row is the one the previous
 * row came from is a memcpy of that row, and integer upsampling along
 * the last axis is a repeat loop: YOLO's and FPNs' 2x upsampling.
 * Tasks are fixed blocks of rows, so results do not depend on threads.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/clones.h"
#include "backends/cpu/k_resize.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "ops/resize.h"

#define RS_TASK_ELEMS 16384

/* ---- Resize ---- */

typedef struct rs_job {
    const st_resize_state *s;
    const st_operand *x, *y;
    int64_t rows, rows_per_task, combos;
    unsigned char ext[16];           /* the extrapolation value in y's dtype */
    st_status err;
} rs_job;

/* Row r's index on every axis but the last. */
static void row_index(const st_resize_state *s, int64_t r, int64_t *o)
{
    for (int a = s->rank - 2; a >= 0; a--) {
        o[a] = r % s->out[a];
        r /= s->out[a];
    }
}

static void row_next(const st_resize_state *s, int64_t *o)
{
    for (int a = s->rank - 2; a >= 0; a--) {
        if (++o[a] < s->out[a]) return;
        o[a] = 0;
    }
}

#define GATHER(T)                                                                                  \
    do {                                                                                           \
        const T *sp = (const T *)src;                                                              \
        T *dp = (T *)dst;                                                                          \
        if (rep > 1 && ys == 1) {                                                                  \
            for (int64_t i = 0; i < in; i++) {                                                     \
                T v = sp[i * xs];                                                                  \
                for (int64_t q = 0; q < rep; q++) *dp++ = v;                                       \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                if (lt[i].outside) memcpy(&dp[i * ys], ext, sizeof(T));                            \
                else dp[i * ys] = sp[lt[i].idx * xs];                                              \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* d[2i] = d[2i + 1] = s[i] for i < n: the rows of a nearest 2x
 * upsampling (YOLO's necks), in a loop the compiler vectorises: 4-byte
 * rows (f32), and 1-byte ones (a QDQ model's u8, which the byte loop of
 * GATHER ran at half the f32 model's time for a quarter of its bytes). */
#define DUP2(T)                                                                                                        \
    ST_CLONES static void dup2_##T(T *restrict d, const T *restrict s, int64_t n)                                     \
    {                                                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                                              \
            d[2 * i] = s[i];                                                                                           \
            d[2 * i + 1] = s[i];                                                                                       \
        }                                                                                                              \
    }
DUP2(uint8_t)
DUP2(uint32_t)
#undef DUP2

/* Output row: element i from src[lt[i].idx * xs] (strides in elements). */
static void gather_row(size_t es, char *dst, int64_t ys, const char *src, int64_t xs, const st_resize_tap *lt, int64_t n,
                       int64_t in, int64_t rep, const unsigned char *ext)
{
    bool dup2 = rep == 2 && xs == 1 && ys == 1 && n == 2 * in;
    switch (es) {
    case 1:
        if (dup2) dup2_uint8_t((uint8_t *)dst, (const uint8_t *)src, in);
        else GATHER(uint8_t);
        break;
    case 2: GATHER(uint16_t); break;
    case 4:
        if (dup2) dup2_uint32_t((uint32_t *)dst, (const uint32_t *)src, in);
        else GATHER(uint32_t);
        break;
    case 8: GATHER(uint64_t); break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ys * (int64_t)es, lt[i].outside ? (const char *)ext : src + lt[i].idx * xs * (int64_t)es, es);
        break;
    }
}

static void fill_row(size_t es, char *dst, int64_t ys, int64_t n, const unsigned char *ext)
{
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * ys * (int64_t)es, ext, es);
}

static void nearest_rows(void *arg, int64_t t)
{
    rs_job *j = arg;
    const st_resize_state *s = j->s;
    const st_operand *x = j->x, *y = j->y;
    size_t es = st_dtype_size(x->dtype);
    int l = s->rank - 1;
    int64_t r0 = t * j->rows_per_task, r1 = r0 + j->rows_per_task < j->rows ? r0 + j->rows_per_task : j->rows;
    int64_t o[ST_MAX_RANK] = {0};
    row_index(s, r0, o);
    const st_resize_tap *lt = s->taps + s->first[l];
    int64_t n = s->out[l], xs = x->strides[l], ys = y->strides[l];
    int64_t prev_src = 0;
    char *prev_dst = NULL;
    for (int64_t r = r0; r < r1; r++, row_next(s, o)) {
        int64_t src = 0, dst = 0;
        bool outside = false;
        for (int a = 0; a < l; a++) {
            const st_resize_tap *tp = &s->taps[s->first[a] + o[a]];
            src += tp->idx * x->strides[a];
            dst += o[a] * y->strides[a];
            outside |= tp->outside;
        }
        char *yp = (char *)y->data + dst * (int64_t)es;
        if (outside) {
            fill_row(es, yp, ys, n, j->ext);
            prev_dst = NULL;
            continue;
        }
        if (prev_dst && src == prev_src && ys == 1) {
            /* the same source row as the previous output row */
            memcpy(yp, prev_dst, (size_t)n * es);
        } else {
            gather_row(es, yp, ys, (const char *)x->data + src * (int64_t)es, xs, lt, n, s->in[l], s->rep, j->ext);
        }
        prev_src = src;
        prev_dst = yp;
    }
}

/* Linear and cubic, one output row at a time, in two passes: the outer
 * axes' taps blend their source rows into one row of the input's length
 * (a contiguous, vectorisable loop), then the last axis' taps resample
 * that row.  f32, f16 and bf16 compute in f32, f64 in f64. */
static void interp_rows(void *arg, int64_t t)
{
    rs_job *j = arg;
    const st_resize_state *s = j->s;
    const st_operand *x = j->x, *y = j->y;
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype);
    int l = s->rank - 1;
    bool f64 = x->dtype == ST_F64;
    int64_t in = s->in[l], n = s->out[l], xs = x->strides[l], ys = y->strides[l];
    size_t bytes = (size_t)j->combos * (sizeof(int64_t) + sizeof(double) + sizeof(float)) + (size_t)in * sizeof(double);
    int64_t *off = malloc(bytes);
    if (!off) {
        j->err = st_error(ST_ERR_NOMEM, "out of memory in Resize");
        return;
    }
    double *wd = (double *)(off + j->combos);
    double *td = wd + j->combos;                 /* the blended row (f64) */
    float *wf = (float *)(td + in);
    float *tf = (float *)td;                     /* the blended row (f32) */
    int64_t r0 = t * j->rows_per_task, r1 = r0 + j->rows_per_task < j->rows ? r0 + j->rows_per_task : j->rows;
    int64_t o[ST_MAX_RANK] = {0};
    row_index(s, r0, o);
    int ntl = s->ntaps[l];
    const st_resize_tap *lt = s->taps + s->first[l];
    for (int64_t r = r0; r < r1; r++, row_next(s, o)) {
        /* the outer axes' taps, combined */
        int64_t nc = 1, dst = 0;
        bool outside = false;
        off[0] = 0;
        wd[0] = 1.0;
        wf[0] = 1.0f;
        for (int a = 0; a < l; a++) {
            int nt = s->ntaps[a];
            const st_resize_tap *tp = &s->taps[s->first[a] + o[a] * nt];
            dst += o[a] * y->strides[a];
            outside |= tp->outside;
            if (nt == 1) {
                for (int64_t c = 0; c < nc; c++) off[c] += tp->idx * x->strides[a];
                continue;
            }
            /* expand in place, last combo first so nothing is overwritten before use */
            for (int64_t c = nc - 1; c >= 0; c--)
                for (int k = nt - 1; k >= 0; k--) {
                    int64_t dc = c * nt + k;
                    off[dc] = off[c] + tp[k].idx * x->strides[a];
                    wd[dc] = wd[c] * tp[k].wd;
                    wf[dc] = wf[c] * tp[k].wf;
                }
            nc *= nt;
        }
        char *yp = (char *)y->data + dst * (int64_t)ey;
        if (outside) {
            fill_row(ey, yp, ys, n, j->ext);
            continue;
        }
        const char *xp = x->data;
        if (f64) {
            for (int64_t i = 0; i < in; i++) td[i] = 0.0;
            for (int64_t c = 0; c < nc; c++)
                for (int64_t i = 0; i < in; i++) td[i] += wd[c] * st_load_f64(x->dtype, xp + (off[c] + i * xs) * (int64_t)ex);
            for (int64_t i = 0; i < n; i++) {
                const st_resize_tap *tp = lt + i * ntl;
                double acc = 0.0;
                if (tp->outside) {
                    acc = s->extrapolation;
                } else {
                    for (int k = 0; k < ntl; k++) acc += tp[k].wd * td[tp[k].idx];
                }
                st_store_f64(y->dtype, yp + i * ys * (int64_t)ey, acc);
            }
            continue;
        }
        const float *row = tf;
        if (x->dtype == ST_F32 && xs == 1) {
            const float *xf = (const float *)xp;
            if (nc == 1 && wf[0] == 1.0f) {
                row = xf + off[0];               /* one source row: read it in place */
            } else {
                const float *b0 = xf + off[0];
                for (int64_t i = 0; i < in; i++) tf[i] = wf[0] * b0[i];
                for (int64_t c = 1; c < nc; c++) {
                    const float *b = xf + off[c];
                    float w = wf[c];
                    for (int64_t i = 0; i < in; i++) tf[i] += w * b[i];
                }
            }
        } else {
            for (int64_t i = 0; i < in; i++) tf[i] = 0.0f;
            for (int64_t c = 0; c < nc; c++)
                for (int64_t i = 0; i < in; i++) tf[i] += wf[c] * st_load_f32(x->dtype, xp + (off[c] + i * xs) * (int64_t)ex);
        }
        if (y->dtype == ST_F32 && !s->crop) {
            float *yf = (float *)yp;
            if (ntl == 2) {
                for (int64_t i = 0; i < n; i++) {
                    const st_resize_tap *tp = lt + 2 * i;
                    yf[i * ys] = tp[0].wf * row[tp[0].idx] + tp[1].wf * row[tp[1].idx];
                }
            } else {
                for (int64_t i = 0; i < n; i++) {
                    const st_resize_tap *tp = lt + i * ntl;
                    float acc = 0.0f;
                    for (int k = 0; k < ntl; k++) acc += tp[k].wf * row[tp[k].idx];
                    yf[i * ys] = acc;
                }
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                const st_resize_tap *tp = lt + i * ntl;
                float acc = 0.0f;
                if (tp->outside) {
                    acc = (float)s->extrapolation;
                } else {
                    for (int k = 0; k < ntl; k++) acc += tp[k].wf * row[tp[k].idx];
                }
                st_store_f32(y->dtype, yp + i * ys * (int64_t)ey, acc);
            }
        }
    }
    free(off);
}

st_status st_cpu_resize(const st_kctx *k)
{
    const st_resize_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (st_operand_numel(y) == 0) return ST_OK;
    rs_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.x = x;
    j.y = y;
    if (st_dtype_size(y->dtype) > sizeof j.ext) return st_error(ST_ERR_UNSUPPORTED, "Resize of %s data", st_dtype_name(y->dtype));
    st_store_f64(y->dtype, j.ext, s->extrapolation);
    if (s->rank == 0) {
        st_copy_strided(y, x);
        return ST_OK;
    }
    int l = s->rank - 1;
    j.rows = 1;
    j.combos = 1;
    for (int a = 0; a < l; a++) {
        j.rows *= s->out[a];
        j.combos *= s->ntaps[a];
    }
    j.rows_per_task = RS_TASK_ELEMS / (s->out[l] > 0 ? s->out[l] : 1);
    if (j.rows_per_task < 1) j.rows_per_task = 1;
    j.err = ST_OK;
    st_parallel_for(k->pool, (j.rows + j.rows_per_task - 1) / j.rows_per_task, s->nearest ? nearest_rows : interp_rows, &j);
    return j.err;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_resize[] = {
    {"Resize", "", ST_DT_ALL, st_cpu_resize, NULL, NULL, NULL},
    {"Upsample", "", ST_DT_ALL, st_cpu_resize, NULL, NULL, NULL},
    {NULL}
};
