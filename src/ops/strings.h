/*
 * strings.h — the ops that exist for strings (StringNormalizer): the
 * parameters their shape rules pass to the kernels.  Strings are held as
 * core/strings.h says and handled only while planning.
 */
#ifndef ST_OPS_STRINGS_H
#define ST_OPS_STRINGS_H

#include <stdint.h>

typedef enum st_case_change { ST_CASE_NONE = 0, ST_CASE_LOWER, ST_CASE_UPPER } st_case_change;

typedef struct st_strnorm_state {
    st_case_change change;
    int64_t n_kept;      /* 0: every string was a stopword, Y is one empty string */
    uint8_t keep[];      /* per string of X: not a stopword */
} st_strnorm_state;

#endif
