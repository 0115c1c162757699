/*
 * cmd_quantize.c — `strata quantize MODEL -o OUT.onnx`: static QDQ
 * quantization (the scheme: quantize.h; the model side: qdq_rewrite.c).
 *
 * Calibration runs the float model on the inputs of --calib DIR (.npy
 * files: each one sample of a one-input model, or for several inputs
 * files named after them, INPUT*.npy, taken in name order), or on random
 * inputs with a warning, and records each candidate tensor's range: its
 * min and max (minmax), or the 0.001% and 99.999% points of a histogram
 * over that range, a second pass (percentile).  Then it writes the QDQ
 * model, runs it and the float model on the same inputs, and prints the
 * accuracy: per output, the max and mean absolute error; for a YOLO
 * model, how many of the float model's boxes (conf 0.25, class-aware NMS
 * at IoU 0.45) the quantized one finds again (same class, IoU >= 0.5).
 * OUT is written only when all of that succeeded (a temporary file,
 * renamed), so a failure leaves no partial file.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "quantize.h"
#include "core/status.h"
#include "tool.h"
#include "vision/nms.h"
#include "vision/yolo_decode.h"

#define RANDOM_SAMPLES 8
#define PCT 0.99999

typedef struct sample {
    st_npy in[TOOL_MAX_IO];
} sample;

typedef struct qargs {
    const char *model, *out, *calib, *method;
    bool per_channel;
    int threads;
    uint64_t seed;
    tool_named dims[TOOL_MAX_IO];
    int n_dims;
} qargs;

static int parse(int argc, char **argv, qargs *a)
{
    memset(a, 0, sizeof *a);
    a->method = "minmax";
    a->threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] != '-' || !s[1]) {
            if (a->model) return tool_fail("quantize: more than one MODEL ('%s' and '%s')", a->model, s);
            a->model = s;
            continue;
        }
        if (tool_option_check("quantize", s)) return 1;
        bool flag = !strcmp(s, "--per-channel");
        if (!flag && i + 1 >= argc) return tool_fail("quantize: %s needs a value", s);
        const char *v = flag ? NULL : argv[++i];
        char *end = NULL;
        if (flag) a->per_channel = true;
        else if (!strcmp(s, "-o") || !strcmp(s, "--out")) a->out = v;
        else if (!strcmp(s, "--calib")) a->calib = v;
        else if (!strcmp(s, "--method")) {
            if (strcmp(v, "minmax") && strcmp(v, "percentile"))
                return tool_fail("quantize: --method is minmax or percentile, not '%s'", v);
            a->method = v;
        } else if (!strcmp(s, "--threads")) {
            long t = strtol(v, &end, 10);
            if (!*v || *end || t < 0 || t > 1024) return tool_fail("quantize: --threads takes a count from 0 to 1024, not '%s'", v);
            a->threads = (int)t;
        } else if (!strcmp(s, "--seed")) {
            a->seed = strtoull(v, &end, 10);
            if (!*v || *end) return tool_fail("quantize: --seed takes a number, not '%s'", v);
        } else if (!strcmp(s, "--dim")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1] || a->n_dims == TOOL_MAX_IO) return tool_fail("quantize: --dim takes NAME=N, not '%s'", v);
            a->dims[a->n_dims].name = v;
            a->dims[a->n_dims++].path = eq + 1;
        }
    }
    if (!a->model) return tool_fail("quantize: no MODEL given (strata quantize MODEL -o OUT.onnx)");
    if (!a->out) return tool_fail("quantize: no output file given (-o OUT.onnx)");
    return 0;
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* The .npy files of dir, sorted; count in *n. */
static char **list_npy(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) return NULL;
    char **v = NULL;
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".npy")) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) goto oom;
            v = nv;
        }
        char *p = malloc(strlen(dir) + l + 2);
        if (!p) goto oom;
        sprintf(p, "%s/%s", dir, e->d_name);
        v[(*n)++] = p;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v;
