/*
 * qdq_rewrite.c — `strata quantize`'s model side: which tensors of a float
 * ONNX model get scales, the model that calibration runs (those tensors
 * as extra outputs), and the QDQ model it writes (quantize.h says what
 * the scheme is).  The output is a standard QDQ graph: every quantized
 * tensor t becomes t -> QuantizeLinear -> DequantizeLinear -> t's readers,
 * weights are int8 initializers behind a DequantizeLinear, and no node of
 * another domain is added, so any ONNX runtime loads it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "quantize.h"
#include "tool.h"

enum { K_NONE, K_HEAVY, K_ELEM, K_MOVE, K_CONCAT };

static void *own(qz_model *q, void *p)
{
    if (!p) return NULL;
    if (q->n_owned == q->cap_owned) {
        int cap = q->cap_owned ? 2 * q->cap_owned : 256;
        void **o = realloc(q->owned, (size_t)cap * sizeof *o);
        if (!o) {
            free(p);
            return NULL;
        }
        q->owned = o;
        q->cap_owned = cap;
    }
    q->owned[q->n_owned++] = p;
    return p;
}

static void *zalloc(qz_model *q, size_t n) { return own(q, calloc(1, n ? n : 1)); }

static char *str_of(qz_model *q, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = zalloc(q, la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

static st_strmap names;   /* tensor name -> index; one model per process */

int qz_find(const qz_model *q, const char *name)
{
    (void)q;
    return name && name[0] ? st_strmap_get(&names, name) : -1;
}

