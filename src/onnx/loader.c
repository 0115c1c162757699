/*
 * loader.c — ONNX ModelProto -> st_graph.
 *
 * Owns: turning untrusted bytes into a validated graph.  Invariants on
 * success: every node input names a value that exists (or is omitted), no
 * value has two producers, nodes are in topological order, every constant's
 * byte size matches its dtype and shape, and external data was read only
 * from inside the model's directory.  On failure the message names the
 * tensor, node or field at fault.
 */
#include "onnx/loader.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "core/strings.h"
#include "core/strmap.h"
#include "onnx/onnx.pb-c.h"
#include "ops/op.h"

/* A single tensor may not claim more than this; the session's memory limit
 * applies later, this only stops size arithmetic from overflowing. */
#define ST_MAX_TENSOR_BYTES (1ull << 40)

static char *dup_str(const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static st_status oom(const char *what)
{
    return st_error(ST_ERR_NOMEM, "out of memory while loading %s", what);
}

/* ---- tensors ---- */

static bool dtype_loadable(int32_t t)
{
    return st_dtype_valid((st_dtype)t);
}

/* Checks dims and returns the packed byte size, or an error. */
static st_status check_dims(const char *what, const char *name, size_t n_dims, const int64_t *dims,
                            st_dtype dtype, uint64_t *bytes)
{
    if (n_dims > ST_MAX_RANK)
        return st_error(ST_ERR_UNSUPPORTED, "%s '%s': rank %zu exceeds strata's maximum of %d", what,
                        name, n_dims, ST_MAX_RANK);
    uint64_t n = st_dtype_size(dtype);
    for (size_t i = 0; i < n_dims; i++) {
        if (dims[i] < 0)
            return st_error(ST_ERR_MODEL, "%s '%s': dim %zu is negative (%lld)", what, name, i,
                            (long long)dims[i]);
        if (dims[i] != 0 && n > ST_MAX_TENSOR_BYTES / (uint64_t)dims[i])
            return st_error(ST_ERR_MODEL, "%s '%s': dims overflow (the size exceeds 2^40 bytes)", what, name);
        n *= (uint64_t)dims[i];
    }
    /* an empty tensor may still have huge dims; check the product of non-zero dims */
    *bytes = n;
    return ST_OK;
}

/* Resolves an external data path inside base_dir, refusing anything that
 * leaves it: absolute paths, '..' components, and links that resolve
 * outside. */
static st_status external_path(const char *tname, const char *base_dir, const char *loc, char **out)
{
    if (!base_dir)
        return st_error(ST_ERR_MODEL, "tensor '%s': external data '%s' but the model was loaded from memory without a directory",
                        tname, loc);
    if (!*loc) return st_error(ST_ERR_MODEL, "tensor '%s': external data has an empty location", tname);
    if (loc[0] == '/' || loc[0] == '\\')
        return st_error(ST_ERR_MODEL, "tensor '%s': external data path '%s' is absolute; it must be relative to the model's directory",
                        tname, loc);
    for (const char *p = loc; *p;) {
        const char *e = p;
        while (*e && *e != '/' && *e != '\\') e++;
        if (e - p == 2 && p[0] == '.' && p[1] == '.')
            return st_error(ST_ERR_MODEL, "tensor '%s': external data path '%s' leaves the model's directory", tname, loc);
        p = *e ? e + 1 : e;
    }
    char base_real[PATH_MAX], full[PATH_MAX * 2], real[PATH_MAX];
    if (!realpath(base_dir, base_real))
        return st_error(ST_ERR_IO, "tensor '%s': cannot resolve the model directory '%s': %s", tname, base_dir,
                        strerror(errno));
    snprintf(full, sizeof full, "%s/%s", base_real, loc);
    if (!realpath(full, real))
        return st_error(ST_ERR_IO, "tensor '%s': cannot open external data '%s': %s", tname, full, strerror(errno));
    size_t bl = strlen(base_real);
    if (strncmp(real, base_real, bl) != 0 || (real[bl] != '/' && !(bl == 1 && base_real[0] == '/')))
        return st_error(ST_ERR_MODEL, "tensor '%s': external data '%s' resolves to '%s', outside the model's directory",
                        tname, loc, real);
    *out = dup_str(real);
    return *out ? ST_OK : oom("an external data path");
}

static st_status read_external(const Onnx__TensorProto *t, const char *tname, const char *base_dir,
                               uint64_t bytes, void **data)
{
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
        if (!k || !v) continue;
        char *end;
        if (strcmp(k, "location") == 0) loc = v;
        else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0) {
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || *end || x < 0)
                return st_error(ST_ERR_MODEL, "tensor '%s': external data %s '%s' is not a non-negative integer",
                                tname, k, v);
            if (k[0] == 'o') offset = x;
            else length = x;
        }
    }
    if (!loc) return st_error(ST_ERR_MODEL, "tensor '%s': external data without a location", tname);
    if (length >= 0 && (uint64_t)length != bytes)
        return st_error(ST_ERR_MODEL, "tensor '%s': external data length %lld does not match its shape (%llu bytes)",
                        tname, (long long)length, (unsigned long long)bytes);
    char *path;
    ST_TRY(external_path(tname, base_dir, loc, &path));
    struct stat sb;
    FILE *f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &sb) != 0) {
        st_status s = st_error(ST_ERR_IO, "tensor '%s': cannot open external data '%s': %s", tname, path,
                               strerror(errno));
        if (f) fclose(f);
        free(path);
        return s;
    }
    if ((uint64_t)sb.st_size < (uint64_t)offset || (uint64_t)sb.st_size - (uint64_t)offset < bytes) {
        st_status s = st_error(ST_ERR_MODEL, "tensor '%s': external data '%s' is too short: %llu bytes at offset %lld needed, the file has %lld",
                               tname, loc, (unsigned long long)bytes, (long long)offset, (long long)sb.st_size);
        fclose(f);
        free(path);
        return s;
    }
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        fclose(f);
        free(path);
        return oom("external data");
    }
    size_t got = 0;
    if (fseeko(f, offset, SEEK_SET) == 0) got = fread(buf, 1, bytes, f);
    fclose(f);
    free(path);
    if (got != bytes) {
        free(buf);
        return st_error(ST_ERR_IO, "tensor '%s': short read of external data '%s'", tname, loc);
    }
    *data = buf;
    return ST_OK;
}

