/* common.c — option parsing and input binding shared by the subcommands. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/status.h"
#include "tool.h"

int tool_fail(const char *fmt, ...)
{
    va_list ap;
    tool_progress_clear();
    fputs("strata: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int tool_fail_st(const char *what)
{
    /* out of memory is worded the same whichever call ran out, so a script
     * (and tests/faults/cli_sweep.py) can tell it from a bad model */
    if (st_error_code() == ST_ERR_NOMEM) {
        if (what && *what) return tool_fail("out of memory: %s: %s", what, st_last_error());
        return tool_fail("out of memory: %s", st_last_error());
    }
    if (what && *what) return tool_fail("%s: %s", what, st_last_error());
    return tool_fail("%s", st_last_error());
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') return false;
    *v = x;
    return true;
}

static bool parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || x < 0) return false;
    *v = x;
    return true;
}

/* NAME=FILE, split in place (argv strings are writable); a path that
 * contains '=' but has no name can be given as ./path */
static void split_named(char *arg, tool_named *n)
{
    char *eq = strchr(arg, '='), *slash = strchr(arg, '/');
    if (eq && eq != arg && (!slash || slash > eq)) {
        *eq = 0;
        n->name = arg;
        n->path = eq + 1;
    } else {
        n->name = NULL;
        n->path = arg;
    }
}

st_precision_policy tool_precision_policy = ST_PRECISION_MIXED;

st_status tool_session_create(const st_model *m, const st_session_options *so, st_session **out)
{
    st_status r = st_session_create(m, so, out);
    if (r == ST_OK && (r = st_session_set_precision_policy(*out, tool_precision_policy)) != ST_OK) {
        st_session_free(*out);
        *out = NULL;
    }
    return r;
}

static st_dtype parse_precision(const char *s)
{
    if (!strcmp(s, "f32") || !strcmp(s, "fp32") || !strcmp(s, "float32")) return ST_F32;
    if (!strcmp(s, "f16") || !strcmp(s, "fp16") || !strcmp(s, "float16")) return ST_F16;
    if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) return ST_BF16;
    return ST_UNDEFINED;
}

/* Options of every subcommand; with vision, also those of detect and ocr,
 * and up to max_args positional arguments. */
