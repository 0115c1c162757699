/*
 * k_text.c — the CPU kernels of the text ops (ops/text.c):
 * StringNormalizer, and TfIdfVectorizer on integers or strings.
 *
 * StringNormalizer runs only while planning (strings never enter an
 * arena, core/strings.h): k->alloc gives plan memory for the strings whose
 * case it changes; one kept as it is is its pointer copied.
 * TfIdfVectorizer on integers is an ordinary command; on strings it is
 * folded like any node that reads strings.
 */
#include <string.h>

#include "backends/cpu/kernels.h"
#include "core/casemap.h"
#include "ops/text.h"

static st_status cpu_string_normalizer(const st_kctx *k)
{
    const st_strnorm_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    const char **out = y->data;
    int64_t n = x->sizes[x->rank - 1], step = x->strides[x->rank - 1], ystep = y->strides[y->rank - 1];
    const char *const *xs = x->data;
    if (!s->n_kept) {
        out[0] = ""; /* a literal: it outlives any plan */
        return ST_OK;
    }
    size_t room = 0;
    for (int64_t i = 0; i < n; i++)
        if (s->keep[i] && s->change != ST_CASE_NONE) room += st_utf8_case_room(xs[i * step]);
    char *text = NULL;
    if (room) {
        if (!k->alloc) return st_error(ST_ERR_INTERNAL, "node '%s' (StringNormalizer): strings reached a kernel outside planning",
                                       k->node->name);
        if (!(text = k->alloc(k->alloc_ctx, room)))
            return st_error(ST_ERR_NOMEM, "node '%s' (StringNormalizer): no memory for the strings", k->node->name);
    }
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (!s->keep[i]) continue;
        const char *src = xs[i * step];
        if (s->change == ST_CASE_NONE) {
            out[j++ * ystep] = src;
            continue;
        }
        int64_t len = st_utf8_case(src, s->change == ST_CASE_UPPER, text);
        if (len == -1)
            return st_error(ST_ERR_MODEL, "node '%s' (StringNormalizer): X's string %lld is not valid UTF-8", k->node->name,
                            (long long)i);
        if (len < 0)
            return st_error(ST_ERR_UNSUPPORTED, "node '%s' (StringNormalizer): changing the case of non-ASCII text needs the "
                            "C.UTF-8 locale, which this system lacks", k->node->name);
        out[j++ * ystep] = text;
        text += len + 1;
    }
    return ST_OK;
}

/* Whether X's items at x, x + d, ..., (n of them, strides of step
 * elements) are the pool's n-gram at p. */
static bool ngram_at(const st_tfidf_state *s, const st_operand *x, int64_t at, int64_t step, int n, int64_t p)
{
    for (int k = 0; k < n; k++, at += step) {
        if (s->pool_strings) {
            if (strcmp(((const char *const *)x->data)[at], s->pool_strings[p + k]) != 0) return false;
        } else if (st_load_i64(x->dtype, (const char *)x->data + at * (int64_t)st_dtype_size(x->dtype)) != s->pool_ints[p + k]) {
            return false;
        }
    }
    return true;
}

static st_status cpu_tfidf(const st_kctx *k)
{
    const st_tfidf_state *s = k->state;
    const st_operand *x = &k->in[0], *y = &k->out[0];
    int64_t rows = x->rank == 2 ? x->sizes[0] : 1, c = x->sizes[x->rank - 1];
    int64_t xr = x->rank == 2 ? x->strides[0] : 0, xc = x->strides[x->rank - 1];
    int64_t yr = y->rank == 2 ? y->strides[0] : 0, yc = y->strides[y->rank - 1];
    /* Y is f32, or f16/bf16 under a lower session precision: every store
     * goes through its dtype (a float store into an f16 slot overran it) */
    char *out = y->data;
    size_t ey = st_dtype_size(y->dtype);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < s->width; j++) st_store_f32(y->dtype, out + (r * yr + j * yc) * (int64_t)ey, 0.0f);
        int64_t g0 = 0; /* the first n-gram of level n in the pool's order */
        for (int n = 1; n <= s->n_levels; g0 += ((n < s->n_levels ? s->level[n] : s->pool_len) - s->level[n - 1]) / n, n++) {
            if (n < s->min_n || n > s->max_n) continue;
            int64_t start = s->level[n - 1], count = ((n < s->n_levels ? s->level[n] : s->pool_len) - start) / n;
            for (int64_t g = 0; g < count; g++) {
                int64_t hits = 0;
                /* a 1-gram is one item whatever the skip: counted once */
                for (int skip = 0; skip <= (n == 1 ? 0 : s->max_skip); skip++)
                    for (int64_t i = 0; i + (int64_t)(n - 1) * (skip + 1) < c; i++)
                        hits += ngram_at(s, x, r * xr + i * xc, (skip + 1) * xc, n, start + g * n);
                if (!hits) continue;
                float w = s->weight ? s->weight[g0 + g] : 1.0f;
                float v = s->mode == ST_TFIDF_TF ? (float)hits : s->mode == ST_TFIDF_IDF ? w : (float)hits * w;
                char *at = out + (r * yr + s->column[g0 + g] * yc) * (int64_t)ey;
                st_store_f32(y->dtype, at, st_load_f32(y->dtype, at) + v);
            }
        }
    }
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_text[] = {
    {"StringNormalizer", "", ST_DT(ST_STRING), cpu_string_normalizer, NULL, NULL, NULL},
    {"TfIdfVectorizer", "", ST_DT(ST_I32) | ST_DT(ST_I64) | ST_DT(ST_STRING), cpu_tfidf, NULL, NULL, NULL},
    {NULL}
};