/* Checks that the typed field for dt holds exactly numel values. */
static st_status typed_count(const Onnx__TensorProto *t, const char *tname, st_dtype dt, uint64_t numel)
{
    size_t have = 0;
    switch (dt) {
    case ST_F32: have = t->n_float_data; break;
    case ST_F64: have = t->n_double_data; break;
    case ST_I64: have = t->n_int64_data; break;
    case ST_U32: case ST_U64: have = t->n_uint64_data; break;
    default: have = t->n_int32_data; break;
    }
    if (have != numel)
        return st_error(ST_ERR_MODEL, "tensor '%s': has %zu %s values, its shape needs %llu", tname, have,
                        st_dtype_name(dt), (unsigned long long)numel);
    return ST_OK;
}

/* Copies n typed-field elements into dst, converting each to dtype (the
 * count was checked by typed_count). */
static void typed_field(const Onnx__TensorProto *t, st_dtype dt, uint64_t numel, void *dst)
{
    for (uint64_t i = 0; i < numel; i++) {
        char *p = (char *)dst + i * st_dtype_size(dt);
        switch (dt) {
        case ST_F32: ((float *)dst)[i] = t->float_data[i]; break;
        case ST_F64: ((double *)dst)[i] = t->double_data[i]; break;
        case ST_I64: ((int64_t *)dst)[i] = t->int64_data[i]; break;
        case ST_U32: ((uint32_t *)dst)[i] = (uint32_t)t->uint64_data[i]; break;
        case ST_U64: ((uint64_t *)dst)[i] = t->uint64_data[i]; break;
        /* f16 and bf16 keep their bit patterns in the low 16 bits */
        case ST_F16: case ST_BF16: case ST_U16: ((uint16_t *)dst)[i] = (uint16_t)t->int32_data[i]; break;
        default: st_store_i64(dt, p, t->int32_data[i]); break;
        }
    }
}

/* A string tensor's data: a block (core/strings.h) of its string_data,
 * which ONNX allows nowhere else (not raw_data, not external data).  An
 * ONNX string is bytes; strata's are C strings, so one holding a NUL byte
 * is refused rather than cut short. */
