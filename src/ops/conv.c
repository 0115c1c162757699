/*
 * conv.c — shape rules of Conv, ConvTranspose and the pools (MaxPool,
 * AveragePool, LpPool and their Global forms), for 1 to 3 spatial dims,
 * with every auto_pad mode, asymmetric pads, strides, dilations, groups and
 * ceil_mode.  ConvTranspose resolves output_shape, auto_pad and
 * output_padding into begin pads and an output size.  Col2Im (opset 18)
 * and DeformConv (19, 2-D) share the window arithmetic.  Kernels:
 * backends/<backend>/k_conv.* (ConvTranspose: k_conv_transpose.*; Col2Im:
 * cpu/k_col2im.c; DeformConv: cpu/k_deform_conv.c).
 */
#include <string.h>

#include "ops/conv.h"
#include "ops/ops.h"

static const st_dtype FLOATS[] = {ST_F32, ST_F16, ST_BF16, ST_F64, 0};

/* Reads kernel, strides, dilations and pads, resolving auto_pad. */
static st_status window(st_infer *c, st_conv_state *s, const int64_t *in, const int64_t *kernel, bool pool)
{
    int n = s->nsp;
    for (int i = 0; i < n; i++) {
        s->k[i] = kernel[i];
        s->s[i] = 1;
        s->d[i] = 1;
        s->pb[i] = s->pe[i] = 0;
    }
    ST_TRY(st_infer_window_attrs(c, n, s->s, s->d, s->pb, s->pe));
    for (int i = 0; i < n; i++) {
        if (s->k[i] < 1 || s->s[i] < 1 || s->d[i] < 1 || s->pb[i] < 0 || s->pe[i] < 0)
            return st_infer_error(c, ST_ERR_MODEL, "kernel, strides and dilations must be >= 1 and pads >= 0 (spatial dim %d)", i);
        /* attributes are untrusted: bounded, the window arithmetic below
         * cannot overflow (dims are below 2^46) */
        const int64_t lim = (int64_t)1 << 31;
        if (s->k[i] > lim || s->s[i] > lim || s->d[i] > lim || s->pb[i] > lim || s->pe[i] > lim)
            return st_infer_error(c, ST_ERR_MODEL, "kernel, strides, dilations and pads must be at most 2^31 (spatial dim %d)", i);
    }
    const char *ap = st_attr_string(c->node, "auto_pad", "NOTSET");
    bool ceil_mode = pool && st_attr_int(c->node, "ceil_mode", 0) != 0;
    for (int i = 0; i < n; i++) {
        int64_t ext = (s->k[i] - 1) * s->d[i] + 1;
        if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
            int64_t out = (in[i] + s->s[i] - 1) / s->s[i];
            int64_t total = (out - 1) * s->s[i] + ext - in[i];
            if (total < 0) total = 0;
            s->pb[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
            s->pe[i] = total - s->pb[i];
            s->out[i] = out;
        } else if (strcmp(ap, "VALID") == 0) {
            s->pb[i] = s->pe[i] = 0;
            s->out[i] = in[i] >= ext ? (in[i] - ext) / s->s[i] + 1 : 0;
        } else if (strcmp(ap, "NOTSET") == 0) {
            int64_t span = in[i] + s->pb[i] + s->pe[i] - ext;
            if (span < 0) return st_infer_error(c, ST_ERR_SHAPE, "kernel extent %lld exceeds padded input %lld on spatial dim %d",
                                                (long long)ext, (long long)(in[i] + s->pb[i] + s->pe[i]), i);
            int64_t out = (ceil_mode ? (span + s->s[i] - 1) / s->s[i] : span / s->s[i]) + 1;
            /* a window may not start in the end padding */
            if (ceil_mode && (out - 1) * s->s[i] >= in[i] + s->pb[i]) out--;
            s->out[i] = out;
        } else {
            return st_infer_error(c, ST_ERR_MODEL, "unknown auto_pad '%s'", ap);
        }
    }
    return ST_OK;
}

