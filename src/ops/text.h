/*
 * text.h — the text ops (StringNormalizer, TfIdfVectorizer): the
 * parameters their shape rules pass to the kernels (backends/cpu/k_text.c).
 */
#ifndef ST_OPS_TEXT_H
#define ST_OPS_TEXT_H

#include <stdint.h>

typedef enum st_case_change { ST_CASE_NONE = 0, ST_CASE_LOWER, ST_CASE_UPPER } st_case_change;

typedef struct st_strnorm_state {
    st_case_change change;
    int64_t n_kept;      /* 0: every string was a stopword, Y is one empty string */
    uint8_t keep[];      /* per string of X: not a stopword */
} st_strnorm_state;

typedef enum st_tfidf_mode { ST_TFIDF_TF = 0, ST_TFIDF_IDF, ST_TFIDF_TFIDF } st_tfidf_mode;

/* The n-grams to count: pool holds them back to back, the 1-grams from
 * element level[0], the 2-grams from level[1], ...; the g-th n-gram of
 * the pool (counting across levels) is counted into output column
 * column[g] with weight weight[g].  The arrays are the node's attributes. */
typedef struct st_tfidf_state {
    st_tfidf_mode mode;
    int min_n, max_n, max_skip;
    int n_levels;
    const int64_t *level;
    int64_t pool_len;
    const int64_t *pool_ints;     /* one of these two, as X's type */
    char *const *pool_strings;
    int64_t n_grams;
    const int64_t *column;
    const float *weight;          /* NULL: every weight is 1 */
    int64_t width;                /* Y's last dim: the largest column + 1 */
} st_tfidf_state;

#endif