static st_status strings_from_proto(const Onnx__TensorProto *t, const char *tname, uint64_t numel, st_const *c)
{
    if (t->has_raw_data || (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return st_error(ST_ERR_MODEL, "tensor '%s': string tensors keep their values in string_data, not raw or external data",
                        tname);
    if (t->n_string_data != numel)
        return st_error(ST_ERR_MODEL, "tensor '%s': has %zu strings, its shape needs %llu", tname, t->n_string_data,
                        (unsigned long long)numel);
    size_t bytes = numel * sizeof(char *);
    for (size_t i = 0; i < numel; i++) {
        const ProtobufCBinaryData *d = &t->string_data[i];
        if (d->len && memchr(d->data, 0, d->len))
            return st_error(ST_ERR_UNSUPPORTED, "tensor '%s': string %zu holds a NUL byte, which strata's strings cannot", tname, i);
        bytes += d->len + 1;
    }
    char **ptrs = malloc(bytes ? bytes : 1);
    if (!ptrs) return oom(tname);
    char *chars = (char *)(ptrs + numel);
    for (size_t i = 0; i < numel; i++) {
        const ProtobufCBinaryData *d = &t->string_data[i];
        if (d->len) memcpy(chars, d->data, d->len);
        chars[d->len] = 0;
        ptrs[i] = chars;
        chars += d->len + 1;
    }
    c->data = ptrs;
    return ST_OK;
}

static st_status tensor_from_proto(Onnx__TensorProto *t, const char *what, const char *base_dir,
                                   st_const **out)
{
    const char *tname = t->name && *t->name ? t->name : what;
    if (!t->has_data_type || t->data_type == 0)
        return st_error(ST_ERR_MODEL, "tensor '%s': no data type", tname);
    if (!dtype_loadable(t->data_type))
        return st_error(ST_ERR_UNSUPPORTED, "tensor '%s': data type %d is not supported", tname, (int)t->data_type);
    if (t->segment) return st_error(ST_ERR_UNSUPPORTED, "tensor '%s': segmented tensors are not supported", tname);
    st_dtype dt = (st_dtype)t->data_type;
    uint64_t bytes = 0;
    ST_TRY(check_dims("tensor", tname, t->n_dims, t->dims, dt, &bytes));
    uint64_t numel = bytes / st_dtype_size(dt);

    st_const *c = calloc(1, sizeof *c);
    if (!c) return oom(tname);
    c->dtype = dt;
    c->rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) c->dims[i] = t->dims[i];
    c->bytes = bytes;

    st_status s = ST_OK;
    if (dt == ST_STRING) {
        s = strings_from_proto(t, tname, numel, c);
    } else if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        s = read_external(t, tname, base_dir, bytes, &c->data);
    } else if (t->has_raw_data) {
        if (t->raw_data.len != bytes) {
            s = st_error(ST_ERR_MODEL, "tensor '%s': raw_data has %zu bytes, but %s of %llu elements needs %llu",
                         tname, t->raw_data.len, st_dtype_name(dt), (unsigned long long)numel,
                         (unsigned long long)bytes);
        } else if (bytes == 0) {
            c->data = malloc(1);
            if (!c->data) s = oom(tname);
        } else {
            /* Take the buffer protobuf-c allocated (with malloc) instead of
             * copying it: weights are the bulk of a model's memory. */
            c->data = t->raw_data.data;
            t->raw_data.data = NULL;
            t->raw_data.len = 0;
        }
    } else {
        /* count first: a shape of 2^38 floats with no values is a malformed
         * tensor, not a terabyte to allocate */
        s = typed_count(t, tname, dt, numel);
        if (s == ST_OK) {
            c->data = malloc(bytes ? bytes : 1);
            if (!c->data) s = oom(tname);
            else typed_field(t, dt, numel, c->data);
        }
    }
    if (s != ST_OK) {
        st_const_free(c);
        return s;
    }
    *out = c;
    return ST_OK;
}

/* ---- attributes ---- */

static st_status attr_from_proto(Onnx__AttributeProto *p, const char *node, const char *base_dir, st_attr *a)
{
    memset(a, 0, sizeof *a);
    a->name = dup_str(p->name);
    if (!a->name) return oom("an attribute");
    if (!p->name || !*p->name) return st_error(ST_ERR_MODEL, "node '%s': an attribute has no name", node);
    a->type = p->has_type ? (st_attr_type)p->type : ST_ATTR_UNDEFINED;
    if (a->type == ST_ATTR_UNDEFINED) {
        /* Old exporters leave type out; infer it from the field that is set. */
        if (p->has_f) a->type = ST_ATTR_FLOAT;
        else if (p->has_i) a->type = ST_ATTR_INT;
        else if (p->has_s) a->type = ST_ATTR_STRING;
        else if (p->t) a->type = ST_ATTR_TENSOR;
        else if (p->g) a->type = ST_ATTR_GRAPH;
        else if (p->n_floats) a->type = ST_ATTR_FLOATS;
        else if (p->n_ints) a->type = ST_ATTR_INTS;
        else if (p->n_strings) a->type = ST_ATTR_STRINGS;
    }
    switch (a->type) {
    case ST_ATTR_FLOAT: a->f = p->f; break;
    case ST_ATTR_INT: a->i = p->i; break;
    case ST_ATTR_STRING:
        a->s = malloc(p->s.len + 1);
        if (!a->s) return oom("an attribute");
        if (p->s.len) memcpy(a->s, p->s.data, p->s.len);
        a->s[p->s.len] = 0;
        break;
    case ST_ATTR_TENSOR:
        if (!p->t) return st_error(ST_ERR_MODEL, "node '%s': tensor attribute '%s' has no tensor", node, p->name);
        return tensor_from_proto(p->t, p->name, base_dir, &a->t);
    case ST_ATTR_FLOATS:
        a->n = (int)p->n_floats;
        a->floats = malloc((p->n_floats + 1) * sizeof(float));
        if (!a->floats) return oom("an attribute");
        if (p->n_floats) memcpy(a->floats, p->floats, p->n_floats * sizeof(float));
        break;
    case ST_ATTR_INTS:
        a->n = (int)p->n_ints;
        a->ints = malloc((p->n_ints + 1) * sizeof(int64_t));
        if (!a->ints) return oom("an attribute");
        if (p->n_ints) memcpy(a->ints, p->ints, p->n_ints * sizeof(int64_t));
        break;
    case ST_ATTR_STRINGS:
        a->n = (int)p->n_strings;
        a->strings = calloc(p->n_strings + 1, sizeof(char *));
        if (!a->strings) return oom("an attribute");
        for (size_t i = 0; i < p->n_strings; i++) {
            a->strings[i] = malloc(p->strings[i].len + 1);
            if (!a->strings[i]) return oom("an attribute");
            if (p->strings[i].len) memcpy(a->strings[i], p->strings[i].data, p->strings[i].len);
            a->strings[i][p->strings[i].len] = 0;
        }
        break;
    case ST_ATTR_TENSORS:
        a->n = (int)p->n_tensors;
        a->tensors = calloc(p->n_tensors + 1, sizeof(st_const));
        if (!a->tensors) return oom("an attribute");
        for (size_t i = 0; i < p->n_tensors; i++) {
            st_const *c;
            ST_TRY(tensor_from_proto(p->tensors[i], p->name, base_dir, &c));
            a->tensors[i] = *c;
            free(c);
        }
        break;
    default:
        /* A graph is built by the caller once every name of the enclosing
         * graph exists (build_graph); sparse tensors and type protos are
         * kept only as a type. */
        break;
    }
    return ST_OK;
}

