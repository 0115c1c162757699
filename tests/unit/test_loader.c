/*
 * test_loader.c — the ONNX loader (src/onnx/loader.h) on in-memory models.
 *
 * Models are built with the protobuf-c code generated from onnx.proto
 * (<builddir>/gen) and packed to bytes, so each test states exactly what
 * the file holds.  Every error case checks the status code and that the
 * message names the thing at fault (tensor, node, value or path): a
 * message that says only "bad model" fails.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/dtype.h"
#include "graph/graph.h"
#include "onnx/loader.h"
#include "onnx/onnx.pb-c.h"
#include "strata.h"

/* ---- an arena for the protobuf-c structs a test builds ---- */

static void **arena;
static size_t arena_n, arena_cap;

static void *alloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    if (arena_n == arena_cap) {
        arena_cap = arena_cap ? arena_cap * 2 : 256;
        arena = realloc(arena, arena_cap * sizeof *arena);
        if (!arena) abort();
    }
    arena[arena_n++] = p;
    return p;
}

static void arena_free(void)
{
    for (size_t i = 0; i < arena_n; i++) free(arena[i]);
    arena_n = 0;
}

static char *str(const char *s)
{
    char *d = alloc(strlen(s) + 1);
    memcpy(d, s, strlen(s) + 1);
    return d;
}

#define LIST_CAP 32
/* appends x to a protobuf-c repeated field (count n, array arr) */
#define APPEND(n, arr, x)                                        \
    do {                                                         \
        if (!(arr)) (arr) = alloc(LIST_CAP * sizeof *(arr));     \
        if ((n) >= LIST_CAP) abort();                            \
        (arr)[(n)++] = (x);                                      \
    } while (0)

/* ---- model building ---- */

static Onnx__ModelProto *new_model(int64_t opset)
{
    Onnx__ModelProto *m = alloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->producer_name = str("test_loader");
    m->graph = alloc(sizeof *m->graph);
    onnx__graph_proto__init(m->graph);
    m->graph->name = str("g");
    Onnx__OperatorSetIdProto *o = alloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = str("");
    o->has_version = 1;
    o->version = opset;
    APPEND(m->n_opset_import, m->opset_import, o);
    return m;
}

static void add_opset(Onnx__ModelProto *m, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = alloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = str(domain);
    o->has_version = 1;
    o->version = version;
    APPEND(m->n_opset_import, m->opset_import, o);
}

/* rank < 0: no shape */
static Onnx__ValueInfoProto *vinfo(const char *name, int elem, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *v = alloc(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = str(name);
    Onnx__TypeProto *tp = alloc(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = alloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        tt->shape = alloc(sizeof *tt->shape);
        onnx__tensor_shape_proto__init(tt->shape);
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = alloc(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
            APPEND(tt->shape->n_dim, tt->shape->dim, d);
        }
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    return v;
}

static void add_input(Onnx__ModelProto *m, Onnx__ValueInfoProto *v) { APPEND(m->graph->n_input, m->graph->input, v); }
static void add_output(Onnx__ModelProto *m, Onnx__ValueInfoProto *v) { APPEND(m->graph->n_output, m->graph->output, v); }

/* ins and outs are comma-separated; an empty item is an omitted optional */
static void split(const char *list, size_t *n, char ***arr)
{
    if (!list) return;
    const char *p = list;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *item = alloc(len + 1);
        memcpy(item, p, len);
        APPEND(*n, *arr, item);
        if (!e) break;
        p = e + 1;
    }
}

static Onnx__NodeProto *add_node(Onnx__ModelProto *m, const char *op, const char *name, const char *ins,
                                 const char *outs)
{
    Onnx__NodeProto *n = alloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = str(op);
    if (name) n->name = str(name);
    split(ins, &n->n_input, &n->input);
    split(outs, &n->n_output, &n->output);
    APPEND(m->graph->n_node, m->graph->node, n);
    return n;
}

static Onnx__TensorProto *tensor(const char *name, int dtype, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = alloc(sizeof *t);
    onnx__tensor_proto__init(t);
    if (name) t->name = str(name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = alloc((size_t)(rank ? rank : 1) * sizeof *t->dims);
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    return t;
}

static void set_raw(Onnx__TensorProto *t, const void *data, size_t len)
{
    t->has_raw_data = 1;
    t->raw_data.len = len;
    t->raw_data.data = alloc(len);
    if (len) memcpy(t->raw_data.data, data, len);
}

/* One more element of a string tensor's string_data (len bytes of s). */
static void add_string(Onnx__TensorProto *t, const char *s, size_t len)
{
    ProtobufCBinaryData d = {len, alloc(len ? len : 1)};
    if (len) memcpy(d.data, s, len);
    APPEND(t->n_string_data, t->string_data, d);
}

static void add_init(Onnx__ModelProto *m, Onnx__TensorProto *t)
{
    APPEND(m->graph->n_initializer, m->graph->initializer, t);
}

static void set_external(Onnx__TensorProto *t, const char *location, const char *offset, const char *length)
{
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e = alloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = str(keys[i]);
        e->value = str(vals[i]);
        APPEND(t->n_external_data, t->external_data, e);
    }
}

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = alloc(sizeof *a);
    onnx__attribute_proto__init(a);
    if (name) a->name = str(name);
    if (type) {
        a->has_type = 1;
        a->type = (Onnx__AttributeProto__AttributeType)type;
    }
    APPEND(n->n_attribute, n->attribute, a);
    return a;
}

static uint8_t *pack(const Onnx__ModelProto *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = alloc(*len);
    onnx__model_proto__pack(m, buf);
    return buf;
}

static st_status load(const Onnx__ModelProto *m, const char *base_dir, st_graph **g)
{
    size_t len;
    uint8_t *buf = pack(m, &len);
    return st_onnx_load(buf, len, base_dir, g);
}

/* x: float [2, 3] -> Relu "relu" -> y */
static Onnx__ModelProto *relu_model(void)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, vinfo("x", ST_F32, 2, (int64_t[]){2, 3}));
    add_node(m, "Relu", "relu", "x", "y");
    add_output(m, vinfo("y", ST_F32, 2, (int64_t[]){2, 3}));
    return m;
}

/* Loads m and expects failure with code; every needle must be in the message. */
static void expect_error_(const char *file, int line, const Onnx__ModelProto *m, const char *base_dir,
                          st_status code, const char *n1, const char *n2, const char *n3)
{
    st_graph *g = (st_graph *)0x1;
    st_status s = load(m, base_dir, &g);
    const char *msg = st_last_error();
    check_total++;
    bool ok = s == code && g == NULL;
    const char *needles[3] = {n1, n2, n3};
    for (int i = 0; i < 3; i++)
        if (needles[i] && !strstr(msg, needles[i])) ok = false;
    if (!ok) {
        check_failures++;
        if (check_print_ok())
            fprintf(stderr, "%s:%d: expected %s naming '%s' '%s' '%s'; got %s: \"%s\"\n", file, line,
                    st_status_name(code), n1 ? n1 : "", n2 ? n2 : "", n3 ? n3 : "", st_status_name(s), msg);
    }
    if (s == ST_OK && g && g != (st_graph *)0x1) st_graph_free(g);
}
#define expect_error(m, dir, code, n1, n2, n3) expect_error_(__FILE__, __LINE__, m, dir, code, n1, n2, n3)

