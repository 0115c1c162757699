/* casemap.c — UTF-8 case mapping through the C.UTF-8 locale (casemap.h). */
#include "core/casemap.h"

#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <wctype.h>

static locale_t utf8_locale = (locale_t)0;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

/* Made once and kept for the process: towupper_l reads it, and it is
 * never changed, so any thread may use it. */
static void make_locale(void) { utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

/* The code point at s (advancing it), or -1 where the bytes are not UTF-8
 * (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF). */
static int32_t decode(const unsigned char **s)
{
    const unsigned char *p = *s;
    int32_t c = p[0];
    int n = c < 0x80 ? 0 : c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xf0 && c < 0xf5 ? 3 : -1;
    if (n < 0) return -1;
    if (n) c &= 0x3f >> n;
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xc0) != 0x80) return -1;
        c = c << 6 | (p[i] & 0x3f);
    }
    if ((n == 2 && c < 0x800) || (n == 3 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff)) return -1;
    *s = p + n + 1;
    return c;
}

static char *encode(char *o, uint32_t c)
{
    if (c < 0x80) {
        *o++ = (char)c;
    } else if (c < 0x800) {
        *o++ = (char)(0xc0 | c >> 6);
        *o++ = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        *o++ = (char)(0xe0 | c >> 12);
        *o++ = (char)(0x80 | (c >> 6 & 0x3f));
        *o++ = (char)(0x80 | (c & 0x3f));
    } else {
        *o++ = (char)(0xf0 | c >> 18);
        *o++ = (char)(0x80 | (c >> 12 & 0x3f));
        *o++ = (char)(0x80 | (c >> 6 & 0x3f));
        *o++ = (char)(0x80 | (c & 0x3f));
    }
    return o;
}

size_t st_utf8_case_room(const char *s) { return 3 * strlen(s) + 1; }

int64_t st_utf8_case(const char *s, bool upper, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    char *o = out;
    while (*p) {
        int32_t c = decode(&p);
        if (c < 0) return -1;
        if (c < 0x80) {
            /* ASCII needs no locale */
            if (upper && c >= 'a' && c <= 'z') c -= 'a' - 'A';
            else if (!upper && c >= 'A' && c <= 'Z') c += 'a' - 'A';
        } else {
            pthread_once(&utf8_once, make_locale);
            if (utf8_locale == (locale_t)0) return -2;
            wint_t m = upper ? towupper_l((wint_t)c, utf8_locale) : towlower_l((wint_t)c, utf8_locale);
            /* a mapping outside Unicode's scalar values would not encode */
            if (m <= 0x10ffff && !(m >= 0xd800 && m <= 0xdfff)) c = (int32_t)m;
        }
        o = encode(o, (uint32_t)c);
    }
    *o = 0;
    return o - out;
}