static int parse_opts(int argc, char **argv, tool_opts *o, int max_args, bool vision)
{
    memset(o, 0, sizeof *o);
    st_session_options_init(&o->so);
    o->runs = 20;
    o->warmup = 3;
    o->out_dir = ".";
    o->atol = 1e-5;
    o->rtol = 1e-5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE() \
    do { \
        if (!v) return tool_fail("%s: option %s needs a value", argv[0], a); \
        i++; \
    } while (0)
        /* only the options the table (options.c) gives this command */
        if (a[0] == '-' && a[1] && tool_option_check(argv[0], a)) return 1;
        if (!strcmp(a, "-i") || !strcmp(a, "--input")) {
            NEED_VALUE();
            if (o->n_inputs == TOOL_MAX_IO) return tool_fail("too many -i options");
            split_named(v, &o->inputs[o->n_inputs++]);
        } else if (!strcmp(a, "-r") || !strcmp(a, "--ref")) {
            NEED_VALUE();
            if (o->n_refs == TOOL_MAX_IO) return tool_fail("too many -r options");
            split_named(v, &o->refs[o->n_refs]);
            if (!o->refs[o->n_refs].name) return tool_fail("-r needs NAME=FILE.npy, got '%s'", v);
            o->n_refs++;
        } else if (!strcmp(a, "--dim")) {
            NEED_VALUE();
            if (o->n_dims == TOOL_MAX_IO) return tool_fail("too many --dim options");
            split_named(v, &o->dims[o->n_dims]);
            if (!o->dims[o->n_dims].name) return tool_fail("--dim needs NAME=VALUE, got '%s'", v);
            o->n_dims++;
        } else if (!strcmp(a, "--ref-dir")) {
            NEED_VALUE();
            o->ref_dir = v;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            NEED_VALUE();
            o->out_dir = v;
            o->out_path = v;
        } else if (vision && (!strcmp(a, "--conf") || !strcmp(a, "--iou"))) {
            double x;
            NEED_VALUE();
            if (!parse_double(v, &x) || x > 1) return tool_fail("%s needs a number from 0 to 1, got '%s'", a, v);
            if (a[2] == 'c') o->conf = x, o->conf_set = true;
            else o->iou = x, o->iou_set = true;
        } else if (vision && !strcmp(a, "--size")) {
            uint64_t n;
            NEED_VALUE();
            if (!parse_u64(v, &n) || n < 32 || n > 8192 || n % 32)
                return tool_fail("--size needs a multiple of 32 from 32 to 8192, got '%s'", v);
            o->size = (int)n;
        } else if (vision && (!strcmp(a, "--det") || !strcmp(a, "--rec") || !strcmp(a, "--cls") || !strcmp(a, "--keys"))) {
            NEED_VALUE();
            if (!strcmp(a, "--det")) o->det = v;
            else if (!strcmp(a, "--rec")) o->rec = v;
            else if (!strcmp(a, "--cls")) o->cls = v;
            else o->keys = v;
        } else if (vision && !strcmp(a, "--no-cls")) {
            o->no_cls = true;
        } else if (!strcmp(a, "--backend")) {
            NEED_VALUE();
            /* the registry's names (backends/registry.c) */
            if (st_backend_find(v, &o->so.backend) != ST_OK) return tool_fail("%s", st_last_error());
        } else if (!strcmp(a, "--threads")) {
            uint64_t n;
            NEED_VALUE();
            if (!parse_u64(v, &n) || n > 1024) return tool_fail("--threads needs a count from 0 to 1024, got '%s'", v);
            o->so.threads = (int)n;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (!parse_u64(v, &o->seed)) return tool_fail("--seed needs a non-negative integer, got '%s'", v);
            o->so.seed = o->seed;
        } else if (!strcmp(a, "--precision")) {
            NEED_VALUE();
            o->so.precision = parse_precision(v);
            if (!o->so.precision) return tool_fail("--precision must be f32, f16 or bf16, got '%s'", v);
        } else if (!strcmp(a, "--precision-policy")) {
            NEED_VALUE();
            if (!strcmp(v, "mixed")) tool_precision_policy = ST_PRECISION_MIXED;
            else if (!strcmp(v, "strict")) tool_precision_policy = ST_PRECISION_STRICT;
            else return tool_fail("--precision-policy must be mixed or strict, got '%s'", v);
        } else if (!strcmp(a, "--sanitize")) {
            o->so.sanitize = 1;
        } else if (!strcmp(a, "--no-fallback")) {
            o->so.no_fallback = 1;
        } else if (!strcmp(a, "--schedule")) {
            NEED_VALUE();
            if (!strcmp(v, "random")) o->so.schedule = ST_SCHEDULE_RANDOM;
            else if (!strcmp(v, "default")) o->so.schedule = ST_SCHEDULE_DEFAULT;
            else return tool_fail("--schedule must be default or random, got '%s'", v);
        } else if (!strcmp(a, "--hazard-mode")) {
            NEED_VALUE();
            if (!strcmp(v, "ranges")) o->so.hazard_mode = ST_HAZARD_RANGES;
            else if (!strcmp(v, "storage")) o->so.hazard_mode = ST_HAZARD_STORAGE;
            else if (!strcmp(v, "base-pointer")) o->so.hazard_mode = ST_HAZARD_BASE_POINTER;
            else if (!strcmp(v, "extents")) o->so.hazard_mode = ST_HAZARD_EXTENTS;
            else return tool_fail("--hazard-mode must be ranges, extents, storage or base-pointer, got '%s'", v);
        } else if (!strcmp(a, "--memory-limit")) {
            NEED_VALUE();
            if (!parse_u64(v, &o->so.memory_limit)) return tool_fail("--memory-limit needs a byte count, got '%s'", v);
        } else if (!strcmp(a, "--device")) {
            uint64_t n;
            NEED_VALUE();
            if (!parse_u64(v, &n) || n > 64) return tool_fail("--device needs an ordinal, got '%s'", v);
            o->so.device = (int)n;
        } else if (!strcmp(a, "--atol")) {
            NEED_VALUE();
            if (!parse_double(v, &o->atol)) return tool_fail("--atol needs a non-negative number, got '%s'", v);
            o->atol_set = true;
        } else if (!strcmp(a, "--rtol")) {
            NEED_VALUE();
            if (!parse_double(v, &o->rtol)) return tool_fail("--rtol needs a non-negative number, got '%s'", v);
            o->rtol_set = true;
        } else if (!strcmp(a, "--scale-tol")) {
            NEED_VALUE();
            if (!parse_double(v, &o->scale_tol)) return tool_fail("--scale-tol needs a non-negative number, got '%s'", v);
            o->scale_set = true;
        } else if (!strcmp(a, "--runs") || !strcmp(a, "--warmup")) {
            uint64_t n;
            NEED_VALUE();
            if (!parse_u64(v, &n) || n > 1000000) return tool_fail("%s needs a count, got '%s'", a, v);
            if (a[2] == 'r') {
                o->runs = (int)n;
                o->runs_set = true;
            }
            else o->warmup = (int)n;
        } else if (!strcmp(a, "--inter-op")) {
            NEED_VALUE();
            if (!strcmp(v, "on")) o->so.serial = 0;
            else if (!strcmp(v, "off")) o->so.serial = 1;
            else return tool_fail("--inter-op must be on or off, got '%s'", v);
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--profile")) {
            NEED_VALUE();
            if (!*v) return tool_fail("%s: --profile needs a file name", argv[0]);
            o->so.profile = v;
        } else if (!strcmp(a, "--dot")) {
            NEED_VALUE();
            if (!*v) return tool_fail("%s: --dot needs a file name", argv[0]);
            o->dot = v;
        } else if (!strcmp(a, "--plan")) {
            o->plan = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (a[0] == '-' && a[1]) {
            /* tool_option_check let it through: the table and this parser disagree */
            return tool_fail("%s: option '%s' is in the option table but not parsed (a bug in strata)", argv[0], a);
        } else if (o->n_args < max_args) {
            o->args[o->n_args++] = a;
            if (!o->model) o->model = a;
        } else if (!vision) {
            return tool_fail("unexpected argument '%s' (the model is '%s')", a, o->model);
        } else {
            return tool_fail("%s: unexpected argument '%s' (strata help %s shows the usage)", argv[0], a, argv[0]);
        }
#undef NEED_VALUE
    }
    if (o->runs < 1) o->runs = 1;
    return 0;
}