/* ---- value types ---- */

static st_status apply_type(st_value *v, const Onnx__ValueInfoProto *vi)
{
    const Onnx__TypeProto *tp = vi->type;
    /* Exporters write value_info entries with an empty TypeProto (the
     * PyTorch exporter does inside If branches): nothing is declared, so
     * inference decides, as if the entry were absent. */
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return ST_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return st_error(ST_ERR_UNSUPPORTED, "value '%s': only tensor types are supported (not sequences, maps or optionals)",
                        v->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type != 0) {
        if (!dtype_loadable(tt->elem_type))
            return st_error(ST_ERR_UNSUPPORTED, "value '%s': data type %d is not supported", v->name, (int)tt->elem_type);
        v->dtype = (st_dtype)tt->elem_type;
    }
    if (!tt->shape) return ST_OK;
    if (tt->shape->n_dim > ST_MAX_RANK)
        return st_error(ST_ERR_UNSUPPORTED, "value '%s': rank %zu exceeds strata's maximum of %d", v->name,
                        tt->shape->n_dim, ST_MAX_RANK);
    v->rank = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        v->dims[i] = -1;
        free(v->dim_names[i]);
        v->dim_names[i] = NULL;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return st_error(ST_ERR_MODEL, "value '%s': dim %zu is negative (%lld)", v->name, i,
                                (long long)d->dim_value);
            v->dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            v->dim_names[i] = dup_str(d->dim_param);
            if (!v->dim_names[i]) return oom("a dim name");
        }
    }
    return ST_OK;
}

/* ---- graph assembly ---- */

typedef struct builder {
    st_graph *g;
    st_strmap names;
    int cap_values;
    const char *base_dir;
    struct builder *parent;          /* the enclosing graph's, for a subgraph */
    const st_graph *top;             /* the model's graph: its opsets */
} builder;

static int add_value(builder *b, const char *name)
{
    if (b->g->n_values == b->cap_values) {
        int cap = b->cap_values ? b->cap_values * 2 : 64;
        st_value *v = realloc(b->g->values, (size_t)cap * sizeof *v);
        if (!v) return -1;
        b->g->values = v;
        b->cap_values = cap;
        /* the map borrows names, which do not move with the array */
    }
    st_value *v = &b->g->values[b->g->n_values];
    memset(v, 0, sizeof *v);
    v->name = dup_str(name);
    if (!v->name) return -1;
    v->rank = -1;
    v->producer = -1;
    for (int d = 0; d < ST_MAX_RANK; d++) v->dims[d] = -1;
    if (!st_strmap_put(&b->names, v->name, b->g->n_values)) {
        free(v->name);
        return -1;
    }
    return b->g->n_values++;
}

/* The value named name in b's graph or, for a subgraph, in an enclosing
 * one: then a local value stands for it (an outer-scope reference, listed
 * in g->outer with its source in the enclosing graph).  -1 when no scope
 * has it, -2 when out of memory. */
static int resolve(builder *b, const char *name)
{
    int v = st_strmap_get(&b->names, name);
    if (v >= 0 || !b->parent) return v;
    int src = resolve(b->parent, name);
    if (src < 0) return src;
    const st_value *sv = &b->parent->g->values[src];
    st_dtype dt = sv->dtype;
    int rank = sv->rank;
    int64_t dims[ST_MAX_RANK];
    memcpy(dims, sv->dims, sizeof dims);
    st_graph *g = b->g;
    int *o = realloc(g->outer, ((size_t)g->n_outer + 1) * sizeof *o);
    if (!o) return -2;
    g->outer = o;
    int *os = realloc(g->outer_src, ((size_t)g->n_outer + 1) * sizeof *os);
    if (!os) return -2;
    g->outer_src = os;
    v = add_value(b, name);
    if (v < 0) return -2;
    g->values[v].dtype = dt;
    g->values[v].rank = rank;
    memcpy(g->values[v].dims, dims, sizeof dims);
    g->outer[g->n_outer] = v;
    g->outer_src[g->n_outer++] = src;
    return v;
}

static int opset_of(const st_graph *g, const char *domain)
{
    const char *d = domain && *domain ? domain : "";
    if (strcmp(d, "ai.onnx") == 0) d = "";
    for (int i = 0; i < g->n_opsets; i++) {
        const char *gd = g->opsets[i].domain;
        if (strcmp(gd, "ai.onnx") == 0) gd = "";
        if (strcmp(gd, d) == 0) return (int)g->opsets[i].version;
    }
    return -1;
}

