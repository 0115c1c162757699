/*
 * resize.c — shape rules of the resize family: Resize (opsets 10, 11, 13,
 * 18 with axes, keep_aspect_ratio_policy and antialias, 19 with
 * half_pixel_symmetric) and the deprecated Upsample (7, 9).
 * Kernels: backends/<backend>/k_resize.*.
 *
 * Resize's scales, sizes and roi are read here, at plan time, and turned
 * into per-axis tap tables (ops/resize.h); the coordinate arithmetic
 * follows the ONNX reference implementation (onnx/backend/test/case/node/
 * resize.py), in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/resize.h"


enum {
    CT_HALF_PIXEL,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_TF_HALF_PIXEL_FOR_NN,
    CT_TF_CROP_AND_RESIZE,
    CT_HALF_PIXEL_SYMMETRIC            /* opset 19 */
};
/* SIMPLE: Resize-10 and Upsample, which predate nearest_mode; as ONNX
 * Runtime does, floor when upsampling and ceil when downsampling. */
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };
enum { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC };

typedef struct resize_args {
    int mode, ct, nm;
    double cubic_a;
    bool exclude_outside;
    double extrapolation;
    double scale[ST_MAX_RANK];
    bool antialias;                 /* opset 18: downscaling linear and cubic filters stretched by 1 / scale */
    double width[ST_MAX_RANK];      /* the reference's output_width: scale * in, or sizes as given */
    int64_t out_int[ST_MAX_RANK];   /* the output's size (half_pixel_symmetric reads it) */
    double roi_lo[ST_MAX_RANK], roi_hi[ST_MAX_RANK];
} resize_args;

static int64_t tinfo_numel(const st_tinfo *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->dims[d];
    return n;
}

static bool given(const st_infer *c, int input)
{
    return input < c->n_in && c->in[input].present && tinfo_numel(&c->in[input]) > 0;
}

/* A constant float input (scales, roi) as doubles. */
static st_status const_floats(const st_infer *c, int input, double *vals, int want, const char *what)
{
    ST_TRY(st_infer_need_const(c, input));
    const st_tinfo *t = &c->in[input];
    if (!st_dtype_is_float(t->dtype))
        return st_infer_error(c, ST_ERR_DTYPE, "%s must be a float tensor, not %s", what, st_dtype_name(t->dtype));
    int64_t n = tinfo_numel(t);
    if (n != want) return st_infer_error(c, ST_ERR_SHAPE, "%s has %lld values, expected %d", what, (long long)n, want);
    size_t es = st_dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) vals[i] = st_load_f64(t->dtype, (const char *)t->data + i * (int64_t)es);
    return ST_OK;
}

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* The input coordinate of output coordinate x on axis a. */
static double source_coord(const resize_args *r, int a, int64_t x, int64_t in, bool *outside)
{
    double s = r->scale[a], w = r->width[a], xo;
    *outside = false;
    switch (r->ct) {
    case CT_ALIGN_CORNERS: xo = w == 1.0 ? 0.0 : (double)x * (double)(in - 1) / (w - 1.0); break;
    case CT_ASYMMETRIC: xo = (double)x / s; break;
    case CT_TF_HALF_PIXEL_FOR_NN: xo = ((double)x + 0.5) / s; break;
    case CT_PYTORCH_HALF_PIXEL: xo = w == 1.0 ? -0.5 : ((double)x + 0.5) / s - 0.5; break;
    case CT_HALF_PIXEL_SYMMETRIC: {
        /* half_pixel, shifted so that the centre of the input maps to the
         * centre of the output when the output's size was rounded (a
         * keep_aspect_ratio_policy): the shift is 0 when it was not */
        double adjustment = (double)r->out_int[a] / w, center = (double)in / 2.0;
        xo = center * (1.0 - adjustment) + ((double)x + 0.5) / s - 0.5;
        break;
    }
    case CT_TF_CROP_AND_RESIZE: {
        double lo = r->roi_lo[a], hi = r->roi_hi[a];
        xo = w == 1.0 ? (hi - lo) * (double)(in - 1) / 2.0 : (double)x * (hi - lo) * (double)(in - 1) / (w - 1.0);
        xo += lo * (double)(in - 1);
        *outside = xo < 0.0 || xo > (double)(in - 1);
        break;
    }
    default: xo = ((double)x + 0.5) / s - 0.5; break;
    }
    return xo;
}

