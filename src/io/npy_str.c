/* npy_str.c — string arrays in .npy files (npy.h): NumPy's fixed-width
 * unicode (<U, >U) and bytes (|S) dtypes, read and written, and object
 * arrays of str, read from the pickle NumPy writes for them.
 *
 * An object array's data is a pickle (protocol 2 to 5) of the ndarray:
 * _reconstruct(ndarray, (0,), b'b') built with the state (version, shape,
 * dtype('O8', ...), fortran, [str, str, ...]).  Pickle is a program for a
 * stack machine that may call any Python function; this reads the subset of
 * opcodes that describes plain data (ints, strings, bytes, tuples, lists,
 * None, booleans, globals only as names, REDUCE and BUILD only as records)
 * and accepts the result only when it has exactly that shape, with every
 * element a str.  Nothing is called; anything else is refused, naming what
 * was found (an int or None among the strings, a dict, an opcode outside
 * the subset). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/npy.h"

/* ---- UTF-8 <-> code points ---- */

static size_t utf8_len(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

static char *utf8_put(char *p, uint32_t c)
{
    if (c < 0x80) {
        *p++ = (char)c;
    } else if (c < 0x800) {
        *p++ = (char)(0xc0 | c >> 6);
        *p++ = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        *p++ = (char)(0xe0 | c >> 12);
        *p++ = (char)(0x80 | (c >> 6 & 0x3f));
        *p++ = (char)(0x80 | (c & 0x3f));
    } else {
        *p++ = (char)(0xf0 | c >> 18);
        *p++ = (char)(0x80 | (c >> 12 & 0x3f));
        *p++ = (char)(0x80 | (c >> 6 & 0x3f));
        *p++ = (char)(0x80 | (c & 0x3f));
    }
    return p;
}

/* Decodes one code point of s[0..n); returns its length, 0 if malformed. */
static size_t utf8_get(const unsigned char *s, size_t n, uint32_t *c)
{
    if (!n) return 0;
    if (s[0] < 0x80) {
        *c = s[0];
        return 1;
    }
    size_t len = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || len > n) return 0;
    uint32_t v = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) || utf8_len(v) != len) return 0;
    *c = v;
    return len;
}

/* ---- fixed width: <U, >U, |S ---- */

static uint32_t load_u32(const unsigned char *p, bool big)
{
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

st_status st_npy_strings_fixed(char kind, bool big, size_t width, const void *data, size_t avail, size_t n,
                               const char *what, st_npy *out)
{
    size_t es = kind == 'U' ? 4 * width : width;
    /* numpy never writes a non-empty array of zero-width strings ('S0' becomes 'S1'), and without bytes per
     * element the file size cannot bound the pointer table: a forged header asked for 2e9 strings */
    if (!width && n)
        return st_error(ST_ERR_IO, "%s: %zu strings of width 0: a non-empty zero-width string array is malformed", what, n);
    if (width && n > avail / es)
        return st_error(ST_ERR_IO, "%s: data is truncated: %zu bytes for %zu strings of %zu bytes", what, avail, n, es);
    const unsigned char *b = data;
    /* sizes first: one block holds the pointers and then the strings */
    size_t text = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *e = b + i * es;
        for (size_t k = 0; k < width; k++) {
            if (kind == 'S') {
                if (!e[k]) break;
                text++;
                continue;
            }
            uint32_t c = load_u32(e + 4 * k, big);
            if (!c) break;
            if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return st_error(ST_ERR_IO, "%s: string %zu holds 0x%x, which is not a Unicode code point", what, i, c);
            text += utf8_len(c);
        }
        text++;
    }
    char **v = malloc(n * sizeof *v + text + 1);
    if (!v) return st_error(ST_ERR_NOMEM, "%s: out of memory (%zu strings)", what, n);
    char *p = (char *)(v + n);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *e = b + i * es;
        v[i] = p;
        for (size_t k = 0; k < width; k++) {
            if (kind == 'S') {
                if (!e[k]) break;
                *p++ = (char)e[k];
                continue;
            }
            uint32_t c = load_u32(e + 4 * k, big);
            if (!c) break;
            p = utf8_put(p, c);
        }
        *p++ = 0;
    }
    out->dtype = ST_STRING;
    out->data = v;
    out->bytes = n * sizeof *v;
    return ST_OK;
}

