/*
 * cache_dir.c — the per-user cache directory (cache_dir.h).  One place, so
 * every backend's cache lives under the same root and honours the same
 * XDG variable.
 */
#include "core/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p; 0 or -1 */
static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            int r = mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
            *p = '/';
            if (r) return -1;
        }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

bool st_cache_dir(const char *sub, const char *off, char *out, size_t cap)
{
    const char *e = off ? getenv(off) : NULL;
    if (e && strcmp(e, "0") == 0) return false;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME"), *tmp = getenv("TMPDIR");
    int n;
    if (xdg && *xdg) n = snprintf(out, cap, "%s/strata/%s", xdg, sub);
    else if (home && *home) n = snprintf(out, cap, "%s/.cache/strata/%s", home, sub);
    else n = snprintf(out, cap, "%s/strata-%ld/%s", tmp && *tmp ? tmp : "/tmp", (long)getuid(), sub);
    if (n < 0 || (size_t)n >= cap) return false;
    return mkdirs(out) == 0;
}
