/*
 * values.c — test data as tensors, sequences and optionals (values.h).
 *
 * Tensors go through the library's own TensorProto reader.  SequenceProto
 * and OptionalProto are not in the onnx.proto that libonnx-dev ships (they
 * live in onnx-data.proto, of which it ships only the C++ header), so
 * their few fields are read here from the protobuf wire format, with the
 * field numbers that header states (kTensorValuesFieldNumber = 3, ...).
 */
#include "values.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "onnx/loader.h"

/* SequenceProto and OptionalProto: the same numbers for the same roles */
enum { F_ELEM_TYPE = 2, F_TENSOR = 3, F_SPARSE = 4, F_SEQUENCE = 5, F_MAP = 6, F_OPTIONAL = 7 };
/* their DataType enums */
enum { E_UNDEFINED = 0, E_TENSOR = 1, E_SPARSE = 2, E_SEQUENCE = 3, E_MAP = 4, E_OPTIONAL = 5 };
static const char *ENAME[] = {"undefined", "tensor", "sparse tensor", "sequence", "map", "optional"};

typedef struct field {
    int num, wire;
    uint64_t varint;
    const uint8_t *data;
    size_t len;
} field;

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* The next field at *p: 1, or 0 at the end, -1 when malformed. */
static int next_field(const uint8_t **p, const uint8_t *end, field *f)
{
    if (*p >= end) return 0;
    uint64_t key, len;
    if (!varint(p, end, &key)) return -1;
    f->num = (int)(key >> 3);
    f->wire = (int)(key & 7);
    f->varint = 0;
    f->data = NULL;
    f->len = 0;
    switch (f->wire) {
    case 0: return varint(p, end, &f->varint) ? 1 : -1;
    case 1: if (end - *p < 8) return -1; *p += 8; return 1;
    case 5: if (end - *p < 4) return -1; *p += 4; return 1;
    case 2:
        if (!varint(p, end, &len) || len > (uint64_t)(end - *p)) return -1;
        f->data = *p;
        f->len = (size_t)len;
        *p += len;
        return 1;
    default: return -1;
    }
}

static int add_tensor(tvalue *v, const field *f, char *msg, size_t cap)
{
    st_const *c;
    st_status s = st_onnx_load_tensor(f->data, f->len, &c, NULL);
    if (s != ST_OK) {
        snprintf(msg, cap, "%s", st_last_error());
        return s == ST_ERR_UNSUPPORTED ? -2 : -1;
    }
    st_const **t = realloc(v->t, ((size_t)v->n + 1) * sizeof *t);
    if (!t) {
        st_const_free(c);
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    v->t = t;
    v->t[v->n++] = c;
    return 0;
}

static int unsupported(int what, char *msg, size_t cap)
{
    snprintf(msg, cap, "test data holds a %s, which strata's sequences and optionals do not",
             what >= 0 && what <= E_OPTIONAL ? ENAME[what] : "value of an unknown kind");
    return -2;
}

/* A SequenceProto's tensors, appended to v. */
static int read_sequence(const uint8_t *p, const uint8_t *end, tvalue *v, char *msg, size_t cap)
{
    field f;
    int r;
    while ((r = next_field(&p, end, &f)) == 1) {
        if (f.num == F_ELEM_TYPE && f.wire == 0 && f.varint != E_UNDEFINED && f.varint != E_TENSOR)
            return unsupported((int)f.varint, msg, cap);
        if (f.wire != 2) continue;
        if (f.num == F_TENSOR) {
            if ((r = add_tensor(v, &f, msg, cap))) return r;
        } else if (f.num == F_SPARSE || f.num == F_SEQUENCE || f.num == F_MAP || f.num == F_OPTIONAL) {
            return unsupported(f.num == F_SPARSE ? E_SPARSE : f.num == F_SEQUENCE ? E_SEQUENCE
                               : f.num == F_MAP ? E_MAP : E_OPTIONAL, msg, cap);
        }
    }
    if (r < 0) snprintf(msg, cap, "a malformed SequenceProto");
    return r < 0 ? -1 : 0;
}

/* An OptionalProto: absent, or a tensor, or a sequence's tensors. */
static int read_optional(const uint8_t *p, const uint8_t *end, tvalue *v, char *msg, size_t cap)
{
    field f;
    int r;
    while ((r = next_field(&p, end, &f)) == 1) {
        if (f.wire != 2) continue;
        if (f.num == F_TENSOR) {
            if (v->kind != ST_KIND_OPTIONAL) {
                snprintf(msg, cap, "the optional holds a tensor where the model declares a sequence");
                return -1;
            }
            v->present = true;
            if ((r = add_tensor(v, &f, msg, cap))) return r;
        } else if (f.num == F_SEQUENCE) {
            if (v->kind != ST_KIND_OPTIONAL_SEQUENCE) {
                snprintf(msg, cap, "the optional holds a sequence where the model declares a tensor");
                return -1;
            }
            v->present = true;
            if ((r = read_sequence(f.data, f.data + f.len, v, msg, cap))) return r;
        } else if (f.num == F_SPARSE || f.num == F_MAP || f.num == F_OPTIONAL) {
            return unsupported(f.num == F_SPARSE ? E_SPARSE : f.num == F_MAP ? E_MAP : E_OPTIONAL, msg, cap);
        }
    }
    if (r < 0) snprintf(msg, cap, "a malformed OptionalProto");
    return r < 0 ? -1 : 0;
}

int tvalue_load(const char *path, st_value_kind kind, tvalue *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    void *buf;
    size_t len;
    if (st_file_read(path, &buf, &len) != ST_OK) {
        snprintf(msg, cap, "%s", st_last_error());
        return -1;
    }
    const uint8_t *p = buf;
    int r;
    if (kind == ST_KIND_TENSOR) {
        field f = {.data = p, .len = len};
        out->present = true;
        r = add_tensor(out, &f, msg, cap);
    } else if (kind == ST_KIND_SEQUENCE) {
        out->present = true;
        r = read_sequence(p, p + len, out, msg, cap);
    } else {
        r = read_optional(p, p + len, out, msg, cap);
    }
    free(buf);
    if (r) {
        char m[900];
        snprintf(m, sizeof m, "%s", msg);
        snprintf(msg, cap, "%s: %s", path, m);
    }
    return r;
}

void tvalue_free(tvalue *v)
{
    for (int k = 0; k < v->n; k++) st_const_free(v->t[k]);
    free(v->t);
    memset(v, 0, sizeof *v);
}