int tool_parse(int argc, char **argv, tool_opts *o)
{
    if (parse_opts(argc, argv, o, 1, false)) return 1;
    if (!o->model) return tool_fail("%s: no model given (strata help %s shows the usage)", argv[0], argv[0]);
    return 0;
}

int tool_parse_vision(int argc, char **argv, tool_opts *o, int max_args)
{
    if (max_args > (int)(sizeof o->args / sizeof o->args[0])) max_args = (int)(sizeof o->args / sizeof o->args[0]);
    /* the input is the image: options.c gives these commands no -i, -r or --ref-dir */
    return parse_opts(argc, argv, o, max_args, true);
}

int tool_profile_write(const tool_opts *o, st_session *s)
{
    if (!o->so.profile) return 0;
    return st_session_profile_write(s) == ST_OK ? 0 : tool_fail_st("");
}

void tool_sanitize_name(const char *name, char *out, size_t cap)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[i] = 0;
    /* "." and ".." would name directories */
    if (!strcmp(out, ".") || !strcmp(out, "..") || !out[0]) snprintf(out, cap, "_%s", name[0] ? "" : "output");
}

void tool_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : (uint64_t)1 << 40;
}

/* Random input: floats uniform in [-1, 1), integers in [0, 10), bools. */
static int random_input(const tool_opts *o, const st_value_info *info, uint64_t *rng, st_npy *out)
{
    memset(out, 0, sizeof *out);
    if (info->rank < 0) return tool_fail("input '%s' has no declared shape; give it with -i", info->name);
    out->dtype = info->dtype;
    out->rank = info->rank;
    size_t n = 1;
    for (int d = 0; d < info->rank; d++) {
        int64_t v = info->dims[d];
        if (v < 0) {
            const char *dn = info->dim_names[d];
            v = -1;
            for (int k = 0; k < o->n_dims && dn; k++)
                if (!strcmp(o->dims[k].name, dn)) v = strtoll(o->dims[k].path, NULL, 10);
            if (v < 0) {
                if (!o->quiet)
                    fprintf(stderr, "strata: note: input '%s' dim %d (%s) is symbolic; using 1 (set it with --dim %s=N)\n",
                            info->name, d, dn ? dn : "unnamed", dn ? dn : "NAME");
                v = 1;
            }
        }
        out->dims[d] = v;
        if (v && n > ((size_t)1 << 40) / (size_t)v) return tool_fail("input '%s': shape is too large", info->name);
        n *= (size_t)v;
    }
    size_t es = st_dtype_size(info->dtype);
    /* a declared shape is untrusted: refuse before allocating, not after
     * the kernel has begun to page in gigabytes of random numbers */
    uint64_t limit = o->so.memory_limit ? o->so.memory_limit : machine_memory();
    if ((uint64_t)n * es > limit)
        return tool_fail("input '%s' needs %llu bytes, over the memory limit of %llu bytes", info->name,
                         (unsigned long long)n * es, (unsigned long long)limit);
    out->data = malloc(n * es + 1);
    if (!out->data) return tool_fail("out of memory for input '%s'", info->name);
    out->bytes = n * es;
    for (size_t i = 0; i < n; i++) {
        char *p = (char *)out->data + i * es;
        uint64_t r = rng_next(rng);
        if (st_dtype_is_float(info->dtype)) st_store_f64(info->dtype, p, (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0);
        else if (info->dtype == ST_BOOL) st_store_i64(info->dtype, p, (int64_t)(r & 1));
        else st_store_i64(info->dtype, p, (int64_t)(r % 10));
    }
    return 0;
}

int tool_bind_inputs(const tool_opts *o, const st_model *m, st_session *s)
{
    int n = st_model_input_count(m);
    uint64_t rng = o->seed * 0x2545f4914f6cdd1dull + 1;
    bool used[TOOL_MAX_IO] = {0};
    int positional = 0;
    for (int i = 0; i < n; i++) {
        st_value_info info;
        st_model_input_info(m, i, &info);
        const char *path = NULL;
        for (int k = 0; k < o->n_inputs; k++)
            if (o->inputs[k].name && !strcmp(o->inputs[k].name, info.name)) {
                path = o->inputs[k].path;
                used[k] = true;
            }
        if (!path) {
            /* unnamed -i files fill the inputs in order */
            while (positional < o->n_inputs && o->inputs[positional].name) positional++;
            if (positional < o->n_inputs) {
                path = o->inputs[positional].path;
                used[positional++] = true;
            }
        }
        st_value_kind kind = st_model_input_kind(m, i);
        if (kind == ST_KIND_SEQUENCE || kind == ST_KIND_OPTIONAL_SEQUENCE)
            return tool_fail("input '%s' is %s sequence of tensors; the command line binds tensor inputs only (the C API "
                             "binds sequences: st_session_set_input_sequence)", info.name,
                             kind == ST_KIND_SEQUENCE ? "a" : "an optional");
        if (kind == ST_KIND_OPTIONAL && !path) {
            /* an optional input without data is run empty, not filled with noise */
            if (!o->quiet) fprintf(stderr, "strata: note: optional input '%s' has no -i file; it is left empty\n", info.name);
            if (st_session_set_input_absent(s, info.name) != ST_OK) return tool_fail_st("");
            continue;
        }
        st_npy x;
        if (info.dtype == ST_STRING) {
            /* strings come from a file only: noise is no text an op expects */
            if (!path) return tool_fail("input '%s' holds strings; give it with -i %s=FILE.npy", info.name, info.name);
            if (st_npy_read(path, &x) != ST_OK) return tool_fail_st("");
            if (x.dtype != ST_STRING) {
                st_npy_free(&x);
                return tool_fail("%s: input '%s' holds strings, but the file holds %s", path, info.name,
                                 st_dtype_name(x.dtype));
            }
            st_status r = st_session_set_input_strings(s, info.name, x.rank, x.dims, (const char *const *)x.data,
                                                       x.bytes / sizeof(char *));
            st_npy_free(&x);
            if (r != ST_OK) return tool_fail_st(path);
            continue;
        }
        if (path) {
            if (st_npy_read(path, &x) != ST_OK) return tool_fail_st("");
            if (x.dtype == ST_STRING) {
                st_npy_free(&x);
                return tool_fail("%s: the file holds strings, but input '%s' is %s", path, info.name,
                                 st_dtype_name(info.dtype));
            }
            if (x.dtype != info.dtype && st_dtype_is_float(x.dtype) && st_dtype_is_float(info.dtype) && !o->quiet)
                fprintf(stderr, "strata: note: input '%s': converting %s data from '%s' to the model's %s\n", info.name,
                        st_dtype_name(x.dtype), path, st_dtype_name(info.dtype));
        } else if (random_input(o, &info, &rng, &x)) {
            return 1;
        }
        st_status r = st_session_set_input_checked(s, info.name, x.dtype, x.rank, x.dims, x.data, x.bytes);
        st_npy_free(&x);
        if (r != ST_OK) return tool_fail_st(path ? path : "");
    }
    for (int k = 0; k < o->n_inputs; k++)
        if (!used[k]) {
            if (o->inputs[k].name) return tool_fail("the model has no input named '%s'", o->inputs[k].name);
            return tool_fail("more -i files (%d) than model inputs (%d)", o->n_inputs, n);
        }
    return 0;
}

/* A string output into one block, as io/npy.h lays strings out (the
 * tensor's own strings go with it); frees t. */
static int read_strings(st_tensor *t, const char *name, st_npy *out)
{
    size_t n = (size_t)st_tensor_numel(t), text = 0;
    out->dtype = ST_STRING;
    out->rank = st_tensor_rank(t);
    for (int d = 0; d < out->rank; d++) out->dims[d] = st_tensor_dim(t, d);
    const char **v = malloc(n * sizeof *v + 1);
    if (!v) {
        st_tensor_free(t);
        return tool_fail("out of memory reading output '%s'", name);
    }
    if (st_tensor_read_strings(t, v, n) != ST_OK) {
        free(v);
        st_tensor_free(t);
        return tool_fail_st("");
    }
    for (size_t i = 0; i < n; i++) text += strlen(v[i]) + 1;
    char **block = malloc(n * sizeof *block + text + 1);
    if (!block) {
        free(v);
        st_tensor_free(t);
        return tool_fail("out of memory reading output '%s'", name);
    }
    char *p = (char *)(block + n);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(v[i]) + 1;
        memcpy(p, v[i], l);
        block[i] = p;
        p += l;
    }
    free(v);
    st_tensor_free(t);
    out->data = block;
    out->bytes = n * sizeof *block;
    return 0;
}

