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

#include <stddef.h>
#include <stdint.h>

#include "strata.h"

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

#endif
