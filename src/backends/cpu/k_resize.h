/* k_resize.h — the CPU kernels of the resize family (k_resize.c). */
#ifndef ST_CPU_K_RESIZE_H
#define ST_CPU_K_RESIZE_H

#include "ops/op.h"

st_status st_cpu_resize(const st_kctx *k);          /* Resize, Upsample */
st_status st_cpu_conv_transpose(const st_kctx *k);

#endif