st_status st_infer_conv(st_infer *c)
{
    if (c->n_in < 2 || !c->in[0].present || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "needs X and W");
    const st_tinfo *x = &c->in[0], *w = &c->in[1];
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    if (x->rank < 3 || x->rank > 5) return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; 1 to 3 spatial dims are supported", x->rank);
    if (w->rank != x->rank) return st_infer_error(c, ST_ERR_SHAPE, "W has rank %d, X has rank %d", w->rank, x->rank);
    if (w->dtype != x->dtype) return st_infer_error(c, ST_ERR_DTYPE, "W is %s, X is %s", st_dtype_name(w->dtype), st_dtype_name(x->dtype));
    st_conv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->nsp = x->rank - 2;
    s->group = st_attr_int(c->node, "group", 1);
    int64_t cin = x->dims[1], m = w->dims[0];
    if (s->group < 1 || cin % s->group || m % s->group)
        return st_infer_error(c, ST_ERR_SHAPE, "group %lld does not divide %lld input and %lld output channels", (long long)s->group,
                              (long long)cin, (long long)m);
    if (w->dims[1] != cin / s->group)
        return st_infer_error(c, ST_ERR_SHAPE, "W has %lld input channels per group, X gives %lld", (long long)w->dims[1],
                              (long long)(cin / s->group));
    int cnt;
    const int64_t *ks = st_attr_ints(c->node, "kernel_shape", &cnt);
    if (ks && cnt != s->nsp) return st_infer_error(c, ST_ERR_MODEL, "kernel_shape has %d values for %d spatial dims", cnt, s->nsp);
    for (int i = 0; ks && i < s->nsp; i++)
        if (ks[i] != w->dims[2 + i]) return st_infer_error(c, ST_ERR_SHAPE, "kernel_shape disagrees with W on spatial dim %d", i);
    ST_TRY(window(c, s, x->dims + 2, w->dims + 2, false));
    if (c->n_in > 2 && c->in[2].present) {
        const st_tinfo *b = &c->in[2];
        if (b->rank != 1 || b->dims[0] != m) return st_infer_error(c, ST_ERR_SHAPE, "B must be [%lld]", (long long)m);
        if (b->dtype != x->dtype) return st_infer_error(c, ST_ERR_DTYPE, "B is %s, X is %s", st_dtype_name(b->dtype), st_dtype_name(x->dtype));
    }
    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = x->rank;
    o->dims[0] = x->dims[0];
    o->dims[1] = m;
    for (int i = 0; i < s->nsp; i++) o->dims[2 + i] = s->out[i];
    return ST_OK;
}

st_status st_infer_pool(st_infer *c)
{
    if (c->n_in < 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "needs X");
    const st_tinfo *x = &c->in[0];
    const char *op = c->node->op_type;
    static const st_dtype MAXPOOL_TYPES[] = {ST_F32, ST_F16, ST_BF16, ST_F64, ST_I8, ST_U8, 0};
    bool is_max = strstr(op, "Max") != NULL, global = strncmp(op, "Global", 6) == 0, lp = strstr(op, "Lp") != NULL;
    ST_TRY(st_infer_dtype(c, 0, is_max ? MAXPOOL_TYPES : FLOATS));
    if (x->rank < 3 || x->rank > 5) return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; 1 to 3 spatial dims are supported", x->rank);
    st_conv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->nsp = x->rank - 2;
    s->is_max = is_max;
    s->group = 1;
    if (lp) {
        /* the Lp norm of each window, pads counting as zeros */
        int64_t p = st_attr_int(c->node, "p", 2);
        if (p < 1 || p > 64) return st_infer_error(c, ST_ERR_MODEL, "p is %lld; it must be in [1, 64]", (long long)p);
        s->p = (int)p;
    }
    if (global) {
        ST_TRY(window(c, s, x->dims + 2, x->dims + 2, true));
    } else {
        int cnt;
        const int64_t *ks = st_attr_ints(c->node, "kernel_shape", &cnt);
        if (!ks || cnt != s->nsp) return st_infer_error(c, ST_ERR_MODEL, "kernel_shape must have %d values", s->nsp);
        ST_TRY(window(c, s, x->dims + 2, ks, true));
        s->count_include_pad = st_attr_int(c->node, "count_include_pad", 0) != 0;
        s->storage_order = (int)st_attr_int(c->node, "storage_order", 0);
    }
    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = x->rank;
    o->dims[0] = x->dims[0];
    o->dims[1] = x->dims[1];
    for (int i = 0; i < s->nsp; i++) o->dims[2 + i] = s->out[i];
    if (c->n_out > 1 && c->out[1].present) {
        if (!is_max) return st_infer_error(c, ST_ERR_MODEL, "only MaxPool has an Indices output");
        c->out[1] = *o;
        c->out[1].dtype = ST_I64;
        c->out[1].present = true;
    }
    return ST_OK;
}

