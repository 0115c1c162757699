/*
 * text.c — shape rules of the text ops: StringNormalizer and
 * TfIdfVectorizer.  (Cast, CastLike and Identity take strings too: their
 * rules are their families'.)  Kernels: backends/cpu/k_text.c.
 *
 * StringNormalizer (opset 10) drops the stopwords from X ([C] or [1, C]),
 * matched exactly or, with is_case_sensitive=0 (the default), in lower
 * case, and changes the case of what is left (case_change_action LOWER,
 * UPPER or NONE).  Y's length depends on X's values, which a plan always
 * knows (strings are value inputs or constants), so the rule decides what
 * is kept.  When nothing is, Y is one empty string, [1] or [1, 1], as ONNX
 * Runtime makes it.  Case is Unicode's default mapping (core/casemap.h);
 * the locale attribute picks nothing else, so the locales whose case
 * differs (Turkish and Azeri's dotted i) are refused.
 *
 * TfIdfVectorizer (opset 9) counts, in each row of X ([C] or [N, C], of
 * int32, int64 or strings), the n-grams of its pool, min_gram_length <= n
 * <= max_gram_length, made of items 1 + s apart for each skip s up to
 * max_skip_count (1-grams once), into Y's columns ngram_indexes: as
 * counts (TF), weights where the count is not zero (IDF) or counts times
 * weights (TFIDF).
 */
#include <stdlib.h>
#include <string.h>

#include "core/casemap.h"
#include "ops/ops.h"
#include "ops/text.h"

/* s in lower case, malloc'd into *out. */
static st_status lower(const st_infer *c, const char *what, int64_t i, const char *s, char **out)
{
    *out = malloc(st_utf8_case_room(s));
    if (!*out) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    int64_t r = st_utf8_case(s, false, *out);
    if (r >= 0) return ST_OK;
    free(*out);
    *out = NULL;
    if (r == -1) return st_infer_error(c, ST_ERR_MODEL, "%s %lld is not valid UTF-8", what, (long long)i);
    return st_infer_error(c, ST_ERR_UNSUPPORTED, "comparing non-ASCII text without case needs the C.UTF-8 locale, which "
                          "this system lacks");
}

static bool is_stopword(const char *s, char *const *words, int n)
{
    for (int w = 0; w < n; w++)
        if (strcmp(s, words[w]) == 0) return true;
    return false;
}

static st_status infer_string_normalizer(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    ST_TRY(st_infer_dtype_mask(c, 0, ST_DT(ST_STRING)));
    const st_tinfo *x = &c->in[0];
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
        return st_infer_error(c, ST_ERR_SHAPE, "X must be [C] or [1, C], not of rank %d", x->rank);
    const char *action = st_attr_string(c->node, "case_change_action", "NONE");
    st_case_change change = !strcmp(action, "LOWER") ? ST_CASE_LOWER : !strcmp(action, "UPPER") ? ST_CASE_UPPER : ST_CASE_NONE;
    if (change == ST_CASE_NONE && strcmp(action, "NONE") != 0)
        return st_infer_error(c, ST_ERR_MODEL, "case_change_action is '%s', not LOWER, UPPER or NONE", action);
    const char *locale = st_attr_string(c->node, "locale", "");
    if ((!strncmp(locale, "tr", 2) || !strncmp(locale, "az", 2)) && (!locale[2] || locale[2] == '_' || locale[2] == '-'))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "locale '%s' changes case its own way (dotted and dotless i); strata "
                              "uses Unicode's default mapping", locale);
    bool sensitive = st_attr_int(c->node, "is_case_sensitive", 0) != 0;
    ST_TRY(st_infer_need_const(c, 0));

    int64_t n = x->dims[x->rank - 1];
    st_strnorm_state *s = st_infer_state(c, sizeof *s + (size_t)n);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->change = change;
    const st_attr *sw = st_node_attr(c->node, "stopwords");
    int n_words = sw && sw->type == ST_ATTR_STRINGS ? sw->n : 0;
    char **words = n_words ? calloc((size_t)n_words, sizeof *words) : NULL;
    if (n_words && !words) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    st_status r = ST_OK;
    for (int w = 0; w < n_words && r == ST_OK; w++) {
        if (sensitive) words[w] = sw->strings[w];
        else r = lower(c, "stopword", w, sw->strings[w], &words[w]);
    }
    const char *const *xs = x->data;
    for (int64_t i = 0; i < n && r == ST_OK; i++) {
        char *key = (char *)xs[i];
        if (!sensitive && (r = lower(c, "X's string", i, xs[i], &key)) != ST_OK) break;
        s->keep[i] = !is_stopword(key, words, n_words);
        s->n_kept += s->keep[i];
        if (!sensitive) free(key);
    }
    if (!sensitive)
        for (int w = 0; w < n_words; w++) free(words[w]);
    free(words);
    if (r != ST_OK) return r;
    c->out[0].dtype = ST_STRING;
    c->out[0].rank = x->rank;
    c->out[0].dims[0] = 1;
    c->out[0].dims[x->rank - 1] = s->n_kept ? s->n_kept : 1;
    return ST_OK;
}

