/*
 * k_misc_sample.c — CPU GridSample, AffineGrid and RoiAlign (shape rules:
 * ops/misc.c).
 *
 * GridSample follows the definition ONNX took from PyTorch's grid_sample:
 * a grid value of -1 / +1 is the centre of the first / last pixel
 * (align_corners) or their outer edge; bilinear and nearest apply the
 * padding mode to the source coordinate (clamped for border, folded for
 * reflection) and read zeros outside; bicubic (A = -0.75) applies it to
 * each of its 16 taps.  Nearest rounds half to even.
 *
 * RoiAlign averages (or takes the max of) sampling_ratio^2 bilinear
 * samples per output bin, as ONNX Runtime and torchvision do; in max mode
 * a sample is the largest of its four weighted corners.
 *
 * Tasks: one per (image, output row) for GridSample, one per (roi,
 * channel) for RoiAlign; each owns its outputs.  Math in double.
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/k_misc.h"
#include "runtime/pool.h"
#include "ops/misc.h"

/* ---- GridSample ---- */

typedef struct gs_job {
    const st_gridsample_state *s;
    const st_operand *x, *g, *y;
} gs_job;

static double unnormalize(double v, int64_t size, bool align)
{
    return align ? (v + 1) / 2 * (double)(size - 1) : ((v + 1) * (double)size - 1) / 2;
}

