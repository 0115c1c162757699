/*
 * strings.c — shape rules of the string ops: StringNormalizer.  (Cast,
 * CastLike and Identity take strings too: their rules are their
 * families'; the CPU's kernels on strings are backends/cpu/k_string.c.)
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
 */
#include <stdlib.h>
#include <string.h>

#include "core/casemap.h"
#include "ops/ops.h"
#include "ops/strings.h"

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

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_strings[] = {
    {.name = "StringNormalizer", .domain = "", .min_opset = 10, .infer = infer_string_normalizer, .types = ST_DT(ST_STRING)},
    {NULL, NULL, 0, 0, NULL, NULL, NULL},
};