static st_graph *expect_load(const Onnx__ModelProto *m, const char *base_dir, const char *what)
{
    st_graph *g = NULL;
    st_status s = load(m, base_dir, &g);
    CHECKF(s == ST_OK && g, "%s: %s: %s", what, st_status_name(s), st_last_error());
    return s == ST_OK ? g : NULL;
}

static int value_id(const st_graph *g, const char *name)
{
    for (int i = 0; i < g->n_values; i++)
        if (strcmp(g->values[i].name, name) == 0) return i;
    return -1;
}

static const st_const *init_of(const st_graph *g, const char *name)
{
    int v = value_id(g, name);
    return v >= 0 ? g->values[v].init : NULL;
}

/* ---- malformed bytes ---- */

static void test_bytes(void)
{
    st_graph *g = (st_graph *)0x1;
    uint8_t one = 0;
    CHECK(st_onnx_load(&one, 0, NULL, &g) == ST_ERR_MODEL && g == NULL);
    CHECK_MSG(st_last_error(), "empty");

    /* every strict prefix of a valid model is malformed: cut inside a
     * field it does not parse, cut between fields it lacks the graph or
     * the opset_import that follow */
    Onnx__ModelProto *m = relu_model();
    Onnx__TensorProto *w = tensor("w", ST_F32, 1, (int64_t[]){6});
    set_raw(w, (float[]){1, 2, 3, 4, 5, 6}, 24);
    add_init(m, w);
    size_t len;
    uint8_t *buf = pack(m, &len);
    g = NULL;
    CHECKF(st_onnx_load(buf, len, NULL, &g) == ST_OK, "%s", st_last_error());
    st_graph_free(g);
    long prefix_bad = 0;
    for (size_t cut = 1; cut < len; cut++) {
        g = (st_graph *)0x1;
        st_status s = st_onnx_load(buf, cut, NULL, &g);
        if (s != ST_ERR_MODEL || g != NULL || !*st_last_error()) {
            prefix_bad++;
            CHECKF(0, "prefix of %zu/%zu bytes: %s \"%s\"", cut, len, st_status_name(s), st_last_error());
            if (s == ST_OK) st_graph_free(g);
        }
    }
    CHECK(prefix_bad == 0);
    /* cut in the middle of the graph: the parse fails, and says so */
    CHECK(st_onnx_load(buf, len / 2, NULL, &g) == ST_ERR_MODEL);
    CHECK_MSG(st_last_error(), "truncated");

    /* random bytes */
    test_rng r = {0x5eed2001};
    uint8_t junk[512];
    for (int i = 0; i < 500; i++) {
        size_t n = (size_t)rng_range(&r, 1, sizeof junk);
        for (size_t k = 0; k < n; k++) junk[k] = (uint8_t)rng_u64(&r);
        g = (st_graph *)0x1;
        st_status s = st_onnx_load(junk, n, NULL, &g);
        CHECKF(s == ST_ERR_MODEL && g == NULL && *st_last_error(), "random bytes #%d: %s", i, st_status_name(s));
        if (s == ST_OK) st_graph_free(g);
    }
    /* a valid model with random bytes changed must load or fail cleanly
     * (the sanitizer build catches what this cannot see) */
    uint8_t *mut = alloc(len);
    for (int i = 0; i < 2000; i++) {
        memcpy(mut, buf, len);
        int flips = (int)rng_range(&r, 1, 3);
        for (int k = 0; k < flips; k++) mut[rng_range(&r, 0, (int64_t)len - 1)] = (uint8_t)rng_u64(&r);
        g = NULL;
        st_status s = st_onnx_load(mut, len, NULL, &g);
        CHECK((s == ST_OK) == (g != NULL));
        if (s != ST_OK) CHECK(*st_last_error());
        st_graph_free(g);
    }

    /* valid protobuf, not ONNX: only fields ModelProto does not have
     * (field 100 varint 5, field 101 bytes "hello") */
    static const uint8_t foreign[] = {0xa0, 0x06, 0x05, 0xaa, 0x06, 0x05, 'h', 'e', 'l', 'l', 'o'};
    CHECK(st_onnx_load(foreign, sizeof foreign, NULL, &g) == ST_ERR_MODEL);
    CHECK_MSG(st_last_error(), "not an ONNX model");
    CHECK_MSG(st_last_error(), "graph");
    /* a TensorProto is not a model either */
    Onnx__TensorProto *t = tensor("t", ST_F32, 1, (int64_t[]){2});
    set_raw(t, (float[]){1, 2}, 8);
    size_t tl = onnx__tensor_proto__get_packed_size(t);
    uint8_t *tb = alloc(tl);
    onnx__tensor_proto__pack(t, tb);
    g = (st_graph *)0x1;
    CHECK(st_onnx_load(tb, tl, NULL, &g) == ST_ERR_MODEL && g == NULL);
    CHECK(*st_last_error());
    /* a graph but neither ir_version nor opset_import */
    m = relu_model();
    m->has_ir_version = 0;
    m->n_opset_import = 0;
    expect_error(m, NULL, ST_ERR_MODEL, "not an ONNX model", "ir_version", NULL);
    /* ir_version >= 3 must declare its opsets */
    m = relu_model();
    m->n_opset_import = 0;
    expect_error(m, NULL, ST_ERR_MODEL, "opset_import", NULL, NULL);
    arena_free();
}

/* ---- opsets and ops ---- */

static void test_opsets(void)
{
    char newer[32], max[32];
    snprintf(newer, sizeof newer, "opset %d", ST_MAX_OPSET + 1);
    snprintf(max, sizeof max, "%d", ST_MAX_OPSET);
    Onnx__ModelProto *m = relu_model();
    m->opset_import[0]->version = ST_MAX_OPSET + 1;
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, newer, max, NULL);
    /* "ai.onnx" is the default domain spelled out */
    m = relu_model();
    m->opset_import[0]->domain = str("ai.onnx");
    m->opset_import[0]->version = ST_MAX_OPSET + 1;
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, newer, NULL, NULL);
    m = relu_model();
    m->opset_import[0]->version = ST_MAX_OPSET;
    st_graph *g = expect_load(m, NULL, "the newest supported opset");
    st_graph_free(g);

    /* a node whose domain the model does not import */
    m = relu_model();
    m->graph->node[0]->domain = str("com.nowhere");
    expect_error(m, NULL, ST_ERR_MODEL, "relu", "com.nowhere", NULL);
    arena_free();
}

static void expect_session_refused(const Onnx__ModelProto *m, const char *n1, const char *n2, const char *n3,
                                   const char *n4)
{
    size_t len;
    uint8_t *buf = pack(m, &len);
    st_model *model = NULL;
    st_status s = st_model_load_memory(buf, len, NULL, &model);
    CHECKF(s == ST_OK, "an unknown op must load: %s", st_last_error());
    if (s != ST_OK) return;
    st_session *sess = (st_session *)0x1;
    s = st_session_create(model, NULL, &sess);
    CHECKF(s == ST_ERR_UNSUPPORTED, "session on an unknown op: %s", st_status_name(s));
    CHECK(sess == NULL);
    const char *msg = st_last_error();
    const char *needles[4] = {n1, n2, n3, n4};
    for (int i = 0; i < 4; i++)
        if (needles[i]) CHECK_MSG(msg, needles[i]);
    if (s == ST_OK) st_session_free(sess);
    st_model_free(model);
}