static int add_tensor(qz_model *q, const char *name)
{
    int i = qz_find(q, name);
    if (i >= 0) return i;
    if (q->n_tensors == q->cap) {
        int cap = q->cap ? 2 * q->cap : 1024;
        qz_tensor *t = realloc(q->t, (size_t)cap * sizeof *t);
        if (!t) return -1;
        q->t = t;
        q->cap = cap;
    }
    qz_tensor *t = &q->t[q->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->producer = t->init = -1;
    t->group = q->n_tensors;
    if (!st_strmap_put(&names, name, q->n_tensors)) return -1;
    return q->n_tensors++;
}

static const char *attr_s(const Onnx__NodeProto *n, const char *name, const char *dflt)
{
    static char buf[64];
    for (size_t a = 0; a < n->n_attribute; a++)
        if (!strcmp(n->attribute[a]->name, name) && n->attribute[a]->has_s) {
            size_t len = n->attribute[a]->s.len < sizeof buf - 1 ? n->attribute[a]->s.len : sizeof buf - 1;
            memcpy(buf, n->attribute[a]->s.data, len);
            buf[len] = 0;
            return buf;
        }
    return dflt;
}

static bool is_op(const Onnx__NodeProto *n, const char *op)
{
    return !strcmp(n->op_type, op) && (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx"));
}

/* A float initializer's values, or NULL. */
static const float *init_f32(const qz_model *q, int t, int64_t *count)
{
    if (t < 0 || q->t[t].init < 0) return NULL;
    const Onnx__TensorProto *p = q->g->initializer[q->t[t].init];
    if (p->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) return NULL;
    int64_t n = 1;
    for (size_t d = 0; d < p->n_dims; d++) n *= p->dims[d];
    *count = n;
    if (p->has_raw_data && p->raw_data.len == (size_t)n * 4) return (const float *)p->raw_data.data;
    if (p->n_float_data == (size_t)n) return p->float_data;
    return NULL;
}

static const Onnx__TensorProto *init_of(const qz_model *q, const char *name)
{
    int t = qz_find(q, name);
    return t >= 0 && q->t[t].init >= 0 ? q->g->initializer[q->t[t].init] : NULL;
}

/* What kind of quantizable node n is (K_NONE: not one). */
static int kind_of(const qz_model *q, const Onnx__NodeProto *n)
{
    static const char *const ELEM[] = {"Add", "Mul", "Sigmoid", "Relu", "LeakyRelu", "Tanh", "HardSwish"};
    static const char *const MOVE[] = {"MaxPool", "Resize", "Slice", "Split", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze"};
    if (n->n_input < 1 || n->n_output < 1) return K_NONE;
    if (is_op(n, "Conv") || is_op(n, "MatMul")) {
        const Onnx__TensorProto *w = n->n_input > 1 ? init_of(q, n->input[1]) : NULL;
        int64_t cnt;
        if (!w || !init_f32(q, qz_find(q, n->input[1]), &cnt)) return K_NONE;
        if (is_op(n, "MatMul") && w->n_dims != 2) return K_NONE;
        if (is_op(n, "Conv") && n->n_input > 2 && n->input[2][0]) {
            const Onnx__TensorProto *b = init_of(q, n->input[2]);
            if (!b || !init_f32(q, qz_find(q, n->input[2]), &cnt)) return K_NONE;
        }
        return K_HEAVY;
    }
    int k = K_NONE;
    for (size_t i = 0; i < sizeof ELEM / sizeof *ELEM; i++)
        if (is_op(n, ELEM[i])) k = K_ELEM;
    for (size_t i = 0; i < sizeof MOVE / sizeof *MOVE; i++)
        if (is_op(n, MOVE[i])) k = K_MOVE;
    if (is_op(n, "Concat")) k = K_CONCAT;
    if (k == K_MOVE && is_op(n, "MaxPool") && n->n_output > 1 && n->output[1][0]) return K_NONE;
    if (k == K_MOVE && is_op(n, "Resize") && strcmp(attr_s(n, "mode", "nearest"), "nearest") != 0) return K_NONE;
    /* the data inputs must be computed tensors, not constants */
    size_t data = k == K_MOVE ? 1 : n->n_input;
    for (size_t i = 0; i < data && k != K_NONE; i++) {
        int t = qz_find(q, n->input[i]);
        if (t < 0 || q->t[t].init >= 0) return K_NONE;
        int pr = q->t[t].producer;
        if (pr >= 0 && is_op(q->g->node[pr], "Constant")) return K_NONE;
    }
    return k;
}

/* The inputs of node n that carry data (the rest are weights, shapes,
 * scales). */
static size_t data_inputs(const Onnx__NodeProto *n, int kind)
{
    return kind == K_ELEM || kind == K_CONCAT ? n->n_input : 1;
}

int qz_load(qz_model *q, const void *data, size_t size, const char *path, bool per_channel)
{
    memset(q, 0, sizeof *q);
    q->per_channel = per_channel;
    q->mp = onnx__model_proto__unpack(NULL, size, data);
    if (!q->mp || !q->mp->graph) return tool_fail("%s: not an ONNX model (the protobuf does not parse)", path);
    q->g = q->mp->graph;
    q->opset = 1;
    for (size_t i = 0; i < q->mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = q->mp->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) q->opset = (int)o->version;
    }
    if (q->opset < 10) return tool_fail("%s: opset %d; QuantizeLinear needs opset 10 or later", path, q->opset);
    if (per_channel && q->opset < 13)
        return tool_fail("%s: opset %d; --per-channel needs opset 13 or later (the axis of DequantizeLinear)", path, q->opset);
    if (!st_strmap_init(&names, 4096)) return tool_fail("out of memory");
    const Onnx__GraphProto *g = q->g;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
            return tool_fail("%s: initializer '%s' is stored in an external file, which quantize does not read", path, t->name);
        int k = add_tensor(q, t->name);
        if (k < 0) return tool_fail("out of memory");
        q->t[k].init = (int)i;
    }
    for (size_t i = 0; i < g->n_input; i++)
        if (add_tensor(q, g->input[i]->name) < 0) return tool_fail("out of memory");
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k][0] && add_tensor(q, n->input[k]) < 0) return tool_fail("out of memory");
        for (size_t k = 0; k < n->n_output; k++) {
            if (!n->output[k][0]) continue;
            int t = add_tensor(q, n->output[k]);
            if (t < 0) return tool_fail("out of memory");
            q->t[t].producer = (int)i;
        }
    }
    /* candidates, from the end: a node is one when it is a conv or matmul,
     * or a quantizable op whose result reaches one through candidates */
    q->node_quant = calloc(g->n_node + 1, sizeof *q->node_quant);
    bool *feeds = calloc((size_t)q->n_tensors + 1, sizeof *feeds);
    if (!q->node_quant || !feeds) {
        free(feeds);
        return tool_fail("out of memory");
    }
    for (size_t r = g->n_node; r-- > 0;) {
        const Onnx__NodeProto *n = g->node[r];
        int kind = kind_of(q, n);
        if (kind == K_NONE) continue;
        bool below = false;
        for (size_t k = 0; k < n->n_output; k++) {
            int t = qz_find(q, n->output[k]);
            if (t >= 0 && feeds[t]) below = true;
        }
        if (kind != K_HEAVY && !below) continue;
        q->node_quant[r] = kind;
        for (size_t k = 0; k < data_inputs(n, kind); k++) {
            int t = qz_find(q, n->input[k]);
            if (t < 0) continue;
            feeds[t] = true;
            q->t[t].wanted = true;
        }
        for (size_t k = 0; k < n->n_output; k++) {
            int t = qz_find(q, n->output[k]);
            if (t >= 0) q->t[t].wanted = true;
        }
    }
    free(feeds);
    return 0;
}

