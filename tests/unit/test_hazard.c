/*
 * test_hazard.c — the hazard DAG and the sanitizer's proof, on real plans.
 *
 * usage: test_hazard [--sample N] [--backend cpu|opencl|cuda] MODEL.onnx...
 *
 * On a GPU backend the plan may be mixed (plan/place.c): the transfers
 * between the device and the host are commands with footprints on both
 * storages, and the checks below cover them like any other command.  Exit
 * status 77 when that backend has no device here.
 *
 * For each model (planned for its declared input shapes, symbolic dims = 1):
 *  1. Independent check of the DAG: for every pair of commands whose true
 *     byte ranges conflict, a brute-force search over the edges finds a
 *     path.  (This is what st_dag_check proves with bitsets; the test does
 *     it the slow, obvious way.)
 *  2. Mutation test: every edge of the transitively reduced DAG joins a
 *     conflicting pair that no other path orders, so deleting it must make
 *     st_dag_check report ST_ERR_HAZARD.  All edges are deleted one at a
 *     time (or a random sample of N when there are more); the score must
 *     be 100%.
 *  3. Host access (rule 4): for every command's write footprint, the
 *     commands a host read of those bytes waits for include that command,
 *     also when the read starts at an offset inside the range, and never
 *     include a command whose footprints do not overlap the bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/dag.h"
#include "graph/model.h"
#include "plan/plan.h"
#include "strata.h"

static int failures;
#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);      \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

const st_plan *st_session_plan(const st_session *s);
const st_dag *st_session_dag(const st_session *s);

static bool conflict(const st_fp *a, const st_fp *b)
{
    return a->cmd != b->cmd && a->storage == b->storage && a->lo < b->hi && b->lo < a->hi && (a->write || b->write);
}

/* Depth-first search over successor edges: is there a path from a to b? */
static bool reaches(const st_dag *d, int a, int b, char *seen)
{
    if (a == b) return true;
    if (seen[a]) return false;
    seen[a] = 1;
    const st_cmd *c = &d->cmds[a];
    for (int k = 0; k < c->n_succ; k++)
        if (d->succs[c->succ_first + k] <= b && reaches(d, d->succs[c->succ_first + k], b, seen)) return true;
    return false;
}

static st_dag *clone(const st_dag *d)
{
    st_dag *c = calloc(1, sizeof *c);
    *c = *d;
    c->cmds = malloc((size_t)d->n_cmds * sizeof *c->cmds + 1);
    memcpy(c->cmds, d->cmds, (size_t)d->n_cmds * sizeof *c->cmds);
    c->preds = malloc((size_t)d->n_edges * sizeof *c->preds + 1);
    memcpy(c->preds, d->preds, (size_t)d->n_edges * sizeof *c->preds);
    c->succs = malloc((size_t)d->n_edges * sizeof *c->succs + 1);
    memcpy(c->succs, d->succs, (size_t)d->n_edges * sizeof *c->succs);
    c->fps = d->fps;           /* shared, read-only */
    c->view_pool = NULL;
    return c;
}

static void free_clone(st_dag *c)
{
    free(c->cmds);
    free(c->preds);
    free(c->succs);
    free(c);
}

static st_backend_kind backend = ST_BACKEND_CPU;

