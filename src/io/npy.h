/*
 * npy.h — NumPy .npy files (format 1.0, 2.0 and 3.0, little-endian), the
 * way tensors enter and leave the command line.
 *
 * The reader checks everything (magic, header syntax, dtype, shape,
 * size) and names the file and the problem on failure.  The writer writes
 * to a temporary file and renames it, so a failure never leaves a partial
 * output file behind.  bf16 has no NumPy dtype and is written as f32.
 */
#ifndef ST_NPY_H
#define ST_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata.h"

/* String arrays (ST_STRING): data is one block, count pointers followed by
 * the NUL-terminated UTF-8 strings they point to (bytes: the pointers'
 * size), so st_npy_free frees it as any other.  Read from NumPy's '<U' and
 * '>U' (UTF-32), '|S' (bytes) and '|O' object arrays of str (the pickle
 * NumPy writes for them; npy_str.c says what of it is read); written as
 * '<U' of the longest string's length. */
typedef struct st_npy {
    st_dtype dtype;
    int rank;
    int64_t dims[ST_MAX_RANK];
    void *data;                   /* packed row-major */
    size_t bytes;
} st_npy;

st_status st_npy_parse(const void *buf, size_t len, const char *what, st_npy *out);
st_status st_npy_read(const char *path, st_npy *out);
st_status st_npy_write(const char *path, st_dtype dtype, int rank, const int64_t *dims, const void *data);
void st_npy_free(st_npy *n);

/* npy_str.c, for npy.c: the n strings of a fixed-width array (kind 'U' or
 * 'S', width characters each) or of a pickled object array, from data of
 * avail bytes, into out (rank and dims already set).  encode: UTF-8
 * strings to '<U' elements of *width code points (calloc'd *buf). */
st_status st_npy_strings_fixed(char kind, bool big, size_t width, const void *data, size_t avail, size_t n,
                               const char *what, st_npy *out);
st_status st_npy_strings_pickle(const void *data, size_t avail, size_t n, const char *what, st_npy *out);
st_status st_npy_strings_encode(const char *const *strs, size_t n, const char *what, uint32_t **buf, size_t *width);

#endif