/* ---- ConvTranspose ---- */

static st_status infer_conv_transpose(st_infer *c)
{
    if (c->n_in < 2 || !c->in[0].present || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "needs X and W");
    const st_tinfo *x = &c->in[0], *w = &c->in[1];
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    if (x->rank < 3 || x->rank > 5)
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; 1 to 3 spatial dims are supported", x->rank);
    if (w->rank != x->rank) return st_infer_error(c, ST_ERR_SHAPE, "W has rank %d, X has rank %d", w->rank, x->rank);
    if (w->dtype != x->dtype) return st_infer_error(c, ST_ERR_DTYPE, "W is %s, X is %s", st_dtype_name(w->dtype), st_dtype_name(x->dtype));
    st_conv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    int n = x->rank - 2;
    s->nsp = n;
    s->group = st_attr_int(c->node, "group", 1);
    int64_t cin = x->dims[1];
    if (s->group < 1 || cin % s->group)
        return st_infer_error(c, ST_ERR_SHAPE, "group %lld does not divide %lld input channels", (long long)s->group, (long long)cin);
    if (w->dims[0] != cin)
        return st_infer_error(c, ST_ERR_SHAPE, "W has %lld input channels, X has %lld", (long long)w->dims[0], (long long)cin);
    int64_t m = w->dims[1] * s->group;

    int cnt;
    const int64_t *a;
    int64_t opad[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        s->k[i] = w->dims[2 + i];
        s->s[i] = s->d[i] = 1;
        s->pb[i] = s->pe[i] = 0;
    }
    if ((a = st_attr_ints(c->node, "kernel_shape", &cnt))) {
        if (cnt != n) return st_infer_error(c, ST_ERR_MODEL, "kernel_shape has %d values for %d spatial dims", cnt, n);
        for (int i = 0; i < n; i++)
            if (a[i] != s->k[i]) return st_infer_error(c, ST_ERR_SHAPE, "kernel_shape disagrees with W on spatial dim %d", i);
    }
    ST_TRY(st_infer_window_attrs(c, n, s->s, s->d, s->pb, s->pe));
    if ((a = st_attr_ints(c->node, "output_padding", &cnt))) {
        if (cnt != n) return st_infer_error(c, ST_ERR_MODEL, "output_padding has %d values for %d spatial dims", cnt, n);
        memcpy(opad, a, (size_t)n * sizeof *a);
    }
    for (int i = 0; i < n; i++)
        if (s->k[i] < 1 || s->s[i] < 1 || s->d[i] < 1 || s->pb[i] < 0 || s->pe[i] < 0 || opad[i] < 0)
            return st_infer_error(c, ST_ERR_MODEL, "kernel, strides and dilations must be >= 1, pads and output_padding >= 0 (spatial dim %d)", i);
    /* output_shape may list the spatial dims, or (as some exporters write
     * it) every dim */
    const int64_t *oshape = st_attr_ints(c->node, "output_shape", &cnt);
    if (oshape) {
        if (cnt == n + 2) oshape += 2;
        else if (cnt != n) return st_infer_error(c, ST_ERR_MODEL, "output_shape has %d values for %d spatial dims", cnt, n);
    }
    const char *ap = st_attr_string(c->node, "auto_pad", "NOTSET");
    bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0, upper = strcmp(ap, "SAME_UPPER") == 0;
    if (!same && strcmp(ap, "VALID") != 0 && strcmp(ap, "NOTSET") != 0)
        return st_infer_error(c, ST_ERR_MODEL, "unknown auto_pad '%s'", ap);
    for (int i = 0; i < n; i++) {
        int64_t in = x->dims[2 + i], ext = (s->k[i] - 1) * s->d[i] + 1;
        int64_t full = s->s[i] * (in - 1) + opad[i] + ext;   /* the unpadded output */
        if (oshape || same) {
            /* the pads follow from the wanted size; the extra row of an
             * odd total goes to the end for SAME_UPPER, else the begin */
            int64_t want = oshape ? oshape[i] : in * s->s[i];
            int64_t total = full - want;
            if (total < 0) total = 0;   /* a larger output: its tail gets only the bias */
            s->pb[i] = upper ? total / 2 : total - total / 2;
            s->pe[i] = total - s->pb[i];
            s->out[i] = want;
        } else {
            if (strcmp(ap, "VALID") == 0) s->pb[i] = s->pe[i] = 0;
            s->out[i] = full - s->pb[i] - s->pe[i];
        }
        if (s->out[i] < 0)
            return st_infer_error(c, ST_ERR_SHAPE, "pads leave a negative output size on spatial dim %d", i);
    }
    if (c->n_in > 2 && c->in[2].present) {
        const st_tinfo *b = &c->in[2];
        if (b->rank != 1 || b->dims[0] != m) return st_infer_error(c, ST_ERR_SHAPE, "B must be [%lld]", (long long)m);
        if (b->dtype != x->dtype) return st_infer_error(c, ST_ERR_DTYPE, "B is %s, X is %s", st_dtype_name(b->dtype), st_dtype_name(x->dtype));
    }
    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = x->rank;
    o->dims[0] = x->dims[0];
    o->dims[1] = m;
    for (int i = 0; i < n; i++) o->dims[2 + i] = s->out[i];
    return ST_OK;
}