oom:
    /* a shorter list would calibrate on fewer files without a word */
    closedir(d);
    for (int i = 0; i < *n; i++) free(v[i]);
    free(v);
    *n = -1;
    return NULL;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The samples: from DIR, or random (floats uniform in [0, 1), which
 * suits images, the usual input of a model one quantizes). */
static int load_samples(const qargs *a, const st_model *m, sample **out, int *n_out)
{
    int ni = st_model_input_count(m);
    if (ni > TOOL_MAX_IO) return tool_fail("quantize: the model has %d inputs, more than %d", ni, TOOL_MAX_IO);
    sample *s = NULL;
    int n = 0;
    if (a->calib) {
        int nf;
        char **files = list_npy(a->calib, &nf);
        if (!files && nf < 0) return tool_fail("out of memory listing --calib %s", a->calib);
        if (!files || nf == 0) {
            free(files);
            return tool_fail("quantize: --calib %s: no .npy files there", a->calib);
        }
        /* per input, its files: all of them for one input, else those named after it */
        int per[TOOL_MAX_IO], count = -1;
        for (int i = 0; i < ni; i++) {
            st_value_info info;
            st_model_input_info(m, i, &info);
            char clean[256];
            tool_sanitize_name(info.name, clean, sizeof clean);
            per[i] = 0;
            for (int f = 0; f < nf; f++) {
                const char *base = strrchr(files[f], '/') + 1;
                if (ni == 1 || !strncmp(base, clean, strlen(clean))) per[i]++;
            }
            if (count < 0 || per[i] < count) count = per[i];
        }
        if (count <= 0) {
            for (int f = 0; f < nf; f++) free(files[f]);
            free(files);
            return tool_fail("quantize: --calib %s: a model with %d inputs needs files named after each input (INPUT*.npy)", a->calib, ni);
        }
        s = calloc((size_t)count, sizeof *s);
        for (int i = 0; s && i < ni; i++) {
            st_value_info info;
            st_model_input_info(m, i, &info);
            char clean[256];
            tool_sanitize_name(info.name, clean, sizeof clean);
            int k = 0;
            for (int f = 0; f < nf && k < count; f++) {
                const char *base = strrchr(files[f], '/') + 1;
                if (ni != 1 && strncmp(base, clean, strlen(clean))) continue;
                if (st_npy_read(files[f], &s[k].in[i]) != ST_OK) {
                    tool_fail_st(files[f]);
                    for (int x = 0; x < nf; x++) free(files[x]);
                    free(files);
                    for (int j = 0; j < count; j++)
                        for (int y = 0; y < ni; y++) st_npy_free(&s[j].in[y]);
                    free(s);
                    return 1;
                }
                k++;
            }
        }
        for (int f = 0; f < nf; f++) free(files[f]);
        free(files);
        if (!s) return tool_fail("out of memory");
        n = count;
    } else {
        fprintf(stderr, "strata: warning: no --calib DIR: calibrating on %d random inputs (uniform in [0, 1)); "
                        "the scales will not fit real data\n", RANDOM_SAMPLES);
        n = RANDOM_SAMPLES;
        s = calloc((size_t)n, sizeof *s);
        if (!s) return tool_fail("out of memory");
        uint64_t r = a->seed * 0x9e3779b97f4a7c15ull + 0x1234567;
        for (int k = 0; k < n; k++)
            for (int i = 0; i < ni; i++) {
                st_value_info info;
                st_model_input_info(m, i, &info);
                st_npy *x = &s[k].in[i];
                x->dtype = info.dtype == ST_F32 ? ST_F32 : info.dtype;
                x->rank = info.rank < 0 ? 0 : info.rank;
                int64_t cnt = 1;
                for (int d = 0; d < x->rank; d++) {
                    x->dims[d] = info.dims[d] > 0 ? info.dims[d] : 1;
                    bool given = false;
                    for (int q = 0; q < a->n_dims && info.dims[d] <= 0; q++) {
                        size_t l = (size_t)(a->dims[q].path - 1 - a->dims[q].name);
                        if (info.dim_names[d] && strlen(info.dim_names[d]) == l && !strncmp(info.dim_names[d], a->dims[q].name, l)) {
                            x->dims[d] = strtoll(a->dims[q].path, NULL, 10);
                            given = true;
                        }
                    }
                    /* a symbolic dim left at 1 often makes a vision model fail
                     * deep inside (a Concat's sizes), so say which one it was
                     * (not when --dim set it to 1) */
                    if (k == 0 && info.dims[d] <= 0 && !given)
                        fprintf(stderr, "strata: warning: input '%s' dim %d ('%s') is symbolic: random inputs use 1 "
                                        "(--dim NAME=N sets it)\n",
                                info.name, d, info.dim_names[d] ? info.dim_names[d] : "?");
                    cnt *= x->dims[d];
                }
                x->bytes = (size_t)cnt * st_dtype_size(x->dtype);
                x->data = calloc(1, x->bytes ? x->bytes : 1);
                if (!x->data) {
                    for (int j = 0; j <= k; j++)
                        for (int y = 0; y < ni; y++) st_npy_free(&s[j].in[y]);
                    free(s);
                    return tool_fail("out of memory");
                }
                for (int64_t e = 0; e < cnt; e++) {
                    if (x->dtype == ST_F32) ((float *)x->data)[e] = (float)(rng_next(&r) >> 40) / (float)(1 << 24);
                    else if (x->dtype == ST_I64) ((int64_t *)x->data)[e] = (int64_t)(rng_next(&r) % 10);
                }
            }
    }
    *out = s;
    *n_out = n;
    return 0;
}

