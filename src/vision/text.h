/*
 * text.h — drawing text labels with a TrueType font (stb_truetype), for
 * the overlays `strata detect` and `strata ocr` write.
 */
#ifndef ST_VISION_TEXT_H
#define ST_VISION_TEXT_H

#include "stb_truetype.h"
#include "strata.h"
#include "vision/draw.h"
#include "vision/image.h"

/* The overlays' font (Debian's fonts-dejavu-core). */
#define ST_DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

typedef struct st_font {
    unsigned char *data;   /* the font file, which stb_truetype reads in place */
    stbtt_fontinfo info;
} st_font;

st_status st_font_load(const char *path, st_font *f);
void st_font_free(st_font *f);

/* Advance width and line height, in pixels, of UTF-8 text at a pixel
 * height px (clamped to 4..512). */
int st_text_width(const st_font *f, float px, const char *utf8);
int st_text_height(const st_font *f, float px);

/* Draws text with its line box's top-left corner at (x, y), blending the
 * glyphs' coverage into the image.  Bytes that are not UTF-8 show as
 * U+FFFD; characters the font lacks show as its missing-glyph box.
 * ST_ERR_NOMEM when a glyph's bitmap cannot be allocated (the text is then
 * partly drawn: the caller fails rather than keep the image). */
st_status st_draw_text(st_image *im, const st_font *f, float px, int x, int y, const char *utf8, st_rgb c);

/* A label: text on a filled background, its bottom-left corner at (x, y),
 * moved inside the image where it would stick out.  Fails as st_draw_text. */
st_status st_draw_label(st_image *im, const st_font *f, float px, int x, int y, const char *utf8, st_rgb bg, st_rgb fg);

#endif
