/*
 * flops.c — counts a model's multiply-add work at given input shapes, from
 * strata's own plan (shapes inferred and folded exactly as a run sees them).
 *
 * FLOPs are 2 per multiply-add of Conv, ConvTranspose, MatMul and Gemm;
 * everything else (activations, pooling, resize) is not counted, so the
 * figure is the matrix work a runtime cannot avoid.  With -v it also lists
 * every Conv: the shapes bench/RESULTS.md's profiles talk about.
 *
 *   flops MODEL NAME=D0xD1x... [-v]     e.g. flops yolov8n.onnx images=1x3x640x640
 * Prints one JSON line: {"model": ..., "gflop": ..., "conv_gflop": ..., ...}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/registry.h"
#include "graph/model.h"
#include "passes/passes.h"
#include "plan/plan.h"
#include "strata.h"

static const st_tinfo *val(const st_plan *p, int v) { return v >= 0 ? &p->values[v].t : NULL; }

static int64_t attr_int(const st_node *n, const char *name, int64_t def)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return n->attrs[i].i;
    return def;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: flops MODEL NAME=D0xD1x... [-v]\n");
        return 2;
    }
    bool verbose = argc > 3 && !strcmp(argv[argc - 1], "-v");
    st_model *m;
    if (st_model_load(argv[1], &m) != ST_OK) {
        fprintf(stderr, "flops: %s\n", st_last_error());
        return 1;
    }
    const st_graph *g = m->g;
    int n_in = g->n_inputs;
    int *rank = calloc((size_t)n_in + 1, sizeof *rank);
    int64_t(*dims)[ST_MAX_RANK] = calloc((size_t)n_in + 1, sizeof *dims);
    const void **data = calloc((size_t)n_in + 1, sizeof *data);
    for (int a = 2; a < argc; a++) {
        char *eq = strchr(argv[a], '=');
        if (!eq) continue;
        *eq = 0;
        for (int i = 0; i < n_in; i++) {
            if (strcmp(g->values[g->inputs[i]].name, argv[a]) != 0) continue;
            char *s = eq + 1;
            while (*s && rank[i] < ST_MAX_RANK) {
                dims[i][rank[i]++] = strtoll(s, &s, 10);
                if (*s == 'x') s++;
            }
        }
    }
    st_session_options o;
    st_session_options_init(&o);
    /* the CPU's kernel table decides fusion, as in a CPU session */
    st_backend *cpu = st_cpu_backend();
    st_plan_target t = {.main = cpu->kernels, .main_device = cpu, .host = cpu->kernels, .host_device = cpu,
                         .passes = &st_passes};
    st_plan *p;
    if (st_plan_build(m, &t, &o, rank, (const int64_t(*)[ST_MAX_RANK])dims, data, NULL, &p) != ST_OK) {
        fprintf(stderr, "flops: %s\n", st_last_error());
        return 1;
    }
    double conv = 0, dw = 0, convt = 0, mm = 0;
    int n_conv = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const st_node *n = &g->nodes[i];
        if (p->nodes[i].kind != ST_PN_EXEC && p->nodes[i].kind != ST_PN_FUSED) continue;
        if (n->domain[0]) continue;
        const st_tinfo *x = val(p, n->in[0]), *w = n->n_in > 1 ? val(p, n->in[1]) : NULL;
        int yv = st_plan_out(p, n, i, 0);
        const st_tinfo *y = val(p, yv);
        if (!x || !w || !y) continue;
        double f = 0;
        if (!strcmp(n->op_type, "Conv")) {
            int64_t group = attr_int(n, "group", 1), kvol = 1;
            for (int d = 2; d < w->rank; d++) kvol *= w->dims[d];
            f = 2.0 * (double)st_numel(y->rank, y->dims) * (double)(x->dims[1] / group) * (double)kvol;
            bool depthwise = group > 1 && group == x->dims[1] && x->dims[1] == w->dims[0];
            if (depthwise) dw += f;
            else conv += f;
            n_conv++;
            if (verbose)
                fprintf(stderr, "conv %-28s x %lldx%lldx%lld k %lldx%lld s %lld g %lld -> %lld x %lldx%lld  %.1f MFLOP\n",
                        n->name, (long long)x->dims[1], (long long)x->dims[2], (long long)(x->rank > 3 ? x->dims[3] : 1),
                        (long long)w->dims[2], (long long)(w->rank > 3 ? w->dims[3] : 1),
                        (long long)(x->dims[2] / (y->dims[2] ? y->dims[2] : 1)), (long long)group, (long long)y->dims[1],
                        (long long)y->dims[2], (long long)(y->rank > 3 ? y->dims[3] : 1), f / 1e6);
        } else if (!strcmp(n->op_type, "ConvTranspose")) {
            int64_t group = attr_int(n, "group", 1), kvol = 1;
            for (int d = 2; d < w->rank; d++) kvol *= w->dims[d];
            f = 2.0 * (double)st_numel(x->rank, x->dims) * (double)(w->dims[1]) * (double)kvol;
            (void)group;
            convt += f;
        } else if (!strcmp(n->op_type, "MatMul")) {
            f = 2.0 * (double)st_numel(y->rank, y->dims) * (double)x->dims[x->rank - 1];
            mm += f;
        } else if (!strcmp(n->op_type, "Gemm")) {
            int64_t k = attr_int(n, "transA", 0) ? x->dims[0] : x->dims[1];
            f = 2.0 * (double)st_numel(y->rank, y->dims) * (double)k;
            mm += f;
        }
    }
    printf("{\"model\": \"%s\", \"gflop\": %.4f, \"conv_gflop\": %.4f, \"depthwise_gflop\": %.4f, "
           "\"convtranspose_gflop\": %.4f, \"matmul_gflop\": %.4f, \"convs\": %d}\n",
           argv[1], (conv + dw + convt + mm) / 1e9, conv / 1e9, dw / 1e9, convt / 1e9, mm / 1e9, n_conv);
    st_plan_free(p);
    st_model_free(m);
    free(rank);
    free(dims);
    free(data);
    return 0;
}
