/* ctc.c — the recogniser's character list and greedy CTC decoding. */
#include "vision/ctc.h"

#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/status.h"

st_status st_charset_parse(const char *text, size_t len, const char *what, st_charset *cs)
{
    memset(cs, 0, sizeof *cs);
    /* one string per line, plus the blank and the space: the copy holds
     * every line's bytes, each with a NUL in place of its newline, "" and " " */
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n') lines++;
    if (len && text[len - 1] != '\n') lines++;
    if (!lines) return st_error(ST_ERR_INVALID_ARG, "character list '%s' is empty", what);
    if (lines > 1000000) return st_error(ST_ERR_INVALID_ARG, "character list '%s' has %zu lines; that is not a keys file", what, lines);
    cs->buf = malloc(len + 4);
    cs->chars = malloc((lines + 2) * sizeof *cs->chars);
    if (!cs->buf || !cs->chars) {
        st_charset_free(cs);
        return st_error(ST_ERR_NOMEM, "out of memory reading '%s'", what);
    }
    char *b = cs->buf;
    b[0] = 0; /* the blank */
    cs->chars[0] = b;
    size_t pos = 1, line = 1;
    for (size_t i = 0; i < len; line++) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        size_t e = j;
        if (e > i && text[e - 1] == '\r') e--;
        if (e == i) {
            st_charset_free(cs);
            return st_error(ST_ERR_INVALID_ARG, "character list '%s': line %zu is empty", what, line);
        }
        if (memchr(text + i, 0, e - i)) {
            st_charset_free(cs);
            return st_error(ST_ERR_INVALID_ARG, "character list '%s': line %zu holds a NUL byte; it is not a text file", what, line);
        }
        cs->chars[line] = b + pos;
        memcpy(b + pos, text + i, e - i);
        pos += e - i;
        b[pos++] = 0;
        i = j + 1;
    }
    cs->chars[line] = b + pos;
    memcpy(b + pos, " ", 2);
    cs->n = (int)line + 1;
    return ST_OK;
}

st_status st_charset_load(const char *path, st_charset *cs)
{
    void *data;
    size_t size;
    memset(cs, 0, sizeof *cs);
    st_status r = st_file_read(path, &data, &size);
    if (r != ST_OK) return r;
    r = st_charset_parse(data, size, path, cs);
    free(data);
    return r;
}

void st_charset_free(st_charset *cs)
{
    free(cs->buf);
    free(cs->chars);
    memset(cs, 0, sizeof *cs);
}

st_status st_ctc_greedy(const float *probs, int T, int C, const st_charset *cs, char **text, float *score)
{
    *text = NULL;
    *score = 0;
    if (C != cs->n)
        return st_error(ST_ERR_SHAPE,
                        "the recognition model gives %d classes per step but the character list has %d "
                        "(blank + %d lines + space); is it the model's keys file?",
                        C, cs->n, cs->n - 2);
    /* room for T of the longest class string */
    size_t maxlen = 0;
    for (int c = 0; c < C; c++) {
        size_t l = strlen(cs->chars[c]);
        if (l > maxlen) maxlen = l;
    }
    char *s = malloc((size_t)(T > 0 ? T : 0) * maxlen + 1);
    if (!s) return st_error(ST_ERR_NOMEM, "out of memory decoding text");
    size_t len = 0;
    double sum = 0;
    int kept = 0, prev = -1;
    for (int t = 0; t < T; t++) {
        const float *p = probs + (size_t)t * C;
        int best = 0;
        for (int c = 1; c < C; c++)
            if (p[c] > p[best]) best = c;
        /* a class repeated over consecutive steps is one character */
        if (best != 0 && best != prev) {
            size_t l = strlen(cs->chars[best]);
            memcpy(s + len, cs->chars[best], l);
            len += l;
            sum += p[best];
            kept++;
        }
        prev = best;
    }
    s[len] = 0;
    *text = s;
    *score = kept ? (float)(sum / kept) : 0.0f;
    return ST_OK;
}
