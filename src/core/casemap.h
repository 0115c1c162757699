/*
 * casemap.h — upper and lower case of UTF-8 text (StringNormalizer).
 *
 * Unicode's simple case mapping, one code point to one, as glibc's
 * C.UTF-8 locale has it: the same whatever locale the program set, and
 * the one ONNX Runtime's en_US.UTF-8 default gives.  (Locales that map
 * differently, Turkish's dotted i, are refused by the op's shape rule.)
 * A code point's UTF-8 length may change with its case (U+023A is 2 bytes,
 * its lower case U+2C65 is 3), never to more than 3 bytes per byte.
 */
#ifndef ST_CASEMAP_H
#define ST_CASEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room enough for any case mapping of s, its NUL included. */
size_t st_utf8_case_room(const char *s);
/* Writes s in upper (or lower) case to out (st_utf8_case_room bytes) and
 * returns its length; -1 when s is not valid UTF-8, -2 when s has
 * non-ASCII text and this system lacks the C.UTF-8 locale. */
int64_t st_utf8_case(const char *s, bool upper, char *out);

#endif