static int bind(st_session *s, const st_model *m, const sample *x)
{
    for (int i = 0; i < st_model_input_count(m); i++) {
        st_value_info info;
        st_model_input_info(m, i, &info);
        const st_npy *v = &x->in[i];
        if (st_session_set_input_checked(s, info.name, v->dtype, v->rank, v->dims, v->data, v->bytes) != ST_OK)
            return tool_fail_st("quantize: binding a calibration input");
    }
    return 0;
}

/* One pass over the samples: ranges (pass 0) or histograms (pass 1). */
static int calibrate(qz_model *q, st_session *s, const st_model *m, const sample *xs, int n, int pass, const char *what)
{
    tool_progress pg;
    tool_progress_start(&pg, what, n);
    float *buf = NULL;
    size_t cap = 0;
    for (int k = 0; k < n; k++) {
        if (bind(s, m, &xs[k]) || (st_session_run(s) != ST_OK && tool_fail_st("quantize: running the float model"))) {
            free(buf);
            return 1;
        }
        for (int t = 0; t < q->n_tensors; t++) {
            qz_tensor *c = &q->t[t];
            if (!c->wanted || c->init >= 0 || (pass == 1 && !c->hist)) continue;
            st_tensor *v = NULL;
            /* not an output: an input; out of memory is neither, and fails */
            if (st_session_output(s, c->name, &v) != ST_OK &&
                (st_error_code() == ST_ERR_NOMEM || st_session_input(s, c->name, &v) != ST_OK)) {
                if (st_error_code() != ST_ERR_NOMEM) continue;
                free(buf);
                return tool_fail_st("quantize: reading a tensor");
            }
            if (st_tensor_dtype(v) != ST_F32) {
                st_tensor_free(v);
                continue;
            }
            size_t cnt = (size_t)st_tensor_numel(v);
            if (cnt > cap) {
                float *nb = realloc(buf, cnt * sizeof *nb);
                if (!nb) {
                    st_tensor_free(v);
                    free(buf);
                    return tool_fail("out of memory");
                }
                buf = nb;
                cap = cnt;
            }
            st_status st = st_tensor_read(v, ST_F32, buf, cnt * sizeof *buf);
            st_tensor_free(v);
            if (st != ST_OK) {
                free(buf);
                return tool_fail_st("quantize: reading a tensor");
            }
            c->is_f32 = true;
            for (size_t e = 0; e < cnt; e++) {
                float x = buf[e];
                if (!isfinite(x)) continue;
                if (pass == 0) {
                    if (!c->seen || x < c->lo) c->lo = x;
                    if (!c->seen || x > c->hi) c->hi = x;
                    c->seen = true;
                } else {
                    double f = (x - c->lo) / ((double)c->hi - c->lo) * QZ_HIST_BINS;
                    int b = f < 0 ? 0 : f >= QZ_HIST_BINS ? QZ_HIST_BINS - 1 : (int)f;
                    c->hist[b]++;
                }
            }
        }
        tool_progress_step(&pg, k + 1, NULL);
    }
    tool_progress_end(&pg);
    free(buf);
    return 0;
}

