/*
 * serve_json.c — the JSON that `strata serve` reads and writes.
 *
 * A request is untrusted: the reader bounds nesting (64 levels), checks
 * the number grammar itself (strtod alone would take "nan", "0x1p3",
 * "inf"), rejects control characters and bad escapes in strings, and
 * never reads past the given size.  Arrays of numbers, the bulk of an
 * inference request, are flattened straight into a double array
 * (SJ_NUMS) instead of a node per element.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

#define MAX_DEPTH 64

typedef struct reader {
    const char *p, *end, *start;
    char *err;
    size_t cap;
    bool failed;
} reader;

static void fail(reader *r, const char *what)
{
    if (r->failed) return;
    r->failed = true;
    snprintf(r->err, r->cap, "JSON: %s at byte %zu", what, (size_t)(r->p - r->start));
}

static void skip_ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

/* A number per RFC 8259's grammar, then strtod on a bounded copy. */
static bool read_number(reader *r, double *out)
{
    const char *s = r->p;
    const char *q = s;
    if (q < r->end && *q == '-') q++;
    if (q >= r->end) return fail(r, "truncated number"), false;
    if (*q == '0') q++;
    else if (*q >= '1' && *q <= '9')
        while (q < r->end && *q >= '0' && *q <= '9') q++;
    else return fail(r, "bad number"), false;
    if (q < r->end && *q == '.') {
        q++;
        if (q >= r->end || *q < '0' || *q > '9') return fail(r, "bad fraction"), false;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < r->end && (*q == '+' || *q == '-')) q++;
        if (q >= r->end || *q < '0' || *q > '9') return fail(r, "bad exponent"), false;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
    }
    size_t n = (size_t)(q - s);
    if (n >= 64) return fail(r, "number too long"), false;
    char tmp[64];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    errno = 0;
    double v = strtod(tmp, NULL);
    if (!isfinite(v)) return fail(r, "number out of range"), false;
    *out = v;
    r->p = q;
    return true;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}