/* Kahn's algorithm over value dependencies; rewrites g->nodes in order. */
static st_status toposort(st_graph *g)
{
    int n = g->n_nodes;
    if (n == 0) return ST_OK;
    int *indeg = calloc((size_t)n, sizeof *indeg);
    int *order = malloc((size_t)n * sizeof *order);
    int *cons_count = calloc((size_t)g->n_values + 1, sizeof *cons_count);
    if (!indeg || !order || !cons_count) {
        free(indeg); free(order); free(cons_count);
        return oom("the graph");
    }
    /* consumers of each value, as a CSR list (a node's subgraphs' outer
     * references are its inputs too) */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] >= 0) cons_count[g->nodes[i].in[k]]++;
        for (int k = 0; k < g->nodes[i].n_implicit; k++) cons_count[g->nodes[i].implicit[k]]++;
    }
    int *start = malloc(((size_t)g->n_values + 1) * sizeof *start);
    int total = 0;
    for (int v = 0; v < g->n_values; v++) total += cons_count[v];
    int *list = malloc(((size_t)total + 1) * sizeof *list);
    if (!start || !list) {
        free(indeg); free(order); free(cons_count); free(start); free(list);
        return oom("the graph");
    }
    start[0] = 0;
    for (int v = 0; v < g->n_values; v++) start[v + 1] = start[v] + cons_count[v];
    memset(cons_count, 0, (size_t)g->n_values * sizeof *cons_count);
    for (int i = 0; i < n; i++) {
        const st_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_in + nd->n_implicit; k++) {
            int v = k < nd->n_in ? nd->in[k] : nd->implicit[k - nd->n_in];
            if (v < 0) continue;
            list[start[v] + cons_count[v]++] = i;
            if (g->values[v].producer >= 0) indeg[i]++;
        }
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0) order[tail++] = i;
    while (head < tail) {
        int i = order[head++];
        for (int k = 0; k < g->nodes[i].n_out; k++) {
            int v = g->nodes[i].out[k];
            if (v < 0) continue;
            for (int c = start[v]; c < start[v + 1]; c++)
                if (--indeg[list[c]] == 0) order[tail++] = list[c];
        }
    }
    st_status s = ST_OK;
    if (tail != n) {
        int stuck = -1;
        for (int i = 0; i < n && stuck < 0; i++)
            if (indeg[i] > 0) stuck = i;
        s = st_error(ST_ERR_MODEL, "graph has a cycle through node '%s' (%s)", g->nodes[stuck].name,
                     g->nodes[stuck].op_type);
    } else {
        st_node *sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted) s = oom("the graph");
        else {
            for (int i = 0; i < n; i++) sorted[i] = g->nodes[order[i]];
            free(g->nodes);
            g->nodes = sorted;
            for (int i = 0; i < n; i++)
                for (int k = 0; k < g->nodes[i].n_out; k++)
                    if (g->nodes[i].out[k] >= 0) g->values[g->nodes[i].out[k]].producer = i;
        }
    }
    free(indeg); free(order); free(cons_count); free(start); free(list);
    return s;
}

/* A Constant node becomes a constant value: its output gets the data and
 * the node disappears, so later passes see one kind of constant. */
static st_status constant_value(const st_node *n, st_const **out)
{
    if (n->n_attrs != 1)
        return st_error(ST_ERR_MODEL, "node '%s' (Constant): needs exactly one value attribute, has %d", n->name,
                        n->n_attrs);
    const st_attr *a = &n->attrs[0];
    st_const *c = calloc(1, sizeof *c);
    if (!c) return oom("a constant");
    if (strcmp(a->name, "value") == 0 && a->type == ST_ATTR_TENSOR) {
        /* a deep copy: the node, and the strings of its tensor, go */
        *c = *a->t;
        size_t n = (size_t)st_const_numel(a->t);
        size_t bytes = st_values_bytes(c->dtype, n, a->t->data);
        c->data = malloc(bytes ? bytes : 1);
        if (!c->data) { free(c); return oom("a constant"); }
        st_values_copy(c->dtype, c->data, n, a->t->data);
        *out = c;
        return ST_OK;
    }
    if ((strcmp(a->name, "value_string") == 0 && a->type == ST_ATTR_STRING) ||
        (strcmp(a->name, "value_strings") == 0 && a->type == ST_ATTR_STRINGS)) {
        bool one = a->type == ST_ATTR_STRING;
        c->dtype = ST_STRING;
        c->rank = one ? 0 : 1;
        c->dims[0] = one ? 1 : a->n;
        c->bytes = (uint64_t)c->dims[0] * sizeof(char *);
        c->data = st_strings_dup((size_t)c->dims[0], one ? (const char *const *)&a->s : (const char *const *)a->strings);
        if (!c->data) { free(c); return oom("a constant"); }
        *out = c;
        return ST_OK;
    }
    int count = 0;
    if (strcmp(a->name, "value_float") == 0 && a->type == ST_ATTR_FLOAT) {
        c->dtype = ST_F32; count = 1;
    } else if (strcmp(a->name, "value_int") == 0 && a->type == ST_ATTR_INT) {
        c->dtype = ST_I64; count = 1;
    } else if (strcmp(a->name, "value_floats") == 0 && a->type == ST_ATTR_FLOATS) {
        c->dtype = ST_F32; c->rank = 1; count = a->n;
    } else if (strcmp(a->name, "value_ints") == 0 && a->type == ST_ATTR_INTS) {
        c->dtype = ST_I64; c->rank = 1; count = a->n;
    } else {
        free(c);
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (Constant): attribute '%s' is not supported", n->name, a->name);
    }
    c->dims[0] = count;
    c->bytes = (uint64_t)count * st_dtype_size(c->dtype);
    c->data = malloc(c->bytes ? c->bytes : 1);
    if (!c->data) { free(c); return oom("a constant"); }
    if (a->type == ST_ATTR_FLOAT) *(float *)c->data = a->f;
    else if (a->type == ST_ATTR_INT) *(int64_t *)c->data = a->i;
    else if (a->type == ST_ATTR_FLOATS) memcpy(c->data, a->floats, c->bytes);
    else memcpy(c->data, a->ints, c->bytes);
    *out = c;
    return ST_OK;
}