/* Percentile: each range narrowed to the PCT points of its histogram. */
static void narrow(qz_model *q)
{
    for (int t = 0; t < q->n_tensors; t++) {
        qz_tensor *c = &q->t[t];
        if (!c->hist) continue;
        uint64_t total = 0;
        for (int b = 0; b < QZ_HIST_BINS; b++) total += c->hist[b];
        uint64_t cut = (uint64_t)((1.0 - PCT) * (double)total), acc = 0;
        int lo = 0, hi = QZ_HIST_BINS - 1;
        while (lo < hi && acc + c->hist[lo] <= cut) acc += c->hist[lo++];
        acc = 0;
        while (hi > lo && acc + c->hist[hi] <= cut) acc += c->hist[hi--];
        double w = ((double)c->hi - c->lo) / QZ_HIST_BINS;
        float nlo = (float)(c->lo + lo * w), nhi = (float)(c->lo + (hi + 1) * w);
        c->lo = nlo;
        c->hi = nhi;
    }
}

static st_session *session(const st_model *m, int threads)
{
    st_session_options o;
    st_session_options_init(&o);
    o.threads = threads;
    st_session *s = NULL;
    if (tool_session_create(m, &o, &s) != ST_OK) return NULL;
    return s;
}

static int read_out(st_session *s, const char *name, float **data, int *rank, int64_t *dims, size_t *n)
{
    st_tensor *t;
    if (st_session_output(s, name, &t) != ST_OK) return tool_fail_st("quantize: reading an output");
    *rank = st_tensor_rank(t);
    for (int d = 0; d < *rank; d++) dims[d] = st_tensor_dim(t, d);
    *n = (size_t)st_tensor_numel(t);
    *data = malloc(*n * sizeof **data + 1);
    if (!*data) {
        st_tensor_free(t);
        return tool_fail("out of memory reading output '%s'", name);
    }
    st_status st = st_tensor_read(t, ST_F32, *data, *n * sizeof **data);
    st_tensor_free(t);
    if (st != ST_OK) {
        free(*data);
        *data = NULL;
        /* a kernel that ran out of memory reports it when its result is read */
        if (st_error_code() == ST_ERR_NOMEM) return tool_fail_st("quantize: reading an output");
        return tool_fail("quantize: output '%s' does not read as float", name);
    }
    return 0;
}

/* Boxes of one image's YOLO output: decoded at conf 0.25, NMS at 0.45;
 * -1 when out of memory. */
static int yolo_boxes(const float *out, const st_yolo_format *f, st_box **boxes)
{
    *boxes = malloc((size_t)f->n_anchors * sizeof **boxes + 1);
    if (!*boxes) return -1;
    int n = st_yolo_decode(out, f, 0.25f, *boxes);
    return st_nms(*boxes, n, 0.45f, true, 300);
}

typedef struct report {
    double max_err, sum_err, max_ref;
    size_t count;
    bool yolo;
    int boxes, kept, extra;
} report;