void qz_free(qz_model *q)
{
    for (int i = 0; i < q->n_owned; i++) free(q->owned[i]);
    free(q->owned);
    for (int i = 0; i < q->n_tensors; i++) free(q->t[i].hist);
    free(q->t);
    free(q->node_quant);
    if (q->mp) onnx__model_proto__free_unpacked(q->mp, NULL);
    st_strmap_free(&names);
    memset(q, 0, sizeof *q);
}

/* Packs q->mp with the given graph node, initializer and output arrays. */
static void *pack_with(qz_model *q, Onnx__NodeProto **nodes, size_t n_nodes, Onnx__TensorProto **inits, size_t n_inits,
                       Onnx__ValueInfoProto **outs, size_t n_outs, size_t *size)
{
    Onnx__GraphProto *g = q->g;
    Onnx__NodeProto **on = g->node;
    Onnx__TensorProto **oi = g->initializer;
    Onnx__ValueInfoProto **oo = g->output;
    size_t nn = g->n_node, ni = g->n_initializer, no = g->n_output;
    g->node = nodes, g->n_node = n_nodes;
    g->initializer = inits, g->n_initializer = n_inits;
    g->output = outs, g->n_output = n_outs;
    *size = onnx__model_proto__get_packed_size(q->mp);
    uint8_t *buf = malloc(*size ? *size : 1);
    if (buf) onnx__model_proto__pack(q->mp, buf);
    g->node = on, g->n_node = nn;
    g->initializer = oi, g->n_initializer = ni;
    g->output = oo, g->n_output = no;
    return buf;
}

void *qz_calibration_model(qz_model *q, size_t *size)
{
    Onnx__GraphProto *g = q->g;
    Onnx__ValueInfoProto **outs = zalloc(q, ((size_t)q->n_tensors + g->n_output) * sizeof *outs);
    if (!outs) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < g->n_output; i++) outs[n++] = g->output[i];
    for (int t = 0; t < q->n_tensors; t++) {
        if (!q->t[t].wanted || q->t[t].init >= 0) continue;
        bool already = false;
        for (size_t i = 0; i < g->n_output; i++) already |= !strcmp(g->output[i]->name, q->t[t].name);
        for (size_t i = 0; i < g->n_input; i++) already |= !strcmp(g->input[i]->name, q->t[t].name);
        if (already) continue;
        Onnx__ValueInfoProto *v = zalloc(q, sizeof *v);
        if (!v) return NULL;
        onnx__value_info_proto__init(v);
        v->name = (char *)q->t[t].name;
        outs[n++] = v;
    }
    return pack_with(q, g->node, g->n_node, g->initializer, g->n_initializer, outs, n, size);
}

static int root(qz_model *q, int t)
{
    while (q->t[t].group != t) t = q->t[t].group = q->t[q->t[t].group].group;
    return t;
}