static void test_unknown_op(void)
{
    Onnx__ModelProto *m = relu_model();
    m->graph->node[0]->op_type = str("FrobnicateXYZ");
    m->graph->node[0]->name = str("frob_node");
    st_graph *g = expect_load(m, NULL, "an unknown op");
    if (g) {
        CHECK(g->n_nodes == 1 && g->nodes[0].op == NULL && strcmp(g->nodes[0].op_type, "FrobnicateXYZ") == 0);
        st_graph_free(g);
    }
    expect_session_refused(m, "FrobnicateXYZ", "ai.onnx", "opset 13", "frob_node");

    /* an op in a custom domain names that domain and its opset */
    m = relu_model();
    add_opset(m, "com.acme", 3);
    m->graph->node[0]->domain = str("com.acme");
    m->graph->node[0]->op_type = str("Warp");
    expect_session_refused(m, "Warp", "com.acme", "opset 3", "relu");
    arena_free();
}

/* ---- graph structure ---- */

static void test_structure(void)
{
    /* a cycle: a = Add(x, c), c = Relu(a) */
    Onnx__ModelProto *m = new_model(13);
    add_input(m, vinfo("x", ST_F32, 1, (int64_t[]){4}));
    add_node(m, "Add", "add_a", "x,c", "a");
    add_node(m, "Relu", "relu_c", "a", "c");
    add_output(m, vinfo("c", ST_F32, 1, (int64_t[]){4}));
    expect_error(m, NULL, ST_ERR_MODEL, "cycle", NULL, NULL);
    const char *msg = st_last_error();
    CHECKF(strstr(msg, "add_a") || strstr(msg, "relu_c"), "the cycle message names no node: %s", msg);

    /* a node reading its own output */
    m = new_model(13);
    add_input(m, vinfo("x", ST_F32, 1, (int64_t[]){4}));
    add_node(m, "Add", "self_loop", "x,y", "y");
    add_output(m, vinfo("y", ST_F32, 1, (int64_t[]){4}));
    expect_error(m, NULL, ST_ERR_MODEL, "cycle", "self_loop", NULL);

    /* two producers of one value */
    m = relu_model();
    add_node(m, "Relu", "relu_again", "x", "y");
    expect_error(m, NULL, ST_ERR_MODEL, "'y'", "relu_again", "duplicate");
    /* a node output named like a graph input */
    m = relu_model();
    add_node(m, "Relu", "shadow", "y", "x");
    expect_error(m, NULL, ST_ERR_MODEL, "'x'", "shadow", "duplicate");
    /* two initializers of one name */
    m = relu_model();
    Onnx__TensorProto *w = tensor("dup_w", ST_F32, 0, NULL);
    set_raw(w, (float[]){1}, 4);
    add_init(m, w);
    add_init(m, w);
    expect_error(m, NULL, ST_ERR_MODEL, "dup_w", "duplicate", NULL);
    /* two graph inputs of one name */
    m = relu_model();
    add_input(m, vinfo("x", ST_F32, 2, (int64_t[]){2, 3}));
    expect_error(m, NULL, ST_ERR_MODEL, "'x'", "duplicate", NULL);
    /* an output listed twice */
    m = relu_model();
    add_output(m, vinfo("y", ST_F32, 2, (int64_t[]){2, 3}));
    expect_error(m, NULL, ST_ERR_MODEL, "'y'", "twice", NULL);

    /* an input nobody produces */
    m = relu_model();
    add_node(m, "Add", "adder", "y,ghost", "z");
    expect_error(m, NULL, ST_ERR_MODEL, "ghost", "adder", NULL);
    /* an output nobody produces */
    m = relu_model();
    add_output(m, vinfo("phantom", ST_F32, 0, NULL));
    expect_error(m, NULL, ST_ERR_MODEL, "phantom", NULL, NULL);
    /* no outputs at all */
    m = relu_model();
    m->graph->n_output = 0;
    expect_error(m, NULL, ST_ERR_MODEL, "no outputs", NULL, NULL);
    /* a node without op_type */
    m = relu_model();
    m->graph->node[0]->op_type = str("");
    expect_error(m, NULL, ST_ERR_MODEL, "node #0", "op_type", NULL);
    /* a graph input with a negative dim */
    m = new_model(13);
    add_input(m, vinfo("xneg", ST_F32, 2, (int64_t[]){2, -3}));
    add_node(m, "Relu", "relu", "xneg", "y");
    add_output(m, vinfo("y", ST_F32, -1, NULL));
    expect_error(m, NULL, ST_ERR_MODEL, "xneg", "negative", NULL);
    /* a graph input without element type */
    m = relu_model();
    m->graph->input[0]->type->tensor_type->has_elem_type = 0;
    expect_error(m, NULL, ST_ERR_MODEL, "'x'", "element type", NULL);

    /* a graph input of a rank strata cannot hold, and one of a sequence type */
    m = relu_model();
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    m->graph->input[0] = vinfo("x", ST_F32, 9, nine);
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, "'x'", "rank 9", NULL);
    m = relu_model();
    Onnx__TypeProto *seq = alloc(sizeof *seq);
    onnx__type_proto__init(seq);
    seq->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    seq->sequence_type = alloc(sizeof *seq->sequence_type);
    onnx__type_proto__sequence__init(seq->sequence_type);
    seq->sequence_type->elem_type = m->graph->input[0]->type;
    m->graph->input[0]->type = seq;
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, "'x'", "sequence", NULL);
    /* symbolic dims load as -1 with their names */
    m = relu_model();
    Onnx__TensorShapeProto__Dimension *d0 = m->graph->input[0]->type->tensor_type->shape->dim[0];
    d0->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d0->dim_param = str("batch");
    {
        st_graph *gs = expect_load(m, NULL, "a symbolic dim");
        if (gs) {
            const st_value *x = &gs->values[gs->inputs[0]];
            CHECK(x->rank == 2 && x->dims[0] == -1 && x->dims[1] == 3 && x->dim_names[0] &&
                  strcmp(x->dim_names[0], "batch") == 0 && x->dtype == ST_F32);
            st_graph_free(gs);
        }
    }

    /* good: nodes out of order in the file are sorted; an optional input
     * left empty is -1; an initializer listed as an input (IR < 4) stays a
     * constant, not a graph input */
    m = new_model(13);
    add_input(m, vinfo("x", ST_F32, 1, (int64_t[]){4}));
    add_input(m, vinfo("bias", ST_F32, 1, (int64_t[]){4}));
    Onnx__TensorProto *b = tensor("bias", ST_F32, 1, (int64_t[]){4});
    set_raw(b, (float[]){1, 2, 3, 4}, 16);
    add_init(m, b);
    add_node(m, "Relu", "second", "t", "y");
    add_node(m, "Add", "first", "x,bias", "t");
    add_node(m, "Clip", "third", "y,,", "z");
    add_output(m, vinfo("z", ST_F32, 1, (int64_t[]){4}));
    st_graph *g = expect_load(m, NULL, "out-of-order nodes");
    if (g) {
        CHECK(g->n_nodes == 3);
        CHECK(strcmp(g->nodes[0].name, "first") == 0 && strcmp(g->nodes[1].name, "second") == 0 &&
              strcmp(g->nodes[2].name, "third") == 0);
        CHECK(g->nodes[2].n_in == 3 && g->nodes[2].in[1] == -1 && g->nodes[2].in[2] == -1);
        CHECK(g->n_inputs == 1 && strcmp(g->values[g->inputs[0]].name, "x") == 0);
        for (int i = 0; i < g->n_nodes; i++)
            for (int k = 0; k < g->nodes[i].n_out; k++) CHECK(g->values[g->nodes[i].out[k]].producer == i);
        CHECK(init_of(g, "bias") && ((float *)init_of(g, "bias")->data)[3] == 4.0f);
        st_graph_free(g);
    }
    /* an unnamed node gets "<op_type>_<index>" */
    m = relu_model();
    m->graph->node[0]->name = NULL;
    g = expect_load(m, NULL, "an unnamed node");
    if (g) {
        CHECK(strcmp(g->nodes[0].name, "Relu_0") == 0);
        st_graph_free(g);
    }
    arena_free();
}

