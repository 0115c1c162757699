/* file.c — whole-file reads. */
#include "core/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"

st_status st_file_read(const char *path, void **data, size_t *size)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return st_error(ST_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return st_error(ST_ERR_IO, "'%s' is a directory, not a file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return st_error(ST_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return st_error(ST_ERR_NOMEM, "cannot read '%s': %zu bytes do not fit in memory", path, n);
    }
    size_t got = n ? fread(buf, 1, n, f) : 0;
    int err = ferror(f);
    fclose(f);
    if (got != n || err) {
        free(buf);
        return st_error(ST_ERR_IO, "cannot read '%s': short read (%zu of %zu bytes)", path, got, n);
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return ST_OK;
}