static int evaluate(const st_model *fm, st_session *fs, const st_model *qm, st_session *qs, const sample *xs, int n, report *r)
{
    int no = st_model_output_count(fm);
    memset(r, 0, (size_t)no * sizeof *r);
    tool_progress pg;
    tool_progress_start(&pg, "comparing", n);
    for (int k = 0; k < n; k++) {
        if (bind(fs, fm, &xs[k]) || bind(qs, qm, &xs[k])) return 1;
        if (st_session_run(fs) != ST_OK) return tool_fail_st("quantize: running the float model");
        if (st_session_run(qs) != ST_OK) return tool_fail_st("quantize: running the quantized model");
        for (int o = 0; o < no; o++) {
            st_value_info info;
            st_model_output_info(fm, o, &info);
            float *a, *b;
            int ra, rb;
            int64_t da[ST_MAX_RANK], db[ST_MAX_RANK];
            size_t na, nb;
            if (read_out(fs, info.name, &a, &ra, da, &na)) return 1;
            if (read_out(qs, info.name, &b, &rb, db, &nb)) {
                free(a);
                return 1;
            }
            if (na != nb) {
                free(a);
                free(b);
                return tool_fail("quantize: output '%s' has %zu values in the float model and %zu quantized", info.name, na, nb);
            }
            for (size_t e = 0; e < na; e++) {
                double d = fabs((double)a[e] - b[e]);
                if (d > r[o].max_err || d != d) r[o].max_err = d;
                r[o].sum_err += d;
                if (fabs(a[e]) > r[o].max_ref) r[o].max_ref = fabs(a[e]);
            }
            r[o].count += na;
            /* a YOLO output: boxes kept, per image */
            const st_npy *in0 = &xs[k].in[0];
            st_yolo_format f;
            if (o == 0 && in0->rank == 4 && ra == 3 &&
                st_yolo_format_of(ra, da, (int)in0->dims[2], (int)in0->dims[3], &f) == ST_OK) {
                r[o].yolo = true;
                size_t per = na / (size_t)da[0];
                for (int64_t img = 0; img < da[0]; img++) {
                    st_box *fb, *qb;
                    int nf = yolo_boxes(a + img * per, &f, &fb), nq = yolo_boxes(b + img * per, &f, &qb);
                    int kept = 0;
                    bool *used = nf >= 0 && nq >= 0 ? calloc((size_t)nq + 1, 1) : NULL;
                    if (!used) {
                        free(fb);
                        free(qb);
                        free(a);
                        free(b);
                        return tool_fail("out of memory comparing boxes");
                    }
                    for (int i = 0; i < nf; i++)
                        for (int j = 0; j < nq; j++)
                            if (!used[j] && qb[j].cls == fb[i].cls && st_box_iou(&fb[i], &qb[j]) >= 0.5f) {
                                used[j] = true;
                                kept++;
                                break;
                            }
                    r[o].boxes += nf;
                    r[o].kept += kept;
                    r[o].extra += nq - kept;
                    free(used);
                    free(fb);
                    free(qb);
                }
            }
            free(a);
            free(b);
        }
        tool_progress_step(&pg, k + 1, NULL);
    }
    tool_progress_end(&pg);
    return 0;
}

