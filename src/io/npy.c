/* npy.c — .npy reading and writing (see npy.h). */
#include "io/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype.h"
#include "core/file.h"
#include "core/status.h"

static const struct {
    const char *descr;
    st_dtype dtype;
} DESCRS[] = {
    {"<f4", ST_F32}, {"<f8", ST_F64}, {"<f2", ST_F16}, {"|i1", ST_I8}, {"<i1", ST_I8}, {"|u1", ST_U8},
    {"<u1", ST_U8},  {"<i2", ST_I16}, {"<u2", ST_U16}, {"<i4", ST_I32}, {"<u4", ST_U32}, {"<i8", ST_I64},
    {"<u8", ST_U64}, {"|b1", ST_BOOL}, {"<b1", ST_BOOL},
};

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n')) p++;
    return p;
}

/* Finds 'key': in the header dict and returns the text after the colon. */
static const char *find_key(const char *h, const char *end, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = h; p + kl + 2 < end; p++)
        if ((*p == '\'' || *p == '"') && memcmp(p + 1, key, kl) == 0 && p[kl + 1] == *p) {
            const char *q = skip_ws(p + kl + 2, end);
            if (q < end && *q == ':') return skip_ws(q + 1, end);
            return NULL;
        }
    return NULL;
}

static st_status from_fortran(st_npy *out, const void *src, size_t n, const char *what);

st_status st_npy_parse(const void *buf, size_t len, const char *what, st_npy *out)
{
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return st_error(ST_ERR_IO, "%s: not a .npy file (bad magic)", what);
    int major = b[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return st_error(ST_ERR_IO, "%s: truncated .npy header", what);
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return st_error(ST_ERR_IO, "%s: unsupported .npy version %d", what, major);
    }
    if (hlen > len - hstart) return st_error(ST_ERR_IO, "%s: truncated .npy header (%zu bytes declared)", what, hlen);
    const char *h = (const char *)b + hstart, *end = h + hlen;

    const char *d = find_key(h, end, "descr");
    if (!d || d >= end || (*d != '\'' && *d != '"')) return st_error(ST_ERR_IO, "%s: .npy header has no descr", what);
    const char *dq = memchr(d + 1, *d, (size_t)(end - d - 1));
    if (!dq) return st_error(ST_ERR_IO, "%s: malformed descr in .npy header", what);
    size_t dl = (size_t)(dq - d - 1);
    out->dtype = ST_UNDEFINED;
    for (size_t i = 0; i < sizeof DESCRS / sizeof *DESCRS; i++)
        if (strlen(DESCRS[i].descr) == dl && memcmp(DESCRS[i].descr, d + 1, dl) == 0) out->dtype = DESCRS[i].dtype;
    /* strings: '<U8', '>U8', '|S8' (fixed width) and '|O' (pickled objects) */
    char str_kind = 0;
    bool str_big = false;
    size_t str_width = 0;
    if (out->dtype == ST_UNDEFINED && dl >= 2 && strchr("<>|=", d[1])) {
        char k = d[2];
        const char *w = d + 3, *we = d + 1 + dl;
        if (k == 'O' && w == we && d[1] == '|') str_kind = 'O';
        else if ((k == 'U' || k == 'S') && w < we && (w + 1 == we || *w != '0')) {
            str_kind = k;
            str_big = d[1] == '>';
            for (; w < we && *w >= '0' && *w <= '9' && str_width < ((size_t)1 << 30); w++)
                str_width = str_width * 10 + (size_t)(*w - '0');
            if (w != we || str_width >= ((size_t)1 << 30)) str_kind = 0;
        }
    }
    if (out->dtype == ST_UNDEFINED && !str_kind)
        return st_error(ST_ERR_IO, "%s: unsupported .npy dtype '%.*s' (big-endian numbers, structured and other object "
                        "arrays are not supported)", what, (int)(dl < 16 ? dl : 16), d + 1);

    const char *f = find_key(h, end, "fortran_order");
    bool fortran = false;
    if (!f) return st_error(ST_ERR_IO, "%s: .npy header has no fortran_order", what);
    if (end - f >= 4 && memcmp(f, "True", 4) == 0) fortran = true;
    else if (!(end - f >= 5 && memcmp(f, "False", 5) == 0)) return st_error(ST_ERR_IO, "%s: malformed fortran_order", what);

    const char *s = find_key(h, end, "shape");
    /* the key may end the header: nothing after it to look at */
    if (!s || s >= end || *s != '(') return st_error(ST_ERR_IO, "%s: .npy header has no shape tuple", what);
    s++;
    out->rank = 0;
    for (;;) {
        s = skip_ws(s, end);
        if (s >= end) return st_error(ST_ERR_IO, "%s: unterminated shape tuple", what);
        if (*s == ')') break;
        if (*s < '0' || *s > '9') return st_error(ST_ERR_IO, "%s: malformed shape tuple", what);
        int64_t v = 0;
        while (s < end && *s >= '0' && *s <= '9') {
            if (v > (INT64_MAX - 9) / 10) return st_error(ST_ERR_IO, "%s: shape dim overflows", what);
            v = v * 10 + (*s++ - '0');
        }
        if (out->rank == ST_MAX_RANK) return st_error(ST_ERR_IO, "%s: rank exceeds %d", what, ST_MAX_RANK);
        out->dims[out->rank++] = v;
        s = skip_ws(s, end);
        if (s < end && *s == ',') s++;
    }
    size_t n = 1;
    for (int i = 0; i < out->rank; i++) {
        if (out->dims[i] && n > ((size_t)1 << 40) / (size_t)out->dims[i])
            return st_error(ST_ERR_IO, "%s: shape is too large", what);
        n *= (size_t)out->dims[i];
    }
    size_t at = hstart + hlen;
    if (str_kind == 'O') return st_npy_strings_pickle(b + at, len - at, n, what, out);
    if (str_kind) {
        ST_TRY(st_npy_strings_fixed(str_kind, str_big, str_width, b + at, len - at, n, what, out));
        if (!fortran || out->rank < 2) return ST_OK;
        /* the pointers are in file order: put them in C order as below */
        void *file_order = out->data;
        out->data = NULL;
        st_status r = from_fortran(out, file_order, n, what);
        if (r != ST_OK) {
            free(file_order);
            return r;
        }
        /* the strings stay in file_order's block: move the pointers back there */
        memcpy(file_order, out->data, n * sizeof(char *));
        free(out->data);
        out->data = file_order;
        return ST_OK;
    }
    size_t es = st_dtype_size(out->dtype);
    size_t bytes = n * es;
    if (len - at < bytes)
        return st_error(ST_ERR_IO, "%s: data is truncated: %zu bytes for a shape needing %zu", what, len - at, bytes);
    if (fortran && out->rank >= 2) return from_fortran(out, b + at, n, what);
    out->data = malloc(bytes ? bytes : 1);
    if (!out->data) return st_error(ST_ERR_NOMEM, "%s: out of memory (%zu bytes)", what, bytes);
    out->bytes = bytes;
    memcpy(out->data, b + at, bytes);
    return ST_OK;
}