bool tool_npy_equal(const st_npy *a, const st_npy *b)
{
    if (a->dtype != b->dtype || a->bytes != b->bytes) return false;
    if (a->dtype != ST_STRING) return !memcmp(a->data, b->data, a->bytes);
    char *const *x = a->data, *const *y = b->data;
    for (size_t i = 0; i < a->bytes / sizeof(char *); i++)
        if (strcmp(x[i], y[i])) return false;
    return true;
}

int tool_read_output(st_session *s, const char *name, st_npy *out)
{
    st_tensor *t;
    memset(out, 0, sizeof *out);
    if (st_session_output(s, name, &t) != ST_OK) {
        if (st_error_code() == ST_ERR_NOMEM) return tool_fail_st("");
        char why[1024];
        snprintf(why, sizeof why, "%s", st_last_error());
        int len, present;
        if (st_session_output_length(s, name, &len) == ST_OK)
            return tool_fail("output '%s' is a sequence of %d tensors; the command line writes and compares tensor outputs "
                             "only (the C API reads sequences: st_session_output_element)", name, len);
        if (st_session_output_present(s, name, &present) == ST_OK && !present)
            return tool_fail("output '%s' is an optional that holds no value in this run; there is nothing to write",
                             name);
        return tool_fail("%s", why);
    }
    st_dtype dt = st_tensor_dtype(t);
    if (dt == ST_STRING) return read_strings(t, name, out);
    /* bf16 has no .npy type: it is written (and compared) as f32 */
    if (dt == ST_BF16) dt = ST_F32;
    out->dtype = dt;
    out->rank = st_tensor_rank(t);
    for (int d = 0; d < out->rank; d++) out->dims[d] = st_tensor_dim(t, d);
    out->bytes = (size_t)st_tensor_numel(t) * st_dtype_size(dt);
    out->data = malloc(out->bytes + 1);
    if (!out->data) {
        st_tensor_free(t);
        return tool_fail("out of memory reading output '%s'", name);
    }
    st_status r = st_tensor_read(t, dt, out->data, out->bytes);
    st_tensor_free(t);
    if (r != ST_OK) {
        st_npy_free(out);
        return tool_fail_st("");
    }
    return 0;
}