static st_status build_graph(builder *b, Onnx__GraphProto *gp);

/* A subgraph attribute (If's branches, Loop's and Scan's body): a graph of
 * its own, whose names resolve in it first and then outward. */
static st_status build_subgraph(builder *parent, const st_node *n, Onnx__AttributeProto *ap, st_graph **out)
{
    if (!ap->g) return st_error(ST_ERR_MODEL, "node '%s': graph attribute '%s' has no graph", n->name, ap->name);
    if (parent->g->depth + 1 > ST_MAX_GRAPH_DEPTH)
        return st_error(ST_ERR_UNSUPPORTED, "node '%s' (%s): subgraphs are nested more than %d deep", n->name, n->op_type,
                        ST_MAX_GRAPH_DEPTH);
    builder b = {0};
    b.base_dir = parent->base_dir;
    b.parent = parent;
    b.top = parent->top;
    b.g = calloc(1, sizeof *b.g);
    if (!b.g) return oom("a subgraph");
    b.g->depth = parent->g->depth + 1;
    st_status s = build_graph(&b, ap->g);
    st_strmap_free(&b.names);
    if (s != ST_OK) {
        st_graph_free(b.g);
        return st_error_prefix(s, "node '%s' (%s), subgraph '%s': ", n->name, n->op_type, ap->name);
    }
    *out = b.g;
    return ST_OK;
}

/* The node's implicit inputs: every outer-scope reference of its subgraphs. */
static st_status implicit_inputs(st_node *n)
{
    int cap = 0;
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].g) cap += n->attrs[a].g->n_outer;
    if (!cap) return ST_OK;
    n->implicit = malloc((size_t)cap * sizeof *n->implicit);
    if (!n->implicit) return oom("a node");
    for (int a = 0; a < n->n_attrs; a++) {
        const st_graph *sg = n->attrs[a].g;
        for (int k = 0; sg && k < sg->n_outer; k++) {
            bool seen = false;
            for (int q = 0; q < n->n_implicit && !seen; q++) seen = n->implicit[q] == sg->outer_src[k];
            if (!seen) n->implicit[n->n_implicit++] = sg->outer_src[k];
        }
    }
    return ST_OK;
}

