/* strings.c — blocks of strings, and deep copies of values (strings.h). */
#include "core/strings.h"

#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

size_t st_strings_block_size(size_t n, const char *const *strs)
{
    size_t bytes = n * sizeof(char *);
    for (size_t i = 0; i < n; i++) bytes += strlen(strs[i]) + 1;
    return bytes;
}

void st_strings_pack(void *dst, size_t n, const char *const *strs)
{
    char **ptrs = dst;
    char *chars = (char *)dst + n * sizeof(char *);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(strs[i]) + 1;
        memcpy(chars, strs[i], len);
        ptrs[i] = chars;
        chars += len;
    }
}

char **st_strings_dup(size_t n, const char *const *strs)
{
    size_t bytes = st_strings_block_size(n, strs);
    char **block = malloc(bytes ? bytes : 1);
    if (block) st_strings_pack(block, n, strs);
    return block;
}

size_t st_values_bytes(st_dtype dtype, size_t n, const void *src)
{
    if (dtype == ST_STRING) return st_strings_block_size(n, src);
    return n * st_dtype_size(dtype);
}

void st_values_copy(st_dtype dtype, void *dst, size_t n, const void *src)
{
    if (dtype == ST_STRING) st_strings_pack(dst, n, src);
    else if (n) memcpy(dst, src, n * st_dtype_size(dtype));
}

bool st_values_equal(st_dtype dtype, size_t n, const void *a, const void *b)
{
    if (dtype != ST_STRING) return n == 0 || memcmp(a, b, n * st_dtype_size(dtype)) == 0;
    const char *const *x = a, *const *y = b;
    for (size_t i = 0; i < n; i++)
        if (strcmp(x[i], y[i]) != 0) return false;
    return true;
}
