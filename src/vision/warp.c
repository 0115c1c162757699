/* warp.c — perspective crops and rotations. */
#include "vision/warp.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/status.h"

/* Solves the 8x8 system of a homography taking the four (u, v) to the four
 * (x, y): x = (a u + b v + c) / (g u + h v + 1), y = (d u + e v + f) / (...).
 * Gaussian elimination with partial pivoting, in double.  false when
 * singular. */
static bool homography(const double u[4], const double v[4], const double x[4], const double y[4], double hm[9])
{
    double m[8][9];
    for (int i = 0; i < 4; i++) {
        double r0[9] = {u[i], v[i], 1, 0, 0, 0, -u[i] * x[i], -v[i] * x[i], x[i]};
        double r1[9] = {0, 0, 0, u[i], v[i], 1, -u[i] * y[i], -v[i] * y[i], y[i]};
        memcpy(m[2 * i], r0, sizeof r0);
        memcpy(m[2 * i + 1], r1, sizeof r1);
    }
    for (int c = 0; c < 8; c++) {
        int piv = c;
        for (int r = c + 1; r < 8; r++)
            if (fabs(m[r][c]) > fabs(m[piv][c])) piv = r;
        if (fabs(m[piv][c]) < 1e-9) return false;
        if (piv != c)
            for (int k = 0; k < 9; k++) {
                double t = m[c][k];
                m[c][k] = m[piv][k], m[piv][k] = t;
            }
        for (int r = 0; r < 8; r++) {
            if (r == c) continue;
            double f = m[r][c] / m[c][c];
            for (int k = c; k < 9; k++) m[r][k] -= f * m[c][k];
        }
    }
    for (int i = 0; i < 8; i++) hm[i] = m[i][8] / m[i][i];
    hm[8] = 1;
    return true;
}

static float dist(st_pointf a, st_pointf b) { return hypotf(a.x - b.x, a.y - b.y); }

/* Bilinear sample at (x, y), pixel centres at integers; outside the image
 * the nearest edge pixel repeats. */
static void sample(const st_image *im, double x, double y, uint8_t rgb[3])
{
    if (!(x > 0)) x = 0; /* also catches NaN */
    if (!(y > 0)) y = 0;
    if (x > im->w - 1) x = im->w - 1;
    if (y > im->h - 1) y = im->h - 1;
    int x0 = (int)x, y0 = (int)y;
    int x1 = x0 + 1 < im->w ? x0 + 1 : x0, y1 = y0 + 1 < im->h ? y0 + 1 : y0;
    double fx = x - x0, fy = y - y0;
    const uint8_t *p00 = im->px + ((size_t)y0 * im->w + x0) * 3, *p01 = im->px + ((size_t)y0 * im->w + x1) * 3;
    const uint8_t *p10 = im->px + ((size_t)y1 * im->w + x0) * 3, *p11 = im->px + ((size_t)y1 * im->w + x1) * 3;
    for (int c = 0; c < 3; c++) {
        double top = p00[c] + (p01[c] - p00[c]) * fx, bot = p10[c] + (p11[c] - p10[c]) * fx;
        rgb[c] = (uint8_t)lround(top + (bot - top) * fy);
    }
}

st_status st_warp_quad(const st_image *src, const st_pointf q[4], st_image *out)
{
    float fw = fmaxf(dist(q[0], q[1]), dist(q[3], q[2])), fh = fmaxf(dist(q[0], q[3]), dist(q[1], q[2]));
    if (!(fw >= 0.5f && fh >= 0.5f) || fw > ST_IMAGE_MAX_SIDE || fh > ST_IMAGE_MAX_SIDE)
        return st_error(ST_ERR_INVALID_ARG, "text box of %.1f x %.1f pixels cannot be cut out", fw, fh);
    int w = (int)lroundf(fw), h = (int)lroundf(fh);
    /* The strip's continuous rectangle [0, w] x [0, h] (pixel edges at
     * integers) maps onto the quad's corners in the same convention, i.e.
     * the corners shifted by half a pixel; strip pixel (i, j) is sampled at
     * its centre (i + 0.5, j + 0.5). */
    double u[4] = {0, w, w, 0}, v[4] = {0, 0, h, h}, x[4], y[4], hm[9];
    for (int i = 0; i < 4; i++) x[i] = q[i].x + 0.5, y[i] = q[i].y + 0.5;
    if (!homography(u, v, x, y, hm))
        return st_error(ST_ERR_INVALID_ARG, "text box (%.1f,%.1f) (%.1f,%.1f) (%.1f,%.1f) (%.1f,%.1f) is degenerate", q[0].x,
                        q[0].y, q[1].x, q[1].y, q[2].x, q[2].y, q[3].x, q[3].y);
    st_status r = st_image_alloc(out, w, h);
    if (r != ST_OK) return r;
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            double uu = i + 0.5, vv = j + 0.5;
            double den = hm[6] * uu + hm[7] * vv + hm[8];
            double sx = (hm[0] * uu + hm[1] * vv + hm[2]) / den, sy = (hm[3] * uu + hm[4] * vv + hm[5]) / den;
            sample(src, sx - 0.5, sy - 0.5, out->px + ((size_t)j * w + i) * 3);
        }
    return ST_OK;
}

st_status st_image_rotate90(const st_image *src, st_image *out)
{
    st_status r = st_image_alloc(out, src->h, src->w);
    if (r != ST_OK) return r;
    /* source (x, y) lands at (y, w - 1 - x) */
    for (int y = 0; y < src->h; y++)
        for (int x = 0; x < src->w; x++)
            memcpy(out->px + ((size_t)(src->w - 1 - x) * out->w + y) * 3, src->px + ((size_t)y * src->w + x) * 3, 3);
    return ST_OK;
}

void st_image_rotate180(st_image *im)
{
    size_t n = (size_t)im->w * im->h;
    if (!n) return;
    for (size_t i = 0, j = n - 1; i < j; i++, j--) {
        uint8_t t[3];
        memcpy(t, im->px + 3 * i, 3);
        memcpy(im->px + 3 * i, im->px + 3 * j, 3);
        memcpy(im->px + 3 * j, t, 3);
    }
}
