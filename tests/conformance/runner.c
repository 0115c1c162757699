/*
 * runner.c — the ONNX backend-test conformance runner.
 *
 * Runs every case of one test set.  Debian's libonnx-testdata installs
 * four with test data under /usr/share/libonnx-testdata/data: node (932
 * one-op cases), pytorch-converted (82 PyTorch modules), pytorch-operator
 * (35 PyTorch functions) and simple (23 small graphs); `--set NAME` picks
 * one there (the fifth, real, has models without their data).  Every set
 * stores a case the same way: model.onnx and test_data_set_N/input_K.pb,
 * output_K.pb.  The runner loads the model, feeds the inputs in order, and
 * compares every output with the reference the way ONNX's own backend
 * tests do (|got - want| <= atol + rtol * |want|, rtol 1e-3, atol 1e-7;
 * exact for integers and bools; NaN matches NaN).  A sequence or optional
 * input or output (values.h) is bound and compared element by element: a
 * sequence's length and each element, an optional's presence and then
 * what it holds.
 *
 * Each case runs in a child process with a time limit, so a crash or a
 * hang is a FAIL line, not the end of the run.  A case is UNSUPPORTED when
 * strata refuses it with ST_ERR_UNSUPPORTED (an op, dtype or attribute it
 * does not implement), and FAIL otherwise.  On a GPU backend a passing
 * case counts as passing natively, or with CPU fallback when its plan ran
 * some node on the CPU (plan/place.c); --no-fallback makes such a case
 * UNSUPPORTED instead, and a case on the --native list that runs must pass
 * without fallback (the backend's own kernels must not regress).  A kernel that refuses at run time a node its
 * table's accepts took fails (ST_ERR_INTERNAL), whatever the backend.
 *
 * usage: conformance [--set NAME | --data DIR] [--must-pass FILE|DIR] [--filter TEXT]
 *                    [--list FILE] [--backend NAME] [--sanitize] [--no-fallback]
 *                    [--native FILE|DIR]
 *                    [--precision-note] [-v]
 * Exit status: 1 when a case on the must-pass list does not pass.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/file.h"
#include "graph/model.h"
#include "onnx/loader.h"
#include "plan/plan.h"
#include "strata.h"
#include "values.h"

#define CASE_SECONDS 60
#define TEST_DATA_ROOT "/usr/share/libonnx-testdata/data"

enum { R_PASS = 0, R_FAIL = 1, R_UNSUPPORTED = 2, R_PASS_FALLBACK = 3 };
static const char *RNAME[] = {"PASS", "FAIL", "UNSUPPORTED", "PASS"};

const st_plan *st_session_plan(const st_session *s);
struct st_dag;
bool st_session_stage(const st_session *s, int k, const st_plan **plan, const struct st_dag **dag);

typedef struct opts {
    const char *data, *must_pass, *filter, *list, *native;
    st_session_options so;
    bool verbose;
} opts;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Files named prefix_<k>.pb in dir, sorted by k, each read as kind(m, k)
 * says (a tensor, a sequence or an optional, values.h). */
static int load_pbs(const char *dir, const char *prefix, const st_model *m,
                    st_value_kind (*kind)(const st_model *, int), tvalue *out, int max, char *msg, size_t cap)
{
    int n = 0;
    for (; n < max; n++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
        struct stat sb;
        if (stat(path, &sb) != 0) break;
        int r = tvalue_load(path, kind(m, n), &out[n], msg, cap);
        if (r) return r;
    }
    return n;
}

static bool close_enough(st_dtype t, const void *got, const void *want, size_t i, double *err)
{
    size_t es = st_dtype_size(t);
    if (st_dtype_is_float(t)) {
        double g = st_load_f64(t, (const char *)got + i * es), w = st_load_f64(t, (const char *)want + i * es);
        if (isnan(w)) return isnan(g);
        if (isinf(w)) return g == w;
        double d = fabs(g - w);
        if (d > *err) *err = d;
        return d <= 1e-7 + 1e-3 * fabs(w);
    }
    return memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0;
}