static int64_t clamp_idx(int64_t i, int64_t in)
{
    return i < 0 ? 0 : (i >= in ? in - 1 : i);
}

static void cubic_coeffs(double r, double a, double *c)
{
    double q = 1.0 - r;
    c[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    c[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    c[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
    c[3] = ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a;
}

/* The Keys cubic convolution kernel at distance d >= 0. */
static double cubic_kernel(double d, double a)
{
    if (d <= 1.0) return ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    if (d < 2.0) return ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    return 0.0;
}

/* Whether axis a downscales with Resize-18's antialias: the linear or
 * cubic filter then spans 1 / scale times as many input elements. */
static bool antialias_axis(const resize_args *r, int a)
{
    return r->antialias && r->mode != MODE_NEAREST && r->scale[a] < 1.0;
}

/* Taps per coordinate on axis a: 1, 2 or 4, or with antialias the
 * reference's footprint of the stretched filter (support 1 or 2 over the
 * scale, an even count). */
static int64_t axis_ntaps(const resize_args *r, int a)
{
    if (r->mode == MODE_NEAREST) return 1;
    int64_t base = r->mode == MODE_LINEAR ? 2 : 4;
    if (!antialias_axis(r, a)) return base;
    double support = r->mode == MODE_LINEAR ? 1.0 : 2.0;
    double start = floor(-support / r->scale[a]) + 1.0;
    return start > -(double)(1 << 20) ? (int64_t)(2.0 - 2.0 * start) : (int64_t)1 << 22;
}

/* Fills axis a's taps; returns the taps per coordinate actually used (an
 * axis that maps every coordinate to itself collapses to one tap). */
static int axis_taps(const resize_args *r, int a, int64_t in, int64_t out, int ntaps, st_resize_tap *t)
{
    bool identity = out == in;
    for (int64_t x = 0; x < out; x++) {
        bool outside;
        double xo = source_coord(r, a, x, in, &outside);
        st_resize_tap *tx = t + x * ntaps;
        double f = floor(xo);
        if (r->mode == MODE_NEAREST) {
            int64_t i;
            if (xo == f) {
                i = (int64_t)f;
            } else {
                double frac = xo - f;
                switch (r->nm) {
                case NM_ROUND_PREFER_CEIL: i = (int64_t)f + (frac >= 0.5); break;
                case NM_FLOOR: i = (int64_t)f; break;
                case NM_CEIL: i = (int64_t)f + 1; break;
                case NM_SIMPLE: i = (int64_t)f + (r->scale[a] < 1.0); break;
                default: i = (int64_t)f + (frac > 0.5); break;
                }
            }
            tx[0].idx = clamp_idx(i, in);
            tx[0].wd = 1.0;
        } else {
            /* as the reference: the neighbours are the nearest indexes,
             * preferring the lower, so an integer coordinate has ratio 1 */
            double ratio;
            if (xo == f) {
                f -= 1.0;
                ratio = 1.0;
            } else {
                ratio = xo - f;
            }
            /* the ntaps nearest indexes, ntaps even: from floor - ntaps / 2 + 1 */
            int64_t base = (int64_t)f - ntaps / 2 + 1;
            if (antialias_axis(r, a)) {
                /* the filter stretched by 1 / scale, over taps at
                 * distances k - ntaps / 2 + 1 - ratio, then normalised */
                double sc = r->scale[a], sum = 0.0;
                for (int k = 0; k < ntaps; k++) {
                    double d = fabs(((double)(k - ntaps / 2 + 1) - ratio) * sc), w;
                    if (r->mode == MODE_LINEAR) w = d < 1.0 ? 1.0 - d : 0.0;
                    else w = cubic_kernel(d, r->cubic_a);
                    tx[k].wd = w;
                    sum += w;
                }
                for (int k = 0; k < ntaps; k++) tx[k].wd /= sum;
            } else if (r->mode == MODE_LINEAR) {
                tx[0].wd = 1.0 - ratio;
                tx[1].wd = ratio;
            } else {
                double c[4];
                cubic_coeffs(ratio, r->cubic_a, c);
                for (int k = 0; k < 4; k++) tx[k].wd = c[k];
            }
            if (r->exclude_outside) {
                double sum = 0.0;
                for (int k = 0; k < ntaps; k++) {
                    if (base + k < 0 || base + k >= in) tx[k].wd = 0.0;
                    sum += tx[k].wd;
                }
                if (sum != 0.0)
                    for (int k = 0; k < ntaps; k++) tx[k].wd /= sum;
            }
            for (int k = 0; k < ntaps; k++) tx[k].idx = clamp_idx(base + k, in);
        }
        for (int k = 0; k < ntaps; k++) {
            tx[k].wf = (float)tx[k].wd;
            tx[k].outside = outside;
        }
        if (identity) {
            double self = 0.0, other = 0.0;
            for (int k = 0; k < ntaps; k++) {
                if (tx[k].idx == x) self += tx[k].wd;
                else other += fabs(tx[k].wd);
            }
            if (outside || fabs(self - 1.0) > 1e-12 || other > 1e-12) identity = false;
        }
    }
    if (!identity || ntaps == 1) return ntaps;
    for (int64_t x = 0; x < out; x++) {
        t[x].idx = x;
        t[x].wd = 1.0;
        t[x].wf = 1.0f;
        t[x].outside = false;
    }
    return 1;
}

static st_status st_infer_resize(st_infer *c)
{
    bool upsample = strcmp(c->node->op_type, "Upsample") == 0;
    if (c->n_in < 1 || !c->in[0].present) return st_infer_error(c, ST_ERR_MODEL, "needs X");
    const st_tinfo *x = &c->in[0];
    int rank = x->rank;
    resize_args r;
    memset(&r, 0, sizeof r);
    static const char *const MODES[] = {"nearest", "linear", "cubic"};
    const char *mode = st_attr_string(c->node, "mode", "nearest");
    r.mode = lookup(mode, MODES, 3);
    bool legacy = upsample || c->opset < 11;
    if (r.mode < 0 || (legacy && r.mode == MODE_CUBIC))
        return st_infer_error(c, ST_ERR_MODEL, "unknown mode '%s'", mode);
    if (r.mode != MODE_NEAREST && !st_dtype_is_float(x->dtype))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "%s interpolation of %s data", mode, st_dtype_name(x->dtype));
    if (x->dtype == ST_STRING) return st_infer_error(c, ST_ERR_UNSUPPORTED, "string data");

    bool have_sizes = false;
    int64_t sizes[ST_MAX_RANK];
    if (legacy) {
        r.ct = CT_ASYMMETRIC;
        r.nm = NM_SIMPLE;
        if (upsample && c->opset < 7) return st_infer_error(c, ST_ERR_UNSUPPORTED, "Upsample before opset 7");
        if (upsample && c->opset < 9) {
            int cnt;
            const float *sc = st_attr_floats(c->node, "scales", &cnt);
            if (!sc) return st_infer_error(c, ST_ERR_MODEL, "attribute 'scales' is required");
            if (cnt != rank) return st_infer_error(c, ST_ERR_SHAPE, "scales has %d values for rank %d", cnt, rank);
            for (int i = 0; i < rank; i++) r.scale[i] = sc[i];
        } else {
            if (c->n_in < 2 || !c->in[1].present) return st_infer_error(c, ST_ERR_MODEL, "needs scales");
            ST_TRY(const_floats(c, 1, r.scale, rank, "scales"));
        }
    } else {
        /* opset 18: scales, sizes and roi may cover only the axes listed
         * (the others keep their size), and sizes may keep the aspect
         * ratio; the axes not listed get scale 1, which maps each
         * coordinate to itself (one tap) in every mode */
        int naxes = rank, axes[ST_MAX_RANK];
        for (int i = 0; i < rank; i++) axes[i] = i;
        enum { KEEP_STRETCH, KEEP_NOT_LARGER, KEEP_NOT_SMALLER } keep = KEEP_STRETCH;
        if (c->opset >= 18) {
            /* a filter of linear and cubic only: with nearest, ONNX's
             * reference and ONNX Runtime refuse the model */
            r.antialias = st_attr_int(c->node, "antialias", 0) != 0;
            if (r.antialias && r.mode == MODE_NEAREST)
                return st_infer_error(c, ST_ERR_MODEL, "antialias applies to the linear and cubic modes, not to nearest");
            int cnt;
            const int64_t *a = st_attr_ints(c->node, "axes", &cnt);
            if (a) {
                if (cnt > rank) return st_infer_error(c, ST_ERR_MODEL, "axes has %d values for rank %d", cnt, rank);
                bool seen[ST_MAX_RANK] = {0};
                for (int i = 0; i < cnt; i++) {
                    ST_TRY(st_infer_axis(c, a[i], rank, &axes[i]));
                    if (seen[axes[i]]) return st_infer_error(c, ST_ERR_MODEL, "axis %d is repeated in axes", axes[i]);
                    seen[axes[i]] = true;
                }
                naxes = cnt;
            }
            const char *kp = st_attr_string(c->node, "keep_aspect_ratio_policy", "stretch");
            if (strcmp(kp, "not_larger") == 0) keep = KEEP_NOT_LARGER;
            else if (strcmp(kp, "not_smaller") == 0) keep = KEEP_NOT_SMALLER;
            else if (strcmp(kp, "stretch") != 0)
                return st_infer_error(c, ST_ERR_MODEL, "unknown keep_aspect_ratio_policy '%s'", kp);
        }
        static const char *const CTS[] = {"half_pixel",         "pytorch_half_pixel", "align_corners",       "asymmetric",
                                          "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric"};
        static const char *const NMS[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        const char *ct = st_attr_string(c->node, "coordinate_transformation_mode", "half_pixel");
        const char *nm = st_attr_string(c->node, "nearest_mode", "round_prefer_floor");
        r.ct = lookup(ct, CTS, 7);
        r.nm = lookup(nm, NMS, 4);
        if (r.ct == CT_HALF_PIXEL_SYMMETRIC && c->opset < 19)
            return st_infer_error(c, ST_ERR_MODEL, "coordinate_transformation_mode '%s' needs opset 19 (the model has %d)", ct, c->opset);
        if (r.ct < 0) return st_infer_error(c, ST_ERR_MODEL, "unknown coordinate_transformation_mode '%s'", ct);
        if (r.nm < 0) return st_infer_error(c, ST_ERR_MODEL, "unknown nearest_mode '%s'", nm);
        r.cubic_a = st_attr_float(c->node, "cubic_coeff_a", -0.75f);
        r.exclude_outside = st_attr_int(c->node, "exclude_outside", 0) != 0;
        r.extrapolation = st_attr_float(c->node, "extrapolation_value", 0.0f);
        bool has_scales = given(c, 2), has_sizes = given(c, 3);
        if (has_scales == has_sizes)
            return st_infer_error(c, ST_ERR_MODEL, "exactly one of scales and sizes must be given (non-empty)");
        for (int i = 0; i < rank; i++) {
            r.scale[i] = 1.0;
            sizes[i] = x->dims[i];
            r.width[i] = (double)x->dims[i];
        }
        if (has_scales) {
            double v[ST_MAX_RANK];
            ST_TRY(const_floats(c, 2, v, naxes, "scales"));
            for (int i = 0; i < naxes; i++) r.scale[axes[i]] = v[i];
        } else {
            int cnt;
            int64_t v[ST_MAX_RANK];
            ST_TRY(st_infer_const_ints(c, 3, v, ST_MAX_RANK, &cnt));
            if (cnt != naxes) return st_infer_error(c, ST_ERR_SHAPE, "sizes has %d values for %d axes", cnt, naxes);
            double kept = keep == KEEP_NOT_LARGER ? INFINITY : 0.0;
            for (int i = 0; i < naxes; i++) {
                int d = axes[i];
                if (v[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "sizes[%d] is negative", i);
                sizes[d] = v[i];
                r.scale[d] = x->dims[d] > 0 ? (double)v[i] / (double)x->dims[d] : 1.0;
                r.width[d] = (double)v[i];
                if (keep == KEEP_NOT_LARGER) kept = r.scale[d] < kept ? r.scale[d] : kept;
                if (keep == KEEP_NOT_SMALLER) kept = r.scale[d] > kept ? r.scale[d] : kept;
            }
            /* one scale for every listed axis, the output size rounded
             * half up from it; the fractional width stays for the
             * coordinate transformation */
            if (keep != KEEP_STRETCH && naxes > 0) {
                if (!(kept > 0.0) || !(kept < 0x1p40)) return st_infer_error(c, ST_ERR_MODEL, "sizes give the aspect-ratio scale %g", kept);
                for (int i = 0; i < naxes; i++) {
                    int d = axes[i];
                    r.scale[d] = kept;
                    r.width[d] = kept * (double)x->dims[d];
                    sizes[d] = (int64_t)(r.width[d] + 0.5);
                }
            }
            have_sizes = true;
        }
        if (r.ct == CT_TF_CROP_AND_RESIZE) {
            if (!given(c, 1)) return st_infer_error(c, ST_ERR_MODEL, "tf_crop_and_resize needs roi");
            double roi[2 * ST_MAX_RANK];
            ST_TRY(const_floats(c, 1, roi, 2 * naxes, "roi"));
            for (int i = 0; i < rank; i++) {
                r.roi_lo[i] = 0.0;
                r.roi_hi[i] = 1.0;
            }
            for (int i = 0; i < naxes; i++) {
                r.roi_lo[axes[i]] = roi[i];
                r.roi_hi[axes[i]] = roi[naxes + i];
            }
        }
    }

    st_tinfo *o = &c->out[0];
    o->dtype = x->dtype;
    o->rank = rank;
    uint64_t bytes = st_dtype_size(x->dtype);
    for (int i = 0; i < rank; i++) {
        if (!(r.scale[i] > 0.0) || !isfinite(r.scale[i]))
            return st_infer_error(c, ST_ERR_MODEL, "scale %g on axis %d is not positive", r.scale[i], i);
        if (have_sizes) {
            o->dims[i] = sizes[i];   /* r.width[i] was set with it */
        } else {
            /* floor(dim * scale), in float as ONNX's shape inference does */
            float d = (float)x->dims[i] * (float)r.scale[i];
            /* scales are data: a huge one must not overflow the conversion */
            if (!(d < 0x1p46f))
                return st_infer_error(c, ST_ERR_SHAPE, "scale %g makes axis %d larger than 2^46", r.scale[i], i);
            o->dims[i] = (int64_t)floorf(d);
            r.width[i] = r.scale[i] * (double)x->dims[i];
        }
        /* refused here, before the tap table below is sized from it */
        if (o->dims[i] && bytes > (1ull << 46) / (uint64_t)o->dims[i])
            return st_infer_error(c, ST_ERR_NOMEM, "the output would be larger than 64 TiB");
        bytes *= (uint64_t)o->dims[i];
        r.out_int[i] = o->dims[i];
    }

    int64_t ntaps[ST_MAX_RANK], total = 0;
    for (int i = 0; i < rank; i++) {
        ntaps[i] = axis_ntaps(&r, i);
        if (ntaps[i] > (1 << 20))
            return st_infer_error(c, ST_ERR_UNSUPPORTED, "antialias at scale %g needs %lld taps per element on axis %d", r.scale[i],
                                  (long long)ntaps[i], i);
        total += o->dims[i] * ntaps[i];
    }
    if (total > (1 << 28))
        return st_infer_error(c, ST_ERR_UNSUPPORTED, "the output's dims need %lld interpolation taps, more than 2^28",
                              (long long)total);
    st_resize_state *s = st_infer_state(c, sizeof *s + (size_t)total * sizeof(st_resize_tap));
    if (!s) return st_infer_error(c, ST_ERR_NOMEM, "out of memory");
    s->rank = rank;
    s->nearest = r.mode == MODE_NEAREST;
    s->crop = r.ct == CT_TF_CROP_AND_RESIZE;
    s->extrapolation = r.extrapolation;
    s->n_taps = total;
    int64_t at = 0;
    for (int i = 0; i < rank; i++) {
        s->in[i] = x->dims[i];
        s->out[i] = o->dims[i];
        s->first[i] = at;
        if (x->dims[i] == 0 && o->dims[i] > 0)
            return st_infer_error(c, ST_ERR_SHAPE, "axis %d is empty and cannot be resized to %lld", i, (long long)o->dims[i]);
        s->ntaps[i] = x->dims[i] > 0 ? axis_taps(&r, i, x->dims[i], o->dims[i], (int)ntaps[i], s->taps + at) : (int)ntaps[i];
        at += o->dims[i] * ntaps[i];
    }
    /* the last axis repeating each element an integer number of times:
     * YOLO's and FPNs' 2x nearest upsampling, done as a plain loop */
    if (s->nearest && rank > 0 && !s->crop) {
        int l = rank - 1;
        int64_t in = s->in[l], out = s->out[l];
        if (in > 0 && out > in && out % in == 0) {
            int64_t rep = out / in;
            bool ok = true;
            for (int64_t xx = 0; xx < out && ok; xx++) ok = s->taps[s->first[l] + xx].idx == xx / rep;
            if (ok) s->rep = rep;
        }
    }
    return ST_OK;
}

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_resize[] = {
    {"Resize", "", 10, 0, st_infer_resize, NULL, NULL, .types = ST_DT_ALL},
    {"Upsample", "", 7, 0, st_infer_resize, NULL, NULL, .types = ST_DT_ALL},
    {NULL, NULL, 0, 0, NULL, NULL, NULL}
};
