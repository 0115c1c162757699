/*
 * k_deform_conv.c — the CPU kernel of DeformConv (opset 19, 2-D; shape
 * rule: ops/conv.c).
 *
 * Per (image, group): the columns [C/G * kh * kw, oh * ow] hold, for each
 * input channel and tap, the input read at the tap's moved position,
 * bilinearly between its four neighbours (a neighbour outside the input
 * reads 0, as GridSample's zeros padding with align_corners does) and
 * times the tap's mask; then Y[group] = W[group] x columns (st_sgemm) plus
 * the bias.  Values are f32 whatever the dtype (f16 and bf16 are stored
 * back rounded).  A task owns its (image, group) outputs, so results do not
 * depend on the thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/linalg.h"
#include "ops/conv.h"

typedef struct dc_job {
    const st_conv_state *s;
    const st_operand *x, *w, *off, *b, *mask, *y;
    int64_t ih, iw, oh, ow, taps, icg, ocg;
    st_status err;
} dc_job;

static float at_f32(const st_operand *o, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
    int64_t e = i0 * o->strides[0] + i1 * o->strides[1] + i2 * o->strides[2] + i3 * o->strides[3];
    return st_load_f32(o->dtype, (const char *)o->data + e * (int64_t)st_dtype_size(o->dtype));
}

/* X[n, c] at real position (h, w), bilinearly; 0 outside. */
static float bilinear(const dc_job *j, int64_t n, int64_t c, double h, double w)
{
    if (!(h > -1.0 && h < (double)j->ih && w > -1.0 && w < (double)j->iw)) return 0.0f;
    double hf = floor(h), wf = floor(w), lh = h - hf, lw = w - wf;
    int64_t h0 = (int64_t)hf, w0 = (int64_t)wf;
    double v = 0.0;
    for (int dy = 0; dy < 2; dy++)
        for (int dx = 0; dx < 2; dx++) {
            int64_t y = h0 + dy, x = w0 + dx;
            if (y < 0 || y >= j->ih || x < 0 || x >= j->iw) continue;
            double wt = (dy ? lh : 1.0 - lh) * (dx ? lw : 1.0 - lw);
            v += wt * (double)at_f32(j->x, n, c, y, x);
        }
    return (float)v;
}

static void dc_task(void *arg, int64_t t)
{
    dc_job *j = arg;
    const st_conv_state *s = j->s;
    int64_t n = t / s->group, g = t % s->group;
    int64_t npix = j->oh * j->ow, rows = j->icg * j->taps;
    int64_t per_og = j->x->sizes[1] / s->offset_group;
    float *cols = malloc((size_t)(rows * npix + j->ocg * npix + 1) * sizeof *cols);
    float *wbuf = malloc((size_t)(j->ocg * rows + 1) * sizeof *wbuf);
    if (!cols || !wbuf) {
        free(cols);
        free(wbuf);
        j->err = st_error(ST_ERR_NOMEM, "out of memory in DeformConv");
        return;
    }
    float *acc = cols + rows * npix;
    for (int64_t ci = 0; ci < j->icg; ci++) {
        int64_t c = g * j->icg + ci, og = c / per_og;
        for (int64_t k = 0; k < j->taps; k++) {
            int64_t kh = k / s->k[1], kw = k % s->k[1];
            float *row = cols + (ci * j->taps + k) * npix;
            for (int64_t oy = 0; oy < j->oh; oy++)
                for (int64_t ox = 0; ox < j->ow; ox++) {
                    double dh = at_f32(j->off, n, (og * j->taps + k) * 2, oy, ox);
                    double dw = at_f32(j->off, n, (og * j->taps + k) * 2 + 1, oy, ox);
                    double h = (double)(oy * s->s[0] - s->pb[0] + kh * s->d[0]) + dh;
                    double w = (double)(ox * s->s[1] - s->pb[1] + kw * s->d[1]) + dw;
                    float v = bilinear(j, n, c, h, w);
                    if (j->mask) v *= at_f32(j->mask, n, og * j->taps + k, oy, ox);
                    row[oy * j->ow + ox] = v;
                }
        }
    }
    /* W[g] as a packed f32 [ocg, icg * taps] */
    for (int64_t m = 0; m < j->ocg; m++)
        for (int64_t r = 0; r < rows; r++)
            wbuf[m * rows + r] = at_f32(j->w, g * j->ocg + m, r / j->taps, r % j->taps / s->k[1], r % s->k[1]);
    st_mat a = {wbuf, j->ocg, rows, rows, 1}, b = {cols, rows, npix, npix, 1};
    st_sgemm(&a, false, &b, false, 1.0f, 0.0f, acc, npix, j->ocg, npix, rows);
    const st_operand *y = j->y;
    size_t ey = st_dtype_size(y->dtype);
    for (int64_t m = 0; m < j->ocg; m++) {
        int64_t oc = g * j->ocg + m;
        float bias = 0.0f;
        if (j->b) bias = st_load_f32(j->b->dtype, (const char *)j->b->data + oc * j->b->strides[0] * (int64_t)st_dtype_size(j->b->dtype));
        for (int64_t p = 0; p < npix; p++) {
            int64_t e = n * y->strides[0] + oc * y->strides[1] + p / j->ow * y->strides[2] + p % j->ow * y->strides[3];
            st_store_f32(y->dtype, (char *)y->data + e * (int64_t)ey, acc[m * npix + p] + bias);
        }
    }
    free(cols);
    free(wbuf);
}

st_status st_cpu_deform_conv(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    dc_job j = {0};
    j.s = s;
    j.x = &k->in[0];
    j.w = &k->in[1];
    j.off = &k->in[2];
    j.b = k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL;
    j.mask = k->n_in > 4 && k->in[4].data ? &k->in[4] : NULL;
    j.y = &k->out[0];
    j.ih = j.x->sizes[2];
    j.iw = j.x->sizes[3];
    j.oh = j.y->sizes[2];
    j.ow = j.y->sizes[3];
    j.taps = s->k[0] * s->k[1];
    j.icg = j.x->sizes[1] / s->group;
    j.ocg = j.y->sizes[1] / s->group;
    j.err = ST_OK;
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_parallel_for(k->pool, j.x->sizes[0] * s->group, dc_task, &j);
    return j.err;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_deform_conv[] = {
    {"DeformConv", "", ST_DT_ALL, st_cpu_deform_conv, NULL, NULL, NULL},
    {NULL}
};