/* ---- DeformConv (opset 19) ---- */

/* A Conv whose taps are moved by a learned offset per (offset group,
 * tap, output position), read bilinearly (zero outside the input) and
 * weighed by an optional mask.  2-D only: the spec's other ranks are rare
 * and refused. */
static st_status infer_deform_conv(st_infer *c)
{
    if (c->n_in < 3 || !c->in[0].present || !c->in[1].present || !c->in[2].present)
        return st_infer_error(c, ST_ERR_MODEL, "needs X, W and offset");
    const st_tinfo *x = &c->in[0], *w = &c->in[1], *off = &c->in[2];
    static const st_dtype TYPES[] = {ST_F32, ST_F16, ST_BF16, 0};
    ST_TRY(st_infer_dtype(c, 0, TYPES));
    if (x->rank != 4) return st_infer_error(c, ST_ERR_UNSUPPORTED, "X has rank %d; only 2-D DeformConv ([N, C, H, W]) is supported", x->rank);
    for (int i = 1; i < c->n_in && i < 5; i++)
        if (c->in[i].present && c->in[i].dtype != x->dtype)
            return st_infer_error(c, ST_ERR_DTYPE, "input %d is %s, X is %s", i, st_dtype_name(c->in[i].dtype), st_dtype_name(x->dtype));
    if (w->rank != 4) return st_infer_error(c, ST_ERR_SHAPE, "W has rank %d, X has rank 4", w->rank);
    st_conv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->nsp = 2;
    s->group = st_attr_int(c->node, "group", 1);
    s->offset_group = st_attr_int(c->node, "offset_group", 1);
    int64_t cin = x->dims[1], m = w->dims[0];
    if (s->group < 1 || cin % s->group || m % s->group || w->dims[1] != cin / s->group)
        return st_infer_error(c, ST_ERR_SHAPE, "group %lld does not fit %lld input channels, W [%lld, %lld, ...]", (long long)s->group,
                              (long long)cin, (long long)m, (long long)w->dims[1]);
    if (s->offset_group < 1 || cin % s->offset_group)
        return st_infer_error(c, ST_ERR_SHAPE, "offset_group %lld does not divide %lld input channels", (long long)s->offset_group,
                              (long long)cin);
    int cnt;
    const int64_t *ks = st_attr_ints(c->node, "kernel_shape", &cnt);
    if (ks && (cnt != 2 || ks[0] != w->dims[2] || ks[1] != w->dims[3]))
        return st_infer_error(c, ST_ERR_SHAPE, "kernel_shape disagrees with W");
    ST_TRY(window(c, s, x->dims + 2, w->dims + 2, false));
    int64_t taps = s->k[0] * s->k[1];
    const int64_t want[4] = {x->dims[0], s->offset_group * taps * 2, s->out[0], s->out[1]};
    if (off->rank != 4 || memcmp(off->dims, want, sizeof want) != 0)
        return st_infer_error(c, ST_ERR_SHAPE, "offset must be [%lld, %lld, %lld, %lld]", (long long)want[0], (long long)want[1],
                              (long long)want[2], (long long)want[3]);
    if (c->n_in > 3 && c->in[3].present && (c->in[3].rank != 1 || c->in[3].dims[0] != m))
        return st_infer_error(c, ST_ERR_SHAPE, "B must be [%lld]", (long long)m);
    if (c->n_in > 4 && c->in[4].present) {
        const st_tinfo *mk = &c->in[4];
        const int64_t wm[4] = {x->dims[0], s->offset_group * taps, s->out[0], s->out[1]};
        if (mk->rank != 4 || memcmp(mk->dims, wm, sizeof wm) != 0)
            return st_infer_error(c, ST_ERR_SHAPE, "mask must be [%lld, %lld, %lld, %lld]", (long long)wm[0], (long long)wm[1],
                                  (long long)wm[2], (long long)wm[3]);
    }
    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = 4;
    o->dims[0] = x->dims[0];
    o->dims[1] = m;
    o->dims[2] = s->out[0];
    o->dims[3] = s->out[1];
    return ST_OK;
}

