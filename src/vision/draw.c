/* draw.c — filled rectangles, box outlines, thick segments. */
#include "vision/draw.h"

#include <math.h>

st_rgb st_palette(int i)
{
    /* golden-ratio steps around the hue circle never repeat and keep
     * consecutive classes far apart */
    double h = fmod((i < 0 ? -i : i) * 0.618033988749895, 1.0) * 6.0;
    int sector = (int)h;
    double f = h - sector;
    uint8_t up = (uint8_t)lround(255 * f), down = (uint8_t)lround(255 * (1 - f));
    switch (sector) {
    case 0: return (st_rgb){255, up, 0};
    case 1: return (st_rgb){down, 255, 0};
    case 2: return (st_rgb){0, 255, up};
    case 3: return (st_rgb){0, down, 255};
    case 4: return (st_rgb){up, 0, 255};
    default: return (st_rgb){255, 0, down};
    }
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* float -> int for drawing: NaN and huge values become the clamp bounds */
static int to_px(float v, int lo, int hi)
{
    if (!(v >= (float)lo)) return lo;
    if (v > (float)hi) return hi;
    return (int)floorf(v);
}

void st_draw_fill(st_image *im, int x0, int y0, int x1, int y1, st_rgb c)
{
    x0 = clampi(x0, 0, im->w), x1 = clampi(x1, 0, im->w);
    y0 = clampi(y0, 0, im->h), y1 = clampi(y1, 0, im->h);
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
            p[0] = c.r, p[1] = c.g, p[2] = c.b;
        }
}

void st_draw_box(st_image *im, float x1, float y1, float x2, float y2, int thickness, st_rgb c)
{
    /* the pixels whose centres (i + 0.5) lie inside the box */
    int a = to_px(ceilf(x1 - 0.5f), -1, im->w + 1), b = to_px(ceilf(y1 - 0.5f), -1, im->h + 1);
    int e = to_px(x2 - 0.5f, -1, im->w + 1), f = to_px(y2 - 0.5f, -1, im->h + 1);
    if (e < a || f < b) return;
    int t = thickness < 1 ? 1 : thickness;
    st_draw_fill(im, a, b, e + 1, b + t, c);         /* top */
    st_draw_fill(im, a, f + 1 - t, e + 1, f + 1, c); /* bottom */
    st_draw_fill(im, a, b, a + t, f + 1, c);         /* left */
    st_draw_fill(im, e + 1 - t, b, e + 1, f + 1, c); /* right */
}

void st_draw_line(st_image *im, st_pointf a, st_pointf b, int thickness, st_rgb c)
{
    if (!isfinite(a.x) || !isfinite(a.y) || !isfinite(b.x) || !isfinite(b.y)) return;
    double r = (thickness < 1 ? 1 : thickness) / 2.0;
    /* every pixel whose centre is within r of the segment: exact, and
     * cheap for the few short segments an overlay has */
    int x0 = to_px((float)(fmin(a.x, b.x) - r), 0, im->w - 1), x1 = to_px((float)(fmax(a.x, b.x) + r + 1), 0, im->w - 1);
    int y0 = to_px((float)(fmin(a.y, b.y) - r), 0, im->h - 1), y1 = to_px((float)(fmax(a.y, b.y) + r + 1), 0, im->h - 1);
    double dx = (double)b.x - a.x, dy = (double)b.y - a.y, len2 = dx * dx + dy * dy;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            double t = len2 > 0 ? ((x - a.x) * dx + (y - a.y) * dy) / len2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = x - (a.x + t * dx), ey = y - (a.y + t * dy);
            if (ex * ex + ey * ey <= r * r) {
                uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
                p[0] = c.r, p[1] = c.g, p[2] = c.b;
            }
        }
}

void st_draw_polygon(st_image *im, const st_pointf *p, int n, int thickness, st_rgb c)
{
    for (int i = 0; i < n; i++) st_draw_line(im, p[i], p[(i + 1) % n], thickness, c);
}