/* A string output, element by element (exact, as ONNX's tests compare
 * them); false with the first difference in msg. */
static bool strings_match(const st_tensor *t, const char *what, const st_const *want, char *msg, size_t cap)
{
    size_t n = (size_t)st_const_numel(want), bad = 0, first = 0;
    const char **got = calloc(n + 1, sizeof *got);
    if (!got || st_tensor_read_strings(t, got, n) != ST_OK) {
        snprintf(msg, cap, "reading %s: %s", what, got ? st_last_error() : "out of memory");
        free(got);
        return false;
    }
    const char *const *w = want->data;
    for (size_t i = 0; i < n; i++)
        if (strcmp(got[i], w[i]) != 0 && !bad++) first = i;
    if (bad)
        snprintf(msg, cap, "output %s: %zu of %zu strings differ; first at %zu: got \"%.60s\" want \"%.60s\"", what, bad, n,
                 first, got[first], w[first]);
    free(got);
    return bad == 0;
}

/* Compares output tensor t (named what) with want; writes why not into
 * msg.  Frees t. */
static int compare(const char *what, st_tensor *t, st_const *want, char *msg, size_t cap)
{
    if (st_tensor_dtype(t) == ST_BF16 && want->dtype == ST_U16) want->dtype = ST_BF16;
    bool shape_ok = st_tensor_rank(t) == want->rank;
    for (int d = 0; d < want->rank && shape_ok; d++) shape_ok = st_tensor_dim(t, d) == want->dims[d];
    if (!shape_ok || st_tensor_dtype(t) != want->dtype) {
        char a[128] = "", b[128] = "";
        for (int d = 0; d < st_tensor_rank(t); d++) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "," : "", (long long)st_tensor_dim(t, d));
        for (int d = 0; d < want->rank; d++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? "," : "", (long long)want->dims[d]);
        snprintf(msg, cap, "output %s: got %s [%s], want %s [%s]", what, st_dtype_name(st_tensor_dtype(t)), a,
                 st_dtype_name(want->dtype), b);
        st_tensor_free(t);
        return R_FAIL;
    }
    if (want->dtype == ST_STRING) {
        bool ok = strings_match(t, what, want, msg, cap);
        st_tensor_free(t);
        return ok ? R_PASS : R_FAIL;
    }
    void *got = malloc(want->bytes + 1);
    /* poison, so an output that is never written cannot pass */
    if (got) memset(got, 0xa5, want->bytes + 1);
    st_status s = got ? st_tensor_read(t, want->dtype, got, want->bytes) : ST_ERR_NOMEM;
    st_tensor_free(t);
    if (s != ST_OK) {
        snprintf(msg, cap, "reading %s: %s", what, st_last_error());
        free(got);
        return R_FAIL;
    }
    size_t n = want->bytes / st_dtype_size(want->dtype), bad = 0, first = 0;
    double err = 0;
    for (size_t i = 0; i < n; i++)
        if (!close_enough(want->dtype, got, want->data, i, &err)) {
            if (!bad) first = i;
            bad++;
        }
    if (bad)
        snprintf(msg, cap, "output %s: %zu of %zu elements differ (max abs err %.3g); first at %zu: got %.7g want %.7g",
                 what, bad, n, err, first, st_load_f64(want->dtype, (char *)got + first * st_dtype_size(want->dtype)),
                 st_load_f64(want->dtype, (char *)want->data + first * st_dtype_size(want->dtype)));
    free(got);
    return bad ? R_FAIL : R_PASS;
}

