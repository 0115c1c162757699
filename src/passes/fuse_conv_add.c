/*
 * fuse_conv_add.c — a residual Add folded into the Conv that feeds it,
 * for backends whose Conv kernel takes a residual operand
 * (ST_CAP_CONV_RESIDUAL: CUDA, where the fused cuDNN graph adds it before
 * the one store).
 *
 * Owns: st_conv_state's residual and epi2, the Conv's input 3 (the plan
 * node's rewritten inputs), nodes[].out0, the ST_PN_FUSED kind of the Add
 * (and of an activation after it) and values[].producer of the moved
 * output, as passes/fuse.c does for a Conv's activation.  Runs after
 * passes/fuse.c, so the Conv may already carry its activation:
 *   Y = Conv(X, W [, B]) with epilogue act        (YOLO's C2f bottleneck:
 *   S = Add(Y, R) or Add(R, Y)                      x + SiLU(conv(x)))
 *   [Z = act2(S)]                                  (ResNet: ReLU(conv + x))
 * becomes one Conv command on (X, W, B, R) writing S (or Z):
 *   out = act2(act(conv + bias) + R).
 * Each residual Add was a launch reading two tensors and writing a third:
 * 12 launches and 0.15 ms of YOLOv8n's 2.6 at batch 32 in f16 on an H200.
 * Legality: Y has the Add as its only running reader and is not a graph
 * output; R and S have Y's shape and dtype (no broadcast); R is written
 * before the Conv runs (its producer, and that of every value it is a
 * view of, comes earlier in node order), so the Conv reading it is
 * ordered after the write; act2 only when the Conv has no activation of
 * its own, and only one that passes/fuse.c could fold.  R keeps its bytes
 * until the Add's old position (last_use is not lowered), and an output
 * is never planned into the bytes of an input of the same command
 * (plan.c's lifetimes overlap at that node), so the Conv's store never
 * lands on R.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/model.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "passes/passes.h"
#include "plan/plan.h"

/* Node i runs the ai.onnx op `name` (after any rewrite). */
static bool runs(const st_plan *p, int i, const char *name)
{
    const st_op_def *op = st_plan_op(p, &p->g->nodes[i], i);
    return op && !op->domain[0] && !strcmp(op->name, name);
}

/* Whether every command writing v's bytes (v's producer, and those of the
 * values it is a view of) comes before node i. */
static bool written_before(const st_plan *p, int v, int i)
{
    for (int hops = 0; v >= 0 && hops < p->n_values; hops++) {
        const st_pvalue *pv = &p->values[v];
        if (pv->kind == ST_PV_CONST || pv->kind == ST_PV_INPUT) return true;
        if (pv->producer >= i) return false;
        if (pv->kind != ST_PV_VIEW) return pv->kind == ST_PV_ROOT;
        v = pv->base;
    }
    return false;
}

/* The Add reading y alone, with the other operand in *r; -1 if none. */
static int residual_add(const st_plan *p, const int *count, int y, int i, int *r)
{
    const st_graph *g = p->g;
    int a = st_plan_sole_reader(p, count, y);
    if (a < 0 || !runs(p, a, "Add") || p->nodes[a].out0 >= 0 || g->nodes[a].n_out < 1) return -1;
    const st_ew_state *es = p->nodes[a].state;
    int n_in;
    const int *in = st_plan_in(p, &g->nodes[a], a, &n_in);
    if (n_in != 2 || (es && es->b_units) || (in[0] == y) == (in[1] == y)) return -1;
    int s = g->nodes[a].out[0], other = in[0] == y ? in[1] : in[0];
    st_dtype t = p->values[y].t.dtype;
    if (s < 0 || other < 0 || p->values[s].t.dtype != t || p->values[other].t.dtype != t ||
        !st_plan_same_shape(p, s, y) || !st_plan_same_shape(p, other, y) || !written_before(p, other, i))
        return -1;
    *r = other;
    return a;
}

/* False only when out of memory. */
static bool fuse_at(st_plan *p, const int *count, int i, uint32_t dts)
{
    const st_graph *g = p->g;
    st_conv_state *cs = p->nodes[i].state;
    int n_in;
    const int *in = st_plan_in(p, &g->nodes[i], i, &n_in);
    if (!cs || cs->residual || st_conv_has_affine(cs) || n_in < 2 || n_in > 3)
        return true;
    int y = p->nodes[i].out0 >= 0 ? p->nodes[i].out0 : g->nodes[i].out[0];
    if (y < 0 || g->values[y].is_output || !(ST_DT(p->values[y].t.dtype) & dts) || p->values[y].t.rank != 4) return true;
    int r, a = residual_add(p, count, y, i, &r);
    if (a < 0) return true;
    int s = g->nodes[a].out[0], out = s, act = -1;
    st_epilogue e2 = {0};
    if (!cs->epi.act) {
        int z = st_plan_sole_reader(p, count, s);
        int zn;
        const int *zin = z >= 0 ? st_plan_in(p, &g->nodes[z], z, &zn) : NULL;
        if (z >= 0 && zin[0] == s && p->nodes[z].out0 < 0 && st_plan_act_of(p, z, &e2) && g->nodes[z].out[0] >= 0 &&
            p->values[g->nodes[z].out[0]].t.dtype == p->values[s].t.dtype && st_plan_same_shape(p, g->nodes[z].out[0], s)) {
            act = z;
            out = g->nodes[z].out[0];
        } else {
            memset(&e2, 0, sizeof e2);
        }
    }
    int *nin = malloc(4 * sizeof *nin);
    if (!nin) return false;
    nin[0] = in[0];
    nin[1] = in[1];
    nin[2] = n_in > 2 ? in[2] : -1;
    nin[3] = r;
    free(p->nodes[i].in);
    p->nodes[i].in = nin;
    p->nodes[i].n_in = 4;
    cs->residual = true;
    cs->epi2 = e2;
    p->nodes[a].kind = ST_PN_FUSED;
    p->values[y].kind = ST_PV_DEAD;
    if (act >= 0) {
        p->nodes[act].kind = ST_PN_FUSED;
        p->values[s].kind = ST_PV_DEAD;
    }
    p->nodes[i].out0 = out;
    p->values[out].producer = i;
    return true;
}

/* As in passes/fuse.c: a plan must not depend on how much memory was free
 * when it was made, so running out is an error. */
st_status st_pass_fuse_conv_add(st_plan *p, uint32_t dtypes)
{
    const st_graph *g = p->g;
    int *count = calloc((size_t)p->n_values + 1, sizeof *count);
    if (!count) return st_error(ST_ERR_NOMEM, "out of memory folding residual Adds into convolutions");
    st_plan_count_readers(p, count);
    for (int i = 0; i < g->n_nodes; i++) {
        if (!st_plan_node_runs(p, i) || !runs(p, i, "Conv")) continue;
        if (!fuse_at(p, count, i, dtypes)) {
            free(count);
            return st_error(ST_ERR_NOMEM, "out of memory folding the residual Add into node '%s'", g->nodes[i].name);
        }
        if (p->nodes[i].n_in == 4) st_plan_count_readers(p, count);
    }
    free(count);
    return ST_OK;
}
