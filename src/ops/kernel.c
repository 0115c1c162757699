/* kernel.c — looking a node up in a backend's kernel table (kernel.h). */
#include "ops/kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool st_kernel_refuse(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return false;
}

st_dtype st_knode_type(const st_knode *n)
{
    int t = n->op->t_operand;
    if (t >= 0 && t < n->n_in && n->views[t].rank >= 0) return n->views[t].dtype;
    if (t < 0 && -1 - t < n->n_out && n->views[n->n_in - 1 - t].rank >= 0) return n->views[n->n_in - 1 - t].dtype;
    if (n->n_out > 0 && n->views[n->n_in].rank >= 0) return n->views[n->n_in].dtype;
    return ST_UNDEFINED;
}

static bool same_op(const st_kernel *k, const st_op_def *op)
{
    return strcmp(k->op, op->name) == 0 && strcmp(k->domain ? k->domain : "", op->domain) == 0;
}

/* "float32, float16 and bfloat16" */
static void list_dtypes(uint32_t mask, char *out, size_t len)
{
    size_t at = 0;
    out[0] = 0;
    int n = 0, total = 0;
    for (int t = 0; t < 32; t++) total += (mask >> t & 1) != 0;
    for (int t = 0; t < 32 && at < len; t++) {
        if (!(mask >> t & 1)) continue;
        const char *sep = n == 0 ? "" : n == total - 1 ? " and " : ", ";
        at += (size_t)snprintf(out + at, len - at, "%s%s", sep, st_dtype_name((st_dtype)t));
        n++;
    }
}

const st_kernel *st_kernel_find(const st_kernel_table *t, const st_knode *n, char *why, size_t len)
{
    bool any = false;
    uint32_t dtypes = 0;
    st_dtype type = st_knode_type(n);
    char reason[192] = "";
    for (int f = 0; t && f < t->n_families; f++)
        for (const st_kernel *k = t->families[f]; k->op; k++) {
            if (!same_op(k, n->op)) continue;
            any = true;
            dtypes |= k->dtypes;
            if (type != ST_UNDEFINED && !(k->dtypes & ST_DT(type))) continue;
            if (k->accepts && !k->accepts(n, reason, sizeof reason)) continue;
            return k;
        }
    if (!why || !len) return NULL;
    const char *b = t ? t->backend : "?";
    if (!any) {
        snprintf(why, len, "backend '%s' has no kernel for %s", b, n->op->name);
    } else if (reason[0]) {
        snprintf(why, len, "backend '%s': %s", b, reason);
    } else {
        char list[160];
        list_dtypes(dtypes, list, sizeof list);
        snprintf(why, len, "backend '%s' runs %s on %s, not %s", b, n->op->name, list, st_dtype_name(type));
    }
    return NULL;
}

uint32_t st_kernel_dtypes(const st_kernel_table *t, const st_op_def *op)
{
    uint32_t m = 0;
    for (int f = 0; t && f < t->n_families; f++)
        for (const st_kernel *k = t->families[f]; k->op; k++)
            if (same_op(k, op)) m |= k->dtypes;
    return m;
}

int st_kernel_count(const st_kernel_table *t)
{
    int n = 0;
    for (int f = 0; t && f < t->n_families; f++)
        for (const st_kernel *k = t->families[f]; k->op; k++) n++;
    return n;
}

const st_kernel *st_kernel_at(const st_kernel_table *t, int index)
{
    for (int f = 0; t && f < t->n_families; f++)
        for (const st_kernel *k = t->families[f]; k->op; k++)
            if (index-- == 0) return k;
    return NULL;
}
