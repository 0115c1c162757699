/*
 * pipeline.c — the pass pipeline, declared in one place: what plan
 * building (plan/plan.c) runs of the passes and in which order.  The
 * session hands it to planning (st_plan_target.passes); plan/ names no
 * pass.  The table's rows run in order after specialization, each when
 * the session backend's kernel table has the capabilities in its gate.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "passes/passes.h"

/* Which chain dtypes the attention pass fuses for table t: f32 where the
 * backend asks for it (ST_CAP_ATTENTION), f16 where it asks for that
 * (ST_CAP_ATTENTION_F16), with STRATA_ATTENTION_FUSION=1 every dtype
 * its FusedAttention kernel runs, and with STRATA_ATTENTION_FUSION=0 none
 * (for measuring the fusion).  0: the pass does not run. */
static uint32_t attention_dtypes(const st_kernel_table *t)
{
    const st_op_def *fa = st_op_find("ai.strata", "FusedAttention");
    uint32_t has = fa ? st_kernel_dtypes(t, fa) : 0, want = 0;
    const char *e = getenv("STRATA_ATTENTION_FUSION");
    if (e && strcmp(e, "1") == 0) return has;
    if (e && strcmp(e, "0") == 0) return 0;
    if (t->caps & ST_CAP_ATTENTION) want |= ST_DT(ST_F32);
    if (t->caps & ST_CAP_ATTENTION_F16) want |= ST_DT(ST_F16);
    return has & want;
}

static bool attention_gate(const st_kernel_table *t) { return attention_dtypes(t) != 0; }

/* the kernel takes operand layouts and Q's scale (ST_CAP_ATTENTION_VIEWS) */
static st_status fuse_attention(st_plan *p)
{
    const st_kernel_table *t = p->target.main;
    return st_pass_fuse_attention(p, (t->caps & ST_CAP_ATTENTION_VIEWS) != 0, attention_dtypes(t));
}

/* f32 products for ST_CAP_MATMUL_EPI, f16 and bf16 ones too with
 * ST_CAP_MATMUL_EPI_LP */
static st_status fuse_matmul(st_plan *p)
{
    uint32_t dts = ST_DT(ST_F32);
    if (p->target.main->caps & ST_CAP_MATMUL_EPI_LP) dts |= ST_DT(ST_F16) | ST_DT(ST_BF16);
    return st_pass_fuse_matmul(p, dts);
}

/* a residual Add into the Conv before it (ST_CAP_CONV_RESIDUAL: CUDA's
 * kernels, in the float dtypes they run); STRATA_CONV_RESIDUAL=0 keeps
 * the Adds as written, to measure what folding them gains */
static st_status fuse_conv_add(st_plan *p)
{
    const char *e = getenv("STRATA_CONV_RESIDUAL");
    if (e && strcmp(e, "0") == 0) return ST_OK;
    return st_pass_fuse_conv_add(p, ST_DT(ST_F32) | ST_DT(ST_F16) | ST_DT(ST_BF16));
}

/* the affine ops around a Conv's activation into its epilogue
 * (ST_CAP_CONV_AFFINE); STRATA_CONV_AFFINE=0 keeps them as written, to
 * measure what folding them gains */
static st_status fuse_affine(st_plan *p)
{
    const char *e = getenv("STRATA_CONV_AFFINE");
    if (e && strcmp(e, "0") == 0) return ST_OK;
    return st_pass_fuse_affine(p);
}

static const st_pass PASSES[] = {
    {"sequence_outputs", 0, NULL, st_sequence_outputs},
    {"fuse", 0, NULL, st_pass_fuse},
    {"fuse_affine", ST_CAP_CONV_AFFINE, NULL, fuse_affine},
    {"fuse_conv_add", ST_CAP_CONV_RESIDUAL, NULL, fuse_conv_add},
    {"fuse_qdq", ST_CAP_QDQ, NULL, st_pass_fuse_qdq},
    {"fuse_attention", 0, attention_gate, fuse_attention},
    {"fuse_matmul", ST_CAP_MATMUL_EPI, NULL, fuse_matmul},
    {"fuse_add_norm", ST_CAP_ADD_NORM, NULL, st_pass_fuse_add_norm},
};

const st_pass_pipeline st_passes = {
    .sequence_inputs = st_sequence_inputs,
    .specialize = st_specialize,
    .layout_reset = st_pass_layout_reset,
    .layout = st_pass_layout,
    .place_concats = st_pass_place_concats,
    .sequence_defer = st_sequence_defer,
    .sequence_node = st_sequence_node,
    .outer_value = st_control_outer_value,
    .passes = PASSES,
    .n_passes = (int)(sizeof PASSES / sizeof *PASSES),
};
