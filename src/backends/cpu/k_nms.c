/*
 * k_nms.c — NonMaxSuppression on the CPU: the selection is ops/select.c's
 * (the shape rule ran it too, on the same data, to size the output).
 */
#include <stdlib.h>

#include "backends/cpu/k_index.h"
#include "backends/cpu/kernels.h"
#include "ops/select.h"

st_status st_cpu_nms(const st_kctx *k)
{
    const st_index_state *s = k->state;
    const st_operand *y = &k->out[0];
    st_nms_params p;
    st_nms_params_read(k->in, k->n_in, s->flag, &p);
    int64_t *sel = NULL, cnt = 0;
    if (st_operand_numel(&k->in[0]) > 0 && st_operand_numel(&k->in[1]) > 0)
        ST_TRY(st_nms_select(&k->in[0], &k->in[1], &p, &sel, &cnt));
    if (cnt != y->sizes[0]) {
        free(sel);
        return st_error(ST_ERR_INTERNAL, "inputs changed since planning");
    }
    for (int64_t i = 0; i < cnt; i++)
        for (int c = 0; c < 3; c++) st_store_i64(y->dtype, elem(y, i * y->strides[0] + c * y->strides[1]), sel[i * 3 + c]);
    free(sel);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_nms[] = {
    {"NonMaxSuppression", "", ST_DT_ALL, st_cpu_nms, NULL, NULL, NULL},
    {NULL}
};