int tool_infer_f32(const st_model *m, st_session *s, const char *what, int rank, const int64_t *dims, const float *data,
                   size_t bytes, st_npy *out)
{
    st_value_info in, res;
    memset(out, 0, sizeof *out);
    if (st_model_input_info(m, 0, &in) != ST_OK || st_model_output_info(m, 0, &res) != ST_OK) return tool_fail_st(what);
    if (st_session_set_input_checked(s, in.name, ST_F32, rank, dims, data, bytes) != ST_OK || st_session_run(s) != ST_OK ||
        st_session_wait(s) != ST_OK)
        return tool_fail_st(what);
    st_tensor *t;
    if (st_session_output(s, res.name, &t) != ST_OK) return tool_fail_st(what);
    out->dtype = ST_F32;
    out->rank = st_tensor_rank(t);
    for (int d = 0; d < out->rank; d++) out->dims[d] = st_tensor_dim(t, d);
    out->bytes = (size_t)st_tensor_numel(t) * sizeof(float);
    out->data = malloc(out->bytes + 1);
    if (!out->data) {
        st_tensor_free(t);
        return tool_fail("out of memory: %s: reading output '%s'", what, res.name);
    }
    st_status r = st_tensor_read(t, ST_F32, out->data, out->bytes);
    st_tensor_free(t);
    if (r != ST_OK) {
        st_npy_free(out);
        return tool_fail_st(what);
    }
    return 0;
}