/* Binds input value in (a tensor, a sequence or an optional) by name. */
static st_status bind(st_session *sess, const st_value_info *info, tvalue *in)
{
    for (int k = 0; k < in->n; k++) /* NumPy has no bfloat16: the test data stores its bits as uint16 */
        if (info->dtype == ST_BF16 && in->t[k]->dtype == ST_U16) in->t[k]->dtype = ST_BF16;
    if (!in->present) return st_session_set_input_absent(sess, info->name);
    if (in->kind == ST_KIND_TENSOR || in->kind == ST_KIND_OPTIONAL) {
        const st_const *c = in->t[0];
        if (c->dtype == ST_STRING)
            return st_session_set_input_strings(sess, info->name, c->rank, c->dims, (const char *const *)c->data,
                                                (size_t)st_const_numel(c));
        return st_session_set_input_checked(sess, info->name, c->dtype, c->rank, c->dims, c->data, c->bytes);
    }
    ST_TRY(st_session_set_input_sequence(sess, info->name, in->n));
    for (int k = 0; k < in->n; k++) {
        const st_const *c = in->t[k];
        ST_TRY(st_session_set_input_element(sess, info->name, k, c->dtype, c->rank, c->dims, c->data, c->bytes));
    }
    return ST_OK;
}

/* Compares output info->name with want, a tensor, a sequence (element by
 * element) or an optional (present or not, then what it holds). */
static int check_output(st_session *sess, const st_value_info *info, const tvalue *want, char *msg, size_t cap)
{
    char what[300];
    snprintf(what, sizeof what, "'%s'", info->name);
    st_status s = ST_OK;
    if (want->kind == ST_KIND_OPTIONAL || want->kind == ST_KIND_OPTIONAL_SEQUENCE) {
        int present = -1;
        s = st_session_output_present(sess, info->name, &present);
        if (s == ST_OK && present != want->present) {
            snprintf(msg, cap, "output %s: %s, want %s", what, present ? "holds a value" : "empty",
                     want->present ? "a value" : "empty");
            return R_FAIL;
        }
        if (s == ST_OK && !want->present) return R_PASS;
    }
    st_tensor *t = NULL;
    if (s == ST_OK && (want->kind == ST_KIND_TENSOR || want->kind == ST_KIND_OPTIONAL)) {
        s = st_session_output(sess, info->name, &t);
        if (s == ST_OK) return compare(what, t, want->t[0], msg, cap);
    }
    int len = -1;
    if (s == ST_OK) s = st_session_output_length(sess, info->name, &len);
    if (s == ST_OK && len != want->n) {
        snprintf(msg, cap, "output %s: a sequence of %d tensors, want %d", what, len, want->n);
        return R_FAIL;
    }
    for (int k = 0; k < len && s == ST_OK; k++) {
        s = st_session_output_element(sess, info->name, k, &t);
        if (s != ST_OK) break;
        snprintf(what, sizeof what, "'%s'[%d]", info->name, k);
        int r = compare(what, t, want->t[k], msg, cap);
        if (r != R_PASS) return r;
    }
    if (s != ST_OK) {
        snprintf(msg, cap, "%s", st_last_error());
        return R_FAIL;
    }
    return R_PASS;
}