static st_status tfidf_ints(const st_infer *c, const char *name, bool required, const int64_t **vals, int *n)
{
    *vals = st_attr_ints(c->node, name, n);
    if (!*vals) *n = 0;
    if (required && !*vals) return st_infer_error(c, ST_ERR_MODEL, "needs the %s attribute", name);
    return ST_OK;
}

static st_status infer_tfidf(st_infer *c)
{
    if (c->n_in != 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "expects 1 input");
    ST_TRY(st_infer_dtype_mask(c, 0, ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_STRING)));
    const st_tinfo *x = &c->in[0];
    if (x->rank != 1 && x->rank != 2) return st_infer_error(c, ST_ERR_SHAPE, "X must be [C] or [N, C], not of rank %d", x->rank);
    st_tfidf_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    const char *mode = st_attr_string(c->node, "mode", "");
    s->mode = !strcmp(mode, "TF") ? ST_TFIDF_TF : !strcmp(mode, "IDF") ? ST_TFIDF_IDF : ST_TFIDF_TFIDF;
    if (s->mode == ST_TFIDF_TFIDF && strcmp(mode, "TFIDF") != 0)
        return st_infer_error(c, ST_ERR_MODEL, "mode is '%s', not TF, IDF or TFIDF", mode);
    int64_t lo = st_attr_int(c->node, "min_gram_length", 0), hi = st_attr_int(c->node, "max_gram_length", 0);
    int64_t skip = st_attr_int(c->node, "max_skip_count", -1);
    if (lo < 1 || hi < lo || hi > 64 || skip < 0 || skip > 1 << 20)
        return st_infer_error(c, ST_ERR_MODEL, "needs 1 <= min_gram_length (%lld) <= max_gram_length (%lld) <= 64 and "
                              "0 <= max_skip_count (%lld)", (long long)lo, (long long)hi, (long long)skip);
    s->min_n = (int)lo;
    s->max_n = (int)hi;
    s->max_skip = (int)skip;
    int n_columns, n_pool;
    ST_TRY(tfidf_ints(c, "ngram_counts", true, &s->level, &s->n_levels));
    ST_TRY(tfidf_ints(c, "ngram_indexes", true, &s->column, &n_columns));
    const st_attr *ints = st_node_attr(c->node, "pool_int64s"), *strs = st_node_attr(c->node, "pool_strings");
    if (!!ints == !!strs) return st_infer_error(c, ST_ERR_MODEL, "needs one of pool_int64s and pool_strings");
    if ((x->dtype == ST_STRING) != !!strs)
        return st_infer_error(c, ST_ERR_DTYPE, "X is %s, but the pool is %s", st_dtype_name(x->dtype), strs ? "strings" : "integers");
    if (ints) ST_TRY(tfidf_ints(c, "pool_int64s", true, &s->pool_ints, &n_pool));
    else s->pool_strings = strs->strings, n_pool = strs->type == ST_ATTR_STRINGS ? strs->n : 0;
    s->pool_len = n_pool;
    /* levels start where the previous end, and hold whole n-grams */
    for (int l = 0; l < s->n_levels; l++) {
        int64_t start = s->level[l], end = l + 1 < s->n_levels ? s->level[l + 1] : n_pool;
        if (start < 0 || end < start || end > n_pool || (end - start) % (l + 1))
            return st_infer_error(c, ST_ERR_MODEL, "ngram_counts[%d] = %lld does not start whole %d-grams of the pool (%d items)",
                                  l, (long long)start, l + 1, n_pool);
        s->n_grams += (end - start) / (l + 1);
    }
    if (s->n_grams != n_columns)
        return st_infer_error(c, ST_ERR_MODEL, "the pool has %lld n-grams, ngram_indexes %d", (long long)s->n_grams, n_columns);
    const st_attr *w = st_node_attr(c->node, "weights");
    if (w && w->type == ST_ATTR_FLOATS) {
        if (w->n != n_columns) return st_infer_error(c, ST_ERR_MODEL, "weights has %d values for %d n-grams", w->n, n_columns);
        s->weight = w->floats;
    }
    s->width = 0;
    for (int g = 0; g < n_columns; g++) {
        if (s->column[g] < 0 || s->column[g] >= (int64_t)1 << 40)
            return st_infer_error(c, ST_ERR_MODEL, "ngram_indexes[%d] is %lld, outside [0, 2^40)", g, (long long)s->column[g]);
        if (s->column[g] + 1 > s->width) s->width = s->column[g] + 1;
    }
    c->out[0].dtype = ST_F32;
    c->out[0].rank = x->rank;
    c->out[0].dims[0] = x->dims[0];
    c->out[0].dims[x->rank - 1] = s->width;
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_text[] = {
    {.name = "StringNormalizer", .domain = "", .min_opset = 10, .infer = infer_string_normalizer, .types = ST_DT(ST_STRING)},
    {.name = "TfIdfVectorizer", .domain = "", .min_opset = 9, .infer = infer_tfidf,
     .types = ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_STRING)},
    {NULL, NULL, 0, 0, NULL, NULL, NULL},
};