void qz_decide(qz_model *q)
{
    const Onnx__GraphProto *g = q->g;
    for (size_t i = 0; i < g->n_node; i++) {
        int kind = q->node_quant[i];
        if (!kind) continue;
        const Onnx__NodeProto *n = g->node[i];
        bool ok = true;
        for (size_t k = 0; k < data_inputs(n, kind); k++) {
            int t = qz_find(q, n->input[k]);
            ok &= t >= 0 && q->t[t].is_f32 && q->t[t].seen;
        }
        for (size_t k = 0; k < n->n_output; k++) {
            int t = qz_find(q, n->output[k]);
            ok &= t < 0 || (q->t[t].is_f32 && q->t[t].seen);
        }
        if (!ok) q->node_quant[i] = 0;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        int kind = q->node_quant[i];
        if (!kind) continue;
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < data_inputs(n, kind); k++) q->t[qz_find(q, n->input[k])].quant = true;
        for (size_t k = 0; k < n->n_output; k++) {
            int t = qz_find(q, n->output[k]);
            if (t < 0) continue;
            q->t[t].quant = true;
            /* a data-movement op's output takes its input's scale */
            if (kind == K_MOVE) q->t[root(q, t)].group = root(q, qz_find(q, n->input[0]));
        }
    }
    /* a group's range: the union of its members' */
    for (int t = 0; t < q->n_tensors; t++) {
        int r = root(q, t);
        if (r == t || !q->t[t].seen) continue;
        if (!q->t[r].seen || q->t[t].lo < q->t[r].lo) q->t[r].lo = q->t[t].lo;
        if (!q->t[r].seen || q->t[t].hi > q->t[r].hi) q->t[r].hi = q->t[t].hi;
        q->t[r].seen = true;
    }
}

void qz_params(const qz_model *q, int t, float *scale, uint8_t *zp)
{
    qz_model *m = (qz_model *)q;
    const qz_tensor *r = &q->t[root(m, t)];
    float lo = r->lo < 0 ? r->lo : 0, hi = r->hi > 0 ? r->hi : 0;
    if (!(hi - lo > 0) || !isfinite(hi - lo)) {
        *scale = 1.0f;
        *zp = 0;
        return;
    }
    *scale = (hi - lo) / 255.0f;
    float z = rintf(-lo / *scale);
    *zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
}

/* ---- building the output ---- */

typedef struct builder {
    qz_model *q;
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    bool oom;
} builder;

static void push(void ***arr, size_t *n, size_t *cap, void *x, bool *oom)
{
    if (!x) {
        *oom = true;
        return;
    }
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        void **a = realloc(*arr, c * sizeof *a);
        if (!a) {
            *oom = true;
            return;
        }
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = x;
}

static Onnx__TensorProto *tensor(builder *b, const char *name, int type, int rank, const int64_t *dims, const void *data, size_t bytes)
{
    Onnx__TensorProto *t = zalloc(b->q, sizeof *t);
    int64_t *d = zalloc(b->q, (size_t)(rank > 0 ? rank : 1) * sizeof *d);
    void *raw = zalloc(b->q, bytes);
    /* a name that could not be made (str_of) fails like the tensor's own memory */
    if (!t || !d || !raw || !name) {
        b->oom = true;
        return NULL;
    }
    onnx__tensor_proto__init(t);
    if (rank > 0) memcpy(d, dims, (size_t)rank * sizeof *d); /* a scalar's dims may be NULL */
    if (bytes) memcpy(raw, data, bytes);
    t->name = (char *)name;
    t->n_dims = (size_t)rank;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = type;
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = raw;
    push((void ***)&b->inits, &b->n_inits, &b->cap_inits, t, &b->oom);
    return t;
}

static void node(builder *b, const char *op, const char *const *in, int n_in, const char *out, int axis)
{
    Onnx__NodeProto *n = zalloc(b->q, sizeof *n);
    char **ins = zalloc(b->q, (size_t)n_in * sizeof *ins), **outs = zalloc(b->q, sizeof *outs);
    bool named = out != NULL;
    for (int k = 0; k < n_in; k++) named = named && in[k];
    if (!n || !ins || !outs || !named) {
        b->oom = true;
        return;
    }
    onnx__node_proto__init(n);
    for (int k = 0; k < n_in; k++) ins[k] = (char *)in[k];
    outs[0] = (char *)out;
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->op_type = (char *)op;
    n->name = str_of(b->q, out, "_node");
    if (!n->name) {
        b->oom = true;
        return;
    }
    if (axis >= 0) {
        Onnx__AttributeProto *a = zalloc(b->q, sizeof *a);
        Onnx__AttributeProto **as = zalloc(b->q, sizeof *as);
        if (!a || !as) {
            b->oom = true;
            return;
        }
        onnx__attribute_proto__init(a);
        a->name = "axis";
        a->has_type = 1;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = axis;
        as[0] = a;
        n->n_attribute = 1;
        n->attribute = as;
    }
    push((void ***)&b->nodes, &b->n_nodes, &b->cap_nodes, n, &b->oom);
}

static const char *dq_name(qz_model *q, int t) { return str_of(q, q->t[t].name, "_DequantizeLinear_Output"); }

