/*
 * channels_last.c — which 4-D values a backend that prefers it
 * (ST_CAP_CHANNELS_LAST: CUDA) stores channels-last: logically [N, C, H, W]
 * as ONNX has it, with strides [H*W*C, 1, W*C, C] over the same bytes.
 *
 * Owns the decision only; passes/views.c lays such a value out that way
 * when it resolves the value's root, and everything downstream (the view
 * rules, the hazard DAG's byte ranges, the kernels) reads strides as it
 * always does.  The plan dump shows the strides; the plan JSON marks the
 * value "channels_last" (core/view.c's st_view_is_channels_last).
 *
 * Why: PyTorch exports ConvNeXt's blocks as a depthwise Conv, then
 * Transpose(0, 2, 3, 1), LayerNorm over the last axis and Linear layers in
 * NHWC, then Transpose(0, 3, 1, 2) and the residual Add in NCHW.  Stored
 * NCHW, every one of those transposes is a strided view: LayerNorm reduced
 * over a stride of H*W (2.25 ms of ConvNeXt-T's 7.7 at batch 32 on an
 * H200) and the residual Add mixed two layouts.  Stored channels-last, the
 * transposes become contiguous views and the convolutions read and write
 * NHWC, as cuDNN's tensor-core kernels want.
 *
 * The rule, per value v that an exec node writes, in node order:
 *   - v is a 4-D float root (not a graph output or input, not a slot of a
 *     Concat's output), of more than one channel and pixel;
 *   - its producer is a Conv or an element-wise op (whose kernels take
 *     any strides);
 *   - and either a reader Transposes it by (0, 2, 3, 1), or the producer
 *     reads a value of v's shape that is already channels-last (a Conv
 *     its input; an element-wise op any input), so a chain stays in one
 *     layout.
 * In f16 and bf16, CUDA also stores every Conv and Concat output NHWC
 * (MaxPool and Resize follow their input): cuDNN's tensor-core kernels
 * are NHWC, and given NCHW it transposes around each conv (11% of
 * YOLOv8n's kernel time at batch 32 on an H200).  At batch 32 on an H200
 * this took YOLOv8n from 8.12 to 5.01 ms and ResNet-50 from 4.27 to 3.03.
 * At batch 1 it used to lose on YOLOv8n (0.81 -> 1.01 ms: its convs read
 * Split chunks and write concat slots), and was gated to graphs without
 * Concat, Split or Slice; with CUDA's fused conv (conv, bias and
 * activation as one cuDNN graph, which needs channels-last operands) it
 * wins everywhere tried at batch 1: YOLOv8n 0.81 -> 0.45, ResNet-50
 * 0.68 -> 0.51, EfficientNet-B0 0.88 -> 0.77, MobileNetV3-L 0.62 -> 0.53
 * (bench/RESULTS.md, 2026-12-04, fourth session).  So the rule no longer
 * looks at the batch; with STRATA_CUDA_CONV_FUSED=0 YOLOv8n at batch 1
 * is slower under it than under the transpose rule.  In f32 a plain NCHW
 * network (ResNet, YOLO) is laid out as before.
 *
 * STRATA_CHANNELS_LAST=0 turns the rule off (to measure it); =1 applies
 * the transpose rule alone, on every backend (every kernel takes strides,
 * so the CPU and PoCL test the rule and the kernels' strided paths in
 * CI); =all applies the whole rule on every backend and dtype.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "passes/passes.h"
#include "plan/plan.h"

enum { CL_OFF, CL_TRANSPOSES, CL_ALL };

/* The rule for value pv. */
static int mode(const st_plan *p, const st_pvalue *pv)
{
    st_dtype t = pv->t.dtype;
    const char *e = getenv("STRATA_CHANNELS_LAST");
    if (e && strcmp(e, "0") == 0) return CL_OFF;
    if (e && strcmp(e, "all") == 0) return CL_ALL;
    if (e && strcmp(e, "1") == 0) return CL_TRANSPOSES; /* any backend: its kernels take strides (for tests) */
    if (!p->target.main || !(p->target.main->caps & ST_CAP_CHANNELS_LAST)) return CL_OFF;
    /* 16-bit convs run on cuDNN's NHWC tensor-core kernels, fused with
     * their bias and activation (the header says what this won) */
    bool lp = t == ST_F16 || t == ST_BF16;
    return lp && pv->t.rank == 4 ? CL_ALL : CL_TRANSPOSES;
}

static bool is_float(st_dtype t) { return t == ST_F32 || t == ST_F16 || t == ST_BF16; }

/* Producer ops whose kernels take any operand strides. */
static bool layout_free(const char *op)
{
    static const char *OPS[] = {"Conv", "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Gelu", "Erf",
                                "HardSwish", "HardSigmoid", "LeakyRelu", "Clip", "Neg", "Abs"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (!strcmp(op, OPS[i])) return true;
    return false;
}

/* Node j Transposes v by (0, 2, 3, 1). */
static bool transposes_to_last(const st_plan *p, int j, int v)
{
    const st_node *n = &p->g->nodes[j];
    const st_op_def *op = st_plan_op(p, n, j);
    if (!op || op->domain[0] || strcmp(op->name, "Transpose")) return false;
    int n_in;
    const int *in = st_plan_in(p, n, j, &n_in);
    if (n_in < 1 || in[0] != v) return false;
    int cnt;
    const int64_t *perm = st_attr_ints(n, "perm", &cnt);
    return perm && cnt == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1;
}

bool st_pass_wants_channels_last(const st_plan *p, int node, int v)
{
    const st_pvalue *pv = &p->values[v];
    int m = mode(p, pv);
    if (m == CL_OFF) return false;
    const st_tinfo *t = &pv->t;
    if (pv->kind != ST_PV_ROOT || pv->concat >= 0 || p->g->values[v].is_output || p->g->values[v].is_input) return false;
    if (t->rank != 4 || !is_float(t->dtype) || t->dims[1] < 2 || t->dims[2] * t->dims[3] < 2) return false;
    const st_node *n = &p->g->nodes[node];
    const st_op_def *op = st_plan_op(p, n, node);
    if (!op || op->domain[0]) return false;
    /* every conv output and every concat of them (an experiment for NCHW
     * networks: cuDNN then runs NHWC without its layout transposes) */
    if (m == CL_ALL && (!strcmp(op->name, "Conv") || !strcmp(op->name, "Concat"))) return true;
    bool follows = m == CL_ALL && (!strcmp(op->name, "MaxPool") || !strcmp(op->name, "Resize"));
    if (!layout_free(op->name) && !follows) return false;
    for (int j = 0; j < p->g->n_nodes; j++)
        if (st_plan_node_runs(p, j) && transposes_to_last(p, j, v)) return true;
    int n_in;
    const int *in = st_plan_in(p, n, node, &n_in);
    bool conv = !strcmp(op->name, "Conv") || follows;
    for (int k = 0; k < (conv ? 1 : n_in) && k < n_in; k++) {
        int x = in[k];
        if (x < 0 || !p->values[x].resolved) continue;
        const st_view *xv = &p->values[x].view;
        if (!conv && !st_plan_same_shape(p, x, v)) continue;
        if (st_view_is_channels_last(xv)) return true;
    }
    return false;
}
