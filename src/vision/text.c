/* text.c — UTF-8 text rendered with stb_truetype. */
#include "vision/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/status.h"

st_status st_font_load(const char *path, st_font *f)
{
    void *data;
    size_t size;
    memset(f, 0, sizeof *f);
    st_status r = st_file_read(path, &data, &size);
    if (r != ST_OK) return r;
    int off = size >= 12 ? stbtt_GetFontOffsetForIndex(data, 0) : -1;
    if (off < 0 || !stbtt_InitFont(&f->info, data, off)) {
        free(data);
        return st_error(ST_ERR_INVALID_ARG, "'%s' is not a TrueType font", path);
    }
    f->data = data;
    return ST_OK;
}

void st_font_free(st_font *f)
{
    free(f->data);
    memset(f, 0, sizeof *f);
}

/* Next code point of a UTF-8 string; malformed or overlong sequences give
 * U+FFFD and move on by one byte, so any byte string terminates. */
static int next_cp(const char **ps)
{
    const unsigned char *s = (const unsigned char *)*ps;
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    int cp = n == 1 ? s[0] : n == 2 ? s[0] & 0x1F : n == 3 ? s[0] & 0x0F : s[0] & 0x07;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            n = 0;
            break;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const int min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (!n || cp < min_cp[n] || cp > 0x10FFFF) {
        *ps += 1;
        return 0xFFFD;
    }
    *ps += n;
    return cp;
}

static float clamp_px(float px) { return px < 4 ? 4 : px > 512 ? 512 : px; }

int st_text_width(const st_font *f, float px, const char *s)
{
    float scale = stbtt_ScaleForPixelHeight(&f->info, clamp_px(px)), x = 0;
    int prev = 0;
    while (*s) {
        int cp = next_cp(&s), adv, lsb;
        if (prev) x += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        x += scale * adv;
        prev = cp;
    }
    return (int)ceilf(x);
}

int st_text_height(const st_font *f, float px)
{
    int asc, desc, gap;
    float scale = stbtt_ScaleForPixelHeight(&f->info, clamp_px(px));
    stbtt_GetFontVMetrics(&f->info, &asc, &desc, &gap);
    return (int)ceilf(scale * (asc - desc));
}

st_status st_draw_text(st_image *im, const st_font *f, float px, int x, int y, const char *s, st_rgb c)
{
    int asc, desc, gap;
    float scale = stbtt_ScaleForPixelHeight(&f->info, clamp_px(px)), pen = (float)x;
    stbtt_GetFontVMetrics(&f->info, &asc, &desc, &gap);
    int base = y + (int)lroundf(scale * asc);
    int prev = 0;
    const uint8_t col[3] = {c.r, c.g, c.b};
    while (*s) {
        int cp = next_cp(&s), adv, lsb, x0, y0, x1, y1;
        if (prev) pen += scale * stbtt_GetCodepointKernAdvance(&f->info, prev, cp);
        stbtt_GetCodepointHMetrics(&f->info, cp, &adv, &lsb);
        stbtt_GetCodepointBitmapBox(&f->info, cp, scale, scale, &x0, &y0, &x1, &y1);
        int gw = x1 - x0, gh = y1 - y0;
        int gx = (int)lroundf(pen) + x0, gy = base + y0;
        /* only glyphs that show: the bitmap is sized by the glyph box,
         * which the pixel-height clamp keeps small */
        if (gw > 0 && gh > 0 && gx < im->w && gy < im->h && gx + gw > 0 && gy + gh > 0) {
            unsigned char *bm = malloc((size_t)gw * (size_t)gh);
            if (!bm) return st_error(ST_ERR_NOMEM, "out of memory drawing a glyph of %dx%d pixels", gw, gh);
            {
                stbtt_MakeCodepointBitmap(&f->info, bm, gw, gh, gw, scale, scale, cp);
                for (int j = 0; j < gh; j++) {
                    int yy = gy + j;
                    if (yy < 0 || yy >= im->h) continue;
                    for (int i = 0; i < gw; i++) {
                        int xx = gx + i, a = bm[j * gw + i];
                        if (xx < 0 || xx >= im->w || !a) continue;
                        uint8_t *p = im->px + ((size_t)yy * im->w + xx) * 3;
                        for (int k = 0; k < 3; k++) p[k] = (uint8_t)((col[k] * a + p[k] * (255 - a) + 127) / 255);
                    }
                }
                free(bm);
            }
        }
        pen += scale * adv;
        prev = cp;
    }
    return ST_OK;
}

st_status st_draw_label(st_image *im, const st_font *f, float px, int x, int y, const char *s, st_rgb bg, st_rgb fg)
{
    int pad = (int)(clamp_px(px) / 8) + 1;
    int tw = st_text_width(f, px, s) + 2 * pad, th = st_text_height(f, px) + pad;
    int top = y - th;
    if (top < 0) top = y < 0 ? 0 : y; /* no room above: put it below the point instead */
    if (x + tw > im->w) x = im->w - tw;
    if (x < 0) x = 0;
    st_draw_fill(im, x, top, x + tw, top + th, bg);
    return st_draw_text(im, f, px, x + pad, top + pad / 2, s, fg);
}
