/* strmap.c — open-addressing string map with FNV-1a hashing. */
#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

bool st_strmap_init(st_strmap *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    m->n = 0;
    if (m->keys && m->vals) return true;
    /* a failed init leaves an empty map (that put grows, get and free
     * take), not one whose capacity promises arrays it lacks */
    st_strmap_free(m);
    return false;
}

void st_strmap_free(st_strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static bool grow(st_strmap *m)
{
    st_strmap b;
    if (!st_strmap_init(&b, m->cap)) {
        st_strmap_free(&b);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) st_strmap_put(&b, m->keys[i], m->vals[i]);
    st_strmap_free(m);
    *m = b;
    return true;
}

bool st_strmap_put(st_strmap *m, const char *key, int val)
{
    if ((m->n + 1) * 2 > m->cap && !grow(m)) return false;
    size_t i = fnv1a(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return true;
}

int st_strmap_get(const st_strmap *m, const char *key)
{
    if (!m->cap) return -1;
    size_t i = fnv1a(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}
