/*
 * strings.h — how strata holds a tensor of strings.
 *
 * A string element is a `char *` to NUL-terminated bytes (UTF-8 where text
 * matters), so st_dtype_size(ST_STRING) is sizeof(char *) and code that
 * moves elements by their size moves strings as pointers.  Strings never
 * enter an arena or reach a device: a string graph input is a value input
 * of the plan (its values are part of the plan's key), every node that
 * reads or makes strings is folded at plan time on the CPU
 * (passes/specialize.c), and a string output is a plan constant, copied
 * out whole when the API hands it over.  The pointers of a plan's string
 * values point into memory the plan or the model owns.
 *
 * A *block* holds n strings in one allocation: the n pointers, then the
 * characters they point to, so one free() releases them and a copy of the
 * block is a copy of the strings, not of the pointers.
 *
 * For code that handles values of any dtype, st_values_* copy and compare
 * n elements deeply: bytes for numbers, blocks for strings.
 */
#ifndef ST_STRINGS_H
#define ST_STRINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "strata.h"

/* The bytes of a block of these n strings. */
size_t st_strings_block_size(size_t n, const char *const *strs);
/* Writes the block into dst (st_strings_block_size bytes, pointer-aligned). */
void st_strings_pack(void *dst, size_t n, const char *const *strs);
/* A malloc'd block of copies of the n strings, or NULL. */
char **st_strings_dup(size_t n, const char *const *strs);

/* n elements of dtype at src: the bytes a deep copy needs, the copy
 * itself (into st_values_bytes bytes at dst), and deep equality. */
size_t st_values_bytes(st_dtype dtype, size_t n, const void *src);
void st_values_copy(st_dtype dtype, void *dst, size_t n, const void *src);
bool st_values_equal(st_dtype dtype, size_t n, const void *a, const void *b);

#endif