st_status st_npy_strings_encode(const char *const *strs, size_t n, const char *what, uint32_t **buf, size_t *width)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *s = (const unsigned char *)strs[i];
        size_t len = strlen(strs[i]), chars = 0;
        for (size_t at = 0; at < len; chars++) {
            uint32_t c;
            size_t k = utf8_get(s + at, len - at, &c);
            if (!k) return st_error(ST_ERR_DTYPE, "'%s': string %zu is not UTF-8 (byte %zu); a .npy '<U' array holds text", what, i, at);
            at += k;
        }
        if (chars > w) w = chars;
    }
    /* NumPy's narrowest unicode dtype is <U1, even for empty strings */
    if (!w) w = 1;
    uint32_t *u = calloc(n * w + 1, sizeof *u);
    if (!u) return st_error(ST_ERR_NOMEM, "'%s': out of memory (%zu strings of %zu characters)", what, n, w);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *s = (const unsigned char *)strs[i];
        size_t len = strlen(strs[i]), k = 0;
        for (size_t at = 0; at < len; k++) {
            uint32_t c = 0;
            at += utf8_get(s + at, len - at, &c);
            /* little-endian, as the '<U' written says */
            unsigned char *d = (unsigned char *)&u[i * w + k];
            d[0] = (unsigned char)c;
            d[1] = (unsigned char)(c >> 8);
            d[2] = (unsigned char)(c >> 16);
            d[3] = (unsigned char)(c >> 24);
        }
    }
    *buf = u;
    *width = w;
    return ST_OK;
}

/* ---- object arrays: the pickle subset ---- */

typedef enum { PV_NONE, PV_BOOL, PV_INT, PV_STR, PV_BYTES, PV_TUPLE, PV_LIST, PV_GLOBAL, PV_OBJ, PV_MARK } pv_kind;

static const char *const PV_NAMES[] = {"None", "a bool", "an int", "a str", "bytes", "a tuple", "a list", "a global",
                                      "an object", "a mark"};

typedef struct pv {
    pv_kind k;
    int64_t i;          /* int, bool */
    const char *s;      /* str, bytes; a global's "module name" */
    size_t len;
    int *items, n, cap; /* tuple, list: indices of values */
    int fn, args, state; /* object: REDUCE's callable and arguments, BUILD's state (-1: none) */
} pv;

typedef struct pk {
    const unsigned char *b, *end;
    const char *what;
    pv *vals;
    int n_vals, cap_vals;
    int *stack, sp, cap_stack;
    int *memo, cap_memo;
    char *names; /* globals' "module name" texts, one block */
    size_t names_len, names_cap;
} pk;

static st_status nomem(pk *p) { return st_error(ST_ERR_NOMEM, "%s: out of memory reading an object array", p->what); }

static int new_val(pk *p, pv_kind k)
{
    if (p->n_vals == p->cap_vals) {
        int cap = p->cap_vals ? 2 * p->cap_vals : 64;
        pv *v = realloc(p->vals, (size_t)cap * sizeof *v);
        if (!v) return -1;
        p->vals = v;
        p->cap_vals = cap;
    }
    p->vals[p->n_vals] = (pv){.k = k, .fn = -1, .args = -1, .state = -1};
    return p->n_vals++;
}

static bool push(pk *p, int v)
{
    if (v < 0) return false;
    if (p->sp == p->cap_stack) {
        int cap = p->cap_stack ? 2 * p->cap_stack : 64;
        int *s = realloc(p->stack, (size_t)cap * sizeof *s);
        if (!s) return false;
        p->stack = s;
        p->cap_stack = cap;
    }
    p->stack[p->sp++] = v;
    return true;
}

static bool add_item(pk *p, int list, int item)
{
    pv *l = &p->vals[list];
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        int *it = realloc(l->items, (size_t)cap * sizeof *it);
        if (!it) return false;
        l->items = it;
        l->cap = cap;
    }
    l->items[l->n++] = item;
    return true;
}

/* The index of the topmost mark, or -1. */
static int find_mark(const pk *p)
{
    for (int i = p->sp - 1; i >= 0; i--)
        if (p->vals[p->stack[i]].k == PV_MARK) return i;
    return -1;
}