int st_cmd_quantize(int argc, char **argv)
{
    qargs a;
    if (parse(argc, argv, &a)) return 1;
    void *data = NULL;
    size_t size = 0;
    if (st_file_read(a.model, &data, &size) != ST_OK) return tool_fail_st("quantize: reading the model");
    qz_model q;
    int rc = qz_load(&q, data, size, a.model, a.per_channel);
    st_model *fm = NULL, *cm = NULL, *qm = NULL;
    st_session *cs = NULL, *fs = NULL, *qs = NULL;
    sample *xs = NULL;
    int n = 0, ni = 0;
    void *cal = NULL, *out = NULL;
    size_t cal_size = 0, out_size = 0;
    report *rep = NULL;
    char tmp[4096] = "";
    if (!rc && st_model_load_memory(data, size, NULL, &fm) != ST_OK) rc = tool_fail_st("quantize: loading the model");
    if (!rc) {
        ni = st_model_input_count(fm);
        rc = load_samples(&a, fm, &xs, &n);
    }
    /* calibration: the float model with the candidates as outputs */
    if (!rc && !(cal = qz_calibration_model(&q, &cal_size))) rc = tool_fail("out of memory");
    if (!rc && st_model_load_memory(cal, cal_size, NULL, &cm) != ST_OK) rc = tool_fail_st("quantize: loading the calibration model");
    if (!rc && !(cs = session(cm, a.threads))) rc = tool_fail_st("quantize: a session for calibration");
    if (!rc) rc = calibrate(&q, cs, cm, xs, n, 0, "calibrating");
    if (!rc && !strcmp(a.method, "percentile")) {
        for (int t = 0; t < q.n_tensors && !rc; t++)
            if (q.t[t].wanted && q.t[t].seen && q.t[t].hi > q.t[t].lo && !(q.t[t].hist = calloc(QZ_HIST_BINS, sizeof(uint32_t))))
                rc = tool_fail("out of memory");
        if (!rc) rc = calibrate(&q, cs, cm, xs, n, 1, "histograms");
        if (!rc) narrow(&q);
    }
    st_session_free(cs);
    cs = NULL;
    if (!rc) {
        qz_decide(&q);
        if (!(out = qz_write(&q, &out_size))) rc = 1;
    }
    if (!rc && st_model_load_memory(out, out_size, NULL, &qm) != ST_OK) rc = tool_fail_st("quantize: the quantized model does not load");
    if (!rc && (!(fs = session(fm, a.threads)) || !(qs = session(qm, a.threads)))) rc = tool_fail_st("quantize: a session");
    int no = fm ? st_model_output_count(fm) : 0;
    if (!rc && !(rep = calloc((size_t)no + 1, sizeof *rep))) rc = tool_fail("out of memory");
    if (!rc) rc = evaluate(fm, fs, qm, qs, xs, n, rep);
    /* written last, whole or not at all */
    if (!rc) {
        snprintf(tmp, sizeof tmp, "%s.tmp-%d", a.out, (int)getpid());
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(out, 1, out_size, f) == out_size;
        if (f && fclose(f) != 0) ok = false;
        if (!ok || rename(tmp, a.out) != 0) {
            remove(tmp);
            rc = tool_fail("quantize: cannot write %s", a.out);
        }
    }
    if (!rc) {
        int convs = 0, qconvs = 0, others = 0, tensors = 0;
        for (size_t i = 0; i < q.g->n_node; i++) {
            bool heavy = !strcmp(q.g->node[i]->op_type, "Conv") || !strcmp(q.g->node[i]->op_type, "MatMul");
            convs += heavy;
            qconvs += heavy && q.node_quant[i];
            others += !heavy && q.node_quant[i];
        }
        for (int t = 0; t < q.n_tensors; t++) tensors += q.t[t].quant;
        printf("%s -> %s: QDQ, u8 activations, s8 weights %s, %s calibration on %d %s\n", a.model, a.out,
               a.per_channel ? "per channel" : "per tensor", a.method, n, a.calib ? "inputs" : "random inputs");
        printf("quantized: %d of %d Conv/MatMul, %d other nodes, %d tensors with a scale\n", qconvs, convs, others, tensors);
        printf("accuracy against the f32 model on the same %d inputs:\n", n);
        for (int o = 0; o < no; o++) {
            st_value_info info;
            st_model_output_info(fm, o, &info);
            printf("  %s: max abs error %.4g, mean abs error %.4g (f32 values up to %.4g)\n", info.name, rep[o].max_err,
                   rep[o].count ? rep[o].sum_err / (double)rep[o].count : 0.0, rep[o].max_ref);
            if (rep[o].yolo) {
                if (rep[o].boxes)
                    printf("  %s: boxes (conf 0.25, same class, IoU >= 0.5): kept %d of %d (%.1f%%), %d extra\n", info.name,
                           rep[o].kept, rep[o].boxes, 100.0 * rep[o].kept / rep[o].boxes, rep[o].extra);
                else
                    printf("  %s: boxes: the f32 model finds none on these inputs (%d in the quantized one)\n", info.name, rep[o].extra);
            }
        }
    }
    free(rep);
    st_session_free(fs);
    st_session_free(qs);
    st_model_free(fm);
    st_model_free(cm);
    st_model_free(qm);
    for (int k = 0; xs && k < n; k++)
        for (int i = 0; i < ni; i++) st_npy_free(&xs[k].in[i]);
    free(xs);
    free(cal);
    free(out);
    qz_free(&q);
    free(data);
    return rc;
}
