/*
 * strmap.h — a string -> int map (open addressing), for value names.
 * Keys are borrowed: the caller keeps them alive as long as the map.
 */
#ifndef ST_STRMAP_H
#define ST_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct st_strmap {
    const char **keys;
    int *vals;
    size_t cap, n;
} st_strmap;

bool st_strmap_init(st_strmap *m, size_t expected);
void st_strmap_free(st_strmap *m);
/* Returns false on allocation failure.  Overwrites an existing key. */
bool st_strmap_put(st_strmap *m, const char *key, int val);
/* Returns -1 when absent. */
int st_strmap_get(const st_strmap *m, const char *key);

#endif