static st_status build_graph(builder *b, Onnx__GraphProto *gp)
{
    st_graph *g = b->g;
    size_t expect = gp->n_input + gp->n_initializer + gp->n_node * 2 + 16;
    if (!st_strmap_init(&b->names, expect)) return oom("the graph");

    /* initializers first: in IR < 4 they are also listed as inputs */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !*t->name) return st_error(ST_ERR_MODEL, "initializer #%zu has no name", i);
        if (st_strmap_get(&b->names, t->name) >= 0)
            return st_error(ST_ERR_MODEL, "duplicate initializer name '%s'", t->name);
        int v = add_value(b, t->name);
        if (v < 0) return oom("the graph");
        ST_TRY(tensor_from_proto(t, t->name, b->base_dir, &g->values[v].init));
        st_const *c = g->values[v].init;
        g->values[v].dtype = c->dtype;
        g->values[v].rank = c->rank;
        for (int d = 0; d < c->rank; d++) g->values[v].dims[d] = c->dims[d];
    }
    if (gp->n_sparse_initializer)
        return st_error(ST_ERR_UNSUPPORTED, "sparse initializers are not supported");

    g->inputs = malloc((gp->n_input + 1) * sizeof *g->inputs);
    if (!g->inputs) return oom("the graph");
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return st_error(ST_ERR_MODEL, "graph input #%zu has no name", i);
        int v = st_strmap_get(&b->names, vi->name);
        if (v >= 0 && g->values[v].init && !b->parent) continue; /* an initializer with a default: stays constant */
        if (v >= 0) return st_error(ST_ERR_MODEL, "duplicate graph input name '%s'", vi->name);
        v = add_value(b, vi->name);
        if (v < 0) return oom("the graph");
        g->values[v].is_input = true;
        ST_TRY(apply_type(&g->values[v], vi));
        /* a subgraph's inputs may leave their type to the node's rule */
        if (g->values[v].dtype == ST_UNDEFINED && !b->parent)
            return st_error(ST_ERR_MODEL, "graph input '%s' has no element type", vi->name);
        g->inputs[g->n_inputs++] = v;
    }

    g->nodes = calloc(gp->n_node + 1, sizeof *g->nodes);
    if (!g->nodes) return oom("the graph");
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *np = gp->node[i];
        st_node *n = &g->nodes[g->n_nodes++];
        if (!np->op_type || !*np->op_type) return st_error(ST_ERR_MODEL, "node #%zu has no op_type", i);
        n->op_type = dup_str(np->op_type);
        n->domain = dup_str(np->domain && strcmp(np->domain, "ai.onnx") == 0 ? "" : np->domain);
        if (np->name && *np->name) n->name = dup_str(np->name);
        else {
            char buf[96];
            snprintf(buf, sizeof buf, "%.60s_%zu", np->op_type, i);
            n->name = dup_str(buf);
        }
        if (!n->op_type || !n->domain || !n->name) return oom("a node");
        n->opset = opset_of(b->top, n->domain);
        if (n->opset < 0)
            return st_error(ST_ERR_MODEL, "node '%s' (%s): its domain '%s' is not in the model's opset_import",
                            n->name, n->op_type, n->domain);
        /* an unknown op loads; a session refuses it by name */
        n->op = st_op_find(n->domain, n->op_type);
        if (n->op && n->opset < n->op->min_opset) n->op = NULL;
        n->n_in = (int)np->n_input;
        n->n_out = (int)np->n_output;
        n->in = malloc((np->n_input + 1) * sizeof *n->in);
        n->out = malloc((np->n_output + 1) * sizeof *n->out);
        n->attrs = calloc(np->n_attribute + 1, sizeof *n->attrs);
        if (!n->in || !n->out || !n->attrs) return oom("a node");
        for (size_t a = 0; a < np->n_attribute; a++) {
            n->n_attrs++;
            ST_TRY(attr_from_proto(np->attribute[a], n->name, b->base_dir, &n->attrs[a]));
            for (size_t p = 0; p < a; p++)
                if (strcmp(n->attrs[p].name, n->attrs[a].name) == 0)
                    return st_error(ST_ERR_MODEL, "node '%s': attribute '%s' appears twice", n->name, n->attrs[a].name);
        }
        for (size_t k = 0; k < np->n_output; k++) {
            const char *nm = np->output[k];
            if (!nm || !*nm) {
                n->out[k] = -1;
                continue;
            }
            if (st_strmap_get(&b->names, nm) >= 0)
                return st_error(ST_ERR_MODEL, "node '%s' (%s): output '%s' is already defined (duplicate value name)",
                                n->name, n->op_type, nm);
            int v = add_value(b, nm);
            if (v < 0) return oom("the graph");
            g->values[v].producer = (int)i;
            g->values[v].producer_slot = (int)k;
            n->out[k] = v;
        }
    }
    /* inputs resolve after all outputs exist, so order in the file does not
     * matter; a subgraph's may resolve in an enclosing graph */
    for (int i = 0; i < g->n_nodes; i++) {
        Onnx__NodeProto *np = gp->node[i];
        st_node *n = &g->nodes[i];
        for (size_t k = 0; k < np->n_input; k++) {
            const char *nm = np->input[k];
            if (!nm || !*nm) {
                n->in[k] = -1;
                continue;
            }
            int v = resolve(b, nm);
            if (v == -2) return oom("the graph");
            if (v < 0)
                return st_error(ST_ERR_MODEL, "node '%s' (%s): input '%s' is not produced by any node, initializer or graph input%s",
                                n->name, n->op_type, nm, b->parent ? " (nor in an enclosing graph)" : "");
            n->in[k] = v;
        }
    }
    /* subgraphs, once every name of this graph exists */
    for (int i = 0; i < g->n_nodes; i++) {
        Onnx__NodeProto *np = gp->node[i];
        st_node *n = &g->nodes[i];
        for (size_t a = 0; a < np->n_attribute; a++) {
            Onnx__AttributeProto *ap = np->attribute[a];
            /* (a graph list is kept as a type only: no op strata runs has one) */
            if (n->attrs[a].type == ST_ATTR_GRAPH) ST_TRY(build_subgraph(b, n, ap, &n->attrs[a].g));
        }
        ST_TRY(implicit_inputs(n));
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        int v = gp->value_info[i]->name ? st_strmap_get(&b->names, gp->value_info[i]->name) : -1;
        if (v >= 0 && !g->values[v].init) ST_TRY(apply_type(&g->values[v], gp->value_info[i]));
    }
    g->outputs = malloc((gp->n_output + 1) * sizeof *g->outputs);
    if (!g->outputs) return oom("the graph");
    if (gp->n_output == 0) return st_error(ST_ERR_MODEL, "graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name;
        int v = nm ? resolve(b, nm) : -1;
        if (v == -2) return oom("the graph");
        if (v < 0)
            return st_error(ST_ERR_MODEL, "graph output '%s' is not produced by any node, initializer or input",
                            nm ? nm : "");
        if (g->values[v].is_output && !b->parent)
            return st_error(ST_ERR_MODEL, "graph output '%s' is listed twice", nm);
        if (!g->values[v].init) ST_TRY(apply_type(&g->values[v], gp->output[i]));
        g->values[v].is_output = true;
        g->outputs[g->n_outputs++] = v;
    }

    ST_TRY(toposort(g));

    /* fold Constant nodes into constant values */
    int w = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        st_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Constant") == 0 && n->domain[0] == 0 && n->n_out == 1 && n->out[0] >= 0) {
            st_value *v = &g->values[n->out[0]];
            ST_TRY(constant_value(n, &v->init));
            v->dtype = v->init->dtype;
            v->rank = v->init->rank;
            for (int d = 0; d < v->rank; d++) v->dims[d] = v->init->dims[d];
            v->producer = -1;
            st_node_clear(n);
            continue;
        }
        if (w != i) {
            g->nodes[w] = *n;
            /* one owner per node: should a later Constant fail, the graph
             * is freed with n_nodes slots, and a stale copy would free twice */
            memset(n, 0, sizeof *n);
        }
        w++;
    }
    g->n_nodes = w;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_out; k++)
            if (g->nodes[i].out[k] >= 0) g->values[g->nodes[i].out[k]].producer = i;
    return ST_OK;
}