/* Folds v into [lo2 / 2, hi2 / 2] by reflection at the ends. */
static double reflect(double v, double lo2, double hi2)
{
    if (lo2 == hi2) return 0;
    double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    v = fabs(v - mn);
    double extra = fmod(v, span);
    int64_t flips = (int64_t)floor(v / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The padding mode applied to a source coordinate. */
static double pad_coord(const st_gridsample_state *s, double v, int64_t size)
{
    if (s->padding == ST_GS_BORDER) return clampd(v, 0, (double)(size - 1));
    if (s->padding == ST_GS_REFLECTION) {
        v = s->align_corners ? reflect(v, 0, 2.0 * (double)(size - 1)) : reflect(v, -1, 2.0 * (double)size - 1);
        return clampd(v, 0, (double)(size - 1));
    }
    return v;
}

/* An integral coordinate as an index; far outside (or NaN) becomes an
 * index that stays outside after +1, so no cast overflows. */
static int64_t to_index(double v, int64_t size)
{
    if (!(v >= -2.0 && v <= (double)size + 1.0)) return -((int64_t)1 << 40);
    return (int64_t)v;
}

/* X[n, c] at integer (iy, ix), zero outside. */
static double gs_pixel(const gs_job *j, int64_t base, int64_t iy, int64_t ix)
{
    const st_operand *x = j->x;
    if (iy < 0 || ix < 0 || iy >= x->sizes[2] || ix >= x->sizes[3]) return 0;
    return st_load_f64(x->dtype, st_misc_at(x, base + iy * x->strides[2] + ix * x->strides[3]));
}

static void cubic_coeffs(double t, double *w)
{
    const double A = -0.75;
    double x1 = t + 1, x2 = t, x3 = 1 - t, x4 = 2 - t;
    w[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    w[1] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    w[2] = ((A + 2) * x3 - (A + 3)) * x3 * x3 + 1;
    w[3] = ((A * x4 - 5 * A) * x4 + 8 * A) * x4 - 4 * A;
}

static void gs_row(void *arg, int64_t t)
{
    const gs_job *j = arg;
    const st_gridsample_state *s = j->s;
    const st_operand *x = j->x, *g = j->g, *y = j->y;
    int64_t ho = y->sizes[2], n = t / ho, oy = t % ho, H = x->sizes[2], W = x->sizes[3];
    for (int64_t ox = 0; ox < y->sizes[3]; ox++) {
        int64_t go = n * g->strides[0] + oy * g->strides[1] + ox * g->strides[2];
        double gx = st_load_f64(g->dtype, st_misc_at(g, go)), gy = st_load_f64(g->dtype, st_misc_at(g, go + g->strides[3]));
        double fx = unnormalize(gx, W, s->align_corners), fy = unnormalize(gy, H, s->align_corners);
        if (s->mode != ST_GS_BICUBIC) {
            fx = pad_coord(s, fx, W);
            fy = pad_coord(s, fy, H);
        }
        for (int64_t c = 0; c < x->sizes[1]; c++) {
            int64_t base = n * x->strides[0] + c * x->strides[1];
            double v;
            if (s->mode == ST_GS_NEAREST) {
                v = gs_pixel(j, base, to_index(nearbyint(fy), H), to_index(nearbyint(fx), W));
            } else if (s->mode == ST_GS_BILINEAR) {
                double x0 = floor(fx), y0 = floor(fy), tx = fx - x0, ty = fy - y0;
                int64_t ix = to_index(x0, W), iy = to_index(y0, H);
                v = (1 - ty) * ((1 - tx) * gs_pixel(j, base, iy, ix) + tx * gs_pixel(j, base, iy, ix + 1)) +
                    ty * ((1 - tx) * gs_pixel(j, base, iy + 1, ix) + tx * gs_pixel(j, base, iy + 1, ix + 1));
            } else {
                double x0 = floor(fx), y0 = floor(fy), wx[4], wy[4];
                cubic_coeffs(fx - x0, wx);
                cubic_coeffs(fy - y0, wy);
                v = 0;
                for (int a = 0; a < 4; a++) {
                    double row = 0, py = pad_coord(s, y0 - 1 + a, H);
                    for (int b = 0; b < 4; b++) {
                        double px = pad_coord(s, x0 - 1 + b, W);
                        row += wx[b] * gs_pixel(j, base, to_index(floor(py), H), to_index(floor(px), W));
                    }
                    v += wy[a] * row;
                }
            }
            st_store_f64(y->dtype, st_misc_at(y, n * y->strides[0] + c * y->strides[1] + oy * y->strides[2] + ox * y->strides[3]), v);
        }
    }
}

st_status st_cpu_gridsample(const st_kctx *k)
{
    gs_job j = {k->state, &k->in[0], &k->in[1], &k->out[0]};
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_parallel_for(k->pool, j.y->sizes[0] * j.y->sizes[2], gs_row, &j);
    return ST_OK;
}

/* ---- RoiAlign ---- */

typedef struct ra_job {
    const st_roialign_state *s;
    const st_operand *x, *rois, *bi, *y;
} ra_job;

static void ra_task(void *arg, int64_t t)
{
    const ra_job *j = arg;
    const st_roialign_state *s = j->s;
    const st_operand *x = j->x, *ro = j->rois, *y = j->y;
    int64_t C = x->sizes[1], r = t / C, c = t % C, H = x->sizes[2], W = x->sizes[3];
    int64_t batch = st_load_i64(j->bi->dtype, st_misc_at(j->bi, r * j->bi->strides[0]));
    double box[4];
    for (int i = 0; i < 4; i++) box[i] = st_load_f64(ro->dtype, st_misc_at(ro, r * ro->strides[0] + i * ro->strides[1]));
    double off = s->half_pixel ? 0.5 : 0.0, scale = s->spatial_scale;
    double x0 = box[0] * scale - off, y0 = box[1] * scale - off, x1 = box[2] * scale - off, y1 = box[3] * scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!s->half_pixel) {
        /* the old mode forces a roi of at least one pixel */
        if (rw < 1) rw = 1;
        if (rh < 1) rh = 1;
    }
    double bw = rw / (double)s->out_w, bh = rh / (double)s->out_h;
    int64_t gh = s->sampling_ratio > 0 ? s->sampling_ratio : (int64_t)ceil(rh / (double)s->out_h);
    int64_t gw = s->sampling_ratio > 0 ? s->sampling_ratio : (int64_t)ceil(rw / (double)s->out_w);
    double count = gh * gw > 0 ? (double)(gh * gw) : 1.0;
    int64_t base = batch * x->strides[0] + c * x->strides[1];
    for (int64_t ph = 0; ph < s->out_h; ph++)
        for (int64_t pw = 0; pw < s->out_w; pw++) {
            double acc = 0;
            bool first = true;
            for (int64_t iy = 0; iy < gh; iy++) {
                double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                for (int64_t ix = 0; ix < gw; ix++) {
                    double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                    double v = 0;
                    if (yy >= -1.0 && yy <= (double)H && xx >= -1.0 && xx <= (double)W) {   /* false for NaN too */
                        double sy = yy <= 0 ? 0 : yy, sx = xx <= 0 ? 0 : xx;
                        int64_t ylo = (int64_t)sy, xlo = (int64_t)sx, yhi, xhi;
                        if (ylo >= H - 1) yhi = ylo = H - 1, sy = (double)ylo;
                        else yhi = ylo + 1;
                        if (xlo >= W - 1) xhi = xlo = W - 1, sx = (double)xlo;
                        else xhi = xlo + 1;
                        double ly = sy - (double)ylo, lx = sx - (double)xlo, hy = 1 - ly, hx = 1 - lx;
                        double p1 = st_load_f64(x->dtype, st_misc_at(x, base + ylo * x->strides[2] + xlo * x->strides[3]));
                        double p2 = st_load_f64(x->dtype, st_misc_at(x, base + ylo * x->strides[2] + xhi * x->strides[3]));
                        double p3 = st_load_f64(x->dtype, st_misc_at(x, base + yhi * x->strides[2] + xlo * x->strides[3]));
                        double p4 = st_load_f64(x->dtype, st_misc_at(x, base + yhi * x->strides[2] + xhi * x->strides[3]));
                        if (s->max_mode) {
                            v = fmax(fmax(hy * hx * p1, hy * lx * p2), fmax(ly * hx * p3, ly * lx * p4));
                        } else {
                            v = hy * hx * p1 + hy * lx * p2 + ly * hx * p3 + ly * lx * p4;
                        }
                    }
                    if (s->max_mode) acc = first || v > acc ? v : acc;
                    else acc += v;
                    first = false;
                }
            }
            double out = s->max_mode ? acc : acc / count;
            st_store_f64(y->dtype, st_misc_at(y, r * y->strides[0] + c * y->strides[1] + ph * y->strides[2] + pw * y->strides[3]), out);
        }
}

st_status st_cpu_roialign(const st_kctx *k)
{
    ra_job j = {k->state, &k->in[0], &k->in[1], &k->in[2], &k->out[0]};
    int64_t nr = j.rois->sizes[0];
    for (int64_t r = 0; r < nr; r++) {
        int64_t b = st_load_i64(j.bi->dtype, st_misc_at(j.bi, r * j.bi->strides[0]));
        if (b < 0 || b >= j.x->sizes[0])
            return st_error(ST_ERR_INVALID_ARG, "batch_indices[%lld] is %lld; X has %lld images", (long long)r, (long long)b,
                            (long long)j.x->sizes[0]);
    }
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_parallel_for(k->pool, nr * j.x->sizes[1], ra_task, &j);
    return ST_OK;
}

/* ---- AffineGrid ---- */

/* Coordinate i of n along one axis, normalised to [-1, 1]: pixel centres,
 * with align_corners the first and last at -1 and 1 (a single one at -1,
 * as linspace(-1, 1, 1) gives). */
static double grid_coord(int64_t i, int64_t n, bool align)
{
    if (align) return n > 1 ? -1.0 + 2.0 * (double)i / (double)(n - 1) : -1.0;
    return -1.0 + (2.0 * (double)i + 1.0) / (double)n;
}

typedef struct ag_job {
    const st_gridsample_state *s;
    const st_operand *t, *y;
    int sp;
} ag_job;

/* Task: one (image, outermost spatial index); it owns those outputs. */
static void ag_task(void *arg, int64_t task)
{
    const ag_job *j = arg;
    const st_operand *t = j->t, *y = j->y;
    int sp = j->sp;
    int64_t n = task / y->sizes[1], o = task % y->sizes[1];
    double th[3][4];
    for (int r = 0; r < sp; r++)
        for (int q = 0; q <= sp; q++)
            th[r][q] = st_load_f64(t->dtype, st_misc_at(t, n * t->strides[0] + r * t->strides[1] + q * t->strides[2]));
    int64_t inner = 1;
    for (int i = 2; i <= sp; i++) inner *= y->sizes[i];
    for (int64_t p = 0; p < inner; p++) {
        /* the output position (o, rest) and its base coordinates, x first */
        int64_t idx[3] = {o, 0, 0}, rem = p;
        for (int i = sp - 1; i >= 1; i--) {
            idx[i] = rem % y->sizes[1 + i];
            rem /= y->sizes[1 + i];
        }
        double base[4];
        for (int i = 0; i < sp; i++) base[sp - 1 - i] = grid_coord(idx[i], y->sizes[1 + i], j->s->align_corners);
        base[sp] = 1.0;
        int64_t off = n * y->strides[0];
        for (int i = 0; i < sp; i++) off += idx[i] * y->strides[1 + i];
        for (int r = 0; r < sp; r++) {
            double v = 0.0;
            for (int q = 0; q <= sp; q++) v += th[r][q] * base[q];
            st_store_f64(y->dtype, st_misc_at(y, off + r * y->strides[1 + sp]), v);
        }
    }
}

st_status st_cpu_affine_grid(const st_kctx *k)
{
    ag_job j = {k->state, &k->in[0], &k->out[0], k->out[0].rank - 2};
    if (st_operand_numel(j.y) == 0) return ST_OK;
    st_parallel_for(k->pool, j.y->sizes[0] * j.y->sizes[1], ag_task, &j);
    return ST_OK;
}

/* ---- the kernel table entries of this file (backends/cpu/table.c) ---- */

const st_kernel st_cpu_k_misc_sample[] = {
    {"GridSample", "", ST_DT_ALL, st_cpu_gridsample, NULL, NULL, NULL},
    {"AffineGrid", "", ST_DT_ALL, st_cpu_affine_grid, NULL, NULL, NULL},
    {"RoiAlign", "", ST_DT_ALL, st_cpu_roialign, NULL, NULL, NULL},
    {NULL}
};
