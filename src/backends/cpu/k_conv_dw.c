/*
 * k_conv_dw.c — depthwise convs on the AVX-512 path's staging
 * (k_conv_fast.c chooses it: one input and one output channel per group).
 */
#include <stdlib.h>

#include "backends/common/cvt_half.h"
#include "backends/cpu/k_conv.h"
#include "runtime/scratch.h"

/* Depthwise: a task per (image, channel, band) stages its rows and runs the
 * taps as shifted vector FMAs, one output row at a time. */
void st_conv_dw_task(void *arg, int64_t t)
{
    fconv *f = arg;
    int64_t cgroups = (f->C + f->dwc - 1) / f->dwc;
    int64_t band = t % f->bands, ci = t / f->bands, n = ci / cgroups, c0 = ci % cgroups * f->dwc;
    int64_t c1 = c0 + f->dwc < f->C ? c0 + f->dwc : f->C;
    int64_t b0 = band * f->band, rows = f->oh - b0 < f->band ? f->oh - b0 : f->band;
    float *st = st_scratch_take(st_conv_stage_bytes(f) + (size_t)(f->ow + 16) * sizeof(float));
    if (!st) {
        f->err = st_error(ST_ERR_NOMEM, "out of memory in Conv");
        return;
    }
    float *row = st + (st_conv_stage_bytes(f) / sizeof(float));
    const st_operand *y = f->y;
    size_t ey = st_dtype_size(y->dtype);
    int64_t rs = f->xd == 3 ? y->strides[2] : 0, cs = y->strides[f->xd];
    bool direct = y->dtype == ST_F32 && cs == 1;
    for (int64_t c = c0; c < c1; c++) {
        st_conv_stage_band(f, n, c, b0, st);
        char *yc = (char *)y->data + (n * y->strides[0] + c * y->strides[1]) * (int64_t)ey;
        st_gemm_epi epi = f->epi;
        if (epi.scale) epi.scale += c;
        if (epi.shift) epi.shift += c;
        if (epi.post_scale) epi.post_scale += c, epi.post_shift += c;
        for (int64_t r = 0; r < rows; r++) {
            int64_t oy = b0 + r;
            float *out = direct ? (float *)(yc + oy * rs * (int64_t)ey) : row;
            st_dw_row(st + r * f->pws, f->off, f->K, f->w + c * f->lda, &epi, f->ow, out);
            if (!direct) st_cvt_row_from_f32(y->dtype, yc + oy * rs * (int64_t)ey, cs, row, f->ow);
        }
    }
    st_scratch_give(st);
}

