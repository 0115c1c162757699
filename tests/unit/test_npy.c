/*
 * test_npy.c — the .npy reader and writer (src/io/npy.h).
 *
 * Round trips go through real files in a temporary directory.  Files the
 * writer cannot produce (version 2.0 and 3.0 headers, Fortran order, keys
 * in another order, and every kind of damage) are assembled here byte by
 * byte following the format's definition: magic, version, a little-endian
 * header length (2 bytes in 1.0, 4 in 2.0 and 3.0), a Python dict literal
 * padded with spaces and a newline, then the data.  Each malformed file
 * must be refused with a message that names the file.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "check.h"
#include "core/dtype.h"
#include "io/npy.h"
#include "strata.h"

static char dir[PATH_MAX];

static void path_in(char *out, const char *name) { snprintf(out, PATH_MAX, "%s/%s", dir, name); }

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len)) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fclose(f);
}

static uint8_t *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

/* An .npy image: version major.0, header dict text (padded here to a
 * 64-byte boundary when pad is set), then data. */
static uint8_t *npy_image(int major, const char *dict, bool pad, const void *data, size_t dlen, size_t *out_len)
{
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict) + 1;
    if (pad) hl += (64 - (pre + hl) % 64) % 64;
    uint8_t *b = calloc(1, pre + hl + dlen + 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    b[8] = (uint8_t)(hl & 0xff);
    b[9] = (uint8_t)(hl >> 8 & 0xff);
    if (major != 1) {
        b[10] = (uint8_t)(hl >> 16 & 0xff);
        b[11] = (uint8_t)(hl >> 24 & 0xff);
    }
    memset(b + pre, ' ', hl);
    memcpy(b + pre, dict, strlen(dict));
    b[pre + hl - 1] = '\n';
    if (dlen) memcpy(b + pre + hl, data, dlen);
    *out_len = pre + hl + dlen;
    return b;
}

static int64_t numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* ---- round trips ---- */

static const st_dtype ALL[] = {ST_F32, ST_U8, ST_I8, ST_U16, ST_I16, ST_I32, ST_I64,
                               ST_BOOL, ST_F16, ST_F64, ST_U32, ST_U64, ST_BF16};

static void test_round_trip(void)
{
    test_rng r = {0x5eed3001};
    char p[PATH_MAX];
    path_in(p, "rt.npy");
    for (size_t ti = 0; ti < sizeof ALL / sizeof *ALL; ti++) {
        st_dtype t = ALL[ti];
        size_t es = st_dtype_size(t);
        for (int trial = 0; trial < 12; trial++) {
            int rank = trial < 2 ? trial : (int)rng_range(&r, 0, ST_MAX_RANK);
            int64_t dims[ST_MAX_RANK];
            for (int d = 0; d < rank; d++) dims[d] = rng_range(&r, 1, rank > 4 ? 2 : 5);
            if (trial == 2) dims[0] = 0; /* empty */
            if (trial == 3) {
                rank = 1;
                dims[0] = 100000; /* more than one bf16 conversion block */
            }
            int64_t n = numel(rank, dims);
            uint8_t *data = malloc((size_t)n * es + 1);
            for (int64_t i = 0; i < n * (int64_t)es; i++) data[i] = (uint8_t)rng_u64(&r);
            if (t == ST_BOOL)
                for (int64_t i = 0; i < n; i++) data[i] &= 1;
            st_status s = st_npy_write(p, t, rank, dims, data);
            CHECKF(s == ST_OK, "write %s: %s", st_dtype_name(t), st_last_error());
            /* the header: version 1.0, data on a 64-byte boundary, a newline before it */
            size_t flen = 0;
            uint8_t *file = read_whole(p, &flen);
            if (file && flen >= 10) {
                size_t hl = (size_t)file[8] | (size_t)file[9] << 8;
                CHECK(memcmp(file, "\x93NUMPY\x01\x00", 8) == 0);
                CHECK((10 + hl) % 64 == 0 && file[10 + hl - 1] == '\n');
                size_t fes = t == ST_BF16 ? 4 : es;
                CHECKF(flen == 10 + hl + (size_t)n * fes, "%s: file of %zu bytes", st_dtype_name(t), flen);
            }
            free(file);
            st_npy got;
            s = st_npy_read(p, &got);
            CHECKF(s == ST_OK, "read %s: %s", st_dtype_name(t), st_last_error());
            if (s == ST_OK) {
                /* bf16 has no NumPy dtype: it comes back as the f32 it widens to */
                st_dtype want_t = t == ST_BF16 ? ST_F32 : t;
                CHECKF(got.dtype == want_t && got.rank == rank, "%s rank %d: got %s rank %d", st_dtype_name(t),
                       rank, st_dtype_name(got.dtype), got.rank);
                bool same_dims = got.rank == rank;
                for (int d = 0; same_dims && d < rank; d++) same_dims = got.dims[d] == dims[d];
                CHECK(same_dims);
                if (t == ST_BF16) {
                    bool ok = got.bytes == (size_t)n * 4;
                    for (int64_t i = 0; ok && i < n; i++) {
                        float w = st_bf16_to_f32(((uint16_t *)data)[i]), g = ((float *)got.data)[i];
                        ok = memcmp(&w, &g, 4) == 0;
                    }
                    CHECKF(ok, "bf16 round trip differs");
                } else {
                    CHECKF(got.bytes == (size_t)n * es && (n == 0 || memcmp(got.data, data, got.bytes) == 0),
                           "%s rank %d: data differs", st_dtype_name(t), rank);
                }
                st_npy_free(&got);
            }
            free(data);
        }
    }
    /* no temporary file is left behind */
    DIR *d = opendir(dir);
    int others = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp")) others++;
    if (d) closedir(d);
    CHECK(others == 0);
    unlink(p);
}