/* ---- tensors ---- */

static void test_tensor_errors(void)
{
    /* raw_data of the wrong size */
    Onnx__ModelProto *m = relu_model();
    Onnx__TensorProto *t = tensor("w_short", ST_F32, 2, (int64_t[]){2, 3});
    set_raw(t, (float[]){1, 2, 3, 4, 5}, 20);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_short", "raw_data", "20");
    m = relu_model();
    t = tensor("w_long", ST_F16, 1, (int64_t[]){2});
    set_raw(t, (uint16_t[]){1, 2, 3}, 6);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_long", "raw_data", NULL);
    /* a typed field of the wrong length */
    m = relu_model();
    t = tensor("w_typed", ST_F32, 1, (int64_t[]){6});
    t->n_float_data = 5;
    t->float_data = alloc(5 * sizeof(float));
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_typed", "5", NULL);
    /* no data at all for a non-empty shape */
    m = relu_model();
    add_init(m, tensor("w_nodata", ST_I64, 1, (int64_t[]){3}));
    expect_error(m, NULL, ST_ERR_MODEL, "w_nodata", NULL, NULL);
    /* a negative dim */
    m = relu_model();
    t = tensor("w_neg", ST_F32, 2, (int64_t[]){2, -3});
    set_raw(t, NULL, 0);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_neg", "negative", NULL);
    /* dims whose product overflows: 2^31 cubed, and two near INT64_MAX */
    m = relu_model();
    t = tensor("w_huge", ST_F32, 3, (int64_t[]){(int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31});
    set_raw(t, NULL, 0);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_huge", "overflow", NULL);
    m = relu_model();
    t = tensor("w_max", ST_U8, 2, (int64_t[]){INT64_MAX, INT64_MAX});
    set_raw(t, NULL, 0);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_max", "overflow", NULL);
    m = relu_model();
    t = tensor("w_wrap", ST_F64, 2, (int64_t[]){(int64_t)1 << 61, 8}); /* 2^64 bytes: wraps to 0 in uint64 */
    set_raw(t, NULL, 0);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_wrap", "overflow", NULL);
    /* rank beyond ST_MAX_RANK */
    m = relu_model();
    int64_t ones[ST_MAX_RANK + 1];
    for (int i = 0; i <= ST_MAX_RANK; i++) ones[i] = 1;
    t = tensor("w_rank", ST_F32, ST_MAX_RANK + 1, ones);
    set_raw(t, (float[]){1}, 4);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, "w_rank", "rank", NULL);
    /* data types; strings hold their values in string_data, count by count */
    m = relu_model();
    t = tensor("w_string", ST_STRING, 1, (int64_t[]){1});
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_string", "has 0 strings, its shape needs 1", NULL);
    m = relu_model();
    t = tensor("w_string_raw", ST_STRING, 1, (int64_t[]){1});
    set_raw(t, "ab", 2);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_string_raw", "string_data, not raw or external data", NULL);
    m = relu_model();
    t = tensor("w_string_nul", ST_STRING, 1, (int64_t[]){2});
    add_string(t, "ok", 2);
    add_string(t, "a\0b", 3);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, "w_string_nul", "string 1 holds a NUL byte", NULL);
    m = relu_model();
    t = tensor("w_dtype", 99, 1, (int64_t[]){1});
    set_raw(t, (float[]){1}, 4);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, "w_dtype", "99", NULL);
    m = relu_model();
    t = tensor("w_untyped", ST_F32, 1, (int64_t[]){1});
    t->has_data_type = 0;
    set_raw(t, (float[]){1}, 4);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "w_untyped", "data type", NULL);
    /* an unnamed initializer */
    m = relu_model();
    t = tensor(NULL, ST_F32, 0, NULL);
    set_raw(t, (float[]){1}, 4);
    add_init(m, t);
    expect_error(m, NULL, ST_ERR_MODEL, "initializer #0", "name", NULL);
    arena_free();
}

/* Loads one initializer "w" and compares its data with want. */
static void expect_tensor(Onnx__TensorProto *t, st_dtype dt, int rank, const int64_t *dims, const void *want,
                          size_t bytes, const char *what)
{
    Onnx__ModelProto *m = relu_model();
    add_init(m, t);
    st_graph *g = expect_load(m, NULL, what);
    if (!g) return;
    const st_const *c = init_of(g, t->name);
    CHECKF(c != NULL, "%s: no initializer", what);
    if (c) {
        CHECKF(c->dtype == dt && c->rank == rank && c->bytes == bytes, "%s: dtype %d rank %d bytes %llu", what,
               c->dtype, c->rank, (unsigned long long)c->bytes);
        for (int i = 0; i < rank && i < c->rank; i++) CHECKF(c->dims[i] == dims[i], "%s: dim %d", what, i);
        CHECKF(c->bytes != bytes || bytes == 0 || memcmp(c->data, want, bytes) == 0, "%s: data differs", what);
        int v = value_id(g, t->name);
        CHECK(g->values[v].dtype == dt && g->values[v].rank == rank && !g->values[v].is_input);
    }
    st_graph_free(g);
}

