/* file.h — reading whole files, with errors that name the path. */
#ifndef ST_FILE_H
#define ST_FILE_H

#include <stddef.h>

#include "strata.h"

/* Reads path into a malloc'd buffer (one spare NUL byte after the end). */
st_status st_file_read(const char *path, void **data, size_t *size);

#endif
