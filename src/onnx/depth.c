/*
 * depth.c — how deep an ONNX file nests its recursive messages, measured
 * before protobuf-c unpacks it.
 *
 * protobuf-c unpacks nested messages recursively, so a hostile file that
 * nests subgraphs (an If inside an If inside ... 10,000 deep) or types (a
 * sequence of a sequence of ...) overflows the stack inside the unpacker,
 * before strata sees a byte.  This walks the wire format with an explicit
 * stack, following only the fields through which ONNX's messages recurse,
 * and refuses a file nested deeper than strata plans (ST_MAX_GRAPH_DEPTH
 * for graphs, as many levels again for types).  Anything it cannot make
 * sense of it leaves to the unpacker, which reports malformed files.
 */
#include "onnx/loader.h"

#include <stdint.h>

#include "core/status.h"

typedef enum msg {
    M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_VALUE_INFO, M_TYPE, M_TYPE_TENSOR_LIKE, M_FUNCTION, M_OTHER
} msg;

/* The message type of field `field` of a message of type m, or M_OTHER
 * when the field does not lead to recursion. */
static msg child(msg m, uint64_t field)
{
    switch (m) {
    case M_MODEL: return field == 7 ? M_GRAPH : field == 25 ? M_FUNCTION : M_OTHER;
    case M_GRAPH:
        if (field == 1) return M_NODE;
        if (field == 11 || field == 12 || field == 13) return M_VALUE_INFO;
        return M_OTHER;
    case M_FUNCTION: return field == 7 ? M_NODE : M_OTHER;
    case M_NODE: return field == 5 ? M_ATTR : M_OTHER;
    case M_ATTR:
        if (field == 6 || field == 11) return M_GRAPH;
        if (field == 14 || field == 15) return M_TYPE;
        return M_OTHER;
    case M_VALUE_INFO: return field == 2 ? M_TYPE : M_OTHER;
    case M_TYPE: /* sequence_type 4, map_type 5, optional_type 9, sparse_tensor_type 8 */
        return field == 4 || field == 5 || field == 9 ? M_TYPE_TENSOR_LIKE : M_OTHER;
    case M_TYPE_TENSOR_LIKE: /* Sequence.elem_type 1, Map.value_type 2, Optional.elem_type 1 */
        return field == 1 || field == 2 ? M_TYPE : M_OTHER;
    default: return M_OTHER;
    }
}

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return false;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

#define ST_MAX_NEST (8 * ST_MAX_GRAPH_DEPTH + 16)

st_status st_onnx_check_depth(const void *data, size_t size)
{
    struct frame {
        const uint8_t *p, *end;
        msg m;
        int graphs, types;
    } stack[ST_MAX_NEST];
    int top = 0;
    stack[0] = (struct frame){data, (const uint8_t *)data + size, M_MODEL, 0, 0};
    while (top >= 0) {
        struct frame *f = &stack[top];
        if (f->p >= f->end) {
            top--;
            continue;
        }
        uint64_t key, len, v;
        if (!read_varint(&f->p, f->end, &key)) return ST_OK; /* malformed: the unpacker says so */
        uint64_t field = key >> 3;
        switch (key & 7) {
        case 0:
            if (!read_varint(&f->p, f->end, &v)) return ST_OK;
            continue;
        case 1:
            if ((uint64_t)(f->end - f->p) < 8) return ST_OK;
            f->p += 8;
            continue;
        case 5:
            if ((uint64_t)(f->end - f->p) < 4) return ST_OK;
            f->p += 4;
            continue;
        case 2: break;
        default: return ST_OK;
        }
        if (!read_varint(&f->p, f->end, &len) || len > (uint64_t)(f->end - f->p)) return ST_OK;
        const uint8_t *body = f->p;
        f->p += len;
        msg c = child(f->m, field);
        if (c == M_OTHER) continue;
        int graphs = f->graphs + (c == M_GRAPH), types = f->types + (c == M_TYPE);
        if (graphs > ST_MAX_GRAPH_DEPTH + 1)
            return st_error(ST_ERR_UNSUPPORTED, "the model nests subgraphs more than %d deep", ST_MAX_GRAPH_DEPTH);
        if (types > ST_MAX_GRAPH_DEPTH)
            return st_error(ST_ERR_UNSUPPORTED, "the model nests types (sequences, maps, optionals) more than %d deep",
                            ST_MAX_GRAPH_DEPTH);
        if (top + 1 >= ST_MAX_NEST) return st_error(ST_ERR_UNSUPPORTED, "the model nests its messages too deep");
        stack[++top] = (struct frame){body, body + len, c, graphs, types};
    }
    return ST_OK;
}
