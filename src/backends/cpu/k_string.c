/*
 * k_string.c — the CPU's Cast and CastLike to and from strings (the text
 * ops are k_text.c).
 *
 * They run only while planning (strings never enter an arena,
 * core/strings.h), where k->alloc gives memory that lives as long as the
 * plan for the characters they make.  A string copied unchanged is its
 * pointer copied: its characters belong to the plan or the model.
 *
 * Numbers and text, as ONNX's Cast states it, in the C locale whatever
 * locale the program set:
 *   - a float becomes the shortest text that reads back to the same value
 *     of its type, in %g form ("0.6048455", "1e-07", "1234567"); NaN and
 *     the infinities become "NaN", "INF" and "-INF", the spec's own
 *     literals, which a Cast back reads.  (ONNX Runtime prints 8 digits,
 *     "0.60484552", and fails test_cast_FLOAT_to_STRING's reference.)
 *   - an integer becomes its decimal digits, a bool "1" or "0";
 *   - text becomes a float by strtod's reading (plain and scientific
 *     forms, "INF", "+INF", "-INF" and "NaN" in any case); an integer by
 *     its digits, or, for text such as "100.5" that the spec says "may
 *     yield 100", by reading a number and truncating it as a float to
 *     integer Cast does; a bool is true when the number is not zero.
 *     Text that is not a number, in whole (spaces around it aside), is an
 *     error that names it: the spec leaves it undefined.
 */
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"

/* Room for any number's text: "-1.7976931348623157e+308" and
 * "18446744073709551615" are 24 and 20 characters. */
#define NUMBER_TEXT 32

static locale_t c_locale = (locale_t)0;
static pthread_once_t c_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

/* Switches this thread to the C locale (printf's and strtod's decimal
 * point), returning the locale to restore, or 0 when there is none. */
