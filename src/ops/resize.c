/*
 * resize.c — shape rules of the resize family: Resize (opsets 10, 11, 13;
 * 18+ without its new attributes), the deprecated Upsample (7, 9) and
 * ConvTranspose (1-D to 3-D).  Kernels: backends/cpu/k_resize.c.
 *
 * Resize's scales, sizes and roi are read here, at plan time, and turned
 * into per-axis tap tables (ops/resize.h); the coordinate arithmetic
 * follows the ONNX reference implementation (onnx/backend/test/case/node/
 * resize.py), in double.  ConvTranspose resolves output_shape, auto_pad
 * and output_padding into begin pads and an output size, kept in an
 * st_conv_state (ops/conv.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/k_resize.h"
#include "backends/opencl/kernels.h"
#include "ops/conv.h"
#include "ops/ops.h"
#include "ops/resize.h"

static const st_dtype FLOATS[] = {ST_F32, ST_F16, ST_BF16, ST_F64, 0};

enum { CT_HALF_PIXEL, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_TF_HALF_PIXEL_FOR_NN, CT_TF_CROP_AND_RESIZE };
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
    double width[ST_MAX_RANK];      /* the reference's output_width: scale * in, or sizes as given */
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
            double c[4];
            int64_t base;
            if (r->mode == MODE_LINEAR) {
                c[0] = 1.0 - ratio;
                c[1] = ratio;
                base = (int64_t)f;
            } else {
                cubic_coeffs(ratio, r->cubic_a, c);
                base = (int64_t)f - 1;
            }
            if (r->exclude_outside) {
                double sum = 0.0;
                for (int k = 0; k < ntaps; k++) {
                    if (base + k < 0 || base + k >= in) c[k] = 0.0;
                    sum += c[k];
                }
                if (sum != 0.0)
                    for (int k = 0; k < ntaps; k++) c[k] /= sum;
            }
            for (int k = 0; k < ntaps; k++) {
                tx[k].idx = clamp_idx(base + k, in);
                tx[k].wd = c[k];
            }
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
        if (c->opset >= 18) {
            /* the attributes opset 18 added, which strata does not implement */
            if (st_attr_int(c->node, "antialias", 0) != 0)
                return st_infer_error(c, ST_ERR_UNSUPPORTED, "antialias is not supported");
            if (st_node_attr(c->node, "axes")) return st_infer_error(c, ST_ERR_UNSUPPORTED, "the axes attribute is not supported");
            const char *kp = st_attr_string(c->node, "keep_aspect_ratio_policy", "stretch");
            if (strcmp(kp, "stretch") != 0)
                return st_infer_error(c, ST_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s' is not supported", kp);
        }
        static const char *const CTS[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                          "tf_crop_and_resize"};
        static const char *const NMS[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        const char *ct = st_attr_string(c->node, "coordinate_transformation_mode", "half_pixel");
        const char *nm = st_attr_string(c->node, "nearest_mode", "round_prefer_floor");
        r.ct = lookup(ct, CTS, 6);
        r.nm = lookup(nm, NMS, 4);
        if (r.ct < 0 && strcmp(ct, "half_pixel_symmetric") == 0)
            return st_infer_error(c, ST_ERR_UNSUPPORTED, "coordinate_transformation_mode '%s' is not supported", ct);
        if (r.ct < 0) return st_infer_error(c, ST_ERR_MODEL, "unknown coordinate_transformation_mode '%s'", ct);
        if (r.nm < 0) return st_infer_error(c, ST_ERR_MODEL, "unknown nearest_mode '%s'", nm);
        r.cubic_a = st_attr_float(c->node, "cubic_coeff_a", -0.75f);
        r.exclude_outside = st_attr_int(c->node, "exclude_outside", 0) != 0;
        r.extrapolation = st_attr_float(c->node, "extrapolation_value", 0.0f);
        bool has_scales = given(c, 2), has_sizes = given(c, 3);
        if (has_scales == has_sizes)
            return st_infer_error(c, ST_ERR_MODEL, "exactly one of scales and sizes must be given (non-empty)");
        if (has_scales) {
            ST_TRY(const_floats(c, 2, r.scale, rank, "scales"));
        } else {
            int cnt;
            ST_TRY(st_infer_const_ints(c, 3, sizes, ST_MAX_RANK, &cnt));
            if (cnt != rank) return st_infer_error(c, ST_ERR_SHAPE, "sizes has %d values for rank %d", cnt, rank);
            for (int i = 0; i < rank; i++) {
                if (sizes[i] < 0) return st_infer_error(c, ST_ERR_SHAPE, "sizes[%d] is negative", i);
                r.scale[i] = x->dims[i] > 0 ? (double)sizes[i] / (double)x->dims[i] : 1.0;
            }
            have_sizes = true;
        }
        if (r.ct == CT_TF_CROP_AND_RESIZE) {
            if (!given(c, 1)) return st_infer_error(c, ST_ERR_MODEL, "tf_crop_and_resize needs roi");
            double roi[2 * ST_MAX_RANK];
            ST_TRY(const_floats(c, 1, roi, 2 * rank, "roi"));
            for (int i = 0; i < rank; i++) {
                r.roi_lo[i] = roi[i];
                r.roi_hi[i] = roi[rank + i];
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
            o->dims[i] = sizes[i];
            r.width[i] = (double)sizes[i];
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
    }

    int ntaps = r.mode == MODE_NEAREST ? 1 : (r.mode == MODE_LINEAR ? 2 : 4);
    int64_t total = 0;
    for (int i = 0; i < rank; i++) total += o->dims[i] * ntaps;
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
        s->ntaps[i] = x->dims[i] > 0 ? axis_taps(&r, i, x->dims[i], o->dims[i], ntaps, s->taps + at) : ntaps;
        at += o->dims[i] * ntaps;
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

/* ---- ConvTranspose ---- */

static st_status st_infer_conv_transpose(st_infer *c)
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

/* ---- the op table rows of this family (see op_table.c) ---- */

const st_op_def st_ops_resize[] = {
    {"Resize", "", 10, 0, st_infer_resize, NULL, NULL, st_cpu_resize, ST_CUDA(st_cuda_resize), .opencl = ST_OPENCL(st_cl_resize)},
    {"Upsample", "", 7, 0, st_infer_resize, NULL, NULL, st_cpu_resize, ST_CUDA(st_cuda_resize), .opencl = ST_OPENCL(st_cl_resize)},
    {"ConvTranspose", "", 1, 0, st_infer_conv_transpose, NULL, NULL, st_cpu_conv_transpose, ST_CUDA(st_cuda_conv_transpose), .opencl = ST_OPENCL(st_cl_conv_transpose)},
    {NULL, NULL, 0, 0, NULL, NULL, NULL, NULL}
};