static uint64_t le(const unsigned char *b, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

/* A global's name as "module name", kept in p->names; returns its offset. */
static long keep_name(pk *p, const char *mod, size_t ml, const char *name, size_t nl)
{
    size_t need = p->names_len + ml + nl + 2;
    if (need > p->names_cap) {
        size_t cap = need * 2;
        char *n = realloc(p->names, cap);
        if (!n) return -1;
        p->names = n;
        p->names_cap = cap;
    }
    long at = (long)p->names_len;
    memcpy(p->names + at, mod, ml);
    p->names[at + (long)ml] = ' ';
    memcpy(p->names + at + (long)ml + 1, name, nl);
    p->names[at + (long)(ml + nl + 1)] = 0;
    p->names_len = need;
    return at;
}

static bool is_global(const pk *p, int v, const char *const *accepted)
{
    if (v < 0 || p->vals[v].k != PV_GLOBAL) return false;
    const char *n = p->names + p->vals[v].i;
    for (; *accepted; accepted++)
        if (!strcmp(n, *accepted)) return true;
    return false;
}

static st_status bad(pk *p, const char *why) { return st_error(ST_ERR_IO, "%s: object array: %s", p->what, why); }

/* Runs the pickle to its STOP; *result is the value left on the stack. */
static st_status run(pk *p, int *result)
{
    const unsigned char *b = p->b;
#define NEED(k)                                                                                              \
    do {                                                                                                     \
        if ((size_t)(p->end - b) < (size_t)(k)) return bad(p, "the pickle is truncated");                    \
    } while (0)
#define POP(v)                                                                                               \
    do {                                                                                                     \
        if (p->sp <= 0 || p->vals[p->stack[p->sp - 1]].k == PV_MARK) return bad(p, "the pickle's stack runs empty"); \
        v = p->stack[--p->sp];                                                                               \
    } while (0)
    for (;;) {
        NEED(1);
        unsigned op = *b++;
        int v, x, y, z;
        uint64_t len;
        switch (op) {
        case 0x80: NEED(1); b++; break;      /* PROTO */
        case 0x95: NEED(8); b += 8; break;   /* FRAME: a length hint */
        case '(':                            /* MARK */
            if (!push(p, new_val(p, PV_MARK))) return nomem(p);
            break;
        case 'N': if (!push(p, new_val(p, PV_NONE))) return nomem(p); break;
        case 0x88: case 0x89:                /* NEWTRUE, NEWFALSE */
            if ((v = new_val(p, PV_BOOL)) < 0 || !push(p, v)) return nomem(p);
            p->vals[v].i = op == 0x88;
            break;
        case 'K': case 'M': case 'J': case 0x8a: { /* BININT1, BININT2, BININT, LONG1 */
            int64_t iv;
            if (op == 'K') { NEED(1); iv = b[0]; b += 1; }
            else if (op == 'M') { NEED(2); iv = (int64_t)le(b, 2); b += 2; }
            else if (op == 'J') { NEED(4); iv = (int32_t)(uint32_t)le(b, 4); b += 4; }
            else {
                NEED(1);
                int nb = b[0];
                if (nb > 8) return bad(p, "an integer wider than 64 bits");
                NEED(1 + (size_t)nb);
                uint64_t u = le(b + 1, nb);
                if (nb && nb < 8 && (b[nb] & 0x80)) u |= ~(uint64_t)0 << (8 * nb); /* sign */
                iv = (int64_t)u;
                b += 1 + nb;
            }
            if ((v = new_val(p, PV_INT)) < 0 || !push(p, v)) return nomem(p);
            p->vals[v].i = iv;
            break;
        }
        case 'X': case 0x8c: case 0x8d:      /* BINUNICODE, SHORT_BINUNICODE, BINUNICODE8 */
        case 'C': case 'B': case 0x8e: {     /* SHORT_BINBYTES, BINBYTES, BINBYTES8 */
            int nb = op == 0x8c || op == 'C' ? 1 : op == 'X' || op == 'B' ? 4 : 8;
            NEED(nb);
            len = le(b, nb);
            b += nb;
            NEED(len);
            bool str = op == 'X' || op == 0x8c || op == 0x8d;
            if ((v = new_val(p, str ? PV_STR : PV_BYTES)) < 0 || !push(p, v)) return nomem(p);
            p->vals[v].s = (const char *)b;
            p->vals[v].len = (size_t)len;
            b += len;
            break;
        }
        case 'c': {                          /* GLOBAL: "module\nname\n", a name only */
            const unsigned char *nl1 = memchr(b, '\n', (size_t)(p->end - b));
            const unsigned char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(p->end - nl1 - 1)) : NULL;
            if (!nl2) return bad(p, "the pickle is truncated");
            long at = keep_name(p, (const char *)b, (size_t)(nl1 - b), (const char *)nl1 + 1, (size_t)(nl2 - nl1 - 1));
            if (at < 0 || (v = new_val(p, PV_GLOBAL)) < 0 || !push(p, v)) return nomem(p);
            p->vals[v].i = at;
            b = nl2 + 1;
            break;
        }
        case 0x93:                           /* STACK_GLOBAL */
            POP(y);
            POP(x);
            if (p->vals[x].k != PV_STR || p->vals[y].k != PV_STR) return bad(p, "a global named by something not a str");
            {
                long at = keep_name(p, p->vals[x].s, p->vals[x].len, p->vals[y].s, p->vals[y].len);
                if (at < 0 || (v = new_val(p, PV_GLOBAL)) < 0 || !push(p, v)) return nomem(p);
                p->vals[v].i = at;
            }
            break;
        case 'q': case 'r': case 0x94: {     /* BINPUT, LONG_BINPUT, MEMOIZE */
            if (p->sp <= 0) return bad(p, "a memo of nothing");
            long k;
            if (op == 'q') { NEED(1); k = b[0]; b += 1; }
            else if (op == 'r') { NEED(4); k = (long)le(b, 4); b += 4; }
            else {
                k = 0;
                while (k < p->cap_memo && p->memo[k] >= 0) k++;
            }
            if (k > 1 << 24) return bad(p, "a memo index out of range");
            if (k >= p->cap_memo) {
                int cap = (int)k + 64;
                int *m = realloc(p->memo, (size_t)cap * sizeof *m);
                if (!m) return nomem(p);
                for (int i = p->cap_memo; i < cap; i++) m[i] = -1;
                p->memo = m;
                p->cap_memo = cap;
            }
            p->memo[k] = p->stack[p->sp - 1];
            break;
        }
        case 'h': case 'j': {                /* BINGET, LONG_BINGET */
            long k;
            if (op == 'h') { NEED(1); k = b[0]; b += 1; }
            else { NEED(4); k = (long)le(b, 4); b += 4; }
            if (k >= p->cap_memo || p->memo[k] < 0) return bad(p, "a memo index never stored");
            if (!push(p, p->memo[k])) return nomem(p);
            break;
        }
        case ')': case 0x85: case 0x86: case 0x87: case 't': { /* EMPTY_TUPLE, TUPLE1..3, TUPLE */
            int from;
            if (op == 't') {
                from = find_mark(p);
                if (from < 0) return bad(p, "a tuple without its mark");
            } else {
                int k = op == ')' ? 0 : (int)(op - 0x84);
                if (p->sp < k) return bad(p, "the pickle's stack runs empty");
                from = p->sp - k;
                for (int i = from; i < p->sp; i++)
                    if (p->vals[p->stack[i]].k == PV_MARK) return bad(p, "the pickle's stack runs empty");
            }
            if ((v = new_val(p, PV_TUPLE)) < 0) return nomem(p);
            for (int i = from + (op == 't'); i < p->sp; i++)
                if (!add_item(p, v, p->stack[i])) return nomem(p);
            p->sp = from;
            if (!push(p, v)) return nomem(p);
            break;
        }
        case ']':                            /* EMPTY_LIST */
            if (!push(p, new_val(p, PV_LIST))) return nomem(p);
            break;
        case 'a':                            /* APPEND */
            POP(x);
            if (p->sp <= 0 || p->vals[p->stack[p->sp - 1]].k != PV_LIST) return bad(p, "APPEND to something not a list");
            if (!add_item(p, p->stack[p->sp - 1], x)) return nomem(p);
            break;
        case 'e': {                          /* APPENDS */
            int m = find_mark(p);
            if (m < 1 || p->vals[p->stack[m - 1]].k != PV_LIST) return bad(p, "APPENDS to something not a list");
            for (int i = m + 1; i < p->sp; i++)
                if (!add_item(p, p->stack[m - 1], p->stack[i])) return nomem(p);
            p->sp = m;
            break;
        }
        case 'R':                            /* REDUCE: recorded, never called */
            POP(y);
            POP(x);
            if (p->vals[x].k != PV_GLOBAL || p->vals[y].k != PV_TUPLE) return bad(p, "REDUCE of something not a global");
            if ((z = new_val(p, PV_OBJ)) < 0 || !push(p, z)) return nomem(p);
            p->vals[z].fn = x;
            p->vals[z].args = y;
            break;
        case 'b':                            /* BUILD: the state is recorded */
            POP(y);
            if (p->sp <= 0 || p->vals[p->stack[p->sp - 1]].k != PV_OBJ) return bad(p, "BUILD of something not an object");
            p->vals[p->stack[p->sp - 1]].state = y;
            break;
        case '.':                            /* STOP */
            POP(v);
            *result = v;
            return ST_OK;
        default: {
            char why[96];
            snprintf(why, sizeof why, "pickle opcode 0x%02x at byte %ld is outside what strata reads", op,
                     (long)(b - 1 - p->b));
            return bad(p, why);
        }
        }
    }
#undef NEED
#undef POP
}

