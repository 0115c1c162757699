/*
 * ctc.h — reading a CTC recogniser's output: the character list and greedy
 * decoding.
 *
 * A CTC model gives, per time step (a narrow column of the text strip),
 * probabilities over the characters plus a "blank".  Greedy decoding takes
 * the most probable class per step, merges runs of the same class (one
 * character drawn over several columns) and drops blanks; a blank between
 * two equal characters is what lets a word hold a double letter.
 */
#ifndef ST_VISION_CTC_H
#define ST_VISION_CTC_H

#include "strata.h"

/* Class i's text: class 0 is the blank (""), classes 1..n-2 are the lines
 * of the keys file, class n-1 is a space (PP-OCR's use_space_char). */
typedef struct st_charset {
    int n;
    char **chars;   /* n strings (UTF-8), pointing into buf */
    char *buf;
} st_charset;

/* Reads a keys file, one character (UTF-8) per line; "\r\n" endings and a
 * missing final newline are accepted.  Every line must be non-empty. */
st_status st_charset_load(const char *path, st_charset *cs);
/* The same from memory (`what` names it in messages). */
st_status st_charset_parse(const char *text, size_t len, const char *what, st_charset *cs);
void st_charset_free(st_charset *cs);

/* Greedy decode of T x C probabilities (C must equal cs->n).  *text is
 * malloc'd UTF-8; *score is the mean of the kept steps' probabilities
 * (0 when nothing was read). */
st_status st_ctc_greedy(const float *probs, int T, int C, const st_charset *cs, char **text, float *score);

#endif