static char *read_string(reader *r, size_t *len_out)
{
    r->p++; /* the opening quote */
    /* decoded text is never longer than the source */
    const char *q = r->p;
    while (q < r->end && *q != '"') q += (*q == '\\' && q + 1 < r->end) ? 2 : 1;
    if (q >= r->end) return fail(r, "unterminated string"), NULL;
    char *s = malloc((size_t)(q - r->p) + 1);
    if (!s) return fail(r, "out of memory"), NULL;
    size_t n = 0;
    while (*r->p != '"') {
        unsigned char c = (unsigned char)*r->p;
        if (c < 0x20) return free(s), fail(r, "control character in string"), NULL;
        if (c != '\\') {
            s[n++] = (char)c;
            r->p++;
            continue;
        }
        r->p++;
        char e = *r->p++;
        switch (e) {
        case '"': s[n++] = '"'; break;
        case '\\': s[n++] = '\\'; break;
        case '/': s[n++] = '/'; break;
        case 'b': s[n++] = '\b'; break;
        case 'f': s[n++] = '\f'; break;
        case 'n': s[n++] = '\n'; break;
        case 'r': s[n++] = '\r'; break;
        case 't': s[n++] = '\t'; break;
        case 'u': {
            if (r->end - r->p < 4) return free(s), fail(r, "truncated \\u escape"), NULL;
            int u = hex4(r->p);
            if (u < 0) return free(s), fail(r, "bad \\u escape"), NULL;
            r->p += 4;
            long cp = u;
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u')
                    return free(s), fail(r, "lone surrogate"), NULL;
                int lo = hex4(r->p + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return free(s), fail(r, "bad surrogate pair"), NULL;
                r->p += 6;
                cp = 0x10000 + ((long)(u - 0xD800) << 10) + (lo - 0xDC00);
            } else if (u >= 0xDC00 && u <= 0xDFFF) {
                return free(s), fail(r, "lone surrogate"), NULL;
            }
            if (cp == 0) return free(s), fail(r, "NUL in string"), NULL;
            /* 6 source bytes (or 12) always cover the <= 4 bytes of UTF-8 */
            if (cp < 0x80) s[n++] = (char)cp;
            else if (cp < 0x800) {
                s[n++] = (char)(0xC0 | (cp >> 6));
                s[n++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                s[n++] = (char)(0xE0 | (cp >> 12));
                s[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                s[n++] = (char)(0x80 | (cp & 0x3F));
            } else {
                s[n++] = (char)(0xF0 | (cp >> 18));
                s[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                s[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                s[n++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return free(s), fail(r, "bad escape"), NULL;
        }
    }
    r->p++; /* the closing quote */
    s[n] = 0;
    *len_out = n;
    return s;
}

typedef struct nums {
    double *v;
    size_t n, cap;
} nums;

/* An array of numbers and booleans, nested: flattened into a.  false (and
 * the reader left where it was) when something else is in it. */
static bool read_nums(reader *r, nums *a, int depth)
{
    if (depth > MAX_DEPTH) return fail(r, "nested too deep"), false;
    r->p++; /* [ */
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return true;
    }
    for (;;) {
        skip_ws(r);
        if (r->p >= r->end) return fail(r, "truncated array"), false;
        char c = *r->p;
        if (c == '[') {
            if (!read_nums(r, a, depth + 1)) return false;
        } else {
            double v;
            if (c == 't' && r->end - r->p >= 4 && !memcmp(r->p, "true", 4)) v = 1, r->p += 4;
            else if (c == 'f' && r->end - r->p >= 5 && !memcmp(r->p, "false", 5)) v = 0, r->p += 5;
            else if (c == '-' || (c >= '0' && c <= '9')) {
                if (!read_number(r, &v)) return false;
            } else return false; /* not a number array: the caller reads it generally */
            if (a->n == a->cap) {
                size_t cap = a->cap ? a->cap * 2 : 64;
                double *nv = realloc(a->v, cap * sizeof *nv);
                if (!nv) return fail(r, "out of memory"), false;
                a->v = nv;
                a->cap = cap;
            }
            a->v[a->n++] = v;
        }
        skip_ws(r);
        if (r->p >= r->end) return fail(r, "truncated array"), false;
        if (*r->p == ']') {
            r->p++;
            return true;
        }
        if (*r->p != ',') return fail(r, "expected ',' or ']'"), false;
        r->p++;
    }
}

static bool read_value(reader *r, srv_json *v, int depth);

static bool grow_items(reader *r, srv_json *v, size_t *cap, bool keys)
{
    if (v->len < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 4;
    srv_json *ni = realloc(v->items, nc * sizeof *ni);
    if (!ni) return fail(r, "out of memory"), false;
    v->items = ni;
    if (keys) {
        char **nk = realloc(v->keys, nc * sizeof *nk);
        if (!nk) return fail(r, "out of memory"), false;
        v->keys = nk;
    }
    *cap = nc;
    return true;
}

static bool read_value(reader *r, srv_json *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (depth > MAX_DEPTH) return fail(r, "nested too deep"), false;
    skip_ws(r);
    if (r->p >= r->end) return fail(r, "truncated value"), false;
    char c = *r->p;
    if (c == '{') {
        v->type = SJ_OBJ;
        r->p++;
        size_t cap = 0;
        skip_ws(r);
        if (r->p < r->end && *r->p == '}') {
            r->p++;
            return true;
        }
        for (;;) {
            skip_ws(r);
            if (r->p >= r->end || *r->p != '"') return fail(r, "expected a key"), false;
            size_t kl;
            char *key = read_string(r, &kl);
            if (!key) return false;
            if (!grow_items(r, v, &cap, true)) return free(key), false;
            v->keys[v->len] = key;
            skip_ws(r);
            if (r->p >= r->end || *r->p != ':') {
                memset(&v->items[v->len], 0, sizeof v->items[v->len]);
                v->len++;
                return fail(r, "expected ':'"), false;
            }
            r->p++;
            bool ok = read_value(r, &v->items[v->len], depth + 1);
            v->len++;
            if (!ok) return false;
            skip_ws(r);
            if (r->p >= r->end) return fail(r, "truncated object"), false;
            if (*r->p == '}') {
                r->p++;
                return true;
            }
            if (*r->p != ',') return fail(r, "expected ',' or '}'"), false;
            r->p++;
        }
    }
    if (c == '[') {
        const char *at = r->p;
        nums a = {0};
        if (read_nums(r, &a, depth)) {
            v->type = SJ_NUMS;
            v->nums = a.v;
            v->len = a.n;
            return true;
        }
        free(a.v);
        if (r->failed) return false;
        r->p = at + 1;
        v->type = SJ_ARR;
        size_t cap = 0;
        skip_ws(r);
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return true;
        }
        for (;;) {
            if (!grow_items(r, v, &cap, false)) return false;
            bool ok = read_value(r, &v->items[v->len], depth + 1);
            v->len++;
            if (!ok) return false;
            skip_ws(r);
            if (r->p >= r->end) return fail(r, "truncated array"), false;
            if (*r->p == ']') {
                r->p++;
                return true;
            }
            if (*r->p != ',') return fail(r, "expected ',' or ']'"), false;
            r->p++;
        }
    }
    if (c == '"') {
        v->type = SJ_STR;
        v->str = read_string(r, &v->len);
        return v->str != NULL;
    }
    if (c == 't' && r->end - r->p >= 4 && !memcmp(r->p, "true", 4)) {
        v->type = SJ_BOOL, v->b = true, r->p += 4;
        return true;
    }
    if (c == 'f' && r->end - r->p >= 5 && !memcmp(r->p, "false", 5)) {
        v->type = SJ_BOOL, r->p += 5;
        return true;
    }
    if (c == 'n' && r->end - r->p >= 4 && !memcmp(r->p, "null", 4)) {
        v->type = SJ_NULL, r->p += 4;
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = SJ_NUM;
        return read_number(r, &v->num);
    }
    return fail(r, "unexpected character"), false;
}

static void free_value(srv_json *v)
{
    free(v->str);
    free(v->nums);
    for (size_t i = 0; i < v->len && v->items; i++) {
        free_value(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

srv_json *srv_json_parse(const char *text, size_t size, char *err, size_t err_cap)
{
    reader r = {text, text + size, text, err, err_cap, false};
    srv_json *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, err_cap, "JSON: out of memory");
        return NULL;
    }
    if (!read_value(&r, v, 0)) {
        fail(&r, "bad value");
        srv_json_free(v);
        return NULL;
    }
    skip_ws(&r);
    if (r.p != r.end) {
        fail(&r, "trailing characters");
        srv_json_free(v);
        return NULL;
    }
    return v;
}

void srv_json_free(srv_json *v)
{
    if (!v) return;
    free_value(v);
    free(v);
}

const srv_json *srv_json_get(const srv_json *v, const char *key)
{
    if (!v || v->type != SJ_OBJ) return NULL;
    for (size_t i = 0; i < v->len; i++)
        if (!strcmp(v->keys[i], key)) return &v->items[i];
    return NULL;
}

/* ---- writing ---- */
void srv_buf_add(srv_buf *b, const void *data, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *nd = realloc(b->data, cap);
        if (!nd) {
            b->failed = true;
            return;
        }
        b->data = nd;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
}

void srv_buf_printf(srv_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        srv_buf_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    srv_buf_add(b, big, (size_t)n);
    free(big);
}

void srv_buf_json_string(srv_buf *b, const char *s)
{
    srv_buf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            srv_buf_add(b, e, 2);
        } else if (*p < 0x20) {
            srv_buf_printf(b, "\\u%04x", *p);
        } else {
            srv_buf_add(b, p, 1);
        }
    }
    srv_buf_add(b, "\"", 1);
}

void srv_buf_free(srv_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