static st_status build(builder *b, Onnx__ModelProto *mp)
{
    st_graph *g = b->g;
    g->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    g->producer_name = dup_str(mp->producer_name);

    if (mp->n_opset_import == 0 && g->ir_version >= 3)
        return st_error(ST_ERR_MODEL, "model declares no opset_import");
    g->opsets = calloc(mp->n_opset_import + 1, sizeof *g->opsets);
    if (!g->opsets) return oom("opsets");
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        g->opsets[i].domain = dup_str(o->domain);
        g->opsets[i].version = o->has_version ? o->version : 1;
        g->n_opsets++;
        if (!g->opsets[i].domain) return oom("opsets");
    }
    if (mp->n_opset_import == 0) { /* ir_version < 3 implies opset 1 */
        g->opsets[0].domain = dup_str("");
        g->opsets[0].version = 1;
        g->n_opsets = 1;
    }
    int onnx_opset = opset_of(g, "");
    if (onnx_opset > ST_MAX_OPSET)
        return st_error(ST_ERR_UNSUPPORTED, "model uses ai.onnx opset %d; strata supports opsets up to %d",
                        onnx_opset, ST_MAX_OPSET);
    b->top = g;
    return build_graph(b, mp->graph);
}

/* What bytes that are not a ModelProto hold, when they are another ONNX
 * message people mistake for a model (a graph saved alone, a test's
 * input_0.pb); NULL otherwise. */
static const char *other_message(const void *data, size_t size)
{
    const char *kind = NULL;
    Onnx__GraphProto *g = onnx__graph_proto__unpack(NULL, size, data);
    if (g) {
        if (g->n_node || g->n_output) kind = "GraphProto (a graph without the model around it)";
        onnx__graph_proto__free_unpacked(g, NULL);
        if (kind) return kind;
    }
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, size, data);
    if (t) {
        if (t->has_data_type && t->data_type) kind = "TensorProto (a tensor, not a model)";
        onnx__tensor_proto__free_unpacked(t, NULL);
    }
    return kind;
}

st_status st_onnx_load(const void *data, size_t size, const char *base_dir, st_graph **out)
{
    *out = NULL;
    if (size == 0) return st_error(ST_ERR_MODEL, "the model file is empty");
    ST_TRY(st_onnx_check_depth(data, size));
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
    if (!mp) {
        const char *kind = other_message(data, size);
        if (kind) return st_error(ST_ERR_MODEL, "not an ONNX model: the file holds an ONNX %s", kind);
        return st_error(ST_ERR_MODEL, "not a valid ONNX model: the protobuf does not parse (truncated or corrupt, %zu bytes)",
                        size);
    }
    if (!mp->graph || (!mp->has_ir_version && mp->n_opset_import == 0)) {
        const char *missing = !mp->graph ? "graph" : "ir_version or opset_import";
        onnx__model_proto__free_unpacked(mp, NULL);
        return st_error(ST_ERR_MODEL, "not an ONNX model: the protobuf parses but has no %s", missing);
    }
    builder b = {0};
    b.base_dir = base_dir;
    b.g = calloc(1, sizeof *b.g);
    if (!b.g) {
        onnx__model_proto__free_unpacked(mp, NULL);
        return oom("the graph");
    }
    st_status s = build(&b, mp);
    st_strmap_free(&b.names);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (s != ST_OK) {
        st_graph_free(b.g);
        return s;
    }
    *out = b.g;
    return ST_OK;
}

st_status st_onnx_load_tensor(const void *data, size_t size, st_const **out, char **name)
{
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, size, data);
    if (!t) return st_error(ST_ERR_MODEL, "not a valid TensorProto (%zu bytes)", size);
    st_status s = tensor_from_proto(t, "tensor", NULL, out);
    if (s == ST_OK && name) {
        *name = dup_str(t->name);
        if (!*name) {
            st_const_free(*out);
            s = oom("a tensor");
        }
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return s;
}