/* t -> Q -> DQ with t's (group's) u8 parameters. */
static void qdq(builder *b, int t)
{
    qz_model *q = b->q;
    float s;
    uint8_t z;
    qz_params(q, t, &s, &z);
    const char *sn = str_of(q, q->t[t].name, "_scale"), *zn = str_of(q, q->t[t].name, "_zero_point");
    const char *qn = str_of(q, q->t[t].name, "_QuantizeLinear_Output"), *dn = dq_name(q, t);
    tensor(b, sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &s, 4);
    tensor(b, zn, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, NULL, &z, 1);
    node(b, "QuantizeLinear", (const char *[]){q->t[t].name, sn, zn}, 3, qn, -1);
    node(b, "DequantizeLinear", (const char *[]){qn, sn, zn}, 3, dn, -1);
}

/* A weight w [.., axis, ..] as s8, symmetric: per channel along `axis`
 * (scales in ws, one per channel), else one scale.  Returns the name of
 * its DequantizeLinear's output. */
static const char *weight(builder *b, int t, int axis, float *ws, int64_t *n_ch)
{
    qz_model *q = b->q;
    const Onnx__TensorProto *p = q->g->initializer[q->t[t].init];
    int64_t cnt;
    const float *w = init_f32(q, t, &cnt);
    int64_t ch = q->per_channel ? p->dims[axis] : 1, inner = 1;
    for (size_t d = (size_t)axis + 1; d < p->n_dims; d++) inner *= p->dims[d];
    if (!q->per_channel) inner = cnt;
    int8_t *v = zalloc(q, (size_t)cnt);
    if (!w || !v) {
        b->oom = true;
        return NULL;
    }
    /* element e's channel: (e / inner) % ch */
    for (int64_t c = 0; c < ch; c++) ws[c] = 0;
    for (int64_t e = 0; e < cnt; e++) {
        int64_t c = (e / inner) % ch;
        if (fabsf(w[e]) > ws[c]) ws[c] = fabsf(w[e]);
    }
    for (int64_t c = 0; c < ch; c++) ws[c] = ws[c] > 0 ? ws[c] / 127.0f : 1.0f;
    for (int64_t e = 0; e < cnt; e++) {
        float r = rintf(w[e] / ws[(e / inner) % ch]);
        v[e] = (int8_t)(r < -127 ? -127 : r > 127 ? 127 : r);
    }
    *n_ch = ch;
    const char *base = q->t[t].name;
    const char *qn = str_of(q, base, "_quantized"), *sn = str_of(q, base, "_scale"), *zn = str_of(q, base, "_zero_point");
    const char *dn = str_of(q, base, "_DequantizeLinear_Output");
    int8_t *zeros = zalloc(q, (size_t)ch);
    if (!zeros) {
        b->oom = true;
        return NULL;
    }
    tensor(b, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, (int)p->n_dims, p->dims, v, (size_t)cnt);
    int r = q->per_channel ? 1 : 0;
    tensor(b, sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, r, &ch, ws, (size_t)ch * 4);
    tensor(b, zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, r, &ch, zeros, (size_t)ch);
    node(b, "DequantizeLinear", (const char *[]){qn, sn, zn}, 3, dn, q->per_channel ? axis : -1);
    return dn;
}

/* A conv's bias as int32 at x_scale * w_scale[m]. */
static const char *bias(builder *b, int t, float xs, const float *ws, int64_t ch)
{
    qz_model *q = b->q;
    int64_t m;
    const float *bf = init_f32(q, t, &m);
    int32_t *v = zalloc(q, (size_t)m * 4), *zeros = zalloc(q, (size_t)m * 4);
    float *bs = zalloc(q, (size_t)m * 4);
    if (!bf || !v || !zeros || !bs) {
        b->oom = true;
        return NULL;
    }
    for (int64_t i = 0; i < m; i++) {
        bs[i] = xs * ws[ch == 1 ? 0 : i];
        double r = rint((double)bf[i] / bs[i]);
        v[i] = r > 2147483647.0 ? INT32_MAX : r < -2147483647.0 ? -INT32_MAX : (int32_t)r;
    }
    const char *base = q->t[t].name;
    const char *qn = str_of(q, base, "_quantized"), *sn = str_of(q, base, "_scale"), *zn = str_of(q, base, "_zero_point");
    const char *dn = str_of(q, base, "_DequantizeLinear_Output");
    tensor(b, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, &m, v, (size_t)m * 4);
    tensor(b, sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &m, bs, (size_t)m * 4);
    tensor(b, zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, &m, zeros, (size_t)m * 4);
    node(b, "DequantizeLinear", (const char *[]){qn, sn, zn}, 3, dn, 0);
    return dn;
}