static void test_model(const char *path, int sample)
{
    st_model *m;
    if (st_model_load(path, &m) != ST_OK) {
        fprintf(stderr, "%s\n", st_last_error());
        failures++;
        return;
    }
    st_session *s;
    st_session_options o;
    st_session_options_init(&o);
    o.threads = 1;
    o.backend = backend;
    if (st_session_create(m, &o, &s) != ST_OK) {
        const char *e = st_last_error();
        if (backend != ST_BACKEND_CPU && (strstr(e, "no OpenCL") || strstr(e, "no CUDA") || strstr(e, "not available"))) {
            printf("SKIP: %s\n", e);
            exit(77);
        }
        fprintf(stderr, "%s\n", e);
        failures++;
        st_model_free(m);
        return;
    }
    for (int i = 0; i < st_model_input_count(m); i++) {
        st_value_info info;
        st_model_input_info(m, i, &info);
        int64_t dims[ST_MAX_RANK];
        size_t n = 1;
        for (int d = 0; d < info.rank; d++) {
            /* symbolic dims: batch 1, spatial 64 (a multiple of 32, as detectors need) */
            dims[d] = info.dims[d] >= 0 ? info.dims[d] : d == 0 ? 1 : 64;
            n *= (size_t)dims[d];
        }
        void *data = calloc(n + 1, st_dtype_size(info.dtype));
        CHECK(st_session_set_input_checked(s, info.name, info.dtype, info.rank, dims, data, n * st_dtype_size(info.dtype)) == ST_OK);
        free(data);
    }
    CHECK(st_session_run(s) == ST_OK && st_session_wait(s) == ST_OK);
    const st_plan *p = st_session_plan(s);
    const st_dag *d = p ? st_session_dag(s) : NULL;
    if (!d) {
        failures++;
        st_session_free(s);
        st_model_free(m);
        return;
    }

    /* 1. every conflicting pair has a path (brute force) */
    char *seen = malloc((size_t)d->n_cmds + 1);
    long pairs = 0, unordered = 0;
    for (int i = 0; i < d->n_fps; i++)
        for (int j = 0; j < d->n_fps; j++) {
            const st_fp *a = &d->fps[i], *b = &d->fps[j];
            if (a->cmd >= b->cmd || !conflict(a, b)) continue;
            pairs++;
            memset(seen, 0, (size_t)d->n_cmds);
            if (!reaches(d, a->cmd, b->cmd, seen)) unordered++;
        }
    CHECK(unordered == 0);
    CHECK(st_dag_check(d) == ST_OK);

    /* 2. mutation: delete edges one at a time */
    int total = d->n_edges, tried = 0, caught = 0;
    uint64_t rng = 0x5eed;
    for (int e = 0; e < total; e++) {
        if (sample > 0 && total > sample) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            if ((int)((rng >> 33) % (uint64_t)total) >= sample) continue;
        }
        /* edge e: the k-th predecessor of some command */
        int cmd = 0;
        while (d->cmds[cmd].pred_first + d->cmds[cmd].n_pred <= e) cmd++;
        st_dag *c = clone(d);
        st_dag_remove_edge(c, cmd, e - d->cmds[cmd].pred_first);
        tried++;
        if (st_dag_check(c) == ST_ERR_HAZARD) caught++;
        else fprintf(stderr, "  edge %d -> %d deleted, not caught\n", d->preds[e], cmd);
        free_clone(c);
    }
    CHECK(caught == tried);

    /* 3. host waits by byte range */
    int *cmds = malloc((size_t)d->n_cmds * sizeof *cmds + 1);
    int waits_checked = 0;
    for (int i = 0; i < d->n_fps; i++) {
        const st_fp *f = &d->fps[i];
        if (!f->write) continue;
        const st_storage *st = d->storages[f->storage];
        for (int variant = 0; variant < 2; variant++) {
            int64_t lo = variant ? f->lo + (f->hi - f->lo) / 2 : f->lo, hi = f->hi;
            if (lo >= hi) continue;
            int n = st_dag_overlapping(d, st, lo, hi, false, cmds);
            bool has = false;
            for (int k = 0; k < n; k++) {
                has |= cmds[k] == f->cmd;
                /* every command returned writes some byte of [lo, hi) */
                bool overlaps = false;
                const st_cmd *c = &d->cmds[cmds[k]];
                for (int q = c->fp_first; q < c->fp_first + c->n_fp; q++) {
                    const st_fp *g = &d->fps[q];
                    overlaps |= g->write && d->storages[g->storage] == st && g->lo < hi && lo < g->hi;
                }
                CHECK(overlaps);
            }
            CHECK(has);
            waits_checked++;
        }
    }
    int transfers = 0;
    for (int c = 0; c < d->n_cmds; c++) transfers += d->cmds[c].node < 0;
    printf("%s: %d commands (%d transfers), %d edges (%d before reduction), %ld conflicting footprint pairs all ordered; "
           "mutation: %d of %d deleted edges caught (%.0f%%); %d host-read waits checked\n",
           path, d->n_cmds, transfers, d->n_edges, d->n_edges_found, pairs, caught, tried,
           tried ? 100.0 * caught / tried : 100.0, waits_checked);
    free(cmds);
    free(seen);
    st_session_free(s);
    st_model_free(m);
}

int main(int argc, char **argv)
{
    int sample = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sample") && i + 1 < argc) {
            sample = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            const char *b = argv[++i];
            backend = !strcmp(b, "opencl") ? ST_BACKEND_OPENCL : !strcmp(b, "cuda") ? ST_BACKEND_CUDA : ST_BACKEND_CPU;
            continue;
        }
        test_model(argv[i], sample);
        n++;
    }
    if (!n) {
        fprintf(stderr, "usage: test_hazard [--sample N] MODEL.onnx...\n");
        return 2;
    }
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