/* ---- headers the writer does not make ---- */

static void expect_parse(const uint8_t *img, size_t len, st_dtype dt, int rank, const int64_t *dims,
                         const void *data, size_t bytes, const char *what)
{
    st_npy got;
    st_status s = st_npy_parse(img, len, what, &got);
    CHECKF(s == ST_OK, "%s: %s", what, st_last_error());
    if (s != ST_OK) return;
    bool ok = got.dtype == dt && got.rank == rank && got.bytes == bytes;
    for (int d = 0; ok && d < rank; d++) ok = got.dims[d] == dims[d];
    CHECKF(ok, "%s: dtype %s rank %d bytes %zu", what, st_dtype_name(got.dtype), got.rank, got.bytes);
    CHECKF(!ok || bytes == 0 || memcmp(got.data, data, bytes) == 0, "%s: data differs", what);
    st_npy_free(&got);
}

static void test_versions(void)
{
    int32_t v[6] = {1, -2, 3, -4, 5, 2147483647};
    int64_t dims[2] = {2, 3};
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
    for (int major = 1; major <= 3; major++) {
        size_t len;
        uint8_t *img = npy_image(major, dict, true, v, sizeof v, &len);
        char what[32];
        snprintf(what, sizeof what, "version %d.0", major);
        expect_parse(img, len, ST_I32, 2, dims, v, sizeof v, what);
        free(img);
    }
    /* a 2.0 header longer than 65535 bytes: the reason 2.0 exists */
    size_t big = 70000;
    char *long_dict = malloc(big + 1);
    int k = snprintf(long_dict, big, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), ");
    memset(long_dict + k, ' ', big - (size_t)k - 1);
    long_dict[big - 1] = '}';
    long_dict[big] = 0;
    size_t len;
    uint8_t *img = npy_image(2, long_dict, true, v, sizeof v, &len);
    expect_parse(img, len, ST_I32, 2, dims, v, sizeof v, "a 70000-byte 2.0 header");
    free(img);
    free(long_dict);
    /* any key order, double quotes, no padding, no trailing comma */
    const char *variants[] = {
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
        "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,3)}",
        "{'descr':'<i4','fortran_order':False,'shape':(2,3,)}",
    };
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        img = npy_image(1, variants[i], i != 2, v, sizeof v, &len);
        expect_parse(img, len, ST_I32, 2, dims, v, sizeof v, variants[i]);
        free(img);
    }
    /* a scalar, and the one-byte descrs NumPy writes with '|' */
    double one = 1.25;
    img = npy_image(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", true, &one, 8, &len);
    expect_parse(img, len, ST_F64, 0, NULL, &one, 8, "scalar");
    free(img);
    uint8_t bytes[3] = {1, 0, 1};
    int64_t d3[1] = {3};
    img = npy_image(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", true, bytes, 3, &len);
    expect_parse(img, len, ST_BOOL, 1, d3, bytes, 3, "|b1");
    free(img);
    img = npy_image(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }", true, bytes, 3, &len);
    expect_parse(img, len, ST_I8, 1, d3, bytes, 3, "|i1");
    free(img);
    img = npy_image(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", true, "\x00\x3c", 2, &len);
    expect_parse(img, len, ST_F16, 1, (int64_t[]){1}, "\x00\x3c", 2, "<f2");
    free(img);
}

static void test_fortran(void)
{
    test_rng r = {0x5eed3002};
    for (int trial = 0; trial < 40; trial++) {
        int rank = (int)rng_range(&r, 0, 5);
        int64_t dims[ST_MAX_RANK];
        for (int d = 0; d < rank; d++) dims[d] = rng_range(&r, trial == 7 ? 0 : 1, 4);
        int64_t n = numel(rank, dims);
        /* file: element (i0, ..., ik) at sum i_d * prod(dims[< d]) */
        uint16_t *file = malloc((size_t)(n ? n : 1) * 2), *want = malloc((size_t)(n ? n : 1) * 2);
        for (int64_t i = 0; i < n; i++) file[i] = (uint16_t)rng_u64(&r);
        for (int64_t c = 0; c < n; c++) { /* C order index c -> multi-index -> Fortran offset */
            int64_t rem = c, off = 0, mul = 1, idx[ST_MAX_RANK];
            for (int d = rank - 1; d >= 0; d--) {
                idx[d] = rem % dims[d];
                rem /= dims[d];
            }
            for (int d = 0; d < rank; d++) {
                off += idx[d] * mul;
                mul *= dims[d];
            }
            want[c] = file[off];
        }
        char dict[256];
        int k = snprintf(dict, sizeof dict, "{'descr': '<u2', 'fortran_order': True, 'shape': (");
        for (int d = 0; d < rank; d++) k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld, ", (long long)dims[d]);
        snprintf(dict + k, sizeof dict - (size_t)k, "), }");
        size_t len;
        uint8_t *img = npy_image(1, dict, true, file, (size_t)n * 2, &len);
        expect_parse(img, len, ST_U16, rank, dims, want, (size_t)n * 2, dict);
        free(img);
        free(file);
        free(want);
    }
    /* the classic: a 2x3 matrix stored by columns */
    float colmajor[6] = {1, 4, 2, 5, 3, 6}, rowmajor[6] = {1, 2, 3, 4, 5, 6};
    size_t len;
    uint8_t *img = npy_image(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", true, colmajor,
                             sizeof colmajor, &len);
    expect_parse(img, len, ST_F32, 2, (int64_t[]){2, 3}, rowmajor, sizeof rowmajor, "2x3 Fortran");
    free(img);
}

/* ---- malformed files ---- */

static void expect_bad_file(const char *name, const void *img, size_t len, const char *needle)
{
    char p[PATH_MAX];
    path_in(p, name);
    write_file(p, img, len);
    st_npy got;
    memset(&got, 0x5a, sizeof got);
    st_status s = st_npy_read(p, &got);
    const char *msg = st_last_error();
    CHECKF(s == ST_ERR_IO, "%s: expected an i/o error, got %s (\"%s\")", name, st_status_name(s), msg);
    CHECKF(strstr(msg, p) != NULL, "%s: the message does not name the file: \"%s\"", name, msg);
    if (needle) CHECKF(strstr(msg, needle) != NULL, "%s: \"%s\" lacks \"%s\"", name, msg, needle);
    CHECK(got.data == NULL);
    if (s == ST_OK) st_npy_free(&got);
    unlink(p);
}

static void test_malformed(void)
{
    float v[4] = {1, 2, 3, 4};
    size_t len;
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
    uint8_t *img = npy_image(1, good, true, v, sizeof v, &len);

    uint8_t *bad = malloc(len);
    memcpy(bad, img, len);
    bad[5] = 'Z';
    expect_bad_file("magic.npy", bad, len, "magic");
    expect_bad_file("tiny.npy", img, 7, NULL);
    expect_bad_file("empty.npy", img, 0, NULL);
    /* header cut short */
    expect_bad_file("header.npy", img, 40, "truncated");
    expect_bad_file("header10.npy", img, 10, "truncated");
    free(img);
    img = npy_image(2, good, true, v, sizeof v, &len);
    expect_bad_file("header_v2.npy", img, 11, "truncated");
    expect_bad_file("header_v2b.npy", img, 30, "truncated");
    free(img);
    /* data cut short */
    img = npy_image(1, good, true, v, sizeof v, &len);
    expect_bad_file("data.npy", img, len - 1, "truncated");
    expect_bad_file("nodata.npy", img, len - sizeof v, "truncated");
    /* a version that does not exist */
    memcpy(bad, img, len);
    bad[6] = 4;
    expect_bad_file("version.npy", bad, len, "version");
    free(img);
    free(bad);

    struct {
        const char *name, *dict, *needle;
    } cases[] = {
        {"descr_bad.npy", "{'descr': '<x9', 'fortran_order': False, 'shape': (4,), }", "<x9"},
        {"big_endian.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", ">f4"},
        /* strings are read (npy_str.c), but not these: an object array
         * whose data is no pickle, UTF-32 that is no code point (1.0f) */
        {"object.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", "pickle opcode"},
        {"unicode.npy", "{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", "not a Unicode code point"},
        {"complex.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "<c8"},
        {"structured.npy", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", "descr"},
        {"no_descr.npy", "{'fortran_order': False, 'shape': (4,), }", "descr"},
        {"descr_open.npy", "{'descr': '<f4", "descr"},
        {"no_fortran.npy", "{'descr': '<f4', 'shape': (4,), }", "fortran_order"},
        {"fortran_bad.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", "fortran_order"},
        {"no_shape.npy", "{'descr': '<f4', 'fortran_order': False, }", "shape"},
        {"shape_list.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': [4], }", "shape"},
        {"shape_neg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", "shape"},
        {"shape_junk.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", "shape"},
        {"shape_open.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2", "shape"},
        {"shape_overflow.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
         "overflow"},
        {"shape_huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
         "too large"},
        {"shape_product.npy",
         "{'descr': '<f8', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536, 2), }", "too large"},
        {"rank9.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", "rank"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        img = npy_image(1, cases[i].dict, true, v, sizeof v, &len);
        expect_bad_file(cases[i].name, img, len, cases[i].needle);
        free(img);
    }

    /* a file that is not there, and a directory */
    char p[PATH_MAX];
    path_in(p, "absent.npy");
    st_npy got;
    CHECK(st_npy_read(p, &got) == ST_ERR_IO);
    CHECK_MSG(st_last_error(), p);
    CHECK(st_npy_read(dir, &got) == ST_ERR_IO);
    CHECK_MSG(st_last_error(), dir);
}

static void test_write_errors(void)
{
    float v[2] = {1, 2};
    char p[PATH_MAX];
    /* a directory that does not exist */
    path_in(p, "no/such/dir/out.npy");
    CHECK(st_npy_write(p, ST_F32, 1, (int64_t[]){2}, v) == ST_ERR_IO);
    CHECK_MSG(st_last_error(), p);
    /* a dtype NumPy cannot hold */
    path_in(p, "string.npy");
    /* strings go as '<U' (npy_str.c), text only: bytes that are not UTF-8 are refused */
    const char *not_text[2] = {"ok", "\xff\xfe"};
    CHECK(st_npy_write(p, ST_STRING, 1, (int64_t[]){2}, not_text) == ST_ERR_DTYPE);
    CHECK_MSG(st_last_error(), p);
    CHECK(access(p, F_OK) != 0);
    const char *text[3] = {"a", "Stra\xc3\x9f" "e \xe6\x97\xa5", ""};
    CHECK(st_npy_write(p, ST_STRING, 1, (int64_t[]){3}, text) == ST_OK);
    st_npy back;
    CHECK(st_npy_read(p, &back) == ST_OK);
    CHECK(back.dtype == ST_STRING && back.rank == 1 && back.dims[0] == 3 && back.bytes == 3 * sizeof(char *));
    for (int i = 0; i < 3 && back.dtype == ST_STRING; i++) CHECK(strcmp(((char **)back.data)[i], text[i]) == 0);
    st_npy_free(&back);
    unlink(p);
    /* the target is a directory: the rename fails, and the temporary goes */
    path_in(p, "adir");
    mkdir(p, 0700);
    CHECK(st_npy_write(p, ST_F32, 1, (int64_t[]){2}, v) == ST_ERR_IO);
    CHECK_MSG(st_last_error(), p);
    rmdir(p);
    DIR *d = opendir(dir);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') {
            left++;
            fprintf(stderr, "left behind: %s\n", e->d_name);
        }
    if (d) closedir(d);
    CHECK(left == 0);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/strata_npy_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 2;
    }
    test_round_trip();
    test_versions();
    test_fortran();
    test_malformed();
    test_write_errors();
    rmdir(dir);
    return check_exit("test_npy");
}
