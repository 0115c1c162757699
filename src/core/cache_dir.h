/* cache_dir.h — where strata keeps what it learns about a machine between
 * runs: compiled OpenCL programs, the Vulkan pipeline cache, cuDNN's timed
 * convolution algorithms. */
#ifndef ST_CACHE_DIR_H
#define ST_CACHE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* The directory for `sub`, created: $XDG_CACHE_HOME/strata/SUB, else
 * ~/.cache/strata/SUB, else $TMPDIR (or /tmp)/strata-UID/SUB.  False when
 * the environment variable `off` is "0" (that cache turned off), the path
 * does not fit `cap`, or the directory cannot be made. */
bool st_cache_dir(const char *sub, const char *off, char *out, size_t cap);

#endif
