/*
 * table.c — the OpenCL backend's kernel table: one entry list per family
 * file.  An op with no entry here runs on the CPU in a mixed plan
 * (plan/place.c), or is refused with --no-fallback.  caps: the passes
 * that rewrite a plan for this table's kernels (ops/kernel.h).
 */
#include "backends/opencl/kernels.h"

static const st_kernel *const FAMILIES[] = {
    st_cl_k_elementwise, st_cl_k_shape, st_cl_k_linalg, st_cl_k_conv, st_cl_k_rows, st_cl_k_resize, st_cl_k_quant,
    st_cl_k_qint, st_cl_k_qlinear, st_cl_k_attention, st_cl_k_pad,
    st_cl_k_index, st_cl_k_rnn, st_cl_k_rownorm, st_cl_k_sample,
};

const st_kernel_table st_cl_kernel_table = {
    "opencl",
    /* every op a QDQ fusion makes has a kernel here (k_qint.c,
     * k_qlinear.c), and FusedAttention (k_attention.c); the affine ops
     * around a conv's activation run as one pass after it (k_conv.c) */
    ST_CAP_CONV_AFFINE | ST_CAP_QDQ | ST_CAP_ATTENTION,
    (int)(sizeof FAMILIES / sizeof *FAMILIES),
    FAMILIES,
};