static const char *const RECONSTRUCT[] = {"numpy.core.multiarray _reconstruct", "numpy._core.multiarray _reconstruct", NULL};
static const char *const NDARRAY[] = {"numpy ndarray", NULL};
static const char *const DTYPE[] = {"numpy dtype", NULL};

/* Checks the value is the ndarray of str NumPy pickles, of n elements
 * (rank and dims as the header says); fills out's pointer block. */
static st_status take(pk *p, int root, const st_npy *hdr, size_t n, st_npy *out)
{
    const pv *r = &p->vals[root];
    if (r->k != PV_OBJ || !is_global(p, r->fn, RECONSTRUCT) || p->vals[r->args].n < 1 ||
        !is_global(p, p->vals[r->args].items[0], NDARRAY) || r->state < 0)
        return bad(p, "the pickle is not a NumPy array");
    const pv *st = &p->vals[r->state];
    if (st->k != PV_TUPLE || st->n != 5) return bad(p, "the array's state is not (version, shape, dtype, fortran, data)");
    const pv *shape = &p->vals[st->items[1]], *dt = &p->vals[st->items[2]], *fortran = &p->vals[st->items[3]];
    const pv *list = &p->vals[st->items[4]];
    if (dt->k != PV_OBJ || !is_global(p, dt->fn, DTYPE) || p->vals[dt->args].n < 1 ||
        p->vals[p->vals[dt->args].items[0]].k != PV_STR || p->vals[p->vals[dt->args].items[0]].len != 2 ||
        memcmp(p->vals[p->vals[dt->args].items[0]].s, "O8", 2))
        return bad(p, "the pickled array's dtype is not object");
    if (shape->k != PV_TUPLE || shape->n != hdr->rank) return bad(p, "the pickled array's shape is not the header's");
    for (int d = 0; d < shape->n; d++)
        if (p->vals[shape->items[d]].k != PV_INT || p->vals[shape->items[d]].i != hdr->dims[d])
            return bad(p, "the pickled array's shape is not the header's");
    if (fortran->k != PV_BOOL) return bad(p, "the pickled array's order is not a bool");
    if (list->k != PV_LIST || (size_t)list->n != n) return bad(p, "the pickled array's data is not a list of its elements");
    size_t text = 0;
    for (int i = 0; i < list->n; i++) {
        const pv *e = &p->vals[list->items[i]];
        if (e->k != PV_STR) {
            char why[128];
            snprintf(why, sizeof why, "element %d is %s, not a str (strata reads object arrays of str only)", i, PV_NAMES[e->k]);
            return bad(p, why);
        }
        uint32_t c;
        for (size_t at = 0; at < e->len;) {
            size_t k = utf8_get((const unsigned char *)e->s + at, e->len - at, &c);
            if (!k || !c) return bad(p, k ? "a str holds a NUL character" : "a str is not UTF-8");
            at += k;
        }
        text += e->len + 1;
    }
    char **v = malloc(n * sizeof *v + text + 1);
    if (!v) return nomem(p);
    char *s = (char *)(v + n);
    for (int i = 0; i < list->n; i++) {
        const pv *e = &p->vals[list->items[i]];
        v[i] = s;
        memcpy(s, e->s, e->len);
        s[e->len] = 0;
        s += e->len + 1;
    }
    out->dtype = ST_STRING;
    out->data = v;
    out->bytes = n * sizeof *v;
    /* the list is in the array's logical (C) order whatever its layout:
     * NumPy's __reduce__ walks the elements in that order, and np.load
     * unpickles without looking at the header's fortran_order */
    return ST_OK;
}

st_status st_npy_strings_pickle(const void *data, size_t avail, size_t n, const char *what, st_npy *out)
{
    pk p = {.b = data, .end = (const unsigned char *)data + avail, .what = what};
    int root = -1;
    st_status s = run(&p, &root);
    if (s == ST_OK) s = take(&p, root, out, n, out);
    for (int i = 0; i < p.n_vals; i++) free(p.vals[i].items);
    free(p.vals);
    free(p.stack);
    free(p.memo);
    free(p.names);
    return s;
}