/* Runs one case; writes a one-line reason into msg. */
static int run_case(const opts *o, const char *dir, char *msg, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    st_model *m;
    st_status s = st_model_load(path, &m);
    if (s != ST_OK) {
        snprintf(msg, cap, "%s", st_last_error());
        return s == ST_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
    }
    st_session *sess;
    s = st_session_create(m, &o->so, &sess);
    if (s != ST_OK) {
        snprintf(msg, cap, "%s", st_last_error());
        st_model_free(m);
        return s == ST_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
    }
    int result = R_PASS;
    int nsets = 0;
    for (int set = 0; set < 64 && result == R_PASS; set++) {
        char sdir[4096];
        snprintf(sdir, sizeof sdir, "%s/test_data_set_%d", dir, set);
        struct stat sb;
        if (stat(sdir, &sb) != 0) break;
        nsets++;
        tvalue ins[64] = {0}, outs[64] = {0};
        int ni = load_pbs(sdir, "input", m, st_model_input_kind, ins, 64, msg, cap);
        int no = ni >= 0 ? load_pbs(sdir, "output", m, st_model_output_kind, outs, 64, msg, cap) : 0;
        if (ni < 0 || no < 0) {
            result = (ni == -2 || no == -2) ? R_UNSUPPORTED : R_FAIL;
        } else if (ni != st_model_input_count(m)) {
            snprintf(msg, cap, "%d input files for %d model inputs", ni, st_model_input_count(m));
            result = R_FAIL;
        }
        for (int k = 0; k < ni && result == R_PASS; k++) {
            st_value_info info;
            st_model_input_info(m, k, &info);
            s = bind(sess, &info, &ins[k]);
            if (s != ST_OK) {
                snprintf(msg, cap, "%s", st_last_error());
                result = s == ST_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
            }
        }
        if (result == R_PASS) {
            s = st_session_run(sess);
            if (s == ST_OK) s = st_session_wait(sess);
            if (s != ST_OK) {
                snprintf(msg, cap, "%s", st_last_error());
                result = s == ST_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
            }
        }
        if (result == R_PASS && no != st_model_output_count(m)) {
            snprintf(msg, cap, "%d reference outputs for %d model outputs", no, st_model_output_count(m));
            result = R_FAIL;
        }
        for (int k = 0; k < no && result == R_PASS; k++) {
            st_value_info info;
            st_model_output_info(m, k, &info);
            result = check_output(sess, &info, &outs[k], msg, cap);
        }
        for (int k = 0; k < 64; k++) {
            tvalue_free(&ins[k]);
            tvalue_free(&outs[k]);
        }
    }
    if (result == R_PASS && nsets == 0) {
        snprintf(msg, cap, "no test data sets");
        result = R_FAIL;
    }
    /* every stage of a staged plan (plan/stage.c) */
    const st_plan *p;
    const struct st_dag *dag;
    for (int k = 0; result == R_PASS && st_session_stage(sess, k, &p, &dag); k++)
        for (int i = 0; i < p->n_nodes; i++)
            if (p->nodes[i].kind == ST_PN_EXEC && p->nodes[i].device == ST_DEV_HOST) {
                snprintf(msg, cap, "node '%s' (%s) ran on the CPU", p->g->nodes[i].name, p->g->nodes[i].op_type);
                result = R_PASS_FALLBACK;
                break;
            }
    st_session_free(sess);
    st_model_free(m);
    return result;
}

/* The op a case tests: the node whose op_type the case name mentions
 * (node tests have one node, or a function's expansion), else the first. */
static void case_op(const char *dir, const char *name, char *op, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    snprintf(op, cap, "?");
    st_model *m;
    if (st_model_load(path, &m) != ST_OK) return;
    char lname[256];
    size_t j = 0;
    for (size_t i = 5; name[i] && j + 1 < sizeof lname; i++)
        if (name[i] != '_') lname[j++] = (char)tolower((unsigned char)name[i]);
    lname[j] = 0;
    size_t best = 0;
    for (int i = 0; i < m->g->n_nodes; i++) {
        char lop[128];
        size_t k = 0;
        for (const char *p = m->g->nodes[i].op_type; *p && k + 1 < sizeof lop; p++) lop[k++] = (char)tolower((unsigned char)*p);
        lop[k] = 0;
        if (strncmp(lname, lop, k) == 0 && k > best) {
            best = k;
            snprintf(op, cap, "%s", m->g->nodes[i].op_type);
        }
    }
    if (!best && m->g->n_nodes) snprintf(op, cap, "%s", m->g->nodes[0].op_type);
    st_model_free(m);
}

typedef struct op_stat {
    char op[64];
    int n[3];
} op_stat;

/* Case names from a file, or from every *.txt file of a directory (one per
 * line, # comments).  Returns nonzero after printing the error. */
