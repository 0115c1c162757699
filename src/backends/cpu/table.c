/*
 * table.c — the CPU backend's kernel table: one entry list per family
 * file, in the order of src/ops/op_table.c's families.  The CPU runs every
 * op of the op table (the conformance runner checks it), so it is also
 * where planning falls back to when a device's table refuses a node.
 */
#include "backends/cpu/kernels.h"

/* Strings first: their Cast entries take the casts to and from strings,
 * which the numeric Cast of k_elementwise.c would otherwise take. */
static const st_kernel *const FAMILIES[] = {
    st_cpu_k_string,
    st_cpu_k_elementwise, st_cpu_k_shape,       st_cpu_k_linalg,     st_cpu_k_conv,        st_cpu_k_pool,
    st_cpu_k_conv_transpose, st_cpu_k_col2im, st_cpu_k_deform_conv,
    st_cpu_k_reduce,      st_cpu_k_norm,        st_cpu_k_index_copy, st_cpu_k_index_gather, st_cpu_k_nms,
    st_cpu_k_einsum,      st_cpu_k_resize,      st_cpu_k_misc,       st_cpu_k_misc_rnn,    st_cpu_k_misc_quant,
    st_cpu_k_misc_sample, st_cpu_k_misc_signal, st_cpu_k_text, st_cpu_k_qlinear, st_cpu_k_attention,
};

const st_kernel_table st_cpu_kernel_table = {
    "cpu",
    ST_CAP_CONV_AFFINE | ST_CAP_QDQ | ST_CAP_ATTENTION | ST_CAP_ATTENTION_VIEWS | ST_CAP_MATMUL_EPI | ST_CAP_ADD_NORM,
    (int)(sizeof FAMILIES / sizeof *FAMILIES),
    FAMILIES,
};