static locale_t enter_c_locale(void)
{
    pthread_once(&c_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static bool only_spaces(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    return *s == 0;
}

/* Reads text s as a number of dtype t into dst; false when it is none. */
static bool parse_number(st_dtype t, const char *s, void *dst)
{
    char *end;
    if (st_dtype_is_float(t)) {
        errno = 0;
        if (t == ST_F32) {
            float f = strtof(s, &end);
            if (end == s || !only_spaces(end)) return false;
            *(float *)dst = f;
        } else {
            /* f16 and bf16 round from the double once (st_store_f64) */
            double d = strtod(s, &end);
            if (end == s || !only_spaces(end)) return false;
            st_store_f64(t, dst, d);
        }
        return true;
    }
    errno = 0;
    long long i = strtoll(s, &end, 10);
    if (end != s && only_spaces(end) && errno == 0) {
        st_store_i64(t, dst, i);
        return true;
    }
    if (t == ST_U64 && end != s && only_spaces(end) && errno == ERANGE && !strchr(s, '-')) {
        errno = 0;
        unsigned long long u = strtoull(s, &end, 10);
        if (errno == 0) {
            *(uint64_t *)dst = u;
            return true;
        }
    }
    double d = strtod(s, &end);
    if (end == s || !only_spaces(end)) return false;
    st_store_f64(t, dst, d);
    return true;
}

/* The number at p, of dtype t, as text into buf (NUMBER_TEXT bytes). */
static void format_number(st_dtype t, const void *p, char *buf)
{
    if (t == ST_BOOL) {
        snprintf(buf, NUMBER_TEXT, "%d", *(const uint8_t *)p ? 1 : 0);
    } else if (t == ST_U64) {
        snprintf(buf, NUMBER_TEXT, "%llu", (unsigned long long)*(const uint64_t *)p);
    } else if (!st_dtype_is_float(t)) {
        snprintf(buf, NUMBER_TEXT, "%lld", (long long)st_load_i64(t, p));
    } else {
        double v = st_load_f64(t, p);
        if (isnan(v)) {
            snprintf(buf, NUMBER_TEXT, "NaN");
        } else if (isinf(v)) {
            snprintf(buf, NUMBER_TEXT, "%s", v > 0 ? "INF" : "-INF");
        } else {
            /* the fewest digits whose reading is this value again: 17
             * always do for a double, 9 for a float, fewer for 16 bits */
            size_t es = st_dtype_size(t);
            unsigned char back[8];
            for (int digits = 1; digits <= 17; digits++) {
                snprintf(buf, NUMBER_TEXT, "%.*g", digits, v);
                if (parse_number(t, buf, back) && memcmp(back, p, es) == 0) break;
            }
        }
    }
}

/* Calls fn on each element of x and y (same shape), row-major. */
typedef st_status (*element_fn)(const st_kctx *k, int64_t i, const char *x, char *y, char **text);

static st_status each_element(const st_kctx *k, element_fn fn, char **text)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    size_t xs = st_dtype_size(x->dtype), ys = st_dtype_size(y->dtype);
    st_iter it;
    int64_t i = 0;
    for (bool more = st_iter_init(&it, y->rank, y->sizes, 2, (const int64_t *[]){y->strides, x->strides}); more;
         more = st_iter_next(&it))
        for (int64_t j = 0; j < it.inner; j++, i++)
            ST_TRY(fn(k, i, (const char *)x->data + (it.off[1] + j * it.step[1]) * (int64_t)xs,
                      (char *)y->data + (it.off[0] + j * it.step[0]) * (int64_t)ys, text));
    return ST_OK;
}

static st_status to_text(const st_kctx *k, int64_t i, const char *x, char *y, char **text)
{
    (void)i;
    format_number(k->in[0].dtype, x, *text);
    *(char **)y = *text;
    *text += strlen(*text) + 1;
    return ST_OK;
}

static st_status from_text(const st_kctx *k, int64_t i, const char *x, char *y, char **text)
{
    (void)text;
    const char *s = *(const char *const *)x;
    if (!parse_number(k->out[0].dtype, s, y))
        return st_error(ST_ERR_INVALID_ARG, "node '%s' (%s): string %lld, \"%.40s\", is not a number", k->node->name,
                        k->node->op_type, (long long)i, s);
    return ST_OK;
}

/* Cast and CastLike with a string on either side. */
static st_status cpu_cast_string(const st_kctx *k)
{
    const st_operand *x = &k->in[0], *y = &k->out[0];
    if (x->dtype == y->dtype) {
        st_copy_strided(y, x);
        return ST_OK;
    }
    if (!k->alloc) return st_error(ST_ERR_INTERNAL, "node '%s' (%s): strings reached a kernel outside planning", k->node->name,
                                   k->node->op_type);
    locale_t old = enter_c_locale();
    if (!old) return st_error(ST_ERR_INTERNAL, "node '%s' (%s): no C locale for number text", k->node->name, k->node->op_type);
    st_status s;
    if (y->dtype == ST_STRING) {
        char *text = k->alloc(k->alloc_ctx, (uint64_t)st_operand_numel(y) * NUMBER_TEXT + 1);
        s = text ? each_element(k, to_text, &text)
                 : st_error(ST_ERR_NOMEM, "node '%s' (%s): no memory for the strings", k->node->name, k->node->op_type);
    } else {
        s = each_element(k, from_text, NULL);
    }
    uselocale(old);
    return s;
}

/* Cast and CastLike entries for nodes with a string on either side; the
 * numeric ones (k_elementwise.c) take the rest. */
static bool casts_strings(const st_knode *n, char *why, size_t len)
{
    if (n->views[0].dtype == ST_STRING || n->views[n->n_in].dtype == ST_STRING) return true;
    return st_kernel_refuse(why, len, "no strings to cast");
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_string[] = {
    {"Cast", "", ST_DT_ALL | ST_DT(ST_STRING), cpu_cast_string, casts_strings, NULL, NULL},
    {"CastLike", "", ST_DT_ALL | ST_DT(ST_STRING), cpu_cast_string, casts_strings, NULL, NULL},
    {NULL}
};