static int load_names(const char *path, char ***out, int *count)
{
    char **must = NULL;
    int nm = 0, capm = 0;
    char *files[256];
    int nf = 0;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) && nf < 256) {
            size_t l = strlen(e->d_name);
            if (l > 4 && !strcmp(e->d_name + l - 4, ".txt")) {
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                files[nf++] = strdup(p);
            }
        }
        if (d) closedir(d);
    } else {
        files[nf++] = strdup(path);
    }
    for (int fi = 0; fi < nf; fi++) {
        FILE *f = fopen(files[fi], "r");
        if (!f) {
            fprintf(stderr, "conformance: cannot open '%s': %s\n", files[fi], strerror(errno));
            return 2;
        }
        char line[512];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, " \t\r\n#")] = 0;
            if (!line[0]) continue;
            if (nm == capm) must = realloc(must, (size_t)(capm = capm ? capm * 2 : 256) * sizeof *must);
            must[nm++] = strdup(line);
        }
        fclose(f);
        free(files[fi]);
    }
    *out = must;
    *count = nm;
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {0};
    o.data = TEST_DATA_ROOT "/node";
    char set_dir[4096];
    st_session_options_init(&o.so);
    o.so.threads = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--data") && v) o.data = argv[++i];
        else if (!strcmp(a, "--set") && v) {
            snprintf(set_dir, sizeof set_dir, "%s/%s", TEST_DATA_ROOT, argv[++i]);
            o.data = set_dir;
        }
        else if (!strcmp(a, "--must-pass") && v) o.must_pass = argv[++i];
        else if (!strcmp(a, "--filter") && v) o.filter = argv[++i];
        else if (!strcmp(a, "--list") && v) o.list = argv[++i];
        else if (!strcmp(a, "--sanitize")) o.so.sanitize = 1;
        else if (!strcmp(a, "--no-fallback")) o.so.no_fallback = 1;
        else if (!strcmp(a, "--native") && v) o.native = argv[++i];
        else if (!strcmp(a, "--backend") && v) {
            i++;
            if (st_backend_find(v, &o.so.backend) != ST_OK) {
                fprintf(stderr, "conformance: %s\n", st_last_error());
                return 2;
            }
        } else if (!strcmp(a, "-v")) o.verbose = true;
        else {
            fprintf(stderr, "conformance: unknown option '%s'\n", a);
            return 2;
        }
    }
    /* the cases to run: a --list file, or every directory */
    char **names = NULL;
    int n = 0, cap = 0;
    if (o.list) {
        FILE *f = fopen(o.list, "r");
        if (!f) {
            fprintf(stderr, "conformance: cannot open '%s': %s\n", o.list, strerror(errno));
            return 2;
        }
        char line[512];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, " \t\r\n#")] = 0;
            if (!line[0]) continue;
            if (n == cap) names = realloc(names, (size_t)(cap = cap ? cap * 2 : 256) * sizeof *names);
            names[n++] = strdup(line);
        }
        fclose(f);
    } else {
        DIR *d = opendir(o.data);
        if (!d) {
            fprintf(stderr, "conformance: cannot open '%s': %s\n", o.data, strerror(errno));
            return 2;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "test_", 5)) continue;
            if (n == cap) names = realloc(names, (size_t)(cap = cap ? cap * 2 : 1024) * sizeof *names);
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
    }
    qsort(names, (size_t)n, sizeof *names, cmp_str);

    char **must = NULL, **native = NULL;
    int nm = 0, nn = 0;
    if (o.must_pass && load_names(o.must_pass, &must, &nm)) return 2;
    if (o.native && load_names(o.native, &native, &nn)) return 2;

    op_stat *ops = calloc((size_t)n + 1, sizeof *ops);
    int nops = 0, total[4] = {0}, must_failed = 0;
    int *res = calloc((size_t)n + 1, sizeof *res);
    bool *fell_back = calloc((size_t)n + 1, sizeof *fell_back);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 0; i < n; i++) {
        if (o.filter && !strstr(names[i], o.filter)) {
            res[i] = -1;
            continue;
        }
        char dir[4096], op[64], msg[1024] = "";
        snprintf(dir, sizeof dir, "%s/%s", o.data, names[i]);
        case_op(dir, names[i], op, sizeof op);
        int pipefd[2];
        if (pipe(pipefd) != 0) return 2;
        pid_t pid = fork();
        if (pid == 0) {
            close(pipefd[0]);
            alarm(CASE_SECONDS);
            int r = run_case(&o, dir, msg, sizeof msg);
            if (write(pipefd[1], msg, strlen(msg)) < 0) r = R_FAIL;
            _exit(r);
        }
        close(pipefd[1]);
        ssize_t got = read(pipefd[0], msg, sizeof msg - 1);
        msg[got > 0 ? got : 0] = 0;
        close(pipefd[0]);
        int status = 0, r;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) <= R_PASS_FALLBACK) r = WEXITSTATUS(status);
        else {
            r = R_FAIL;
            if (WIFSIGNALED(status))
                snprintf(msg, sizeof msg, "%s (signal %d)", WTERMSIG(status) == SIGALRM ? "timed out" : "crashed", WTERMSIG(status));
            else snprintf(msg, sizeof msg, "exited with status %d", WEXITSTATUS(status));
        }
        total[r]++;
        bool fallback = r == R_PASS_FALLBACK;
        if (fallback) r = R_PASS;
        res[i] = r;
        fell_back[i] = fallback;
        int k = 0;
        while (k < nops && strcmp(ops[k].op, op)) k++;
        if (k == nops) snprintf(ops[nops++].op, sizeof ops[k].op, "%s", op);
        ops[k].n[r]++;
        if (o.verbose || r != R_PASS) printf("%-11s %s (%s)%s%s\n", RNAME[r], names[i], op, msg[0] ? ": " : "", msg);
    }
    printf("\nper op (pass/fail/unsupported):\n");
    for (int k = 0; k < nops; k++)
        printf("  %-28s %3d %3d %3d\n", ops[k].op, ops[k].n[R_PASS], ops[k].n[R_FAIL], ops[k].n[R_UNSUPPORTED]);
    for (int j = 0; j < nm; j++) {
        int i = 0;
        while (i < n && strcmp(names[i], must[j])) i++;
        if (i == n) {
            printf("MUST-PASS   %s: not found in %s\n", must[j], o.data);
            must_failed++;
        } else if (res[i] != R_PASS && res[i] != -1) {
            printf("MUST-PASS   %s: %s\n", must[j], RNAME[res[i]]);
            must_failed++;
        }
    }
    int native_failed = 0;
    for (int j = 0; j < nn; j++) {
        int i = 0;
        while (i < n && strcmp(names[i], native[j])) i++;
        if (i < n && res[i] != -1 && (res[i] != R_PASS || fell_back[i])) {
            printf("NATIVE      %s: %s\n", native[j], res[i] == R_PASS ? "passed only with CPU fallback" : RNAME[res[i]]);
            native_failed++;
        }
    }
    must_failed += native_failed;
    int ran = total[0] + total[1] + total[2] + total[3];
    const char *set = strrchr(o.data, '/');
    set = set && set[1] ? set + 1 : o.data;
    printf("\nconformance (%s): %d passed, %d failed, %d unsupported of %d cases", set,
           total[R_PASS] + total[R_PASS_FALLBACK], total[R_FAIL], total[R_UNSUPPORTED], ran);
    if (o.so.backend != ST_BACKEND_CPU)
        printf(" (%d passed natively, %d with CPU fallback)", total[R_PASS], total[R_PASS_FALLBACK]);
    if (nm) printf("; must-pass list: %d of %d pass", nm - (must_failed - native_failed), nm);
    if (nn) printf("; native list: %d not native", native_failed);
    printf("\n");
    for (int i = 0; i < n; i++) free(names[i]);
    for (int j = 0; j < nm; j++) free(must[j]);
    for (int j = 0; j < nn; j++) free(native[j]);
    free(names);
    free(must);
    free(native);
    free(fell_back);
    free(ops);
    free(res);
    return must_failed ? 1 : 0;
}