static void test_tensor_data(void)
{
    int64_t d23[2] = {2, 3}, d4[1] = {4};
    /* raw_data, every dtype: the bytes pass through unchanged */
    static const st_dtype all[] = {ST_F32, ST_U8, ST_I8, ST_U16, ST_I16, ST_I32, ST_I64, ST_BOOL,
                                   ST_F16, ST_F64, ST_U32, ST_U64, ST_BF16};
    test_rng r = {0x5eed2002};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        size_t bytes = 6 * st_dtype_size(all[i]);
        uint8_t *raw = alloc(bytes);
        for (size_t k = 0; k < bytes; k++) raw[k] = (uint8_t)rng_u64(&r);
        if (all[i] == ST_BOOL)
            for (size_t k = 0; k < bytes; k++) raw[k] &= 1;
        Onnx__TensorProto *t = tensor("w", all[i], 2, d23);
        set_raw(t, raw, bytes);
        char what[64];
        snprintf(what, sizeof what, "raw_data %s", st_dtype_name(all[i]));
        expect_tensor(t, all[i], 2, d23, raw, bytes, what);
    }
    /* a scalar and an empty tensor */
    Onnx__TensorProto *t = tensor("w", ST_F32, 0, NULL);
    set_raw(t, (float[]){2.5f}, 4);
    expect_tensor(t, ST_F32, 0, NULL, (float[]){2.5f}, 4, "raw scalar");
    t = tensor("w", ST_F32, 2, (int64_t[]){0, 3});
    set_raw(t, NULL, 0);
    expect_tensor(t, ST_F32, 2, (int64_t[]){0, 3}, NULL, 0, "raw empty");
    t = tensor("w", ST_I64, 1, (int64_t[]){0});
    expect_tensor(t, ST_I64, 1, (int64_t[]){0}, NULL, 0, "typed empty");

    /* float_data */
    t = tensor("w", ST_F32, 1, d4);
    float fd[4] = {1.5f, -2.0f, 0.0f, 3.25f};
    t->n_float_data = 4;
    t->float_data = fd;
    expect_tensor(t, ST_F32, 1, d4, fd, 16, "float_data");
    /* int32_data for f16 and bf16: the bit patterns, in the low 16 bits */
    int32_t hbits[4] = {0x3c00, 0xc000, 0x7c00, 0x0001};
    t = tensor("w", ST_F16, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = hbits;
    expect_tensor(t, ST_F16, 1, d4, (uint16_t[]){0x3c00, 0xc000, 0x7c00, 0x0001}, 8, "int32_data f16");
    int32_t bbits[4] = {0x3f80, 0xbf80, 0x7f80, 0x4049};
    t = tensor("w", ST_BF16, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = bbits;
    expect_tensor(t, ST_BF16, 1, d4, (uint16_t[]){0x3f80, 0xbf80, 0x7f80, 0x4049}, 8, "int32_data bf16");
    /* int32_data for int8 (negative values), uint8, int16, uint16, int32, bool */
    int32_t i8v[4] = {-128, -1, 0, 127};
    t = tensor("w", ST_I8, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = i8v;
    expect_tensor(t, ST_I8, 1, d4, (int8_t[]){-128, -1, 0, 127}, 4, "int32_data int8");
    int32_t u8v[4] = {0, 1, 200, 255};
    t = tensor("w", ST_U8, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = u8v;
    expect_tensor(t, ST_U8, 1, d4, (uint8_t[]){0, 1, 200, 255}, 4, "int32_data uint8");
    int32_t i16v[4] = {-32768, -2, 3, 32767};
    t = tensor("w", ST_I16, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = i16v;
    expect_tensor(t, ST_I16, 1, d4, (int16_t[]){-32768, -2, 3, 32767}, 8, "int32_data int16");
    int32_t u16v[4] = {0, 1, 40000, 65535};
    t = tensor("w", ST_U16, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = u16v;
    expect_tensor(t, ST_U16, 1, d4, (uint16_t[]){0, 1, 40000, 65535}, 8, "int32_data uint16");
    int32_t i32v[4] = {INT32_MIN, -7, 0, INT32_MAX};
    t = tensor("w", ST_I32, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = i32v;
    expect_tensor(t, ST_I32, 1, d4, i32v, 16, "int32_data int32");
    int32_t bv[4] = {0, 1, 1, 0};
    t = tensor("w", ST_BOOL, 1, d4);
    t->n_int32_data = 4;
    t->int32_data = bv;
    expect_tensor(t, ST_BOOL, 1, d4, (uint8_t[]){0, 1, 1, 0}, 4, "int32_data bool");
    /* int64_data, double_data, uint64_data (uint32 and uint64) */
    int64_t i64v[4] = {INT64_MIN, -1, 1, INT64_MAX};
    t = tensor("w", ST_I64, 1, d4);
    t->n_int64_data = 4;
    t->int64_data = i64v;
    expect_tensor(t, ST_I64, 1, d4, i64v, 32, "int64_data");
    double dv[4] = {1e300, -0.0, 0.1, -2.5};
    t = tensor("w", ST_F64, 1, d4);
    t->n_double_data = 4;
    t->double_data = dv;
    expect_tensor(t, ST_F64, 1, d4, dv, 32, "double_data");
    uint64_t u64v[4] = {0, 1, (uint64_t)1 << 63, UINT64_MAX};
    t = tensor("w", ST_U64, 1, d4);
    t->n_uint64_data = 4;
    t->uint64_data = u64v;
    expect_tensor(t, ST_U64, 1, d4, u64v, 32, "uint64_data uint64");
    uint64_t u32v[4] = {0, 1, 3000000000u, UINT32_MAX};
    t = tensor("w", ST_U32, 1, d4);
    t->n_uint64_data = 4;
    t->uint64_data = u32v;
    expect_tensor(t, ST_U32, 1, d4, (uint32_t[]){0, 1, 3000000000u, UINT32_MAX}, 16, "uint64_data uint32");

    /* st_onnx_load_tensor: a serialized TensorProto, as test data stores it */
    t = tensor("probe", ST_I32, 1, (int64_t[]){2});
    set_raw(t, (int32_t[]){7, -7}, 8);
    size_t tl = onnx__tensor_proto__get_packed_size(t);
    uint8_t *tb = alloc(tl);
    onnx__tensor_proto__pack(t, tb);
    st_const *c = NULL;
    char *name = NULL;
    CHECKF(st_onnx_load_tensor(tb, tl, &c, &name) == ST_OK, "%s", st_last_error());
    if (c) {
        CHECK(c->dtype == ST_I32 && c->rank == 1 && c->dims[0] == 2 && ((int32_t *)c->data)[1] == -7);
        CHECK(name && strcmp(name, "probe") == 0);
        st_const_free(c);
        free(name);
    }
    CHECK(st_onnx_load_tensor(tb, tl / 2, &c, &name) == ST_ERR_MODEL);
    CHECK_MSG(st_last_error(), "TensorProto");
    /* ... which has no directory, so external data is refused by name */
    t = tensor("ext_probe", ST_F32, 1, (int64_t[]){1});
    set_external(t, "data.bin", NULL, NULL);
    tl = onnx__tensor_proto__get_packed_size(t);
    tb = alloc(tl);
    onnx__tensor_proto__pack(t, tb);
    CHECK(st_onnx_load_tensor(tb, tl, &c, &name) == ST_ERR_MODEL);
    CHECK_MSG(st_last_error(), "ext_probe");
    arena_free();
}

/* ---- external data ---- */

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fclose(f);
}

static char tmp_root[PATH_MAX];

static void path_in(char *out, const char *rel)
{
    snprintf(out, PATH_MAX, "%s/%s", tmp_root, rel);
}

static Onnx__ModelProto *external_model(const char *tname, const char *loc, const char *offset, const char *length)
{
    Onnx__ModelProto *m = relu_model();
    Onnx__TensorProto *t = tensor(tname, ST_F32, 2, (int64_t[]){2, 3});
    set_external(t, loc, offset, length);
    add_init(m, t);
    return m;
}

static void remove_tree(void)
{
    static const char *files[] = {"model/w.bin", "model/sub/v.bin", "model/short.bin", "model/escape.bin",
                                  "model/inside_link.bin", "model/sib.bin", "model/dirlink.bin", "model/m.onnx",
                                  "outside.bin", "model2/data.bin", NULL};
    static const char *dirs[] = {"model/sub", "model", "model2", NULL};
    char p[PATH_MAX];
    for (int i = 0; files[i]; i++) {
        path_in(p, files[i]);
        unlink(p);
    }
    for (int i = 0; dirs[i]; i++) {
        path_in(p, dirs[i]);
        rmdir(p);
    }
    rmdir(tmp_root);
}

static void test_external(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_root, sizeof tmp_root, "%s/strata_loader_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_root)) {
        CHECKF(0, "mkdtemp: %s", strerror(errno));
        return;
    }
    char p[PATH_MAX], q[PATH_MAX], base[PATH_MAX];
    path_in(base, "model");
    mkdir(base, 0700);
    path_in(p, "model/sub");
    mkdir(p, 0700);
    path_in(p, "model2");
    mkdir(p, 0700);
    float data[6] = {1, -2, 3.5f, 4, 5, -6.25f};
    uint8_t w[8 + 24];
    memset(w, 0xee, 8);
    memcpy(w + 8, data, 24);
    path_in(p, "model/w.bin");
    write_file(p, w, sizeof w);
    path_in(p, "model/sub/v.bin");
    write_file(p, data, 24);
    path_in(p, "model/short.bin");
    write_file(p, data, 10);
    path_in(p, "outside.bin");
    write_file(p, data, 24);
    path_in(p, "model2/data.bin");
    write_file(p, data, 24);
    path_in(p, "model/escape.bin");
    CHECK(symlink("../outside.bin", p) == 0);
    path_in(p, "model/inside_link.bin");
    CHECK(symlink("sub/v.bin", p) == 0);
    path_in(p, "model/sib.bin"); /* model2 starts with "model": a prefix test is not enough */
    CHECK(symlink("../model2/data.bin", p) == 0);
    path_in(p, "model/dirlink.bin"); /* absolute link to outside */
    path_in(q, "outside.bin");
    CHECK(symlink(q, p) == 0);

    /* good: offset into a file, a subdirectory, a link that stays inside */
    Onnx__ModelProto *m = external_model("w_ext", "w.bin", "8", "24");
    st_graph *g = expect_load(m, base, "external data at an offset");
    if (g) {
        const st_const *c = init_of(g, "w_ext");
        CHECK(c && c->bytes == 24 && memcmp(c->data, data, 24) == 0);
        st_graph_free(g);
    }
    m = external_model("w_sub", "sub/v.bin", NULL, NULL);
    g = expect_load(m, base, "external data in a subdirectory");
    if (g) {
        const st_const *c = init_of(g, "w_sub");
        CHECK(c && memcmp(c->data, data, 24) == 0);
        st_graph_free(g);
    }
    m = external_model("w_link", "inside_link.bin", "0", NULL);
    g = expect_load(m, base, "a link inside the directory");
    if (g) {
        CHECK(init_of(g, "w_link") && memcmp(init_of(g, "w_link")->data, data, 24) == 0);
        st_graph_free(g);
    }
    /* the same through st_model_load: the directory is the file's */
    m = external_model("w_file", "w.bin", "8", NULL);
    size_t len;
    uint8_t *buf = pack(m, &len);
    path_in(p, "model/m.onnx");
    write_file(p, buf, len);
    st_model *model = NULL;
    CHECKF(st_model_load(p, &model) == ST_OK, "%s", st_last_error());
    st_model_free(model);

    /* bad: paths that leave the directory */
    m = external_model("w_dotdot", "../outside.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_dotdot", "../outside.bin", NULL);
    m = external_model("w_dotdot2", "sub/../../outside.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_dotdot2", "sub/../../outside.bin", NULL);
    path_in(q, "outside.bin");
    m = external_model("w_abs", q, NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_abs", q, "absolute");
    m = external_model("w_escape", "escape.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_escape", "escape.bin", "outside");
    m = external_model("w_sib", "sib.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_sib", "sib.bin", "outside");
    m = external_model("w_abslink", "dirlink.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_abslink", "dirlink.bin", "outside");
    /* through st_model_load, the message also names the model file */
    m = external_model("w_file_escape", "escape.bin", NULL, NULL);
    buf = pack(m, &len);
    path_in(p, "model/m.onnx");
    write_file(p, buf, len);
    model = NULL;
    CHECK(st_model_load(p, &model) == ST_ERR_MODEL && model == NULL);
    CHECK_MSG(st_last_error(), "m.onnx");
    CHECK_MSG(st_last_error(), "w_file_escape");

    /* bad: too little data */
    m = external_model("w_short", "short.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_short", "short.bin", "too short");
    m = external_model("w_past", "w.bin", "16", NULL); /* 32 bytes, 24 needed from 16 */
    expect_error(m, base, ST_ERR_MODEL, "w_past", "w.bin", "too short");
    m = external_model("w_far", "w.bin", "4096", NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_far", "w.bin", NULL);
    m = external_model("w_len", "w.bin", "8", "20"); /* length disagrees with the shape */
    expect_error(m, base, ST_ERR_MODEL, "w_len", "20", NULL);
    m = external_model("w_negoff", "w.bin", "-8", NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_negoff", "-8", NULL);
    m = external_model("w_badoff", "w.bin", "8x", NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_badoff", "8x", NULL);
    /* bad: the location is a directory */
    m = external_model("w_isdir", "sub", NULL, NULL);
    expect_error(m, base, ST_ERR_IO, "w_isdir", "sub", NULL);
    /* bad: no file, no location, no directory */
    m = external_model("w_missing", "missing.bin", NULL, NULL);
    expect_error(m, base, ST_ERR_IO, "w_missing", "missing.bin", NULL);
    m = external_model("w_noloc", NULL, "0", NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_noloc", "location", NULL);
    m = external_model("w_empty", "", NULL, NULL);
    expect_error(m, base, ST_ERR_MODEL, "w_empty", "location", NULL);
    m = external_model("w_nodir", "w.bin", NULL, NULL);
    expect_error(m, NULL, ST_ERR_MODEL, "w_nodir", "w.bin", NULL);

    remove_tree();
    arena_free();
}

/* ---- Constant nodes ---- */

static void test_constants(void)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, vinfo("x", ST_F32, 1, (int64_t[]){3}));
    Onnx__NodeProto *n = add_node(m, "Constant", "c_tensor", NULL, "ct");
    Onnx__AttributeProto *a = add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor("", ST_F32, 1, (int64_t[]){3});
    set_raw(a->t, (float[]){1, 2, 3}, 12);
    n = add_node(m, "Constant", "c_float", NULL, "cf");
    a = add_attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = 0.25f;
    n = add_node(m, "Constant", "c_floats", NULL, "cfs");
    a = add_attr(n, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 3;
    a->floats = (float[]){-1, 0.5f, 8};
    n = add_node(m, "Constant", "c_int", NULL, "ci");
    a = add_attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = -42;
    n = add_node(m, "Constant", "c_ints", NULL, "cis");
    a = add_attr(n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 2;
    a->ints = (int64_t[]){INT64_MIN, 7};
    n = add_node(m, "Constant", "c_empty", NULL, "cemp");
    a = add_attr(n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    add_node(m, "Add", "add", "x,ct", "y");
    add_output(m, vinfo("y", ST_F32, 1, (int64_t[]){3}));
    add_output(m, vinfo("cf", ST_F32, 0, NULL));
    add_output(m, vinfo("cfs", ST_F32, -1, NULL));
    add_output(m, vinfo("ci", ST_I64, -1, NULL));
    add_output(m, vinfo("cis", ST_I64, -1, NULL));
    add_output(m, vinfo("cemp", ST_I64, -1, NULL));
    st_graph *g = expect_load(m, NULL, "Constant nodes");
    if (g) {
        CHECKF(g->n_nodes == 1 && strcmp(g->nodes[0].op_type, "Add") == 0, "Constant nodes are not folded away");
        const st_const *c = init_of(g, "ct");
        CHECK(c && c->dtype == ST_F32 && c->rank == 1 && c->dims[0] == 3 && ((float *)c->data)[2] == 3.0f);
        CHECK(g->values[value_id(g, "ct")].producer == -1);
        c = init_of(g, "cf");
        CHECK(c && c->dtype == ST_F32 && c->rank == 0 && c->bytes == 4 && *(float *)c->data == 0.25f);
        c = init_of(g, "cfs");
        CHECK(c && c->dtype == ST_F32 && c->rank == 1 && c->dims[0] == 3 && ((float *)c->data)[1] == 0.5f);
        c = init_of(g, "ci");
        CHECK(c && c->dtype == ST_I64 && c->rank == 0 && *(int64_t *)c->data == -42);
        c = init_of(g, "cis");
        CHECK(c && c->dtype == ST_I64 && c->rank == 1 && c->dims[0] == 2 && ((int64_t *)c->data)[0] == INT64_MIN);
        c = init_of(g, "cemp");
        CHECK(c && c->dtype == ST_I64 && c->rank == 1 && c->dims[0] == 0 && c->bytes == 0);
        CHECK(g->nodes[0].in[1] == value_id(g, "ct"));
        st_graph_free(g);
    }
    /* string constants: a scalar, a list, and a string tensor, whose
     * strings must outlive the Constant node that held them */
    m = relu_model();
    n = add_node(m, "Constant", "c_string", NULL, "cs");
    a = add_attr(n, "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)str("hi");
    a->s.len = 2;
    n = add_node(m, "Constant", "c_strings", NULL, "css");
    a = add_attr(n, "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = 2;
    a->strings = alloc(2 * sizeof *a->strings);
    a->strings[0] = (ProtobufCBinaryData){1, (uint8_t *)str("s")};
    a->strings[1] = (ProtobufCBinaryData){0, (uint8_t *)str("")};
    n = add_node(m, "Constant", "c_string_t", NULL, "cst");
    a = add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor(NULL, ST_STRING, 2, (int64_t[]){1, 2});
    add_string(a->t, "z\xc3\xa9", 3);
    add_string(a->t, "w", 1);
    add_output(m, vinfo("cs", ST_STRING, 0, NULL));
    add_output(m, vinfo("css", ST_STRING, 1, (int64_t[]){2}));
    add_output(m, vinfo("cst", ST_STRING, 2, (int64_t[]){1, 2}));
    g = expect_load(m, NULL, "string constants");
    if (g) {
        const st_const *c = init_of(g, "cs");
        CHECK(c && c->dtype == ST_STRING && c->rank == 0 && c->bytes == sizeof(char *) && !strcmp(*(char **)c->data, "hi"));
        c = init_of(g, "css");
        CHECK(c && c->dtype == ST_STRING && c->rank == 1 && c->dims[0] == 2 && !strcmp(((char **)c->data)[0], "s") &&
              !strcmp(((char **)c->data)[1], ""));
        c = init_of(g, "cst");
        CHECK(c && c->dtype == ST_STRING && c->rank == 2 && c->dims[1] == 2 && !strcmp(((char **)c->data)[0], "z\xc3\xa9") &&
              !strcmp(((char **)c->data)[1], "w"));
        st_graph_free(g);
    }
    /* a failing Constant after other nodes were compacted over folded
     * Constants must leave every node with one owner (the sanitizer build
     * sees a double free otherwise) */
    m = relu_model();
    n = add_node(m, "Constant", "c_ok", NULL, "cok");
    a = add_attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    add_node(m, "Relu", "relu2", "x", "y2");
    n = add_node(m, "Constant", "c_sparse", NULL, "csp");
    a = add_attr(n, "sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    add_node(m, "Relu", "relu3", "x", "y3");
    add_node(m, "Concat", "join", "cok,y2,y3,csp", "all");
    add_output(m, vinfo("all", ST_F32, -1, NULL));
    expect_error(m, NULL, ST_ERR_UNSUPPORTED, "c_sparse", "sparse_value", NULL);
    /* two values */
    m = relu_model();
    n = add_node(m, "Constant", "c_two", NULL, "c2");
    a = add_attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a = add_attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    add_output(m, vinfo("c2", ST_F32, 0, NULL));
    expect_error(m, NULL, ST_ERR_MODEL, "c_two", "one", NULL);
    /* a tensor value whose data is broken names the attribute */
    m = relu_model();
    n = add_node(m, "Constant", "c_bad", NULL, "cb");
    a = add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor(NULL, ST_F32, 1, (int64_t[]){3});
    set_raw(a->t, (float[]){1}, 4);
    add_output(m, vinfo("cb", ST_F32, -1, NULL));
    expect_error(m, NULL, ST_ERR_MODEL, "value", "raw_data", NULL);
    arena_free();
}

/* ---- attributes ---- */

/* A subgraph whose one output is the enclosing graph's value outer_name. */
static Onnx__GraphProto *tiny_graph(const char *name, const char *outer_name)
{
    Onnx__GraphProto *g = alloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = str(name);
    g->n_output = 1;
    g->output = alloc(sizeof *g->output);
    g->output[0] = vinfo(outer_name, ST_F32, -1, NULL);
    return g;
}

static Onnx__SparseTensorProto *tiny_sparse(void)
{
    Onnx__SparseTensorProto *s = alloc(sizeof *s);
    onnx__sparse_tensor_proto__init(s);
    s->values = tensor("sv", ST_F32, 1, (int64_t[]){1});
    set_raw(s->values, (float[]){1}, 4);
    s->n_dims = 1;
    s->dims = alloc(sizeof(int64_t));
    s->dims[0] = 4;
    return s;
}

static void test_attributes(void)
{
    Onnx__ModelProto *m = relu_model();
    add_opset(m, "com.test", 1);
    Onnx__NodeProto *n = add_node(m, "Everything", "every_attr", "y", "z");
    n->domain = str("com.test");
    Onnx__AttributeProto *a = add_attr(n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = -1.5f;
    a = add_attr(n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = INT64_MIN;
    a = add_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)str("NOTSET");
    a->s.len = 6;
    a = add_attr(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor("tt", ST_I32, 2, (int64_t[]){1, 2});
    a->t->n_int32_data = 2;
    a->t->int32_data = (int32_t[]){5, -6};
    a = add_attr(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = tiny_graph("body", "x");
    a = add_attr(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 3;
    a->floats = (float[]){0.5f, -0.0f, 1e30f};
    a = add_attr(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 4;
    a->ints = (int64_t[]){0, -1, INT64_MAX, 3};
    a = add_attr(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = 2;
    a->strings = alloc(2 * sizeof *a->strings);
    a->strings[0].data = (uint8_t *)str("ab");
    a->strings[0].len = 2;
    a->strings[1].data = NULL;
    a->strings[1].len = 0;
    a = add_attr(n, "ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    a->n_tensors = 2;
    a->tensors = alloc(2 * sizeof *a->tensors);
    a->tensors[0] = tensor("t0", ST_F32, 1, (int64_t[]){1});
    set_raw(a->tensors[0], (float[]){9}, 4);
    a->tensors[1] = tensor("t1", ST_I64, 0, NULL);
    a->tensors[1]->n_int64_data = 1;
    a->tensors[1]->int64_data = (int64_t[]){-3};
    a = add_attr(n, "gs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    a->n_graphs = 1;
    a->graphs = alloc(sizeof *a->graphs);
    a->graphs[0] = tiny_graph("branch", "x");
    a = add_attr(n, "sp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    a->sparse_tensor = tiny_sparse();
    a = add_attr(n, "sps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS);
    a->n_sparse_tensors = 1;
    a->sparse_tensors = alloc(sizeof *a->sparse_tensors);
    a->sparse_tensors[0] = tiny_sparse();
    a = add_attr(n, "tp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
    a->tp = vinfo("unused", ST_F32, 1, (int64_t[]){2})->type;
    a = add_attr(n, "tps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS);
    a->n_type_protos = 1;
    a->type_protos = alloc(sizeof *a->type_protos);
    a->type_protos[0] = vinfo("unused2", ST_I64, 0, NULL)->type;
    /* untyped, as old exporters wrote them: the type comes from the field */
    a = add_attr(n, "uf", 0);
    a->has_f = 1;
    a->f = 2.0f;
    a = add_attr(n, "ui", 0);
    a->has_i = 1;
    a->i = 11;
    a = add_attr(n, "us", 0);
    a->has_s = 1;
    a->s.data = (uint8_t *)str("x");
    a->s.len = 1;
    a = add_attr(n, "ufs", 0);
    a->n_floats = 1;
    a->floats = (float[]){4};
    a = add_attr(n, "uis", 0);
    a->n_ints = 2;
    a->ints = (int64_t[]){1, 2};
    a = add_attr(n, "ut", 0);
    a->t = tensor("ut_t", ST_F32, 0, NULL);
    set_raw(a->t, (float[]){1}, 4);
    add_output(m, vinfo("z", ST_F32, -1, NULL));

    st_graph *g = expect_load(m, NULL, "attributes of every kind");
    if (g) {
        const st_node *nd = NULL;
        for (int i = 0; i < g->n_nodes; i++)
            if (strcmp(g->nodes[i].name, "every_attr") == 0) nd = &g->nodes[i];
        CHECK(nd && nd->n_attrs == 20 && nd->opset == 1 && strcmp(nd->domain, "com.test") == 0);
        if (nd) {
            const st_attr *x;
            CHECK((x = st_node_attr(nd, "f")) && x->type == ST_ATTR_FLOAT && x->f == -1.5f);
            CHECK(st_attr_float(nd, "f", 0) == -1.5f && st_attr_float(nd, "absent", 7) == 7);
            CHECK((x = st_node_attr(nd, "i")) && x->type == ST_ATTR_INT && x->i == INT64_MIN);
            CHECK(st_attr_int(nd, "i", 0) == INT64_MIN && st_attr_int(nd, "absent", 9) == 9);
            CHECK((x = st_node_attr(nd, "s")) && x->type == ST_ATTR_STRING && strcmp(x->s, "NOTSET") == 0);
            CHECK(strcmp(st_attr_string(nd, "s", ""), "NOTSET") == 0);
            CHECK((x = st_node_attr(nd, "t")) && x->type == ST_ATTR_TENSOR && x->t && x->t->dtype == ST_I32 &&
                  x->t->rank == 2 && x->t->dims[1] == 2 && ((int32_t *)x->t->data)[1] == -6);
            /* the subgraph reads x from the enclosing graph: an implicit input */
            CHECK((x = st_node_attr(nd, "g")) && x->type == ST_ATTR_GRAPH && x->g && x->g->n_outer == 1 &&
                  x->g->outer_src[0] == value_id(g, "x") && nd->n_implicit == 1 && nd->implicit[0] == value_id(g, "x"));
            int cnt = 0;
            const float *fs = st_attr_floats(nd, "fs", &cnt);
            CHECK(fs && cnt == 3 && fs[0] == 0.5f && fs[2] == 1e30f);
            const int64_t *is = st_attr_ints(nd, "is", &cnt);
            CHECK(is && cnt == 4 && is[1] == -1 && is[2] == INT64_MAX);
            CHECK(st_attr_ints(nd, "absent", &cnt) == NULL && cnt == 0);
            CHECK((x = st_node_attr(nd, "ss")) && x->type == ST_ATTR_STRINGS && x->n == 2 &&
                  strcmp(x->strings[0], "ab") == 0 && strcmp(x->strings[1], "") == 0);
            CHECK((x = st_node_attr(nd, "ts")) && x->type == ST_ATTR_TENSORS && x->n == 2 &&
                  x->tensors[0].dtype == ST_F32 && *(float *)x->tensors[0].data == 9 &&
                  x->tensors[1].dtype == ST_I64 && x->tensors[1].rank == 0 && *(int64_t *)x->tensors[1].data == -3);
            CHECK((x = st_node_attr(nd, "gs")) && x->type == ST_ATTR_GRAPHS);
            CHECK((x = st_node_attr(nd, "sp")) && x->type == ST_ATTR_SPARSE_TENSOR);
            CHECK((x = st_node_attr(nd, "sps")) && x->type == ST_ATTR_SPARSE_TENSORS);
            CHECK((x = st_node_attr(nd, "tp")) && x->type == ST_ATTR_TYPE_PROTO);
            CHECK((x = st_node_attr(nd, "tps")) && x->type == ST_ATTR_TYPE_PROTOS);
            CHECK((x = st_node_attr(nd, "uf")) && x->type == ST_ATTR_FLOAT && x->f == 2.0f);
            CHECK((x = st_node_attr(nd, "ui")) && x->type == ST_ATTR_INT && x->i == 11);
            CHECK((x = st_node_attr(nd, "us")) && x->type == ST_ATTR_STRING && strcmp(x->s, "x") == 0);
            CHECK((x = st_node_attr(nd, "ufs")) && x->type == ST_ATTR_FLOATS && x->n == 1 && x->floats[0] == 4);
            CHECK((x = st_node_attr(nd, "uis")) && x->type == ST_ATTR_INTS && x->n == 2 && x->ints[1] == 2);
            CHECK((x = st_node_attr(nd, "ut")) && x->type == ST_ATTR_TENSOR && x->t && *(float *)x->t->data == 1);
        }
        st_graph_free(g);
    }

    /* an attribute twice */
    m = relu_model();
    n = m->graph->node[0];
    add_attr(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->has_f = 1;
    add_attr(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->has_f = 1;
    expect_error(m, NULL, ST_ERR_MODEL, "relu", "alpha", "twice");
    /* an attribute without a name */
    m = relu_model();
    add_attr(m->graph->node[0], NULL, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->has_i = 1;
    expect_error(m, NULL, ST_ERR_MODEL, "relu", "no name", NULL);
    /* a tensor attribute without its tensor */
    m = relu_model();
    add_attr(m->graph->node[0], "weights", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    expect_error(m, NULL, ST_ERR_MODEL, "relu", "weights", NULL);
    /* a broken tensor inside a TENSORS attribute */
    m = relu_model();
    a = add_attr(m->graph->node[0], "many", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    a->n_tensors = 1;
    a->tensors = alloc(sizeof *a->tensors);
    a->tensors[0] = tensor("bad_member", ST_F32, 1, (int64_t[]){-1});
    expect_error(m, NULL, ST_ERR_MODEL, "bad_member", "negative", NULL);
    arena_free();
}

int main(void)
{
    test_bytes();
    test_opsets();
    test_unknown_op();
    test_structure();
    test_tensor_errors();
    test_tensor_data();
    test_external();
    test_constants();
    test_attributes();
    free(arena);
    return check_exit("test_loader");
}