void *qz_write(qz_model *q, size_t *size)
{
    const Onnx__GraphProto *g = q->g;
    builder b = {q, NULL, 0, 0, NULL, 0, 0, false};
    for (size_t i = 0; i < g->n_input; i++) {
        int t = qz_find(q, g->input[i]->name);
        if (t >= 0 && q->t[t].quant && q->t[t].init < 0) qdq(&b, t);
    }
    for (size_t i = 0; i < g->n_node && !b.oom; i++) {
        const Onnx__NodeProto *n = g->node[i];
        Onnx__NodeProto *c = zalloc(q, sizeof *c);
        char **in = zalloc(q, (n->n_input ? n->n_input : 1) * sizeof *in);
        if (!c || !in) {
            b.oom = true;
            break;
        }
        *c = *n;
        c->input = in;
        /* every reader of a quantized tensor reads its DequantizeLinear */
        for (size_t k = 0; k < n->n_input; k++) {
            int t = qz_find(q, n->input[k]);
            in[k] = t >= 0 && q->t[t].quant ? (char *)dq_name(q, t) : n->input[k];
        }
        if (q->node_quant[i] == K_HEAVY) {
            bool conv = is_op(n, "Conv");
            int w = qz_find(q, n->input[1]);
            const Onnx__TensorProto *wp = g->initializer[q->t[w].init];
            int axis = conv ? 0 : 1;
            float *ws = zalloc(q, (size_t)wp->dims[axis] * sizeof *ws);
            int64_t ch = 1;
            if (!ws) {
                b.oom = true;
                break;
            }
            in[1] = (char *)weight(&b, w, axis, ws, &ch);
            if (conv && n->n_input > 2 && n->input[2][0]) {
                float xs;
                uint8_t xz;
                qz_params(q, qz_find(q, n->input[0]), &xs, &xz);
                in[2] = (char *)bias(&b, qz_find(q, n->input[2]), xs, ws, ch);
            }
        }
        /* an input name (dq_name, weight, bias) that could not be made */
        for (size_t k = 0; k < n->n_input; k++)
            if (!in[k]) b.oom = true;
        if (b.oom) break;
        push((void ***)&b.nodes, &b.n_nodes, &b.cap_nodes, c, &b.oom);
        for (size_t k = 0; k < n->n_output; k++) {
            int t = qz_find(q, n->output[k]);
            if (t >= 0 && q->t[t].quant) qdq(&b, t);
        }
    }
    /* the float initializers still read */
    st_strmap used = {0};
    if (!b.oom && !st_strmap_init(&used, 4096)) b.oom = true;
    for (size_t i = 0; i < b.n_nodes && !b.oom; i++)
        for (size_t k = 0; k < b.nodes[i]->n_input; k++)
            if (!st_strmap_put(&used, b.nodes[i]->input[k], 1)) b.oom = true;
    size_t n_new = b.n_inits;
    for (size_t i = 0; i < g->n_initializer && !b.oom; i++) {
        bool out = false;
        for (size_t k = 0; k < g->n_output; k++) out |= !strcmp(g->output[k]->name, g->initializer[i]->name);
        if (out || st_strmap_get(&used, g->initializer[i]->name) >= 0)
            push((void ***)&b.inits, &b.n_inits, &b.cap_inits, g->initializer[i], &b.oom);
    }
    st_strmap_free(&used);
    /* the originals first, as the file had them */
    void *buf = NULL;
    if (!b.oom) {
        Onnx__TensorProto **order = malloc((b.n_inits ? b.n_inits : 1) * sizeof *order);
        if (order) {
            memcpy(order, b.inits + n_new, (b.n_inits - n_new) * sizeof *order);
            memcpy(order + (b.n_inits - n_new), b.inits, n_new * sizeof *order);
            buf = pack_with(q, b.nodes, b.n_nodes, order, b.n_inits, g->output, g->n_output, size);
            free(order);
        }
    }
    free(b.nodes);
    free(b.inits);
    if (!buf) tool_fail("out of memory writing the quantized model");
    return buf;
}