/* Column-major elements at src (n of out's dtype) into a new C-order
 * out->data: element (i0..ik) sits at sum i_d * prod(dims[<d]). */
static st_status from_fortran(st_npy *out, const void *src_, size_t n, const char *what)
{
    size_t es = st_dtype_size(out->dtype), bytes = n * es;
    const unsigned char *src = src_;
    out->data = malloc(bytes ? bytes : 1);
    if (!out->data) return st_error(ST_ERR_NOMEM, "%s: out of memory (%zu bytes)", what, bytes);
    out->bytes = bytes;
    int64_t idx[ST_MAX_RANK] = {0};
    for (size_t e = 0; e < n; e++) {
        size_t off = 0, mul = 1;
        for (int dd = 0; dd < out->rank; dd++) {
            off += (size_t)idx[dd] * mul;
            mul *= (size_t)out->dims[dd];
        }
        memcpy((char *)out->data + e * es, src + off * es, es);
        for (int dd = out->rank - 1; dd >= 0; dd--) {
            if (++idx[dd] < out->dims[dd]) break;
            idx[dd] = 0;
        }
    }
    return ST_OK;
}

st_status st_npy_read(const char *path, st_npy *out)
{
    void *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    ST_TRY(st_file_read(path, &buf, &len));
    st_status s = st_npy_parse(buf, len, path, out);
    free(buf);
    return s;
}

void st_npy_free(st_npy *n)
{
    if (!n) return;
    free(n->data);
    n->data = NULL;
}

st_status st_npy_write(const char *path, st_dtype dtype, int rank, const int64_t *dims, const void *data)
{
    const char *descr = NULL;
    st_dtype file_dtype = dtype == ST_BF16 ? ST_F32 : dtype;
    for (size_t i = 0; i < sizeof DESCRS / sizeof *DESCRS; i++)
        if (DESCRS[i].dtype == file_dtype) {
            descr = DESCRS[i].descr;
            break;
        }
    /* strings (data: their pointers) go as '<U' of the longest one's length */
    char str_descr[32];
    uint32_t *text = NULL;
    size_t str_width = 0;
    if (dtype == ST_STRING) {
        size_t count = 1;
        for (int i = 0; i < rank; i++) count *= (size_t)dims[i];
        ST_TRY(st_npy_strings_encode(data, count, path, &text, &str_width));
        snprintf(str_descr, sizeof str_descr, "<U%zu", str_width);
        descr = str_descr;
        data = text;
    }
    if (!descr) return st_error(ST_ERR_DTYPE, "'%s': dtype %s cannot be written to .npy", path, st_dtype_name(dtype));
    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < rank; i++) hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "%lld%s", (long long)dims[i], rank == 1 ? "," : i + 1 < rank ? ", " : "");
    hl += snprintf(hdr + hl, sizeof hdr - (size_t)hl, "), }");
    /* pad with spaces so data starts on a 64-byte boundary, ending in \n */
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    for (int i = 0; i < pad; i++) hdr[hl++] = ' ';
    hdr[hl++] = '\n';

    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    size_t es = text ? 4 * str_width : st_dtype_size(file_dtype);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(text);
        return st_error(ST_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl;
    if (ok && dtype == ST_BF16) {
        float block[1024];
        for (size_t i = 0; i < n && ok; i += 1024) {
            size_t m = n - i < 1024 ? n - i : 1024;
            st_convert(ST_F32, block, ST_BF16, (const uint16_t *)data + i, m);
            ok = fwrite(block, 4, m, f) == m;
        }
    } else if (ok && n) {
        ok = fwrite(data, es, n, f) == n;
    }
    if (fclose(f) != 0) ok = false;
    free(text);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return st_error(ST_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return ST_OK;
}
