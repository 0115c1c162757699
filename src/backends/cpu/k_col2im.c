/*
 * k_col2im.c — the CPU kernel of Col2Im (opset 18; shape rule: ops/conv.c).
 *
 * One task per (image, channel): the channel's plane is summed in a
 * packed double buffer, block by block and within a block in row-major
 * order of the window (the same order for any thread count, so the same
 * bits), then stored through the output's strides.  An image element that
 * no block covers (a stride larger than the window) is 0.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "ops/conv.h"

typedef struct col2im_job {
    const st_conv_state *s;
    const st_operand *x, *y;
    int64_t kvol, plane;
    st_status err;
} col2im_job;

static void col2im_plane(void *arg, int64_t t)
{
    col2im_job *j = arg;
    const st_conv_state *s = j->s;
    const st_operand *x = j->x, *y = j->y;
    int nsp = s->nsp;
    int64_t n = t / y->sizes[1], ch = t % y->sizes[1];
    double *acc = calloc((size_t)(j->plane > 0 ? j->plane : 1), sizeof *acc);
    if (!acc) {
        j->err = st_error(ST_ERR_NOMEM, "out of memory in Col2Im");
        return;
    }
    const int64_t *img = y->sizes + 2;
    size_t ex = st_dtype_size(x->dtype), ey = st_dtype_size(y->dtype);
    int64_t blocks = x->sizes[2];
    for (int64_t kk = 0; kk < j->kvol; kk++) {
        /* the window offset of this row of the input */
        int64_t ki[3] = {0, 0, 0}, rem = kk;
        for (int i = nsp - 1; i >= 0; i--) {
            ki[i] = rem % s->k[i];
            rem /= s->k[i];
        }
        const char *xr = (const char *)x->data + (n * x->strides[0] + (ch * j->kvol + kk) * x->strides[1]) * (int64_t)ex;
        for (int64_t l = 0; l < blocks; l++) {
            int64_t lb = l, flat = 0;
            bool inside = true;
            int64_t pos[3];
            for (int i = nsp - 1; i >= 0; i--) {
                int64_t b = lb % s->out[i];
                lb /= s->out[i];
                pos[i] = b * s->s[i] - s->pb[i] + ki[i] * s->d[i];
                if (pos[i] < 0 || pos[i] >= img[i]) inside = false;
            }
            if (!inside) continue;
            for (int i = 0; i < nsp; i++) flat = flat * img[i] + pos[i];
            acc[flat] += st_load_f64(x->dtype, xr + l * x->strides[2] * (int64_t)ex);
        }
    }
    for (int64_t p = 0; p < j->plane; p++) {
        int64_t off = n * y->strides[0] + ch * y->strides[1], rem = p;
        for (int i = nsp - 1; i >= 0; i--) {
            off += rem % img[i] * y->strides[2 + i];
            rem /= img[i];
        }
        st_store_f64(y->dtype, (char *)y->data + off * (int64_t)ey, acc[p]);
    }
    free(acc);
}

st_status st_cpu_col2im(const st_kctx *k)
{
    const st_conv_state *s = k->state;
    col2im_job j = {s, &k->in[0], &k->out[0], 1, 1, ST_OK};
    for (int i = 0; i < s->nsp; i++) {
        j.kvol *= s->k[i];
        j.plane *= j.y->sizes[2 + i];
    }
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_parallel_for(k->pool, j.y->sizes[0] * j.y->sizes[1], col2im_plane, &j);
    return j.err;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_col2im[] = {
    {"Col2Im", "", ST_DT_ALL, st_cpu_col2im, NULL, NULL, NULL},
    {NULL}
};
