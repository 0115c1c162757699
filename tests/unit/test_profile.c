/*
 * test_profile.c — the trace writer (src/runtime/profile.c) on a DAG and
 * timings made up to reach what real runs here rarely do: commands that
 * overlap on one OpenCL queue (an out-of-order queue; PoCL runs them one
 * at a time), node names that need escaping or are not UTF-8, a failed
 * run, and a path whose directory went away before the write.
 *
 *   test_profile OUT.json     writes the trace there (profile_test.py
 *                             synthetic checks it as JSON)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/storage.h"
#include "runtime/dag.h"
#include "runtime/profile.h"
#include "graph/graph.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_profile OUT.json\n");
        return 2;
    }
    /* four commands: c0 -> c2 (RAW on the arena), c1 -> c3 (RAW, c3 on the host) */
    static st_op_def conv = {.name = "Conv"}, add = {.name = "Add"}, mul = {.name = "Mul"}, topk = {.name = "TopK"};
    char n0[] = "conv \"a\"\\b", n1[] = "bad\xff\xfe utf8 \xc3\xa9", n2[] = "tab\there", n3[] = "host";
    st_node nodes[4] = {{.name = n0}, {.name = n1}, {.name = n2}, {.name = n3}};
    st_storage arena = {.size = 1024};
    snprintf(arena.label, sizeof arena.label, "arena");
    st_storage *storages[1] = {&arena};
    st_fp fps[] = {
        {0, 0, 1, true, 0, 100},    /* c0 writes [0, 100) */
        {1, 0, 1, true, 100, 200},  /* c1 writes [100, 200) */
        {2, 0, 0, false, 0, 100},   /* c2 reads c0's */
        {3, 0, 0, false, 100, 200}, /* c3 reads c1's */
    };
    int preds[] = {0, 1}, succs[] = {2, 3};
    st_cmd cmds[4] = {
        {.gnode = &nodes[0], .op = &conv, .fp_first = 0, .n_fp = 1, .succ_first = 0, .n_succ = 1},
        {.gnode = &nodes[1], .op = &add, .fp_first = 1, .n_fp = 1, .succ_first = 1, .n_succ = 1},
        {.gnode = &nodes[2], .op = &mul, .fp_first = 2, .n_fp = 1, .pred_first = 0, .n_pred = 1},
        {.gnode = &nodes[3], .op = &topk, .device = ST_DEV_HOST, .fp_first = 3, .n_fp = 1, .pred_first = 1, .n_pred = 1},
    };
    for (int c = 0; c < 4; c++) cmds[c].run = (st_kernel_fn)1; /* not a transfer; never called */
    st_dag d = {.n_cmds = 4, .cmds = cmds, .n_fps = 4, .fps = fps, .n_edges = 2, .preds = preds, .succs = succs,
                .n_storages = 1, .storages = storages};

    /* a path whose directory is not there is refused at once */
    st_profile *p = NULL;
    CHECK(st_profile_create("/nonexistent-dir/t.json", "opencl", &p) == ST_ERR_IO && !p);
    CHECK(st_profile_create("", "opencl", &p) == ST_ERR_IO && !p);
    if (st_profile_create(argv[1], "opencl", &p) != ST_OK) {
        fprintf(stderr, "test_profile: %s\n", st_last_error());
        return 1;
    }
    /* run 0: c0 and c1 overlap on the queue, c2 overlaps c1 only */
    st_profile_run_begin(p);
    int64_t t = st_prof_now();
    st_prof_run *r;
    CHECK(st_profile_stage(p, &d, &r) == ST_OK);
    int q = ST_PROF_LANE(ST_LANE_QUEUE, 0);
    st_prof_mark(r, 0, t + 1000, t + 100000, q);
    st_prof_mark(r, 1, t + 50000, t + 150000, q);
    st_prof_mark(r, 2, t + 120000, t + 200000, q);
    st_prof_mark(r, 3, t + 210000, t + 210000, ST_PROF_LANE(ST_LANE_HOST, 0)); /* dur 0: becomes 1 ns */
    st_profile_span(p, "submit", t, t + 900);
    st_profile_run_end(p, NULL, true);
    /* run 1 fails: left out */
    st_profile_run_begin(p);
    CHECK(st_profile_stage(p, &d, &r) == ST_OK);
    st_prof_mark(r, 0, st_prof_now(), st_prof_now() + 10, q);
    st_profile_run_failed(p);
    st_profile_run_end(p, NULL, true);
    CHECK(st_profile_write(p) == ST_OK);
    st_profile_free(p);

    char *s = slurp(argv[1]);
    CHECK(s != NULL);
    if (s) {
        CHECK(strstr(s, "\"opencl queue 0 (overlap 1)\"") != NULL);   /* c1 moved off c0's thread */
        CHECK(strstr(s, "\"opencl queue 0 (overlap 2)\"") == NULL);   /* c2 fits back on the first */
        CHECK(strstr(s, "conv \\\"a\\\"\\\\b") != NULL);              /* quotes and backslashes escaped */
        CHECK(strstr(s, "bad\\ufffd\\ufffd utf8 \xc3\xa9") != NULL);  /* bad bytes replaced, good UTF-8 kept */
        CHECK(strstr(s, "tab\\u0009here") != NULL);
        CHECK(strstr(s, "\"runs_count\":1,") != NULL);                /* the failed run left out */
        CHECK(strstr(s, "\"waited_for\":\"bad\\ufffd\\ufffd utf8 \xc3\xa9\",\"waited_for_command\":1,\"edge\":\"RAW\"") != NULL);
    }
    free(s);

    /* the directory goes away before the write: an error naming the path,
     * no file, and the runs kept for a write that works */
    char dir[] = "/tmp/strata_profile_XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.json", dir);
    CHECK(st_profile_create(path, "cpu", &p) == ST_OK);
    if (p) {
        st_profile_run_begin(p);
        CHECK(st_profile_stage(p, &d, &r) == ST_OK);
        t = st_prof_now();
        for (int c = 0; c < 4; c++) st_prof_mark(r, c, t + 10 * c, t + 10 * c + 5, ST_PROF_LANE(ST_LANE_WORKER, c % 2));
        st_profile_run_end(p, NULL, true);
        CHECK(rmdir(dir) == 0);
        CHECK(st_profile_write(p) == ST_ERR_IO && strstr(st_last_error(), path));
        CHECK(access(path, F_OK) != 0);
        CHECK(mkdir(dir, 0700) == 0);
        CHECK(st_profile_write(p) == ST_OK);
        s = slurp(path);
        CHECK(s && strstr(s, "\"runs_count\":1,") && strstr(s, "\"cpu worker 1\""));
        free(s);
        unlink(path);
        rmdir(dir);
        st_profile_free(p);
    }
    return check_exit("test_profile");
}