/* ---- Col2Im (opset 18) ---- */

/* The inverse of im2col: input [N, C * prod(block_shape), L] holds, for
 * each of the L block positions of a window sliding over image_shape
 * (strides, dilations, pads as a Conv's), one block per channel; each
 * value is added into the image element it covers. */
static st_status infer_col2im(st_infer *c)
{
    if (c->n_in != 3 || !c->in[0].present || !c->in[1].present || !c->in[2].present)
        return st_infer_error(c, ST_ERR_MODEL, "needs input, image_shape and block_shape");
    const st_tinfo *x = &c->in[0];
    ST_TRY(st_infer_dtype(c, 0, FLOATS));
    if (x->rank != 3) return st_infer_error(c, ST_ERR_SHAPE, "input has rank %d; Col2Im takes [N, C * prod(block_shape), L]", x->rank);
    int64_t img[ST_MAX_RANK], blk[ST_MAX_RANK];
    int ni, nb;
    ST_TRY(st_infer_const_ints(c, 1, img, ST_MAX_RANK, &ni));
    ST_TRY(st_infer_const_ints(c, 2, blk, ST_MAX_RANK, &nb));
    if (ni != nb) return st_infer_error(c, ST_ERR_SHAPE, "image_shape has %d dims, block_shape %d", ni, nb);
    if (ni < 1 || ni > 3) return st_infer_error(c, ST_ERR_UNSUPPORTED, "%d spatial dims; 1 to 3 are supported", ni);
    st_conv_state *s = st_infer_state(c, sizeof *s);
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->nsp = ni;
    for (int i = 0; i < ni; i++) {
        s->k[i] = blk[i];
        s->s[i] = s->d[i] = 1;
        s->pb[i] = s->pe[i] = 0;
    }
    ST_TRY(st_infer_window_attrs(c, ni, s->s, s->d, s->pb, s->pe));
    int64_t kvol = 1, blocks = 1;
    const int64_t lim = (int64_t)1 << 31;
    for (int i = 0; i < ni; i++) {
        if (s->k[i] < 1 || s->s[i] < 1 || s->d[i] < 1 || s->pb[i] < 0 || s->pe[i] < 0 || img[i] < 0)
            return st_infer_error(c, ST_ERR_MODEL, "block_shape, strides and dilations must be >= 1, pads and image_shape >= 0 (dim %d)", i);
        if (s->k[i] > lim || s->s[i] > lim || s->d[i] > lim || s->pb[i] > lim || s->pe[i] > lim || img[i] > lim)
            return st_infer_error(c, ST_ERR_MODEL, "block_shape, image_shape, strides, dilations and pads must be at most 2^31 (dim %d)", i);
        int64_t span = img[i] + s->pb[i] + s->pe[i] - ((s->k[i] - 1) * s->d[i] + 1);
        if (span < 0) return st_infer_error(c, ST_ERR_SHAPE, "the block does not fit the padded image on dim %d", i);
        s->out[i] = span / s->s[i] + 1;
        kvol *= s->k[i];
        blocks *= s->out[i];
    }
    if (x->dims[1] % kvol)
        return st_infer_error(c, ST_ERR_SHAPE, "input dim 1 (%lld) is not a multiple of the block's %lld elements", (long long)x->dims[1],
                              (long long)kvol);
    if (x->dims[2] != blocks)
        return st_infer_error(c, ST_ERR_SHAPE, "input has %lld blocks (dim 2); the image and window give %lld", (long long)x->dims[2],
                              (long long)blocks);
    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = 2 + ni;
    o->dims[0] = x->dims[0];
    o->dims[1] = x->dims[1] / kvol;
    for (int i = 0; i < ni; i++) o->dims[2 + i] = img[i];
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_conv[] = {
    {"Conv", "", 1, 0, st_infer_conv, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"MaxPool", "", 1, 0, st_infer_pool, NULL, NULL, .types = ST_DT_ALL_FLOATS | ST_DT(ST_I8) | ST_DT(ST_U8)},
    {"AveragePool", "", 1, 0, st_infer_pool, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"GlobalAveragePool", "", 1, 0, st_infer_pool, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"GlobalMaxPool", "", 1, 0, st_infer_pool, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    /* opset 1's p is a float; from 2 an int (LpPool-18 adds ceil_mode and dilations) */
    {"LpPool", "", 2, 0, st_infer_pool, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"GlobalLpPool", "", 2, 0, st_infer_pool, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"ConvTranspose", "", 1, 0, infer_conv_transpose, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"Col2Im", "", 18, 0, infer_col2im, NULL, NULL, .types = ST_DT_ALL_FLOATS},
    {"DeformConv", "", 19, 0, infer_deform_conv, NULL, NULL, .types = ST_DT_FLOATS},
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};

void st_conv_affine_table(const st_conv_state *s, int64_t m, float *out)
{
    const float *src[4] = {s->ch_scale, s->ch_shift, s->post_scale, s->post_shift};
    for (int k = 0; k < 4; k++)
        for (int64_t i = 0; i < m; i++) out[k * m + i] = src[k] ? src[k][i] : (k % 2 == 0 ? 1.0f : 0.0f);
}
