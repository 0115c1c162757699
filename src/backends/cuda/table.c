/*
 * table.c — the CUDA backend's kernel table: one entry list per family
 * file.  The module hands it over through its one entry point
 * (st_cuda_module, runtime/backend.h), so a kernel is bound by the
 * compiler, never by a name looked up at run time.  An op with no entry
 * here runs on the CPU in a mixed plan (plan/place.c).
 */
#include "backends/cuda/cuda_ctx.h"

static const st_kernel *const FAMILIES[] = {
    st_cuda_k_elementwise, st_cuda_k_shape, st_cuda_k_linalg, st_cuda_k_conv,
    st_cuda_k_norm,        st_cuda_k_reduce, st_cuda_k_resize, st_cuda_k_quant,
    st_cuda_k_qint,        st_cuda_k_qlinear, st_cuda_k_attention,
    st_cuda_k_index,       st_cuda_k_rnn,     st_cuda_k_rownorm, st_cuda_k_sample,
};

const st_kernel_table st_cuda_kernel_table = {
    "cuda",
    /* every op a QDQ fusion makes has a kernel here (k_qint.cu,
     * k_qlinear.cu).  FusedAttention (k_attention.cu) is asked for in f16,
     * where its tensor-core flash kernel runs: on an H200 it matched the
     * float64 reference within 3.2e-4 over 11 cases and took ViT-S at
     * batch 32 from 4.47 to 4.19 ms (BERT-4 unchanged; bench/RESULTS.md).
     * Not in f32: there the fused encoder took 0.84 ms at 2x77 and 2.72 ms
     * at 1x512 against 0.53 and 0.85 ms unfused (cuBLAS and the softmax
     * kernel).  STRATA_ATTENTION_FUSION=1 fuses every dtype, =0 none
     * (passes/pipeline.c).  A Linear layer's bias and activation fold
     * into MatMul in every float dtype (k_linalg.cu: cuBLASLt's bias
     * epilogue).  Values that transposes want NHWC are stored so
     * (passes/channels_last.c): ConvNeXt's LayerNorms then read contiguous
     * rows, and the depthwise conv has an NHWC kernel (k_conv.cu).  The
     * affine ops around a conv's activation (PP-OCR's LCNet) run as one
     * pass after it (k_conv.cu's conv_affine). */
    ST_CAP_CONV_AFFINE | ST_CAP_QDQ | ST_CAP_ATTENTION_F16 | ST_CAP_MATMUL_EPI | ST_CAP_MATMUL_EPI_LP | ST_CAP_CHANNELS_LAST | ST_CAP_CONV_RESIDUAL,
    (int)(sizeof FAMILIES / sizeof *FAMILIES),
    FAMILIES,
};

bool st_cuda_accepts_no_f64(const st_knode *n, char *why, size_t len)
{
    for (int i = 0; i < n->n_in + n->n_out; i++)
        if (n->views[i].rank >= 0 && n->views[i].dtype == ST_F64)
            return st_kernel_refuse(why, len, "%s: float64 has no CUDA kernel", n->op->name);
    return true;
}
